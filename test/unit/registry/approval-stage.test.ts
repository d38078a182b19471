/**
 * The `approval` stage through a real registry: what the handler is asked
 * (`parentCallId` for nested calls), whose handler decides (a call's own, inherited by
 * the calls nested in it), the wording of a denial, the clock a sub-call holds while the
 * handler is pending, the session log's records, and malformed inputs.
 */
import { describe, expect, it } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import type { ToolRuntime, ToolRuntimeOptions } from '../../../src/runtime-types.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { createMemorySessionLog } from '../../../src/session-log.js'
import type { ApprovalHandler, ApprovalRequest, ToolExecutionInput, ToolExecutionResult } from '../../../src/types.js'

const signal = (): AbortSignal => new AbortController().signal

function codeOf(result: ToolExecutionResult): string {
  return result.isError ? String(result.error.info?.code) : 'OK'
}

function messageOf(result: ToolExecutionResult): string {
  return result.isError ? result.error.message : 'OK'
}

/** The nested call's result that `outer` returned (as JSON text). */
function innerOf(outer: ToolExecutionResult): ToolExecutionResult {
  expect(outer.isError, messageOf(outer)).toBe(false)
  return JSON.parse((outer as { value: string }).value) as ToolExecutionResult
}

/**
 * A registry whose gate asks about `guarded`, and an `outer` tool whose body runs
 * `guarded` as a nested call (its own token as `parent`), with `nested` as extra input.
 */
function registry(options: ToolRuntimeOptions = {}, nested: Partial<ToolExecutionInput> = {}) {
  const runtime: ToolRuntime = createToolRuntime(options)
  const ran: string[] = []
  runtime.register(
    defineTool({
      name: 'guarded',
      description: 'asks (test)',
      parameters: {},
      output: { schema: { type: 'number' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
      execute: (_args, exec) => {
        ran.push('guarded')
        return exec.deadline ?? -1
      },
    }),
  )
  runtime.register(
    defineTool({
      name: 'outer',
      description: 'runs guarded as a nested call (test)',
      parameters: {},
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: async (_args, exec) => {
        const inner = await runtime.execute({ callId: `${exec.callId}:inner`, name: 'guarded', arguments: {}, signal: exec.signal, parent: exec.token, ...nested })
        return JSON.stringify(inner)
      },
    }),
  )
  runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'guarded' ? { kind: 'ask', reason: 'a person decides' } : decision))
  return { runtime, ran }
}

