import { build } from 'esbuild'
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

/**
 * toolyard/python bundles for workerd and runs there under real rules: the fixture worker is
 * bundled platform-neutral with the workerd conditions, the metered wasm beside it as a
 * CompiledWasm module, and served by Miniflare. Every unbounded computation must end at the
 * compute budget there too (nothing can terminate an isolate's run).
 */
const root = fileURLToPath(new URL('../../..', import.meta.url))

describe('toolyard/python in workerd (Miniflare, built bundle)', () => {
  let mf: Miniflare | undefined
  let dir = ''

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'toolyard-python-worker-'))
    await build({
      absWorkingDir: root,
      entryPoints: ['test/fixtures/python-worker/worker.ts'],
      outfile: join(dir, 'worker.js'),
      bundle: true,
      format: 'esm',
      platform: 'neutral',
      conditions: ['workerd', 'worker', 'browser'],
      mainFields: ['module', 'main'],
      target: 'es2022',
      logLevel: 'error',
      external: ['./micropython.wasm'],
      plugins: [{ name: 'python-wasm', setup: (b) => b.onResolve({ filter: /_micropython-bounded\.wasm$/ }, () => ({ path: './micropython.wasm', external: true })) }],
    })
    copyFileSync(join(root, 'platforms/python/_micropython-bounded.wasm'), join(dir, 'micropython.wasm'))
    mf = new Miniflare({
      // Listed: the bundle imports the wasm as ./micropython.wasm, the one module beside it.
      modules: [
        { type: 'ESModule', path: join(dir, 'worker.js') },
        { type: 'CompiledWasm', path: join(dir, 'micropython.wasm') },
      ],
      modulesRoot: dir,
      compatibilityDate: '2026-04-20',
    })
    await mf.ready
  }, 120_000)

  afterAll(async () => {
    await mf?.dispose()
    rmSync(dir, { recursive: true, force: true })
  })

  async function get(program?: string, heap?: 'small'): Promise<{ result: Record<string, unknown>; ms: number; language: string; isolation: string }> {
    const url = new URL('http://localhost/')
    if (program !== undefined) url.searchParams.set('program', program)
    if (heap !== undefined) url.searchParams.set('heap', heap)
    const response = await mf!.dispatchFetch(url)
    expect(response.status).toBe(200)
    return (await response.json()) as never
  }

  it('runs a program with a binding and print', async () => {
    const body = await get()
    expect(body.language).toBe('python')
    expect(body.isolation).toBe('micropython-wasm')
    expect(body.result.error).toBeUndefined()
    expect(body.result.value).toEqual({ echoed: { sum: 2 } })
    expect(body.result.logs).toEqual([{ source: 'console', level: 'log', text: 'sum 2' }])
  })

  it.each([
    ['while True: pass', 'while True: pass'],
    ['a loop that catches BaseException', 'while True:\n    try:\n        while True: pass\n    except BaseException:\n        pass'],
    ['recursion that catches its RecursionError', 'def f(n):\n    try:\n        return f(n + 1)\n    except BaseException:\n        return f(n + 1)\nwhile True:\n    f(0)'],
  ])('ends %s at the compute budget, and serves the next request', async (_name, program) => {
    const body = await get(program)
    expect(body.result.error).toEqual({ kind: 'timeout', message: 'compute budget of 1000 ms exhausted' })
    const next = await get('return 40 + 2')
    expect(next.result.value).toBe(42)
  })

  it('ends a long C loop that allocates nothing (max over small ints) at the compute budget', async () => {
    const body = await get('m = max(range(10**9))')
    expect(body.result.error).toEqual({ kind: 'timeout', message: 'compute budget of 1000 ms exhausted' })
    expect((await get('return 40 + 2')).result.value).toBe(42)
  })

  // This MicroPython port collects garbage only when the interpreter returns to the host: a long
  // computation that allocates (a bigint per step in sum, a list, a string) fills the heap and
  // raises MemoryError, unless its budget ends it first. Either way the error can be read, even
  // when the heap is too full to format it, and the isolate serves the next request.
  it.each([
    ['sum(range(10**9))', 's = sum(range(10**9))'],
    ['list(range(10**8))', 'l = list(range(10**8))'],
    ['sorted(range(10**7))', 'x = sorted(range(10**7))'],
    ['"ab" * 10**8', 's = "ab" * (10**8)'],
    ['a loop catching the MemoryError of sum', 'while True:\n    try:\n        s = sum(range(10**9))\n    except MemoryError:\n        pass'],
  ])('%s ends as a timeout or a MemoryError that can be read, and serves the next request', async (_name, program) => {
    const body = await get(program)
    const error = body.result.error as { kind: string; message: string }
    if (error.kind === 'timeout') expect(error.message).toBe('compute budget of 1000 ms exhausted')
    else expect(error).toMatchObject({ kind: 'exception', message: expect.stringMatching(/^MemoryError: memory allocation failed/) })
    expect((await get('return 40 + 2')).result.value).toBe(42)
  })

  it.each([
    ['sum(range(10**9))', 's = sum(range(10**9))'],
    ['nested lists', 'x = 0\nwhile True:\n    x = [x]'],
  ])('%s filling a 16 MB heap well within its budget ends as a MemoryError that can be read', async (_name, program) => {
    const body = await get(program, 'small')
    expect(body.result.error).toMatchObject({ kind: 'exception', message: expect.stringMatching(/^MemoryError: memory allocation failed/) })
    expect((await get('return 40 + 2', 'small')).result.value).toBe(42)
  })
})
