/**
 * The threaded preflight engine's clocks: a fresh thread's compiler load (seconds, more on a
 * loaded machine) is not counted against a check's budget, has its own bound, and a check on a
 * loaded thread keeps its budget. The thread here is the real `servePreflightThread` over a fake
 * analysis whose load the test controls.
 */
import { describe, expect, it } from 'vitest'
import { createThreadedPreflightEngine, servePreflightThread, type PreflightThread } from '../../../src/preflight/threaded-engine.js'
import type { PreflightEngineRequest, PreflightEngineResult } from '../../../src/preflight/types.js'
import { until } from '../../support/poll.js'

const CHECKED: PreflightEngineResult = { plan: { calls: [], dynamic: false }, spans: [], diagnostics: [], notes: [] }
const REQUEST: PreflightEngineRequest = { program: 'return 1', language: 'typescript', declarations: 'declare const tools: {}' }

function threadWith(loaded: Promise<unknown>, analyze: () => Promise<PreflightEngineResult>): { spawn: () => PreflightThread; terminated: () => number } {
  let terminated = 0
  return {
    terminated: () => terminated,
    spawn: () => {
      let listener: (message: unknown) => void = () => {}
      // As a real thread: nothing is analysed before the compiler is loaded.
      const serve = servePreflightThread((message) => queueMicrotask(() => listener(message)), () => loaded.then(analyze), loaded)
      return { postMessage: (message) => serve(message), onMessage: (l) => (listener = l), onExit: () => {}, terminate: () => void terminated++ }
    },
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

describe('a preflight thread loading its compiler', () => {
  it('does not count the load against the first check: a load longer than the check budget still checks', async () => {
    const thread = threadWith(sleep(300), async () => CHECKED)
    const engine = createThreadedPreflightEngine({ spawn: thread.spawn, timeoutMs: 50 })
    expect(await engine.analyze(REQUEST)).toEqual(CHECKED)
    expect(thread.terminated()).toBe(0)
    await engine.dispose()
  })

  it('answers CHECK_UNAVAILABLE and stops the thread when the load outlasts loadTimeoutMs', async () => {
    const thread = threadWith(new Promise(() => {}), async () => CHECKED)
    const engine = createThreadedPreflightEngine({ spawn: thread.spawn, timeoutMs: 10_000, loadTimeoutMs: 100 })
    const result = await engine.analyze(REQUEST)
    expect(result.notes.map((note) => note.code)).toEqual(['CHECK_UNAVAILABLE'])
    expect(result.notes[0]?.message).toMatch(/did not load its compiler within 100 ms/)
    expect(thread.terminated()).toBe(1)
    await engine.dispose()
  })

  it('keeps a check budget once loaded: a check that never ends answers CHECK_TIMEOUT and stops the thread', async () => {
    const thread = threadWith(Promise.resolve(), () => new Promise<PreflightEngineResult>(() => {}))
    const engine = createThreadedPreflightEngine({ spawn: thread.spawn, timeoutMs: 100, loadTimeoutMs: 60_000 })
    const result = await engine.analyze(REQUEST)
    expect(result.notes.map((note) => note.code)).toEqual(['CHECK_TIMEOUT'])
    expect(thread.terminated()).toBe(1)
    await engine.dispose()
  })

  it('arms the budget of every check that waited for the load', async () => {
    const thread = threadWith(sleep(100), () => new Promise<PreflightEngineResult>(() => {}))
    const engine = createThreadedPreflightEngine({ spawn: thread.spawn, timeoutMs: 100 })
    const results = await Promise.all([engine.analyze(REQUEST), engine.analyze(REQUEST)])
    expect(results.map((r) => r.notes.map((note) => note.code))).toEqual([['CHECK_TIMEOUT'], ['CHECK_TIMEOUT']])
    await engine.dispose()
  })

  it('reads a plan at once while the compiler still loads; a check waits for the load', async () => {
    const PLANNED: PreflightEngineResult = { plan: { calls: [{ name: 'write_file', line: 1, column: 7 }], dynamic: false }, spans: [], diagnostics: undefined, notes: [] }
    let finishLoad!: () => void
    const loaded = new Promise<void>((resolve) => (finishLoad = resolve))
    // As the real thread's analysis: a plan-only request (no declarations) needs no compiler.
    let listener: (message: unknown) => void = () => {}
    const serve = servePreflightThread((message) => queueMicrotask(() => listener(message)), (request) => (request.declarations === undefined ? Promise.resolve(PLANNED) : loaded.then(() => CHECKED)), loaded)
    const engine = createThreadedPreflightEngine({ spawn: () => ({ postMessage: (message) => serve(message), onMessage: (l) => (listener = l), onExit: () => {}, terminate: () => {} }), timeoutMs: 50 })
    let checked = false
    const check = engine.analyze(REQUEST).then((result) => ((checked = true), result))
    // Held behind the load, this read outlasted plan approval's 10 s PLAN_READ_TIMEOUT_MS on a loaded machine.
    expect(await engine.analyze({ ...REQUEST, declarations: undefined })).toEqual(PLANNED)
    expect(checked).toBe(false)
    finishLoad()
    expect(await check).toEqual(CHECKED)
    await engine.dispose()
  })

  it('hands a check to the analysis only once the load settles (a plan read at once); ignores what is not a request, null included', async () => {
    let finishLoad!: () => void
    const loaded = new Promise<void>((resolve) => (finishLoad = resolve))
    const analysed: (string | undefined)[] = []
    const posted: unknown[] = []
    const serve = servePreflightThread((message) => posted.push(message), async (request) => (analysed.push(request.declarations), CHECKED), loaded)
    expect(() => serve(null)).not.toThrow()
    serve({ id: 1, program: 'return 1', language: 'typescript', declarations: 'declare const tools: {}' })
    serve({ id: 2, program: 'return 1', language: 'typescript' })
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(analysed).toEqual([undefined])
    expect(posted).toEqual([{ id: 2, result: CHECKED }])
    finishLoad()
    await until(() => posted.length === 3)
    expect(analysed).toEqual([undefined, 'declare const tools: {}'])
    expect(posted.slice(1)).toEqual(['toolyard-preflight-ready', { id: 1, result: CHECKED }])
  })
})
