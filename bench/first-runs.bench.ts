/**
 * A fresh sandbox runtime's first runs (issue 34): `createSandboxRuntime()` to its first
 * `return 1`, then the next `return 1`s (`BENCH_RUNS` in all, default 4), each sent as soon as the
 * one before settled.
 * The second run is the one that used to wait for the thread's second VM build (the one
 * that takes the memory image).
 *
 * With `BASELINE=<git ref>` the same rows are measured for that ref's thread bundle
 * (`platforms/node/_sandbox-thread.cjs` or `.mjs` at the ref, written under node_modules/.cache),
 * interleaved runtime by runtime with the current one, in this process: same host code,
 * same load. Run: `BASELINE=main npm run bench -- first-runs`; `BENCH_FRESH=<n>` runtimes
 * per contender (default 15).
 *
 * Beside them, in the same interleaving, the platform's floor: a bare `worker_threads` spawn (an
 * `eval` worker that only posts a message) to its first message, the part of a first run no
 * sandbox design on Node avoids.
 *
 * `BENCH_THREAD_CPU=1` (Linux) also reports each contender's threads' own CPU time, in ms, to their
 * first result: before the thread file runs (Node's worker start and the file's compile, from a code
 * cache where the contender keeps one), running its top level, then to the result.
 * Wall times under load hide a few ms of a thread's work; its CPU time does not.
 *
 * `BENCH_BACK_TO_BACK=<n>` measures instead, with the other core busy (a spinning process),
 * `<n>` back-to-back `return 1` runs on each contender's runtime after 20 untimed ones, in
 * `BENCH_BLOCKS` blocks (default 3), contender after contender: p50 / p99 / max per shape.
 *
 * @module
 */
import { execFileSync, spawn } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { createSandboxRuntimeOn } from '../src/code-runtime/sandbox-runtime.js'
import type { SandboxRuntimeOptions } from '../src/code-runtime/sandbox-runtime.js'
import { nodeSandboxPlatform } from '../platforms/node/sandbox-runtime.js'
import { importAs, sourceAt } from './_baseline.js'

const FRESH = Number(process.env.BENCH_FRESH ?? 15)
const RUNS = Number(process.env.BENCH_RUNS ?? 4)
const root = fileURLToPath(new URL('..', import.meta.url))

interface Contender {
  readonly name: string
  readonly thread: URL | undefined
  /** The pool (`createSandboxRuntimeOn`) the contender runs on: the baseline's own, since the pool's spares count. */
  readonly pool: typeof createSandboxRuntimeOn
  /** The Node platform (threads, the process's image) the contender runs on: the baseline's own, since it decides when a thread's image is asked for. */
  readonly platform: typeof nodeSandboxPlatform
}

/** The baseline's thread bundle (CommonJS since issue 34's second round, an ES module before), written where its package imports resolve from this checkout. */
function baselineThread(ref: string): URL {
  const show = (file: string) => execFileSync('git', ['show', `${ref}:platforms/node/${file}`], { cwd: root, maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'ignore'] })
  let file = '_sandbox-thread.cjs'
  let source: Buffer
  try {
    source = show(file)
  } catch {
    file = '_sandbox-thread.mjs'
    source = show(file)
  }
  const dir = new URL('../node_modules/.cache/toolyard-bench/', import.meta.url)
  mkdirSync(dir, { recursive: true })
  const name = ref.replaceAll(/[^\w.-]/g, '_')
  const url = new URL(`${name}/${file}`, dir)
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

/**
 * A thread file that records its thread's CPU time (`/proc/thread-self/schedstat`, ns) as it starts
 * to run, after the contender's thread file `bundle` (inlined, so that a contender that compiles
 * its thread file from a code cache does so here too) has run its top level, and at its first
 * result (the first string it posts), one JSON line to `log`. The stripper is copied beside it.
 */
