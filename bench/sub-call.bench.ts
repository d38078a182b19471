/**
 * Where a sub-call's time goes (issue 20 item 6): one `await tools.inc({ i })` from a
 * program in the default sandbox (QuickJS in a thread), hop by hop, beside a bare
 * pre-spawned worker in the same process (the transport floor: two `postMessage`s and
 * two thread wake-ups, no VM, no validation, no accounts).
 *
 * Rows, each the median of interleaved rounds (this machine is shared; figures move):
 * - the whole round trip: the sandbox and the bare worker (wall and process CPU µs per
 *   call, 1 000 sequential calls net of a cold `return 1`), and QuickJS on the host
 *   thread (the same VM and host session with no thread hop);
 * - the transport alone: a string echoed by a bare worker;
 * - the host session alone: a call message through `JsonWireEndpoint.receive`, the
 *   session's checks and dispatch and the reply's serialization, with no VM;
 * - the engine's two crossings, through quickjs-emscripten's own wrappers and through
 *   `engine/quickjs/host-calls.ts`: the VM calling its `post` host function, the host
 *   calling the VM's `deliver` with the reply's text.
 *
 * Run: `npx tsx bench/sub-call.bench.ts` (`BENCH_ROUNDS=n`, default 9).
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import defaultVariant from '@jitl/quickjs-wasmfile-release-sync'
import { newQuickJSWASMModuleFromVariant } from 'quickjs-emscripten-core'
import type { QuickJSContext, QuickJSSyncVariant } from 'quickjs-emscripten-core'
import type { CodeBindingNamespace, CodeRuntime } from '../src/code-runtime/contract.js'
import { CodeRunSession, prepareRun } from '../src/code-runtime/host-session.js'
import { JsonWireEndpoint } from '../src/code-runtime/json-endpoint.js'
import { DEFAULT_CODE_RUN_LIMITS } from '../src/code-runtime/limits.js'
import { createSandboxRuntime } from '../platforms/node/index.js'
import { createQuickJsRuntime } from '../platforms/quickjs/index.js'
import { directDeliver, directHostCalls } from '../engine/quickjs/host-calls.js'
import { printTable, summarize } from './_stats.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9)
const CALLS = 1_000
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
const bindings: CodeBindingNamespace[] = [{ global: 'tools', functions: { inc: async (args) => (args as { i: number }).i + 1 } }]
const program = `let s = 0\nfor (let i = 0; i < ${CALLS}; i++) s = await tools.inc({ i })\nreturn s`

/** Something that runs a program with bindings (the bare worker runs it as an AsyncFunction). */
interface Contender {
  run(program: string, bindings: readonly CodeBindingNamespace[]): Promise<unknown>
}

function fromRuntime(runtime: CodeRuntime): Contender {
  return {
    async run(code, given) {
      const result = await runtime.run({ program: code, bindings: given })
      if (result.error !== undefined) throw new Error(`${result.error.kind}: ${result.error.message}`)
      return result.value
    },
  }
}

/** The floor: a pre-spawned worker, the program an AsyncFunction, every call a postMessage each way. */
function bareWorker(): Contender & { worker: Worker } {
  const worker = new Worker(
    `const { parentPort } = require('node:worker_threads')
    const AsyncFunction = (async () => {}).constructor
    const pending = new Map()
    let next = 1
    const tools = new Proxy({}, { get: (_, name) => (args) => new Promise((resolve) => { const id = next++; pending.set(id, resolve); parentPort.postMessage({ type: 'call', id, name, args }) }) })
    parentPort.on('message', async (m) => {
      if (typeof m === 'string') { parentPort.postMessage(m); return }
      if (m.type === 'reply') { pending.get(m.id)(m.value); pending.delete(m.id); return }
      parentPort.postMessage({ type: 'done', value: await new AsyncFunction('tools', m.program)(tools) })
    })`,
    { eval: true },
  )
  let functions: CodeBindingNamespace['functions'] = {}
  let settle: ((value: unknown) => void) | undefined
  const signal = new AbortController().signal
  worker.on('message', async (m: { type?: string; id: number; name: string; args: unknown; value: unknown }) => {
    if (m.type === 'done') settle?.(m.value)
    else if (m.type === 'call') worker.postMessage({ type: 'reply', id: m.id, value: await functions[m.name]!(m.args, { signal }) })
  })
  return {
    worker,
    run(code, given) {
      functions = given[0]?.functions ?? {}
      return new Promise((resolve) => {
        settle = resolve
        worker.postMessage({ type: 'run', program: code })
      })
    },
  }
}

