/**
 * Node worker_threads code runtime figures, side by side with a bare worker spawn and
 * `@ai-sdk/code-mode` (QuickJS in worker_threads, the closest published peer) on the
 * same programs: cold `return 1`, 1,000 sequential binding calls, and 10 concurrent
 * 100 ms binding calls under `Promise.all`. Prints medians, p95 and ratios.
 *
 * Run: `npx tsx bench/code-runtime.bench.ts`
 *
 * `@ai-sdk/code-mode` is not a devDependency: its only version (1.0.42) declares Node
 * ≥ 22.13 and pins `ai@7.0.85`, so a clean `npm ci` on Node 20 cannot carry it. The
 * comparison runs when it is installed: `npm install --no-save @ai-sdk/code-mode@1.0.42 ai@7.0.85`.
 */
import { Worker } from 'node:worker_threads'
import { createNodeWorkerRuntime } from '../platforms/node/index.js'

const COLD_RUNS = Number(process.env.BENCH_COLD_RUNS ?? 40)

interface Summary {
  readonly p50: number
  readonly p95: number
  readonly n: number
}

function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b)
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!
  return { p50: at(50), p95: at(95), n: sorted.length }
}

const fmt = (ms: number) => (ms < 10 ? ms.toFixed(2) : ms.toFixed(1))
const line = (label: string, s: Summary, unit = 'ms') => console.log(`  ${label.padEnd(44)} p50 ${fmt(s.p50).padStart(8)} ${unit}  p95 ${fmt(s.p95).padStart(8)} ${unit}  (n=${s.n})`)
const ratio = (label: string, ours: number, theirs: number) => console.log(`  ${label.padEnd(44)} ${(theirs / ours).toFixed(1)}× faster`)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function time<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const start = performance.now()
  const value = await fn()
  return [performance.now() - start, value]
}

async function bareSpawn(count: number): Promise<Summary> {
  const samples: number[] = []
  for (let i = 0; i < count; i++) {
    const [ms, worker] = await time(async () => {
      const w = new Worker("require('node:worker_threads').parentPort.postMessage(1)", { eval: true, env: {} })
      await new Promise((resolve) => w.once('message', resolve))
      return w
    })
    samples.push(ms)
    await worker.terminate()
  }
  return summarize(samples)
}

/** The peer's tools, built with the AI SDK's own `tool` and `jsonSchema` (loaded with the peer). */
type PeerTools = Record<'inc' | 'wait', unknown>
type RunCodeMode = (options: { js: string; tools: PeerTools }) => Promise<unknown>

interface AiSdk {
  tool(definition: Record<string, unknown>): unknown
  jsonSchema(schema: Record<string, unknown>): unknown
}

/** Imports an optional package by a variable specifier (the type check must not require it); `undefined` when not installed. */
async function optional<T>(specifier: string): Promise<T | undefined> {
  try {
    return (await import(specifier)) as T
  } catch (error) {
    // Not installed (the usual case on Node 20): main() says how to add it. Anything else is a real failure.
    if ((error as { code?: unknown }).code === 'ERR_MODULE_NOT_FOUND') return undefined
    throw error
  }
}

const peerModule = await optional<{ experimental_runCodeMode: RunCodeMode }>('@ai-sdk/code-mode')
const aiSdk = peerModule === undefined ? undefined : await optional<AiSdk>('ai')
const runCodeMode = aiSdk === undefined ? undefined : peerModule?.experimental_runCodeMode

const peerTools: PeerTools = {
  inc: aiSdk?.tool({ description: 'inc', inputSchema: aiSdk.jsonSchema({ type: 'object', properties: { i: { type: 'number' } } }), execute: async ({ i }: { i: number }) => i + 1 }),
  wait: aiSdk?.tool({ description: 'wait', inputSchema: aiSdk.jsonSchema({ type: 'object' }), execute: async () => (await sleep(100), 1) }),
}

async function peerCold(run: RunCodeMode, count: number): Promise<Summary> {
  await run({ js: 'return 1', tools: peerTools })
  const samples: number[] = []
  for (let i = 0; i < count; i++) {
    const [ms, value] = await time(() => run({ js: 'return 1', tools: peerTools }))
    if (value !== 1) throw new Error(`peer returned ${JSON.stringify(value)}`)
    samples.push(ms)
  }
  return summarize(samples)
}

