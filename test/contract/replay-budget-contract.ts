/**
 * The replay budget (`maxReplayMs`, docs/durability.md), one suite for every runtime that
 * parks: each resume replays the whole journal in a fresh VM, and that compute is counted.
 * A resume that would need more than is left is refused before it replays; a replay that
 * takes more is stopped by the VM; what was replayed carries over in the parked state.
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

/** A loop with no clock reading: compute that a replay repeats step for step. */
const spin = (iterations: number) => `let x = 0; for (let i = 0; i < ${iterations}; i++) x = (x * 31 + i) | 0`

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

/** Registers the replay budget cases for one runtime. `makeRuntime` returns a fresh runtime (disposed by the caller's hooks). */
export function describeReplayBudgetContract(label: string, makeRuntime: (options: ReplayBudgetOptions) => CodeRuntime): void {
  describe(`replay budget: ${label}`, () => {
    it('a resume that would replay more than maxReplayMs has left is refused before it replays: timeout, nothing after the wait runs', async () => {
      const runtime = makeRuntime({ parkAfterMs: 20, maxReplayMs: 1 })
      const b = parkingBindings()
      const run = runtime.run(b.request(`${spin(400_000)}; const a = await tools.ask({}); await tools.effect({ after: a }); return x`))
      await until(() => b.parks.length === 1)
      // The run computed for well over 1 ms before it parked: replaying that does not fit.
      expect(b.parks[0]!.busyMs).toBeGreaterThan(1)
      b.decide('yes')
      const result = await run
      expect(result.error?.kind).toBe('timeout')
      expect(result.error?.message).toMatch(/^replay budget exhausted: resuming would replay about \d+ ms of the run's compute, and 1 ms of maxReplayMs are left$/)
      expect(b.ran).toEqual(['ask:{}'])
    })

    it('a replay that takes longer than its room is stopped by the VM (a state that understates its compute)', async () => {
      const a = parkingBindings()
      const first = makeRuntime({ parkAfterMs: 20 })
      const program = `${spin(3_000_000)}; const v = await tools.ask({}); await tools.effect({ v }); return x`
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
        b.request(`${spin(100_000)}; let denied = 0; for (;;) { try { await tools.ask({ n: denied }); break } catch { denied++ } } return denied`),
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
