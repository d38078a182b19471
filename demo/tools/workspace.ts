/**
 * An in-memory workspace and the file tools over it (list, read, write, edit, grep,
 * glob). Platform-neutral: no `node:*`, so the same tools run in Node, the browser
 * playground and the edge worker. Reads are concurrency-safe; writes are exclusive.
 *
 * Presenters are pure: they read only the arguments and the durable result (its
 * rendered content), so a UI gets the same card live and on log replay.
 *
 * @module
 */
import { ToolArgsError, ToolError } from '../../src/errors.js'
import type { DiffCallView, ReadLine, ToolCallView } from '../../src/presentation.js'
import { defineTool } from '../../src/schema/define-tool.js'
import type { AnyToolDefinition, ToolResultRecord } from '../../src/types.js'
import { changePreview, writePreview } from './diff.js'
import { compileGlob, compileRegex, workBudget } from './matcher.js'

/** A mutable in-memory file tree: normalized path → text. */
export interface Workspace {
  /** The files, keyed by normalized path (`src/index.ts`, no leading slash). */
  readonly files: Map<string, string>
  /** The file's text, or `undefined` when there is none. */
  read(path: string): string | undefined
  /** Creates or replaces a file; returns whether it was created. */
  write(path: string, text: string): boolean
  /** Every path, sorted. */
  paths(): string[]
}

/** A small, realistic TypeScript project the demo workspace starts with. */
export const SEED_FILES: Readonly<Record<string, string>> = Object.freeze({
  'package.json': `{
  "name": "acme-notes",
  "version": "0.3.1",
  "type": "module",
  "scripts": {
    "build": "tsc -p .",
    "test": "vitest run"
  },
  "dependencies": {
    "zod": "^3.23.0"
  }
}
`,
  'README.md': `# acme-notes

A tiny notes service: create, list, tag and search notes.

## Layout
- \`src/notes.ts\` — the note store
- \`src/search.ts\` — full-text search
- \`src/http/\` — the HTTP routes

TODO: document the tag API.
`,
  'tsconfig.json': `{
  "compilerOptions": { "target": "ES2022", "module": "NodeNext", "strict": true, "outDir": "dist" },
  "include": ["src"]
}
`,
  'src/index.ts': `export { createNoteStore } from './notes.js'
export { searchNotes } from './search.js'
export { createRouter } from './http/router.js'
`,
  'src/notes.ts': `import { randomId } from './util/ids.js'
import type { Note, NoteInput } from './types.js'

export interface NoteStore {
  create(input: NoteInput): Note
  get(id: string): Note | undefined
  list(): Note[]
  remove(id: string): boolean
}

export function createNoteStore(): NoteStore {
  const notes = new Map<string, Note>()
  return {
    create(input) {
      const note: Note = { id: randomId(), title: input.title, body: input.body, tags: input.tags ?? [], createdAt: Date.now() }
      notes.set(note.id, note)
      return note
    },
    get(id) {
      return notes.get(id)
    },
    list() {
      // TODO: paginate
      return [...notes.values()].sort((a, b) => b.createdAt - a.createdAt)
    },
    remove(id) {
      return notes.delete(id)
    },
  }
}
`,
  'src/types.ts': `export interface Note {
  id: string
  title: string
  body: string
  tags: string[]
  createdAt: number
}

export interface NoteInput {
  title: string
  body: string
  tags?: string[]
}
`,
  'src/search.ts': `import type { Note } from './types.js'
import { tokenize } from './util/text.js'

export function searchNotes(notes: Note[], query: string): Note[] {
  const terms = tokenize(query)
  if (terms.length === 0) return []
  return notes.filter((note) => {
    const words = new Set(tokenize(note.title + ' ' + note.body))
    return terms.every((term) => words.has(term))
  })
}
`,
  'src/util/ids.ts': `let counter = 0

export function randomId(): string {
  counter += 1
  return 'n' + counter.toString(36) + Math.random().toString(36).slice(2, 8)
}
`,
  'src/util/text.ts': `export function tokenize(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word.length > 1)
}

export function truncate(text: string, max: number): string {
  return text.length <= max ? text : text.slice(0, max - 1) + '…'
}
`,
  'src/http/router.ts': `import type { NoteStore } from '../notes.js'
import { handleCreate, handleList } from './handlers.js'

export function createRouter(store: NoteStore) {
  return async (request: Request): Promise<Response> => {
    const url = new URL(request.url)
    if (url.pathname === '/notes' && request.method === 'GET') return handleList(store)
    if (url.pathname === '/notes' && request.method === 'POST') return handleCreate(store, request)
    return new Response('not found', { status: 404 })
  }
}
`,
  'src/http/handlers.ts': `import type { NoteStore } from '../notes.js'

export function handleList(store: NoteStore): Response {
  return Response.json(store.list())
}

export async function handleCreate(store: NoteStore, request: Request): Promise<Response> {
  const input = await request.json()
  // TODO: validate input with zod
  const note = store.create(input)
  return Response.json(note, { status: 201 })
}
`,
  'test/notes.test.ts': `import { describe, expect, it } from 'vitest'
import { createNoteStore } from '../src/notes.js'

describe('note store', () => {
  it('creates and lists notes', () => {
    const store = createNoteStore()
    store.create({ title: 'a', body: 'first' })
    expect(store.list()).toHaveLength(1)
  })
})
`,
  'test/search.test.ts': `import { describe, expect, it } from 'vitest'
import { searchNotes } from '../src/search.js'

describe('search', () => {
  it('finds notes by every term', () => {
    const notes = [{ id: '1', title: 'Shopping list', body: 'milk eggs', tags: [], createdAt: 1 }]
    expect(searchNotes(notes, 'milk list')).toHaveLength(1)
  })
})
`,
  'docs/api.md': `# HTTP API

GET /notes — list notes, newest first.
POST /notes — create a note from { title, body, tags? }.
`,
  '.gitignore': `node_modules
dist
`,
})

