/**
 * Two `npm start` processes on one PostgreSQL database and two different data directories
 * (issue 37): a decision posted to B resumes the run A holds; A paused or killed with `kill -9`
 * while its run waits, B takes the run over and finishes it, each call made once.
 */
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPostgresStore } from '../../../platforms/postgres/index.js'
import { runKeySegment } from '../../../src/durable/runs.js'
import { startChild, stopChildren, type Child } from '../../support/child.js'
import { postgresSkipReason, startPostgres, type PostgresCluster } from '../../support/postgres.js'
import { until } from '../../support/poll.js'
import { createStoreRunRecords } from '../../../src/durable/runs.js'

const root = fileURLToPath(new URL('../../..', import.meta.url))
const skip = postgresSkipReason()
const base = mkdtempSync(join(tmpdir(), 'toolyard-two-'))
let cluster: PostgresCluster | undefined

const TOKEN = 'two-instances-approver-0123456789abcdef'
const API_TOKEN = 'two-instances-api-0123456789abcdef'
const AUTH = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }

/** Each `effect` call adds a row to test_effects; each write_file asks a person (calls 2 and 4). */
const program = (tag: string) => `
await tools.effect({ tag: '${tag}:1' })
await tools.write_file({ path: '${tag}/a.md', content: 'a' })
await tools.effect({ tag: '${tag}:2' })
await tools.write_file({ path: '${tag}/b.md', content: 'b' })
await tools.effect({ tag: '${tag}:3' })
return 'done'
`

type Instance = { url: string; child: Child }

async function instance(name: string): Promise<Instance> {
  const trace = process.env.TOOLYARD_TWO_TRACE === '1' ? join(process.env.TOOLYARD_TWO_TRACE_DIR ?? tmpdir(), `two-trace-${name}.log`) : undefined
  const child = startChild(process.execPath, ['--import', 'tsx', 'test/unit/postgres/server-child.ts', cluster!.url, join(base, name), TOKEN, API_TOKEN], {
    cwd: root,
    ...(trace === undefined ? {} : { onOutput: (text: string, stream: string) => void (stream === 'stderr' && appendFileSync(trace, text)) }),
  })
  const url = await child.waitFor((out) => {
    const line = out.split('\n').find((l) => l.startsWith('{"url"'))
    return line === undefined ? undefined : (JSON.parse(line) as { url: string }).url
  }, `instance ${name} to start`)
  return { url, child }
}

/**
 * One step between two approvals: the decision reaches the run's process, the run resumes (a replay)
 * and asks again. Seconds on a quiet machine; it ran past 20 s once in a CI at load ~13. A bound, not a speed check.
 */
const STEP_MS = 60_000
type Approval = { id: string; callId: string }
const approvals = async (url: string): Promise<Approval[]> => ((await (await fetch(`${url}/v1/approvals`, { headers: AUTH })).json()) as { approvals: Approval[] }).approvals
/** Allows the approval of sub-call `n` of the run whose call id is `runCallId` (instances are shared: other runs' approvals may be listed). */
async function allow(url: string, runCallId: string, n: number, ms = STEP_MS): Promise<void> {
  const callId = `${runCallId}:code:${n}`
  const approval = await until(async () => (await approvals(url)).find((a) => a.callId === callId), `the approval of ${callId} on ${url}`, ms)
  const response = await fetch(`${url}/v1/approvals/${approval.id}`, { method: 'POST', headers: AUTH, body: JSON.stringify({ decision: 'allow' }) })
  expect(response.status).toBe(200)
}
const runStatus = async (url: string, id: string) =>
  (await (await fetch(`${url}/v1/runs/${id}`, { headers: AUTH })).json()) as { status: string; callId: string; result?: { value?: { result?: unknown } } }
/**
 * A takeover waits out the 12 s heartbeat age first, and a freshly started server (tsx, cold)
 * took 2-3 s a step at load 28: such steps get deadlines that hold on a loaded machine.
 */
const TAKEOVER_MS = 90_000
const ended = (url: string, id: string, ms?: number) =>
  until(async () => {
    const run = await runStatus(url, id)
    return run.status === 'done' || run.status === 'failed' ? run : undefined
  }, `run ${id} to end`, ms)
/** Starts `code` (default: {@link program} of `tag`) on `url`; answers the run's id and call id. */
async function startRun(url: string, tag: string, code = program(tag)): Promise<{ id: string; callId: string }> {
  const { id } = (await (await fetch(`${url}/v1/runs`, { method: 'POST', headers: AUTH, body: JSON.stringify({ code, description: tag }) })).json()) as { id: string }
  return { id, callId: (await runStatus(url, id)).callId }
}

