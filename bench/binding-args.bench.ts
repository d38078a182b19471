/**
 * The host's stall while a program sends heavy binding arguments (issue 19): the
 * largest event-loop delay of the host (`monitorEventLoopDelay`, 1 ms resolution) while
 * a program in the default Node sandbox repeatedly sends
 * - the worst 8 MiB argument, `[{},{},…]` (2.7 million values): refused in the sandbox's
 *   thread, which counts its values before the host sees it;
 * - the heaviest argument accepted: 100,000 values (`[{},{},…]`), parsed and adopted as
 *   a frozen snapshot on the host (the bridge's snapshot then costs nothing);
 * - a 7.9 MiB string (one value), the largest text accepted;
 * and, side by side, the old paths: the accepted argument parsed into 100,000 distinct
 * objects (as before the host shared one frozen `{}`; sent as `{ }`, which is not shared),
 * and what the host's thread did with the worst argument before the bound (parse, nesting
 * check, lossless snapshot), timed directly. Beside the largest delay (which on a shared
 * machine also counts the OS scheduling the host late) it prints the longest time the host
 * spent on one message of the program's, timed around `JsonWireEndpoint.receive`, and the
 * host's garbage-collector pauses in the window (`PerformanceObserver` 'gc' entries).
 *
 * Figures are printed, never asserted. Run: `npm run bench -- binding-args` (or
 * `npx tsx bench/binding-args.bench.ts`).
 */
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks'
import { createSandboxRuntime } from '../platforms/node/index.js'
import { JsonWireEndpoint } from '../src/code-runtime/json-endpoint.js'
import { MAX_VALUE_DEPTH } from '../src/code-runtime/render.js'
import { adoptParsedJson, snapshotLosslessJson } from '../src/json/lossless.js'
import { nestsDeeperThan } from '../src/json/nesting.js'
import { printTable } from './_stats.js'

const REPEATS = Number(process.env.BENCH_REPEATS ?? 4)

/**
 * One case: the program's argument expression, built once in the VM and sent `repeats`
 * times. The worst argument costs the VM itself seconds to serialize (the run's own
 * compute, in its thread), so it is sent fewer times.
 */
const CASES = [
  { name: 'baseline: a one-value argument', build: '1', repeats: REPEATS },
  { name: 'worst 8 MiB argument: 2.7 M values (refused in the thread)', build: 'new Array(2_690_000).fill({})', repeats: 2 },
  { name: 'heaviest accepted: 100,000 values', build: 'new Array(99_999).fill({})', repeats: REPEATS },
  { name: 'old path: the same, 100,000 distinct objects', build: 'new Array(99_999).fill({})', repeats: REPEATS, distinct: true },
  { name: 'heaviest accepted: 50,000 arrays [[0],[0],…]', build: 'Array.from({ length: 49_999 }, () => [0])', repeats: REPEATS },
  { name: 'largest accepted text: one 7.9 MiB string', build: "'x'.repeat(7.9 * 1024 * 1024)", repeats: REPEATS },
] as const

/**
 * The host's own work per VM message, timed where it happens: every message a sandbox
 * thread sends is handled by `JsonWireEndpoint.receive` on the host's thread (parse,
 * adopt, validate, dispatch to the binding). Timed by wrapping it, since the largest
 * event-loop delay also counts a loaded machine's scheduling.
 */
let longestReceiveMs = 0
/** Set for the old-path case: every `{}` is sent as `{ }`, which the host's parse does not share. */
let distinct = false
const receive = JsonWireEndpoint.prototype.receive
JsonWireEndpoint.prototype.receive = function timedReceive(this: JsonWireEndpoint, json: string): void {
  const text = distinct ? json.replaceAll('{}', '{ }') : json
  const started = performance.now()
  try {
    receive.call(this, text)
  } finally {
    longestReceiveMs = Math.max(longestReceiveMs, performance.now() - started)
  }
}

/** The host's garbage-collector pauses (start, duration, minor or not), as `PerformanceObserver` reports them. */
const gcPauses: { start: number; ms: number; minor: boolean }[] = []
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const kind = (entry as unknown as { detail?: { kind?: number } }).detail?.kind
    gcPauses.push({ start: entry.startTime, ms: entry.duration, minor: kind === constants.NODE_PERFORMANCE_GC_MINOR })
  }
}).observe({ entryTypes: ['gc'] })

