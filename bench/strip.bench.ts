/**
 * Stripping TypeScript under its work bound (issue 19): how long `stripTypeScript`
 * takes on the shapes that made sucrase backtrack exponentially, at growing program
 * sizes up to the cap (the time must grow linearly: the ms per KiB column stays flat),
 * and what the host's event loop sees while `createSandboxRuntime` strips the largest
 * accepted programs in its thread, next to the same strip on the host's own thread
 * (where `createQuickJsRuntime` and the trusted worker runtimes strip).
 *
 * Figures only, no assertions. Target: host stall ≤ 20 ms for the sandbox runtime.
 * Run: `npm run bench -- strip` (or `npx tsx bench/strip.bench.ts`).
 */
import { monitorEventLoopDelay, performance as nodePerformance } from 'node:perf_hooks'
import { createSandboxRuntime } from '../platforms/node/index.js'
import { MAX_PROGRAM_CHARS, stripTypeScript } from '../src/code-runtime/strip.js'
import { summarize } from './_stats.js'

const castChain = (levels: number, inner = 'x') => '<T>('.repeat(levels) + inner + ')'.repeat(levels)
function defaultArrows(levels: number): string {
  let source = '0'
  for (let i = 0; i < levels; i++) source = `(a${i} = ${source}) => 0`
  return source
}
const fill = (line: string, chars: number) => line.repeat(Math.max(1, Math.floor(chars / line.length)))

/** Program shapes, each built to about `chars` characters. */
const SHAPES: ReadonlyArray<readonly [string, (chars: number) => string]> = [
  ['real-looking code (typed arrows, generics)', (chars) => fill('const f = async (a: number, b: { c: string[] }): Promise<void> => { await g<A>(a) }\n', chars)],
  ['dense legit ambiguity (default arrows)', (chars) => fill('const h = (a = 1, b = (c = 2) => c) => a\n', chars)],
  ['`<T>(` × 14 on every line', (chars) => fill(`y = ${castChain(14)}\n`, chars)],
  ['default arrows × 12 on every line', (chars) => fill(`y = ${defaultArrows(12)}\n`, chars)],
  ['`<T>(` × 40 once, then filler', (chars) => `return ${castChain(40)}\n${fill('y = 1\n', chars - 200)}`],
  ['`<T>(` × 25 around one long string', (chars) => `return ${castChain(25, `"${'a'.repeat(Math.max(1, chars - 200))}"`)}`],
  ['brackets 250 deep, repeated', (chars) => fill(`y = ${'['.repeat(250)}${']'.repeat(250)}\n`, chars)],
]
const SIZES = [4 * 1024, 32 * 1024, 128 * 1024, MAX_PROGRAM_CHARS - 64]

function stripTimes(): void {
  console.log(`stripTypeScript, host thread: median of 3 (ms), and ms per KiB (flat = linear); cap ${MAX_PROGRAM_CHARS} characters`)
  console.log(`  ${'shape'.padEnd(44)} ${SIZES.map((size) => `${(size / 1024).toFixed(0)} KiB`.padStart(16)).join('')}   outcome at the cap`)
  // Warm sucrase's JIT once, as a long-lived host would be.
  stripTypeScript(fill('const a: number = 1\n', 64 * 1024))
  for (const [name, build] of SHAPES) {
    const cells: string[] = []
    let outcome = ''
    for (const size of SIZES) {
      const program = build(size).slice(0, MAX_PROGRAM_CHARS)
      const times: number[] = []
      for (let i = 0; i < 3; i++) {
        const started = performance.now()
        const out = stripTypeScript(program)
        times.push(performance.now() - started)
        outcome = out.ok ? 'stripped' : out.message.replace(/^SyntaxError: /, '').slice(0, 46)
      }
      const median = summarize(times).median
      cells.push(`${median.toFixed(1)} (${(median / (program.length / 1024)).toFixed(2)})`.padStart(16))
    }
    console.log(`  ${name.padEnd(44)} ${cells.join('')}   ${outcome}`)
  }
}

