/**
 * Durable runs' figures (issue 21, item 9; docs/durability.md "Figures"): what the run
 * journal costs, how long a run takes to park and to resume, and how many bytes a parked
 * run is. Each contender runs in THIS process beside its baseline, in interleaved rounds
 * (the order flips each round), because this machine's load moves between runs.
 *
 * 1. Journal cost per sub-call: N sequential binding calls with the journal (parking on,
 *    the default) against the same runtime kind created with `parking: false` (no
 *    journal), on the sandbox (QuickJS in Node threads) and on inline QuickJS. Per-call
 *    figures are the host's interval between consecutive binding invocations (a whole
 *    round trip: VM → host → VM), and wall and CPU time (`process.cpuUsage`, every thread)
 *    per call; the cost is the median, over rounds, of the paired per-round differences.
 *    On a loaded machine the round trip's noise (tens of µs) hides a few µs, so the
 *    journal's own operations (hash the posted call, keep it and the reply) are also timed
 *    alone. Target ≤ 5 µs. The same for 100,000 clock and randomness readings
 *    (`Date.now()` + `Math.random()`), in ns per reading.
 * 2. Park and resume of a 100-call run: the program makes 100 calls, then awaits `ask`
 *    (which holds the wall clock, as the approval stage does). Park: from the hold to
 *    `durable.onPark`, less `parkAfterMs`. Resume: from the decision to the run's result
 *    (a fresh VM replays the 100 calls, then finishes), against the same continuation in
 *    a runtime that never parks. Also a resume from the state stored as JSON, in a run
 *    started with `durable.resume` (a process that picked it up from a store). Target
 *    resume ≤ 20 ms.
 * 3. Bytes per parked run: `JSON.stringify(state)` for 20 and 100 calls with small
 *    arguments (target ≤ 64 KiB for 20); and the record `createToolRuntime({ store })`
 *    writes to `createFileStore(dir)` for one parked 20-call run: its size on disk, and
 *    its write time (the real write, and repeated writes of the same record).
 *
 * 4. PostgreSQL beside the file store (`toolyard/postgres` on a throwaway local cluster,
 *    test/support/postgres.ts; skipped with its reason where the binaries are missing):
 *    compare-and-set write p50/p99 (get, then put with ifVersion, of a 2 KiB value; the
 *    two stores in interleaved rounds), and the rows and bytes one parked 20-call run_code
 *    leaves in the table (the runtime's records only: `npm start` adds its run record,
 *    event snapshot and approval); and decide → answered across two brokers on two pools
 *    (the call waiting on A, the decision taken on B), with the LISTEN wake-up and without;
 *    and a run's event frames appended on A → heard by a follower on B (src/durable/_live-events.ts).
 *
 * Run: `npm run bench:durable` (or `npx tsx bench/durable-runs.bench.ts`). Figures are
 * printed, never asserted. `BENCH_ROUNDS` (default 15) sets the rounds of 1 and 2;
 * `BENCH_SECTIONS=2,3` runs only those sections (3 needs 2's states; 4 runs alone); `BENCH_CONTROL=1`
 * makes the baseline journal too (an A/A control: the cost columns then show the noise).
 *
 * @module
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createFileStore, createSandboxRuntime } from '../platforms/node/index.js'
import { createPostgresStore } from '../platforms/postgres/index.js'
import { createQuickJsRuntime } from '../platforms/quickjs/index.js'
import pg from 'pg'
import { postgresSkipReason, startPostgres } from '../test/support/postgres.js'
import type { CodeBindingCallOptions, CodeRunRequest, CodeRuntime, ParkedRunState } from '../src/code-runtime/contract.js'
import type { DurableStore } from '../src/durable/store.js'
import { createApprovalBroker } from '../src/approvals/index.js'
import { createLiveEvents } from '../src/durable/_live-events.js'
import { createRunEventLog } from '../src/durable/run-table.js'
import { createToolRuntime } from '../src/registry/runtime.js'
import { defineTool } from '../src/schema/define-tool.js'
import type { ApprovalHandler } from '../src/types.js'
import { callKey, newJournal } from '../src/code-runtime/journal.js'
import { printTable, timePerCallInterleaved, type TableRow } from './_stats.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15)
const CONTROL = process.env.BENCH_CONTROL === '1'
const CALLS = 2_000
const READS = 100_000
const PARK_CALLS = 100
const PARK_AFTER_MS = 10
/** Idle time before each timed run of section 1 (a background VM build finishes in it). */
const IDLE_MS = 30
/** Time from the park (or the hold) to the decision in section 2: a person's delay, shortened. */
const DECISION_AFTER_MS = Number(process.env.BENCH_DECISION_MS ?? 100)

