/**
 * The sandbox thread's side of a sub-call (issue 34 item 4): what each lever that took work off
 * it must keep. The promise-job pump (`directJobs`, engine/quickjs/host-calls.ts) runs the
 * queue as the library's `executePendingJobs()` does, its failures included. A binding call's
 * arguments are walked once, by `JSON.stringify`: the in-VM depth walk runs only for a call that
 * could not be sent (the host checks the text's depth), and a too-deep value still reads as such.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { afterAll, describe, expect, it } from 'vitest'
import defaultVariant from '@jitl/quickjs-wasmfile-release-sync'
import { newQuickJSWASMModuleFromVariant } from 'quickjs-emscripten-core'
import type { QuickJSContext, QuickJSRuntime, QuickJSSyncVariant } from 'quickjs-emscripten-core'
import { directJobs } from '../../../engine/quickjs/host-calls.js'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import type { CodeRuntime } from '../../../src/code-runtime/contract.js'

const wasmModule = new WebAssembly.Module(readFileSync(createRequire(import.meta.url).resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))
const runtimes: CodeRuntime[] = []
afterAll(async () => {
  await Promise.all(runtimes.map((runtime) => runtime.dispose()))
})

const vm = async (): Promise<{ runtime: QuickJSRuntime; context: QuickJSContext }> => {
  const quickjs = await newQuickJSWASMModuleFromVariant(defaultVariant as unknown as QuickJSSyncVariant)
  const runtime = quickjs.newRuntime()
  return { runtime, context: runtime.newContext() }
}

const read = (context: QuickJSContext, code: string): unknown => {
  const handle = context.unwrapResult(context.evalCode(code))
  const value = context.dump(handle)
  handle.dispose()
  return value
}

describe('directJobs: the promise-job pump without the library wrappers', () => {
  it('runs the queue to exhaustion (jobs queued by jobs too), and an empty queue is a no-op', async () => {
    const { runtime, context } = await vm()
    const jobs = directJobs(runtime, context)
    expect(jobs).toBeDefined()
    expect(jobs!()).toBeUndefined()
    read(context, "globalThis.seen = []; Promise.resolve(1).then((v) => { seen.push(v); return v + 1 }).then((v) => seen.push(v)); (async () => { await null; await null; seen.push('async') })(); 0")
    expect(runtime.hasPendingJob()).toBe(true)
    expect(jobs!()).toBeUndefined()
    expect(runtime.hasPendingJob()).toBe(false)
    expect(read(context, 'seen')).toEqual([1, 2, 'async'])
    for (let i = 0; i < 2_000; i++) {
      read(context, 'Promise.resolve().then(() => 0); 0')
      expect(jobs!()).toBeUndefined()
    }
    context.dispose()
    runtime.dispose()
  })

  it.each([
    ['chains and awaits', "Promise.resolve(1).then((v) => { log.push(v); return v + 1 }).then((v) => log.push(v)); (async () => { await null; log.push('a'); await null; log.push('b') })()"],
    ['a throwing reaction', "Promise.resolve().then(() => { throw new TypeError('inside') }).catch((e) => log.push(e.message))"],
    ['an interrupted job', "Promise.resolve().then(() => { for (;;) {} }).catch((e) => log.push(e.message)); Promise.resolve().then(() => log.push('next'))"],
  ])('leaves the VM as the library does: %s', async (_name, code) => {
    const outcome = async (direct: boolean) => {
      const { runtime, context } = await vm()
      let stop = false
      runtime.setInterruptHandler(() => stop)
      read(context, `globalThis.log = []; ${code}; 0`)
      stop = code.includes('for (;;) {}')
      let failed: unknown
      if (direct) {
        const error = directJobs(runtime, context)!()
        if (error !== undefined) {
          failed = context.dump(error)
          error.dispose()
        }
      } else {
        const result = runtime.executePendingJobs()
        if (result.error !== undefined) {
          failed = context.dump(result.error)
          result.error.dispose()
        }
      }
      stop = false
      const state = { failed, pending: runtime.hasPendingJob(), log: read(context, 'log') }
      context.dispose()
      runtime.dispose()
      return state
    }
    const library = await outcome(false)
    expect(await outcome(true)).toEqual(library)
    expect((library.log as unknown[]).length).toBeGreaterThan(0)
  })

  it('leaves a context whose internals it does not know to the library', async () => {
    const { runtime, context } = await vm()
    expect(directJobs(runtime, {} as QuickJSContext)).toBeUndefined()
    expect(directJobs({} as QuickJSRuntime, context)).toBeUndefined()
    context.dispose()
    runtime.dispose()
  })
})

describe.each([
  ['QuickJS inline', () => createQuickJsRuntime({ wasmModule })],
  ['the sandbox (QuickJS in threads)', () => createSandboxRuntime({ prespawn: 1, maxConcurrentRuns: 1 })],
] as const)('%s: a binding call walks its arguments once', (_name, make) => {
  const runtime = make()
  runtimes.push(runtime)
  const received: unknown[] = []
  const bindings = [{ global: 'tools', functions: { echo: async (args: unknown) => (received.push(args), 'ok') } }]
  const run = async (program: string) => {
    received.length = 0
    const result = await runtime.run({ program, bindings })
    if (result.error !== undefined) throw new Error(`${result.error.kind}: ${result.error.message}`)
    return result.value
  }
  const nest = 'const nest = (n) => { let v = 1; for (let i = 0; i < n; i++) v = [v]; return v }\n'
  const refusal = 'tools.echo: the arguments cannot be sent to the host (they nest deeper than 100 levels; flatten them)'

  it('a sent call lists its containers\' keys once each (JSON.stringify), not again for a depth walk', async () => {
    const value = await run(
      "const listed = []\nconst spy = (name, target) => new Proxy(target, { ownKeys: (t) => (listed.push(name), Reflect.ownKeys(t)) })\n" +
        "const args = spy('args', { a: spy('a', { b: [1, 2] }), c: 'x' })\nawait tools.echo(args)\nreturn listed",
    )
    expect(value).toEqual(['args', 'a'])
    expect(received).toEqual([{ a: { b: [1, 2] }, c: 'x' }])
  })

  it('a value too deep still reads as such, whatever else stops it first (a function, a cycle, a throwing toJSON); 100 levels pass', async () => {
    const value = await run(
      `${nest}const cyclic = { a: 1 }\ncyclic.self = cyclic\nconst out = []\n` +
        "for (const bad of [[nest(101), () => 1], [nest(150), cyclic], [nest(100_000), 'x'.repeat(1024)], { deep: nest(101), n: NaN }]) { try { await tools.echo(bad) } catch (e) { out.push(e.message) } }\n" +
        "try { await tools.echo([{ toJSON() { throw new Error('mine') } }, nest(120)]) } catch (e) { out.push(e.message) }\n" +
        "try { await tools.echo([() => 1, nest(99)]) } catch (e) { out.push(e.message) }\nout.push(await tools.echo(nest(100)))\nreturn out",
    )
    expect(value).toEqual([refusal, refusal, refusal, refusal, refusal, 'tools.echo: the arguments cannot be sent to the host (a function is not JSON)', 'ok'])
    expect(received).toHaveLength(1)
    expect(JSON.stringify(received[0])).toBe(`${'['.repeat(100)}1${']'.repeat(100)}`)
  })

  it('a call made while the arguments serialize (a getter\'s) does not reset the depth of the call around it', async () => {
    const value = await run(
      "const chain = (n) => { let v = 1; for (let i = 0; i < n; i++) { const inner = v; v = { get x() { void tools.echo({ from: 'getter', y: [[1]] }).catch(() => 0); return inner } } } return v }\n" +
        'const out = []\nfor (const n of [150, 5_000]) { try { await tools.echo(chain(n)) } catch (e) { out.push(e.message) } }\nreturn out',
    )
    expect(value).toEqual([refusal, refusal])
    expect(received.every((args) => JSON.stringify(args) === '{"from":"getter","y":[[1]]}')).toBe(true)
  })

  it('a setter or getter a program puts on Array.prototype\'s indices does not reset the depth (inline, 5,000 levels overflowed the host\'s stack)', async () => {
    const value = await run(
      "for (const i of ['7', '50', '99']) Object.defineProperty(Array.prototype, i, { set(v) {}, get() { return undefined }, configurable: true })\n" +
        "const out = []\nfor (const n of [150, 5_000, 100_000]) { let v = 1; for (let i = 0; i < n; i++) v = { a: v }; try { await tools.echo(v) } catch (e) { out.push(e.message) } }\n" +
        "out.push(await tools.echo({ a: { b: [1, [2]] } }))\nreturn out",
    )
    expect(value).toEqual([refusal, refusal, refusal, 'ok'])
    expect(received).toEqual([{ a: { b: [1, [2]] } }])
  })

  it('a shallow value is sent as its JSON, deep or not beyond it (toJSON), and calls after refusals go on in order', async () => {
    const value = await run(
      `${nest}const out = []\nout.push(await tools.echo({ toJSON: () => ({ flat: true }), hidden: nest(300) }))\n` +
        "for (let i = 0; i < 6; i++) { try { out.push(await tools.echo(i % 2 === 0 ? nest(101) : { i })) } catch (e) { out.push(e.message === " +
        JSON.stringify(refusal) +
        " ? 'refused' : e.message) } }\nreturn out",
    )
    expect(value).toEqual(['ok', 'refused', 'ok', 'refused', 'ok', 'refused', 'ok'])
    expect(received).toEqual([{ flat: true }, { i: 1 }, { i: 3 }, { i: 5 }])
  })
})
