/**
 * What a resume must check (docs/durability.md), for every runtime that parks: the replay
 * budget (`maxReplayMs`: each resume replays the whole journal, and that compute counts;
 * a run whose replay would not fit does not park), and the waiting calls of a stored
 * state (each must be the call its journal recorded).
 *
 * @module
 */
import { describe, expect, it } from 'vitest'
import type { CodeBindingCallOptions, CodeRunRequest, CodeRuntime, ParkedRunState } from '../../src/code-runtime/contract.js'
import { until } from './parking-contract.js'

/** What the suite asks a factory for. */
export interface ReplayBudgetOptions {
  readonly parkAfterMs: number
  readonly maxReplayMs?: number
}

/** The languages the contract's programs are written in. */
type Language = 'typescript' | 'python'

/** A loop with no clock reading: compute that a replay repeats step for step (MicroPython's loop is about ten times QuickJS's: a tenth of the steps). */
const spin = (iterations: number, language: Language = 'typescript') =>
  language === 'python' ? `x = 0\nfor i in range(${iterations / 10}):\n    x = (x * 31 + i) % 65521\n` : `let x = 0; for (let i = 0; i < ${iterations}; i++) x = (x * 31 + i) | 0; `

/** `ask` waits for `decide()` or `reject()` (a denial), holding the wall clock; `effect` records its runs; every park is kept as JSON. */
function parkingBindings() {
  const ran: string[] = []
  const waiting: { resolve(value: unknown): void; reject(error: Error): void }[] = []
  const parks: ParkedRunState[] = []
  const functions = {
    ask: async (args: unknown, options?: CodeBindingCallOptions) => {
      ran.push(`ask:${JSON.stringify(args)}`)
      const release = options?.holdWallClock?.()
      try {
        return await new Promise((resolve, reject) => {
          waiting.push({ resolve, reject })
          options?.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true })
        })
      } finally {
        release?.()
      }
    },
    effect: async (args: unknown) => {
      ran.push(`effect:${JSON.stringify(args)}`)
      return null
    },
  }
  return {
    ran,
    parks,
    decide: (value: unknown) => waiting.shift()?.resolve(value),
    reject: (error: Error) => waiting.shift()?.reject(error),
    waitingCount: () => waiting.length,
    request: (program: string, durable: { resume?: ParkedRunState } = {}): CodeRunRequest => ({
      program,
      bindings: [{ global: 'tools', functions }],
      durable: { onPark: (state) => parks.push(JSON.parse(JSON.stringify(state)) as ParkedRunState), ...durable },
    }),
  }
}