const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
const loadNote = () => `load average ${loadavg().map((n) => n.toFixed(1)).join(' / ')} (1 / 5 / 15 min) on ${cpus().length} cores`

/** Nearest-rank percentile. */
function pct(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}
const median = (samples: readonly number[]) => pct(samples, 50)

async function until(check: () => boolean, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time')
    await sleep(1)
  }
}

/** A runtime kind: one with the journal (parking on), one without (`parking: false`). */
interface Kind {
  readonly name: string
  readonly make: (parking: boolean) => CodeRuntime
}

const KINDS: readonly Kind[] = [
  {
    name: 'sandbox (Node threads)',
    make: (parking) => createSandboxRuntime({ memoryMb: 32, computeMs: 60_000, ...(parking ? { parkAfterMs: PARK_AFTER_MS } : { parking: false }) }),
  },
  {
    name: 'inline QuickJS',
    make: (parking) => createQuickJsRuntime({ wasmModule, memoryMb: 32, computeMs: 60_000, ...(parking ? { parkAfterMs: PARK_AFTER_MS } : { parking: false }) }),
  },
]

async function valueOf(pending: Promise<{ value?: unknown; error?: { kind: string; message: string } }>): Promise<unknown> {
  const result = await pending
  if (result.error !== undefined) throw new Error(`${result.error.kind}: ${result.error.message}`)
  return result.value
}

/** CPU ms this process spent (every thread: the sandbox's threads count too) while `body` ran. */
async function withCpu<T>(body: () => Promise<T>): Promise<{ value: T; cpuMs: number; ms: number }> {
  // An idle gap first: a runtime builds its next VM in the background after a run, and that work belongs to no contender's window.
  await sleep(IDLE_MS)
  const cpu = process.cpuUsage()
  const start = performance.now()
  const value = await body()
  const ms = performance.now() - start
  const used = process.cpuUsage(cpu)
  return { value, cpuMs: (used.user + used.system) / 1000, ms }
}

/** One run of `CALLS` sequential calls: its wall and CPU ms and the host's intervals between consecutive calls (µs). */
async function sequentialCalls(runtime: CodeRuntime): Promise<{ ms: number; cpuMs: number; intervals: number[] }> {
  const stamps: number[] = []
  const functions = {
    x: async (args: unknown) => {
      stamps.push(performance.now())
      return (args as { i: number }).i
    },
  }
  const program = `let s = 0\nfor (let i = 0; i < ${CALLS}; i++) s += await tools.x({ i })\nreturn s`
  const { value, cpuMs, ms } = await withCpu(() => valueOf(runtime.run({ program, bindings: [{ global: 'tools', functions }] })))
  if (value !== (CALLS * (CALLS - 1)) / 2) throw new Error(`unexpected ${JSON.stringify(value)}`)
  const intervals: number[] = []
  for (let i = 1; i < stamps.length; i++) intervals.push((stamps[i]! - stamps[i - 1]!) * 1000)
  return { ms, cpuMs, intervals }
}

/** One run reading the clock and randomness `READS` times: its wall and CPU ms. */
async function readings(runtime: CodeRuntime): Promise<{ ms: number; cpuMs: number }> {
  const program = `let s = 0\nfor (let i = 0; i < ${READS / 2}; i++) { s += Date.now(); s += Math.random() }\nreturn s > 0`
  const { value, cpuMs, ms } = await withCpu(() => valueOf(runtime.run({ program, bindings: [] })))
  if (value !== true) throw new Error(`unexpected ${JSON.stringify(value)}`)
  return { ms, cpuMs }
}

