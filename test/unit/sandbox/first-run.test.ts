/**
 * A fresh runtime's first runs on scripted threads (scripted-platform.ts): the spare thread
 * is spawned once the first run's thread has booted, not beside it, and a run that comes
 * while that spare still boots waits for the thread releasing its last run.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createSandboxRuntimeOn } from '../../../src/code-runtime/sandbox-runtime.js'
import { answering, scriptedPlatform, tick } from './scripted-platform.js'

describe('a fresh runtime’s first runs', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('spawns the spare thread once the first run’s thread has booted, not while it boots', async () => {
    const { platform, threads } = scriptedPlatform({ ...answering, autoReady: false })
    const runtime = createSandboxRuntimeOn(platform, { maxConcurrentRuns: 4 })
    expect(threads).toHaveLength(1)
    const first = runtime.run({ program: 'return 1', bindings: [] })
    await tick()
    expect(threads).toHaveLength(1)
    threads[0]!.send({ type: 'ready' })
    expect((await first).value).toBe(1)
    await tick()
    expect(threads).toHaveLength(2)
    await runtime.dispose()
  })

  it('a run that comes while the spare still boots takes the thread releasing its last run', async () => {
    // Fake time: on real time a loaded machine let the stopped thread's 100 ms release grace
    // pass between these turns; the thread was replaced and the second run waited for a boot
    // that never comes here (a 30 s test timeout at load 20).
    vi.useFakeTimers()
    const { platform, threads } = scriptedPlatform({ ...answering, autoReady: false, autoEnd: false })
    const runtime = createSandboxRuntimeOn(platform, { maxConcurrentRuns: 4 })
    await vi.advanceTimersByTimeAsync(0)
    threads[0]!.send({ type: 'ready' })
    expect((await runtime.run({ program: 'return 1', bindings: [] })).value).toBe(1)
    await vi.advanceTimersByTimeAsync(0)
    // The spare (threads[1]) never says ready: it is still booting.
    expect(threads).toHaveLength(2)
    const second = runtime.run({ program: 'return 2', bindings: [] })
    await vi.advanceTimersByTimeAsync(99)
    expect(threads[1]!.runs).toHaveLength(0)
    threads[0]!.send({ type: 'ended', run: 1 })
    expect((await second).value).toBe(2)
    expect(threads[0]!.runs.map((r) => r.start.program)).toEqual(['return 1', 'return 2'])
    expect(threads[1]!.runs).toHaveLength(0)
    const disposing = runtime.dispose()
    threads[0]!.send({ type: 'ended', run: 2 })
    await disposing
  })
})
