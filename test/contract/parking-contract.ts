/**
 * The parking and replay contract (docs/durability.md), one suite for every runtime that
 * parks: the sandbox in Node threads and in Chromium Web Workers, and inline QuickJS in
 * Node and in workerd. A run whose unsettled calls all wait for a person parks (its state
 * reaches `request.durable.onPark`); the decision resumes it by replaying its journal in
 * a fresh VM; a state stored as JSON resumes in another runtime; nothing the run
 * completed runs again, and every nondeterministic input reads the same on replay.
 *
 * `ask` stands in for the approval stage: it holds the run's wall clock until the test
 * decides, and ends with the run's signal.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { CodeBindingCallOptions, CodeRunRequest, CodeRunResult, CodeRuntime, ParkedRunState } from '../../src/code-runtime/contract.js'
import { until } from '../support/poll.js'
export { until } from '../support/poll.js'

/** What the suite asks a factory for. */
export interface ParkingRuntimeOptions {
  readonly parkAfterMs: number
}

/** Bindings: `ask` waits for `decide()`, holding the wall clock; `effect` and `seen` record their runs. */
export function parkingBindings() {
  const ran: string[] = []
  const seen: unknown[] = []
  const waiting: ((value: unknown) => void)[] = []
  const functions = {
    ask: async (args: unknown, options?: CodeBindingCallOptions) => {
      ran.push(`ask:${JSON.stringify(args)}`)
      const release = options?.holdWallClock?.()
      try {
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
  const parks: ParkedRunState[] = []
  return {
    ran,
    seen,
    parks,
    decide: (value: unknown) => waiting.shift()?.(value),
    waitingCount: () => waiting.length,
    request: (program: string, extra: Partial<Pick<CodeRunRequest, 'signal' | 'durable'>> = {}): CodeRunRequest => ({
      program,
      bindings: [{ global: 'tools', functions }],
      ...extra,
      durable: { onPark: (state) => parks.push(JSON.parse(JSON.stringify(state)) as ParkedRunState), ...extra.durable },
    }),
  }
}

/** The run's value (fails the test, with the message, on an error). */
export function valueOf(result: CodeRunResult): unknown {
  expect(result.error, result.error?.message).toBeUndefined()
  return result.value
}

/**
 * Registers the parking contract for one runtime. `makeRuntime` returns a fresh runtime (the suite
 * disposes it). `language`: the language its programs are in (each case's Python translation sits
 * beside its TypeScript program).
 */
export function describeParkingContract(label: string, makeRuntime: (options: ParkingRuntimeOptions) => CodeRuntime, language: 'typescript' | 'python' = 'typescript'): void {
  const python = language === 'python'
  const src = (ts: string, py: string): string => (python ? py : ts)
  describe(`parking contract: ${label}`, () => {
    const created: CodeRuntime[] = []
    const make = (parkAfterMs = 30) => {
      const runtime = makeRuntime({ parkAfterMs })
      created.push(runtime)
      return runtime
    }
    afterEach(async () => {
      await Promise.all(created.splice(0).map((runtime) => runtime.dispose()))
    })

    it('parks a run that waits only for a person, resumes it by replay on the decision, and runs nothing twice', async () => {
      const runtime = make()
      const b = parkingBindings()
      const pending = runtime.run(b.request(src(
        'const first = await tools.effect({ n: 1 })\nconst answer = await tools.ask({ q: 1 })\nconst second = await tools.effect({ n: 2 })\nreturn { first, answer, second }',
        'first = await tools.effect({"n": 1})\nanswer = await tools.ask({"q": 1})\nsecond = await tools.effect({"n": 2})\nreturn {"first": first, "answer": answer, "second": second}',
      )))
      await until(() => b.parks.length === 1)
      expect(b.parks[0]!.calls).toEqual([{ id: 2, global: 'tools', name: 'ask', args: { q: 1 } }])
      b.decide('yes')
      expect(valueOf(await pending)).toEqual({ first: { done: { n: 1 } }, answer: 'yes', second: { done: { n: 2 } } })
      expect(b.ran).toEqual(['effect:{"n":1}', 'ask:{"q":1}', 'effect:{"n":2}'])
    })

    it('replays every clock and randomness reading: what the program read before the pause is what it keeps after', async () => {
      const runtime = make()
      const b = parkingBindings()
      const pending = runtime.run(
        b.request(src(`
          const before = { now: Date.now(), date: new Date().toISOString(), text: typeof Date(), perf: performance.now(), rand: Math.random(),
            uuid: crypto.randomUUID(), bytes: Array.from(crypto.getRandomValues(new Uint8Array(4))) }
          await tools.seen(before)
          await tools.ask({})
          return { before, later: Date.now() >= before.now, perfAfter: performance.now() >= before.perf }
        `, [
          'import time, random, datetime',
          'before = {"now": time.time(), "date": str(datetime.datetime.now()), "local": list(time.localtime()), "ticks": time.ticks_ms(),',
          '  "rand": random.random(), "bits": random.getrandbits(30), "pick": random.choice("abcdefgh"), "n": random.randint(1, 10 ** 6)}',
          'await tools.seen(before)',
          'await tools.ask({})',
          'return {"before": before, "later": time.time() >= before["now"], "perfAfter": time.ticks_diff(time.ticks_ms(), before["ticks"]) >= 0}',
        ].join('\n'))),
      )
      await until(() => b.parks.length === 1)
      b.decide('ok')
      const value = valueOf(await pending) as { before: unknown }
      expect(value.before).toEqual(b.seen[0])
      expect(value).toMatchObject({ later: true, perfAfter: true })
    })

    it('Promise.all with the asking call in the middle replays its siblings in the order they settled', async () => {
      const runtime = make()
      const b = parkingBindings()
      const pending = runtime.run(
        b.request(src(`
          const order = []
          const track = (name, p) => p.then((v) => { order.push(name); return v })
          const all = await Promise.all([track('a', tools.effect({ n: 'a' })), track('ask', tools.ask({})), track('b', tools.effect({ n: 'b' })),
            track('t', new Promise((r) => setTimeout(() => r('timer'), 10)))])
          return { all, order }
        `, [
          'order = []',
          'async def track(name, aw):',
          '    v = await aw',
          '    order.append(name)',
          '    return v',
          'async def timer():',
          '    await asyncio.sleep(0.01)',
          '    return "timer"',
          'results = await asyncio.gather(track("a", tools.effect({"n": "a"})), track("ask", tools.ask({})), track("b", tools.effect({"n": "b"})), track("t", timer()))',
          'return {"all": results, "order": order}',
        ].join('\n'))),
      )
      await until(() => b.parks.length === 1)
      b.decide('approved')
      const value = valueOf(await pending) as { all: unknown[]; order: string[] }
      expect(value.all).toEqual([{ done: { n: 'a' } }, 'approved', { done: { n: 'b' } }, 'timer'])
      expect(value.order.at(-1)).toBe('ask')
      expect(b.ran.filter((r) => r.startsWith('effect'))).toHaveLength(2)
    })

    it('a timer that fired before the pause is not fired again; one armed across it fires after the resume', async () => {
      const runtime = make()
      const b = parkingBindings()
      const pending = runtime.run(
        b.request(src(`
          const fired = []
          await new Promise((r) => setTimeout(() => { fired.push('early'); r() }, 5))
          setTimeout(() => fired.push('across'), 300)
          const answer = await tools.ask({})
          await new Promise((r) => setTimeout(r, 400))
          return { answer, fired }
        `, [
          'fired = []',
          'await asyncio.sleep(0.005)',
          'fired.append("early")',
          'async def across():',
          '    await asyncio.sleep(0.3)',
          '    fired.append("across")',
          'asyncio.create_task(across())',
          'answer = await tools.ask({})',
          'await asyncio.sleep(0.4)',
          'return {"answer": answer, "fired": fired}',
        ].join('\n'))),
      )
      await until(() => b.parks.length === 1)
      b.decide('go')
      expect(valueOf(await pending)).toEqual({ answer: 'go', fired: ['early', 'across'] })
    })

    it('a stored state resumes in another runtime: only the waiting call and what follows run there', async () => {
      const program = src(
        "console.log('start')\nconst first = await tools.effect({ n: 1 })\nconst answer = await tools.ask({ q: 'ship?' })\nconst second = await tools.effect({ n: 2 })\nreturn { first, answer, second }",
        'print("start")\nfirst = await tools.effect({"n": 1})\nanswer = await tools.ask({"q": "ship?"})\nsecond = await tools.effect({"n": 2})\nreturn {"first": first, "answer": answer, "second": second}',
      )
      const a = parkingBindings()
      const controller = new AbortController()
      const original = make().run(a.request(program, { signal: controller.signal }))
      await until(() => a.parks.length === 1)
      controller.abort('the process stops')
      expect((await original).error?.kind).toBe('abort')
      const b = parkingBindings()
      const resumed = make().run(b.request(program, { durable: { resume: a.parks[0]! } }))
      await until(() => b.waitingCount() === 1)
      b.decide('shipped')
      const result = await resumed
      expect(valueOf(result)).toEqual({ first: { done: { n: 1 } }, answer: 'shipped', second: { done: { n: 2 } } })
      expect(b.ran).toEqual(['ask:{"q":"ship?"}', 'effect:{"n":2}'])
      expect(result.logs.map((l) => l.text)).toEqual(['start'])
    })

    it('a journal that does not match its program ends the run with REPLAY_DIVERGED, naming the call', async () => {
      const a = parkingBindings()
      const controller = new AbortController()
      const original = make().run(a.request(src('await tools.effect({ n: 1 })\nreturn await tools.ask({})', 'await tools.effect({"n": 1})\nreturn await tools.ask({})'), { signal: controller.signal }))
      await until(() => a.parks.length === 1)
      controller.abort()
      await original
      const tampered = JSON.parse(JSON.stringify(a.parks[0])) as { vm: { journal: { calls: string[] } } }
      tampered.vm.journal.calls[0] = 'tools.other#0'
      const b = parkingBindings()
      const resumed = make().run(b.request('unused: the journal holds the program', { durable: { resume: tampered as unknown as ParkedRunState } }))
      await until(() => b.waitingCount() === 1)
      b.decide('x')
      const result = await resumed
      expect(result.error?.kind).toBe('exception')
      expect(result.error?.message).toMatch(/^REPLAY_DIVERGED: .*call 1 was tools\.effect where the journal holds tools\.other/)
    })

    it('the state handed to onPark stays as it was when the run parked, after the run resumes and ends', async () => {
      const b = parkingBindings()
      const kept: ParkedRunState[] = []
      const pending = make().run(b.request(src('const a = await tools.ask({})\nawait tools.effect({ n: 1 })\nreturn a', 'a = await tools.ask({})\nawait tools.effect({"n": 1})\nreturn a'), { durable: { onPark: (state) => kept.push(state) } }))
      await until(() => kept.length === 1)
      const atPark = JSON.stringify(kept[0])
      b.decide('later')
      expect(valueOf(await pending)).toBe('later')
      expect(JSON.stringify(kept[0])).toBe(atPark)
    })

    it('an abort while parked settles the run at once', async () => {
      const b = parkingBindings()
      const controller = new AbortController()
      const pending = make().run(b.request(src("await tools.ask({})\nreturn 'never'", 'await tools.ask({})\nreturn "never"'), { signal: controller.signal }))
      await until(() => b.parks.length === 1)
      controller.abort('stop')
      expect((await pending).error?.kind).toBe('abort')
    })

    it('a host stalled right after a park (Deno blocks it while spawning a thread) does not fail the parked run', async () => {
      const b = parkingBindings()
      const stall = () => {
        const end = performance.now() + 300
        while (performance.now() < end);
      }
      // The next turn of the host's loop, where Node runs expired timers before messages
      // from threads; the thread may still answer first, so the run parks three times.
      const later = (globalThis as { setImmediate?: (f: () => void) => void }).setImmediate ?? ((f: () => void) => setTimeout(f, 0))
      const parked: ParkedRunState[] = []
      const onPark = (state: ParkedRunState) => {
        parked.push(state)
        later(stall)
      }
      const pending = make().run(b.request(src('const a = await tools.ask(1)\nconst b = await tools.ask(2)\nreturn [a, b, await tools.ask(3)]', 'a = await tools.ask(1)\nb = await tools.ask(2)\nreturn [a, b, await tools.ask(3)]'), { durable: { onPark } }))
      let settled = false
      void pending.then(() => (settled = true))
      for (const answer of ['x', 'y', 'z']) {
        const before = parked.length
        await until(() => parked.length > before || settled)
        b.decide(answer)
      }
      expect(valueOf(await pending)).toEqual(['x', 'y', 'z'])
    })
  })
}