/** Runs `body(journal runtime, true)` and `body(no-journal runtime, false)` in interleaved rounds (order flipped each round), after one warm-up each. */
async function interleaved<T>(kind: Kind, body: (runtime: CodeRuntime, journal: boolean) => Promise<T>): Promise<{ on: T[]; off: T[] }> {
  const on = kind.make(true)
  // BENCH_CONTROL=1: an A/A control (both contenders journal): what the "cost" columns read when there is none, the noise floor.
  const off = kind.make(CONTROL)
  try {
    await body(on, true)
    await body(off, false)
    const out = { on: [] as T[], off: [] as T[] }
    for (let r = 0; r < ROUNDS; r++) {
      if (r % 2 === 0) {
        out.on.push(await body(on, true))
        out.off.push(await body(off, false))
      } else {
        out.off.push(await body(off, false))
        out.on.push(await body(on, true))
      }
    }
    return out
  } finally {
    await Promise.all([on.dispose(), off.dispose()])
  }
}

async function journalCost(): Promise<void> {
  const rows: TableRow[] = []
  for (const kind of KINDS) {
    const calls = await interleaved(kind, sequentialCalls)
    const per = (runs: readonly { ms: number; cpuMs: number }[], key: 'ms' | 'cpuMs') => runs.map((r) => (r[key] * 1000) / CALLS)
    const paired = (key: 'ms' | 'cpuMs') => per(calls.on, key).map((v, i) => v - per(calls.off, key)[i]!)
    for (const [label, runs, on] of [
      ['journal (parking on)', calls.on, true],
      ['no journal (parking: false)', calls.off, false],
    ] as const) {
      const intervals = runs.flatMap((r) => r.intervals)
      rows.push({
        runtime: kind.name,
        contender: label,
        'interval p50 µs': pct(intervals, 50),
        'interval p99 µs': pct(intervals, 99),
        'wall µs/call': median(per(runs, 'ms')),
        'CPU µs/call': median(per(runs, 'cpuMs')),
        'cost wall µs/call': on ? median(paired('ms')) : '',
        'cost CPU µs/call': on ? median(paired('cpuMs')) : '',
      })
    }
  }
  // What the journal itself does per sub-call, without the round trip's noise: the VM hashes
  // the call it posts (callKey) and keeps the key, and keeps the reply it receives.
  let journal = newJournal()
  let n = 0
  const journalOps = () => {
    const id = ++n
    journal.calls.push(callKey(`{"type":"call","id":${id},"global":"tools","name":"x","args":{"i":${id}}}`))
    journal.inputs.push(`{"type":"reply","id":${id},"ok":true,"value":${id}}`)
    if (n % CALLS === 0) journal = newJournal()
  }
  const bareOps = () => {
    const id = ++n
    void `{"type":"call","id":${id},"global":"tools","name":"x","args":{"i":${id}}}`.length
    void `{"type":"reply","id":${id},"ok":true,"value":${id}}`.length
  }
  const [withOps, withoutOps] = timePerCallInterleaved([journalOps, bareOps], CALLS * 10, ROUNDS * 4)
  rows.push({ runtime: 'journal operations alone (host V8)', contender: 'callKey + 2 pushes per call', 'interval p50 µs': '', 'interval p99 µs': '', 'wall µs/call': '', 'CPU µs/call': '', 'cost wall µs/call': (median(withOps!) - median(withoutOps!)) / 1000, 'cost CPU µs/call': '' })
  printTable(
    rows,
    `1a. Journal cost per sub-call: ${CALLS.toLocaleString('en')} sequential binding calls, ${ROUNDS} interleaved rounds (target ≤ 5 µs/call); intervals: host time between consecutive calls, all rounds; wall and CPU (process, all threads): median over rounds of run / N; cost: median of the paired per-round differences; ${loadNote()}`,
  )

  const readRows: TableRow[] = []
  for (const kind of KINDS) {
    const runs = await interleaved(kind, readings)
    const ns = (ms: number) => (ms * 1e6) / READS
    const paired = (key: 'ms' | 'cpuMs') => runs.on.map((r, i) => ns(r[key]) - ns(runs.off[i]![key]))
    for (const [label, list, on] of [
      ['journal (parking on)', runs.on, true],
      ['no journal (parking: false)', runs.off, false],
    ] as const) {
      readRows.push({
        runtime: kind.name,
        contender: label,
        'run ms p50': median(list.map((r) => r.ms)),
        'run ms p99': pct(list.map((r) => r.ms), 99),
        'CPU ns/reading p50': median(list.map((r) => ns(r.cpuMs))),
        'cost wall ns/reading': on ? median(paired('ms')) : '',
        'cost CPU ns/reading': on ? median(paired('cpuMs')) : '',
      })
    }
  }
  printTable(readRows, `1b. Journal cost per clock/randomness reading: ${READS.toLocaleString('en')} readings (Date.now() + Math.random()), ${ROUNDS} interleaved rounds; ${loadNote()}`)
}

