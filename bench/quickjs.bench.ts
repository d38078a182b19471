/**
 * QuickJS runtime figures in Node: a cold `return 1` run (a fresh wasm instance, memory,
 * runtime, context and sandbox bootstrap per run, always), and the cost of a binding
 * round trip.
 *
 * Two arrival patterns, because the runtime builds the NEXT run's sandbox in the
 * background once a run is over (`prewarm`, default on):
 * - "idle gap": each run starts after the host was idle for a few ms, as requests reach
 *   a server; the run finds its sandbox built and pays only for its program. Only the
 *   run is timed.
 * - "back-to-back": each run starts the moment the previous one returned, leaving no
 *   idle time; the run builds its own sandbox, so this is the full cost of a fresh VM.
 *
 * Run: `npx tsx bench/quickjs.bench.ts`
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createQuickJsRuntime } from '../platforms/quickjs/index.js'

const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))
/** Idle time before each "idle gap" run: enough for the background build on this machine. */
const IDLE_MS = 10

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!
}

async function coldRuns(label: string, options: Parameters<typeof createQuickJsRuntime>[0], count: number, idleMs: number): Promise<void> {
  const runtime = createQuickJsRuntime(options)
  for (let i = 0; i < 10; i++) await runtime.run({ program: 'return 1', bindings: [] })
  const times: number[] = []
  for (let i = 0; i < count; i++) {
    if (idleMs > 0) await sleep(idleMs)
    const start = performance.now()
    const result = await runtime.run({ program: 'return 1', bindings: [] })
    times.push(performance.now() - start)
    if (result.value !== 1) throw new Error(`unexpected result ${JSON.stringify(result)}`)
  }
  times.sort((a, b) => a - b)
  console.log(`cold \`return 1\` (${label}): p50 ${percentile(times, 50).toFixed(2)} ms, p95 ${percentile(times, 95).toFixed(2)} ms (n=${count}; target p50 <= 2 ms)`)
  await runtime.dispose()
}

async function bindingCalls(calls: number): Promise<void> {
  const runtime = createQuickJsRuntime({ wasmModule })
  const bindings = [{ global: 'tools', functions: { inc: async (args: unknown) => (args as { i: number }).i + 1 } }]
  const program = `let s = 0; for (let i = 0; i < ${calls}; i++) s += await tools.inc({ i }); return s`
  await runtime.run({ program, bindings })
  const start = performance.now()
  const result = await runtime.run({ program, bindings })
  const ms = performance.now() - start
  if (typeof result.value !== 'number') throw new Error(`unexpected result ${JSON.stringify(result)}`)
  console.log(`${calls} sequential binding calls: ${ms.toFixed(1)} ms total, ${((ms * 1000) / calls).toFixed(1)} µs/call (incl. one cold run)`)
  await runtime.dispose()
}

await coldRuns(`precompiled wasmModule, idle gap ${IDLE_MS} ms, prewarm`, { wasmModule }, 200, IDLE_MS)
await coldRuns(`precompiled wasmModule, idle gap ${IDLE_MS} ms, prewarm off`, { wasmModule, prewarm: false }, 200, IDLE_MS)
await coldRuns('precompiled wasmModule, back-to-back', { wasmModule }, 200, 0)
await coldRuns('variant loads its own wasm, back-to-back', {}, 100, 0)
await bindingCalls(1_000)
