import { describe, expect, it } from 'vitest'
import { createToolRuntime } from '../../../src/registry/index.js'
import { createMemorySessionLog } from '../../../src/session-log.js'
import { timeoutPolicy } from '../../../src/timeout-policy.js'
import { call, echoTool } from './helpers.js'
import type { ToolExecutionResult } from './types.js'

const codeOf = (r: ToolExecutionResult) => (r.isError ? r.error.info?.code : 'OK')

function slowTool(name: string, ms: number, timeoutMs?: number, ignoreSignal = false) {
  const state = { active: false }
  const def = {
    ...echoTool(name, async (_a, exec) => {
      state.active = true
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms)
        if (!ignoreSignal) exec.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()))
      })
      state.active = false
      if (exec.signal.aborted && !ignoreSignal) throw exec.signal.reason
      return 'done'
    }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  }
  return { def: def as never, state }
}

describe('timeoutPolicy', () => {
  it('turns a missed timeoutMs into TOOL_TIMEOUT and waits for the body to stop', async () => {
    const runtime = createToolRuntime()
    runtime.on('tools/execute', timeoutPolicy())
    const slow = slowTool('slow', 1_000, 10)
    runtime.register(slow.def)
    const result = await runtime.execute(call('slow'))
    expect(codeOf(result)).toBe('TOOL_TIMEOUT')
    expect(result.content).toEqual([{ type: 'text', text: 'Error: slow timed out after 10 ms' }])
    expect(slow.state.active).toBe(false)
  })

  it('a body that ignores the signal and finishes late is still TOOL_TIMEOUT, after it settled', async () => {
    const runtime = createToolRuntime()
    runtime.on('tools/execute', timeoutPolicy())
    const stubborn = slowTool('stubborn', 40, 5, true)
    runtime.register(stubborn.def)
    const result = await runtime.execute(call('stubborn'))
    expect(codeOf(result)).toBe('TOOL_TIMEOUT')
    expect(stubborn.state.active).toBe(false)
  })

  it('a call within its deadline, or a tool without timeoutMs, is untouched; the signal is restored', async () => {
    const runtime = createToolRuntime()
    const seen: AbortSignal[] = []
    runtime.on('tools/execute', timeoutPolicy())
    runtime.on('tools/execute', async (exec, next) => (seen.push(exec.signal), next()))
    // 60 s: the 1 ms body ends long before it on any machine (1 s raced a pause at load 20).
    runtime.register(slowTool('fast', 1, 60_000).def)
    runtime.register(slowTool('none', 1).def)
    const caller = new AbortController()
    expect(codeOf(await runtime.execute(call('fast', {}, { signal: caller.signal })))).toBe('OK')
    expect(codeOf(await runtime.execute(call('none', {}, { signal: caller.signal })))).toBe('OK')
    expect(seen[0]).not.toBe(seen[1])
  })

  it('defaultTimeoutMs applies to tools that declare none; bad options throw INVALID_OPTIONS', async () => {
    const runtime = createToolRuntime()
    runtime.on('tools/execute', timeoutPolicy({ defaultTimeoutMs: 5 }))
    runtime.register(slowTool('slow', 1_000).def)
    expect(codeOf(await runtime.execute(call('slow')))).toBe('TOOL_TIMEOUT')
    for (const bad of [0, -1, Number.POSITIVE_INFINITY, '5']) {
      expect(() => timeoutPolicy({ defaultTimeoutMs: bad as never })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
    }
  })

  it('the caller aborting first is ABORTED, not TOOL_TIMEOUT', async () => {
    const runtime = createToolRuntime()
    runtime.on('tools/execute', timeoutPolicy())
    // The caller aborts once the body runs (a 5 ms caller timer could end before dispatch on a
    // loaded machine); the tool's own 60 s timeout cannot come first.
    const caller = new AbortController()
    runtime.register({
      ...echoTool('slow', async (_a, exec) => {
        caller.abort()
        if (!exec.signal.aborted) await new Promise((resolve) => exec.signal.addEventListener('abort', resolve))
        throw exec.signal.reason
      }),
      timeoutMs: 60_000,
    } as never)
    const result = await runtime.execute(call('slow', {}, { signal: caller.signal }))
    expect(codeOf(result)).toBe('ABORTED')
  })
})

describe('createMemorySessionLog', () => {
  it('keeps frozen copies of events in order and can be cleared', () => {
    const log = createMemorySessionLog()
    const event = { type: 'tool/code-dispatch-start', parentCallId: 'p', subCallId: 'p:code:1', name: 'x', arguments: {}, startedAt: 1 } as const
    log.append(event)
    expect(log.events).toEqual([event])
    expect(log.events[0]).not.toBe(event)
    expect(Object.isFrozen(log.events[0])).toBe(true)
    log.clear()
    expect(log.events).toEqual([])
  })
})