interface Stall {
  maxDelayMs: number
  receiveMs: number
  gcMs: number
  gcs: number
  refused: number
  accepted: number
  wallMs: number
}

async function hostStall(build: string, repeats: number): Promise<Stall> {
  const sandbox = createSandboxRuntime({ memoryMb: 256, computeMs: 600_000, maxWallMs: 600_000 })
  await sandbox.warm()
  let accepted = 0
  const take = async (args: unknown) => {
    // What the Code Mode bridge does first with every call's arguments.
    snapshotLosslessJson(args)
    accepted++
  }
  const histogram = monitorEventLoopDelay({ resolution: 1 })
  const started = performance.now()
  longestReceiveMs = 0
  gcPauses.length = 0
  histogram.enable()
  const result = await sandbox.run({
    program: `const arg = ${build}; let refused = 0; for (let i = 0; i < ${repeats}; i++) { try { await tools.take(arg) } catch { refused++ } } return refused`,
    bindings: [{ global: 'tools', functions: { take } }],
  })
  histogram.disable()
  const ended = performance.now()
  // The observer is told of a pause in a later task: let the last ones arrive.
  await new Promise((resolve) => setTimeout(resolve, 20))
  const pauses = gcPauses.filter((pause) => pause.start >= started && pause.start <= ended)
  await sandbox.dispose()
  if (result.error !== undefined) throw new Error(`${result.error.kind}: ${result.error.message}`)
  const gcMs = pauses.reduce((most, pause) => Math.max(most, pause.ms), 0)
  return { maxDelayMs: histogram.max / 1e6, receiveMs: longestReceiveMs, gcMs, gcs: pauses.length, refused: result.value as number, accepted, wallMs: ended - started }
}

/** The old path, timed on this thread: what the host did with the worst argument before the bound. */
function oldPath(): Record<string, number> {
  const text = `{"type":"call","id":1,"global":"tools","name":"take","args":[${new Array(2_690_000).fill('{}').join(',')}]}`
  let t = performance.now()
  const message = JSON.parse(text) as { args: unknown }
  const parse = performance.now() - t
  t = performance.now()
  nestsDeeperThan(message.args, MAX_VALUE_DEPTH)
  const nesting = performance.now() - t
  t = performance.now()
  snapshotLosslessJson(message.args)
  const snapshot = performance.now() - t
  // The new host path for the heaviest accepted argument, for scale.
  const accepted = `[${new Array(99_999).fill('{}').join(',')}]`
  t = performance.now()
  adoptParsedJson(JSON.parse(accepted))
  const acceptedHost = performance.now() - t
  return { chars: text.length, parse, nesting, snapshot, acceptedHost }
}

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2)
const rows = []
// Every case once a round, the old path interleaved with the new (one figure each is noise on a
// shared machine); the refused 8 MiB case costs the VM seconds a call, so it runs in the first round only.
for (let round = 0; round < ROUNDS; round++) {
  for (const c of CASES) {
    if (round > 0 && c.repeats === 2) continue
    distinct = 'distinct' in c && c.distinct
    const figures = await hostStall(c.build, c.repeats)
    distinct = false
    rows.push({
      case: c.name,
      calls: c.repeats,
      refused: figures.refused,
      'host max event-loop delay (ms)': figures.maxDelayMs,
      'longest host work on one message (ms)': figures.receiveMs,
      'longest host GC pause (ms)': figures.gcMs,
      'host GC pauses': figures.gcs,
      'run wall (ms)': figures.wallMs,
    })
  }
}
printTable(rows)

const old = oldPath()
console.log(`\nthe old path, on the host's thread, for one ${(old.chars! / 1024 / 1024).toFixed(1)} MiB argument of 2.7 M values:`)
printTable([
  {
    'JSON.parse (ms)': old.parse!,
    'nesting check (ms)': old.nesting!,
    'lossless snapshot (ms)': old.snapshot!,
    'total (ms)': old.parse! + old.nesting! + old.snapshot!,
    'new: parse + adopt of 100,000 values (ms)': old.acceptedHost!,
  },
])
