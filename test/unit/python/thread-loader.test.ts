/**
 * The MicroPython loader the Node and browser threads use is the patched one of toolyard/python:
 * a collected PyProxy is freed in the interpreter that made it. A thread builds each run's
 * interpreter while the last one's proxies may still await collection; the published loader freed
 * them in whichever interpreter had loaded last (`globalThis.Module`): the new run's.
 */
import { readFileSync } from 'node:fs'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import { loadMicroPython } from '../../../platforms/python/_micropython-bounded.mjs'
import { until } from '../../support/poll.js'

const root = new URL('../../../', import.meta.url)

describe('the Python threads’ MicroPython loader', () => {
  it('is the patched loader, in the Node thread bundle and the browser worker', () => {
    const loader = /from ["']\.\.\/python\/_micropython-bounded\.mjs["']/
    expect(readFileSync(new URL('platforms/node/_python-thread.mjs', root), 'utf8')).toMatch(loader)
    expect(readFileSync(new URL('platforms/browser/python-worker-entry.ts', root), 'utf8')).toMatch(loader)
  })

  it('frees a collected PyProxy in the interpreter that made it, not in the one loaded after it', async () => {
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as () => void
    // Each load's registry (one per load, in order), observed: how many of its proxies were collected.
    const collected: number[] = []
    const Registry = globalThis.FinalizationRegistry
    globalThis.FinalizationRegistry = class extends Registry<number> {
      constructor(cleanup: (held: number) => void) {
        const index = collected.push(0) - 1
        super((held) => {
          collected[index]!++
          cleanup(held)
        })
      }
    } as typeof FinalizationRegistry
    const module = new WebAssembly.Module(readFileSync(new URL('platforms/python/_micropython-bounded.wasm', root)))
    const load = () =>
      loadMicroPython({
        heapsize: 1024 * 1024,
        linebuffer: false,
        stdout: () => undefined,
        stderr: () => undefined,
        instantiateWasm: (imports, done) => {
          ;(imports.env as Record<string, unknown>).toolyard_budget_check = () => undefined
          const instance = new WebAssembly.Instance(module, imports)
          done(instance, module)
          return {}
        },
      })
    const frees = { first: 0, second: 0 }
    const countFrees = (mp: unknown, which: keyof typeof frees) => {
      const emscripten = (mp as { _module: { ccall: (name: string, ...rest: unknown[]) => unknown } })._module
      const ccall = emscripten.ccall
      emscripten.ccall = (name, ...rest) => {
        if (name === 'proxy_c_free_obj') frees[which]++
        return ccall(name, ...rest)
      }
    }
    try {
      // The first interpreter and a proxy of its, held until the second has loaded, then dropped (as a thread does between runs).
      let first: Awaited<ReturnType<typeof load>> | undefined = await load()
      first.runPython('def f():\n    return 1')
      let f: unknown = first.globals.get('f')
      // Held, as a cleanup already queued holds it: a registry that is itself collected runs no cleanup.
      const firstRegistry: unknown = (globalThis as { pyProxyFinalizationRegistry?: unknown }).pyProxyFinalizationRegistry
      countFrees(first, 'first')
      const second = await load()
      countFrees(second, 'second')
      gc()
      await new Promise((resolve) => setTimeout(resolve, 0))
      // From here on, what the first registry collects was the first interpreter's, collected after the second loaded.
      const before = [...collected]
      frees.first = 0
      frees.second = 0
      first = undefined
      f = undefined
      // The first registry's cleanups run on a later turn after a collection: collect until one came.
      await until(() => (gc(), collected[0] !== before[0]), "a collection of the first interpreter's proxy", 20_000, 0).catch(() => undefined)
      expect(f).toBeUndefined()
      expect(firstRegistry).toBeDefined()
      expect(collected[0]! - before[0]!).toBeGreaterThan(0)
      expect(frees).toEqual({ first: collected[0]! - before[0]!, second: collected[1]! - before[1]! })
      second.runPython('x = 1')
    } finally {
      globalThis.FinalizationRegistry = Registry
    }
  })
})