async function expectEachCallOnce(run: { status: string; result?: { value?: { result?: unknown } } }, tag: string): Promise<void> {
  expect(run.status, JSON.stringify(run)).toBe('done')
  expect(run.result?.value?.result).toBe('done')
  const pool = new pg.Pool({ connectionString: cluster!.url, max: 1 })
  try {
    const { rows } = await pool.query('SELECT tag FROM test_effects WHERE starts_with(tag, $1) ORDER BY at, tag', [`${tag}:`])
    expect(rows.map((row: { tag: string }) => row.tag).join(" ")).toEqual(`${tag}:1 ${tag}:2 ${tag}:3`)
  } finally {
    await pool.end()
  }
}

type Frame = { id: number; event: string; text: string; at: number }

/** Reads an SSE response into `frames` (arrival time per frame) until it ends or `signal` aborts. */
async function readFrames(response: Response, frames: Frame[]): Promise<void> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      buffer += value
      let end: number
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const text = buffer.slice(0, end + 2)
        buffer = buffer.slice(end + 2)
        const id = /^id: (\d+)$/m.exec(text)?.[1]
        const event = /^event: (.+)$/m.exec(text)?.[1]
        if (id !== undefined && event !== undefined) frames.push({ id: Number(id), event, text, at: performance.now() })
      }
    }
  } catch (error) {
    if ((error as Error).name !== 'AbortError') throw error
  }
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!

/** 30 effects, a write that waits for a person, 30 more: two frames per effect, live. */
const streamed = (tag: string) => `
for (let i = 0; i < 30; i++) await tools.effect({ tag: '${tag}:a' + i })
await tools.write_file({ path: '${tag}/a.md', content: 'a' })
for (let i = 0; i < 30; i++) await tools.effect({ tag: '${tag}:b' + i })
return 'done'
`

async function expectEachCallOnceFor(id: string, url: string, tag: string, calls: number): Promise<void> {
  const run = await ended(url, id)
  expect(run.status, JSON.stringify(run)).toBe('done')
  const pool = new pg.Pool({ connectionString: cluster!.url, max: 1 })
  try {
    const { rows } = await pool.query('SELECT count(*)::int AS n, count(DISTINCT tag)::int AS d FROM test_effects WHERE starts_with(tag, $1)', [`${tag}:`])
    expect(rows[0]).toEqual({ n: calls, d: calls })
  } finally {
    await pool.end()
  }
}

