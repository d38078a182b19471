import { describe, expect, it } from 'vitest'
import { ToolArgsError, ToolError } from '../../../src/errors.js'
import { validateJsonSchemaValue } from '../../../src/schema/json-schema.js'
import { compileGlob, createDemoTools, normalizePath, SEED_FILES, workBudget } from '../../../demo/tools/index.js'
import { byName, call, runContext, text } from './helpers.js'

const fresh = () => createDemoTools({ include: ['workspace'] })

async function expectToolError(promise: Promise<unknown>, code: string, pattern: RegExp): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(ToolError)
  expect((error as ToolError).code).toBe(code)
  expect((error as ToolError).message).toMatch(pattern)
}

describe('demo workspace', () => {
  it('is seeded with a small realistic project and is fresh per call', async () => {
    const a = fresh()
    const b = fresh()
    expect(a.workspace.files.size).toBe(Object.keys(SEED_FILES).length)
    expect(a.workspace.files.size).toBeGreaterThanOrEqual(14)
    await call(a.tools, 'write_file', { path: 'new.txt', content: 'x' })
    expect(a.workspace.read('new.txt')).toBe('x')
    expect(b.workspace.read('new.txt')).toBeUndefined()
  })

  it('declares concurrency classes: reads safe, writes exclusive', () => {
    const { tools } = fresh()
    const classes = Object.fromEntries(tools.map((t) => [t.name, t.isConcurrencySafe?.({ path: 'a', content: '', oldText: 'a', newText: 'b', pattern: 'a' })]))
    expect(classes).toEqual({ list_files: true, read_file: true, grep: true, glob: true, write_file: false, edit_file: false })
  })

  it('validates arguments through defineTool (INVALID_ARGS, path-qualified)', () => {
    const { tools } = fresh()
    expect(() => byName(tools, 'read_file').validateArgs!({})).toThrow(ToolArgsError)
    expect(() => byName(tools, 'read_file').validateArgs!({ path: 7 })).toThrow(/\/path/)
    expect(() => byName(tools, 'read_file').validateArgs!({ path: 'a', offset: 1.5 })).toThrow(/\/offset/)
    expect(() => byName(tools, 'edit_file').validateArgs!({ path: 'a', oldText: 'x' })).toThrow(/newText/)
    expect(byName(tools, 'grep').softValidateArgs!({ pattern: 3 })).toBeUndefined()
  })

  it('every value matches its declared output schema', async () => {
    const { tools } = fresh()
    const calls: [string, unknown][] = [
      ['list_files', {}],
      ['list_files', { dir: 'src/http' }],
      ['read_file', { path: 'src/notes.ts', offset: 2, limit: 3 }],
      ['grep', { pattern: 'TODO' }],
      ['glob', { pattern: '**/*.ts' }],
      ['write_file', { path: 'a/b.txt', content: 'one\ntwo\n' }],
      ['edit_file', { path: 'a/b.txt', oldText: 'two', newText: 'three' }],
    ]
    for (const [name, args] of calls) {
      const { value, tool } = await call(tools, name, args)
      expect(validateJsonSchemaValue(tool.output.schema, value), name).toEqual([])
    }
  })

  it('list_files lists sorted paths with sizes, optionally under a directory', async () => {
    const { tools } = fresh()
    const { value } = (await call(tools, 'list_files', { dir: './src/http/' })) as { value: { files: { path: string; lines: number }[]; total: number } }
    expect(value.files.map((f) => f.path)).toEqual(['src/http/handlers.ts', 'src/http/router.ts'])
    expect(value.total).toBe(2)
    expect(value.files[1]!.lines).toBe(11)
  })

  it('read_file returns a numbered window and a read card', async () => {
    const { tools } = fresh()
    const { value, record, tool } = await call(tools, 'read_file', { path: 'src/types.ts', offset: 2, limit: 2 })
    expect(value).toEqual({
      path: 'src/types.ts',
      offset: 2,
      totalLines: 13,
      lines: [
        { number: 2, text: '  id: string' },
        { number: 3, text: '  title: string' },
      ],
      truncated: true,
    })
    expect(text(record)).toBe('2\t  id: string\n3\t  title: string\n(lines 2-3 of 13)')
    const card = tool.presentResult!(undefined, record, { path: 'src/types.ts', offset: 2, limit: 2 })
    expect(card).toMatchObject({ card: 'read', path: 'src/types.ts', offset: 2, totalLines: 13, lang: 'typescript' })
    expect(card && 'lines' in card ? card.lines : []).toEqual([
      { number: 2, text: '  id: string' },
      { number: 3, text: '  title: string' },
    ])
    const whole = await call(tools, 'read_file', { path: '.gitignore' })
    expect(whole.tool.presentResult!(undefined, whole.record, { path: '.gitignore' })).toMatchObject({ card: 'read', totalLines: 2, offset: 1 })
    expect(tool.presentCall!(undefined, { path: 'src/a.ts' })).toMatchObject({ card: 'generic', kind: 'read', locations: [{ path: 'src/a.ts', line: 1 }] })
    expect(tool.presentResult!(undefined, { isError: true, content: [{ type: 'text', text: 'Error: x' }] }, { path: 'a' })).toBeUndefined()
  })

  it('read_file failures: missing file, bad window, path escape', async () => {
    const { tools } = fresh()
    await expectToolError(call(tools, 'read_file', { path: 'nope.ts' }), 'TOOL_FAILED', /no such file: nope.ts/)
    await expectToolError(call(tools, 'read_file', { path: 'README.md', offset: 0 }), 'INVALID_ARGS', /\/offset/)
    await expectToolError(call(tools, 'read_file', { path: 'README.md', limit: 0 }), 'INVALID_ARGS', /\/limit/)
    await expectToolError(call(tools, 'read_file', { path: '../etc/passwd' }), 'INVALID_ARGS', /\.\./)
    const empty = createDemoTools({ files: { 'e.txt': '' }, include: ['workspace'] })
    expect(text((await call(empty.tools, 'read_file', { path: 'e.txt' })).record)).toBe('(empty file)')
  })

  it('write_file creates or overwrites, with diff cards', async () => {
    const { tools, workspace } = fresh()
    const created = await call(tools, 'write_file', { path: '/docs//new.md', content: '# New\n' })
    expect(created.value).toEqual({ path: 'docs/new.md', created: true, bytes: 6, lines: 1 })
    expect(text(created.record)).toBe('Created docs/new.md (1 lines)')
    const over = await call(tools, 'write_file', { path: 'README.md', content: 'short' })
    expect(over.value).toMatchObject({ created: false })
    expect(workspace.read('README.md')).toBe('short')
    const tool = created.tool
    expect(tool.presentCall!(undefined, { path: 'x.ts', content: 'y' })).toEqual({ card: 'diff', title: 'Write x.ts', diffs: [{ path: 'x.ts', newText: 'y' }], locations: [{ path: 'x.ts' }] })
    expect(tool.presentResult!(undefined, over.record, { path: 'README.md', content: 'short' })).toMatchObject({ card: 'diff', title: 'Overwrote README.md' })
    expect(tool.presentCall!(undefined, { path: 1 })).toMatchObject({ card: 'generic', title: 'Write (invalid arguments)' })
    await expectToolError(call(tools, 'write_file', { path: '/', content: '' }), 'INVALID_ARGS', /must name a file/)
  })

  it('edit_file replaces exactly once, or all with replaceAll, and refuses ambiguity', async () => {
    const { tools, workspace } = fresh()
    await expectToolError(call(tools, 'edit_file', { path: 'src/notes.ts', oldText: 'notes', newText: 'x' }), 'TOOL_FAILED', /occurs \d+ times/)
    await expectToolError(call(tools, 'edit_file', { path: 'src/notes.ts', oldText: 'absent text', newText: 'x' }), 'TOOL_FAILED', /not found/)
    await expectToolError(call(tools, 'edit_file', { path: 'missing.ts', oldText: 'a', newText: 'b' }), 'TOOL_FAILED', /no such file/)
    await expectToolError(call(tools, 'edit_file', { path: 'src/notes.ts', oldText: '', newText: 'b' }), 'INVALID_ARGS', /\/oldText/)
    const one = await call(tools, 'edit_file', { path: 'src/notes.ts', oldText: '// TODO: paginate', newText: '// paginated by caller: $& stays literal' })
    expect(one.value).toMatchObject({ replacements: 1 })
    expect(workspace.read('src/notes.ts')).toContain('// paginated by caller: $& stays literal')
    const all = await call(tools, 'edit_file', { path: 'src/notes.ts', oldText: 'notes', newText: 'items', replaceAll: true })
    expect((all.value as { replacements: number }).replacements).toBeGreaterThan(1)
    expect(workspace.read('src/notes.ts')).not.toContain('notes.')
    const args = { path: 'a.ts', oldText: 'x', newText: 'y' }
    expect(one.tool.presentCall!(undefined, args)).toEqual({ card: 'diff', title: 'Edit a.ts', diffs: [{ path: 'a.ts', oldText: 'x', newText: 'y' }], locations: [{ path: 'a.ts' }] })
    expect(one.tool.presentResult!(undefined, one.record, args)).toEqual({ card: 'diff', title: 'Edited src/notes.ts: 1 replacement', diffs: [{ path: 'a.ts', oldText: 'x', newText: 'y' }] })
  })

  it('grep finds substrings and regexes grouped by file, with a search card', async () => {
    const { tools } = fresh()
    const { value, record, tool } = await call(tools, 'grep', { pattern: 'TODO' })
    const v = value as { files: { path: string; matches: { line: number; text: string }[] }[]; total: number; truncated: boolean }
    expect(v.files.map((f) => f.path)).toEqual(['README.md', 'src/http/handlers.ts', 'src/notes.ts'])
    expect(v.total).toBe(3)
    expect(v.truncated).toBe(false)
    expect(text(record)).toContain('src/notes.ts:23:      // TODO: paginate')
    expect(tool.presentResult!(undefined, record, { pattern: 'TODO' })).toEqual({
      card: 'search',
      shape: 'matches',
      title: 'Grep "TODO"',
      truncated: false,
      total: 3,
      files: v.files,
    })
    const regex = (await call(tools, 'grep', { pattern: '^export (async )?function', regex: true, glob: 'src/**/*.ts' })).value as typeof v
    expect(regex.total).toBe(8)
    expect(regex.files.every((f) => f.path.startsWith('src/'))).toBe(true)
    const ci = (await call(tools, 'grep', { pattern: 'todo', ignoreCase: true })).value as typeof v
    expect(ci.total).toBe(3)
    const capped = await call(tools, 'grep', { pattern: 'import', maxMatches: 2 })
    const c = capped.value as typeof v
    expect(c.truncated).toBe(true)
    expect(c.files.flatMap((f) => f.matches)).toHaveLength(2)
    expect(capped.tool.presentResult!(undefined, capped.record, { pattern: 'import', maxMatches: 2 })).toMatchObject({ truncated: true, total: c.total })
    expect(text((await call(tools, 'grep', { pattern: 'zzzz-none' })).record)).toBe('No matches.')
    await expectToolError(call(tools, 'grep', { pattern: '(', regex: true }), 'INVALID_ARGS', /\/pattern: unterminated group/)
  })

  it('glob matches *, **, ? and {a,b}, with a paths card', async () => {
    const { tools } = fresh()
    const paths = async (pattern: string, limit?: number) => (await call(tools, 'glob', limit === undefined ? { pattern } : { pattern, limit })).value as { paths: string[]; total: number; truncated: boolean }
    expect((await paths('*.{md,json}')).paths).toEqual(['README.md', 'package.json', 'tsconfig.json'])
    expect((await paths('src/*.ts')).paths).toEqual(['src/index.ts', 'src/notes.ts', 'src/search.ts', 'src/types.ts'])
    expect((await paths('**/*.test.ts')).paths).toEqual(['test/notes.test.ts', 'test/search.test.ts'])
    expect((await paths('src/**/*.ts')).total).toBe(8)
    expect((await paths('src/util/???.ts')).paths).toEqual(['src/util/ids.ts'])
    const capped = await call(tools, 'glob', { pattern: '**', limit: 3 })
    expect(capped.value).toMatchObject({ total: 15, truncated: true })
    expect(capped.tool.presentResult!(undefined, capped.record, { pattern: '**', limit: 3 })).toEqual({
      card: 'search',
      shape: 'paths',
      title: 'Glob **',
      truncated: true,
      total: 15,
      paths: ['.gitignore', 'README.md', 'docs/api.md'],
    })
    const none = await call(tools, 'glob', { pattern: '*.rs' })
    expect(none.tool.presentResult!(undefined, none.record, { pattern: '*.rs' })).toMatchObject({ total: 0, paths: [] })
    expect(compileGlob('a.b+(c)', workBudget(1e6, 'glob')).test('a.b+(c)')).toBe(true)
    expect(compileGlob('a.b', workBudget(1e6, 'glob')).test('axb')).toBe(false)
  })

  it('normalizePath collapses separators and rejects parent segments', () => {
    expect(normalizePath('./a//b/./c')).toBe('a/b/c')
    expect(normalizePath('\\a\\b')).toBe('a/b')
    expect(() => normalizePath('a/../b')).toThrow(ToolArgsError)
  })

  it('execute re-validates arguments it has not seen (the body never sees bad input)', async () => {
    const { tools } = fresh()
    await expect(Promise.resolve().then(() => byName(tools, 'read_file').execute({ path: 3 }, runContext('read_file', { path: 3 })))).rejects.toBeInstanceOf(ToolArgsError)
  })
})