/** Bindings of the park/resume runs: `x` answers at once; `ask` holds the wall clock until `decide()`. */
function parkBindings() {
  const waiting: { resolve: (value: unknown) => void; heldAt: number }[] = []
  const functions = {
    x: async (args: unknown) => ({ ok: (args as { i: number }).i }),
    ask: async (_args: unknown, options?: CodeBindingCallOptions) => {
      const heldAt = performance.now()
      const release = options?.holdWallClock?.()
      try {
        return await new Promise((resolve, reject) => {
          waiting.push({ resolve, heldAt })
          options?.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true })
        })
      } finally {
        release?.()
      }
    },
  }
  return { waiting, bindings: [{ global: 'tools', functions }] }
}

const parkProgram = (calls: number) =>
  `let n = 0\nfor (let i = 0; i < ${calls}; i++) n += (await tools.x({ i, name: 'file-' + i + '.txt' })).ok\nconst answer = await tools.ask({ q: 'go on?' })\nreturn { n, answer }`

interface ParkSample {
  /** Hold → onPark, less parkAfterMs (parking runtime only). */
  readonly parkMs?: number
  readonly decideToResultMs: number
  readonly state?: ParkedRunState
}

/**
 * One run of `calls` calls then `ask`. Parking runtime: waits for onPark, then decides.
 * Baseline: waits parkAfterMs past the hold, then `DECISION_AFTER_MS` more, then decides;
 * a run resumed from `resume` (already parked) waits `DECISION_AFTER_MS` after its call.
 */
async function parkRun(runtime: CodeRuntime, parking: boolean, calls: number, resume?: ParkedRunState): Promise<ParkSample> {
  const b = parkBindings()
  let parkedAt: number | undefined
  let state: ParkedRunState | undefined
  const durable: CodeRunRequest['durable'] = {
    onPark: (s) => {
      parkedAt = performance.now()
      // A copy now, as a store writes it: the object handed to onPark is not a snapshot frozen in time (see docs/durability.md "Figures").
      state = JSON.parse(JSON.stringify(s)) as ParkedRunState
    },
    ...(resume === undefined ? {} : { resume }),
  }
  const pending = runtime.run({ program: parkProgram(calls), bindings: b.bindings, durable })
  await until(() => b.waiting.length === 1)
  const { heldAt, resolve } = b.waiting[0]!
  if (parking && resume === undefined) await until(() => parkedAt !== undefined)
  else if (resume === undefined) await sleep(PARK_AFTER_MS)
  // A person takes seconds: by the decision, the runtime has built its next VM in the background.
  await sleep(DECISION_AFTER_MS)
  const decided = performance.now()
  resolve('yes')
  const value = (await valueOf(pending)) as { n: number; answer: string }
  const decideToResultMs = performance.now() - decided
  if (value.n !== (calls * (calls - 1)) / 2 || value.answer !== 'yes') throw new Error(`unexpected ${JSON.stringify(value)}`)
  return {
    ...(parkedAt === undefined ? {} : { parkMs: parkedAt - heldAt - PARK_AFTER_MS }),
    decideToResultMs,
    ...(state === undefined ? {} : { state }),
  }
}

