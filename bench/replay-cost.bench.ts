/**
 * What replays cost the host (issue 31, "Replays are free"): a program computes for about
 * 1.5 s, then asks in a loop, catching each denial. Every decision resumes the parked run,
 * and a resume replays the whole journal in a fresh VM, the 1.5 s included. Printed: the
 * server CPU (`process.cpuUsage`, every thread) of one such run against a 5 s compute
 * budget, and how it ended, for 0, 10 and 21 denials; on the sandbox (Node threads) and
 * inline QuickJS.
 *
 * Run: `npx tsx bench/replay-cost.bench.ts` (`BENCH_DENIALS=10,21` picks the counts;
 * `BENCH_ITERATIONS=15000000` fixes the loop instead of calibrating it, for before/after pairs).
 *
 * @module
 */
import { loadavg } from 'node:os'
import { createSandboxRuntime } from '../platforms/node/index.js'
import { createQuickJsRuntime } from '../platforms/quickjs/index.js'
import type { CodeBindingCallOptions, CodeRuntime } from '../src/code-runtime/contract.js'

const DENIALS = (process.env.BENCH_DENIALS ?? '0,10,21').split(',').map(Number)
const PARK_AFTER_MS = 20
const COMPUTE_MS = 5_000
/** Loop steps before the asking starts; unset: calibrated to about 1.5 s here (noisy on a loaded machine, whose clock-based meter charges waiting for a core). */
const ITERATIONS = process.env.BENCH_ITERATIONS === undefined ? undefined : Number(process.env.BENCH_ITERATIONS)

/** A loop of `iterations` steps with no clock reading (the journal stays small). */
const spin = (iterations: number) => `let x = 0; for (let i = 0; i < ${iterations}; i++) x = (x * 31 + i) | 0`

const program = (iterations: number) => `
  ${spin(iterations)}
  let denials = 0
  for (;;) {
    try { await tools.ask({ n: denials }); break } catch { denials++ }
  }
  return { x, denials }
`

/** Iterations of {@link spin} that take about `ms` in a QuickJS run here. */
async function calibrate(runtime: CodeRuntime, ms: number): Promise<number> {
  const probe = 2_000_000
  let iterations = probe
  // Twice: the first run also warms the thread up; the run's own compute figure is what counts.
  for (let i = 0; i < 2; i++) {
    const result = await runtime.run({ program: `${spin(probe)}; return x`, bindings: [] })
    iterations = Math.round((probe * ms) / Math.max(1, result.stats?.computeMs ?? ms))
  }
  return iterations
}

async function measure(runtime: CodeRuntime, iterations: number, denials: number) {
  let asked = 0
  let parkedCount = 0
  const ask = async (_args: unknown, options?: CodeBindingCallOptions) => {
    const release = options?.holdWallClock?.()
    try {
      // A person answers once the run has parked (each decision then resumes it), or after
      // 500 ms if it does not park (a run whose replay would not fit its budget keeps its VM).
      const before = parkedCount
      const since = Date.now()
      await new Promise<void>((resolve) => {
        const poll = setInterval(() => {
          if (parkedCount > before || options?.signal.aborted || Date.now() - since > 500) {
            clearInterval(poll)
            resolve()
          }
        }, 2)
      })
      if (asked++ < denials) throw new Error('denied')
      return 'allowed'
    } finally {
      release?.()
    }
  }
  const cpu = process.cpuUsage()
  const started = performance.now()
  const result = await runtime.run({
    program: program(iterations),
    bindings: [{ global: 'tools', functions: { ask } }],
    durable: {
      onPark: () => {
        parkedCount++
      },
    },
  })
  const used = process.cpuUsage(cpu)
  return {
    cpuS: (used.user + used.system) / 1e6,
    wallS: (performance.now() - started) / 1000,
    parks: parkedCount,
    computeMs: Math.round(result.stats?.computeMs ?? 0),
    outcome: result.error === undefined ? `ok ${JSON.stringify((result.value as { denials: number }).denials)} denials` : `${result.error.kind}: ${result.error.message.slice(0, 140)}`,
  }
}

async function main(): Promise<void> {
  console.log(`replay cost${ITERATIONS === undefined ? '' : ` (${ITERATIONS} iterations)`}: load ${loadavg().map((l) => l.toFixed(1)).join(' ')}; computeMs ${COMPUTE_MS}, parkAfterMs ${PARK_AFTER_MS}`)
  const runtimes: [string, CodeRuntime][] = [
    ['sandbox', createSandboxRuntime({ computeMs: COMPUTE_MS, maxWallMs: 600_000, parkAfterMs: PARK_AFTER_MS, prespawn: 1 })],
    ['inline', createQuickJsRuntime({ computeMs: COMPUTE_MS, maxWallMs: 600_000, parkAfterMs: PARK_AFTER_MS })],
  ]
  for (const [label, runtime] of runtimes) {
    const iterations = ITERATIONS ?? (await calibrate(runtime, 1_500))
    for (const denials of DENIALS) {
      const m = await measure(runtime, iterations, denials)
      console.log(`${label.padEnd(8)} denials ${String(denials).padStart(2)}: server CPU ${m.cpuS.toFixed(1)} s, wall ${m.wallS.toFixed(1)} s, charged ${m.computeMs} ms, parks ${m.parks}; ${m.outcome}`)
    }
    await runtime.dispose()
  }
}

await main()
