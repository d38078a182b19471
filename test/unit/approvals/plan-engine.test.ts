/**
 * Where a plan is read (issue 31, item 3): with a threaded preflight engine
 * (`preflightEngine`, `where: 'thread'`) plan approval asks it for the plan instead of
 * parsing hostile text on the host's thread, and fails closed on whatever the thread
 * answers badly or late; without one, the calling thread reads a program only up to
 * MAX_INLINE_PLAN_CHARS. Over hand-built registry parts, as in plan.test.ts.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { PreflightEngine, PreflightEngineRequest, PreflightEngineResult } from '../../../src/preflight/types.js'
import { HookBus } from '../../../src/registry/hooks.js'
import { InFlightCalls } from '../../../src/registry/in-flight.js'
import { ToolLayers } from '../../../src/registry/layers.js'
import { validateRuntimeOptions } from '../../../src/registry/options.js'
import { createPlanApproval, MAX_INLINE_PLAN_CHARS, PLAN_READ_TIMEOUT_MS } from '../../../src/registry/plan-approval.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { detachToolDefinition } from '../../../src/schema/tool-definition.js'
import type { ApprovalPlan, ApprovalRequest, PreToolDecision, ToolExecution, ToolExecutionToken } from '../../../src/types.js'

function planTool(name: string) {
  return defineTool({ name, description: `${name} (test)`, parameters: {}, output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] }, execute: () => name })
}

/** An engine in a "thread" whose answers the test writes; records every request. */
function fakeEngine(answer: (request: PreflightEngineRequest) => Promise<PreflightEngineResult>, where: 'thread' | 'inline' = 'thread') {
  const requests: PreflightEngineRequest[] = []
  const engine: PreflightEngine = { where, analyze: (request) => (requests.push(request), answer(request)), dispose: async () => {} }
  return { engine, requests }
}

function parts(engine?: PreflightEngine) {
  const transport = detachToolDefinition(planTool('run_code'))
  const layers = new ToolLayers({ defaultMode: 'code', transport: () => transport, onChange: () => {} })
  for (const name of ['write_file', 'pay', 'read']) layers.add(undefined, detachToolDefinition(planTool(name)))
  const hooks = new HookBus()
  hooks.preExecute.add((decision: PreToolDecision, execution: ToolExecution): PreToolDecision => (execution.name === 'read' ? decision : { kind: 'ask', reason: 'asks' }), undefined)
  const requests: ApprovalRequest[] = []
  const approval = Object.assign((request: ApprovalRequest) => (requests.push(request), true), { acceptsPlans: true as const })
  const options = validateRuntimeOptions({ approval, ...(engine === undefined ? {} : { preflightEngine: engine }) })
  const approve = createPlanApproval({ options, hooks, calls: new InFlightCalls(), layers })
  return { approve, requests }
}

function runOf(signal = new AbortController().signal): ToolExecution {
  return Object.freeze({ token: Symbol('run') as ToolExecutionToken, callId: 'run-1', name: 'run_code', arguments: { code: 'x' }, signal })
}

const planOf = (request: ApprovalRequest | undefined) => (request as { plan: ApprovalPlan } | undefined)?.plan

afterEach(() => {
  vi.useRealTimers()
})

describe('plan approval reads the plan in a threaded preflight engine', () => {
  it('asks the engine for a plan only (no declarations) and uses its answer, not an inline read', async () => {
    // The engine's answer differs from what the text says: proof the host did not parse it.
    const { engine, requests } = fakeEngine(async () => ({ plan: { calls: [{ name: 'pay', line: 3, column: 1 }], dynamic: false }, spans: [], diagnostics: undefined, notes: [] }))
    const { approve, requests: asked } = parts(engine)
    await approve({ code: 'await tools.write_file({})', description: 'd', language: 'typescript', run: runOf() })
    expect(requests).toEqual([{ program: 'await tools.write_file({})', language: 'typescript', declarations: undefined }])
    expect(planOf(asked[0])?.calls).toEqual([{ name: 'pay', line: 3, column: 1 }])
  })

  it.each([
    ['a call without a name', { calls: [{ line: 1, column: 1 }], dynamic: false }],
    ['a line that is not a positive integer', { calls: [{ name: 'pay', line: 0.5, column: 1 }], dynamic: false }],
    ['no dynamic flag', { calls: [{ name: 'pay', line: 1, column: 1 }] }],
    ['calls that are not a list', { calls: 'pay', dynamic: false }],
    ['no plan', null],
  ])('an answer with %s reads as unread: nothing planned, nothing asked as a plan', async (_label, plan) => {
    const { engine } = fakeEngine(async () => ({ plan, spans: [], diagnostics: undefined, notes: [] }) as unknown as PreflightEngineResult)
    const { approve, requests } = parts(engine)
    await approve({ code: 'await tools.pay({})', description: 'd', language: 'typescript', run: runOf() })
    expect(requests).toEqual([])
  })

  it('an engine that rejects reads as unread', async () => {
    const { engine } = fakeEngine(() => Promise.reject(new Error('thread died')))
    const { approve, requests } = parts(engine)
    await approve({ code: 'await tools.pay({})', description: 'd', language: 'typescript', run: runOf() })
    expect(requests).toEqual([])
  })

  it('an engine that never answers is given up after PLAN_READ_TIMEOUT_MS: nothing is pre-approved', async () => {
    vi.useFakeTimers()
    const { engine } = fakeEngine(() => new Promise(() => {}))
    const { approve, requests } = parts(engine)
    let settled = false
    const done = approve({ code: 'await tools.pay({})', description: 'd', language: 'typescript', run: runOf() }).then(() => (settled = true))
    await vi.advanceTimersByTimeAsync(PLAN_READ_TIMEOUT_MS - 1)
    expect(settled).toBe(false)
    await vi.advanceTimersByTimeAsync(1)
    await done
    expect(requests).toEqual([])
  })

  it('a run cancelled while the engine reads stops waiting at once', async () => {
    const { engine } = fakeEngine(() => new Promise(() => {}))
    const { approve, requests } = parts(engine)
    const controller = new AbortController()
    const done = approve({ code: 'await tools.pay({})', description: 'd', language: 'typescript', run: runOf(controller.signal) })
    controller.abort()
    await done
    expect(requests).toEqual([])
  })

  it('an inline engine is not asked: the calling thread reads the plan itself', async () => {
    const { engine, requests } = fakeEngine(() => Promise.reject(new Error('never')), 'inline')
    const { approve, requests: asked } = parts(engine)
    await approve({ code: 'await tools.pay({})', description: 'd', language: 'typescript', run: runOf() })
    expect(requests).toEqual([])
    expect(planOf(asked[0])?.calls).toEqual([{ name: 'pay', line: 1, column: 7 }])
  })
})

describe('without a threaded engine the host reads at most MAX_INLINE_PLAN_CHARS', () => {
  it('a program over the bound is not read: no plan request (each asking call asks on its own)', async () => {
    const { approve, requests } = parts()
    const code = `await tools.pay({})\n// ${'x'.repeat(MAX_INLINE_PLAN_CHARS)}`
    await approve({ code, description: 'd', language: 'typescript', run: runOf() })
    expect(requests).toEqual([])
  })

  it('a program at the bound is read', async () => {
    const { approve, requests } = parts()
    const head = 'await tools.pay({})\n// '
    await approve({ code: head + 'x'.repeat(MAX_INLINE_PLAN_CHARS - head.length), description: 'd', language: 'typescript', run: runOf() })
    expect(planOf(requests[0])?.calls.map((c) => c.name)).toEqual(['pay'])
  })
})
