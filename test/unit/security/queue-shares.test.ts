/**
 * One caller cannot take every place in the sandbox's queue (stop 55, red team 3, finding 3).
 * Lanes (one per HTTP principal) take turns for free slots, but the queue's places were first
 * come, first served: one `run` token that posted `maxConcurrentRuns + maxQueuedRuns` sleeping
 * programs had every other caller refused (503 OVERLOADED), the person included, until they
 * ended (up to their wall clock, 60 s each by default). Now a lane holds at most
 * `maxQueuedRuns` less a quarter; the rest waits for the other lanes, and a run queued there
 * is served at the next free slot. Real sandbox threads.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { laneQueueShare } from '../../../src/code-runtime/sandbox-runtime.js'
import type { CodeRunResult } from '../../../src/code-runtime/contract.js'
import { AGENT_TOKEN, PERSON_TOKEN, ROLE_TOKENS, createFixture, jsonAuth } from '../http/fixtures.js'

const runtimes: ReturnType<typeof createSandboxRuntime>[] = []
afterAll(async () => {
  await Promise.all(runtimes.map((r) => r.dispose()))
})

const SLEEP = 'await new Promise((r) => setTimeout(r, 60_000)); return 1'

describe("a lane's share of the queue", () => {
  it('the share: maxQueuedRuns less a quarter (all of a queue under 4 places)', () => {
    expect([0, 1, 3, 4, 8, 64, 2010].map(laneQueueShare)).toEqual([0, 1, 3, 3, 6, 48, 1508])
  })

  it('one lane: 1 running and 6 of 8 places queued, the rest refused (overloaded, naming the share); lane B and the shared lane still queue and run', async () => {
    const runtime = createSandboxRuntime({ memoryMb: 32, prespawn: 0, maxConcurrentRuns: 1, maxQueuedRuns: 8 })
    runtimes.push(runtime)
    const stop = new AbortController()
    const flood: Promise<CodeRunResult>[] = []
    for (let i = 0; i < 12; i++) flood.push(runtime.run({ program: SLEEP, bindings: [], lane: 'A', signal: stop.signal }))
    const refused = await Promise.race([Promise.all(flood.slice(7)), new Promise<'waiting'>((resolve) => setTimeout(() => resolve('waiting'), 10_000))])
    expect(refused).not.toBe('waiting')
    for (const result of refused as CodeRunResult[]) {
      expect(result.error).toEqual({ kind: 'overloaded', message: 'the sandbox queue keeps a quarter of its 8 places for other callers, and this caller already has 6 runs waiting; retry later' })
    }
    expect(runtime.load()).toMatchObject({ running: 1, queued: 6 })
    // Before: 8 queued in lane A, and these two were refused ("the sandbox is at capacity").
    const other = runtime.run({ program: 'return 2', bindings: [], lane: 'B' })
    const shared = runtime.run({ program: 'return 3', bindings: [] })
    expect(runtime.load()).toMatchObject({ running: 1, queued: 8 })
    // A full queue is full for every lane.
    expect((await runtime.run({ program: 'return 4', bindings: [], lane: 'C' })).error?.kind).toBe('overloaded')
    stop.abort()
    expect((await other).value).toBe(2)
    expect((await shared).value).toBe(3)
    await Promise.all(flood)
  }, 60_000)

  it('over HTTP: a run token that filled the slots and its share of the queue leaves the person room; the person\'s run is served next', async () => {
    const runtime = createSandboxRuntime({ memoryMb: 32, prespawn: 0, maxConcurrentRuns: 1, maxQueuedRuns: 4 })
    runtimes.push(runtime)
    const f = createFixture({ mode: 'both', codeRuntime: runtime }, { tokens: ROLE_TOKENS })
    const post = (path: string, token: string, code: string) => Promise.resolve(f.app.request(path, { method: 'POST', headers: jsonAuth(token), body: JSON.stringify({ code, description: 'd' }) }))
    // One more than the slot and the queue hold: before, the queue was full (1 running, 4 waiting).
    const statuses: number[] = []
    for (let i = 0; i < 5; i++) statuses.push((await post('/v1/runs', AGENT_TOKEN, 'await new Promise((r) => setTimeout(r, 1500)); return 1')).status)
    expect(statuses).toEqual([202, 202, 202, 202, 202])
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(runtime.load()).toMatchObject({ running: 1, queued: 3 })
    // Before: 503 OVERLOADED ("the code runtime is at capacity (1 runs running, 4 waiting)").
    const started = performance.now()
    const mine = await post('/v1/run', PERSON_TOKEN, 'return 42')
    expect(mine.status).toBe(200)
    expect(((await mine.json()) as { value: { result: unknown } }).value.result).toBe(42)
    // Served at the first free slot (lanes take turns), not after the agent's queued three.
    expect(performance.now() - started).toBeLessThan(4000)
  }, 60_000)
})