function cpuWrapper(bundle: URL, log: string): URL {
  const dir = new URL(`../node_modules/.cache/toolyard-bench/cpu-${log.replaceAll(/\W/g, '_')}/`, import.meta.url)
  const url = new URL('thread.cjs', dir)
  const path = fileURLToPath(new URL('cpu.log', dir))
  mkdirSync(dir, { recursive: true })
  rmSync(path, { force: true })
  try {
    writeFileSync(new URL('_sandbox-strip.cjs', dir), readFileSync(new URL('_sandbox-strip.cjs', bundle)))
  } catch {
    // An older bundle carries its stripper.
  }
  writeFileSync(
    url,
    `"use strict";
const cpuProbe = (() => {
  const fs = require('node:fs')
  const cpu = () => Number(fs.readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6
  const entry = cpu()
  const { parentPort } = require('node:worker_threads')
  const post = parentPort.postMessage
  let done = false
  const times = { entry, loaded: entry }
  parentPort.postMessage = function (message, transfer) {
    if (!done && typeof message === 'string') {
      done = true
      fs.appendFileSync(${JSON.stringify(path)}, JSON.stringify({ ...times, result: cpu() }) + '\\n')
    }
    return post.call(this, message, transfer)
  }
  return { loaded: () => { times.loaded = cpu() } }
})();
(function () {
${readFileSync(bundle, 'utf8')}
})();
cpuProbe.loaded()
`,
  )
  cpuLogs.set(log, path)
  return url
}

const cpuLogs = new Map<string, string>()

