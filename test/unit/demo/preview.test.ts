/**
 * The demo's writing tools say what a call will do before anyone allows it (issue 31,
 * item 6): `write_file` over an existing file "overwrites N lines" with the unified diff
 * against the current content (it used to read as `README.md (new file)`), a new file is
 * "new file (N lines)", `edit_file` shows the diff of the very edit `execute` would make
 * (or why it would fail). Bounded: a huge rewrite is compared cheaply and cut with a note.
 * And end to end: `GET /v1/approvals` lists the preview beside the summary.
 */
import { describe, expect, it } from 'vitest'
import { askBeforeWriting } from '../../../demo/tools/approval-gate.js'
import { lineDiff, MAX_DIFF_LINES, writePreview } from '../../../demo/tools/diff.js'
import { createDemoTools, SEED_FILES } from '../../../demo/tools/index.js'
import { createApprovalBroker, DEFAULT_PREVIEW_RENDER_BYTES, renderApprovalPreview } from '../../../src/approvals/index.js'
import { createToolsApp } from '../../../src/http/index.js'
import { createToolRuntime } from '../../../src/index.js'
import type { AnyToolDefinition, ToolPreviewContext } from '../../../src/types.js'
import { until } from '../../support/poll.js'

const ctx: ToolPreviewContext = { signal: new AbortController().signal, callId: 'c', name: 'x' }
const tools = () => {
  const demo = createDemoTools({ include: ['workspace'] })
  const get = (name: string) => demo.tools.find((t) => t.name === name) as AnyToolDefinition
  return { ...demo, preview: (name: string, args: unknown) => get(name).preview!(get(name).validateArgs!(args as never), ctx) }
}
const README_LINES = SEED_FILES['README.md']!.split('\n').length - 1

describe('write_file preview', () => {
  it('an overwrite of README.md says so, with the counts and the unified diff against the current content', async () => {
    const { preview } = tools()
    const text = await preview('write_file', { path: 'README.md', content: '# acme-notes\n\nGone.\n' })
    const lines = text.split('\n')
    expect(lines[0]).toBe(`overwrites README.md: ${README_LINES} lines → 3 lines (${README_LINES - 2} removed, 1 added)`)
    expect(lines.slice(1, 4)).toEqual(['--- a/README.md', '+++ b/README.md', `@@ -1,${README_LINES} +1,3 @@`])
    expect(lines).toContain(' # acme-notes')
    expect(lines).toContain('-A tiny notes service: create, list, tag and search notes.')
    expect(lines).toContain('+Gone.')
    expect(text).not.toContain('new file')
  })

  it('a new file says "new file (N lines)" and lists them; a ./ path names the same file', async () => {
    const { preview } = tools()
    expect(await preview('write_file', { path: 'notes/a.md', content: 'one\ntwo\n' })).toBe('new file notes/a.md (2 lines)\n--- /dev/null\n+++ b/notes/a.md\n@@ -0,0 +1,2 @@\n+one\n+two')
    expect((await preview('write_file', { path: './README.md', content: 'x' })).split('\n')[0]).toMatch(/^overwrites README\.md: /)
  })

  it('the same content, or only a final newline apart, says so; a bad path says the call will fail', async () => {
    const { preview } = tools()
    expect(await preview('write_file', { path: 'README.md', content: SEED_FILES['README.md'] })).toBe(`overwrites README.md: ${README_LINES} lines → ${README_LINES} lines, no change (the same content)`)
    expect(await preview('write_file', { path: 'README.md', content: SEED_FILES['README.md']!.slice(0, -1) })).toMatch(/only the final newline differs$/)
    expect(await preview('write_file', { path: '../etc/passwd', content: 'x' })).toMatch(/^will fail: .*"\.\." segments/)
    expect(await preview('write_file', { path: '/', content: 'x' })).toBe('will fail: the path names no file')
  })

  it('reads the workspace when asked, not when defined: a file created meanwhile is an overwrite', async () => {
    const { preview, workspace } = tools()
    expect(await preview('write_file', { path: 'n.md', content: 'b\n' })).toMatch(/^new file n\.md/)
    workspace.write('n.md', 'a\n')
    expect(await preview('write_file', { path: 'n.md', content: 'b\n' })).toBe('overwrites n.md: 1 line → 1 line (1 removed, 1 added)\n--- a/n.md\n+++ b/n.md\n@@ -1,1 +1,1 @@\n-a\n+b')
  })
})