async function parkAndResume(): Promise<ParkedRunState[]> {
  const rows: TableRow[] = []
  const states: ParkedRunState[] = []
  for (const kind of KINDS) {
    const runs = await interleaved(kind, (runtime, parking) => parkRun(runtime, parking, PARK_CALLS))
    // The resume of a stored state: JSON text, a new run() with durable.resume, on a fresh runtime.
    const stored = JSON.stringify(runs.on.at(-1)!.state)
    const fresh = kind.make(true)
    const fromStore: number[] = []
    try {
      await parkRun(fresh, true, PARK_CALLS, JSON.parse(stored) as ParkedRunState)
      for (let r = 0; r < ROUNDS; r++) fromStore.push((await parkRun(fresh, true, PARK_CALLS, JSON.parse(stored) as ParkedRunState)).decideToResultMs)
    } finally {
      await fresh.dispose()
    }
    const park = runs.on.map((s) => s.parkMs!)
    const resume = runs.on.map((s) => s.decideToResultMs)
    const base = runs.off.map((s) => s.decideToResultMs)
    rows.push(
      { runtime: kind.name, measure: 'park: hold → onPark, less parkAfterMs', 'p50 ms': median(park), 'p99 ms': pct(park, 99), 'vs baseline p50 ms': '' },
      { runtime: kind.name, measure: 'resume: decide → result (replays 100 calls)', 'p50 ms': median(resume), 'p99 ms': pct(resume, 99), 'vs baseline p50 ms': median(resume) - median(base) },
      { runtime: kind.name, measure: 'resume from stored JSON (durable.resume)', 'p50 ms': median(fromStore), 'p99 ms': pct(fromStore, 99), 'vs baseline p50 ms': median(fromStore) - median(base) },
      { runtime: kind.name, measure: 'baseline: decide → result, parking: false', 'p50 ms': median(base), 'p99 ms': pct(base, 99), 'vs baseline p50 ms': '' },
    )
    states.push(runs.on.at(-1)!.state!)
  }
  printTable(rows, `2. Park and resume of a ${PARK_CALLS}-call run (parkAfterMs ${PARK_AFTER_MS}, decision ${DECISION_AFTER_MS} ms after the park), ${ROUNDS} interleaved rounds (target resume ≤ 20 ms); ${loadNote()}`)
  return states
}


/** The size of a parked state, whole and by part (UTF-16 code units of its JSON, and its UTF-8 bytes). */
function sizeRow(runtime: string, calls: number, state: ParkedRunState): TableRow {
  const json = JSON.stringify(state)
  const j = state.vm.journal
  return {
    runtime,
    calls: String(calls),
    'JSON chars': json.length,
    'UTF-8 KiB': Buffer.byteLength(json) / 1024,
    'journal inputs chars': JSON.stringify(j.inputs).length,
    'journal calls chars': JSON.stringify(j.calls).length,
    'journal reads chars': JSON.stringify(j.reads).length + j.ops.length,
    'bytes per call': Math.round(Buffer.byteLength(json) / calls),
  }
}

/** A {@link DurableStore} that times its `put`s of run records (`runs/…`): the real write of a park. */
function timedStore(inner: DurableStore, writes: { key: string; ms: number; chars: number }[]): DurableStore {
  return {
    get: (key) => inner.get(key),
    delete: (key, options) => inner.delete(key, options),
    list: (prefix, options) => inner.list(prefix, options),
    async put(key, value, options) {
      const start = performance.now()
      const result = await inner.put(key, value, options)
      if (key.startsWith('runs/')) writes.push({ key, ms: performance.now() - start, chars: value.length })
      return result
    },
  } as DurableStore
}

