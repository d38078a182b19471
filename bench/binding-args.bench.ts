/**
 * The host's stall while a program sends heavy binding arguments (issue 19): the
 * largest event-loop delay of the host (`monitorEventLoopDelay`, 1 ms resolution) while
 * a program in the default Node sandbox repeatedly sends
 * - the worst 8 MiB argument, `[{},{},…]` (2.7 million values): refused in the sandbox's
 *   thread, which counts its values before the host sees it;
 * - the heaviest argument accepted: 100,000 values (`[{},{},…]`), parsed and adopted as
 *   a frozen snapshot on the host (the bridge's snapshot then costs nothing);
 * - a 7.9 MiB string (one value), the largest text accepted;
 * and, side by side, the old path: what the host's thread did with the worst argument
 * before the bound (parse, nesting check, lossless snapshot), timed directly. Beside the
 * largest delay (which on a shared machine also counts the OS scheduling the host late)
 * it prints the longest time the host spent on one message of the program's, timed
 * around `JsonWireEndpoint.receive`.
 *
 * Figures are printed, never asserted. Run: `npm run bench -- binding-args` (or
 * `npx tsx bench/binding-args.bench.ts`).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks'
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
  { name: 'largest accepted text: one 7.9 MiB string', build: "'x'.repeat(7.9 * 1024 * 1024)", repeats: REPEATS },
] as const

/**
 * The host's own work per VM message, timed where it happens: every message a sandbox
 * thread sends is handled by `JsonWireEndpoint.receive` on the host's thread (parse,
 * adopt, validate, dispatch to the binding). Timed by wrapping it, since the largest
 * event-loop delay also counts a loaded machine's scheduling.
 */
let longestReceiveMs = 0
const receive = JsonWireEndpoint.prototype.receive
JsonWireEndpoint.prototype.receive = function timedReceive(this: JsonWireEndpoint, json: string): void {
  const started = performance.now()
  try {
    receive.call(this, json)
  } finally {
    longestReceiveMs = Math.max(longestReceiveMs, performance.now() - started)
  }
}

async function hostStall(build: string, repeats: number): Promise<{ maxDelayMs: number; receiveMs: number; refused: number; accepted: number; wallMs: number }> {
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
  histogram.enable()
  const result = await sandbox.run({
    program: `const arg = ${build}; let refused = 0; for (let i = 0; i < ${repeats}; i++) { try { await tools.take(arg) } catch { refused++ } } return refused`,
    bindings: [{ global: 'tools', functions: { take } }],
  })
  histogram.disable()
  const wallMs = performance.now() - started
  await sandbox.dispose()
  if (result.error !== undefined) throw new Error(`${result.error.kind}: ${result.error.message}`)
  return { maxDelayMs: histogram.max / 1e6, receiveMs: longestReceiveMs, refused: result.value as number, accepted, wallMs }
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

const rows = []
for (const c of CASES) {
  const figures = await hostStall(c.build, c.repeats)
  rows.push({
    case: c.name,
    calls: c.repeats,
    refused: figures.refused,
    'host max event-loop delay (ms)': figures.maxDelayMs,
    'longest host work on one message (ms)': figures.receiveMs,
    'run wall (ms)': figures.wallMs,
  })
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