/** Wall and process-CPU µs per sub-call: the loop's run minus a cold `return 1` just before it. */
async function perCall(contender: Contender): Promise<{ wall: number; cpu: number }> {
  const cpu0 = process.cpuUsage()
  const cold0 = performance.now()
  await contender.run('return 1', [])
  const coldMs = performance.now() - cold0
  const coldCpu = process.cpuUsage(cpu0)
  await sleep(20)
  const cpu1 = process.cpuUsage()
  const start = performance.now()
  const value = await contender.run(program, bindings)
  const ms = performance.now() - start
  const cpu = process.cpuUsage(cpu1)
  if (value !== CALLS) throw new Error(`returned ${JSON.stringify(value)}`)
  const cpuUs = cpu.user + cpu.system - coldCpu.user - coldCpu.system
  return { wall: (Math.max(0, ms - coldMs) * 1000) / CALLS, cpu: Math.max(0, cpuUs) / CALLS }
}

/** µs per string echoed by the bare worker, one at a time. */
async function echo(worker: Worker): Promise<number> {
  const text = '{"type":"call","id":12,"global":"tools","name":"inc","args":{"i":11}}'
  const start = performance.now()
  for (let i = 0; i < CALLS; i++) {
    await new Promise<void>((resolve) => {
      worker.once('message', () => resolve())
      worker.postMessage(text)
    })
  }
  return ((performance.now() - start) * 1000) / CALLS
}

/** µs per call message through the host side alone: endpoint parse and weigh, session checks and dispatch, reply serialized. */
async function hostSide(): Promise<number> {
  const prepared = prepareRun({ program: '', bindings })
  if (!prepared.ok) throw new Error(prepared.message)
  let replies = 0
  let woke: (() => void) | undefined
  const endpoint = new JsonWireEndpoint(
    () => {
      replies++
      woke?.()
    },
    () => undefined,
    64,
  )
  const session = new CodeRunSession(prepared.run, '', DEFAULT_CODE_RUN_LIMITS, { endpoint, terminate: () => undefined })
  session.start()
  replies = 0
  const start = performance.now()
  for (let i = 1; i <= CALLS; i++) {
    const answered = new Promise<void>((resolve) => {
      woke = resolve
    })
    endpoint.receive(`{"type":"call","id":${i},"global":"tools","name":"inc","args":{"i":${i}}}`)
    await answered
  }
  const us = ((performance.now() - start) * 1000) / CALLS
  session.fail('abort', 'done')
  if (replies !== CALLS) throw new Error(`${replies} replies`)
  return us
}

