/**
 * What a hostile Python program can send the host, class by class: each is held to the
 * TypeScript sandbox's bounds and messages (test/unit/hostile/hostile-programs.test.ts,
 * test/unit/node-runtime/session-hostile.test.ts), in a real MicroPython thread.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/sandbox-runtime.js'
import type { CodeBindingNamespace } from '../../../src/code-runtime/contract.js'
import { MAX_INFLIGHT_CALLS } from '../../../src/code-runtime/host-session.js'
import { MAX_CALL_ARG_NODES } from '../../../src/code-runtime/limits.js'
import { MAX_ERROR_TEXT } from '../../../src/code-runtime/wire.js'

const MAX_LOG_BYTES = 4_096
const runtime = createSandboxRuntime({ language: 'python', computeMs: 10_000, maxWallMs: 60_000, maxLogBytes: MAX_LOG_BYTES })
afterAll(() => runtime.dispose())

let echoed = 0
let slowStarted = 0
const tools: CodeBindingNamespace = {
  global: 'tools',
  functions: {
    echo: async (args) => {
      echoed++
      return args
    },
    slow: (_args, options) => {
      slowStarted++
      return new Promise((resolve) => options.signal.addEventListener('abort', () => resolve('aborted'), { once: true }))
    },
  },
}
const run = (program: string) => runtime.run({ program, bindings: [tools] })
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
const logBytes = (logs: readonly { text: string }[]) => logs.reduce((sum, entry) => sum + new TextEncoder().encode(entry.text).length + 1, 0)

describe('Python sandbox: what a hostile program sends the host', () => {
  it('cuts one huge print line to the log cap and the run goes on', async () => {
    const result = await run('print("x" * 3_000_000)\nprint("after")\nreturn 1')
    expect(result.error).toBeUndefined()
    expect(result.value).toBe(1)
    expect(logBytes(result.logs)).toBeLessThan(2 * MAX_LOG_BYTES)
  })

  it('cuts a huge write to the stderr asyncio holds the same way', async () => {
    const result = await run('import asyncio\nasyncio.core.sys.stderr.write("y" * 3_000_000)\nreturn 1')
    expect(result.error).toBeUndefined()
    expect(result.value).toBe(1)
    expect(logBytes(result.logs)).toBeLessThan(2 * MAX_LOG_BYTES)
  })

  it('bounds the line count: each line costs a byte', async () => {
    const result = await run('for i in range(200_000):\n    print()\nreturn 1')
    expect(result.value).toBe(1)
    expect(result.logs.length).toBeLessThanOrEqual(MAX_LOG_BYTES + 1)
  })

  it('refuses call arguments beyond 8 MiB inside the program, as the TypeScript sandbox does', async () => {
    echoed = 0
    const result = await run('try:\n    await tools.echo({"s": "x" * 9_000_000})\nexcept ValueError as e:\n    return str(e)\nreturn "sent"')
    expect(result.error).toBeUndefined()
    expect(result.value).toMatch(/tools\.echo: the arguments take more than 8 MiB of JSON; at most 8 MiB go to the host in one call/)
    expect(echoed).toBe(0)
    // The run goes on: the next call works.
    expect((await run('return await tools.echo({"ok": 1})')).value).toEqual({ ok: 1 })
  })

  it(`refuses call arguments of more than ${MAX_CALL_ARG_NODES} JSON values inside the program`, async () => {
    echoed = 0
    const result = await run(`try:\n    await tools.echo([0] * ${MAX_CALL_ARG_NODES + 10})\nexcept ValueError as e:\n    return str(e)\nreturn "sent"`)
    expect(result.value).toMatch(new RegExp(`tools\\.echo: they hold more than ${MAX_CALL_ARG_NODES} JSON values`))
    expect(echoed).toBe(0)
    const keys = await run(`try:\n    await tools.echo([{"k": 0}] * ${Math.ceil(MAX_CALL_ARG_NODES / 3) + 10})\nexcept ValueError as e:\n    return str(e)\nreturn "sent"`)
    expect(keys.value).toMatch(/more than 100000 JSON values \(object keys count\)/)
    expect(echoed).toBe(0)
  })

  it('holds the same bounds in the thread for a program that posts its own call text', async () => {
    echoed = 0
    const post = (args: string) => `post = tools.echo.__globals__['_post']\nreturn post('{"type":"call","id":99,"global":"tools","name":"echo","args":' + ${args} + '}')`
    const many = await run(post(`'[' + '0,' * ${MAX_CALL_ARG_NODES + 10} + '0]'`))
    expect(many.value).toMatch(/more than 100000 JSON values/)
    const deep = await run(post(`'[' * 150 + ']' * 150`))
    expect(deep.value).toMatch(/nest deeper than 100 levels/)
    // Deeper than any recursive JSON walk goes (JSON.stringify of it overflows the stack): refused by the bound, the run goes on.
    const abyss = await run(post(`'[' * 3_000_000 + ']' * 3_000_000`) + "\nreturn 1")
    expect(abyss.error).toBeUndefined()
    expect(abyss.value).toMatch(/nest deeper than 100 levels/)
    const huge = await run(post(`'"' + 'x' * 9_000_000 + '"'`))
    expect(huge.error?.message ?? huge.value).toMatch(/9 MiB/)
    expect(echoed).toBe(0)
  })

  it('refuses arguments nested deeper than 100 levels, and bytes, before they leave the program', async () => {
    echoed = 0
    const deep = await run('v = 0\nfor i in range(150):\n    v = [v]\ntry:\n    await tools.echo(v)\nexcept ValueError as e:\n    return str(e)')
    expect(deep.value).toMatch(/nests deeper than 100 levels/)
    for (const literal of ['b"x"', 'bytearray(3)', '{1}', '2**64', 'float("inf")', 'memoryview(b"x")']) {
      const result = await run(`try:\n    await tools.echo({"v": ${literal}})\nexcept (TypeError, ValueError) as e:\n    return type(e).__name__`)
      expect(result.value, literal).toMatch(/^(TypeError|ValueError)$/)
    }
    expect(echoed).toBe(0)
  })

  it('ends a flood of un-awaited calls at the in-flight bound (or the heap cap), not by growing the host', async () => {
    slowStarted = 0
    // Its own 2 s compute budget: MicroPython spends ~1 ms of compute a call, so the budget is the
    // bound it meets first; under the file's 10 s budget the case took 10 s, now and then 30+ s.
    const flooded = createSandboxRuntime({ language: 'python', computeMs: 2_000, maxWallMs: 60_000 })
    const result = await flooded.run({ program: 'for i in range(200_000):\n    asyncio.create_task(tools.slow())\nawait asyncio.Event().wait()', bindings: [tools] }).finally(() => flooded.dispose())
    expect(result.error?.message).toMatch(new RegExp(`more than ${MAX_INFLIGHT_CALLS} binding calls in flight at once|out of memory|MemoryError|compute budget`))
    expect(slowStarted).toBeLessThanOrEqual(MAX_INFLIGHT_CALLS)
  })

  it('cuts a ten-million-character exception message inside the sandbox and the run settles', async () => {
    const result = await run('raise ValueError("m" * 10_000_000)')
    expect(result.error?.kind).toBe('exception')
    expect(result.error?.message).toMatch(/ValueError: m{100}/)
    expect(result.error!.message.length).toBeLessThan(3 * MAX_ERROR_TEXT)
    const named = await run('class E(Exception):\n    pass\nE.__name__ = "N" * 100_000\nraise E("x")')
    expect(named.error?.kind).toBe('exception')
    expect(named.error!.message.length).toBeLessThan(3 * MAX_ERROR_TEXT)
  })

  it('settles an exception whose __str__ raises or whose message is not a str', async () => {
    for (const program of ['class E(Exception):\n    def __str__(self):\n        raise ValueError("no")\nraise E()', 'raise ValueError(b"\\xff" * 10)']) {
      const result = await run(program)
      expect(result.error?.kind, program).toBe('exception')
    }
  })

  it('returns a huge value as a marked, truncated rendering', async () => {
    const result = await run('return [1] * 1_000_000')
    expect(typeof result.value).toBe('string')
    expect(result.value).toMatch(/^\[1, 1, 1/)
    expect(result.value).toMatch(/\[value truncated: larger than maxValueBytes of 32768 bytes\]$/)
  })

  it('keeps output and values well-formed UTF-16 whatever the program writes', async () => {
    const result = await run('print("a\\ud800b")\nreturn ["\\udfff", "é", "\\U0001f600"]')
    expect(result.error).toBeUndefined()
    for (const entry of result.logs) expect(entry.text).not.toMatch(LONE_SURROGATE)
    const value = result.value as string[]
    for (const text of value) expect(text).not.toMatch(LONE_SURROGATE)
    expect(value.slice(1)).toEqual(['é', '😀'])
  })

  it('drops calls a task makes after the run ended', async () => {
    echoed = 0
    const result = await run('async def later():\n    await asyncio.sleep(0)\n    await tools.echo(1)\n    await asyncio.sleep(0.01)\n    await tools.echo(2)\nasyncio.create_task(later())\nreturn "done"')
    expect(result.value).toBe('done')
    // Later runs on the pool (the next one may take the same thread) see no call from it.
    for (let i = 0; i < 3; i++) expect((await run('await asyncio.sleep(0.02)\nreturn 1')).value).toBe(1)
    expect(echoed).toBeLessThanOrEqual(1)
  })
})
