/**
 * Back-to-back runs on scripted threads (scripted-platform.ts): a thread still releasing its
 * last run counts as the spare, so a steady stream of runs does not grow the pool.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createSandboxRuntimeOn } from '../../../src/code-runtime/sandbox-runtime.js'
import type { FakeThread } from './scripted-platform.js'
import { answering, scriptedPlatform } from './scripted-platform.js'

describe('back-to-back runs', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('keep two threads when each run comes before the last one’s thread has said ended', async () => {
    vi.useFakeTimers()
    const { platform, threads } = scriptedPlatform({ ...answering, autoEnd: false })
    const runtime = createSandboxRuntimeOn(platform, { maxConcurrentRuns: 8 })
    await vi.advanceTimersByTimeAsync(0)
    const ended = new Set<number>()
    /** The `end` commands the host sent that no `ended` answered yet. */
    const owed = (): Array<[FakeThread, number]> =>
      threads.flatMap((thread) => thread.posted.filter((m): m is { type: 'end'; run: number } => (m as { type?: string }).type === 'end' && !ended.has((m as { run: number }).run)).map((m): [FakeThread, number] => [thread, m.run]))
    for (let i = 0; i < 20; i++) {
      const late = owed()
      const next = runtime.run({ program: `return ${i}`, bindings: [] })
      await vi.advanceTimersByTimeAsync(0)
      // The thread that served the run before says `ended` only once the next run was admitted.
      for (const [thread, run] of late) {
        ended.add(run)
        thread.send({ type: 'ended', run })
      }
      expect((await next).value).toBe(i)
    }
    expect(threads).toHaveLength(2)
    const disposing = runtime.dispose()
    for (const [thread, run] of owed()) thread.send({ type: 'ended', run })
    await disposing
  })
})
