/**
 * The demo's `read_file({ path: '/etc/passwd' })` answered "no such file: etc/passwd": the
 * absolute path was silently read as a workspace path (brief s55 polish, item 5). The
 * workspace's paths are relative to its root (a leading `/` names that root: the demo tests
 * pin `/docs//new.md` → `docs/new.md`), and now a missing file asked by an absolute path
 * says so; a `..` escape is refused saying why. Nothing outside the in-memory workspace is
 * ever read.
 */
import { describe, expect, it } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { createDemoTools } from '../../../demo/tools/index.js'
import { call } from '../demo/helpers.js'

async function refusal(promise: Promise<unknown>): Promise<{ code: string; message: string } | undefined> {
  const error = await promise.then(() => undefined, (e: unknown) => e)
  if (error === undefined) return undefined
  expect(error).toBeInstanceOf(ToolError)
  return { code: (error as ToolError).code, message: (error as Error).message }
}

describe('workspace paths are relative to the workspace root, and a miss says so', () => {
  it('read_file("/etc/passwd") says the path was looked up in the workspace, not "no such file: etc/passwd" alone', async () => {
    const { tools } = createDemoTools({ include: ['workspace'] })
    expect(await refusal(call(tools, 'read_file', { path: '/etc/passwd' }))).toEqual({
      code: 'TOOL_FAILED',
      message: 'no such file: etc/passwd (paths are relative to the workspace root: "/etc/passwd" was looked up as "etc/passwd" in the workspace; nothing outside it can be read)',
    })
    expect((await refusal(call(tools, 'read_file', { path: 'C:\\Windows\\win.ini' })))?.message).toMatch(/^no such file: C:\/Windows\/win.ini \(paths are relative to the workspace root/)
    expect((await refusal(call(tools, 'edit_file', { path: '/etc/hosts', oldText: 'a', newText: 'b' })))?.message).toMatch(/"\/etc\/hosts" was looked up as "etc\/hosts" in the workspace/)
    // A relative miss keeps its short message; a workspace file asked from the root reads.
    expect(await refusal(call(tools, 'read_file', { path: 'etc/passwd' }))).toEqual({ code: 'TOOL_FAILED', message: 'no such file: etc/passwd' })
    expect(await refusal(call(tools, 'read_file', { path: '/README.md' }))).toBeUndefined()
    // A long path is quoted cut.
    expect((await refusal(call(tools, 'read_file', { path: `/${'a'.repeat(500)}` })))!.message.length).toBeLessThan(1000)
  })

  it('a ".." escape is refused before anything is read, saying why', async () => {
    const { tools } = createDemoTools({ include: ['workspace'] })
    expect(await refusal(call(tools, 'read_file', { path: '../../etc/passwd' }))).toEqual({
      code: 'INVALID_ARGS',
      message: 'Invalid arguments: /path: must not contain ".." segments: paths are relative to the workspace root, and "../../etc/passwd" would leave it',
    })
  })
})