/** A model's path as a message quotes it: at most 80 characters. */
function quotedPath(path: string): string {
  return JSON.stringify(path.length > 80 ? `${path.slice(0, 80)}…` : path)
}

/** Whether a model's path is absolute (`/etc/passwd`, `C:\\x`). */
function isAbsolute(path: string): boolean {
  return path.startsWith('/') || path.startsWith('\\') || /^[A-Za-z]:[\\/]/.test(path)
}

/** Normalizes a model-supplied path: `./a//b` → `a/b`, `/src/a.ts` → `src/a.ts` (the workspace root); refuses `..`. */
export function normalizePath(path: string, field = 'path'): string {
  const segments: string[] = []
  for (const segment of path.replaceAll('\\', '/').split('/')) {
    if (segment === '' || segment === '.') continue
    if (segment === '..') throw new ToolArgsError([{ path: `/${field}`, message: `must not contain ".." segments: paths are relative to the workspace root, and ${quotedPath(path)} would leave it` }])
    segments.push(segment)
  }
  return segments.join('/')
}

/**
 * Creates a workspace seeded with `files` (default {@link SEED_FILES}). `onWrite` hears
 * every write, after it is made (`npm start` keeps the files in its store with it).
 */
export function createWorkspace(files: Readonly<Record<string, string>> = SEED_FILES, onWrite?: (files: ReadonlyMap<string, string>) => void): Workspace {
  const map = new Map<string, string>()
  for (const [path, text] of Object.entries(files)) map.set(normalizePath(path), text)
  return {
    files: map,
    read: (path) => map.get(normalizePath(path)),
    write: (path, text) => {
      const key = normalizePath(path)
      const created = !map.has(key)
      map.set(key, text)
      onWrite?.(map)
      return created
    },
    paths: () => [...map.keys()].sort(),
  }
}

