/**
 * Plan approval with `createPreflightWorker()` (the Node thread `npm start` uses): the plan
 * is read in the thread, so a program longer than the host reads inline still gets its
 * plan, and the thread runs the same fail-closed scan (an escaped spelling is dynamic).
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createPreflightWorker } from '../../../platforms/node/index.js'
import { createThreadedPreflightEngine, servePreflightThread, type PreflightThread } from '../../../src/preflight/threaded-engine.js'
import type { PreflightEngineRequest } from '../../../src/preflight/types.js'
import type { PendingApproval } from '../../../src/approvals/index.js'
import { MAX_INLINE_PLAN_CHARS } from '../../../src/registry/plan-approval.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { runCode, setup } from '../approvals/helpers.js'

const preflightEngine = createPreflightWorker()
afterAll(() => preflightEngine.dispose())
// No warm-up before the tests: a plan read on a fresh thread does not wait for the compiler's load.

/** A registry with plans on over the preflight thread; the person denies every plan (nothing runs). */
function denyingPlans() {
  const fixture = setup({ plans: true }, { mode: 'code', codeRuntime: createInProcessRuntime(), preflightEngine, preflight: 'off' })
  const asked: PendingApproval[] = []
  fixture.broker.subscribe((event) => {
    if (event.type !== 'requested') return
    asked.push(event.approval)
    setTimeout(() => fixture.broker.decide(event.approval.id, { decision: 'deny' }), 0)
  })
  return { ...fixture, asked }
}

describe('plan approval over the preflight thread', () => {
  it('reads a program longer than the host reads inline (its plan comes from the thread)', async () => {
    const { runtime, asked, ran } = denyingPlans()
    const code = `await tools.read({ n: 0 })\n// ${'x'.repeat(4 * MAX_INLINE_PLAN_CHARS)}\nawait tools.write_file({ n: 1 })`
    await runCode(runtime, code).result
    expect(asked.map((a) => [a.kind, a.plan?.calls, a.plan?.dynamic])).toEqual([['plan', [{ name: 'read', line: 1 }, { name: 'write_file', line: 3 }], false]])
    expect(ran).toEqual([])
    await runtime.dispose()
  })

  it('the thread fails closed as the inline scan does', async () => {
    const { runtime, asked } = denyingPlans()
    await runCode(runtime, 'await tools.write_file({ n: 1 })\nawait tools.\\u0077rite_file({ n: 666 })').result
    expect(asked[0]?.plan?.dynamic).toBe(true)
    await runtime.dispose()
  })
})

describe('a plan-only read between checks', () => {
  it('leaves the SDK text where it is: the next check does not send it again, and the thread still checks against it', async () => {
    const posted: unknown[] = []
    const analyzed: (string | undefined)[] = []
    const engine = createThreadedPreflightEngine({
      spawn: (): PreflightThread => {
        let listener: (message: unknown) => void = () => {}
        const serve = servePreflightThread((message) => queueMicrotask(() => listener(message)), async (request: PreflightEngineRequest) => {
          analyzed.push(request.declarations)
          return { plan: { calls: [], dynamic: false }, spans: [], diagnostics: undefined, notes: [] }
        })
        return { postMessage: (message) => (posted.push((message as { declarations?: unknown }).declarations), serve(message)), onMessage: (l) => (listener = l), onExit: () => {}, terminate: () => {} }
      },
    })
    const sdk = 'declare const tools: { a(): Promise<void> }'
    await engine.analyze({ program: 'await tools.a()', language: 'typescript', declarations: sdk })
    await engine.analyze({ program: 'await tools.a()', language: 'typescript', declarations: undefined })
    await engine.analyze({ program: 'await tools.a()', language: 'typescript', declarations: sdk })
    expect(posted).toEqual([sdk, undefined, null])
    expect(analyzed).toEqual([sdk, undefined, sdk])
    await engine.dispose()
  })
})
