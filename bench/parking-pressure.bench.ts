/**
 * Parking under pressure (issue 34 item 5): `BENCH_RUNS` (default 2,000) runs that each ask a
 * person (an approval that never decides), submitted at once in lane A on a 2-slot sandbox
 * (`parkAfterMs` default), then one plain `return 6 * 7` in lane A, then (fresh runtime) in lane B.
 * Printed per row: ms until all asking runs are at their approval, the plain run's answer ms, the
 * host heap then, and the ms to abort them all; last, `BENCH_RUNS` plain runs queued behind two held slots, aborted.
 * `BASELINE=<git ref>`: the same rows on that ref's pool (its `sandbox-runtime.ts`), interleaved.
 * Run: `node --expose-gc --import tsx bench/parking-pressure.bench.ts`.
 * @module
 */
import { setMaxListeners } from 'node:events'
import { loadavg } from 'node:os'
import { createSandboxRuntimeOn } from '../src/code-runtime/sandbox-runtime.js'
import type { CodeBindingCallOptions, CodeRunResult } from '../src/code-runtime/contract.js'
import { nodeSandboxPlatform } from '../platforms/node/sandbox-runtime.js'
import { importAs, sourceAt } from './_baseline.js'

const RUNS = Number(process.env.BENCH_RUNS ?? 2_000)
/** Room for every run in one lane: a lane holds at most maxQueuedRuns less a quarter (3d03de6). */
const QUEUE = Math.ceil(((RUNS + 10) * 4) / 3)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1)
const gc = (globalThis as { gc?: () => void }).gc

const contenders: { readonly name: string; readonly pool: typeof createSandboxRuntimeOn }[] = [{ name: 'current', pool: createSandboxRuntimeOn }]
if (process.env.BASELINE !== undefined) {
  const ref = process.env.BASELINE
  const { createSandboxRuntimeOn: pool } = await importAs<{ createSandboxRuntimeOn: typeof createSandboxRuntimeOn }>('src/code-runtime/sandbox-runtime.ts', sourceAt('src/code-runtime/sandbox-runtime.ts', ref), ref)
  contenders.push({ name: `baseline ${ref}`, pool })
}

function heapMiB(): number {
  gc?.()
  return process.memoryUsage().heapUsed / 1024 / 1024
}

async function waitFor(probe: () => boolean, ms: number): Promise<boolean> {
  const deadline = performance.now() + ms
  while (!probe()) {
    if (performance.now() > deadline) return false
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  return true
}

/** One row: a fresh 2-slot runtime, the asking burst in lane A, the plain run in `plainLane`. */
async function row(pool: typeof createSandboxRuntimeOn, plainLane: string): Promise<string> {
  const runtime = pool(nodeSandboxPlatform(), { maxConcurrentRuns: 2, maxQueuedRuns: QUEUE, maxWallMs: 600_000 })
  await runtime.warm()
  let asked = 0
  // An approval that never decides: it holds the run's wall clock, as the approval stage does, until the run ends.
  const ask = (_args: unknown, options: CodeBindingCallOptions) => {
    asked++
    options.holdWallClock?.()
    return new Promise((_resolve, reject) => options.signal.addEventListener('abort', () => reject(new Error('run ended')), { once: true }))
  }
  const controller = new AbortController()
  // One signal for every run of the row (each run listens to it).
  setMaxListeners(0, controller.signal)
  const bindings = [{ global: 'tools', functions: { ask } }]
  const t0 = performance.now()
  const runs: Promise<CodeRunResult>[] = []
  for (let i = 0; i < RUNS; i++) runs.push(runtime.run({ program: `return await tools.ask({ n: ${i} })`, bindings, lane: 'A', signal: controller.signal }))
  const p0 = performance.now()
  const plain = runtime.run({ program: 'return 6 * 7', bindings: [], lane: plainLane }).then((r) => ({ ms: performance.now() - p0, ok: r.value === 42 }))
  const allAsked = (await waitFor(() => asked === RUNS, 300_000)) ? performance.now() - t0 : Number.NaN
  const answered = await plain
  const heap = heapMiB()
  const queued = runtime.load().queued
  const a0 = performance.now()
  controller.abort()
  await Promise.all(runs)
  const abortMs = performance.now() - a0
  await runtime.dispose()
  return `all ${RUNS} at their approval ${allAsked.toFixed(0)} ms; plain run in lane ${plainLane} answered ${answered.ms.toFixed(0)} ms${answered.ok ? '' : ' (wrong answer)'}; heap ${heap.toFixed(0)} MiB; abort ${queued} still queued + the parked: ${abortMs.toFixed(0)} ms`
}

/** `RUNS` plain runs queued behind two held slots, in 7 lanes, then aborted one by one (the queue was an array: O(n) per abort). */
async function abortQueued(pool: typeof createSandboxRuntimeOn): Promise<string> {
  const runtime = pool(nodeSandboxPlatform(), { maxConcurrentRuns: 2, maxQueuedRuns: QUEUE })
  let release!: () => void
  const held = new Promise<null>((resolve) => (release = () => resolve(null)))
  const holders = [0, 1].map(() => runtime.run({ program: 'return await tools.hold({})', bindings: [{ global: 'tools', functions: { hold: () => held } }] }))
  await waitFor(() => runtime.load().running === 2, 60_000)
  const controllers = Array.from({ length: RUNS }, () => new AbortController())
  const runs = controllers.map((c, i) => runtime.run({ program: 'return 1', bindings: [], signal: c.signal, lane: `L${i % 7}` }))
  const a0 = performance.now()
  for (const c of controllers.reverse()) c.abort()
  await Promise.all(runs)
  const ms = performance.now() - a0
  release()
  await Promise.all(holders)
  await runtime.dispose()
  return `${RUNS} queued runs aborted, last first: ${ms.toFixed(1)} ms`
}

console.log(`parking pressure: ${RUNS} asking runs on 2 slots; load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`)
for (let round = 0; round < ROUNDS; round++) {
  for (const lane of ['A', 'B']) {
    // Each round and lane the other contender goes first: the first of a pair measured slower here.
    const order = (round + (lane === 'A' ? 0 : 1)) % 2 === 0 ? contenders : [...contenders].reverse()
    for (const contender of order) console.log(`  ${contender.name.padEnd(16)} ${await row(contender.pool, lane)}`)
  }
}
for (const contender of contenders) console.log(`  ${contender.name.padEnd(16)} ${await abortQueued(contender.pool)}`)
console.log(`load after: ${loadavg().map((l) => l.toFixed(1)).join(' ')}`)
