/**
 * Edge figures: a cold `return 1` Code Mode run on QuickJS inside workerd (Miniflare,
 * real workerd rules, the wasm imported as a CompiledWasm module), against QuickJS in
 * Node and the Node worker_threads runtime. Every QuickJS run is cold by construction (a
 * fresh wasm instance and memory per run); the Node worker runtime runs with its default
 * pre-spawned worker (`prespawn: 1`) and with none (`prespawn: 0`, a worker boot per run).
 *
 * workerd is timed two ways, because of its clock: (1) inside the isolate with
 * performance.now() — workerd coarsens it to whole milliseconds, and deployed it only
 * advances across I/O (reads 0 there); locally it advances during synchronous code, so
 * it is meaningful here; (2) wall time of one request running one run, minus the median
 * of an empty route (the dispatchFetch round trip). The fixture is
 * test/fixtures/edge-bench/worker.ts, bundled by scripts/build-edge.mjs.
 *
 * Run: `npx tsx bench/edge.bench.ts`
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Miniflare } from 'miniflare'
import { createNodeWorkerRuntime } from '../platforms/node/index.js'
import { createQuickJsRuntime } from '../platforms/quickjs/index.js'
import type { CodeRuntime } from '../src/code-runtime/contract.js'

const RUNS = 200
const WARMUP = 10
const root = fileURLToPath(new URL('..', import.meta.url))
const require = createRequire(import.meta.url)

function summary(label: string, times: number[], note = ''): void {
  const sorted = [...times].sort((a, b) => a - b)
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!
  console.log(`${label.padEnd(58)} p50 ${at(50).toFixed(2).padStart(7)} ms   p95 ${at(95).toFixed(2).padStart(7)} ms   (n=${sorted.length})${note}`)
}

async function timeRuns(runtime: CodeRuntime, count: number): Promise<number[]> {
  for (let i = 0; i < WARMUP; i++) await runtime.run({ program: 'return 1', bindings: [] })
  const times: number[] = []
  for (let i = 0; i < count; i++) {
    const start = performance.now()
    const result = await runtime.run({ program: 'return 1', bindings: [] })
    times.push(performance.now() - start)
    if (result.value !== 1) throw new Error(`unexpected result ${JSON.stringify(result)}`)
  }
  return times
}

async function workerd(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'toolyard-edge-bench-'))
  execFileSync(process.execPath, ['scripts/build-edge.mjs', '--entry', 'test/fixtures/edge-bench/worker.ts', '--outdir', dir], { cwd: root, stdio: 'pipe' })
  const mf = new Miniflare({
    modules: true,
    scriptPath: join(dir, 'worker.js'),
    modulesRoot: dir,
    modulesRules: [{ type: 'CompiledWasm', include: ['**/*.wasm'] }],
    compatibilityDate: '2026-04-20',
  })
  try {
    await mf.ready
    const get = async (path: string): Promise<unknown> => {
      const response = await mf.dispatchFetch(`http://bench.test${path}`)
      if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`)
      return response.json()
    }
    await get(`/run?n=${WARMUP}`)
    const inside = (await get(`/run?n=${RUNS}`)) as { times: number[] }
    summary('QuickJS in workerd, timed in the isolate (1 ms clock)', inside.times)

    const wall = async (path: string): Promise<number[]> => {
      const times: number[] = []
      for (let i = 0; i < RUNS; i++) {
        const start = performance.now()
        const response = await mf.dispatchFetch(`http://bench.test${path}`)
        await response.arrayBuffer()
        times.push(performance.now() - start)
      }
      return times
    }
    for (let i = 0; i < WARMUP; i++) await (await mf.dispatchFetch('http://bench.test/empty')).arrayBuffer()
    const empty = await wall('/empty')
    const perRun = await wall('/run?n=1')
    const baseline = [...empty].sort((a, b) => a - b)[Math.floor(empty.length / 2)]!
    summary('  dispatchFetch round trip, empty route', empty)
    summary('QuickJS in workerd, wall per request − empty-route p50', perRun.map((t) => Math.max(0, t - baseline)))

    const parts = (await get(`/parts?n=${RUNS}`)) as { instantiate: number[]; evaluate: number[] }
    summary('  bare QuickJS in workerd: instantiate + fresh memory', parts.instantiate)
    summary('  bare QuickJS in workerd: runtime + context + eval', parts.evaluate)
    for (const mb of [16, 64]) {
      const sized = (await get(`/run?n=${RUNS}&mb=${mb}`)) as { times: number[] }
      summary(`  QuickJS in workerd, memoryMb ${mb} (isolate clock)`, sized.times)
    }
  } finally {
    await mf.dispose()
    rmSync(dir, { recursive: true, force: true })
  }
}

async function node(): Promise<void> {
  const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))
  const quickjs = createQuickJsRuntime({ wasmModule, memoryMb: 32 })
  summary('QuickJS in Node (precompiled module, memoryMb 32)', await timeRuns(quickjs, RUNS))
  await quickjs.dispose()

  const warm = createNodeWorkerRuntime({ prespawn: 1 })
  summary('Node worker runtime (prespawn 1: a booted fresh worker waits)', await timeRuns(warm, RUNS))
  await warm.dispose()
  const cold = createNodeWorkerRuntime({ prespawn: 0 })
  summary('Node worker runtime (prespawn 0: a worker boots per run)', await timeRuns(cold, Math.min(RUNS, 50)))
  await cold.dispose()
}

console.log(`cold \`return 1\` runs (target: QuickJS p50 <= 2 ms)`)
await workerd()
await node()