describe('edit_file preview', () => {
  it('shows the edit execute would make as a diff with context', async () => {
    const { preview } = tools()
    const text = await preview('edit_file', { path: 'README.md', oldText: 'TODO: document the tag API.', newText: 'Tags: see docs/tags.md.' })
    expect(text.split('\n')).toEqual([
      `edits README.md (1 replacement): ${README_LINES} lines → ${README_LINES} lines (1 removed, 1 added)`,
      '--- a/README.md',
      '+++ b/README.md',
      `@@ -${README_LINES - 3},4 +${README_LINES - 3},4 @@`,
      ' - `src/search.ts` — full-text search',
      ' - `src/http/` — the HTTP routes',
      ' ',
      '-TODO: document the tag API.',
      '+Tags: see docs/tags.md.',
    ])
  })

  it('says why the edit would fail (no file, not found, ambiguous) instead of a diff', async () => {
    const { preview } = tools()
    expect(await preview('edit_file', { path: 'nope.md', oldText: 'a', newText: 'b' })).toBe('will fail: no such file: nope.md')
    expect(await preview('edit_file', { path: 'README.md', oldText: 'absent text', newText: 'b' })).toBe('will fail: oldText not found in README.md')
    expect(await preview('edit_file', { path: 'README.md', oldText: 'src/', newText: 'lib/' })).toMatch(/^will fail: oldText occurs \d+ times in README\.md/)
    expect(await preview('edit_file', { path: 'README.md', oldText: 'src/', newText: 'lib/', replaceAll: true })).toMatch(/^edits README\.md \(\d+ replacements\)/)
  })
})

describe('the diff is bounded', () => {
  it('a 20,000-line rewrite is compared without the quadratic table, listed as removed then added, and cut with a note', () => {
    const before = Array.from({ length: 20_000 }, (_, i) => `old line ${i} of a long file, padded so the diff outgrows the prompt`).join('\n')
    const after = Array.from({ length: 20_000 }, (_, i) => `new line ${i} of a long file, padded so the diff outgrows the prompt`).join('\n')
    const diff = lineDiff(before, after)
    expect(diff.minimal).toBe(false)
    expect(diff.removed).toBe(20_000)
    expect(diff.added).toBe(20_000)
    expect(diff.hunks).toHaveLength(MAX_DIFF_LINES + 1)
    expect(diff.hunks.at(-1)).toBe(`… ${40_001 - MAX_DIFF_LINES} more lines of the diff not shown`)
    const text = writePreview('big.txt', before, after)
    expect(text.split('\n')[0]).toBe('overwrites big.txt: 20000 lines → 20000 lines (20000 removed, 20000 added) — too large to compare line by line: every changed line is listed as removed, then added')
    const shown = renderApprovalPreview(text)
    expect(new TextEncoder().encode(shown).length).toBeLessThanOrEqual(DEFAULT_PREVIEW_RENDER_BYTES)
    expect(shown.split('\n').at(-1)).toMatch(/^… preview cut: \d+ more lines/)
  })

  it('separate changes far apart make separate hunks', () => {
    const before = Array.from({ length: 40 }, (_, i) => `l${i}`).join('\n')
    const after = before.replace('l2\n', 'L2\n').replace('l30\n', 'L30\n')
    expect(lineDiff(before, after).hunks.filter((line) => line.startsWith('@@'))).toEqual(['@@ -1,6 +1,6 @@', '@@ -28,7 +28,7 @@'])
  })
})

describe('GET /v1/approvals lists the preview beside the summary', () => {
  it('an overwrite of README.md asked over HTTP shows "overwrites" and the diff', async () => {
    const broker = createApprovalBroker()
    const runtime = createToolRuntime({ approvals: broker })
    const demo = createDemoTools({ include: ['workspace'] })
    for (const tool of demo.tools) runtime.register(tool)
    askBeforeWriting(runtime)
    const app = createToolsApp(runtime, { token: 'preview-token-0123456789abcdef' })
    const auth = { Authorization: 'Bearer preview-token-0123456789abcdef', 'Content-Type': 'application/json' }
    const call = app.request('/v1/tools/write_file/execute', { method: 'POST', headers: auth, body: JSON.stringify({ arguments: { path: 'README.md', content: 'gone\n' } }) })
    let listed: { id: string; summary: string; preview?: string }[] = []
    await until(async () => {
      listed = ((await (await app.request('/v1/approvals', { headers: auth })).json()) as { approvals: typeof listed }).approvals
      return listed.length > 0
    }, 'the write_file request in GET /v1/approvals')
    expect(listed).toHaveLength(1)
    expect(listed[0]!.summary).toBe('path: "README.md"\ncontent: "gone\\n"')
    expect(listed[0]!.preview).toMatch(new RegExp(`^overwrites README\\.md: ${README_LINES} lines → 1 line \\(${README_LINES} removed, 1 added\\)\\n--- a/README\\.md`))
    await broker.decide(listed[0]!.id, { decision: 'deny' })
    expect((await call).status).toBe(200)
    broker.dispose()
    await runtime.dispose()
  })
})
