import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { afterAll, describe, expect, it, vi } from 'vitest'
import defaultVariant from '@jitl/quickjs-wasmfile-release-sync'
import type { EmscriptenModuleLoader, QuickJSEmscriptenModule, QuickJSSyncVariant } from 'quickjs-emscripten-core'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import type { CodeBindingFunction, CodeBindingNamespace, CodeLogEntry, CodeRuntime } from '../../../src/code-runtime/contract.js'
import { ToolCallError, ToolError } from '../../../src/errors.js'
import { eventually } from '../../support/poll.js'

const require = createRequire(import.meta.url)
const wasmPath = require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')
const wasmModule = new WebAssembly.Module(readFileSync(wasmPath))

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms)
    signal?.addEventListener('abort', () => {
      clearTimeout(timer)
      reject(new Error('aborted'))
    }, { once: true })
  })

/** Waits for a background step to have happened (polling, 10 s at most): no timing margin a loaded machine can break. */
const ns = (functions: Record<string, CodeBindingFunction>, global = 'tools'): CodeBindingNamespace => ({ global, functions })

const runtimes: CodeRuntime[] = []
function make(options: Parameters<typeof createQuickJsRuntime>[0] = {}): CodeRuntime {
  const runtime = createQuickJsRuntime({ wasmModule, ...options })
  runtimes.push(runtime)
  return runtime
}
afterAll(async () => {
  await Promise.all(runtimes.map((r) => r.dispose()))
})

describe('createQuickJsRuntime: descriptors and options', () => {
  it('declares its language, isolation and capabilities', () => {
    const runtime = make()
    expect(runtime.language).toBe('typescript')
    expect(runtime.isolation).toBe('quickjs-wasm')
    expect(runtime.capabilities).toEqual({ confinesAuthority: true, streamsLogs: true, memoryLimit: true, capturesStdio: false, abortsBusyPrograms: false })
  })

  it.each([
    [{ computeMs: 0 }, /computeMs/],
    [{ maxWallMs: -1 }, /maxWallMs/],
    [{ maxLogBytes: 1.5 }, /maxLogBytes/],
    [{ maxValueBytes: '10' }, /maxValueBytes/],
    [{ memoryMb: 8 }, /memoryMb/],
    [{ memoryMb: 4096 }, /memoryMb/],
    [{ wasmModule: 'quickjs.wasm' }, /wasmModule/],
    [{ variant: { type: 'asyncify' } }, /variant/],
    [{ prewarm: 'yes' }, /prewarm/],
    [{ computMs: 10 }, /unknown option "computMs"/],
  ])('rejects %j with INVALID_OPTIONS', (options, pattern) => {
    let caught: unknown
    try {
      createQuickJsRuntime(options as never)
    } catch (error) {
      caught = error
    }
    expect(caught).toBeInstanceOf(ToolError)
    expect((caught as ToolError).code).toBe('INVALID_OPTIONS')
    expect((caught as ToolError).message).toMatch(pattern)
  })

  it('rejects a non-object options value', () => {
    expect(() => createQuickJsRuntime(42 as never)).toThrow(ToolError)
  })
})

