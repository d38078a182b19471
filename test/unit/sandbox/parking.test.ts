/**
 * Parking on the REAL sandbox runtime (QuickJS in Node worker threads), what the pool adds
 * to the parking contract (test/contract/parking-contract.ts: replay, resume, divergence on
 * every runtime): a parked run gives its thread and admission slot back, so runs waiting
 * for people never starve the others.
 *
 * The contract's bindings stand in for the registry: `ask` holds the run's wall clock (as
 * the approval stage does) until the test decides; the others record their runs.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import type { CodeRunResult, ParkedRunState } from '../../../src/code-runtime/contract.js'
import { parkingBindings as bindings, until, valueOf } from '../../contract/parking-contract.js'
import { describeReplayBudgetContract, describeResumeCheckContract } from '../../contract/resume-contract.js'

const runtimes: ReturnType<typeof createSandboxRuntime>[] = []
afterAll(async () => {
  await Promise.all(runtimes.map((r) => r.dispose()))
})

function sandbox(options: Parameters<typeof createSandboxRuntime>[0] = {}) {
  const runtime = createSandboxRuntime({ memoryMb: 32, prespawn: 0, parkAfterMs: 50, ...options })
  runtimes.push(runtime)
  return runtime
}

describe('parking a run that waits for a person (sandbox runtime, Node threads)', () => {
  it('parks: the thread and slot go back to the pool; the decision resumes it by replay, and no call runs twice', async () => {
    const runtime = sandbox({ maxConcurrentRuns: 1 })
    const b = bindings()
    const pending = runtime.run(
      b.request(`
        const first = await tools.effect({ n: 1 })
        const answer = await tools.ask({ q: 'pay?' })
        const second = await tools.effect({ n: 2 })
        return { first, answer, second }
      `),
    )
    await until(() => runtime.load().parked === 1 && runtime.load().running === 0)
    // The one slot is free: a plain run is answered while the first waits.
    expect(valueOf(await runtime.run({ program: 'return 1 + 1', bindings: [] }))).toBe(2)
    b.decide('yes')
    const result = await pending
    expect(valueOf(result)).toEqual({ first: { done: { n: 1 } }, answer: 'yes', second: { done: { n: 2 } } })
    expect(b.ran).toEqual(['effect:{"n":1}', 'ask:{"q":"pay?"}', 'effect:{"n":2}'])
    expect(runtime.load().parked).toBe(0)
  })

  it('parks at once when another run waits for its slot (parkAfterMs still holds on an idle pool)', async () => {
    const runtime = sandbox({ maxConcurrentRuns: 1, parkAfterMs: 600_000 })
    const b = bindings()
    const asking = runtime.run(b.request(`const a = await tools.ask({ q: 'ok?' }); return a`))
    await until(() => b.waitingCount() === 1)
    // Idle pool: the run keeps its slot (parkAfterMs is ten minutes).
    expect(runtime.load()).toMatchObject({ running: 1, parked: 0 })
    // A plain run arrives and waits for the one slot: the asking run gives it up at once.
    expect(valueOf(await runtime.run({ program: 'return 6 * 7', bindings: [] }))).toBe(42)
    expect(runtime.load().parked).toBe(1)
    b.decide('yes')
    expect(valueOf(await asking)).toBe('yes')
  })

  it('a timer due within parkAfterMs of the attempt keeps the run from parking until it has fired', async () => {
    const patient = sandbox({ parkAfterMs: 400 })
    const c = bindings()
    const soon = patient.run(c.request(`let t = 0; setTimeout(() => { t = 1 }, 600); const a = await tools.ask({}); return { a, t }`))
    await until(() => c.waitingCount() === 1)
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(patient.load().parked).toBe(0)
    await until(() => patient.load().parked === 1)
    c.decide('x')
    expect(valueOf(await soon)).toEqual({ a: 'x', t: 1 })
  })
  it('200 parked runs on 2 slots: a plain run is still answered at once, and every parked run finishes', async () => {
    const runtime = sandbox({ maxConcurrentRuns: 2, maxQueuedRuns: 400, parkAfterMs: 20 })
    const b = bindings()
    const runs: Promise<CodeRunResult>[] = []
    for (let i = 0; i < 200; i++) runs.push(runtime.run(b.request(`const n = ${i}; const a = await tools.ask({ n }); return n + a`)))
    // Parked, and every thread let go of its VM (a thread stops in well under a second, even on a loaded machine).
    await until(() => runtime.load().parked === 200 && runtime.load().running === 0, '200 parked runs', 120_000)
    expect(runtime.load()).toMatchObject({ running: 0, queued: 0, parked: 200 })
    expect(valueOf(await runtime.run({ program: 'return 40 + 2', bindings: [] }))).toBe(42)
    for (let i = 0; i < 200; i++) b.decide(1000)
    const values = (await Promise.all(runs)).map(valueOf)
    expect(values).toEqual(Array.from({ length: 200 }, (_, i) => i + 1000))
    expect(b.ran.filter((r) => r.startsWith('ask'))).toHaveLength(200)
  }, 180_000)

  it('refuses a resume state that is not one', async () => {
    const runtime = sandbox()
    const result = await runtime.run({ program: 'return 1', bindings: [], durable: { resume: { version: 1, vm: {} } as unknown as ParkedRunState } })
    expect(result.error).toMatchObject({ kind: 'exception', message: 'TypeError: request.durable.resume is not the state of a parked run' })
  })

  it('parked journals share a byte budget: a run whose journal does not fit keeps its thread instead (and still finishes)', async () => {
    const runtime = sandbox({ maxParkedBytes: 1024 * 1024 })
    const b = bindings()
    const big = { ...b.request('') }.bindings[0]!.functions
    const request = (program: string) => ({ program, bindings: [{ global: 'tools', functions: { ...big, blob: async () => 'x'.repeat(600_000) } }] })
    // 600,000 characters of result in the journal: more than the 512 Ki units 1 MiB allows.
    const heavy = runtime.run(request(`const blob = await tools.blob(); const a = await tools.ask({}); return blob.length + a`))
    await until(() => b.waitingCount() === 1)
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(runtime.load()).toMatchObject({ parked: 0, running: 1 })
    // A small run still parks beside it.
    const light = runtime.run(request(`return await tools.ask({ light: true })`))
    await until(() => runtime.load().parked === 1)
    b.decide(1)
    b.decide(2)
    expect(valueOf(await heavy)).toBe(600_001)
    expect(valueOf(await light)).toBe(2)
  })

  it('the byte budget counts what a waiting call holds: a run waiting on large arguments does not park beyond it, and still finishes', async () => {
    const runtime = sandbox({ maxParkedBytes: 1024 * 1024 })
    const b = bindings()
    // 1.2 MB of arguments on the waiting call, a journal of a few hundred characters.
    const heavy = runtime.run(b.request(`const a = await tools.ask({ content: 'x'.repeat(1_200_000) }); return a`))
    await until(() => b.waitingCount() === 1)
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(runtime.load()).toMatchObject({ parked: 0, running: 1 })
    expect(b.parks).toEqual([])
    const light = runtime.run(b.request(`return await tools.ask({ light: true })`))
    await until(() => runtime.load().parked === 1)
    b.decide(1)
    b.decide(2)
    expect(valueOf(await heavy)).toBe(1)
    expect(valueOf(await light)).toBe(2)
  })
})

describeReplayBudgetContract('sandbox runtime (Node threads)', (options) => sandbox(options))
describeResumeCheckContract('sandbox runtime (Node threads)', (options) => sandbox(options))