/** Sizes on disk of the file store's value files whose key starts with `prefix` (file names are the key in hex). */
function filesOf(dir: string, prefix: string): { key: string; bytes: number }[] {
  const out: { key: string; bytes: number }[] = []
  for (const name of readdirSync(dir)) {
    const hex = /^((?:[0-9a-f]{2})+)\.v$/.exec(name)?.[1]
    if (hex === undefined) continue
    const key = hex.replace(/../g, (h) => String.fromCharCode(parseInt(h, 16)))
    if (key.startsWith(prefix)) out.push({ key, bytes: statSync(join(dir, name)).size })
  }
  return out
}

/** One parked 20-call `run_code` through `createToolRuntime({ store: createFileStore(dir) })`: the record's size on disk and its write time. */
async function fileStoreRecord(): Promise<TableRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'toolyard-durable-bench-'))
  try {
    return await parkedRecord(createFileStore(dir), () => {
      const bytes = filesOf(dir, 'runs/')[0]?.bytes ?? Number.NaN
      return Promise.resolve({ measure: 'run record on disk (runs/<id>), 20 calls', value: `${bytes} bytes (${(bytes / 1024).toFixed(1)} KiB)` })
    })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Parks one 20-call `run_code` on `inner`, measures what `footprint` says of the store at the park, then finishes it. */
async function parkedRecord(inner: DurableStore, footprint: () => Promise<TableRow>): Promise<TableRow[]> {
  const writes: { key: string; ms: number; chars: number }[] = []
  const store = timedStore(inner, writes)
  const codeRuntime = createSandboxRuntime({ memoryMb: 32, parkAfterMs: PARK_AFTER_MS })
  const asked: ((allow: boolean) => void)[] = []
  const approval: ApprovalHandler = () => new Promise<boolean>((resolve) => asked.push(resolve))
  const runtime = createToolRuntime({ mode: 'code', codeRuntime, store, approval })
  try {
    runtime.register(
      defineTool({
        name: 'read',
        description: 'Reads a file (a stand-in: answers at once).',
        parameters: { i: { type: 'number', required: true }, name: { type: 'string', required: true } },
        output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
        execute: async (args) => `contents of ${args.name}`,
      }),
    )
    runtime.register(
      defineTool({
        name: 'publish',
        description: 'Publishes (a person approves first).',
        parameters: { count: { type: 'number', required: true } },
        output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
        execute: async (args) => `published ${args.count}`,
      }),
    )
    runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'publish' ? { kind: 'ask', reason: 'it publishes' } : decision))
    const code = `const seen = []\nfor (let i = 0; i < 20; i++) seen.push(await tools.read({ i, name: 'file-' + i + '.txt' }))\nreturn await tools.publish({ count: seen.length })`
    const pending = runtime.execute({ callId: 'bench-run', name: 'run_code', arguments: { code, description: 'reads 20 files, then publishes' }, signal: new AbortController().signal })
    await until(() => writes.length === 1 && asked.length === 1)
    await sleep(50)
    const footprintRow = await footprint()
    const record = (await store.get(writes[0]!.key))!.value
    asked[0]!(true)
    const result = await pending
    if (result.isError) throw new Error(result.error.message)
    // The same record written again and again (what each park of a run costs the store).
    const again: number[] = []
    for (let i = 0; i < 50; i++) {
      const start = performance.now()
      await store.put('bench/record', record)
      again.push(performance.now() - start)
    }
    return [
      footprintRow,
      { measure: 'record text', value: `${record.length} chars` },
      { measure: 'its write at the park', value: `${writes[0]!.ms.toFixed(2)} ms` },
      { measure: 'the same record written 50 times more', value: `p50 ${pct(again, 50).toFixed(2)} ms, p99 ${pct(again, 99).toFixed(2)} ms` },
    ]
  } finally {
    await runtime.dispose()
    await codeRuntime.dispose()
  }
}

