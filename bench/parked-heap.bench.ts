/**
 * What parked runs keep on the host's heap (issue 31, "Bounds and hygiene"): 30 runs each
 * wait for a person on a `write_file` call whose arguments hold 7 MiB of text, against
 * the default `maxParkedBytes` (128 MiB). Printed: runs parked and running once they have
 * all asked (4 run at once; a parked run frees its slot), and the host's heap growth (after a full GC) then, in total and per run.
 *
 * Run: `node --expose-gc --import tsx bench/parked-heap.bench.ts` (`BENCH_RUNS`, `BENCH_MIB`).
 *
 * @module
 */
import { loadavg } from 'node:os'
import { createSandboxRuntime } from '../platforms/node/index.js'
import type { CodeBindingCallOptions, CodeRunResult } from '../src/code-runtime/contract.js'

const RUNS = Number(process.env.BENCH_RUNS ?? 30)
const MIB = Number(process.env.BENCH_MIB ?? 7)
const gc = (globalThis as { gc?: () => void }).gc

function heapMiB(): number {
  gc?.()
  gc?.()
  return process.memoryUsage().heapUsed / 1024 / 1024
}

async function main(): Promise<void> {
  if (gc === undefined) throw new Error('run with node --expose-gc')
  const runtime = createSandboxRuntime({ maxConcurrentRuns: 4, maxQueuedRuns: RUNS, maxPendingArgBytes: 16 * 1024 * 1024, parkAfterMs: 50, memoryMb: 64, computeMs: 60_000, maxWallMs: 600_000 })
  await runtime.warm()
  const waiting: ((value: unknown) => void)[] = []
  const writeFile = (_args: unknown, options?: CodeBindingCallOptions) => {
    const release = options?.holdWallClock?.()
    return new Promise((resolve) => waiting.push(resolve)).finally(() => release?.())
  }
  const before = heapMiB()
  const runs: Promise<CodeRunResult>[] = []
  for (let i = 0; i < RUNS; i++) {
    runs.push(
      runtime.run({
        program: `const content = 'x'.repeat(${MIB} * 1024 * 1024); return await tools.write_file({ path: 'f${i}.txt', content })`,
        bindings: [{ global: 'tools', functions: { write_file: writeFile } }],
      }),
    )
  }
  // Until no run asks any more: every run has asked, or the runs that could not park hold every slot.
  const deadline = Date.now() + 300_000
  let asked = -1
  let stableSince = Date.now()
  while (Date.now() - stableSince < 5_000 && Date.now() < deadline) {
    if (waiting.length !== asked) {
      asked = waiting.length
      stableSince = Date.now()
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  const settled: string[] = []
  for (const run of runs) void run.then((r) => settled.push(r.error === undefined ? 'ok' : `${r.error.kind}: ${r.error.message.slice(0, 120)}`))
  await new Promise((resolve) => setTimeout(resolve, 0))
  if (settled.length > 0) console.log(`settled early: ${[...new Set(settled)].join('; ')} (${settled.length})`)
  const load = runtime.load()
  const after = heapMiB()
  const growth = after - before
  console.log(`parked heap: load ${loadavg().map((l) => l.toFixed(1)).join(' ')}; ${RUNS} runs × ${MIB} MiB arguments, maxParkedBytes 128 MiB`)
  console.log(`asked ${waiting.length}, parked ${load.parked}, running ${load.running}, queued ${load.queued}; heap growth ${growth.toFixed(0)} MiB (${(growth / RUNS).toFixed(2)} MiB a run)`)
  for (const decide of waiting.splice(0)) decide('ok')
  await Promise.all(runs)
  await runtime.dispose()
}

await main()
