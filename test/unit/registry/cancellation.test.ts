import { describe, expect, it } from 'vitest'
import { createToolRuntime } from '../../../src/registry/index.js'
import { timeoutPolicy } from '../../../src/timeout-policy.js'
import { call, deepFrozen, deferred, echoTool, tick } from './helpers.js'
import type { ToolExecutionResult } from './types.js'

const codeOf = (r: ToolExecutionResult) => (r.isError ? r.error.info?.code : 'OK')

type Phase = 'pre-aborted' | 'gate' | 'guard' | 'approval' | 'wrapper-before-next' | 'body' | 'after-body' | 'post'

/**
 * Builds a runtime whose pipeline aborts the caller's signal in `phase`, and records
 * what ran. The body is cooperative but slow to stop (it settles a macrotask after the
 * abort), so "execute() waits for the body" is observable.
 */
function harness(phase: Phase, bodyOutcome: 'resolve' | 'reject-with-reason' | 'throw-own' = 'resolve') {
  const controller = new AbortController()
  const abort = () => controller.abort(new Error('caller cancelled'))
  const ran: string[] = []
  const results: ToolExecutionResult[] = []
  let bodyActive = false
  const runtime = createToolRuntime({
    approval: async () => {
      ran.push('approval')
      if (phase === 'approval') {
        abort()
        await new Promise(() => {}) // a human who never answers
      }
      return true
    },
  })
  runtime.register(
    echoTool('t', async (_a, exec) => {
      ran.push('body')
      bodyActive = true
      if (phase === 'body') abort()
      await new Promise((r) => setTimeout(r, 5))
      bodyActive = false
      if (exec.signal.aborted && bodyOutcome === 'reject-with-reason') throw exec.signal.reason
      if (bodyOutcome === 'throw-own') throw new Error('own failure')
      return 'value'
    }),
  )
  runtime.on('tools/pre-execute', async () => {
    ran.push('gate')
    if (phase === 'gate') abort()
    return { kind: 'ask' }
  })
  runtime.guard(() => {
    ran.push('guard')
    if (phase === 'guard') abort()
    return undefined
  })
  runtime.on('tools/execute', async (_e, next) => {
    ran.push('wrapper')
    if (phase === 'wrapper-before-next') abort()
    const value = await next()
    if (phase === 'after-body') abort()
    return value
  })
  runtime.on('tools/post-execute', async (d) => {
    ran.push('post')
    if (phase === 'post') abort()
    return d
  })
  runtime.on('tools/result', (_e, r) => void results.push(r))
  if (phase === 'pre-aborted') abort()
  const run = async () => {
    const result = await runtime.execute(call('t', { text: 'x' }, { signal: controller.signal }))
    return { result, bodyActiveAtReturn: bodyActive }
  }
  return { run, ran, results }
}

describe('cancellation matrix', () => {
  const matrix: [Phase, string, string[]][] = [
    ['pre-aborted', 'ABORTED_BEFORE_DISPATCH', []],
    ['gate', 'ABORTED_BEFORE_DISPATCH', ['gate']],
    ['guard', 'ABORTED_BEFORE_DISPATCH', ['gate', 'guard']],
    ['approval', 'ABORTED_BEFORE_DISPATCH', ['gate', 'guard', 'approval']],
    ['wrapper-before-next', 'ABORTED_BEFORE_DISPATCH', ['gate', 'guard', 'approval', 'wrapper']],
    ['body', 'ABORTED', ['gate', 'guard', 'approval', 'wrapper', 'body', 'post']],
    ['after-body', 'ABORTED', ['gate', 'guard', 'approval', 'wrapper', 'body', 'post']],
    ['post', 'ABORTED', ['gate', 'guard', 'approval', 'wrapper', 'body', 'post']],
  ]

  it.each(matrix)('abort in %s → %s, one frozen result, body quiescent', async (phase, code, expectedRan) => {
    const h = harness(phase)
    const { result, bodyActiveAtReturn } = await h.run()
    expect(codeOf(result)).toBe(code)
    expect(h.ran).toEqual(expectedRan)
    expect(bodyActiveAtReturn).toBe(false)
    await tick()
    expect(h.results).toHaveLength(1)
    expect(h.results[0]).toBe(result)
    expect(deepFrozen(result)).toBe(true)
    expect(result.content).toEqual([{ type: 'text', text: `Error: ${(result as { error: { message: string } }).error.message}` }])
  })

  it('a pre-aborted entry still snapshots and freezes the arguments', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool())
    let seenArgs: unknown
    runtime.on('tools/result', (e) => void (seenArgs = e.arguments))
    const args = { text: 'x', list: [1] }
    const result = await runtime.execute(call('echo', args, { signal: AbortSignal.abort() }))
    expect(codeOf(result)).toBe('ABORTED_BEFORE_DISPATCH')
    expect(seenArgs).toEqual(args)
    expect(seenArgs).not.toBe(args)
    expect(Object.isFrozen((seenArgs as { list: unknown[] }).list)).toBe(true)
  })

  it('a body that acknowledges cancellation by rejecting with the signal reason → ABORTED', async () => {
    const h = harness('body', 'reject-with-reason')
    expect(codeOf((await h.run()).result)).toBe('ABORTED')
  })

  it('a tool failure stays more specific than a cancellation that happened during the body', async () => {
    const h = harness('body', 'throw-own')
    expect(codeOf((await h.run()).result)).toBe('TOOL_FAILED')
  })

  it('a denial stays more specific than a cancellation during the gate', async () => {
    const controller = new AbortController()
    const runtime = createToolRuntime()
    runtime.register(echoTool())
    runtime.on('tools/pre-execute', () => {
      controller.abort()
      return { kind: 'deny', reason: 'no' }
    })
    expect(codeOf(await runtime.execute(call('echo', {}, { signal: controller.signal })))).toBe('DENIED_BY_GATE')
  })

  it('TOOL_TIMEOUT stays more specific than a later caller abort, and the body is awaited', async () => {
    const runtime = createToolRuntime()
    runtime.on('tools/execute', timeoutPolicy())
    const controller = new AbortController()
    let active = false
    runtime.register({
      ...echoTool('slow', async (_a, exec) => {
        active = true
        await new Promise((r) => exec.signal.addEventListener('abort', r))
        controller.abort()
        await new Promise((r) => setTimeout(r, 5))
        active = false
        return 'too late'
      }),
      timeoutMs: 10,
    } as never)
    const result = await runtime.execute(call('slow', {}, { signal: controller.signal }))
    expect(codeOf(result)).toBe('TOOL_TIMEOUT')
    expect(active).toBe(false)
  })

  it('a body that ignores its signal keeps execute() open until it settles', async () => {
    const runtime = createToolRuntime()
    const release = deferred()
    let settled = false
    runtime.register(
      echoTool('stubborn', async () => {
        await release.promise
        settled = true
        return 'done'
      }),
    )
    const controller = new AbortController()
    let returned = false
    const pending = runtime.execute(call('stubborn', {}, { signal: controller.signal })).then((r) => ((returned = true), r))
    await tick()
    controller.abort()
    await tick()
    expect(returned).toBe(false)
    release.resolve()
    const result = await pending
    expect(settled).toBe(true)
    expect(codeOf(result)).toBe('ABORTED')
  })
})
