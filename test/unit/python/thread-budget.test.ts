/**
 * Python in Node threads stops a hot loop in place: the metered wasm's budget check ends the run
 * at its compute budget (or at once when the host aborts it, through the shared stop slot), and
 * the same thread serves the next run in a fresh interpreter. Threads are counted at spawn: a
 * thread terminated as the backstop (STOP_GRACE_MS) would be replaced, and counted.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { describeHotLoopStops, HOT_LOOPS } from './hot-loop-stops.js'
import { until } from '../../support/poll.js'
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

describeHotLoopStops('Python threads (Node)', counted, [HOT_LOOPS.pass, HOT_LOOPS.catching, HOT_LOOPS.recursion, HOT_LOOPS.cLoop])

describe('Python threads (Node) end an aborted computation at once', () => {
  const { runtime, spawned } = counted({ computeMs: 60_000, maxWallMs: 60_000 })

  it.each([HOT_LOOPS.pass, HOT_LOOPS.cLoop])('%s, aborted mid-loop, ends as abort; the same thread goes on', async (_name, program) => {
    await runtime.warm()
    const before = spawned()
    const controller = new AbortController()
    let entered = false
    const pending = runtime.run({
      program: `await tools.entered()\n${program}`,
      bindings: [{ global: 'tools', functions: { entered: async () => void (entered = true) } }],
      signal: controller.signal,
    })
    await until(() => entered, 'the program to enter its loop')
    await new Promise((resolve) => setTimeout(resolve, 100))
    controller.abort(new Error('stopped by the user'))
    const result = await pending
    expect(result.error?.kind).toBe('abort')
    // The shared stop slot ended the loop: no thread was terminated and replaced.
    expect((await runtime.run({ program: 'return 3', bindings: [] })).value).toBe(3)
    expect(spawned()).toBe(before)
  })
})
