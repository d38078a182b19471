import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

/**
 * The QuickJS runtime bundles for workerd and runs there under real rules: the fixture
 * worker is bundled the way an edge build does (platform neutral, workerd conditions,
 * the wasm left as a module import) and served by Miniflare, whose workerd refuses
 * `eval`/`new Function` and wasm compilation from bytes (unlike the vitest pool).
 */
const require = createRequire(import.meta.url)
const root = fileURLToPath(new URL('../../..', import.meta.url))

describe('QuickJS runtime in workerd (Miniflare, built bundle)', () => {
  let dir: string
  let mf: Miniflare | undefined

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'toolyard-quickjs-worker-'))
    await build({
      absWorkingDir: root,
      entryPoints: ['test/fixtures/quickjs-worker/worker.ts'],
      outfile: join(dir, 'worker.js'),
      bundle: true,
      format: 'esm',
      platform: 'neutral',
      conditions: ['workerd', 'worker', 'browser'],
      mainFields: ['module', 'main'],
      external: ['*.wasm'],
      target: 'es2022',
      logLevel: 'error',
    })
    copyFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm'), join(dir, 'quickjs.wasm'))
    mf = new Miniflare({
      modules: true,
      scriptPath: join(dir, 'worker.js'),
      modulesRoot: dir,
      modulesRules: [{ type: 'CompiledWasm', include: ['**/*.wasm'] }],
      compatibilityDate: '2025-09-01',
      compatibilityFlags: ['nodejs_compat'],
    })
    await mf.ready
  }, 120_000)

  afterAll(async () => {
    await mf?.dispose()
    rmSync(dir, { recursive: true, force: true })
  })

  async function get(program?: string): Promise<{ result: Record<string, unknown>; evalAllowed: boolean; hasWorker: boolean }> {
    const url = new URL('http://localhost/')
    if (program !== undefined) url.searchParams.set('program', program)
    const response = await mf!.dispatchFetch(url)
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
