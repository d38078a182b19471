/**
 * The metered MicroPython (scripts/build-micropython-bounded.mjs) and the inline runtime's
 * budget: the committed wasm is what the script rebuilds from the pinned package, and every
 * kind of unbounded computation is stopped within its compute budget, by the clock and, where
 * the clock stands still (workerd), by steps.
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { createPythonRuntime, STEPS_PER_MS } from '../../../platforms/python/index.js'
// @ts-expect-error: a plain .mjs script without typings
import { buildBounded, meterWasm, STEPS_PER_CHECK, CHECK_IMPORT } from '../../../scripts/build-micropython-bounded.mjs'
import { STEPS_PER_CHECK as RUNTIME_STEPS_PER_CHECK } from '../../../engine/python/thread-runs.js'

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')
const root = new URL('../../../', import.meta.url)

describe('scripts/build-micropython-bounded.mjs', () => {
  it('rebuilds the committed wasm and loader byte for byte from the pinned package', () => {
    const outputs = buildBounded() as Record<string, Uint8Array>
    expect(Object.keys(outputs).sort()).toEqual(['platforms/python/_micropython-bounded.mjs', 'platforms/python/_micropython-bounded.wasm'])
    for (const [file, bytes] of Object.entries(outputs)) {
      expect(sha256(bytes), file).toBe(sha256(readFileSync(new URL(file, root))))
    }
  })

  it('adds exactly one import, the check, and keeps every export', () => {
    const original = readFileSync(new URL('node_modules/@micropython/micropython-webassembly-pyscript/micropython.wasm', root))
    const before = new WebAssembly.Module(original)
    const after = new WebAssembly.Module(readFileSync(new URL('platforms/python/_micropython-bounded.wasm', root)))
    const added = WebAssembly.Module.imports(after).filter((i) => !WebAssembly.Module.imports(before).some((j) => j.module === i.module && j.name === i.name))
    expect(added).toEqual([{ module: 'env', name: CHECK_IMPORT, kind: 'function' }])
    expect(WebAssembly.Module.exports(after)).toEqual(WebAssembly.Module.exports(before))
    expect(STEPS_PER_CHECK).toBe(RUNTIME_STEPS_PER_CHECK)
  })

  it('refuses a module it metered already, and anything that is not wasm 1', () => {
    expect(() => meterWasm(readFileSync(new URL('platforms/python/_micropython-bounded.wasm', root)))).toThrow(/already metered/)
    expect(() => meterWasm(new Uint8Array([0, 0x61, 0x73, 0x6d, 2, 0, 0, 0]))).toThrow(/version 1/)
  })
})

describe('toolyard/python stops unbounded computation inline', () => {
  const runtime = createPythonRuntime({ computeMs: 300, maxWallMs: 20_000, memoryMb: 32 })
  afterAll(() => runtime.dispose())

  // Each stopped at its compute budget (a timeout naming it); the margin is for a loaded machine, not a speed check.
  it.each([
    ['while True: pass', 'while True: pass'],
    ['a loop that catches BaseException', 'while True:\n    try:\n        while True: pass\n    except BaseException:\n        pass'],
    ['recursion that catches its RecursionError', 'def f(n):\n    try:\n        return f(n + 1)\n    except BaseException:\n        return f(n + 1)\nwhile True:\n    f(0)'],
    // A C loop that allocates nothing: sum's bigints or sorted's list fill the heap (MemoryError) before the budget on a fast machine.
    ['a long C loop (max)', 'm = max(range(10**9))\nreturn 0'],
  ])('%s', async (_name, program) => {
    const result = await runtime.run({ program, bindings: [] })
    expect(result.error?.kind).toBe('timeout')
    expect(result.error?.message).toMatch(/compute budget of 300 ms/)
    expect(result.stats?.computeMs ?? 0).toBeLessThan(300 * 4)
    // The runtime goes on: the next run gets a fresh interpreter.
    const after = await runtime.run({ program: 'return 1 + 1', bindings: [] })
    expect(after.value).toBe(2)
  })

  describe('with the clock standing still (as workerd freezes it during synchronous code)', () => {
    const now = performance.now.bind(performance)
    afterEach(() => {
      performance.now = now
    })

    it('counts steps: a hot loop ends at computeMs × STEPS_PER_MS steps', async () => {
      const frozen = createPythonRuntime({ computeMs: 100, maxWallMs: 60_000, memoryMb: 32 })
      try {
        await frozen.warm()
        let checks = 0
        let stop = 0
        // Frozen from the start of the run's first entry: only steps can end it.
        performance.now = () => {
          checks++
          return stop === 0 ? (stop = now()) : stop
        }
        const result = await frozen.run({ program: 'while True: pass', bindings: [] })
        expect(result.error?.kind).toBe('timeout')
        expect(result.error?.message).toMatch(/compute budget of 100 ms/)
        expect(checks).toBeGreaterThanOrEqual((100 * STEPS_PER_MS) / RUNTIME_STEPS_PER_CHECK)
      } finally {
        performance.now = now
        await frozen.dispose()
      }
    })
  })
})