describe.skipIf(skip !== undefined)(`two npm start instances on one PostgreSQL database${skip === undefined ? '' : ` (skipped: ${skip})`}`, () => {
  // Three servers where each case used to start two: A and B serve the first two cases
  // (nothing in them harms a server); A is then the one paused, and A2, started once A is
  // gone, the one killed. B lives throughout and is the only candidate in each takeover.
  let a: Instance
  let b: Instance
  beforeAll(async () => {
    cluster = await startPostgres()
    // Made here, once: two servers' concurrent CREATE TABLE IF NOT EXISTS can collide in pg_type.
    const pool = new pg.Pool({ connectionString: cluster.url, max: 1 })
    await pool.query('CREATE TABLE IF NOT EXISTS test_effects (tag text NOT NULL, at timestamptz NOT NULL DEFAULT now())').finally(() => pool.end())
    ;[a, b] = await Promise.all([instance('a'), instance('b')])
  }, 180_000)
  afterAll(async () => {
    await stopChildren()
    cluster?.stop()
    rmSync(base, { recursive: true, force: true })
  })

  it('a run started on A waits for a person; the decisions posted to B resume it on A', async () => {
    const { id, callId } = await startRun(a.url, 'decided')
    for (const n of [2, 4]) await allow(b.url, callId, n)
    await expectEachCallOnce(await ended(a.url, id), 'decided')
  }, 240_000)

  it('a stream opened on B follows the run A runs, live, frame for frame; Last-Event-ID resumes it on B', async () => {
    const { id, callId } = await startRun(a.url, 'live', streamed('live'))
    const onA: Frame[] = []
    const onB: Frame[] = []
    const readA = readFrames(await fetch(`${a.url}/v1/runs/${id}/events`, { headers: AUTH }), onA)
    // B knows the run once A's first record write lands.
    const streamB = await until(async () => {
      const response = await fetch(`${b.url}/v1/runs/${id}/events`, { headers: AUTH })
      if (response.status === 200) return response
      expect(response.status, await response.text()).toBe(404)
      return undefined
    }, "the run's stream on B")
    const readB = readFrames(streamB, onB)
    // While the run waits for a person: a second stream on B from Last-Event-ID 5 starts at 6.
    await until(() => (onB.some((frame) => frame.event === 'approval') ? true : undefined), 'the approval frame on B')
    const resumed: Frame[] = []
    const controller = new AbortController()
    const resumedStream = await fetch(`${b.url}/v1/runs/${id}/events`, { headers: { ...AUTH, 'Last-Event-ID': '5' }, signal: controller.signal })
    expect(resumedStream.status).toBe(200)
    const readResumed = readFrames(resumedStream, resumed)
    await until(() => (resumed.length > 0 ? true : undefined), 'the resumed stream')
    expect(resumed[0]!.id).toBe(6)
    controller.abort()
    await readResumed
    await allow(b.url, callId, 31)
    await Promise.all([readA, readB])
    // Every frame A streamed, B streamed: same ids, same text, ending with `end`.
    expect(onB.map((frame) => frame.text)).toEqual(onA.map((frame) => frame.text))
    expect(onB.at(-1)!.event).toBe('end')
    expect(onB.length).toBeGreaterThanOrEqual(120)
    // The delay from A's stream to B's, for the frames produced after the decision (both streams live).
    const decided = onA.findIndex((frame) => frame.event === 'approval-settled')
    const delays = onA.slice(decided + 1).map((frame, i) => onB[decided + 1 + i]!.at - frame.at).sort((x, y) => x - y)
    expect(delays.length).toBeGreaterThanOrEqual(50)
    console.log(`cross-instance stream delay (A's stream -> B's, ${delays.length} frames): p50 ${percentile(delays, 50).toFixed(1)} ms, p95 ${percentile(delays, 95).toFixed(1)} ms, max ${delays.at(-1)!.toFixed(1)} ms`)
    await expectEachCallOnceFor(id, a.url, 'live', 60)
  }, 240_000)

  it('A paused (SIGSTOP) while its run waits: B takes it over; A woken (SIGCONT) writes nothing of it (fenced), each call once', async () => {
    const { id, callId } = await startRun(a.url, 'fenced')
    const pool = new pg.Pool({ connectionString: cluster!.url, max: 1 })
    try {
      const store = createPostgresStore({ pool })
      const key = `runs/${runKeySegment(callId)}`
      const ownerOf = async () => {
        const entry = await store.get(key)
        const record = entry === undefined ? undefined : (JSON.parse(entry.value) as { owner: string; park?: unknown })
        return record?.park === undefined ? undefined : record.owner
      }
      const ownerA = await until(ownerOf, 'the parked run in PostgreSQL')
      a.child.kill('SIGSTOP')
      // A is silent: after staleMs (12 s) B claims the run (compare-and-set on its record).
      await until(async () => ((await ownerOf()) !== ownerA && (await ownerOf()) !== undefined ? true : undefined), 'B to claim the run', TAKEOVER_MS)
      await allow(b.url, callId, 2)
      await until(async () => (await approvals(b.url)).find((x) => x.callId === `${callId}:code:4`), 'the second approval, on B', TAKEOVER_MS)
      a.child.kill('SIGCONT')
      // A wakes with the run still in memory; the decision it now sees would make it go on: its fence stops it.
      await new Promise((resolve) => setTimeout(resolve, 3_000))
      await allow(b.url, callId, 4)
      await expectEachCallOnce(await ended(b.url, id, TAKEOVER_MS), 'fenced')
      // A, awake since, wrote no record, result or event snapshot over B's.
      await new Promise((resolve) => setTimeout(resolve, 1_000))
      const record = (await createStoreRunRecords(store).get(id))! as unknown as { status: string; owner: string }
      expect(record.status).toBe('done')
      expect(record.owner).not.toBe(ownerA)
      // One record per run: its view stays (until eviction), its parked state is gone.
      expect((JSON.parse((await store.get(key))!.value) as { park?: unknown }).park).toBeUndefined()
    } finally {
      await pool.end()
    }
    // A is done with: the next case's takeover must have B as the only candidate.
    await a.child.stop()
  }, 240_000)

  it('A killed with kill -9 while its run waits: B adopts the run, takes the decision and finishes it, each call once', async () => {
    const a2 = await instance('a2')
    const { id, callId } = await startRun(a2.url, 'killed')
    await allow(b.url, callId, 2, TAKEOVER_MS)
    await until(async () => (await approvals(b.url)).find((x) => x.callId === `${callId}:code:4`), 'the second approval', TAKEOVER_MS)
    // Parked: its state is a row in the shared table. Then A dies.
    const pool = new pg.Pool({ connectionString: cluster!.url, max: 1 })
    try {
      const store = createPostgresStore({ pool })
      const parked = async () => (JSON.parse((await store.get(`runs/${runKeySegment(callId)}`))?.value ?? '{}') as { park?: unknown }).park !== undefined && (await store.get(`run-events/${id}`)) !== undefined
      await until(async () => ((await parked()) ? true : undefined), 'the parked run and its events in PostgreSQL')
    } finally {
      await pool.end()
    }
    await a2.child.stop()
    await allow(b.url, callId, 4)
    await expectEachCallOnce(await ended(b.url, id, TAKEOVER_MS), 'killed')
  }, 240_000)
})
