/**
 * Python in Chromium's Web Workers stops a hot loop in place (the browser project runs this file):
 * the metered wasm's budget check ends the run at its compute budget by the worker's own clock,
 * so the same worker serves the next run in a fresh interpreter. Workers are counted at spawn: a
 * worker terminated as the backstop would be replaced, and counted. An abort mid-loop is seen
 * in place only where memory is shared (a cross-origin isolated page); elsewhere the worker is
 * terminated and replaced.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { describeHotLoopStops, HOT_LOOPS } from './hot-loop-stops.js'
import { createPythonSandboxRuntime } from '../../../platforms/browser/python-sandbox-runtime.js'
import type { SandboxRuntime, SandboxRuntimeOptions, SandboxThread } from '../../../src/code-runtime/sandbox-runtime.js'
import { until } from '../../support/poll.js'

const created: SandboxRuntime[] = []
afterAll(async () => {
  await Promise.all(created.map((runtime) => runtime.dispose()))
})

/** One module worker as the pool drives it (the page's own spawn, without its sliced delivery). */
function spawnWorker(url: string | URL, name: string): SandboxThread {
  const worker = new Worker(url, { type: 'module', name })
  const exits: Array<(reason: string) => void> = []
  let dead = false
  const die = (reason: string) => {
    if (dead) return
    dead = true
    for (const listener of exits.splice(0)) listener(reason)
  }
  worker.addEventListener('error', (event) => {
    event.preventDefault()
    die('error')
  })
  return {
    postMessage: (message) => worker.postMessage(message),
    onMessage: (listener) => worker.addEventListener('message', (event: MessageEvent) => listener(event.data)),
    onExit: (listener) => (dead ? listener('terminated') : exits.push(listener)),
    terminate: () => {
      worker.terminate()
      die('terminated')
    },
  }
}

/** A browser Python sandbox whose workers are counted as they spawn. */
function counted(options: SandboxRuntimeOptions): { readonly runtime: SandboxRuntime; readonly spawned: () => number } {
  let spawned = 0
  const spawn = (url: string | URL, name: string) => {
    spawned++
    return spawnWorker(url, name)
  }
  const runtime = createPythonSandboxRuntime({ prespawn: 1, maxConcurrentRuns: 1, memoryMb: 32, ...options }, spawn, { cores: 2, memoryMb: undefined })
  created.push(runtime)
  return { runtime, spawned: () => spawned }
}

describeHotLoopStops('Python workers (Chromium)', counted, [HOT_LOOPS.pass, HOT_LOOPS.catching, HOT_LOOPS.cLoop])

describe('Python workers (Chromium) end an aborted computation at once', () => {
  const { runtime, spawned } = counted({ computeMs: 60_000, maxWallMs: 60_000 })

  it('a hot loop aborted mid-loop ends as abort, and the next run works', async () => {
    await runtime.warm()
    const controller = new AbortController()
    let entered = false
    const pending = runtime.run({
      program: 'await tools.entered()\nwhile True:\n    pass',
      bindings: [{ global: 'tools', functions: { entered: async () => void (entered = true) } }],
      signal: controller.signal,
    })
    await until(() => entered, 'the program to enter its loop', 20_000, 10)
    await new Promise((resolve) => setTimeout(resolve, 100))
    controller.abort(new Error('stopped by the user'))
    expect((await pending).error?.kind).toBe('abort')
    expect((await runtime.run({ program: 'return 3', bindings: [] })).value).toBe(3)
    // Shared memory carries the stop into the loop; without it (this page) the worker is replaced.
    expect(spawned()).toBe(globalThis.crossOriginIsolated === true ? 1 : 2)
  })
})
