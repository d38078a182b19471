/**
 * toolyard/python shares its host's realm (nothing is hardened there, unlike a thread's): every
 * JS function an interpreter holds is cut from `Function.prototype`, so no probe from Python
 * reaches the host's `Function` (code generation in the host) or any other host object.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createPythonRuntime } from '../../../platforms/python/index.js'

const runtime = createPythonRuntime({ computeMs: 5_000, maxWallMs: 20_000, memoryMb: 32 })
afterAll(() => runtime.dispose())

const PROBES = [
  'js.setTimeout.constructor',
  'js.setTimeout.__proto__',
  'js.setTimeout.call.constructor',
  'js.setTimeout.call.call',
  'js.setTimeout.apply',
  'js.setTimeout.bind',
  'js.clearTimeout.constructor',
  'js.process',
  'js.globalThis',
  'js.Function',
  'js.Module',
  'js.proxy_js_ref',
]

describe('toolyard/python: the boundary in a shared realm', () => {
  it.each(PROBES)('%s reaches nothing of the host', async (probe) => {
    const result = await runtime.run({
      program: `import asyncio\njs = asyncio.core.js\ntry:\n    return repr(${probe})\nexcept AttributeError:\n    return 'refused'`,
      bindings: [],
    })
    expect(result.error).toBeUndefined()
    expect(result.value).toMatch(/^(refused|None|<undefined>|undefined)$/)
  })

  it('keeps the host realm as it was: no intrinsic frozen, no WebAssembly hook installed', async () => {
    const instantiate = WebAssembly.instantiate
    const grow = WebAssembly.Memory.prototype.grow
    const result = await runtime.run({ program: 'import time\nreturn time.time() > 0', bindings: [] })
    expect(result.value).toBe(true)
    expect(WebAssembly.instantiate).toBe(instantiate)
    expect(WebAssembly.Memory.prototype.grow).toBe(grow)
    expect(Object.isFrozen(Function.prototype)).toBe(false)
    expect(typeof (function () {}).constructor).toBe('function')
  })

  it('runs interpreters side by side in one realm (each entry swaps in its own loader globals)', async () => {
    const values = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        runtime.run({ program: `import asyncio\ns = 0\nfor k in range(3):\n    await asyncio.sleep(0.01)\n    s += ${i}\nreturn s`, bindings: [] }),
      ),
    )
    expect(values.map((r) => r.error ?? r.value)).toEqual([0, 3, 6, 9])
  })
})