describe('the approval stage', () => {
  it('asks a nested call with parentCallId = the enclosing call id; a top-level call without it', async () => {
    const requests: ApprovalRequest[] = []
    const { runtime } = registry({ approval: (request) => (requests.push(request), true) })
    const outer = await runtime.execute({ callId: 'c-outer', name: 'outer', arguments: {}, signal: signal() })
    expect(codeOf(outer)).toBe('OK')
    await runtime.execute({ callId: 'c-top', name: 'guarded', arguments: {}, signal: signal() })
    expect(requests.map((r) => [r.execution.callId, r.parentCallId, r.reason])).toEqual([
      ['c-outer:inner', 'c-outer', 'a person decides'],
      ['c-top', undefined, 'a person decides'],
    ])
    expect('parentCallId' in requests[1]!).toBe(false)
    expect(Object.isFrozen(requests[0])).toBe(true)
  })

  it('a handler\'s ToolError DENIED_BY_APPROVAL is the result\'s message as is; any other failure is prefixed', async () => {
    const deny: ApprovalHandler = () => {
      throw new ToolError('DENIED_BY_APPROVAL', 'guarded was denied approval: not today')
    }
    const denied = await registry({ approval: deny }).runtime.execute({ callId: 'd1', name: 'guarded', arguments: {}, signal: signal() })
    expect([codeOf(denied), messageOf(denied)]).toEqual(['DENIED_BY_APPROVAL', 'guarded was denied approval: not today'])
    const crash: ApprovalHandler = () => Promise.reject(new TypeError('db down'))
    const crashed = await registry({ approval: crash }).runtime.execute({ callId: 'd2', name: 'guarded', arguments: {}, signal: signal() })
    expect([codeOf(crashed), messageOf(crashed)]).toEqual(['DENIED_BY_APPROVAL', 'guarded was denied: the approval handler failed: db down'])
    const otherCode: ApprovalHandler = () => {
      throw new ToolError('TOOL_FAILED', 'not a denial')
    }
    const other = await registry({ approval: otherCode }).runtime.execute({ callId: 'd3', name: 'guarded', arguments: {}, signal: signal() })
    expect(messageOf(other)).toBe('guarded was denied: the approval handler failed: not a denial')
    const refused = await registry({ approval: () => false }).runtime.execute({ callId: 'd4', name: 'guarded', arguments: {}, signal: signal() })
    expect(messageOf(refused)).toBe('guarded was denied by the approval handler (the gate asked because: a person decides)')
  })

  it('a call\'s own approval handler decides instead of the registry\'s, and the calls nested in it inherit it', async () => {
    const asked: string[] = []
    const { runtime, ran } = registry({ approval: (r) => (asked.push(`registry:${r.execution.callId}`), false) })
    const own: ApprovalHandler = (r) => (asked.push(`own:${r.execution.callId}`), true)
    const top = await runtime.execute({ callId: 'o1', name: 'guarded', arguments: {}, signal: signal(), approval: own })
    expect(codeOf(top)).toBe('OK')
    const nested = await runtime.execute({ callId: 'o2', name: 'outer', arguments: {}, signal: signal(), approval: own })
    expect(codeOf(innerOf(nested))).toBe('OK')
    const plain = await runtime.execute({ callId: 'o3', name: 'guarded', arguments: {}, signal: signal() })
    expect(codeOf(plain)).toBe('DENIED_BY_APPROVAL')
    expect(asked).toEqual(['own:o1', 'own:o2:inner', 'registry:o3'])
    expect(ran).toEqual(['guarded', 'guarded'])
  })

  it('a nested call\'s own handler wins over the one it would inherit', async () => {
    const asked: string[] = []
    const { runtime } = registry({}, { approval: () => (asked.push('inner-own'), true) })
    const result = await runtime.execute({ callId: 'w1', name: 'outer', arguments: {}, signal: signal(), approval: () => (asked.push('outer-own'), false) })
    expect(codeOf(innerOf(result))).toBe('OK')
    expect(asked).toEqual(['inner-own'])
  })

  it('holds the call\'s clock exactly while the handler is pending, and moves exec.deadline by the held time', async () => {
    const log: string[] = []
    let releaseHandler!: (value: boolean) => void
    const holdWallClock = () => {
      log.push('hold')
      return () => log.push('release')
    }
    const { runtime } = registry(
      {
        approval: () => {
          log.push('asked')
          return new Promise<boolean>((resolve) => (releaseHandler = resolve))
        },
      },
      { deadline: 1_000_000, holdWallClock },
    )
    const pending = runtime.execute({ callId: 'h1', name: 'outer', arguments: {}, signal: signal() })
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(log).toEqual(['hold', 'asked'])
    await new Promise((resolve) => setTimeout(resolve, 60))
    releaseHandler(true)
    const inner = innerOf(await pending)
    expect(log).toEqual(['hold', 'asked', 'release'])
    const deadline = (inner as { value: number }).value
    expect(deadline).toBeGreaterThanOrEqual(1_000_000 + 55)
    expect(deadline).toBeLessThan(1_000_000 + 5_000)
  })

  it('releases the held clock when the call is cancelled while it waits, and contains a clock that throws', async () => {
    const log: string[] = []
    const controller = new AbortController()
    const { runtime } = registry({ approval: () => new Promise<boolean>(() => {}) }, { holdWallClock: () => (log.push('hold'), () => log.push('release')) })
    const pending = runtime.execute({ callId: 'h2', name: 'outer', arguments: {}, signal: controller.signal })
    await new Promise((resolve) => setTimeout(resolve, 5))
    controller.abort()
    const outer = await pending
    expect(log).toEqual(['hold', 'release'])
    // The outer body returned the nested ABORTED_BEFORE_DISPATCH; the outer call itself was aborted while it ran.
    expect(codeOf(outer)).toBe('ABORTED')

    const throwing = registry(
      { approval: () => true },
      {
        holdWallClock: () => {
          throw new Error('no clock')
        },
      },
    )
    const ok = await throwing.runtime.execute({ callId: 'h3', name: 'outer', arguments: {}, signal: signal() })
    expect(codeOf(innerOf(ok))).toBe('OK')
    expect(throwing.ran).toEqual(['guarded'])
  })

  it('does not hold the clock of a call that is not asked', async () => {
    const held: string[] = []
    const runtime = createToolRuntime({ approval: () => true })
    runtime.register(
      defineTool({ name: 'free', description: 'test', parameters: {}, output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] }, execute: () => 'ok' }),
    )
    const result = await runtime.execute({ callId: 'f1', name: 'free', arguments: {}, signal: signal(), holdWallClock: () => (held.push('hold'), () => {}) })
    expect(codeOf(result)).toBe('OK')
    expect(held).toEqual([])
  })

  it('the session log records a nested call\'s request and decision (with times), and nothing for a top-level call', async () => {
    const sessionLog = createMemorySessionLog()
    const { runtime } = registry({ sessionLog, approval: () => Promise.reject(new ToolError('DENIED_BY_APPROVAL', 'no')) })
    await runtime.execute({ callId: 's-top', name: 'guarded', arguments: {}, signal: signal() })
    expect(sessionLog.events).toEqual([])
    await runtime.execute({ callId: 's-outer', name: 'outer', arguments: {}, signal: signal() })
    expect(sessionLog.events).toEqual([
      { type: 'tool/approval-request', parentCallId: 's-outer', subCallId: 's-outer:inner', name: 'guarded', arguments: {}, reason: 'a person decides', requestedAt: expect.any(Number) },
      {
        type: 'tool/approval-decision',
        parentCallId: 's-outer',
        subCallId: 's-outer:inner',
        name: 'guarded',
        decision: 'deny',
        message: 'no',
        requestedAt: expect.any(Number),
        decidedAt: expect.any(Number),
        waitedMs: expect.any(Number),
      },
    ])
  })

  it('a throwing session log never changes the outcome', async () => {
    const { runtime, ran } = registry({
      approval: () => true,
      sessionLog: {
        append() {
          throw new Error('disk full')
        },
      },
    })
    const result = await runtime.execute({ callId: 't1', name: 'outer', arguments: {}, signal: signal() })
    expect(codeOf(innerOf(result))).toBe('OK')
    expect(ran).toEqual(['guarded'])
  })

  it.each([
    ['deadline', { deadline: Number.NaN }, 'deadline must be a finite number'],
    ['deadline', { deadline: '5' }, 'deadline must be a finite number'],
    ['holdWallClock', { holdWallClock: 1 }, 'holdWallClock must be a function'],
    ['approval', { approval: true }, 'approval must be a function'],
  ])('an input with a malformed %s is INVALID_EXECUTION', async (_field, extra, message) => {
    const { runtime } = registry({ approval: () => true })
    const result = await runtime.execute({ callId: 'x', name: 'guarded', arguments: {}, signal: signal(), ...(extra as object) } as ToolExecutionInput)
    expect(codeOf(result)).toBe('INVALID_EXECUTION')
    expect(messageOf(result)).toContain(message)
  })
})