/** The host's event-loop delay while `during` runs: max from perf_hooks, and the longest gap of a 2 ms interval. */
async function hostDelay(during: () => Promise<unknown>): Promise<{ readonly histogramMax: number; readonly probeMax: number; readonly activeMs: number }> {
  const utilization = nodePerformance.eventLoopUtilization()
  const histogram = monitorEventLoopDelay({ resolution: 1 })
  histogram.enable()
  let last = performance.now()
  let probeMax = 0
  const tick = () => {
    const now = performance.now()
    probeMax = Math.max(probeMax, now - last)
    last = now
  }
  const timer = setInterval(tick, 2)
  try {
    await during()
    tick()
  } finally {
    clearInterval(timer)
    histogram.disable()
  }
  // The host thread's time inside callbacks (event-loop utilization); a CPU profile separates its own work from waiting for a core.
  const activeMs = nodePerformance.eventLoopUtilization(utilization).active
  return { histogramMax: histogram.max / 1e6, probeMax, activeMs }
}

async function hostStall(): Promise<void> {
  console.log("\nhost event-loop delay while the largest accepted programs are stripped (3 runs each; target ≤ 20 ms); 'host busy' is the host thread's event-loop utilization (time inside callbacks: on a saturated machine it includes waiting for a core, so read it beside the floor row)")
  // One thread, booted before measuring: the figures are the run's, not the pool spawning threads.
  const runtime = createSandboxRuntime({ memoryMb: 32, computeMs: 60_000, prespawn: 1, maxConcurrentRuns: 1 })
  await runtime.warm()
  await runtime.run({ program: 'return 1', bindings: [] })
  // Runnable TypeScript at the cap: distinct typed functions, none called, then a return.
  const legit: string[] = []
  for (let i = 0, size = 0; size < MAX_PROGRAM_CHARS - 200; i++) {
    const line = `const f${i} = async (a: number, b: { c: string[] }): Promise<number> => { return a + b.c.length }\n`
    legit.push(line)
    size += line.length
  }
  legit.push('return 1')
  const programs: ReadonlyArray<readonly [string, string]> = [
    ['`return 1` (the floor: no stripping work)', 'return 1'],
    ['legit code at the cap (runs)', legit.join('')],
    ['`<T>(` × 14 lines at the cap (refused)', SHAPES[2]![1](MAX_PROGRAM_CHARS - 64)],
    ['the 158-byte `<T>(` × 30 (refused)', `return ${castChain(30)}`],
  ]
  try {
    for (const [name, program] of programs) {
      const sandbox: Array<{ histogramMax: number; probeMax: number; activeMs: number }> = []
      const onHost: Array<{ histogramMax: number; probeMax: number; activeMs: number }> = []
      let outcome = ''
      for (let i = 0; i < 3; i++) {
        sandbox.push(
          await hostDelay(async () => {
            const result = await runtime.run({ program, bindings: [] })
            outcome = result.error === undefined ? 'ran' : `${result.error.kind}`
          }),
        )
        onHost.push(
          await hostDelay(async () => {
            // What a host pays when it strips on its own thread (createQuickJsRuntime, the trusted worker runtimes).
            await new Promise((resolve) => setTimeout(resolve, 5))
            stripTypeScript(program)
            await new Promise((resolve) => setTimeout(resolve, 5))
          }),
        )
      }
      const each = (rows: typeof sandbox) => rows.map((row) => Math.max(row.histogramMax, row.probeMax))
      const cell = (rows: typeof sandbox) =>
        `delay max ${Math.max(...each(rows)).toFixed(1).padStart(6)} ms, median ${summarize(each(rows)).median.toFixed(1).padStart(6)} ms; host busy ${summarize(rows.map((row) => row.activeMs)).median.toFixed(1).padStart(6)} ms`
      console.log(`  ${name.padEnd(44)} sandbox (strip in its thread): ${cell(sandbox)} [${outcome}]\n  ${''.padEnd(44)} strip on the host thread:      ${cell(onHost)}`)
    }
  } finally {
    await runtime.dispose()
  }
}

if (process.env.STRIP_BENCH_TIMES !== "0") stripTimes()
await hostStall()
