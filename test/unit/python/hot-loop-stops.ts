/**
 * The hot-loop cases shared by Python's Node threads (thread-budget.test.ts) and Chromium's
 * workers (thread-budget.browser.test.ts): each loop ends at its compute budget in place, the same
 * thread serves the next run, and that run's interpreter is fresh. Pure: no `node:*` import.
 */
import { describe, expect, it } from 'vitest'
import type { SandboxRuntime, SandboxRuntimeOptions } from '../../../src/code-runtime/sandbox-runtime.js'

/** A Python sandbox whose threads (workers) are counted as they spawn. */
export type CountedRuntime = (options: SandboxRuntimeOptions) => { readonly runtime: SandboxRuntime; readonly spawned: () => number }

/** Hot loops by name: each passes a loop header forever, or stays in one C call (max over small ints allocates nothing). */
export const HOT_LOOPS = {
  pass: ['while True: pass', 'while True:\n    pass'],
  catching: ['a loop that catches BaseException', 'while True:\n    try:\n        while True: pass\n    except BaseException:\n        pass'],
  recursion: ['recursion that catches its RecursionError', 'def f(n):\n    try:\n        return f(n + 1)\n    except BaseException:\n        return f(n + 1)\nwhile True:\n    f(0)'],
  cLoop: ['a long C loop that allocates nothing (max)', 'm = max(range(10**9))\nreturn 0'],
} as const satisfies Record<string, readonly [string, string]>

/** The budget block: `loops` end at a 300 ms compute budget on one thread, and nothing of a stopped run crosses. */
export function describeHotLoopStops(where: string, counted: CountedRuntime, loops: ReadonlyArray<readonly [string, string]>): void {
  describe(`${where} stop a hot loop in place`, () => {
    const { runtime, spawned } = counted({ computeMs: 300, maxWallMs: 20_000 })

    // The margin is for a loaded machine, not a speed check (bench:sandbox measures the overshoot).
    it.each(loops)('%s ends at its compute budget, and the same thread serves the next run', async (_name, program) => {
      await runtime.warm()
      const result = await runtime.run({ program, bindings: [] })
      expect(result.error?.kind).toBe('timeout')
      expect(result.error?.message).toBe('compute budget of 300 ms exhausted')
      expect(result.stats?.computeMs ?? 0).toBeLessThan(300 * 4)
      expect((await runtime.run({ program: 'return 1 + 1', bindings: [] })).value).toBe(2)
      // Without the meter the thread ignores `end` until killed 100 ms later, and a second one is spawned.
      expect(spawned()).toBe(1)
    })

    it('starts the next run in a fresh interpreter: nothing of the stopped run crosses', async () => {
      const hot = await runtime.run({ program: 'global leaked\nleaked = 1\nasyncio.marker = "kept"\nwhile True:\n    pass', bindings: [] })
      expect(hot.error?.kind).toBe('timeout')
      const next = await runtime.run({ program: 'return ["leaked" in globals(), getattr(asyncio, "marker", None)]', bindings: [] })
      expect(next.value).toEqual([false, null])
      expect(spawned()).toBe(1)
    })
  })
}
