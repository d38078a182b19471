/**
 * Python in Node threads stops a hot loop in place: the metered wasm's budget check ends the run
 * at its compute budget (or at once when the host aborts it, through the shared stop slot), and
 * the same thread serves the next run in a fresh interpreter. Threads are counted at spawn: a
 * thread terminated as the backstop (STOP_GRACE_MS) would be replaced, and counted.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { PYTHON_PLATFORM } from '../../../platforms/node/python-sandbox-runtime.js'
import { createSandboxRuntimeOn } from '../../../src/code-runtime/sandbox-runtime.js'
import type { SandboxRuntime, SandboxRuntimeOptions } from '../../../src/code-runtime/sandbox-runtime.js'

const created: SandboxRuntime[] = []
afterAll(async () => {
  await Promise.all(created.map((runtime) => runtime.dispose()))
})

/** A Python sandbox on the real Node platform whose threads are counted as they spawn. */
function counted(options: SandboxRuntimeOptions): { readonly runtime: SandboxRuntime; readonly spawned: () => number } {
  let spawned = 0
  const runtime = createSandboxRuntimeOn({ ...PYTHON_PLATFORM, spawn: () => (spawned++, PYTHON_PLATFORM.spawn()) }, { prespawn: 1, maxConcurrentRuns: 1, ...options })
  created.push(runtime)
  return { runtime, spawned: () => spawned }
}

const HOT_LOOPS = [
  ['while True: pass', 'while True:\n    pass'],
  ['a loop that catches BaseException', 'while True:\n    try:\n        while True: pass\n    except BaseException:\n        pass'],
  ['recursion that catches its RecursionError', 'def f(n):\n    try:\n        return f(n + 1)\n    except BaseException:\n        return f(n + 1)\nwhile True:\n    f(0)'],
  ['a long C loop that allocates nothing (max)', 'm = max(range(10**9))\nreturn 0'],
] as const

describe('Python threads (Node) stop a hot loop in place', () => {
  const { runtime, spawned } = counted({ computeMs: 300, maxWallMs: 20_000 })

  // The margin is for a loaded machine, not a speed check (bench:sandbox measures the overshoot).
  it.each(HOT_LOOPS)('%s ends at its compute budget, and the same thread serves the next run', async (_name, program) => {
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

describe('Python threads (Node) end an aborted computation at once', () => {
  const { runtime, spawned } = counted({ computeMs: 60_000, maxWallMs: 60_000 })

  it.each([HOT_LOOPS[0], HOT_LOOPS[3]])('%s, aborted mid-loop, ends as abort; the same thread goes on', async (_name, program) => {
    await runtime.warm()
    const before = spawned()
    const controller = new AbortController()
    let entered = false
    const pending = runtime.run({
      program: `await tools.entered()\n${program}`,
      bindings: [{ global: 'tools', functions: { entered: async () => void (entered = true) } }],
      signal: controller.signal,
    })
    while (!entered) await new Promise((resolve) => setTimeout(resolve, 10))
    await new Promise((resolve) => setTimeout(resolve, 100))
    controller.abort(new Error('stopped by the user'))
    const result = await pending
    expect(result.error?.kind).toBe('abort')
    // The shared stop slot ended the loop: no thread was terminated and replaced.
    expect((await runtime.run({ program: 'return 3', bindings: [] })).value).toBe(3)
    expect(spawned()).toBe(before)
  })
})
