/**
 * The sub-call's fast path (issue 20 item 6): a QuickJS sandbox's binding call is
 * serialized by its own sender (no generic envelope; the in-VM depth walk only for
 * arguments that hold containers), the VM reaches its host functions
 * and takes its deliveries directly (`engine/quickjs/host-calls.ts`), and the host session
 * releases a call's accounts in the call's own task. Each refusal and account must stay
 * what it was.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { afterAll, describe, expect, it } from 'vitest'
import defaultVariant from '@jitl/quickjs-wasmfile-release-sync'
import { newQuickJSWASMModuleFromVariant } from 'quickjs-emscripten-core'
import type { QuickJSContext, QuickJSRuntime, QuickJSSyncVariant } from 'quickjs-emscripten-core'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import type { CodeBindingFunction, CodeRuntime } from '../../../src/code-runtime/contract.js'
import { CodeRunSession, prepareRun } from '../../../src/code-runtime/host-session.js'
import { DEFAULT_CODE_RUN_LIMITS } from '../../../src/code-runtime/limits.js'
import type { WireListener } from '../../../src/code-runtime/wire.js'
import { directDeliver, directHostCalls } from '../../../engine/quickjs/host-calls.js'

const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))

const runtimes: CodeRuntime[] = []
afterAll(async () => {
  await Promise.all(runtimes.map((runtime) => runtime.dispose()))
})

const kinds: ReadonlyArray<readonly [string, () => CodeRuntime]> = [
  ['QuickJS inline', () => createQuickJsRuntime({ wasmModule })],
  ['the sandbox (QuickJS in threads)', () => createSandboxRuntime({ prespawn: 1, maxConcurrentRuns: 1 })],
]

describe.each(kinds)('%s: what a binding call refuses', (_name, make) => {
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

  it('arguments too deep for QuickJS own JSON recursion are refused with the depth message, like 101 levels', async () => {
    const value = await run(
      `${nest}const out = []\nfor (const n of [101, 100_000]) { try { await tools.echo(nest(n)) } catch (e) { out.push([e instanceof TypeError, e.message]) } }\nreturn out`,
    )
    const refusal = [true, 'tools.echo: the arguments cannot be sent to the host (they nest deeper than 100 levels; flatten them)']
    expect(value).toEqual([refusal, refusal])
    expect(received).toEqual([])
  })

  it('what JSON cannot carry is refused naming why; a cycle is a cycle, not a depth', async () => {
    const value = await run(
      'const out = []\nconst cyclic = { a: 1 }\ncyclic.self = cyclic\n' +
        'for (const bad of [{ f: () => 1 }, { n: NaN }, cyclic, { m: new Map() }]) { try { await tools.echo(bad) } catch (e) { out.push(e.message) } }\nreturn out',
    )
    expect(value).toHaveLength(4)
    const [fn, nan, cycle, map] = value as string[]
    expect(fn).toBe('tools.echo: the arguments cannot be sent to the host (a function is not JSON)')
    expect(nan).toBe('tools.echo: the arguments cannot be sent to the host (NaN is not JSON)')
    expect(cycle).toMatch(/^tools\.echo: the arguments cannot be sent to the host \(.*circular/i)
    expect(map).toBe('tools.echo: the arguments cannot be sent to the host (a Map, Set, RegExp or binary value is not JSON)')
    expect(received).toEqual([])
  })

  it('ids stay in order across refused calls: every accepted call is answered, in order', async () => {
    const value = await run(
      `${nest}const out = []\nfor (let i = 0; i < 20; i++) { try { out.push(await tools.echo(i % 3 === 0 ? nest(200) : { i })) } catch { out.push('refused') } }\nreturn out`,
    )
    expect(value).toEqual(Array.from({ length: 20 }, (_, i) => (i % 3 === 0 ? 'refused' : 'ok')))
    expect(received).toEqual(Array.from({ length: 20 }, (_, i) => i).filter((i) => i % 3 !== 0).map((i) => ({ i })))
  })
})

describe.each(kinds)('%s: a reply that does not fit in a full VM', (_name, make) => {
  it('ends the run as a crash of its VM, naming the out-of-memory, instead of writing the reply at address 0', async () => {
    const runtime = make === kinds[0]![1] ? createQuickJsRuntime({ wasmModule, memoryMb: 16, computeMs: 30_000 }) : createSandboxRuntime({ prespawn: 1, maxConcurrentRuns: 1, memoryMb: 16, computeMs: 30_000 })
    runtimes.push(runtime)
    const big = 'x'.repeat(3_500_000)
    // The program fills its QuickJS heap (to its limit, a few MiB under the wasm memory), keeps it, then asks for a reply larger than what is left.
    const result = await runtime.run({
      program: 'const keep = []\ntry { for (;;) keep.push(new Array(1024).fill(1.5)) } catch {}\nconst reply = await tools.big({})\nreturn [keep.length, reply.length]',
      bindings: [{ global: 'tools', functions: { big: async () => big } }],
    })
    expect(result.error?.kind).toBe('worker-exit')
    expect(result.error?.message).toMatch(/out of memory/)
    // The runtime goes on: the next run gets a fresh VM.
    expect((await runtime.run({ program: 'return 1', bindings: [] })).value).toBe(1)
  }, 120_000)
})

describe('host session: a call releases its accounts in its own task', () => {
  function scripted(functions: Record<string, CodeBindingFunction>) {
    let listener: WireListener | undefined
    const posted: Record<string, unknown>[] = []
    const prepared = prepareRun({ program: 'src', bindings: [{ global: 'tools', functions }] })
    if (!prepared.ok) throw new Error(prepared.message)
    const session = new CodeRunSession(prepared.run, 'src', DEFAULT_CODE_RUN_LIMITS, {
      endpoint: {
        postMessage: (message) => void posted.push(message as Record<string, unknown>),
        addEventListener: (_type, l) => {
          listener = l
        },
        removeEventListener: () => {
          listener = undefined
        },
      },
      terminate: () => undefined,
    })
    session.start()
    const send = (data: unknown) => listener?.({ data })
    return { session, posted, send }
  }
  const call = (id: number, name: string, args: unknown = { a: 'x'.repeat(100) }) => ({ type: 'call', id, global: 'tools', name, args })

  it('a binding that throws synchronously is answered and holds nothing afterwards', async () => {
    const { session, posted, send } = scripted({
      sync: () => {
        throw new Error('at once')
      },
    })
    send(call(1, 'sync'))
    expect(session.pendingCalls()).toEqual({ calls: 0, argBytes: 0 })
    expect(posted.at(-1)).toEqual({ type: 'reply', id: 1, ok: false, message: 'at once' })
    await session.bindingsSettled()
    session.fail('abort', 'done')
  })

  it('calls in flight are counted until they settle, then release their bytes; bindingsSettled waits for them', async () => {
    const gates: Array<() => void> = []
    const { session, posted, send } = scripted({ wait: () => new Promise<string>((resolve) => gates.push(() => resolve('late'))) })
    send(call(1, 'wait'))
    send(call(2, 'wait'))
    const held = session.pendingCalls()
    expect(held.calls).toBe(2)
    expect(held.argBytes).toBeGreaterThan(200)
    let settled = false
    const all = session.bindingsSettled().then(() => {
      settled = true
    })
    gates.shift()!()
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect(session.pendingCalls().calls).toBe(1)
    expect(settled).toBe(false)
    gates.shift()!()
    await all
    expect(session.pendingCalls()).toEqual({ calls: 0, argBytes: 0 })
    expect(posted.filter((m) => m.type === 'reply').map((m) => m.id)).toEqual([1, 2])
    session.fail('abort', 'done')
  })
})

describe('directHostCalls', () => {
  const variant = defaultVariant as unknown as QuickJSSyncVariant
  const vm = async (): Promise<{ runtime: QuickJSRuntime; context: QuickJSContext }> => {
    const quickjs = await newQuickJSWASMModuleFromVariant(variant)
    const runtime = quickjs.newRuntime()
    return { runtime, context: runtime.newContext() }
  }

  it('host functions answer, return nothing, or throw into the VM as they did through the library', async () => {
    const { runtime, context } = await vm()
    expect(directHostCalls(runtime, context)).toBe(true)
    const seen: string[] = []
    const twice = context.newFunction('twice', (n) => context.newNumber(context.getNumber(n) * 2))
    const note = context.newFunction('note', function (this: unknown, text) {
      seen.push(context.getString(text))
    })
    const fail = context.newFunction('fail', () => {
      throw new RangeError('refused here')
    })
    const yes = context.newFunction('yes', () => context.true)
    for (const [name, fn] of [['twice', twice], ['note', note], ['fail', fail], ['yes', yes]] as const) context.setProp(context.global, name, fn)
    const result = context.evalCode(
      "note('hello'); let caught; try { fail() } catch (e) { caught = [e.name, e.message] }\nJSON.stringify([twice(21), note('x'), caught, yes()])",
    )
    const value = context.unwrapResult(result)
    expect(JSON.parse(context.getString(value))).toEqual([42, null, ['RangeError', 'refused here'], true])
    expect(seen).toEqual(['hello', 'x'])
    value.dispose()
    for (const fn of [twice, note, fail, yes]) fn.dispose()
    context.dispose()
    runtime.dispose()
  })

  it('directDeliver calls a VM function with one string, as callFunction(fn, undefined, newString(text)) does', async () => {
    const { runtime, context } = await vm()
    const deliver = directDeliver(context)
    expect(deliver).toBeDefined()
    const fn = context.unwrapResult(
      context.evalCode("globalThis.got = []; (text) => { if (text === 'boom') throw new TypeError('no ' + text); got.push([typeof text, text]) }"),
    )
    const long = 'é€😀'.repeat(50_000)
    expect(deliver!(fn, '{"type":"reply","id":1}')).toBeUndefined()
    expect(deliver!(fn, long)).toBeUndefined()
    const error = deliver!(fn, 'boom')
    expect(error).toBeDefined()
    expect(context.dump(error!)).toMatchObject({ name: 'TypeError', message: 'no boom' })
    error!.dispose()
    const got = context.unwrapResult(context.evalCode('JSON.stringify(got)'))
    expect(JSON.parse(context.getString(got))).toEqual([['string', '{"type":"reply","id":1}'], ['string', long]])
    got.dispose()
    fn.dispose()
    context.dispose()
    runtime.dispose()
  })

  it('leaves a context whose internals it does not know to the library', async () => {
    const { runtime, context } = await vm()
    expect(directHostCalls(runtime, {} as QuickJSContext)).toBe(false)
    expect(directHostCalls(runtime, Object.assign(Object.create(context) as QuickJSContext, { ffi: {} }))).toBe(false)
    expect(directDeliver({} as QuickJSContext)).toBeUndefined()
    context.dispose()
    runtime.dispose()
  })
})
