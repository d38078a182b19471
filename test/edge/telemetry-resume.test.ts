import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { Miniflare } from 'miniflare'
import type { WorkerOptions } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { until } from '../support/poll.js'

/**
 * Issue 32's "a durable run resumed in a second process in the same trace", at the edge: the
 * Worker with SDK providers registered in its entry (test/edge/telemetry-worker.ts: an
 * in-memory exporter read back through a test-only route its run objects answer), under
 * Miniflare's workerd with persisted Durable Object storage. A run started with a
 * `traceparent` parks waiting for a person; Miniflare is disposed and started again over
 * the same directory (a new workerd process); the decision resumes the run in its object,
 * and the resumed spans are in the caller's trace, under the parked run's span, the calls
 * answered from the journal marked `toolyard.replayed` and counted in no duration.
 *
 * An in-memory exporter rather than OTLP/HTTP to a receiver here: the Worker's spans are
 * read where they are recorded, with no outbound network from workerd and no exporter
 * flush racing the process's end (the OTLP path is tested by otlp-start.test.ts).
 */
const root = fileURLToPath(new URL('../..', import.meta.url))
const TOKEN = 'edge-test-token-0123456789abcdef'
const BASE = 'http://toolyard.test'
const auth = { Authorization: `Bearer ${TOKEN}` }
const TRACE_ID = '5c1a7e3f9b2d4c6e8a0b1d3f5e7a9c2b'
const CALLER_SPAN = '1f2e3d4c5b6a7988'
const TRACEPARENT = `00-${TRACE_ID}-${CALLER_SPAN}-01`

/**
 * A write that asks (the run parks: its VM snapshot in the object's storage), then a pause
 * the test stops workerd in, after the write ran: the resumed run goes on from the snapshot,
 * so its write is answered from the journal, not run again.
 */
const PROGRAM = `
const before = (await tools.read_file({ path: 'README.md' })).lines.length
await tools.write_file({ path: 'notes/run.txt', content: 'written once' })
await new Promise((resolve) => setTimeout(resolve, 6000))
const notes = (await tools.read_file({ path: 'notes/run.txt' })).lines.map((line) => line.text).join('\\n')
return { before: before > 0, notes }
`

interface SpanJson {
  readonly name: string
  readonly ended: boolean
  readonly traceId: string
  readonly spanId: string
  readonly traceState?: string
  readonly parentSpanId?: string
  readonly attributes: Record<string, unknown>
  readonly events: readonly { readonly name: string; readonly attributes: Record<string, unknown> }[]
}
interface Recorded {
  readonly spans: readonly SpanJson[]
  readonly durationCounts: Record<string, number>
}
interface Approval {
  readonly id: string
  readonly name: string
  readonly parentCallId?: string
}

