/**
 * Preflight in the BUILT edge Worker (scripts/build-edge.mjs, served by Miniflare's
 * workerd under real rules): the TypeScript compiler is not in the bundle (it does not fit
 * a Worker's size limit), so `runtime.preflight()` answers the plan and one `info` note
 * saying plainly that type-checking is unavailable in this runtime — never an error.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startBuiltWorker, type BuiltWorker } from '../support/built-worker.js'

let worker: BuiltWorker
beforeAll(async () => {
  worker = await startBuiltWorker('test/fixtures/edge-preflight/worker.ts')
}, 120_000)
afterAll(() => worker?.dispose())

describe('preflight in the built edge Worker', () => {
  it('returns the plan and says type-checking is unavailable', async () => {
    const response = await worker.mf.dispatchFetch('http://edge.test/', { method: 'POST', body: 'await tools.count_itmes({})\nconst n = "x"\nawait tools[n]()' })
    const report = (await response.json()) as { plan: unknown; diagnostics: { code: string; severity: string; message: string }[] }
    expect(report.plan).toEqual({ calls: [{ name: 'count_itmes', line: 1, column: 7 }], dynamic: true })
    expect(report.diagnostics).toEqual([
      expect.objectContaining({ code: 'CHECK_UNAVAILABLE', severity: 'info', message: expect.stringMatching(/^type-checking is unavailable in this runtime/) }),
    ])
  })

  it('still bounds hostile text before parsing it', async () => {
    const response = await worker.mf.dispatchFetch('http://edge.test/', { method: 'POST', body: `${'('.repeat(300)}1${')'.repeat(300)}` })
    const report = (await response.json()) as { diagnostics: { code: string }[] }
    expect(report.diagnostics.map((d) => d.code)).toEqual(['PROGRAM_BOUND'])
  })
})
