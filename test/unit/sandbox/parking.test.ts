/**
 * Parking on the REAL sandbox runtime (QuickJS in Node worker threads): a run whose every
 * unsettled call waits for a person gives its thread and slot back; the next message for
 * its VM resumes it on any thread by replaying its journal, and nothing runs twice.
 *
 * The bindings here stand in for the registry: `ask` holds the run's wall clock (as the
 * approval stage does) until the test decides; the others count how often they ran.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import type { CodeBindingCallOptions, CodeRunRequest, CodeRunResult, ParkedRunState } from '../../../src/code-runtime/contract.js'

const runtimes: ReturnType<typeof createSandboxRuntime>[] = []
afterAll(async () => {
  await Promise.all(runtimes.map((r) => r.dispose()))
})

function sandbox(options: Parameters<typeof createSandboxRuntime>[0] = {}) {
  const runtime = createSandboxRuntime({ memoryMb: 32, prespawn: 0, parkAfterMs: 50, ...options })
  runtimes.push(runtime)
  return runtime
}

/** Bindings: `ask` waits for `decide()`, holding the wall clock; `effect` and `seen` count their runs. */
function bindings() {
  const ran: string[] = []
  const seen: unknown[] = []
  const waiting: ((value: unknown) => void)[] = []
  const functions = {
    ask: async (args: unknown, options?: CodeBindingCallOptions) => {
      ran.push(`ask:${JSON.stringify(args)}`)
      const release = options?.holdWallClock?.()
      try {
        // As the approval stage does: the run's end (an abort) ends the wait.
        return await new Promise((resolve, reject) => {
          waiting.push(resolve)
          options?.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true })
        })
      } finally {
        release?.()
      }
    },
    effect: async (args: unknown) => {
      ran.push(`effect:${JSON.stringify(args)}`)
      await new Promise((resolve) => setTimeout(resolve, 5))
      return { done: args }
    },
    seen: async (args: unknown) => {
      seen.push(args)
      return null
    },
  }
  return {
    ran,
    seen,
    decide: (value: unknown) => waiting.shift()?.(value),
    waitingCount: () => waiting.length,
    request: (program: string, signal?: AbortSignal, durable?: CodeRunRequest['durable']) => ({
      program,
      bindings: [{ global: 'tools', functions }],
      ...(signal === undefined ? {} : { signal }),
      ...(durable === undefined ? {} : { durable }),
    }),
  }
}