/** Splits file text into lines (a trailing newline does not start a new line). */
function fileLines(text: string): string[] {
  if (text === '') return []
  const lines = text.split('\n')
  if (lines[lines.length - 1] === '') lines.pop()
  return lines
}

/** What an `edit_file` call would do: the file's current and next text, or the ToolError it fails with. */
function planEdit(
  workspace: Workspace,
  args: { readonly path: string; readonly oldText: string; readonly newText: string; readonly replaceAll?: boolean },
): { readonly path: string; readonly before: string; readonly next: string; readonly replacements: number } {
  const path = normalizePath(args.path)
  if (args.oldText === '') throw new ToolArgsError([{ path: '/oldText', message: 'must not be empty' }])
  const text = workspace.files.get(path)
  if (text === undefined) throw notFound(path, args.path)
  const count = text.split(args.oldText).length - 1
  if (count === 0) throw new ToolError('TOOL_FAILED', `oldText not found in ${path}`)
  if (count > 1 && args.replaceAll !== true) {
    throw new ToolError('TOOL_FAILED', `oldText occurs ${count} times in ${path}; add context to make it unique or pass replaceAll: true`)
  }
  const next = args.replaceAll === true ? text.split(args.oldText).join(args.newText) : text.replace(args.oldText, () => args.newText)
  return { path, before: text, next, replacements: args.replaceAll === true ? count : 1 }
}

/** A preview of a call that would fail: it says so, and why. */
function willFail(error: unknown): string {
  return `will fail: ${error instanceof Error ? error.message : String(error)}`
}

/** A missing file; `asked`, the model's path, is explained when absolute. */
function notFound(path: string, asked = path): ToolError {
  if (!isAbsolute(asked)) return new ToolError('TOOL_FAILED', `no such file: ${path}`)
  return new ToolError(
    'TOOL_FAILED',
    `no such file: ${path} (paths are relative to the workspace root: ${quotedPath(asked)} was looked up as ${quotedPath(path)} in the workspace; nothing outside it can be read)`,
  )
}

function textOf(result: ToolResultRecord): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n')
}

/**
 * How many matcher steps (NFA state visits) one `grep` call may spend, over every file:
 * 0.1–0.3 s of the host's thread on a loaded 2-core machine (`npm run bench -- demo-tools`).
 * A search that needs more fails with a
 * message that says to narrow it; it never stalls the server.
 */
export const GREP_WORK_BUDGET = 2_000_000
/** How many matcher steps one `glob` call (or grep's `glob` option) may spend over every path. */
export const GLOB_WORK_BUDGET = 1_000_000

const MAX_LINE = 200
const DEFAULT_READ_LIMIT = 200

