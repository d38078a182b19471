import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startBuiltWorker, type BuiltWorker } from '../../support/built-worker.js'

/**
 * The QuickJS runtime bundles for workerd and runs there under real rules: the fixture
 * worker is bundled the way an edge build does (platform neutral, workerd conditions,
 * the wasm left as a module import) and served by Miniflare, whose workerd refuses
 * `eval`/`new Function` and wasm compilation from bytes (unlike the vitest pool).
 */

describe('QuickJS runtime in workerd (Miniflare, built bundle)', () => {
  let worker: BuiltWorker | undefined

  beforeAll(async () => {
    worker = await startBuiltWorker('test/fixtures/quickjs-worker/worker.ts')
  }, 120_000)

  afterAll(() => worker?.dispose())

  async function get(program?: string): Promise<{ result: Record<string, unknown>; evalAllowed: boolean; hasWorker: boolean }> {
    const url = new URL('http://localhost/')
    if (program !== undefined) url.searchParams.set('program', program)
    const response = await worker!.mf.dispatchFetch(url)
    expect(response.status).toBe(200)
    return (await response.json()) as never
  }

  it('runs a program with a binding, under rules that forbid eval', async () => {
    const body = await get()
    expect(body.evalAllowed).toBe(false)
    expect(body.hasWorker).toBe(false)
    expect(body.result.error).toBeUndefined()
    expect(body.result.value).toEqual({ sum: 2, echoed: { echoed: { sum: 2 } } })
    expect(body.result.logs).toEqual([{ source: 'console', level: 'log', text: 'sum 2' }])
  })

  it('ends a hot loop at the compute budget in workerd', async () => {
    const body = await get('while (true) {}')
    expect(body.result.error).toEqual({ kind: 'timeout', message: 'compute budget of 2000 ms exhausted' })
  })

  it('reports exceptions with their line in workerd', async () => {
    const body = await get('const a = 1\nthrow new Error("edge boom")')
    expect(body.result.error).toMatchObject({ kind: 'exception', message: expect.stringMatching(/^Error: edge boom[\s\S]*program\.ts:2:/) })
  })
})
