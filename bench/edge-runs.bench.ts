/**
 * Durable runs at the edge (docs/deployment.md, "Durable runs"): the BUILT Worker with its
 * `RUNS` and `RUN_INDEX` Durable Object bindings under Miniflare's workerd (SQLite-backed,
 * storage persisted to a temp directory). Prints, per round:
 *
 * - start: `POST /v1/runs` → 202 (the Worker names a new object, which builds its
 *   registry and QuickJS runtime and starts the run);
 * - decision → done, live: a run waiting for `write_file`, parked (its state stored), then
 *   decided through the Worker (forwarded to its object, replayed, finished), until a
 *   `GET` reads it done;
 * - decision → done, after a restart: the same with the whole workerd disposed and started
 *   again on the same storage between the park and the decision (the object builds its
 *   registry, resumes the run from storage, replays it, finishes it).
 *
 * Each latency includes the client's 20 ms status polling (so the resolution is ~20 ms).
 * Figures are printed, never asserted. Run: `npx tsx bench/edge-runs.bench.ts`
 * (`BENCH_ROUNDS`, default 8).
 */
import { rmSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { Miniflare } from 'miniflare'
import { buildProductWorker, productWorkerOptions } from '../test/support/built-worker.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8)
const TOKEN = 'edge-bench-token-0123456789abcdef'
const headers = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }
const PROGRAM = `for (let i = 0; i < 20; i++) await tools.get_customer({ id: 'C00' + (1 + (i % 9)) })
await tools.write_file({ path: 'bench.txt', content: 'x' })
return 1`

const dir = buildProductWorker('toolyard-edge-runs-bench-')
const persist = join(dir, 'state')

function start(): Promise<Miniflare> {
  const mf = new Miniflare(productWorkerOptions(dir, { TOOLYARD_TOKEN: TOKEN }, persist))
  return mf.ready.then(() => mf)
}

async function call(mf: Miniflare, path: string, init: RequestInit = {}): Promise<Response> {
  return (await mf.dispatchFetch(`http://toolyard.bench${path}`, init as never)) as unknown as Response
}

async function poll(mf: Miniflare, id: string, done: (response: Response, body: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 20))) {
    const response = await call(mf, `/v1/runs/${id}`, { headers })
    const body = (await response.json()) as Record<string, unknown>
    if (done(response, body)) return body
  }
  throw new Error(`run ${id} did not get there in 60 s`)
}

/** Starts a run and waits until it is parked with its state stored; returns its id, approval id and the start time. */
async function parked(mf: Miniflare): Promise<{ id: string; approval: string; startMs: number }> {
  const t0 = performance.now()
  const response = await call(mf, '/v1/runs', { method: 'POST', headers, body: JSON.stringify({ code: PROGRAM, description: 'bench' }) })
  const startMs = performance.now() - t0
  const { id } = (await response.json()) as { id: string }
  const body = await poll(mf, id, (r, b) => b.status === 'waiting' && r.headers.get('X-Toolyard-Run-State') === 'stored')
  return { id, approval: (body.approvals as { id: string }[])[0]!.id, startMs }
}

async function decideToDone(mf: Miniflare, id: string, approval: string): Promise<number> {
  const t0 = performance.now()
  const decided = await call(mf, `/v1/approvals/${approval}`, { method: 'POST', headers, body: JSON.stringify({ decision: 'allow' }) })
  if (decided.status !== 200) throw new Error(`decision answered ${decided.status}`)
  const body = await poll(mf, id, (_r, b) => b.status !== 'running' && b.status !== 'waiting')
  if (body.status !== 'done') throw new Error(`run ended ${String(body.status)}`)
  return performance.now() - t0
}

function line(label: string, values: number[]): void {
  const sorted = [...values].sort((a, b) => a - b)
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!
  console.log(`${label.padEnd(44)} p50 ${at(50).toFixed(1).padStart(7)} ms   max ${sorted[sorted.length - 1]!.toFixed(1).padStart(7)} ms   (n=${sorted.length})`)
}

console.log(`edge durable runs (Miniflare workerd, SQLite-backed objects); load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}`)
const starts: number[] = []
const live: number[] = []
const restarted: number[] = []
let mf = await start()
try {
  for (let round = 0; round < ROUNDS; round++) {
    const a = await parked(mf)
    starts.push(a.startMs)
    live.push(await decideToDone(mf, a.id, a.approval))
    const b = await parked(mf)
    await mf.dispose()
    mf = await start()
    restarted.push(await decideToDone(mf, b.id, b.approval))
  }
} finally {
  await mf.dispose()
  rmSync(dir, { recursive: true, force: true })
}
line('POST /v1/runs → 202 (new object)', starts)
line('decision → done, object live (20-call run)', live)
line('decision → done, after a workerd restart', restarted)
