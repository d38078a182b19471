/**
 * A fresh sandbox runtime's first runs (issue 34): `createSandboxRuntime()` to its first
 * `return 1`, then the next `return 1`s (`BENCH_RUNS` in all, default 4), each sent as soon as the
 * one before settled.
 * The second run is the one that used to wait for the thread's second VM build (the one
 * that takes the memory image).
 *
 * With `BASELINE=<git ref>` the same rows are measured for that ref's thread bundle
 * (`platforms/node/_sandbox-thread.mjs` at the ref, written under node_modules/.cache),
 * interleaved runtime by runtime with the current one, in this process: same host code,
 * same load. Run: `BASELINE=main npm run bench -- first-runs`; `BENCH_FRESH=<n>` runtimes
 * per contender (default 15).
 *
 * @module
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import { createSandboxRuntimeOn } from '../src/code-runtime/sandbox-runtime.js'
import type { SandboxRuntimeOptions } from '../src/code-runtime/sandbox-runtime.js'
import { nodeSandboxPlatform } from '../platforms/node/sandbox-runtime.js'

const FRESH = Number(process.env.BENCH_FRESH ?? 15)
const RUNS = Number(process.env.BENCH_RUNS ?? 4)
const root = fileURLToPath(new URL('..', import.meta.url))

interface Contender {
  readonly name: string
  readonly thread: URL | undefined
}

/** The baseline's thread bundle, written where its package imports resolve from this checkout. */
function baselineThread(ref: string): URL {
  const source = execFileSync('git', ['show', `${ref}:platforms/node/_sandbox-thread.mjs`], { cwd: root, maxBuffer: 64 * 1024 * 1024 })
  const dir = new URL('../node_modules/.cache/toolyard-bench/', import.meta.url)
  mkdirSync(dir, { recursive: true })
  const name = ref.replaceAll(/[^\w.-]/g, '_')
  const url = new URL(`${name}/_sandbox-thread.mjs`, dir)
  mkdirSync(new URL(`${name}/`, dir), { recursive: true })
  writeFileSync(url, source)
  try {
    // Since the stripper moved out of the thread bundle, it sits beside it.
    writeFileSync(new URL(`${name}/_sandbox-strip.cjs`, dir), execFileSync('git', ['show', `${ref}:platforms/node/_sandbox-strip.cjs`], { cwd: root, maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'ignore'] }))
  } catch {
    // An older ref: its bundle carries its stripper.
  }
  return url
}

/** Ms from create to run 1's result, then from each next run's submission to its result. */
async function firstRuns(contender: Contender, options: SandboxRuntimeOptions, idleMs = 0): Promise<number[]> {
  const start = performance.now()
  const runtime = createSandboxRuntimeOn(nodeSandboxPlatform(contender.thread), options)
  const times: number[] = []
  let from = start
  for (let i = 0; i < RUNS; i++) {
    const result = await runtime.run({ program: 'return 1', bindings: [] })
    const now = performance.now()
    if (result.value !== 1) throw new Error(`${contender.name}: ${JSON.stringify(result)}`)
    times.push(now - from)
    from = now
  }
  if (idleMs > 0) {
    await new Promise((resolve) => setTimeout(resolve, idleMs))
    await runtime.run({ program: 'return 1', bindings: [] })
  }
  await runtime.dispose()
  return times
}

function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

const contenders: Contender[] = [{ name: 'current', thread: undefined }]
if (process.env.BASELINE !== undefined) contenders.push({ name: `baseline ${process.env.BASELINE}`, thread: baselineThread(process.env.BASELINE) })

const SHAPES: readonly (readonly [string, SandboxRuntimeOptions])[] = [
  ['one thread', { maxConcurrentRuns: 1 }],
  ['default', {}],
]
const shapes = SHAPES.filter(([name]) => process.env.BENCH_SHAPE === undefined || name === process.env.BENCH_SHAPE)

console.log(`load before: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`)
// Once each, apart: the process compiles the wasm module once, and the runtime's idle thread takes
// the memory image the process's later threads start from (the wasm and the image, once a process).
for (const contender of contenders) {
  const [first] = await firstRuns(contender, {}, 1_500)
  console.log(`  ${contender.name}: the process's first runtime, create → run 1: ${first!.toFixed(1)} ms`)
}
const samples = new Map<string, number[][]>()
for (let i = 0; i < FRESH; i++) {
  for (const [shape, options] of shapes) {
    for (const contender of contenders) {
      const key = `${contender.name}, ${shape}`
      const list = samples.get(key) ?? Array.from({ length: RUNS }, (): number[] => [])
      samples.set(key, list)
      const times = await firstRuns(contender, options)
      times.forEach((ms, run) => list[run]!.push(ms))
    }
  }
}
console.log(`\n  fresh runtimes: ${FRESH} per row, interleaved; ms, p50 / p95`)
console.log(`  ${'contender'.padEnd(36)} ${Array.from({ length: RUNS }, (_, run) => (run === 0 ? 'create → run 1' : `run ${run + 1}`).padStart(16)).join(' ')}`)
for (const [key, runs] of samples) {
  const cells = runs.map((list) => `${percentile(list, 50).toFixed(1)} / ${percentile(list, 95).toFixed(1)}`.padStart(16))
  console.log(`  ${key.padEnd(36)} ${cells.join(' ')}`)
}
console.log(`load after: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`)