/** Two approval brokers on two pools: from B's decide() to A's waiting handler answering, with the LISTEN wake-up and with polling only. */
async function decideAcross(url: string): Promise<TableRow[]> {
  const rows: TableRow[] = []
  for (const [label, watch] of [['LISTEN/NOTIFY wake-up (poll every 250 ms as fallback)', true], ['polling only (every 250 ms)', false]] as const) {
    const pools = [new pg.Pool({ connectionString: url, max: 4 }), new pg.Pool({ connectionString: url, max: 4 })]
    // Without connect(), the store cannot LISTEN: the broker polls only.
    const clientOf = (pool: pg.Pool) => (watch ? pool : { query: (text: string, values?: unknown[]) => pool.query(text, values) })
    const [a, b] = pools.map((pool) => createApprovalBroker({ store: createPostgresStore({ pool: clientOf(pool), table: 'bench_decide', log: () => undefined }) }))
    const samples: number[] = []
    try {
      for (let i = 0; i < ROUNDS * 2; i++) {
        const answered = Promise.resolve(a!.handler({ execution: { callId: `bench-${watch}-${i}`, name: 'pay', arguments: { i }, signal: new AbortController().signal } as never, reason: 'bench' } as never)).catch(() => undefined)
        let pending: readonly { id: string }[] = []
        while (pending.length === 0) pending = await b!.pending()
        await sleep(20)
        const start = performance.now()
        await b!.decide(pending[0]!.id, { decision: 'allow' })
        await answered
        samples.push(performance.now() - start)
      }
    } finally {
      await a!.dispose()
      await b!.dispose()
      for (const pool of pools) await pool.end()
    }
    rows.push({ wake: label, decisions: String(samples.length), 'p50 ms': pct(samples, 50), 'p99 ms': pct(samples, 99) })
  }
  return rows
}

/** A run's frames appended on instance A (its publisher, pool A) → heard by a follower on instance B (pool B): delay per frame, frames 5 ms apart. */
async function eventsAcross(url: string): Promise<TableRow[]> {
  const pools = [new pg.Pool({ connectionString: url, max: 4 }), new pg.Pool({ connectionString: url, max: 4 })]
  const [a, b] = pools.map((pool) => createLiveEvents(createPostgresStore({ pool, table: 'bench_live', log: () => undefined }))!)
  const frames = ROUNDS * 14
  const log = createRunEventLog(1024 * 1024)
  const appended = new Map<number, number>()
  const samples: number[] = []
  const runId = crypto.randomUUID()
  try {
    const stop = a!.publish(runId, log, (error) => console.error(error))
    log.append('start', { id: runId })
    const followed = await b!.follow(runId, 1024 * 1024, async () => false)
    // The LISTEN connection opens in the background: the first frames wait for it.
    await sleep(500)
    const unsubscribe = followed.events.subscribe((frame) => {
      const at = appended.get(frame.id)
      if (at !== undefined) samples.push(performance.now() - at)
    })
    for (let i = 0; i < frames; i++) {
      appended.set(log.last + 1, performance.now())
      log.append('log', { i, line: 'x'.repeat(80) })
      await sleep(5)
    }
    await until(() => samples.length >= frames, 30_000)
    unsubscribe()
    followed.stop()
    stop()
  } finally {
    for (const pool of pools) await pool.end()
  }
  return [{ path: 'append on A → frame in B’s follower (publisher chunk write, NOTIFY, list + get)', frames: String(samples.length), 'p50 ms': pct(samples, 50), 'p95 ms': pct(samples, 95), 'p99 ms': pct(samples, 99) }]
}