/** µs per VM → host `post` call and per host → VM delivery, through the library and directly. */
async function engineCrossings(): Promise<Record<string, number>> {
  const quickjs = await newQuickJSWASMModuleFromVariant(defaultVariant as unknown as QuickJSSyncVariant)
  const one = (direct: boolean): { context: QuickJSContext; loop: () => number; deliver: () => number } => {
    const runtime = quickjs.newRuntime()
    const context = runtime.newContext()
    const post = context.newFunction('post', (json) => {
      if (context.typeof(json) === 'string') context.getString(json)
    })
    context.setProp(context.global, 'post', post)
    post.dispose()
    if (direct) directHostCalls(runtime, context)
    const loop = context.unwrapResult(context.evalCode(`(n) => { for (let i = 0; i < n; i++) post('{"type":"call","id":1,"global":"tools","name":"inc","args":{"i":1}}') }`))
    const sink = context.unwrapResult(context.evalCode('(text) => text.length'))
    const fast = direct ? directDeliver(context) : undefined
    const reply = '{"type":"reply","id":123,"ok":true,"value":124}'
    return {
      context,
      loop: () => {
        const n = context.newNumber(CALLS * 10)
        const start = performance.now()
        context.unwrapResult(context.callFunction(loop, context.undefined, n)).dispose()
        n.dispose()
        return ((performance.now() - start) * 1000) / (CALLS * 10)
      },
      deliver: () => {
        const start = performance.now()
        for (let i = 0; i < CALLS * 10; i++) {
          if (fast !== undefined) fast(sink, reply)
          else {
            const arg = context.newString(reply)
            context.unwrapResult(context.callFunction(sink, context.undefined, arg)).dispose()
            arg.dispose()
          }
        }
        return ((performance.now() - start) * 1000) / (CALLS * 10)
      },
    }
  }
  const library = one(false)
  const direct = one(true)
  const samples: Record<string, number[]> = { libraryPost: [], directPost: [], libraryDeliver: [], directDeliver: [] }
  for (let round = 0; round < ROUNDS; round++) {
    samples.libraryPost!.push(library.loop())
    samples.directPost!.push(direct.loop())
    samples.libraryDeliver!.push(library.deliver())
    samples.directDeliver!.push(direct.deliver())
  }
  return Object.fromEntries(Object.entries(samples).map(([key, values]) => [key, summarize(values).median]))
}

async function main(): Promise<void> {
  console.log(`sub-call bench (Node ${process.version}; ${ROUNDS} interleaved rounds, medians; figures move with machine load)`)
  const require = createRequire(import.meta.url)
  const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))
  const sandbox = createSandboxRuntime()
  await sandbox.warm()
  const inline = createQuickJsRuntime({ wasmModule })
  const bare = bareWorker()
  const contenders = { sandbox: fromRuntime(sandbox), bare, inline: fromRuntime(inline) }
  for (const contender of Object.values(contenders)) for (let i = 0; i < 6; i++) await perCall(contender)
  const rounds: Record<string, Array<{ wall: number; cpu: number }>> = { sandbox: [], bare: [], inline: [] }
  const echoes: number[] = []
  const host: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, contender] of Object.entries(contenders)) rounds[name]!.push(await perCall(contender))
    echoes.push(await echo(bare.worker))
    host.push(await hostSide())
  }
  const med = (name: string, key: 'wall' | 'cpu') => summarize(rounds[name]!.map((r) => r[key])).median
  const floor = med('bare', 'wall')
  printTable(
    [
      { 'per sub-call': 'bare worker + postMessage (floor)', 'wall µs': med('bare', 'wall'), 'CPU µs': med('bare', 'cpu'), '× floor': 1 },
      { 'per sub-call': 'toolyard sandbox (QuickJS in a thread)', 'wall µs': med('sandbox', 'wall'), 'CPU µs': med('sandbox', 'cpu'), '× floor': med('sandbox', 'wall') / floor },
      { 'per sub-call': 'QuickJS on the host thread (no hop)', 'wall µs': med('inline', 'wall'), 'CPU µs': med('inline', 'cpu'), '× floor': med('inline', 'wall') / floor },
    ],
    'round trip (target: the sandbox ≤ 1.6 × floor)',
  )
  const engine = await engineCrossings()
  printTable(
    [
      { hop: 'transport: a string echoed by a bare worker', 'µs': summarize(echoes).median },
      { hop: 'host side: receive, check, dispatch, reply (no VM)', 'µs': summarize(host).median },
      { hop: 'VM → host post, quickjs-emscripten wrappers', 'µs': engine.libraryPost! },
      { hop: 'VM → host post, direct (host-calls.ts)', 'µs': engine.directPost! },
      { hop: 'host → VM deliver, quickjs-emscripten wrappers', 'µs': engine.libraryDeliver! },
      { hop: 'host → VM deliver, direct (host-calls.ts)', 'µs': engine.directDeliver! },
    ],
    'hops',
  )
  await sandbox.dispose()
  await inline.dispose()
  await bare.worker.terminate()
}

await main()
