/**
 * A run's compute meter starts from zero on a thread that served another run before it
 * (real worker threads: the busy figures are shared memory the thread writes). The host
 * read the meter's base before the thread had reset the figures for the new run, so the
 * previous run's busy time was taken off the new run's own.
 */
import { afterAll, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'

const runtime = createSandboxRuntime({ memoryMb: 32, prespawn: 1, maxConcurrentRuns: 1, computeMs: 800 })
afterAll(() => runtime.dispose())

it('a runaway run after another on the same thread is charged its whole budget', async () => {
  const first = await runtime.run({ program: 'while (true) {}', bindings: [] })
  expect(first.error?.kind).toBe('timeout')
  expect(first.stats!.computeMs).toBeGreaterThanOrEqual(800)
  expect(runtime.load().threads).toBe(1)
  const second = await runtime.run({ program: 'while (true) {}', bindings: [] })
  expect(second.error).toMatchObject({ kind: 'timeout', message: 'compute budget of 800 ms exhausted' })
  expect(second.stats!.computeMs).toBeGreaterThanOrEqual(800)
})