/** Section 4: compare-and-set writes on the file store and on PostgreSQL, and a parked run's rows. */
async function postgresBesideFiles(): Promise<void> {
  const skip = postgresSkipReason()
  if (skip !== undefined) {
    console.log(`\n4. PostgreSQL: skipped (${skip})`)
    return
  }
  const cluster = await startPostgres({ fsync: true })
  const pool = new pg.Pool({ connectionString: cluster.url, max: 4 })
  const dir = mkdtempSync(join(tmpdir(), 'toolyard-durable-bench-'))
  try {
    const stores: Record<string, DurableStore> = { [`file (${tmpdir()})`]: createFileStore(dir), 'postgres (127.0.0.1 TCP, fsync on)': createPostgresStore({ pool, table: 'bench_cas' }) }
    const value = 'x'.repeat(2048)
    const samples: Record<string, number[]> = Object.fromEntries(Object.keys(stores).map((name) => [name, []]))
    for (let round = 0; round < ROUNDS; round++) {
      const names = Object.keys(stores)
      for (const name of round % 2 === 0 ? names : names.reverse()) {
        const store = stores[name]!
        for (let i = 0; i < 40; i++) {
          const current = await store.get('bench/cas')
          const start = performance.now()
          const put = await store.put('bench/cas', value, { ifVersion: current?.version ?? null })
          samples[name]!.push(performance.now() - start)
          if (!put.ok) throw new Error('a lone writer lost a compare-and-set')
        }
      }
    }
    printTable(
      Object.entries(samples).map(([store, ms]) => ({ store, writes: ms.length, 'CAS put p50 ms': pct(ms, 50), 'CAS put p99 ms': pct(ms, 99) })),
      `4a. Compare-and-set write of a 2 KiB value (after a get), ${ROUNDS} interleaved rounds of 40; ${loadNote()}`,
    )
    printTable(await decideAcross(cluster.url), `4b. Decide on instance B → the waiting call answered on instance A (two brokers, two pools, one database), ${ROUNDS * 2} decisions; ${loadNote()}`)
    printTable(await eventsAcross(cluster.url), `4d. Live events across instances: a run's frames on A streamed by B (toolyard's run-live/ chunks over LISTEN/NOTIFY); ${loadNote()}`)
    const parked = createPostgresStore({ pool, table: 'bench_parked' })
    const rows = await parkedRecord(parked, async () => {
      const { rows: [row] } = await pool.query('SELECT count(*)::int AS n, sum(octet_length(value))::int AS value_bytes, sum(pg_column_size(t.*))::int AS row_bytes FROM bench_parked t')
      return { measure: 'rows in the table at the park (runs/<id>, owners/<id>)', value: `${row.n} rows, values ${row.value_bytes} bytes, rows ${row.row_bytes} bytes (pg_column_size)` }
    })
    printTable(rows, '4c. One parked 20-call run_code in createPostgresStore (the runtime\'s records; npm start adds run-records/, run-events/ and approvals/ rows)')
  } finally {
    await pool.end()
    cluster.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

async function bytesPerParkedRun(statesOf100: readonly ParkedRunState[]): Promise<void> {
  const rows: TableRow[] = []
  for (const [k, kind] of KINDS.entries()) {
    const runtime = kind.make(true)
    try {
      const small = await parkRun(runtime, true, 20)
      rows.push(sizeRow(kind.name, 20, small.state!), sizeRow(kind.name, PARK_CALLS, statesOf100[k]!))
    } finally {
      await runtime.dispose()
    }
  }
  printTable(rows, "3a. Bytes per parked run: JSON.stringify(state), calls with args { i, name: 'file-i.txt' } (target ≤ 64 KiB for 20 calls)")
  printTable(await fileStoreRecord(), `3b. One parked 20-call run_code in createFileStore(dir) (${tmpdir()}); ${loadNote()}`)
}

console.log(`durable runs bench: ${loadNote()} at start, node ${process.version}${CONTROL ? '; A/A CONTROL: the "no journal" contender journals too' : ''}`)
const sections = (process.env.BENCH_SECTIONS ?? '1,2,3,4').split(',')
if (sections.includes('1')) await journalCost()
if (sections.includes('2') || sections.includes('3')) {
  const states = await parkAndResume()
  if (sections.includes('3')) await bytesPerParkedRun(states)
}
if (sections.includes('4')) await postgresBesideFiles()
console.log(`\n${loadNote()} at the end`)
