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
 * Where the process's CPU goes, per thread (Linux, from `/proc/self/task/<tid>/schedstat`, ns):
 * each round-trip row also splits its CPU into the host's main thread, the busiest other
 * thread (the sandbox's or the bare worker's: one thread serves a run) and the rest (GC and
 * libuv helpers). Process CPU alone cannot say whether a lever saved the host or the thread.
 *
 * `BASELINE=<git ref>` adds a row for that ref's thread side, interleaved with the others in this
 * process: its thread bundle (`platforms/node/_sandbox-thread.cjs`, written under
 * node_modules/.cache) and its in-VM script (`engine/quickjs/_sandbox-source.ts`), driven by this
 * checkout's host side (same pool, same session): what a thread-side lever saved, at the same load.
 *
 * Run: `npx tsx bench/sub-call.bench.ts` (`BENCH_ROUNDS=n`, default 9; `BENCH_CALLS=n`
 * sub-calls a round, default 1 000: more gives steadier per-thread figures; `BENCH_ARGS=<expression>`
 * the call's arguments, default `{ i }`).
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import defaultVariant from '@jitl/quickjs-wasmfile-release-sync'
import { newQuickJSWASMModuleFromVariant } from 'quickjs-emscripten-core'
import type { QuickJSContext, QuickJSSyncVariant } from 'quickjs-emscripten-core'
import type { CodeBindingNamespace, CodeRuntime } from '../src/code-runtime/contract.js'
import { CodeRunSession, prepareRun } from '../src/code-runtime/host-session.js'
import { JsonWireEndpoint } from '../src/code-runtime/json-endpoint.js'
import { DEFAULT_CODE_RUN_LIMITS } from '../src/code-runtime/limits.js'
import { createSandboxRuntimeOn } from '../src/code-runtime/sandbox-runtime.js'
import type { SandboxRuntime } from '../src/code-runtime/sandbox-runtime.js'
import { createSandboxRuntime } from '../platforms/node/index.js'
import { nodeSandboxPlatform } from '../platforms/node/sandbox-runtime.js'
import { createQuickJsRuntime } from '../platforms/quickjs/index.js'
import { directDeliver, directHostCalls } from '../engine/quickjs/host-calls.js'
import { importAs, sourceAt } from './_baseline.js'
import { printTable, summarize } from './_stats.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9)
const CALLS = Number(process.env.BENCH_CALLS ?? 1_000)
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
const bindings: CodeBindingNamespace[] = [{ global: 'tools', functions: { inc: async (args) => (args as { i: number }).i + 1 } }]
/** The call's arguments, an expression over the loop's `i` (`BENCH_ARGS`; the binding returns `args.i + 1`). */
const ARGS = process.env.BENCH_ARGS ?? '{ i }'
const program = `let s = 0\nfor (let i = 0; i < ${CALLS}; i++) s = await tools.inc(${ARGS})\nreturn s`

/**
 * The thread side at git `ref` on this checkout's host side: the ref's thread bundle (and its
 * stripper, beside it) written under node_modules/.cache, and the ref's in-VM script as the
 * platform's `sandboxSource`.
 */
async function baselineSandbox(ref: string): Promise<SandboxRuntime> {
  const root = fileURLToPath(new URL('..', import.meta.url))
  const dir = new URL(`../node_modules/.cache/toolyard-bench/sub-call-${ref.replaceAll(/[^\w.-]/g, '_')}/`, import.meta.url)
  mkdirSync(dir, { recursive: true })
  for (const file of ['_sandbox-thread.cjs', '_sandbox-strip.cjs']) {
    writeFileSync(new URL(file, dir), execFileSync('git', ['show', `${ref}:platforms/node/${file}`], { cwd: root, maxBuffer: 64 * 1024 * 1024 }))
  }
  const { SANDBOX_SOURCE } = await importAs<{ SANDBOX_SOURCE: string }>('engine/quickjs/_sandbox-source.ts', sourceAt('engine/quickjs/_sandbox-source.ts', ref), `sub-call-source-${ref}`)
  return createSandboxRuntimeOn({ ...nodeSandboxPlatform(new URL('_sandbox-thread.cjs', dir)), sandboxSource: SANDBOX_SOURCE })
}

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

/** CPU ns each thread of this process has run so far, by thread id (empty where `/proc` has no schedstat). */
function threadCpu(): Map<string, number> {
  const cpu = new Map<string, number>()
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      try {
        cpu.set(tid, Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]))
      } catch {
        // A thread that ended between the listing and the read.
      }
    }
  } catch {
    // Not Linux: no per-thread column.
  }
  return cpu
}