async function main(): Promise<void> {
  console.log(`code-runtime bench (Node ${process.version}; figures depend on machine load)`)
  const runtime = createNodeWorkerRuntime()
  const bindings = [
    {
      global: 'tools',
      functions: {
        inc: async (args: unknown) => (args as { i: number }).i + 1,
        wait: async () => (await sleep(100), 1),
      },
    },
  ]

  console.log('\ncold `return 1` run')
  for (let i = 0; i < 5; i++) await runtime.run({ program: 'return 1', bindings: [] })
  const ours: number[] = []
  for (let i = 0; i < COLD_RUNS; i++) {
    await runtime.warm()
    const [ms, result] = await time(() => runtime.run({ program: 'return 1', bindings: [] }))
    if (result.value !== 1) throw new Error(`unexpected ${JSON.stringify(result)}`)
    ours.push(ms)
  }
  const oursCold = summarize(ours)
  const backToBack: number[] = []
  for (let i = 0; i < Math.min(COLD_RUNS, 20); i++) backToBack.push((await time(() => runtime.run({ program: 'return 1', bindings: [] })))[0])
  const bare = await bareSpawn(Math.min(COLD_RUNS, 30))
  line('toolyard (pre-spawned fresh worker)', oursCold)
  line('toolyard back-to-back (no time to pre-spawn)', summarize(backToBack))
  line('bare new Worker → first message', bare)
  ratio('toolyard vs bare spawn (p50)', oursCold.p50, bare.p50)
  if (runCodeMode !== undefined) {
    const peer = await peerCold(runCodeMode, Math.min(COLD_RUNS, 30))
    line('@ai-sdk/code-mode runCodeMode', peer)
    ratio('toolyard vs @ai-sdk/code-mode (p50)', oursCold.p50, peer.p50)
  } else {
    console.log('  @ai-sdk/code-mode: not installed, skipped (Node ≥ 22.13: npm install --no-save @ai-sdk/code-mode@1.0.42 ai@7.0.85)')
  }

  console.log('\nsequential binding calls in one program')
  const calls = 1_000
  const program = (n: number) => `let s = 0\nfor (let i = 0; i < ${n}; i++) s += await tools.inc({ i })\nreturn s`
  const perCall: number[] = []
  for (let i = 0; i < 7; i++) {
    await runtime.warm()
    const [ms, result] = await time(() => runtime.run({ program: program(calls), bindings }))
    if (typeof result.value !== 'number') throw new Error(`unexpected ${JSON.stringify(result)}`)
    perCall.push((ms * 1000) / calls)
  }
  const oursCalls = summarize(perCall)
  line(`toolyard, ${calls} calls`, oursCalls, 'µs/call')
  if (runCodeMode !== undefined) {
    const peerCalls = 250
    const peerPerCall: number[] = []
    let peerThousand = 'not attempted'
    for (let i = 0; i < 5; i++) {
      const [ms] = await time(() => runCodeMode({ js: program(peerCalls), tools: peerTools }))
      peerPerCall.push((ms * 1000) / peerCalls)
    }
    try {
      await runCodeMode({ js: program(calls), tools: peerTools })
      peerThousand = 'ran'
    } catch (error) {
      peerThousand = `fails: ${(error as Error).name}: ${(error as Error).message.split('\n')[0]}`
    }
    const peerCallsSummary = summarize(peerPerCall)
    line(`@ai-sdk/code-mode, ${peerCalls} calls (default cap 256)`, peerCallsSummary, 'µs/call')
    console.log(`  @ai-sdk/code-mode with ${calls} calls: ${peerThousand}`)
    ratio('toolyard vs @ai-sdk/code-mode per call (p50)', oursCalls.p50, peerCallsSummary.p50)
  }

  console.log('\n10 concurrent 100 ms binding calls under Promise.all (wall per run)')
  const concurrent = 'const r = await Promise.all(Array.from({ length: 10 }, () => tools.wait({})))\nreturn r.length'
  const oursWall: number[] = []
  const peerWall: number[] = []
  for (let i = 0; i < 7; i++) {
    await runtime.warm()
    const [ms, result] = await time(() => runtime.run({ program: concurrent, bindings }))
    if (result.value !== 10) throw new Error(`unexpected ${JSON.stringify(result)}`)
    oursWall.push(ms)
    if (runCodeMode !== undefined) peerWall.push((await time(() => runCodeMode({ js: concurrent, tools: peerTools })))[0])
  }
  line('toolyard', summarize(oursWall))
  if (runCodeMode !== undefined) line('@ai-sdk/code-mode', summarize(peerWall))

  await runtime.dispose()
}

await main()
process.exit(0)