describe('createQuickJsRuntime: values and logs', () => {
  const runtime = make()

  it('returns the completion value as a JSON copy, with stats', async () => {
    const result = await runtime.run({ program: 'return { a: 1, b: [true, null, "x"], c: { d: 2.5 } }', bindings: [] })
    expect(result.error).toBeUndefined()
    expect(result.value).toEqual({ a: 1, b: [true, null, 'x'], c: { d: 2.5 } })
    expect(result.stats?.wallMs).toBeGreaterThanOrEqual(0)
    expect(result.stats?.computeMs).toBeGreaterThanOrEqual(0)
  })

  it('runs TypeScript (types stripped) with top-level await and return', async () => {
    const program = 'interface P { x: number }\nconst p: P = { x: await Promise.resolve(20) }\nreturn (p.x as number) + 22'
    expect((await runtime.run({ program, bindings: [] })).value).toBe(42)
  })

  it('omits value for undefined and fails the run on a value JSON cannot carry', async () => {
    const none = await runtime.run({ program: 'const x = 1', bindings: [] })
    expect('value' in none).toBe(false)
    const fn = await runtime.run({ program: 'return function named() {}', bindings: [] })
    expect(fn.error).toEqual({ kind: 'exception', message: expect.stringMatching(/^TypeError: the program's return value cannot be sent back as JSON \(a function is not JSON\)/) })
    const map = await runtime.run({ program: 'return new Map([["k", 1]])', bindings: [] })
    expect(map.error?.message).toMatch(/a Map, Set, RegExp or binary value is not JSON/)
    const nan = await runtime.run({ program: 'return { n: NaN }', bindings: [] })
    expect(nan.error?.message).toMatch(/NaN is not JSON/)
    // JSON semantics: undefined inside an array becomes null.
    const holes = await runtime.run({ program: 'return [undefined, 1]', bindings: [] })
    expect(holes.value).toEqual([null, 1])
  })

  it('captures console levels in order and formats values', async () => {
    const result = await runtime.run({
      program: 'console.log("a", 1, { k: [1, 2] }); console.info("i"); console.warn("w"); console.error("e"); console.debug("d %d", 7)',
      bindings: [],
    })
    expect(result.logs).toEqual([
      { source: 'console', level: 'log', text: 'a 1 { k: [1, 2] }' },
      { source: 'console', level: 'info', text: 'i' },
      { source: 'console', level: 'warn', text: 'w' },
      { source: 'console', level: 'error', text: 'e' },
      { source: 'console', level: 'debug', text: 'd 7' },
    ])
  })

  it('streams log lines through onLog while the program is still running', async () => {
    const seen: CodeLogEntry[] = []
    let seenAtCall = -1
    const result = await runtime.run({
      program: 'console.log("first"); await tools.probe(); console.log("second")',
      bindings: [ns({ probe: async () => { seenAtCall = seen.length } })],
      onLog: (entry) => {
        seen.push(entry)
        throw new Error('a throwing listener is ignored')
      },
    })
    expect(result.error).toBeUndefined()
    expect(seenAtCall).toBe(1)
    expect(seen.map((e) => e.text)).toEqual(['first', 'second'])
  })

  it('caps logs with an in-band truncation mark', async () => {
    const r = make({ maxLogBytes: 100 })
    const result = await r.run({ program: 'for (let i = 0; i < 50; i++) console.log("line " + i + " xxxxxxxx")', bindings: [] })
    expect(result.logs.length).toBeLessThan(10)
    expect(result.logs.at(-1)?.text).toMatch(/\[log truncated: maxLogBytes of 100 bytes reached\]$/)
  })

  it('caps the value with an in-band truncation mark', async () => {
    const r = make({ maxValueBytes: 100 })
    const result = await r.run({ program: 'return "y".repeat(10000)', bindings: [] })
    expect(typeof result.value).toBe('string')
    expect(result.value as string).toMatch(/\[value truncated: larger than maxValueBytes of 100 bytes\]$/)
    expect((result.value as string).length).toBeLessThan(200)
  })

  it('provides timers (setTimeout, clearTimeout, setInterval) backed by the host', async () => {
    const program = `
      const order: string[] = []
      const cancelled = setTimeout(() => order.push('never'), 5)
      clearTimeout(cancelled)
      await new Promise((r) => setTimeout(() => { order.push('timeout'); r(undefined) }, 10))
      let ticks = 0
      await new Promise((r) => { const id = setInterval(() => { if (++ticks === 3) { clearInterval(id); r(undefined) } }, 1) })
      return [order, ticks]`
    expect((await runtime.run({ program, bindings: [] })).value).toEqual([['timeout'], 3])
  })
})

describe('createQuickJsRuntime: failures', () => {
  const runtime = make({ computeMs: 1_000, maxWallMs: 20_000, memoryMb: 32 })

  it('reports an exception with the message and the program line', async () => {
    const result = await runtime.run({ program: 'const a = 1\nconst b = 2\nthrow new Error("boom")', bindings: [] })
    expect(result.error?.kind).toBe('exception')
    expect(result.error?.message).toMatch(/^Error: boom/)
    expect(result.error?.message).toContain('program.ts:3:')
  })

  it('reports syntax errors and non-erasable TypeScript as exceptions before starting a VM', async () => {
    const syntax = await runtime.run({ program: 'return (', bindings: [] })
    expect(syntax.error?.kind).toBe('exception')
    expect(syntax.error?.message).toMatch(/SyntaxError/)
    const enumerated = await runtime.run({ program: 'enum E { A }\nreturn E.A', bindings: [] })
    expect(enumerated.error?.message).toMatch(/enum/)
  })

  it('a program text cannot close the function wrapped around it', async () => {
    const result = await runtime.run({ program: 'return 1 })(); (async () => { return 2', bindings: [] })
    expect(result.error?.kind).toBe('exception')
  })

  it('reports an uncaught error thrown from a timer callback', async () => {
    const result = await runtime.run({ program: 'setTimeout(() => { throw new TypeError("late") }, 1); await new Promise(() => {})', bindings: [] })
    expect(result.error).toEqual({ kind: 'exception', message: expect.stringMatching(/^TypeError: late/) })
  })

  it('ends a hot loop at the compute budget, naming it', async () => {
    const result = await runtime.run({ program: 'while (true) {}', bindings: [] })
    expect(result.error).toEqual({ kind: 'timeout', message: 'compute budget of 1000 ms exhausted' })
    expect(result.stats?.computeMs).toBeGreaterThanOrEqual(1_000)
  })

  it('a try/catch cannot swallow the compute interrupt', async () => {
    const result = await runtime.run({ program: 'for (;;) { try { while (true) {} } catch {} }', bindings: [] })
    expect(result.error?.kind).toBe('timeout')
  })

  it('a hot loop behind an un-awaited slow binding still dies at the compute budget', async () => {
    const r = make({ computeMs: 500, maxWallMs: 60_000 })
    const result = await r.run({
      program: 'tools.slow(); while (true) {}',
      bindings: [ns({ slow: (_a, { signal }) => sleep(30_000, signal) })],
    })
    expect(result.error?.kind).toBe('timeout')
    expect(result.error?.message).toMatch(/compute budget/)
  })

  it('awaiting a slow binding consumes no compute', async () => {
    // The wait (1.2 s) is longer than the budget (1 s): charged, it would end the run; the
    // program's own work is far below the budget, on a loaded machine too.
    const r = make({ computeMs: 1_000, maxWallMs: 30_000 })
    const result = await r.run({ program: 'await tools.slow(); return "done"', bindings: [ns({ slow: () => sleep(1_200) })] })
    expect(result.error).toBeUndefined()
    expect(result.value).toBe('done')
    expect(result.stats!.computeMs).toBeLessThan(1_000)
    expect(result.stats!.wallMs).toBeGreaterThanOrEqual(1_200)
  })

  it('a program awaiting forever dies at the wall ceiling, and the binding is told', async () => {
    // A compute budget above the ceiling: start-up cost on a loaded machine cannot make it fire first.
    const r = make({ computeMs: 5_000, maxWallMs: 1_000 })
    let aborted = false
    const result = await r.run({
      program: 'await tools.forever()',
      bindings: [ns({ forever: (_a, { signal }) => sleep(60_000, signal).catch((e: unknown) => { aborted = signal.aborted; throw e }) })],
    })
    expect(result.error).toEqual({ kind: 'timeout', message: 'wall-clock ceiling of 1000 ms reached' })
    await sleep(10)
    expect(aborted).toBe(true)
  })

  it('contains a memory bomb (string doubling) and the host keeps working', async () => {
    const result = await runtime.run({ program: 'let s = "x"; while (true) { s = s + s; s.charCodeAt(s.length - 1) }', bindings: [] })
    expect(result.error?.kind).toBe('worker-exit')
    expect(result.error?.message).toMatch(/out of memory.*32 MB/)
    const typed = await runtime.run({ program: 'const a = []; while (true) a.push(new Uint8Array(1 << 20))', bindings: [] })
    expect(typed.error?.kind).toBe('worker-exit')
    expect((await runtime.run({ program: 'return 7', bindings: [] })).value).toBe(7)
  })

  it('a program may catch an allocation failure and go on', async () => {
    const result = await runtime.run({ program: 'try { "x".repeat(2 ** 28) } catch (e) { return String(e) }', bindings: [] })
    expect(result.value).toMatch(/out of memory|string too long/)
  })

  it('ends a stack overflow with a clean exception', async () => {
    const result = await runtime.run({ program: 'function r(n: number): number { return r(n + 1) + 1 }\nreturn r(0)', bindings: [] })
    expect(result.error?.kind).toBe('exception')
    expect(result.error?.message).toMatch(/^InternalError: stack overflow/)
    expect((await runtime.run({ program: 'return "alive"', bindings: [] })).value).toBe('alive')
  })

  it('aborts before the run when the signal already fired', async () => {
    const result = await runtime.run({ program: 'return 1', bindings: [], signal: AbortSignal.abort(new Error('no thanks')) })
    expect(result.error).toEqual({ kind: 'abort', message: 'the run was aborted (no thanks)' })
  })

  it('aborts mid-run and aborts the in-flight binding', async () => {
    const controller = new AbortController()
    let bindingSignal: AbortSignal | undefined
    const pending = runtime.run({
      program: 'console.log("before"); await tools.wait()',
      bindings: [ns({ wait: (_a, { signal }) => { bindingSignal = signal; return sleep(60_000, signal) } })],
      signal: controller.signal,
    })
    await sleep(200)
    controller.abort()
    const result = await pending
    expect(result.error?.kind).toBe('abort')
    expect(result.logs.map((l) => l.text)).toEqual(['before'])
    expect(bindingSignal?.aborted).toBe(true)
  })

  it('never rejects on a malformed request', async () => {
    const result = await runtime.run({ program: 42 } as never)
    expect(result.error?.kind).toBe('exception')
    const badGlobal = await runtime.run({ program: 'return 1', bindings: [ns({}, 'console')] })
    expect(badGlobal.error?.message).toMatch(/reserved/)
  })
})

describe('createQuickJsRuntime: bindings', () => {
  const runtime = make({ computeMs: 2_000, maxWallMs: 30_000 })

  it('passes JSON copies of arguments and results', async () => {
    const seen: unknown[] = []
    const result = await runtime.run({
      program: 'const r = await tools.echo({ a: [1, { b: "c" }], u: undefined }); const n = await tools.echo(); return [r, n]',
      bindings: [ns({ echo: async (args) => { seen.push(args); return args === undefined ? 'none' : { got: args } } })],
    })
    expect(result.error).toBeUndefined()
    expect(seen).toEqual([{ a: [1, { b: 'c' }] }, undefined])
    expect(result.value).toEqual([{ got: { a: [1, { b: 'c' }] } }, 'none'])
  })

  it('rejects arguments that are not JSON inside the program', async () => {
    const result = await runtime.run({
      program: 'try { await tools.echo({ n: 1n }) } catch (e) { return [e.name, String(e.message)] }',
      bindings: [ns({ echo: async (a) => a })],
    })
    expect(result.value).toEqual(['TypeError', expect.stringMatching(/cannot be sent to the host/)])
  })

  it('a binding result that is not JSON rejects that call', async () => {
    const result = await runtime.run({
      program: 'try { await tools.big() } catch (e) { return e.message }',
      bindings: [ns({ big: async () => 10n })],
    })
    expect(result.value).toMatch(/cannot be sent to the program/)
  })

  it('runs slow bindings concurrently under Promise.all', async () => {
    const events: string[] = []
    const slow = (name: string) => async () => {
      events.push(`enter ${name}`)
      await sleep(300)
      events.push(`exit ${name}`)
      return name
    }
    const result = await runtime.run({
      program: 'return await Promise.all([tools.a(), tools.b(), tools.c()])',
      bindings: [ns({ a: slow('a'), b: slow('b'), c: slow('c') })],
    })
    expect(result.value).toEqual(['a', 'b', 'c'])
    expect(events.slice(0, 3)).toEqual(['enter a', 'enter b', 'enter c'])
  })

  it('a ToolCallError from the host is a ToolCallError in the program; other errors are plain Errors', async () => {
    const result = await runtime.run({
      program: `
        const out = []
        try { await tools.fail() } catch (e) { out.push([e instanceof ToolCallError, e instanceof Error, e.name, e.toolName, e.message]) }
        try { await tools.crash() } catch (e) { out.push([e instanceof ToolCallError, e instanceof Error, e.name, typeof e.toolName, e.message]) }
        return out`,
      bindings: [ns({
        fail: async () => { throw new ToolCallError('fail', 'the tool said no') },
        crash: async () => { throw new Error('plain failure') },
      })],
    })
    expect(result.value).toEqual([
      [true, true, 'ToolCallError', 'fail', 'the tool said no'],
      [false, true, 'Error', 'undefined', 'plain failure'],
    ])
  })

  it('binding names may be any string, __proto__, constructor and toString included', async () => {
    const calls: string[] = []
    const fn = (name: string): CodeBindingFunction => async () => { calls.push(name); return name }
    const result = await runtime.run({
      program: `return [
        Object.keys(tools).sort(),
        await tools['__proto__'](), await tools.constructor(), await tools.toString(), await tools['my tool-1'](),
        Object.getPrototypeOf(tools) === null,
      ]`,
      bindings: [ns({ ['__proto__']: fn('__proto__'), constructor: fn('constructor'), toString: fn('toString'), 'my tool-1': fn('my tool-1') })],
    })
    expect(result.error).toBeUndefined()
    expect(result.value).toEqual([
      ['__proto__', 'constructor', 'my tool-1', 'toString'],
      '__proto__', 'constructor', 'toString', 'my tool-1',
      true,
    ])
    expect(calls).toEqual(['__proto__', 'constructor', 'toString', 'my tool-1'])
  })

  it('exposes several namespaces, each under its global', async () => {
    const result = await runtime.run({
      program: 'return [await tools.a(), await db.q({ sql: "x" })]',
      bindings: [ns({ a: async () => 1 }), ns({ q: async (args) => (args as { sql: string }).sql }, 'db')],
    })
    expect(result.value).toEqual([1, 'x'])
  })

  it('1,000 sequential binding calls complete', async () => {
    let count = 0
    const result = await runtime.run({
      program: 'let s = 0; for (let i = 0; i < 1000; i++) s += await tools.inc({ i }); return s',
      bindings: [ns({ inc: async () => ++count && 1 })],
    })
    expect(result.value).toBe(1000)
    expect(count).toBe(1000)
  })
})

describe('createQuickJsRuntime: containment', () => {
  const runtime = make()

  it('offers no host powers to the program', async () => {
    const result = await runtime.run({
      program: 'return [typeof process, typeof require, typeof fetch, typeof WebAssembly, typeof post, typeof timer, typeof __toolyardSandbox, typeof Worker]',
      bindings: [],
    })
    expect(result.value).toEqual(Array(8).fill('undefined'))
  })

  it('isolates runs: global and prototype mutations do not leak into the next run', async () => {
    await runtime.run({ program: 'globalThis.leak = 1; Array.prototype.evil = 2; Object.prototype.polluted = 3; console.log = () => {}', bindings: [] })
    const result = await runtime.run({ program: 'console.log("ok"); return [typeof leak, typeof [].evil, typeof ({}).polluted]', bindings: [] })
    expect(result.value).toEqual(['undefined', 'undefined', 'undefined'])
    expect(result.logs.map((l) => l.text)).toEqual(['ok'])
  })

  it('runs concurrent programs in separate VMs', async () => {
    const results = await Promise.all(
      [1, 2, 3].map((n) => runtime.run({ program: `globalThis.n = ${n}; await tools.tick(); return globalThis.n`, bindings: [ns({ tick: () => sleep(50) })] })),
    )
    expect(results.map((r) => r.value)).toEqual([1, 2, 3])
  })
})

describe('createQuickJsRuntime: wasm loading', () => {
  it('works with the variant loading its own wasm (no wasmModule)', async () => {
    const r = createQuickJsRuntime()
    try {
      expect((await r.run({ program: 'return 1 + 1', bindings: [] })).value).toBe(2)
    } finally {
      await r.dispose()
    }
  })

  it('calls a wasmModule loader once and reports a bad loader as worker-exit', async () => {
    let loads = 0
    const good = make({ wasmModule: async () => { loads++; return wasmModule } })
    await good.run({ program: 'return 1', bindings: [] })
    await good.run({ program: 'return 2', bindings: [] })
    expect(loads).toBe(1)
    const bad = make({ wasmModule: async () => 'not a module' as never })
    const result = await bad.run({ program: 'return 1', bindings: [] })
    expect(result.error?.kind).toBe('worker-exit')
    expect(result.error?.message).toMatch(/could not be created/)
  })
})

describe('createQuickJsRuntime: dispose', () => {
  it('aborts in-flight runs and resolves once their bindings settled; later runs are refused', async () => {
    const r = createQuickJsRuntime({ wasmModule })
    let bindingDone = false
    let bindingStarted = false
    const pending = r.run({
      program: 'await tools.wait()',
      bindings: [ns({ wait: async (_a, { signal }) => {
        bindingStarted = true
        try {
          await sleep(60_000, signal)
        } finally {
          await sleep(50)
          bindingDone = true
        }
      } })],
    })
    await eventually(() => expect(bindingStarted).toBe(true))
    await r.dispose()
    expect(bindingDone).toBe(true)
    const result = await pending
    expect(result.error).toEqual({ kind: 'abort', message: 'the runtime was disposed' })
    const after = await r.run({ program: 'return 1', bindings: [] })
    expect(after.error?.kind).toBe('abort')
    await r.dispose()
  })
})

/**
 * The default variant, counting the wasm instances (sandboxes) built from it; while
 * `hold(promise)` is in force, each build waits for that promise before instantiating.
 */
function countingVariant(): { readonly variant: QuickJSSyncVariant; builds: () => number; hold: (gate: Promise<void> | undefined) => void } {
  let builds = 0
  let held: Promise<void> | undefined
  // The package's CJS typings make the default import its namespace under NodeNext.
  const base = defaultVariant as unknown as QuickJSSyncVariant
  const variant: QuickJSSyncVariant = {
    type: 'sync',
    importFFI: () => base.importFFI(),
    importModuleLoader: async () => {
      const imported = (await base.importModuleLoader()) as unknown
      const loader = (typeof imported === 'function' ? imported : (imported as { default: unknown }).default) as EmscriptenModuleLoader<QuickJSEmscriptenModule>
      return async (options) => {
        builds++
        if (held !== undefined) await held
        return loader(options)
      }
    },
  }
  return { variant, builds: () => builds, hold: (gate) => {
    held = gate
  } }
}

describe('createQuickJsRuntime: prewarm (the next run\'s sandbox built in the background)', () => {
  it('builds the next sandbox after a run, and the run that takes it sees nothing of the previous one', async () => {
    const { variant, builds } = countingVariant()
    const r = make({ variant })
    const first = await r.run({ program: 'globalThis.leak = 1; Object.prototype.polluted = 2; Array.prototype.evil = 3; console.log = () => {}; return 1', bindings: [] })
    expect(first.value).toBe(1)
    expect(builds()).toBe(1)
    await eventually(() => expect(builds()).toBe(2))
    const second = await r.run({ program: 'console.log("ok"); return [typeof leak, typeof ({}).polluted, typeof [].evil, typeof setTimeout, typeof tools.echo]', bindings: [ns({ echo: async (a) => a })] })
    // The prebuilt sandbox served this run: no build on its path.
    expect(builds()).toBe(2)
    expect(second.value).toEqual(['undefined', 'undefined', 'undefined', 'function', 'function'])
    expect(second.logs.map((l) => l.text)).toEqual(['ok'])
    await eventually(() => expect(builds()).toBe(3))
  })

  it('a prebuilt sandbox has its own budgets: a hot loop still dies at the compute budget, the next run is fine', async () => {
    const r = make({ computeMs: 1_000 })
    await r.run({ program: 'return 0', bindings: [] })
    await sleep(200)
    const spin = await r.run({ program: 'while (true) {}', bindings: [] })
    expect(spin.error?.kind).toBe('timeout')
    expect(spin.error?.message).toMatch(/computeMs|compute budget/)
    await sleep(200)
    expect((await r.run({ program: 'return 2', bindings: [] })).value).toBe(2)
  })

  it('prewarm: false builds one sandbox per run, on demand', async () => {
    const { variant, builds } = countingVariant()
    const r = make({ variant, prewarm: false })
    await r.run({ program: 'return 1', bindings: [] })
    await sleep(200)
    expect(builds()).toBe(1)
    await r.run({ program: 'return 1', bindings: [] })
    expect(builds()).toBe(2)
  })

  it('a run that does not create a sandbox (a bad wasm loader) schedules no background build', async () => {
    let loads = 0
    const r = make({ wasmModule: async () => {
      loads++
      throw new Error('no wasm here')
    } })
    const result = await r.run({ program: 'return 1', bindings: [] })
    expect(result.error?.kind).toBe('worker-exit')
    expect(result.error?.message).toMatch(/could not be created: no wasm here/)
    await sleep(100)
    // The failed loader is retried by the next run, not in the background.
    expect(loads).toBe(1)
    expect((await r.run({ program: 'return 1', bindings: [] })).error?.kind).toBe('worker-exit')
    expect(loads).toBe(2)
  })

  it('dispose() cancels a scheduled build and frees a built one; nothing is built afterwards', async () => {
    const scheduled = countingVariant()
    const a = createQuickJsRuntime({ wasmModule, variant: scheduled.variant })
    await a.run({ program: 'return 1', bindings: [] })
    await a.dispose()
    await sleep(100)
    expect(scheduled.builds()).toBe(1)

    const built = countingVariant()
    const b = createQuickJsRuntime({ wasmModule, variant: built.variant })
    await b.run({ program: 'return 1', bindings: [] })
    await eventually(() => expect(built.builds()).toBe(2))
    await b.dispose()
    expect((await b.run({ program: 'return 1', bindings: [] })).error).toEqual({ kind: 'abort', message: 'the runtime was disposed' })
    await sleep(100)
    expect(built.builds()).toBe(2)
  })

  it('warm() builds on request (even with prewarm: false), once, and the next run takes it', async () => {
    const { variant, builds } = countingVariant()
    const r = createQuickJsRuntime({ wasmModule, variant, prewarm: false })
    await Promise.all([r.warm(), r.prewarm()])
    expect(builds()).toBe(1)
    // One is ready: nothing more to build.
    await r.warm()
    expect(builds()).toBe(1)
    expect((await r.run({ program: 'return typeof globalThis.tools', bindings: [] })).value).toBe('undefined')
    expect(builds()).toBe(1)
    await r.dispose()
    await r.warm()
    expect(builds()).toBe(1)
  })

  it('prewarm() never rejects; a failed build is retried and reported by the next run', async () => {
    const r = createQuickJsRuntime({ wasmModule: async () => {
      throw new Error('no wasm here')
    } })
    runtimes.push(r)
    await expect(r.prewarm()).resolves.toBeUndefined()
    const result = await r.run({ program: 'return 1', bindings: [] })
    expect(result.error).toEqual({ kind: 'worker-exit', message: 'the QuickJS sandbox could not be created: no wasm here' })
  })

  it('a run that arrives while the background build is under way joins it instead of building another', async () => {
    const { variant, builds, hold } = countingVariant()
    const r = make({ variant })
    await r.run({ program: 'return 1', bindings: [] })
    let release: () => void = () => undefined
    hold(new Promise<void>((resolve) => {
      release = resolve
    }))
    // The background build starts and waits on the gate.
    await eventually(() => expect(builds()).toBe(2))
    const pending = r.run({ program: 'return typeof leak', bindings: [] })
    await sleep(50)
    expect(builds()).toBe(2)
    hold(undefined)
    release()
    expect((await pending).value).toBe('undefined')
    expect(builds()).toBe(2)
  })

  it('concurrent runs each get their own sandbox, prebuilt or not', async () => {
    const { variant, builds } = countingVariant()
    const r = make({ variant })
    await r.run({ program: 'return 0', bindings: [] })
    await eventually(() => expect(builds()).toBe(2))
    let open: () => void = () => undefined
    const gate = new Promise<void>((resolve) => {
      open = resolve
    })
    let arrived = 0
    const pending = Promise.all([1, 2, 3].map((n) => r.run({
      program: `globalThis.n = ${n}; await tools.tick(); return globalThis.n`,
      bindings: [ns({ tick: async () => {
        arrived++
        await gate
      } })],
    })))
    while (arrived < 3) await sleep(5)
    // All three are inside their programs: one took the prebuilt sandbox, two built their own.
    expect(builds()).toBe(4)
    open()
    expect((await pending).map((x) => x.value)).toEqual([1, 2, 3])
  })
})