/** Registers the replay budget cases for one runtime. `makeRuntime` returns a fresh runtime (disposed by the caller's hooks); `language`, its programs' language. */
export function describeReplayBudgetContract(label: string, makeRuntime: (options: ReplayBudgetOptions) => CodeRuntime, language: Language = 'typescript'): void {
  const src = (ts: string, py: string): string => (language === 'python' ? py : ts)
  describe(`replay budget: ${label}`, () => {
    it('a run whose resume would replay more than maxReplayMs has left does not park: it keeps its VM, and the decision reaches it live', async () => {
      const runtime = makeRuntime({ parkAfterMs: 20, maxReplayMs: 1 })
      const b = parkingBindings()
      const run = runtime.run(b.request(src(`${spin(400_000)}const a = await tools.ask({}); await tools.effect({ after: a }); return a`, `${spin(400_000, language)}a = await tools.ask({})\nawait tools.effect({"after": a})\nreturn a`)))
      await until(() => b.waitingCount() === 1)
      // Well past parkAfterMs: it was asked to park several times, and never did.
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect(b.parks).toEqual([])
      b.decide('yes')
      const result = await run
      expect(result.error).toBeUndefined()
      expect(result.value).toBe('yes')
      expect(b.ran).toEqual(['ask:{}', 'effect:{"after":"yes"}'])
    })

    it('a stored state whose replay would not fit what is left of maxReplayMs ends before its waiting calls are made again', async () => {
      const a = parkingBindings()
      void makeRuntime({ parkAfterMs: 20 }).run(a.request(src(`${spin(400_000)}const v = await tools.ask({}); await tools.effect({ v }); return v`, `${spin(400_000, language)}v = await tools.ask({})\nawait tools.effect({"v": v})\nreturn v`)))
      await until(() => a.parks.length === 1)
      const state = a.parks[0]!
      expect(state.busyMs).toBeGreaterThan(1)
      const b = parkingBindings()
      const result = await makeRuntime({ parkAfterMs: 20, maxReplayMs: 1 }).run(b.request('unused', { resume: state }))
      expect(result.error?.kind).toBe('timeout')
      expect(result.error?.message).toMatch(/^replay budget exhausted: resuming would replay about \d+ ms of the run's compute, and 1 ms of maxReplayMs are left$/)
      expect(b.ran).toEqual([])
      a.decide('done')
    })

    it('a replay that takes longer than its room is stopped by the VM (a state that understates its compute)', async () => {
      const a = parkingBindings()
      const first = makeRuntime({ parkAfterMs: 20 })
      const program = src(`${spin(3_000_000)}const v = await tools.ask({}); await tools.effect({ v }); return x`, `${spin(3_000_000, language)}v = await tools.ask({})\nawait tools.effect({"v": v})\nreturn x`)
      void first.run(a.request(program))
      await until(() => a.parks.length === 1)
      // The estimate says nothing to replay; the journal still holds the whole loop.
      const understated: ParkedRunState = { ...a.parks[0]!, busyMs: 0 }
      const b = parkingBindings()
      const resumed = makeRuntime({ parkAfterMs: 20, maxReplayMs: 20 }).run(b.request('unused', { resume: understated }))
      await until(() => b.waitingCount() === 1)
      b.decide('go')
      const result = await resumed
      expect(result.error?.kind).toBe('timeout')
      expect(result.error?.message).toBe("replay budget exhausted: replaying the parked run's journal took more than the 20 ms of maxReplayMs it had left")
      expect(b.ran).toEqual(['ask:{}'])
      a.decide('done')
    })

    it('what the resumes replayed is counted across parks and kept in the parked state', async () => {
      const runtime = makeRuntime({ parkAfterMs: 20 })
      const b = parkingBindings()
      const run = runtime.run(
        b.request(src(
          `${spin(100_000)}let denied = 0; for (;;) { try { await tools.ask({ n: denied }); break } catch { denied++ } } return denied`,
          `${spin(100_000, language)}denied = 0\nwhile True:\n    try:\n        await tools.ask({"n": denied})\n        break\n    except ToolCallError:\n        denied += 1\nreturn denied`,
        )),
      )
      for (let park = 1; park <= 3; park++) {
        await until(() => b.parks.length === park && b.waitingCount() === 1)
        b.reject(new Error('denied'))
      }
      await until(() => b.parks.length === 4 && b.waitingCount() === 1)
      b.decide('yes')
      expect((await run).value).toBe(3)
      expect(b.parks[0]!.replayMs).toBeUndefined()
      const replayed = b.parks.slice(1).map((state) => state.replayMs ?? 0)
      expect(replayed[0]).toBeGreaterThan(0)
      expect(replayed[1]).toBeGreaterThan(replayed[0]!)
      expect(replayed[2]).toBeGreaterThan(replayed[1]!)
    })

    it('refuses a maxReplayMs that is not a positive integer', () => {
      for (const maxReplayMs of [0, -1, 1.5, Number.NaN]) {
        expect(() => makeRuntime({ parkAfterMs: 20, maxReplayMs })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
      }
    })
  })
}

/** A program whose waiting call carries arguments that JSON text can spell in more than one way. */
const TRICKY = `const answer = await tools.ask({ text: 'é "q" \\\\ \\u2028 ☃ 😀', n: 1.5e-7, big: 1e21, neg: -0, list: [1, { b: 2 }, null], 10: 'ten', 2: 'two', nested: { z: 1, a: [true, false] } })
await tools.effect({ answer })
return answer`

/** {@link TRICKY} in Python: MicroPython spells some of its numbers otherwise (`1.5e-07`), which the check must not mind. */
const TRICKY_PYTHON = `answer = await tools.ask({"text": 'é "q" \\\\ \\u2028 ☃ 😀', "n": 1.5e-7, "big": 1e21, "neg": -0.0, "list": [1, {"b": 2}, None], "10": "ten", "2": "two", "nested": {"z": 1, "a": [True, False]}})
await tools.effect({"answer": answer})
return answer`

/** Registers the checks on a stored state's waiting calls for one runtime; `language`, its programs' language. */
export function describeResumeCheckContract(label: string, makeRuntime: (options: ReplayBudgetOptions) => CodeRuntime, language: Language = 'typescript'): void {
  describe(`resuming a stored state: ${label}`, () => {
    /** Parks {@link TRICKY} in one runtime and returns its stored state (as JSON went through a store). */
    const parkedState = async (): Promise<{ state: ParkedRunState; firstAsk: string }> => {
      const a = parkingBindings()
      void makeRuntime({ parkAfterMs: 20 }).run(a.request(language === 'python' ? TRICKY_PYTHON : TRICKY))
      await until(() => a.parks.length === 1)
      return { state: a.parks[0]!, firstAsk: a.ran[0]! }
    }

    it('an unchanged state resumes: its waiting call is made again with the same arguments, whatever their spelling', async () => {
      const { state, firstAsk } = await parkedState()
      const b = parkingBindings()
      const resumed = makeRuntime({ parkAfterMs: 20 }).run(b.request('unused', { resume: state }))
      await until(() => b.waitingCount() === 1)
      expect(b.ran).toEqual([firstAsk])
      b.decide('ok')
      const result = await resumed
      expect(result.error).toBeUndefined()
      expect(result.value).toBe('ok')
      expect(b.ran).toEqual([firstAsk, 'effect:{"answer":"ok"}'])
    })

    it('a waiting call whose arguments were edited in the stored state ends the run REPLAY_DIVERGED, and is not made', async () => {
      const { state } = await parkedState()
      const edited: ParkedRunState = { ...state, calls: state.calls.map((call) => ({ ...call, args: { path: 'src/index.ts' } })) }
      const b = parkingBindings()
      const result = await makeRuntime({ parkAfterMs: 20 }).run(b.request('unused', { resume: edited }))
      expect(result.error?.kind).toBe('exception')
      expect(result.error?.message).toBe(`REPLAY_DIVERGED: the waiting call ${state.calls[0]!.id} (tools.ask) is not the call the run's journal recorded; it was not made again`)
      expect(b.ran).toEqual([])
    })

    it('a waiting call renamed to another tool (or another id) in the stored state ends the run REPLAY_DIVERGED, and nothing runs', async () => {
      const { state } = await parkedState()
      for (const change of [{ name: 'effect' }, { id: state.calls[0]!.id + 1 }, { global: 'other' }]) {
        const edited: ParkedRunState = { ...state, lastCallId: state.lastCallId + 1, calls: state.calls.map((call) => ({ ...call, ...change })) }
        const b = parkingBindings()
        const result = await makeRuntime({ parkAfterMs: 20 }).run(b.request('unused', { resume: edited }))
        expect(result.error?.message).toMatch(/^REPLAY_DIVERGED: the waiting call \d+ \((tools|other)\.(ask|effect)\) is not the call the run's journal recorded/)
        expect(b.ran).toEqual([])
      }
    })
  })
}
