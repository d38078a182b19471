import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startBuiltWorker, type BuiltWorker } from '../../support/built-worker.js'
import { until } from '../../support/poll.js'

/**
 * The next run's sandbox built across requests in workerd (Miniflare, built bundle, real
 * rules): under `ctx.waitUntil(runtime.warm())` after one response, the next request's
 * run takes it; nothing of the previous program survives in it. The fixture is
 * test/unit/quickjs/fixtures/prewarm-worker.ts.
 */

describe('QuickJS prewarm in workerd (Miniflare, built bundle)', () => {
  let worker: BuiltWorker | undefined

  beforeAll(async () => {
    worker = await startBuiltWorker('test/unit/quickjs/fixtures/prewarm-worker.ts')
  }, 120_000)

  afterAll(() => worker?.dispose())

  async function get(path: string, program?: string): Promise<{ result: Record<string, unknown>; builds: number; warmed: number }> {
    const url = new URL(`http://localhost${path}`)
    if (program !== undefined) url.searchParams.set('program', program)
    const response = await worker!.mf.dispatchFetch(url)
    expect(response.status).toBe(200)
    return (await response.json()) as never
  }

  /** Waits until `field` reaches `count`: a deadline, not a count of tries (a build in workerd takes seconds under load). */
  async function reach(path: string, field: 'builds' | 'warmed', count: number): Promise<void> {
    const reached = async () => ((await get(`${path}?builds=1`)) as unknown as Record<typeof field, number>)[field] >= count
    await until(reached, `${path}: ${field} at ${count}`, 25_000, 10)
  }

  it('a sandbox built under waitUntil after one response serves the next request, fresh', async () => {
    const first = await get('/waituntil', 'globalThis.leak = 1; Object.prototype.polluted = 2; console.log = () => {}; return 1')
    expect(first.result.value).toBe(1)
    expect(first.builds).toBe(1)
    await reach('/waituntil', 'builds', 2)
    const second = await get('/waituntil', 'console.log("ok"); return [typeof leak, typeof ({}).polluted, await tools.echo({ a: 1 })]')
    // Taken, not built on the request's path.
    expect(second.builds).toBe(2)
    expect(second.result.error).toBeUndefined()
    expect(second.result.value).toEqual(['undefined', 'undefined', { a: 1 }])
    expect(second.result.logs).toEqual([{ source: 'console', level: 'log', text: 'ok' }])
  })

  it('a prebuilt sandbox enforces the compute budget in workerd', async () => {
    const warm = await get('/waituntil', 'return 0')
    await reach('/waituntil', 'warmed', warm.warmed + 1)
    const before = (await get('/waituntil?builds=1')) as unknown as { builds: number }
    const spin = await get('/waituntil', 'while (true) {}')
    // The spin ran on the sandbox warm() prepared (restored in place): no wasm instance was built for it.
    expect(spin.builds).toBe(before.builds)
    expect(spin.result.error).toEqual({ kind: 'timeout', message: 'compute budget of 500 ms exhausted' })
    expect((await get('/waituntil', 'return 2')).result.value).toBe(2)
  })

  it('the timer-based prewarm that workerd drops with a request breaks nothing later', async () => {
    for (let i = 0; i < 4; i++) {
      const response = await get('/plain', `return ${i}`)
      expect(response.result).toMatchObject({ value: i })
    }
  })
})