/** CPU ns per thread between two {@link threadCpu} snapshots: the main thread, the busiest other, the rest. */
function threadSplit(before: Map<string, number>, after: Map<string, number>): { main: number; thread: number; rest: number } {
  const main = String(process.pid)
  let thread = 0
  let total = 0
  for (const [tid, ns] of after) {
    if (tid === main) continue
    const used = ns - (before.get(tid) ?? 0)
    total += used
    thread = Math.max(thread, used)
  }
  return { main: (after.get(main) ?? 0) - (before.get(main) ?? 0), thread, rest: total - thread }
}

/** Per sub-call: wall and process CPU µs, and CPU µs split by thread ({@link threadSplit}). */
interface PerCall {
  readonly wall: number
  readonly cpu: number
  readonly main: number
  readonly thread: number
  readonly rest: number
}

/** Wall and CPU µs per sub-call: the loop's run minus a cold `return 1` just before it. */
async function perCall(contender: Contender): Promise<PerCall> {
  const cpu0 = process.cpuUsage()
  const threads0 = threadCpu()
  const cold0 = performance.now()
  await contender.run('return 1', [])
  const coldMs = performance.now() - cold0
  const coldCpu = process.cpuUsage(cpu0)
  const coldThreads = threadSplit(threads0, threadCpu())
  await sleep(20)
  const cpu1 = process.cpuUsage()
  const threads1 = threadCpu()
  const start = performance.now()
  const value = await contender.run(program, bindings)
  const ms = performance.now() - start
  const cpu = process.cpuUsage(cpu1)
  const threads = threadSplit(threads1, threadCpu())
  if (value !== CALLS) throw new Error(`returned ${JSON.stringify(value)}`)
  const cpuUs = cpu.user + cpu.system - coldCpu.user - coldCpu.system
  const perCallUs = (ns: number, coldNs: number) => Math.max(0, ns - coldNs) / 1000 / CALLS
  return {
    wall: (Math.max(0, ms - coldMs) * 1000) / CALLS,
    cpu: Math.max(0, cpuUs) / CALLS,
    main: perCallUs(threads.main, coldThreads.main),
    thread: perCallUs(threads.thread, coldThreads.thread),
    rest: perCallUs(threads.rest, coldThreads.rest),
  }
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
  console.log(`sub-call bench (Node ${process.version}; ${ROUNDS} interleaved rounds of ${CALLS} calls of tools.inc(${ARGS}), medians; figures move with machine load)`)
  console.log(`load before: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`)
  const require = createRequire(import.meta.url)
  const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))
  const sandbox = createSandboxRuntime()
  await sandbox.warm()
  const inline = createQuickJsRuntime({ wasmModule })
  const bare = bareWorker()
  const ref = process.env.BASELINE
  const baseline = ref === undefined ? undefined : await baselineSandbox(ref)
  await baseline?.warm()
  const contenders: Record<string, Contender> = { sandbox: fromRuntime(sandbox), ...(baseline === undefined ? {} : { baseline: fromRuntime(baseline) }), bare, inline: fromRuntime(inline) }
  for (const contender of Object.values(contenders)) for (let i = 0; i < 6; i++) await perCall(contender)
  const rounds: Record<string, PerCall[]> = Object.fromEntries(Object.keys(contenders).map((name) => [name, []]))
  const echoes: number[] = []
  const host: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, contender] of Object.entries(contenders)) rounds[name]!.push(await perCall(contender))
    echoes.push(await echo(bare.worker))
    host.push(await hostSide())
  }
  const med = (name: string, key: keyof PerCall) => summarize(rounds[name]!.map((r) => r[key])).median
  const floor = med('bare', 'wall')
  const row = (label: string, name: string) => ({
    'per sub-call': label,
    'wall µs': med(name, 'wall'),
    'CPU µs': med(name, 'cpu'),
    'host main µs': med(name, 'main'),
    'thread µs': med(name, 'thread'),
    'other threads µs': med(name, 'rest'),
    '× floor': med(name, 'wall') / floor,
  })
  printTable(
    [
      row('bare worker + postMessage (floor)', 'bare'),
      row('toolyard sandbox (QuickJS in a thread)', 'sandbox'),
      ...(ref === undefined ? [] : [row(`  the same, thread side at ${ref}`, 'baseline')]),
      row('QuickJS on the host thread (no hop)', 'inline'),
    ],
    'round trip (target: the sandbox ≤ 2 × floor; CPU split by thread: host main, the busiest other, the rest)',
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
  console.log(`load after: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`)
  await sandbox.dispose()
  await baseline?.dispose()
  await inline.dispose()
  await bare.worker.terminate()
}

await main()