/** Ms from create to run 1's result, then from each next run's submission to its result. */
async function firstRuns(contender: Contender, options: SandboxRuntimeOptions, idleMs = 0): Promise<number[]> {
  const start = performance.now()
  const runtime = contender.pool(contender.platform(contender.thread), options)
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

/** The floor's thread: posts its own CPU time (ms, Linux) or -1 as its first message, and nothing else. */
const BARE_SOURCE = `const { parentPort } = require('node:worker_threads')
let cpu = -1
try { cpu = Number(require('node:fs').readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6 } catch {}
parentPort.postMessage(cpu)`

/** A bare worker's spawn to its first message, ms, and its thread's CPU time then (-1 off Linux). */
async function bareSpawn(): Promise<{ readonly ms: number; readonly cpu: number }> {
  const start = performance.now()
  const worker = new Worker(BARE_SOURCE, { eval: true })
  const cpu = await new Promise<number>((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
  })
  const ms = performance.now() - start
  await worker.terminate()
  return { ms, cpu }
}

function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

/**
 * Back-to-back `return 1` runs with the other core busy: per block, per shape, per contender, a
 * fresh runtime (the process has its image: each contender's first runtime idled first), 20
 * untimed runs, then `runs` timed ones.
 */
async function backToBack(runs: number): Promise<void> {
  const blocks = Number(process.env.BENCH_BLOCKS ?? 3)
  for (const contender of contenders) await firstRuns(contender, {}, 1_500)
  const burner = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' })
  const samples = new Map<string, number[]>()
  try {
    for (let block = 0; block < blocks; block++) {
      for (const [shape, options] of shapes) {
        for (const contender of contenders) {
          const runtime = contender.pool(contender.platform(contender.thread), options)
          for (let i = 0; i < 20; i++) await runtime.run({ program: 'return 1', bindings: [] })
          const list = samples.get(`${contender.name}, ${shape}`) ?? []
          samples.set(`${contender.name}, ${shape}`, list)
          const mine: number[] = []
          let threads = 0
          for (let i = 0; i < runs; i++) {
            const start = performance.now()
            const result = await runtime.run({ program: 'return 1', bindings: [] })
            mine.push(performance.now() - start)
            threads = Math.max(threads, runtime.load().threads)
            if (result.value !== 1) throw new Error(`${contender.name}: ${JSON.stringify(result)}`)
          }
          list.push(...mine)
          await runtime.dispose()
          console.log(`  block ${block + 1}, ${contender.name}, ${shape}: p50 ${percentile(mine, 50).toFixed(2)} p99 ${percentile(mine, 99).toFixed(2)} max ${Math.max(...mine).toFixed(1)} ms; runs over 10 ms: ${mine.filter((ms) => ms > 10).length}, threads ${threads} (load ${loadavg()[0]!.toFixed(1)})`)
        }
      }
    }
  } finally {
    burner.kill()
  }
  console.log(`\n  back-to-back \`return 1\`, the other core busy, ${blocks} × ${runs} runs a row; ms`)
  for (const [key, list] of samples) console.log(`  ${key.padEnd(36)} p50 ${percentile(list, 50).toFixed(2).padStart(6)}  p99 ${percentile(list, 99).toFixed(2).padStart(7)}  max ${Math.max(...list).toFixed(1).padStart(6)}`)
}

const THREAD_CPU = process.env.BENCH_THREAD_CPU === '1'
const CURRENT_THREAD = new URL('../platforms/node/_sandbox-thread.cjs', import.meta.url)
const contenders: Contender[] = [{ name: 'current', thread: THREAD_CPU ? cpuWrapper(CURRENT_THREAD, 'current') : undefined, pool: createSandboxRuntimeOn, platform: nodeSandboxPlatform }]
if (process.env.BASELINE !== undefined) {
  const ref = process.env.BASELINE
  // The host side of the baseline too: its pool decides when spare threads start.
  const { createSandboxRuntimeOn: pool } = await importAs<{ createSandboxRuntimeOn: typeof createSandboxRuntimeOn }>('src/code-runtime/sandbox-runtime.ts', sourceAt('src/code-runtime/sandbox-runtime.ts', ref), ref)
  const { nodeSandboxPlatform: platform } = await importAs<{ nodeSandboxPlatform: typeof nodeSandboxPlatform }>('platforms/node/sandbox-runtime.ts', sourceAt('platforms/node/sandbox-runtime.ts', ref), `${ref}-platform`)
  const thread = baselineThread(ref)
  contenders.push({ name: `baseline ${ref}`, thread: THREAD_CPU ? cpuWrapper(thread, `baseline ${ref}`) : thread, pool, platform })
}

const SHAPES: readonly (readonly [string, SandboxRuntimeOptions])[] = [
  ['one thread', { maxConcurrentRuns: 1 }],
  ['default', {}],
]
const shapes = SHAPES.filter(([name]) => process.env.BENCH_SHAPE === undefined || name === process.env.BENCH_SHAPE)

console.log(`load before: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`)
if (process.env.BENCH_BACK_TO_BACK !== undefined) {
  await backToBack(Number(process.env.BENCH_BACK_TO_BACK))
  console.log(`load after: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`)
  process.exit(0)
}
// Once each, apart: the process compiles the wasm module once, and the runtime's idle thread takes
// the memory image the process's later threads start from (the wasm and the image, once a process).
// `BENCH_FIRST_IDLE_MS=0`: the first runtime is disposed right after its runs instead, before its
// thread's idle scan could take the image (it is asked for it as it ends).
const FIRST_IDLE_MS = Number(process.env.BENCH_FIRST_IDLE_MS ?? 1_500)
for (const contender of contenders) {
  const [first] = await firstRuns(contender, {}, FIRST_IDLE_MS)
  console.log(`  ${contender.name}: the process's first runtime, create → run 1: ${first!.toFixed(1)} ms`)
}
const samples = new Map<string, number[][]>()
const BARE = 'bare worker spawn → first message'
const bareCpu: number[] = []
for (let i = 0; i < FRESH; i++) {
  for (const [shape, options] of shapes) {
    const bare = await bareSpawn()
    const floor = samples.get(BARE) ?? [[]]
    samples.set(BARE, floor)
    floor[0]!.push(bare.ms)
    bareCpu.push(bare.cpu)
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
if (THREAD_CPU) {
  console.log(`\n  each thread's own CPU time to its first result (all shapes, the process's first runtimes too); ms, p50 / p95`)
  console.log(`  ${'contender'.padEnd(36)} ${['threads', 'start + compile', 'file top level', 'load → result', 'total'].map((h) => h.padStart(16)).join(' ')}`)
  for (const [name, path] of cpuLogs) {
    const lines = readFileSync(path, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { entry: number; loaded: number; result: number })
    const cell = (values: number[]) => `${percentile(values, 50).toFixed(1)} / ${percentile(values, 95).toFixed(1)}`.padStart(16)
    const columns = [lines.map((l) => l.entry), lines.map((l) => l.loaded - l.entry), lines.map((l) => l.result - l.loaded), lines.map((l) => l.result)]
    console.log(`  ${name.padEnd(36)} ${String(lines.length).padStart(16)} ${columns.map(cell).join(' ')}`)
  }
  // The bare thread posts at its entry: all of its CPU is Node's worker start.
  if (bareCpu.every((ms) => ms >= 0)) console.log(`  ${'bare worker'.padEnd(36)} ${String(bareCpu.length).padStart(16)} ${`${percentile(bareCpu, 50).toFixed(1)} / ${percentile(bareCpu, 95).toFixed(1)}`.padStart(16)}`)
}
console.log(`load after: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`)