async function until(check: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time')
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

function valueOf(result: CodeRunResult): unknown {
  expect(result.error, result.error?.message).toBeUndefined()
  return result.value
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

  it('replays every clock and randomness reading: values read before the pause are the ones the program keeps after it', async () => {
    const runtime = sandbox()
    const b = bindings()
    const pending = runtime.run(
      b.request(`
        const before = { now: Date.now(), date: new Date().toISOString(), str: typeof Date(), perf: performance.now(), rand: Math.random(),
          uuid: crypto.randomUUID(), bytes: Array.from(crypto.getRandomValues(new Uint8Array(4))) }
        await tools.seen(before)
        await tools.ask({})
        const after = Date.now()
        return { before, later: after >= before.now, perfAfter: performance.now() >= before.perf }
      `),
    )
    await until(() => runtime.load().parked === 1)
    await new Promise((resolve) => setTimeout(resolve, 30))
    b.decide('ok')
    const value = valueOf(await pending) as { before: unknown; later: boolean; perfAfter: boolean }
    expect(b.seen).toHaveLength(1)
    expect(value.before).toEqual(b.seen[0])
    expect(value).toMatchObject({ later: true, perfAfter: true })
  })

  it('Promise.all with the asking call in the middle: siblings settle in any order, replay keeps the delivered order', async () => {
    const runtime = sandbox()
    const b = bindings()
    const pending = runtime.run(
      b.request(`
        const order = []
        const track = (name, p) => p.then((v) => { order.push(name); return v })
        const all = await Promise.all([
          track('a', tools.effect({ n: 'a' })),
          track('ask', tools.ask({ q: 1 })),
          track('b', tools.effect({ n: 'b' })),
          track('c', new Promise((r) => setTimeout(() => r('timer'), 20))),
        ])
        await tools.seen(order)
        return { all, order }
      `),
    )
    await until(() => runtime.load().parked === 1)
    b.decide('approved')
    const value = valueOf(await pending) as { all: unknown[]; order: string[] }
    expect(value.all).toEqual([{ done: { n: 'a' } }, 'approved', { done: { n: 'b' } }, 'timer'])
    expect(value.order[value.order.length - 1]).toBe('ask')
    expect(b.ran.filter((r) => r.startsWith('effect'))).toHaveLength(2)
  })

  it('a timer armed before the pause fires after the resume, for the time it had left; one due sooner keeps the run from parking', async () => {
    const runtime = sandbox({ parkAfterMs: 50 })
    const b = bindings()
    const pending = runtime.run(
      b.request(`
        const fired = []
        setTimeout(() => fired.push('long'), 400)
        const answer = await tools.ask({})
        await new Promise((r) => setTimeout(r, 500))
        return { answer, fired }
      `),
    )
    await until(() => runtime.load().parked === 1)
    b.decide('go')
    expect(valueOf(await pending)).toEqual({ answer: 'go', fired: ['long'] })

    // A timer due within parkAfterMs of the park attempt: the run does not park until it has fired.
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

  it('an abort while parked settles the run at once, with no thread', async () => {
    const runtime = sandbox()
    const b = bindings()
    const controller = new AbortController()
    const pending = runtime.run(b.request(`await tools.ask({}); return 'never'`, controller.signal))
    await until(() => runtime.load().parked === 1)
    controller.abort('stop')
    const result = await pending
    expect(result.error?.kind).toBe('abort')
    expect(runtime.load().parked).toBe(0)
  })

  it('200 parked runs on 2 slots: a plain run is still answered at once, and every parked run finishes', async () => {
    const runtime = sandbox({ maxConcurrentRuns: 2, maxQueuedRuns: 400, parkAfterMs: 20 })
    const b = bindings()
    const runs: Promise<CodeRunResult>[] = []
    for (let i = 0; i < 200; i++) runs.push(runtime.run(b.request(`const n = ${i}; const a = await tools.ask({ n }); return n + a`)))
    await until(() => runtime.load().parked === 200, 120_000)
    expect(runtime.load()).toMatchObject({ running: 0, queued: 0, parked: 200 })
    expect(valueOf(await runtime.run({ program: 'return 40 + 2', bindings: [] }))).toBe(42)
    for (let i = 0; i < 200; i++) b.decide(1000)
    const values = (await Promise.all(runs)).map(valueOf)
    expect(values).toEqual(Array.from({ length: 200 }, (_, i) => i + 1000))
    expect(b.ran.filter((r) => r.startsWith('ask'))).toHaveLength(200)
  }, 180_000)

  it('a parked state survives its runtime: a new runtime resumes it from the stored JSON, the waiting call is made again, nothing before it runs twice', async () => {
    const program = `
      console.log('before', Math.random() < 2)
      const first = await tools.effect({ n: 1 })
      const stamp = Date.now()
      const answer = await tools.ask({ q: 'ship?' })
      const second = await tools.effect({ n: 2 })
      console.log('after')
      return { first, answer, second, stampKept: stamp <= Date.now() }
    `
    const first = sandbox()
    const a = bindings()
    let stored = ''
    const controller = new AbortController()
    const original = first.run(a.request(program, controller.signal, { onPark: (state) => (stored = JSON.stringify(state)) }))
    await until(() => stored !== '')
    // The process "dies": its run is gone (aborted here), only the stored state is left.
    controller.abort('crash')
    expect((await original).error?.kind).toBe('abort')
    expect(a.ran).toEqual(['effect:{"n":1}', 'ask:{"q":"ship?"}'])

    const second = sandbox()
    const b = bindings()
    const state = JSON.parse(stored) as ParkedRunState
    expect(state.calls).toEqual([{ id: 2, global: 'tools', name: 'ask', args: { q: 'ship?' } }])
    const resumed = second.run(b.request(program, undefined, { resume: state }))
    await until(() => b.waitingCount() === 1)
    expect(second.load()).toMatchObject({ running: 0, parked: 1 })
    b.decide('shipped')
    const result = await resumed
    expect(valueOf(result)).toEqual({ first: { done: { n: 1 } }, answer: 'shipped', second: { done: { n: 2 } }, stampKept: true })
    // Only the waiting call and what came after it ran in the new runtime.
    expect(b.ran).toEqual(['ask:{"q":"ship?"}', 'effect:{"n":2}'])
    expect(result.logs.map((l) => l.text)).toEqual(['before true', 'after'])
  })

  it('a resume whose program differs from its journal ends with REPLAY_DIVERGED naming the call', async () => {
    const runtime = sandbox()
    const a = bindings()
    let stored: ParkedRunState | undefined
    const controller = new AbortController()
    const run = runtime.run(a.request(`await tools.effect({ n: 1 }); return await tools.ask({})`, controller.signal, { onPark: (state) => (stored = state) }))
    await until(() => stored !== undefined)
    controller.abort()
    await run
    // The same journal, a different call: the journal's call keys no longer match.
    const tampered = JSON.parse(JSON.stringify(stored)) as { vm: { journal: { calls: string[] } } }
    tampered.vm.journal.calls[0] = 'tools.other#0'
    const b = bindings()
    const resumed = runtime.run(b.request('ignored: the journal holds the program', undefined, { resume: tampered as unknown as ParkedRunState }))
    await until(() => b.waitingCount() === 1)
    b.decide('x')
    const result = await resumed
    expect(result.error?.kind).toBe('exception')
    expect(result.error?.message).toMatch(/^REPLAY_DIVERGED: .*call 1 was tools\.effect where the journal holds tools\.other/)
    expect(b.ran).toEqual(['ask:{}'])
  })

  it('refuses a resume state that is not one', async () => {
    const runtime = sandbox()
    const result = await runtime.run({ program: 'return 1', bindings: [], durable: { resume: { version: 1, vm: {} } as unknown as ParkedRunState } })
    expect(result.error).toMatchObject({ kind: 'exception', message: 'TypeError: request.durable.resume is not the state of a parked run' })
  })
})