/** Builds the workspace tools over `workspace`. */
export function createWorkspaceTools(workspace: Workspace): AnyToolDefinition[] {
  const listFiles = defineTool({
    name: 'list_files',
    description: 'List the files in the workspace (optionally under a directory), with their sizes.',
    parameters: {
      dir: { type: 'string', description: 'Only list files under this directory (e.g. "src").' },
    },
    output: {
      schema: {
        type: 'object',
        additionalProperties: false,
        properties: {
          files: {
            type: 'array',
            required: true,
            items: {
              type: 'object',
              additionalProperties: false,
              properties: {
                path: { type: 'string', required: true },
                bytes: { type: 'integer', required: true },
                lines: { type: 'integer', required: true },
              },
            },
          },
          total: { type: 'integer', required: true },
        },
      },
      render: (_args, value) => [
        { type: 'text', text: value.files.length === 0 ? '(no files)' : value.files.map((f) => `${f.path} (${f.lines} lines)`).join('\n') },
      ],
    },
    execute(args) {
      const dir = args.dir === undefined ? '' : normalizePath(args.dir, 'dir')
      const prefix = dir === '' ? '' : `${dir}/`
      const files = workspace
        .paths()
        .filter((path) => path.startsWith(prefix))
        .map((path) => {
          const text = workspace.files.get(path) as string
          return { path, bytes: new TextEncoder().encode(text).length, lines: fileLines(text).length }
        })
      return { files, total: files.length }
    },
    presentCall: (args) => ({ card: 'generic', kind: 'read', title: `List ${args?.dir ?? 'workspace'}` }),
    isConcurrencySafe: () => true,
  })

  const readFile = defineTool({
    name: 'read_file',
    description: 'Read a text file from the workspace. Returns numbered lines; use offset/limit to page through long files.',
    parameters: {
      path: { type: 'string', required: true, description: 'The file path, relative to the workspace root.' },
      offset: { type: 'integer', description: 'The 1-based first line to read (default 1).' },
      limit: { type: 'integer', description: `How many lines to read (default ${DEFAULT_READ_LIMIT}).` },
    },
    output: {
      schema: {
        type: 'object',
        additionalProperties: false,
        properties: {
          path: { type: 'string', required: true },
          offset: { type: 'integer', required: true, description: 'The 1-based first line of the window.' },
          totalLines: { type: 'integer', required: true },
          lines: {
            type: 'array',
            required: true,
            items: {
              type: 'object',
              additionalProperties: false,
              properties: { number: { type: 'integer', required: true }, text: { type: 'string', required: true } },
            },
          },
          truncated: { type: 'boolean', required: true, description: 'Whether lines exist past the window.' },
        },
      },
      render: (_args, value) => {
        if (value.totalLines === 0) return [{ type: 'text', text: '(empty file)' }]
        const body = value.lines.map((l) => `${l.number}\t${l.text}`).join('\n')
        const last = value.lines.length === 0 ? value.offset - 1 : (value.lines[value.lines.length - 1] as { number: number }).number
        const note = value.truncated || value.offset > 1 ? `\n(lines ${value.offset}-${last} of ${value.totalLines})` : ''
        return [{ type: 'text', text: `${body}${note}` }]
      },
    },
    execute(args) {
      const path = normalizePath(args.path)
      const offset = args.offset ?? 1
      const limit = args.limit ?? DEFAULT_READ_LIMIT
      if (offset < 1) throw new ToolArgsError([{ path: '/offset', message: 'must be at least 1' }])
      if (limit < 1) throw new ToolArgsError([{ path: '/limit', message: 'must be at least 1' }])
      const text = workspace.files.get(path)
      if (text === undefined) throw notFound(path, args.path)
      const all = fileLines(text)
      const lines = all.slice(offset - 1, offset - 1 + limit).map((line, i) => ({ number: offset + i, text: line }))
      return { path, offset, totalLines: all.length, lines, truncated: offset - 1 + limit < all.length }
    },
    presentCall: (args, raw) => ({
      card: 'generic',
      kind: 'read',
      title: `Read ${args?.path ?? '(invalid arguments)'}`,
      rawInput: raw,
      ...(args === undefined ? {} : { locations: [{ path: args.path, line: args.offset ?? 1 }] }),
    }),
    presentResult: (args, result) => {
      if (args === undefined || result.isError) return undefined
      const text = textOf(result)
      const lines: ReadLine[] = []
      let totalLines: number | undefined
      for (const line of text.split('\n')) {
        const numbered = /^(\d+)\t(.*)$/.exec(line)
        if (numbered !== null) {
          lines.push({ number: Number(numbered[1]), text: numbered[2] as string })
          continue
        }
        const window = /^\(lines \d+-\d+ of (\d+)\)$/.exec(line)
        if (window !== null) totalLines = Number(window[1])
      }
      return {
        card: 'read',
        title: `Read ${args.path}`,
        path: args.path,
        offset: args.offset ?? 1,
        lines,
        totalLines: totalLines ?? (lines.length === 0 ? 0 : (lines[lines.length - 1] as ReadLine).number),
        ...(languageOf(args.path) === undefined ? {} : { lang: languageOf(args.path) as string }),
        content: text,
      }
    },
    isConcurrencySafe: () => true,
  })

  const writeFile = defineTool({
    name: 'write_file',
    description: 'Create a file or replace its whole content.',
    parameters: {
      path: { type: 'string', required: true, description: 'The file path, relative to the workspace root.' },
      content: { type: 'string', required: true, description: 'The complete new file content.' },
    },
    output: {
      schema: {
        type: 'object',
        additionalProperties: false,
        properties: {
          path: { type: 'string', required: true },
          created: { type: 'boolean', required: true },
          bytes: { type: 'integer', required: true },
          lines: { type: 'integer', required: true },
        },
      },
      render: (_args, value) => [{ type: 'text', text: `${value.created ? 'Created' : 'Overwrote'} ${value.path} (${value.lines} lines)` }],
    },
    execute(args) {
      const path = normalizePath(args.path)
      if (path === '') throw new ToolArgsError([{ path: '/path', message: 'must name a file' }])
      const created = workspace.write(path, args.content)
      return { path, created, bytes: new TextEncoder().encode(args.content).length, lines: fileLines(args.content).length }
    },
    // What the person approves: a destructive overwrite never reads as a harmless creation.
    preview(args) {
      let path: string
      try {
        path = normalizePath(args.path)
      } catch (error) {
        return willFail(error)
      }
      if (path === '') return 'will fail: the path names no file'
      return writePreview(path, workspace.files.get(path), args.content)
    },
    presentCall: (args, raw) => (args === undefined ? invalidCall('Write', raw) : writeDiff(`Write ${args.path}`, args.path, args.content)),
    presentResult: (args, result) => {
      if (args === undefined || result.isError) return undefined
      const created = textOf(result).startsWith('Created')
      return {
        card: 'diff',
        title: `${created ? 'Created' : 'Overwrote'} ${args.path}`,
        diffs: [{ path: args.path, newText: args.content }],
      }
    },
    isConcurrencySafe: () => false,
  })

  const editFile = defineTool({
    name: 'edit_file',
    description:
      'Replace exact text in a file. oldText must occur exactly once unless replaceAll is true; read the file first to copy it exactly.',
    parameters: {
      path: { type: 'string', required: true, description: 'The file path, relative to the workspace root.' },
      oldText: { type: 'string', required: true, description: 'The exact text to replace (non-empty).' },
      newText: { type: 'string', required: true, description: 'The replacement text.' },
      replaceAll: { type: 'boolean', description: 'Replace every occurrence (default false).' },
    },
    output: {
      schema: {
        type: 'object',
        additionalProperties: false,
        properties: {
          path: { type: 'string', required: true },
          replacements: { type: 'integer', required: true },
          lines: { type: 'integer', required: true, description: 'Line count after the edit.' },
        },
      },
      render: (_args, value) => [
        { type: 'text', text: `Edited ${value.path}: ${value.replacements} replacement${value.replacements === 1 ? '' : 's'}` },
      ],
    },
    execute(args) {
      const { path, next, replacements } = planEdit(workspace, args)
      workspace.write(path, next)
      return { path, replacements, lines: fileLines(next).length }
    },
    // The same edit as execute computes, shown as a diff against the current file (or why it would fail).
    preview(args) {
      let edit: ReturnType<typeof planEdit>
      try {
        edit = planEdit(workspace, args)
      } catch (error) {
        return willFail(error)
      }
      const { path, next, replacements, before } = edit
      return changePreview(`edits ${path} (${replacements} replacement${replacements === 1 ? '' : 's'})`, path, before, next)
    },
    presentCall: (args, raw) => (args === undefined ? invalidCall('Edit', raw) : editDiff(`Edit ${args.path}`, args.path, args.oldText, args.newText)),
    presentResult: (args, result) => {
      if (args === undefined || result.isError) return undefined
      return { card: 'diff', title: textOf(result), diffs: [{ path: args.path, oldText: args.oldText, newText: args.newText }] }
    },
    isConcurrencySafe: () => false,
  })

  const grep = defineTool({
    name: 'grep',
    description:
      'Search file contents for a substring (default) or a regular expression (JavaScript syntax without backreferences or lookaround: it runs in linear time). Returns matching lines grouped by file.',
    parameters: {
      pattern: { type: 'string', required: true, description: 'The text (or regex source when regex is true) to find.' },
      regex: { type: 'boolean', description: 'Treat pattern as a regular expression (default false).' },
      ignoreCase: { type: 'boolean', description: 'Case-insensitive matching (default false).' },
      glob: { type: 'string', description: 'Only search files whose path matches this glob (e.g. "src/**/*.ts").' },
      maxMatches: { type: 'integer', description: 'Stop after this many matching lines (default 100).' },
    },
    output: {
      schema: {
        type: 'object',
        additionalProperties: false,
        properties: {
          files: {
            type: 'array',
            required: true,
            items: {
              type: 'object',
              additionalProperties: false,
              properties: {
                path: { type: 'string', required: true },
                matches: {
                  type: 'array',
                  required: true,
                  items: {
                    type: 'object',
                    additionalProperties: false,
                    properties: { line: { type: 'integer', required: true }, text: { type: 'string', required: true } },
                  },
                },
              },
            },
          },
          total: { type: 'integer', required: true, description: 'Every matching line, including those past maxMatches.' },
          truncated: { type: 'boolean', required: true },
        },
      },
      render: (_args, value) => {
        if (value.total === 0) return [{ type: 'text', text: 'No matches.' }]
        const lines = value.files.flatMap((f) => f.matches.map((m) => `${f.path}:${m.line}:${m.text}`))
        const shown = lines.length
        const note = value.truncated ? `\n(${value.total} matches; showing the first ${shown})` : ''
        return [{ type: 'text', text: `${lines.join('\n')}${note}` }]
      },
    },
    execute(args) {
      const max = args.maxMatches ?? 100
      if (max < 1) throw new ToolArgsError([{ path: '/maxMatches', message: 'must be at least 1' }])
      let test: (line: string) => boolean
      if (args.regex === true) {
        // Linear time whatever the pattern (demo/tools/matcher.ts): a model-written
        // `(a+)+$` must not hold the server's thread for seconds.
        const re = compileRegex(args.pattern, { ignoreCase: args.ignoreCase === true }, workBudget(GREP_WORK_BUDGET, 'grep'))
        test = (line) => re.test(line)
      } else if (args.ignoreCase === true) {
        const needle = args.pattern.toLowerCase()
        test = (line) => line.toLowerCase().includes(needle)
      } else {
        test = (line) => line.includes(args.pattern)
      }
      const only = args.glob === undefined ? undefined : compileGlob(args.glob, workBudget(GLOB_WORK_BUDGET, 'grep'), '/glob')
      const files: { path: string; matches: { line: number; text: string }[] }[] = []
      let total = 0
      let kept = 0
      for (const path of workspace.paths()) {
        if (only !== undefined && !only.test(path)) continue
        const matches: { line: number; text: string }[] = []
        fileLines(workspace.files.get(path) as string).forEach((line, i) => {
          if (!test(line)) return
          total++
          if (kept >= max) return
          kept++
          matches.push({ line: i + 1, text: line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)}…` : line })
        })
        if (matches.length > 0) files.push({ path, matches })
      }
      return { files, total, truncated: total > kept }
    },
    presentCall: (args, raw) => ({ card: 'generic', kind: 'search', title: `Grep ${JSON.stringify(args?.pattern ?? '')}`, rawInput: raw }),
    presentResult: (args, result) => {
      if (args === undefined || result.isError) return undefined
      const text = textOf(result)
      const byPath = new Map<string, { line: number; text: string }[]>()
      let total: number | undefined
      let count = 0
      for (const line of text.split('\n')) {
        const note = /^\((\d+) matches; showing the first \d+\)$/.exec(line)
        if (note !== null) {
          total = Number(note[1])
          continue
        }
        const hit = /^(.+?):(\d+):(.*)$/.exec(line)
        if (hit === null) continue
        count++
        const path = hit[1] as string
        if (!byPath.has(path)) byPath.set(path, [])
        ;(byPath.get(path) as { line: number; text: string }[]).push({ line: Number(hit[2]), text: hit[3] as string })
      }
      return {
        card: 'search',
        shape: 'matches',
        title: `Grep ${JSON.stringify(args.pattern)}`,
        truncated: total !== undefined,
        total: total ?? count,
        files: [...byPath].map(([path, matches]) => ({ path, matches })),
      }
    },
    isConcurrencySafe: () => true,
  })

  const glob = defineTool({
    name: 'glob',
    description: 'Find files whose path matches a glob pattern (`*`, `**`, `?`, `{a,b}`), sorted by path.',
    parameters: {
      pattern: { type: 'string', required: true, description: 'e.g. "src/**/*.ts" or "*.{md,json}".' },
      limit: { type: 'integer', description: 'Return at most this many paths (default 200).' },
    },
    output: {
      schema: {
        type: 'object',
        additionalProperties: false,
        properties: {
          paths: { type: 'array', required: true, items: { type: 'string' } },
          total: { type: 'integer', required: true },
          truncated: { type: 'boolean', required: true },
        },
      },
      render: (_args, value) => {
        if (value.total === 0) return [{ type: 'text', text: 'No files matched.' }]
        const note = value.truncated ? `\n(${value.total} paths; showing the first ${value.paths.length})` : ''
        return [{ type: 'text', text: `${value.paths.join('\n')}${note}` }]
      },
    },
    execute(args) {
      const limit = args.limit ?? 200
      if (limit < 1) throw new ToolArgsError([{ path: '/limit', message: 'must be at least 1' }])
      const re = compileGlob(normalizePath(args.pattern, 'pattern'), workBudget(GLOB_WORK_BUDGET, 'glob'))
      const all = workspace.paths().filter((path) => re.test(path))
      return { paths: all.slice(0, limit), total: all.length, truncated: all.length > limit }
    },
    presentCall: (args, raw) => ({ card: 'generic', kind: 'search', title: `Glob ${args?.pattern ?? ''}`, rawInput: raw }),
    presentResult: (args, result) => {
      if (args === undefined || result.isError) return undefined
      const text = textOf(result)
      if (text === 'No files matched.') return { card: 'search', shape: 'paths', title: `Glob ${args.pattern}`, truncated: false, total: 0, paths: [] }
      const lines = text.split('\n')
      const note = /^\((\d+) paths; showing the first \d+\)$/.exec(lines[lines.length - 1] ?? '')
      const paths = note === null ? lines : lines.slice(0, -1)
      return {
        card: 'search',
        shape: 'paths',
        title: `Glob ${args.pattern}`,
        truncated: note !== null,
        total: note === null ? paths.length : Number(note[1]),
        paths,
      }
    },
    isConcurrencySafe: () => true,
  })

  return [listFiles, readFile, writeFile, editFile, grep, glob]
}

function languageOf(path: string): string | undefined {
  const ext = /\.([A-Za-z0-9]+)$/.exec(path)?.[1]
  const map: Record<string, string> = { ts: 'typescript', js: 'javascript', json: 'json', md: 'markdown', css: 'css', html: 'html' }
  return ext === undefined ? undefined : map[ext]
}

function invalidCall(verb: string, raw: unknown): ToolCallView {
  return { card: 'generic', kind: 'edit', title: `${verb} (invalid arguments)`, rawInput: raw as never }
}

function writeDiff(title: string, path: string, content: string): DiffCallView {
  return { card: 'diff', title, diffs: [{ path, newText: content }], locations: [{ path }] }
}

function editDiff(title: string, path: string, oldText: string, newText: string): DiffCallView {
  return { card: 'diff', title, diffs: [{ path, oldText, newText }], locations: [{ path }] }
}
