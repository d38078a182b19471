/**
 * A program can tell a denial from a failure: a failed `tools.x()` call rejects with a
 * `ToolCallError` carrying the native failure's `code`, and a denial's message says it
 * was denied and by what — through a real registry on the default sandbox runtime.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { createToolRuntime } from '../../../src/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { toolCallErrorOf } from '../../../src/errors.js'

const codeRuntime = createSandboxRuntime({ memoryMb: 32, prespawn: 0 })
const python = createSandboxRuntime({ language: 'python', computeMs: 5_000 })
afterAll(async () => {
  await codeRuntime.dispose()
  await python.dispose()
})

const text = { schema: { type: 'string' }, render: (_a: unknown, v: string) => [{ type: 'text' as const, text: v }] } as const

function setup(runtimeOfCode: typeof codeRuntime = codeRuntime) {
  const runtime = createToolRuntime({
    mode: 'both',
    codeRuntime: runtimeOfCode,
    approval: (request) => Promise.resolve(request.execution.name !== 'write_file'),
  })
  const plain = (name: string, execute: () => string) =>
    defineTool({ name, description: `${name} (test)`, parameters: { path: { type: 'string', required: true } }, output: text, execute })
  runtime.register(plain('delete_file', () => 'deleted'))
  runtime.register(plain('guarded', () => 'ran'))
  runtime.register(plain('write_file', () => 'written'))
  runtime.register(plain('broken', () => { throw new Error('the disk is on fire') }))
  runtime.on('tools/pre-execute', (decision, execution) => {
    if (execution.name === 'delete_file') return { kind: 'deny', reason: 'deleting is not allowed here' }
    if (execution.name === 'write_file') return { kind: 'ask', reason: 'it writes' }
    return decision
  })
  runtime.guard((execution) => (execution.name === 'guarded' ? 'not on Fridays' : undefined))
  return runtime
}

const PROGRAM = `const out = []
for (const [name, args] of [['delete_file', { path: 'a' }], ['write_file', { path: 'a' }], ['broken', { path: 'a' }], ['delete_file', { path: 1 }], ['guarded', { path: 'a' }]]) {
  try { await tools[name](args) } catch (e) { out.push([e instanceof ToolCallError, e.toolName, e.code, e.message]) }
}
return out`

describe('ToolCallError.code in a program', () => {
  it('carries the native code; a denial says it was denied and by what', async () => {
    const runtime = setup()
    const result = await runtime.execute({ callId: 'r1', name: 'run_code', arguments: { description: 'probe', code: PROGRAM }, signal: AbortSignal.timeout(20_000) })
    expect(result.isError).toBe(false)
    const rows = (result as unknown as { value: { result: [boolean, string, string, string][] } }).value.result
    expect(rows[0]).toEqual([true, 'delete_file', 'DENIED_BY_GATE', 'delete_file was denied by policy: deleting is not allowed here'])
    expect(rows[1]?.slice(0, 3)).toEqual([true, 'write_file', 'DENIED_BY_APPROVAL'])
    expect(rows[1]?.[3]).toMatch(/^write_file was denied by/)
    expect(rows[2]).toEqual([true, 'broken', 'TOOL_FAILED', expect.stringContaining('the disk is on fire')])
    expect(rows[3]?.slice(0, 3)).toEqual([true, 'delete_file', 'INVALID_ARGS'])
    expect(rows[4]).toEqual([true, 'guarded', 'DENIED_BY_GUARD', 'guarded was denied by a guard: not on Fridays'])
    // The same denial natively: the program's code is the native one.
    const native = await runtime.execute({ callId: 'n1', name: 'delete_file', arguments: { path: 'a' }, signal: AbortSignal.timeout(5_000) })
    expect(native.isError && native.error.info?.code).toBe('DENIED_BY_GATE')
    await runtime.dispose()
  })

  it('in Python the same: ToolCallError has code and tool_name, and a denial says it was denied and by what', async () => {
    const runtime = setup(python)
    const program = `out = []
for name, args in [("delete_file", {"path": "a"}), ("write_file", {"path": "a"}), ("broken", {"path": "a"}), ("delete_file", {"path": 1}), ("guarded", {"path": "a"})]:
    try:
        await getattr(tools, name)(args)
    except ToolCallError as e:
        out.append([e.tool_name, e.code, str(e)])
return out`
    const result = await runtime.execute({ callId: 'p1', name: 'run_code', arguments: { description: 'probe', code: program }, signal: AbortSignal.timeout(30_000) })
    expect(result.isError, JSON.stringify(result)).toBe(false)
    const rows = (result as unknown as { value: { result: [string, string, string][] } }).value.result
    expect(rows[0]).toEqual(['delete_file', 'DENIED_BY_GATE', 'delete_file was denied by policy: deleting is not allowed here'])
    expect(rows[1]?.slice(0, 2)).toEqual(['write_file', 'DENIED_BY_APPROVAL'])
    expect(rows[1]?.[2]).toMatch(/^write_file was denied by/)
    expect(rows[2]?.slice(0, 2)).toEqual(['broken', 'TOOL_FAILED'])
    expect(rows[3]?.slice(0, 2)).toEqual(['delete_file', 'INVALID_ARGS'])
    expect(rows[4]).toEqual(['guarded', 'DENIED_BY_GUARD', 'guarded was denied by a guard: not on Fridays'])
    await runtime.dispose()
  })

  it('toolCallErrorOf names the denier once, and leaves other failures as they are', () => {
    const of = (code: string, message: string) => {
      const e = toolCallErrorOf('t', { message, info: { name: 'ToolError', code } })
      return [e.code, e.message]
    }
    expect(of('DENIED_BY_GATE', 'denied by policy')).toEqual(['DENIED_BY_GATE', 't was denied by policy'])
    expect(of('DENIED_BY_GUARD', 'not on Fridays')).toEqual(['DENIED_BY_GUARD', 't was denied by a guard: not on Fridays'])
    expect(of('DENIED_BY_APPROVAL', 't was denied by a person')).toEqual(['DENIED_BY_APPROVAL', 't was denied by a person'])
    expect(of('DENIED_BY_APPROVAL', 'the broker is disposed')).toEqual(['DENIED_BY_APPROVAL', 't was denied by approval: the broker is disposed'])
    expect(of('TOOL_TIMEOUT', 'took too long')).toEqual(['TOOL_TIMEOUT', 'took too long'])
    expect(toolCallErrorOf('t', { message: 'x' }).code).toBe('TOOL_FAILED')
  })
})
