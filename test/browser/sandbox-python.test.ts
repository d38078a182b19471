/**
 * The browser Python sandbox beyond the shared contract: its options, its boundary in a Web
 * Worker, the wasm memory cap under Chromium, and a hot loop ended by terminating the worker.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../platforms/browser/index.js'
import type { CodeBindingNamespace } from '../../src/code-runtime/contract.js'

const runtime = createSandboxRuntime({ language: 'python', computeMs: 2_000, maxWallMs: 20_000, memoryMb: 32 })
afterAll(() => runtime.dispose())

const tools: CodeBindingNamespace = { global: 'tools', functions: { echo: async (args) => args } }
const run = (program: string) => runtime.run({ program, bindings: [tools] })

describe('Python sandbox in Chromium (MicroPython in module Web Workers)', () => {
  it('reports its language and isolation, and runs a program with a tool call', async () => {
    expect(runtime.language).toBe('python')
    expect(runtime.isolation).toBe('micropython-sandbox')
    const result = await run('r = await tools.echo({"n": 2})\nprint("got", r["n"])\nreturn r["n"] * 21')
    expect(result.error).toBeUndefined()
    expect(result.value).toBe(42)
    expect(result.logs.map((entry) => entry.text)).toEqual(['got 2'])
  })

  it('refuses an unknown language and a malformed worker URL with INVALID_OPTIONS', () => {
    expect(() => createSandboxRuntime({ language: 'ruby' as 'python' })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
    expect(() => createSandboxRuntime({ language: 'python', workerUrl: 42 as unknown as string })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
  })

  it.each(['js', 'jsffi', 'sys', 'os', 'io', 'builtins', 'micropython', '_tyhost'])('refuses import %s', async (name) => {
    const result = await run(`import ${name}`)
    expect(result.error?.kind).toBe('exception')
    expect(result.error?.message).toContain('ImportError')
  })

  it('gets no page object through the js proxies asyncio holds', async () => {
    const result = await run(`
import asyncio
js = asyncio.core.js
out = []
for probe in ('self', 'postMessage', 'fetch', 'globalThis', 'Function', 'importScripts', 'proxy_js_ref'):
    out.append(repr(getattr(js, probe, None)))
out.append(repr(js.setTimeout.constructor))
return out`)
    expect(result.error).toBeUndefined()
    for (const text of result.value as string[]) expect(text).toMatch(/^(None|<undefined>|undefined)$/)
  })

  it('holds wasm memory to memoryMb in Chromium: a large allocation raises MemoryError, a small one fits', async () => {
    const bomb = await run('try:\n    x = bytearray(256 * 1024 * 1024)\nexcept MemoryError:\n    return "refused"\nreturn len(x)')
    expect(bomb.error).toBeUndefined()
    expect(bomb.value).toBe('refused')
    const fits = await run('x = bytearray(8 * 1024 * 1024)\nreturn len(x)')
    expect(fits.value).toBe(8 * 1024 * 1024)
  })

  it('ends a hot loop at its compute budget without shared memory, and the next run works', async () => {
    const result = await run('while True:\n    pass')
    expect(result.error?.kind).toBe('timeout')
    expect(result.error?.message).toBe('compute budget of 2000 ms exhausted')
    expect((await run('return 1')).value).toBe(1)
  })

  it('aborts a hot loop by terminating its worker, and the next run works', async () => {
    const slow = createSandboxRuntime({ language: 'python', computeMs: 60_000, maxWallMs: 60_000 })
    try {
      const controller = new AbortController()
      const pending = slow.run({ program: 'while True:\n    pass', bindings: [], signal: controller.signal })
      setTimeout(() => controller.abort(new Error('user stopped it')), 200)
      const result = await pending
      expect(result.error?.kind).toBe('abort')
      expect((await slow.run({ program: 'return 2', bindings: [] })).value).toBe(2)
    } finally {
      await slow.dispose()
    }
  })
})