describe('telemetry of a durable run resumed by a restarted Durable Object (built test Worker, Miniflare, persisted storage)', () => {
  let dir: string
  let mf: Miniflare | undefined

  const start = async (): Promise<Miniflare> => {
    const instance = new Miniflare({
      modules: true,
      compatibilityDate: '2026-04-20',
      compatibilityFlags: ['enable_request_signal'],
      scriptPath: join(dir, 'telemetry-worker.js'),
      modulesRoot: dir,
      modulesRules: [{ type: 'CompiledWasm', include: ['**/*.wasm'] }],
      bindings: { TOOLYARD_APPROVER_TOKEN: TOKEN },
      durableObjects: { RUNS: { className: 'ToolyardRun', useSQLite: true }, RUN_INDEX: { className: 'ToolyardRunIndex', useSQLite: true } },
      durableObjectsPersist: join(dir, 'state'),
    } as WorkerOptions)
    await instance.ready
    return instance
  }
  const call = (path: string, init: RequestInit = {}) => mf!.dispatchFetch(`${BASE}${path}`, init as never) as unknown as Promise<Response>
  const status = async (id: string): Promise<Record<string, unknown>> => (await (await call(`/v1/runs/${id}`, { headers: auth })).json()) as Record<string, unknown>
  /** Polls the run's status until `done` holds (its body), failing past `withinMs`. */
  const whenStatus = (id: string, done: (body: Record<string, unknown>) => boolean, withinMs = 30_000): Promise<Record<string, unknown>> =>
    until(async () => {
      const body = await status(id)
      return done(body) ? body : undefined
    }, `run ${id}'s status`, withinMs, 50)
  const pending = async (runCallId: string): Promise<Approval[]> =>
    ((await (await call('/v1/approvals', { headers: auth })).json()) as { approvals: Approval[] }).approvals.filter((a) => a.parentCallId === runCallId)
  const decide = (id: string) => call(`/v1/approvals/${id}`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify({ decision: 'allow' }) })
  const waitingOn = (id: string, name: string) => whenStatus(id, (body) => body.status === 'waiting' && (body.approvals as Approval[]).some((a) => a.name === name))
  /** What the run's object recorded in this workerd process. */
  const recorded = async (id: string): Promise<Recorded> => (await (await call(`/__telemetry/${id}`)).json()) as Recorded

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'toolyard-edge-telemetry-'))
    // The production Worker's build puts quickjs.wasm and micropython.wasm beside it; the test entry wraps that
    // Worker. Bundled for the browser platform: the SDK packages pick their browser files
    // through package.json's `browser` map, which esbuild reads only there.
    execFileSync(process.execPath, ['scripts/build-edge.mjs', '--outdir', dir], { cwd: root, stdio: 'pipe' })
    await build({
      absWorkingDir: root,
      entryPoints: ['test/edge/telemetry-worker.ts'],
      outfile: join(dir, 'telemetry-worker.js'),
      bundle: true,
      format: 'esm',
      platform: 'browser',
      conditions: ['workerd', 'worker', 'browser'],
      target: 'es2022',
      logLevel: 'warning',
      external: ['*.wasm'],
      plugins: [
        {
          name: 'wasm-modules',
          setup: (b) => {
            b.onResolve({ filter: /^@jitl\/quickjs-wasmfile-release-sync\/wasm$/ }, () => ({ path: './quickjs.wasm', external: true }))
            b.onResolve({ filter: /_micropython-bounded\.wasm$/ }, () => ({ path: './micropython.wasm', external: true }))
          },
        },
      ],
    })
    mf = await start()
  }, 180_000)

  afterAll(async () => {
    await mf?.dispose()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  it("the resumed run's spans are in the caller's trace under the parked run's span; journal answers are marked replayed and not counted", async () => {
    const started = await call('/v1/runs', {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json', traceparent: TRACEPARENT, tracestate: 'vendor=edge' },
      body: JSON.stringify({ code: PROGRAM, description: 'edge telemetry' }),
    })
    expect(started.status).toBe(202)
    const { id } = (await started.json()) as { id: string }
    const asking = await waitingOn(id, 'write_file')
    const callId = asking.callId as string
    // Parked (its state, with its span's context, in the object's storage) before the decision.
    const stored = async () => (await call(`/v1/runs/${id}`, { headers: auth })).headers.get('X-Toolyard-Run-State') === 'stored'
    await until(stored, 'the run object to store its state', 30_000, 50)
    expect((await decide((await pending(callId))[0]!.id)).status).toBe(200)
    // The write runs in this process (woken from memory) and is journaled; the program then pauses.
    const wrote = (r: Recorded) => r.spans.some((s) => s.name === 'execute_tool write_file' && s.ended)
    const first = await until(async () => {
      const now = await recorded(id)
      return wrote(now) ? now : undefined
    }, 'the journaled write_file span', 15_000, 50)
    expect((await status(id)).status).toBe('running')

    // The first process: the run's span, a child of the caller's, still open as the process stops.
    const parked = first.spans.find((s) => s.name === 'execute_tool run_code')!
    expect(parked).toMatchObject({ ended: false, traceId: TRACE_ID, parentSpanId: CALLER_SPAN, traceState: 'vendor=edge' })
    const ranFirst = first.spans.filter((s) => s.parentSpanId === parked.spanId)
    expect(ranFirst.map((s) => s.name)).toEqual(['execute_tool read_file', 'execute_tool write_file'])
    expect(ranFirst[1]!.events.map((e) => e.name)).toEqual(['toolyard.approval.requested', 'toolyard.approval.decided'])
    expect(first.durationCounts).toMatchObject({ read_file: 1, write_file: 1 })

    await mf!.dispose()
    mf = await start()
    // The second process: the next request to the object builds it, and it resumes the run from its storage.
    const done = await whenStatus(id, (body) => body.status !== 'running' && body.status !== 'waiting', 30_000)
    expect(done).toMatchObject({ status: 'done', result: { isError: false, value: { result: { before: true, notes: 'written once' } } } })

    const second = await recorded(id)
    for (const span of second.spans) expect(span.traceId).toBe(TRACE_ID)
    const resumed = second.spans.filter((s) => s.name === 'execute_tool run_code')
    expect(resumed).toHaveLength(1)
    const run = resumed[0]!
    expect(run).toMatchObject({ ended: true, parentSpanId: parked.spanId, traceState: 'vendor=edge' })
    expect(run.events.find((e) => e.name === 'toolyard.run.resumed')!.attributes).toMatchObject({ 'toolyard.run.resumed_from': 'store' })
    const subCalls = second.spans.filter((s) => s.parentSpanId === run.spanId)
    // The write ran before the restart: answered from the journal, marked, not run again; the read after the pause ran.
    expect(subCalls.map((s) => [s.name, s.attributes['toolyard.replayed'] === true])).toEqual([
      ['execute_tool write_file', true],
      ['execute_tool read_file', false],
    ])
    expect(run.attributes).toMatchObject({ 'toolyard.run.calls_made': 1, 'toolyard.run.outcome': 'ok' })
    // This process's duration histogram counts executions only: the read, not the replayed write.
    expect(second.durationCounts.write_file ?? 0).toBe(0)
    expect(second.durationCounts.read_file).toBe(1)
  })
})
