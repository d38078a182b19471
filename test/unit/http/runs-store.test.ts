/**
 * `/v1/runs` over a durable store, on an in-process code runtime (milliseconds, no
 * sandbox): while a run waits for a person its frames are snapshotted with a reserve of
 * ids, and only then; a run the app's shutdown cuts off with its durable state still in
 * the store is left `running` for the next process, its stream closed without `end`; a
 * process adopts the runs `runtime.resumeRuns()` hands it under their ids (buffer rebuilt,
 * or ids continued from the record), follows them to the end and cancels them on
 * `DELETE`; a `running` record nothing will finish is ended as `INTERRUPTED`, and only
 * that one. The same over real sandboxes and a real restart: durable/run-events-restart.test.ts.
 */
import { Hono } from 'hono'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { ApprovalBroker, ApprovalEvent, ApprovalListener, PendingApproval } from '../../../src/approvals/index.js'
import { runKeySegment } from '../../../src/durable/runs.js'
import type { ResumedRun } from '../../../src/durable/runs.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { createToolsApp, runsHeld } from '../../../src/http/index.js'
import type { RunBody, RunRecordJson, ToolsAppOptions } from '../../../src/http/index.js'
import { createRunEventLog, createStoreRunEvents, interruptedRunResult, MAX_RESTORED_EVENT_ID, RUN_EVENTS_PREFIX, RUN_OWNER_PREFIX } from '../../../src/durable/run-table.js'
import type { ToolRuntime } from '../../../src/runtime-types.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ToolExecutionResult } from '../../../src/types.js'
import { until } from '../approvals/helpers.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { AUTH, JSON_AUTH, TOKEN, askingPayTool, createFixture, errorOf, parseSse, sseFrames } from './fixtures.js'
import type { SseFrame } from './fixtures.js'
import { until as eventually } from '../../support/poll.js'
import { createStoreRunRecords } from '../../../src/durable/runs.js'
import { FIRST_CALL_NUMBERING, parkedState } from '../../support/parked-run.js'

/** Writes a `/v1/runs` record as another process would (its view in runs/http-run-<id>). */
const putRecord = (store: DurableStore, record: object) => createStoreRunRecords(store).put(record as RunRecordJson)

/** Marks run `callId` parked in its record (as a runtime leaves it when it stops with the run parked): a parked state beside its view. */
async function markParked(store: DurableStore, callId: string): Promise<void> {
  const key = `runs/${runKeySegment(callId)}`
  const current = (JSON.parse((await store.get(key))?.value ?? 'null') as Record<string, unknown> | null) ?? { version: 1, callId }
  await store.put(key, JSON.stringify({ ...current, park: { code: 'c', description: 'd', state: parkedState('pay'), numbering: FIRST_CALL_NUMBERING } }))
}


const OWNER = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** One "process" on `store`: an in-process code runtime, a broker, the app with its shutdown signal; `pay` asks a person, `hold` waits for the test. */
function processOn(store: DurableStore, options: Partial<ToolsAppOptions> & { readonly approvals?: ApprovalBroker } = {}) {
  const stopping = new AbortController()
  const reported: unknown[] = []
  // A stub broker (the app's view of approvals) asks through a real broker's handler.
  const { approvals: given, ...appOptions } = options
  const real = createApprovalBroker()
  const broker = (given === undefined ? real : { ...given, handler: given.handler ?? real.handler }) as ApprovalBroker
  const f = createFixture(
    { mode: 'both', codeRuntime: createInProcessRuntime({ wallMs: 30_000 }), approvals: broker, store, runs: { resumeEveryMs: 0 } },
    { signal: stopping.signal, onError: (error: unknown) => void reported.push(error), ...appOptions },
  )
  f.runtime.register(askingPayTool())
  let letGo: (() => void) | undefined
  f.runtime.register(
    defineTool({
      name: 'hold',
      description: 'Waits for the test.',
      parameters: {},
      isConcurrencySafe: () => true,
      output: { schema: { type: 'null' }, render: () => [] },
      execute: () => new Promise<null>((resolve) => (letGo = () => resolve(null))),
    }),
  )
  f.runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
  const start = async (code: string): Promise<{ id: string; callId: string }> => {
    const response = await f.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code, description: 'd' }) })
    expect(response.status, await response.clone().text()).toBe(202)
    return (await response.json()) as { id: string; callId: string }
  }
  const get = async (id: string): Promise<RunBody> => (await (await f.app.request(`/v1/runs/${id}`, { headers: AUTH })).json()) as RunBody
  const events = (id: string, last?: number | string) => f.app.request(`/v1/runs/${id}/events`, { headers: last === undefined ? AUTH : { ...AUTH, 'Last-Event-ID': String(last) } })
  const release = async (): Promise<void> => {
    await until(() => letGo !== undefined)
    letGo!()
  }
  return { ...f, broker, stopping, reported, start, get, events, release }
}

type Process = ReturnType<typeof processOn>

const read = async <T = Record<string, unknown>>(store: DurableStore, key: string): Promise<T | undefined> => {
  const entry = await store.get(key)
  return entry === undefined ? undefined : (JSON.parse(entry.value) as T)
}
const recordOf = (store: DurableStore, id: string) => createStoreRunRecords(store).get(id)
const manifestOf = (store: DurableStore, id: string) => read<{ last: number; next?: number; dropped: number }>(store, `${RUN_EVENTS_PREFIX}${id}`)
const eventKeys = async (store: DurableStore) => (await store.list(RUN_EVENTS_PREFIX)).entries.map((e) => e.key)

/** A run waiting for a person in `p`: its ids, and its live stream read up to the `approval` frame. */
async function waitingRun(p: Process, code = `console.log('one'); const paid = await tools.pay({ cents: 5 }); console.log('two'); return paid`) {
  const run = await p.start(code)
  const live = sseFrames(await p.events(run.id))
  const approval = await live.until('approval')
  return { ...run, live, approval: approval.data as PendingApproval }
}

/** Parks a waiting run as a shutting-down process would: its durable state stays in the store, the app's signal aborts it. */
async function parkRun(p: Process, store: DurableStore, callId: string): Promise<void> {
  await markParked(store, callId)
  p.stopping.abort(new DOMException('the server is shutting down', 'AbortError'))
  await until(() => runsHeld(p.app)!.live === 0)
}

/** A resumed run as `runtime.resumeRuns()` hands it over, settled by the test. */
function resumedHandle(callId: string) {
  let settle: (result: ToolExecutionResult) => void = () => {}
  const cancelled: unknown[] = []
  const handle: ResumedRun = {
    callId,
    result: new Promise<ToolExecutionResult>((resolve) => (settle = resolve)),
    cancel: (reason) => {
      cancelled.push(reason)
      settle({ isError: true, error: { message: 'cancelled', info: { name: 'ToolError', code: 'ABORTED' } }, content: [] })
    },
  }
  return { handle, cancelled, settle: (result: ToolExecutionResult) => settle(result) }
}

/** A runtime whose `resumeRuns()` returns `handles` (what a real one does after a restart), and records the options it got. */
function resumingRuntime(handles: readonly ResumedRun[]) {
  const asked: unknown[] = []
  const runtime = {
    resumeRuns: async (options?: unknown) => {
      asked.push(options)
      return handles
    },
  } as unknown as ToolRuntime
  return { runtime, asked }
}

/** What a process does after a restart: `fake` stands for its runtime's resume (the handles it gave), and `runtime`'s tables take them back. */
async function resumeAppRuns(runtime: ToolRuntime, fake: ToolRuntime, options?: { readonly staleMs?: number }) {
  return runtime.runs.adopt(await fake.resumeRuns(options), options?.staleMs)
}

const OK: ToolExecutionResult = { isError: false, value: { done: 7 }, content: [{ type: 'text', text: 'resumed and done' }] }

/** Reads `stream` until a frame named `name` (included). */
async function readUntil(stream: ReturnType<typeof sseFrames>, name: string): Promise<SseFrame[]> {
  const frames: SseFrame[] = []
  for (;;) {
    const frame = await stream.next()
    if (frame === undefined) throw new Error(`the stream ended before ${name} (saw ${frames.map((f) => f.event).join(', ')})`)
    frames.push(frame)
    if (frame.event === name) return frames
  }
}

describe('/v1/runs with a store: a waiting run is snapshotted', () => {
  it('from its approval frame, with a reserve of a million ids, its record running with its owner; not again once decided; gone when it ends', async () => {
    const store = createMemoryStore()
    const a = processOn(store)
    const { id, callId, live, approval } = await waitingRun(a, `console.log('one'); const paid = await tools.pay({ cents: 5 }); await tools.hold({}); console.log('two'); return paid`)
    // The session log's approval records are not frames (the broker's `approval` is).
    expect(live.seen.map((f) => f.event)).toEqual(['start', 'log', 'dispatch-start', 'approval'])
    const manifest = await eventually(() => manifestOf(store, id))
    expect(manifest).toMatchObject({ last: 4, next: 4 + 1_000_000, dropped: 0 })
    const record = await eventually(async () => ((await recordOf(store, id))?.events.last === 4 ? recordOf(store, id) : undefined))
    expect(Object.keys(record!).sort()).toEqual(['asked', 'callId', 'createdAt', 'events', 'id', 'owner', 'principal', 'status'])
    expect(record).toMatchObject({ id, callId, status: 'running', events: { first: 1, last: 4, dropped: 0 } })
    expect(record!.owner).toMatch(OWNER)
    // The owner says it is alive while the run is running.
    const beat = await read<{ at: number }>(store, `${RUN_OWNER_PREFIX}${record!.owner}`)
    expect(Date.now() - beat!.at).toBeLessThan(5_000)
    // GET lists the request as a person needs it, and says `waiting`.
    const body = await a.get(id)
    expect(body.status).toBe('waiting')
    expect(body.approvals).toEqual([
      {
        id: approval.id,
        kind: 'call',
        callId: `${callId}:code:1`,
        name: 'pay',
        summary: 'cents: 5',
        reason: 'money moves',
        requestedAt: approval.requestedAt,
        expiresAt: approval.expiresAt,
      },
    ])
    expect((await a.broker.decide(approval.id, { decision: 'allow' })).ok).toBe(true)
    await live.until('dispatch-start')
    // Decided, it computes (holds) without waiting for anyone: no snapshot is written for those frames.
    await new Promise((resolve) => setTimeout(resolve, 30))
    expect((await manifestOf(store, id))!.last).toBe(4)
    expect((await a.get(id)).status).toBe('running')
    await a.release()
    const rest = await live.rest()
    expect(rest.at(-1)).toEqual({ event: 'end', id: String(rest.length), data: { id, status: 'done' } })
    const done = await eventually(async () => ((await recordOf(store, id))?.status === 'done' ? recordOf(store, id) : undefined))
    expect(done!.result).toMatchObject({ isError: false })
    expect(typeof done!.settledAt).toBe('number')
    await eventually(async () => ((await eventKeys(store)).length === 0 ? true : undefined))
    expect(a.reported).toEqual([])
  })

  it('a run that never waits writes its record but no snapshot', async () => {
    const store = createMemoryStore()
    const a = processOn(store)
    const { id } = await a.start(`console.log('x'); return await tools.echo({ text: 'y' })`)
    await until(() => runsHeld(a.app)!.live === 0)
    const record = await eventually(async () => ((await recordOf(store, id))?.status === 'done' ? recordOf(store, id) : undefined))
    expect(record!.owner).toMatch(OWNER)
    expect(await eventKeys(store)).toEqual([])
  })
})

describe('/v1/runs with a store: the app shuts down while a run waits', () => {
  it('with its durable state in the store, the run is left running for the next process: final snapshot without reserve, its stream closes without end', async () => {
    const store = createMemoryStore()
    const a = processOn(store)
    const { id, callId, live } = await waitingRun(a)
    await parkRun(a, store, callId)
    const after = await live.rest()
    expect(after.map((f) => f.event)).not.toContain('end')
    expect(after.map((f) => f.event)).not.toContain('result')
    expect(after.map((f) => f.event)).not.toContain('error')
    const manifest = await eventually(async () => ((await manifestOf(store, id))?.next === undefined ? manifestOf(store, id) : undefined))
    const last = Number(after.at(-1)!.id)
    expect(manifest.last).toBe(last)
    const record = await recordOf(store, id)
    expect(record).toMatchObject({ status: 'running', events: { last } })
    expect(record!.settledAt).toBeUndefined()
    expect(record!.result).toBeUndefined()
  })

  it('a parked run leaves only the runtime’s key families in the store, none of the HTTP layer’s (issue 38)', async () => {
    const store = createMemoryStore()
    const a = processOn(store)
    const { id, callId } = await waitingRun(a)
    await parkRun(a, store, callId)
    await a.runtime.dispose()
    const keys = (await store.list('', { limit: 1000 })).entries.map((entry) => entry.key)
    const families = [...new Set(keys.map((key) => key.slice(0, key.indexOf('/') + 1)))].sort()
    expect(families.every((family) => ['approvals/', 'owners/', 'run-events/', 'runs/'].includes(family)), families.join(' ')).toBe(true)
    // One record per run: its view beside its parked state, under its call id (the id is its uuid).
    expect(keys).toContain(`runs/${callId}`)
    expect(callId).toBe(`http-run-${id}`)
    expect(keys.some((key) => key.startsWith('run-records/'))).toBe(false)
    expect(keys.some((key) => key.startsWith('http'))).toBe(false)
  })

  it('without durable state (or cancelled by DELETE) the run ends here: result or error, end, the snapshot gone', async () => {
    const store = createMemoryStore()
    const a = processOn(store)
    const { id, live } = await waitingRun(a)
    a.stopping.abort(new DOMException('the server is shutting down', 'AbortError'))
    const after = await live.rest()
    expect(after.at(-1)).toMatchObject({ event: 'end', data: { id, status: 'failed' } })
    expect(after.map((f) => f.event)).toContain('result')
    await eventually(async () => ((await recordOf(store, id))?.status === 'failed' && (await eventKeys(store)).length === 0 ? true : undefined))

    const b = processOn(store)
    const waiting = await waitingRun(b)
    await markParked(store, waiting.callId)
    const deleted = await b.app.request(`/v1/runs/${waiting.id}`, { method: 'DELETE', headers: AUTH })
    expect(((await deleted.json()) as RunBody).status).toBe('cancelled')
    expect((await waiting.live.rest()).at(-1)).toMatchObject({ event: 'end', data: { id: waiting.id, status: 'cancelled' } })
    await eventually(async () => ((await recordOf(store, waiting.id))?.status === 'cancelled' ? true : undefined))
  })

  it('a store that fails the durable-state lookup: the run ends here', async () => {
    const base = createMemoryStore()
    let failRuns = false
    const store: DurableStore = {
      ...base,
      get: (key) => (failRuns && key.startsWith('runs/') ? Promise.reject(new Error('store down')) : base.get(key)),
      put: (key, value, options) => base.put(key, value, options),
      list: (prefix, options) => base.list(prefix, options),
      delete: (key, options) => base.delete(key, options),
    }
    const a = processOn(store)
    const { id, callId, live } = await waitingRun(a)
    await markParked(base, callId)
    failRuns = true
    a.stopping.abort(new DOMException('the server is shutting down', 'AbortError'))
    expect((await live.rest()).at(-1)).toMatchObject({ event: 'end', data: { id, status: 'failed' } })
  })
})

describe('/v1/runs with a store: a waiting call cut off before its request is settled', () => {
  /** The app's view of a broker: the real one's events, minus `withdrawn` (a broker over a store keeps a request across a shutdown). */
  function keepingRequests(real: ReturnType<typeof createApprovalBroker>): ApprovalBroker {
    return {
      handler: real.handler,
      pending: () => real.pending(),
      decide: (id: string, decision: never) => real.decide(id, decision),
      subscribe: (listener: ApprovalListener) => real.subscribe((event) => (event.type === 'withdrawn' ? undefined : listener(event))),
    } as unknown as ApprovalBroker
  }

  it('parked: the frames from the cut-off on (its dispatch, the failed result) are dropped, not the next process’s to see', async () => {
    const store = createMemoryStore()
    const real = createApprovalBroker()
    const a = processOn(store, { approvals: keepingRequests(real) })
    const { id, callId, live } = await waitingRun(a)
    await parkRun(a, store, callId)
    expect(await live.rest().then((all) => all.slice(all.findIndex((f) => f.event === 'approval') + 1))).toEqual([])
    const manifest = await eventually(async () => ((await manifestOf(store, id))?.next === undefined ? manifestOf(store, id) : undefined))
    expect(manifest.last).toBe(4)
  })

  it('not parked: the held frames go out in order before the end; past 256 held frames they go out at once', async () => {
    let listener: ApprovalListener | undefined
    const stub = {
      pending: async () => [],
      decide: async () => ({ ok: false, code: 'APPROVAL_NOT_FOUND', message: 'no' }),
      subscribe: (l: ApprovalListener) => {
        listener = l
        return () => (listener = undefined)
      },
    } as unknown as ApprovalBroker
    const store = createMemoryStore()
    const a = processOn(store, { approvals: stub })
    // Call 1 holds; call 2 (echo) is said to wait for a person, but ends without its request settled: a cut-off.
    const { id, callId } = await a.start(`await tools.hold({}); await tools.echo({ text: 'a' }); for (let i = 0; i < 255; i++) console.log('l' + i); await tools.hold({}); return 1`)
    const live = sseFrames(await a.events(id))
    await live.until('dispatch-start')
    listener!({ type: 'requested', approval: { id: 'q', kind: 'call', callId: `${callId}:code:2`, parentCallId: callId, name: 'echo' }, at: 1 } as unknown as ApprovalEvent)
    await live.until('approval')
    await a.release()
    // The cut-off dispatch and 255 lines are held (256); the next frame, the second hold's dispatch-start, lets them all out.
    for (let frame = await live.next(); !(frame?.event === 'dispatch-start' && (frame.data as { subCallId: string }).subCallId === `${callId}:code:3`); frame = await live.next()) {
      if (frame === undefined) throw new Error('the stream ended')
    }
    const seen = live.seen
    const tail = seen.slice(seen.findIndex((f) => f.event === 'approval') + 1)
    // From the cut-off on, the run is ending: what went out after it is not snapshotted.
    await new Promise((resolve) => setTimeout(resolve, 30))
    expect((await manifestOf(store, id))!.last).toBeLessThan(Number(tail[2]!.id))
    expect(tail.map((f) => f.event)).toEqual(['dispatch', 'dispatch-start', 'dispatch', ...Array.from({ length: 255 }, () => 'log'), 'dispatch-start'])
    expect((tail.at(-2)!.data as { entry: { text: string } }).entry.text).toBe('l254')
    expect(tail.map((f) => Number(f.id))).toEqual(tail.map((_, i) => Number(tail[0]!.id) + i))
    await a.release()
    const rest = await live.rest()
    expect(rest.slice(-3).map((f) => f.event)).toEqual(['dispatch', 'result', 'end'])
  })

  it('not parked, under 256: the held frames go out when the run ends, before its result', async () => {
    let listener: ApprovalListener | undefined
    const stub = {
      pending: async () => [],
      decide: async () => ({ ok: false, code: 'APPROVAL_NOT_FOUND', message: 'no' }),
      subscribe: (l: ApprovalListener) => {
        listener = l
        return () => (listener = undefined)
      },
    } as unknown as ApprovalBroker
    const a = processOn(createMemoryStore(), { approvals: stub })
    const { id, callId } = await a.start(`await tools.hold({}); await tools.echo({ text: 'a' }); console.log('after'); return 1`)
    const live = sseFrames(await a.events(id))
    await live.until('dispatch-start')
    listener!({ type: 'requested', approval: { id: 'q', kind: 'call', callId: `${callId}:code:2`, parentCallId: callId, name: 'echo' }, at: 1 } as unknown as ApprovalEvent)
    await live.until('approval')
    await a.release()
    const tail = (await live.rest()).slice(live.seen.findIndex((f) => f.event === 'approval') + 1)
    expect(tail.map((f) => f.event)).toEqual(['dispatch', 'dispatch-start', 'dispatch', 'log', 'result', 'end'])
  })
})

describe('resumeAppRuns: a process adopts the runs resumed from the store', () => {
  it('under the same id: the frames of the last process, then resumed, then its end; GET follows it; the snapshot goes with it', async () => {
    const store = createMemoryStore()
    const a = processOn(store)
    const { id, callId, live } = await waitingRun(a)
    await parkRun(a, store, callId)
    const before = await live.rest().then(() => live.seen)
    const last = Number(before.at(-1)!.id)

    const b = processOn(store)
    const { handle, settle } = resumedHandle(callId)
    const { runtime, asked } = resumingRuntime([handle])
    const answer = await resumeAppRuns(b.runtime, runtime, { staleMs: 0 })
    expect(answer).toEqual({ resumed: [handle], adopted: 1 })
    expect(asked).toEqual([{ staleMs: 0 }])
    expect(runsHeld(b.app)!.live).toBe(1)
    const stream = sseFrames(await b.events(id))
    const replayed = await readUntil(stream, 'resumed')
    expect(replayed.slice(0, -1)).toEqual(before)
    expect(replayed.at(-1)).toEqual({ event: 'resumed', id: String(last + 1), data: { id, callId, resumed: true } })
    const body = await b.get(id)
    expect(body).toMatchObject({ id, callId, status: 'running', approvals: [], events: { first: 1, last: last + 1, dropped: 0 } })
    // Adopted again (the next resumeAppRuns of this process): it is in the table already.
    expect((await resumeAppRuns(b.runtime, runtime, { staleMs: 0 })).adopted).toBe(0)
    settle(OK)
    const rest = await stream.rest()
    expect(rest.slice(replayed.length).map((f) => [f.id, f.event])).toEqual([
      [String(last + 2), 'result'],
      [String(last + 3), 'end'],
    ])
    expect(rest.at(-2)!.data).toEqual(OK)
    expect(rest.at(-1)!.data).toEqual({ id, status: 'done' })
    const done = await eventually(async () => ((await recordOf(store, id))?.status === 'done' ? recordOf(store, id) : undefined))
    expect(done.result).toEqual(OK)
    await eventually(async () => ((await eventKeys(store)).length === 0 ? true : undefined))
    expect((await b.get(id)).result).toEqual(OK)
    expect(b.reported).toEqual([])
  })

  it('DELETE cancels an adopted run through its handle; the app shutting down does too, and one already shut down cancels it at once', async () => {
    const store = createMemoryStore()
    const a = processOn(store)
    const first = await waitingRun(a)
    const second = await waitingRun(a)
    await markParked(store, second.callId)
    await parkRun(a, store, first.callId)

    const b = processOn(store)
    const one = resumedHandle(first.callId)
    const two = resumedHandle(second.callId)
    expect((await resumeAppRuns(b.runtime, resumingRuntime([one.handle, two.handle]).runtime, { staleMs: 0 })).adopted).toBe(2)
    const deleted = await b.app.request(`/v1/runs/${first.id}`, { method: 'DELETE', headers: AUTH })
    expect(((await deleted.json()) as RunBody).status).toBe('cancelled')
    expect(one.cancelled).toHaveLength(1)
    expect(one.cancelled[0]).toBeInstanceOf(DOMException)
    expect((one.cancelled[0] as DOMException).name).toBe('AbortError')
    expect((one.cancelled[0] as DOMException).message).toBe('the run was cancelled (DELETE /v1/runs/:id)')
    expect(two.cancelled).toEqual([])
    b.stopping.abort(new DOMException('b stops', 'AbortError'))
    expect(two.cancelled).toHaveLength(1)
    expect((two.cancelled[0] as DOMException).message).toBe('b stops')

    // A process whose shutdown signal fired before it adopted: the resumed run is cancelled as it is adopted.
    const c = processOn(store)
    const again = resumedHandle(second.callId)
    await putRecord(store, ({ ...(await recordOf(store, second.id)), status: 'running' }))
    c.stopping.abort(new DOMException('c stopped', 'AbortError'))
    expect((await resumeAppRuns(c.runtime, resumingRuntime([again.handle]).runtime, { staleMs: 0 })).adopted).toBe(1)
    expect(again.cancelled.map((reason) => (reason as DOMException).message)).toEqual(['c stopped'])
  })

  it('a run still waiting for a person is snapshotted again at once (its resumed frame included), with a reserve', async () => {
    const store = createMemoryStore()
    const a = processOn(store)
    const { id, callId } = await waitingRun(a)
    await parkRun(a, store, callId)
    const last = (await recordOf(store, id))!.events.last
    // The next process's broker (over the store) lists the request: the run waits again.
    const request = { id: 'r-1', kind: 'call', callId: `${callId}:code:1`, parentCallId: callId, name: 'pay', summary: 's', requestedAt: 1, expiresAt: 2 } as unknown as PendingApproval
    const other = { ...request, id: 'r-2', callId: 'someone-else:code:1', parentCallId: 'someone-else' } as unknown as PendingApproval
    const broker: ApprovalBroker = {
      pending: async () => [other, request],
      decide: async () => ({ ok: false, code: 'APPROVAL_NOT_FOUND', message: 'no' }),
      subscribe: () => () => {},
    } as unknown as ApprovalBroker
    const b = processOn(store, { approvals: broker })
    const { handle, settle } = resumedHandle(callId)
    expect((await resumeAppRuns(b.runtime, resumingRuntime([handle]).runtime)).adopted).toBe(1)
    const manifest = await eventually(async () => ((await manifestOf(store, id))?.next !== undefined ? manifestOf(store, id) : undefined))
    expect(manifest).toMatchObject({ last: last + 1, next: last + 1 + 1_000_000 })
    const body = await b.get(id)
    expect(body.status).toBe('waiting')
    expect(body.approvals.map((x) => x.id)).toEqual(['r-1'])
    settle(OK)
    await eventually(async () => ((await recordOf(store, id))?.status === 'done' ? true : undefined))
  })

  it('a broker whose listing fails, and a snapshot that cannot be read, are reported; the run is adopted anyway, its ids continued from its record', async () => {
    const base = createMemoryStore()
    let failEvents = false
    const store: DurableStore = {
      ...base,
      get: (key) => (failEvents && key.startsWith(RUN_EVENTS_PREFIX) ? Promise.reject(new Error('events unreadable')) : base.get(key)),
      put: (key, value, options) => base.put(key, value, options),
      list: (prefix, options) => base.list(prefix, options),
      delete: (key, options) => base.delete(key, options),
    }
    const a = processOn(store)
    const { id, callId } = await waitingRun(a)
    await parkRun(a, store, callId)
    const last = (await recordOf(store, id))!.events.last
    failEvents = true
    const listingFailure = new Error('listing failed')
    const broker = { pending: () => Promise.reject(listingFailure), decide: async () => ({ ok: true }), subscribe: () => () => {} } as unknown as ApprovalBroker
    const b = processOn(store, { approvals: broker })
    const { handle, settle } = resumedHandle(callId)
    expect((await resumeAppRuns(b.runtime, resumingRuntime([handle]).runtime, { staleMs: 0 })).adopted).toBe(1)
    expect(b.reported).toContain(listingFailure)
    expect(b.reported.some((error) => (error as Error).message === 'events unreadable')).toBe(true)
    failEvents = false
    const frames = await readUntil(sseFrames(await b.events(id)), 'resumed')
    expect(frames.map((f) => f.event)).toEqual(['gap', 'resumed'])
    expect(frames[0]!.data).toMatchObject({ code: 'EVENTS_DROPPED', first: 1, last })
    expect(frames[1]!.id).toBe(String(last + 1))
    settle(OK)
    await until(() => runsHeld(b.app)!.live === 0)
  })

  it('without a store nothing is adopted, and the runtime is still asked to resume', async () => {
    const f = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() })
    const { handle } = resumedHandle('http-run-x')
    const { runtime, asked } = resumingRuntime([handle])
    expect(await resumeAppRuns(f.runtime, runtime)).toEqual({ resumed: [handle], adopted: 0 })
    expect(asked).toEqual([undefined])
  })

  it('a table with no room for it: the run is not adopted', async () => {
    const store = createMemoryStore()
    const a = processOn(store)
    const { id, callId } = await waitingRun(a)
    await parkRun(a, store, callId)
    const b = processOn(store, { runs: { maxRuns: 1 } })
    await waitingRun(b)
    const { handle } = resumedHandle(callId)
    expect((await resumeAppRuns(b.runtime, resumingRuntime([handle]).runtime)).adopted).toBe(0)
    expect((await recordOf(store, id))!.status).toBe('running')
  })
})

describe('resumeAppRuns: what an adopted run keeps', () => {
  it('its agent, its creation time and its id; the adopting app starts beating for it', async () => {
    const store = createMemoryStore()
    const id = crypto.randomUUID()
    const callId = `http-run-${id}`
    await putRecord(store, ({ id, callId, agent: 'alice', status: 'running', createdAt: 1234, events: { first: 1, last: 3, dropped: 0, next: 3 } }))
    const b = processOn(store)
    expect((await store.list(RUN_OWNER_PREFIX)).entries).toEqual([])
    const { handle, settle } = resumedHandle(callId)
    expect((await resumeAppRuns(b.runtime, resumingRuntime([handle]).runtime)).adopted).toBe(1)
    const body = await b.get(id)
    expect(body).toMatchObject({ id, callId, agent: 'alice', createdAt: 1234, status: 'running' })
    const frames = await readUntil(sseFrames(await b.events(id, 3)), 'resumed')
    expect(frames).toEqual([{ event: 'resumed', id: '4', data: { id, callId, agent: 'alice', resumed: true } }])
    expect((await store.list(RUN_OWNER_PREFIX)).entries).toHaveLength(1)
    settle(OK)
    await until(() => runsHeld(b.app)!.live === 0)
  })

  it('an app not made by createToolsApp adopts nothing and holds no runs; nothing resumed lists no approvals', async () => {
    const { handle } = resumedHandle('http-run-x')
    const other = new Hono()
    expect(runsHeld(other)).toBeUndefined()
    let listed = 0
    const broker = { pending: async () => (listed++, []), decide: async () => ({ ok: true }), subscribe: () => () => {} } as unknown as ApprovalBroker
    const b = processOn(createMemoryStore(), { approvals: broker })
    expect((await resumeAppRuns(b.runtime, resumingRuntime([]).runtime)).adopted).toBe(0)
    expect(listed).toBe(0)
  })

  it('without staleMs, an owner silent for less than 30 s is alive, for more it is not', async () => {
    const store = createMemoryStore()
    const recent = crypto.randomUUID()
    const old = crypto.randomUUID()
    await store.put(`${RUN_OWNER_PREFIX}${recent}`, JSON.stringify({ at: Date.now() - 25_000 }))
    await store.put(`${RUN_OWNER_PREFIX}${old}`, JSON.stringify({ at: Date.now() - 35_000 }))
    const ids = { recent: crypto.randomUUID(), old: crypto.randomUUID() }
    for (const [name, owner] of [['recent', recent], ['old', old]] as const) {
      await putRecord(store, ({ id: ids[name], callId: `http-run-${ids[name]}`, status: 'running', createdAt: 1, events: { first: 0, last: 0, dropped: 0 }, owner }))
    }
    const b = processOn(store)
    const { runtime, asked } = resumingRuntime([])
    await resumeAppRuns(b.runtime, runtime)
    expect(asked).toEqual([undefined])
    expect((await recordOf(store, ids.recent))!.status).toBe('running')
    expect((await recordOf(store, ids.old))!.status).toBe('failed')
  })
})

describe('resumeAppRuns: records whose ids continue without a snapshot', () => {
  /** A `running` record of a run `runtime.resumeRuns()` resumed, whose stored `events` are `events`; the id its `resumed` frame gets. */
  async function resumedIdAfter(events: Record<string, unknown>): Promise<string> {
    const store = createMemoryStore()
    const id = crypto.randomUUID()
    const callId = `http-run-${id}`
    await putRecord(store, ({ id, callId, status: 'running', createdAt: Date.now(), events: { first: 1, dropped: 0, ...events } }))
    const b = processOn(store)
    const { handle, settle } = resumedHandle(callId)
    expect((await resumeAppRuns(b.runtime, resumingRuntime([handle]).runtime)).adopted).toBe(1)
    const body = await b.get(id)
    settle(OK)
    await until(() => runsHeld(b.app)!.live === 0)
    return String(body.events.last)
  }

  it('continue after the ids the record says its process may have given (`next`), else its plausible last id plus the reserve, else the reserve', async () => {
    const R = 1_000_000
    expect(await resumedIdAfter({ last: 7, next: 7 })).toBe('8')
    expect(await resumedIdAfter({ last: 7, next: 7 + R })).toBe(String(7 + R + 1))
    // A record that names no bound, or one below its last: its process may have gone on, the reserve is skipped.
    expect(await resumedIdAfter({ last: 7 })).toBe(String(7 + R + 1))
    expect(await resumedIdAfter({ last: 7, next: 6 })).toBe(String(7 + R + 1))
    expect(await resumedIdAfter({ last: 1, next: '9' })).toBe(String(1 + R + 1))
    expect(await resumedIdAfter({ last: MAX_RESTORED_EVENT_ID })).toBe(String(MAX_RESTORED_EVENT_ID + 1))
    expect(await resumedIdAfter({ last: 7, next: MAX_RESTORED_EVENT_ID + 1 })).toBe(String(7 + R + 1))
    for (const bad of [0, -3, 1.5, '7', null, MAX_RESTORED_EVENT_ID + 1, Number.MAX_SAFE_INTEGER + 2]) expect(await resumedIdAfter({ last: bad }), String(bad)).toBe(String(R + 1))
  })
})

describe('resumeAppRuns: a running record nothing will finish', () => {
  /** A `running` record under `owner` (and the process `b` that looks at it), with a snapshot. */
  async function orphan(store: DurableStore, owner: string | undefined, extra: Record<string, unknown> = {}) {
    const id = crypto.randomUUID()
    const callId = `http-run-${id}`
    const record = { id, callId, status: 'running', createdAt: 1, events: { first: 1, last: 2, dropped: 0 }, ...(owner === undefined ? {} : { owner }), ...extra }
    await putRecord(store, (record))
    const log = createRunEventLog(1 << 20)
    log.append('start', { id })
    log.append('log', { text: 'left behind' })
    await createStoreRunEvents(store, 1 << 20).put(id, log)
    return { id, callId, record }
  }

  it('is ended failed INTERRUPTED, its snapshot gone, when its owner is silent, unknown or not an owner id', async () => {
    const store = createMemoryStore()
    const silent = crypto.randomUUID()
    await store.put(`${RUN_OWNER_PREFIX}${silent}`, JSON.stringify({ at: Date.now() - 60_000 }))
    const lost = [await orphan(store, silent), await orphan(store, undefined), await orphan(store, 'not-an-owner-id')]
    // An owner key that is not one of ours is never looked up, even with a fresh beat under it.
    await store.put(`${RUN_OWNER_PREFIX}not-an-owner-id`, JSON.stringify({ at: Date.now() }))
    const b = processOn(store)
    const before = Date.now()
    expect((await resumeAppRuns(b.runtime, resumingRuntime([]).runtime, { staleMs: 30_000 })).adopted).toBe(0)
    for (const { id, record } of lost) {
      const ended = await recordOf(store, id)
      expect(ended).toEqual({ ...record, status: 'failed', settledAt: ended!.settledAt, result: interruptedRunResult('the process running it') })
      expect(ended!.settledAt).toBeGreaterThanOrEqual(before)
      expect(ended!.settledAt).toBeLessThanOrEqual(Date.now())
    }
    expect(await eventKeys(store)).toEqual([])
    // GET of such a record in any process: failed, with the result.
    expect((await b.get(lost[0]!.id)).result).toEqual(interruptedRunResult('the process running it'))
  })

  it('is left alone while its owner beats, while its durable state is in the store, and when it is this process’s own; a finished record too', async () => {
    const store = createMemoryStore()
    const alive = crypto.randomUUID()
    await store.put(`${RUN_OWNER_PREFIX}${alive}`, JSON.stringify({ at: Date.now() - 1_000 }))
    const beating = await orphan(store, alive)
    const parked = await orphan(store, crypto.randomUUID())
    await markParked(store, parked.callId)
    const finished = await orphan(store, undefined, { status: 'done', settledAt: 2 })
    const b = processOn(store)
    // Its own owner id: from a run of its own.
    const mine = await b.start('return 1')
    await until(() => runsHeld(b.app)!.live === 0)
    const own = (await eventually(async () => ((await recordOf(store, mine.id))?.status === 'done' ? recordOf(store, mine.id) : undefined))).owner!
    const ours = await orphan(store, own)
    expect((await resumeAppRuns(b.runtime, resumingRuntime([]).runtime, { staleMs: 30_000 })).adopted).toBe(0)
    for (const { id, record } of [beating, parked, finished, ours]) expect(await recordOf(store, id)).toEqual(record)
    expect((await eventKeys(store)).length).toBe(8)
    // Once its beat is older than staleMs, the beating owner's run is lost; the others stay as they are.
    expect((await resumeAppRuns(b.runtime, resumingRuntime([]).runtime, { staleMs: 500 })).adopted).toBe(0)
    expect((await recordOf(store, beating.id))!.status).toBe('failed')
    for (const { id, record } of [parked, finished, ours]) expect(await recordOf(store, id)).toEqual(record)
    // This process's own record is never lost to it, whatever staleMs says.
    expect((await resumeAppRuns(b.runtime, resumingRuntime([]).runtime, { staleMs: 0 })).adopted).toBe(0)
    expect(await recordOf(store, ours.id)).toEqual(ours.record)
  })

  it('DELETE of a stored running record is refused here (only its process can cancel it); of a finished one, its body', async () => {
    const store = createMemoryStore()
    const running = await orphan(store, crypto.randomUUID())
    const finished = await orphan(store, undefined, { status: 'done', settledAt: 2, agent: 'alice', result: OK })
    const b = processOn(store)
    const refused = await b.app.request(`/v1/runs/${running.id}`, { method: 'DELETE', headers: AUTH })
    expect(refused.status).toBe(404)
    expect(await errorOf(refused)).toEqual({ code: 'RUN_NOT_FOUND', message: `run ${running.id} is not running in this process; it cannot be cancelled here` })
    const answered = await b.app.request(`/v1/runs/${finished.id}`, { method: 'DELETE', headers: AUTH })
    expect(answered.status).toBe(200)
    expect(await answered.json()).toEqual({ id: finished.id, callId: finished.callId, agent: 'alice', status: 'done', createdAt: 1, settledAt: 2, approvals: [], events: { first: 1, last: 2, dropped: 0 }, result: OK })
    // Its events live in the process that ran it: here, none.
    const events = await b.events(finished.id)
    expect(events.status).toBe(404)
    expect((await errorOf(events)).message).toBe(`no run ${finished.id} (never started here, or evicted after its retention)`)
    const unknown = crypto.randomUUID()
    expect((await errorOf(await b.app.request(`/v1/runs/${unknown}`, { headers: AUTH }))).message).toBe(`no run ${unknown} (never started here, or evicted after its retention)`)
  })
})

describe('/v1/runs: the answers of its routes', () => {
  it('POST answers 202 with the run, its Location and call id; its finished events with their last id are 204; Last-Event-ID refusals say why', async () => {
    const a = processOn(createMemoryStore())
    const response = await a.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code: 'return 1', description: 'd' }) })
    expect(response.status).toBe(202)
    const body = (await response.json()) as { id: string; callId: string }
    expect(body).toEqual({ id: body.id, status: 'running', callId: body.callId })
    expect(response.headers.get('Location')).toBe(`/v1/runs/${body.id}`)
    expect(response.headers.get('X-Toolyard-Call-Id')).toBe(body.callId)
    await until(() => runsHeld(a.app)!.live === 0)
    const stream = await a.events(body.id)
    expect([stream.headers.get('Content-Type'), stream.headers.get('Cache-Control'), stream.headers.get('X-Accel-Buffering')]).toEqual(['text/event-stream; charset=utf-8', 'no-store', 'no'])
    const frames = parseSse(await stream.text())
    const last = frames.length
    const head = await a.app.request(`/v1/runs/${body.id}/events`, { method: 'HEAD', headers: AUTH })
    expect([head.status, head.headers.get('Content-Type'), head.headers.get('Cache-Control')]).toEqual([200, 'text/event-stream; charset=utf-8', 'no-store'])
    expect(runsHeld(a.app)!.streams).toBe(0)
    expect(frames.at(-1)).toEqual({ event: 'end', id: String(last), data: { id: body.id, status: 'done' } })
    expect((await a.events(body.id, last)).status).toBe(204)
    expect(parseSse(await (await a.events(body.id, last - 1)).text()).map((f) => f.event)).toEqual(['end'])
    const malformed = await a.events(body.id, 'abc')
    expect(malformed.status).toBe(400)
    expect(await errorOf(malformed)).toEqual({ code: 'INVALID_REQUEST', message: 'Last-Event-ID must be the id of an event of this run (a non-negative integer)' })
    expect(await errorOf(await a.events(body.id, last + 1))).toEqual({ code: 'INVALID_REQUEST', message: `Last-Event-ID ${last + 1} is past this run's last event id (${last})` })
  })

  it('a client that leaves its events stream frees its place; the run goes on', async () => {
    const a = processOn(createMemoryStore())
    const { id } = await waitingRun(a)
    // waitingRun's own reader is still open: one stream.
    expect(runsHeld(a.app)!.streams).toBe(1)
    const client = new AbortController()
    const response = await a.app.request(new Request(`http://localhost/v1/runs/${id}/events`, { headers: AUTH, signal: client.signal }))
    const stream = sseFrames(response)
    await stream.until('approval')
    expect(runsHeld(a.app)!.streams).toBe(2)
    client.abort()
    await until(() => runsHeld(a.app)!.streams === 1)
    // Its wait for the next frame let go of the run's buffer too: at most the other reader's remains.
    expect(runsHeld(a.app)!.subscribers).toBeLessThanOrEqual(1)
    expect((await a.get(id)).status).toBe('waiting')
  })

  it('a client that does not read falls behind its stream\'s backlog: a last error frame without an id, its place freed, the run going on', async () => {
    const f = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() }, { maxStreamBacklogBytes: 64, heartbeatMs: 1 })
    const response = await f.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code: `console.log('x'.repeat(500)); await tools.wait({}); return 1`, description: 'd' }) })
    const { id } = (await response.json()) as { id: string }
    await f.wait.started
    const stream = await f.app.request(`/v1/runs/${id}/events`, { headers: AUTH })
    // Keep-alives pile up behind a frame the client does not take.
    await new Promise((resolve) => setTimeout(resolve, 100))
    const last = parseSse(await stream.text()).at(-1)!
    expect(last).toEqual({ event: 'error', data: { id, error: { code: 'STREAM_BACKLOG', message: expect.stringMatching(/^this stream fell behind: \d+ bytes of events were not read in time \(maxStreamBacklogBytes 64\); reconnect with Last-Event-ID to resume$/) } } })
    expect(runsHeld(f.app)).toMatchObject({ live: 1, streams: 0 })
    await f.app.request(`/v1/runs/${id}`, { method: 'DELETE', headers: AUTH })
  })

  it('a table full of running runs: 503 OVERLOADED saying how full, with Retry-After', async () => {
    const a = processOn(createMemoryStore(), { runs: { maxRuns: 1 } })
    await waitingRun(a)
    const refused = await a.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code: 'return 1', description: 'd' }) })
    expect(refused.status).toBe(503)
    expect(refused.headers.get('Retry-After')).toBe('1')
    expect(await errorOf(refused)).toEqual({ code: 'OVERLOADED', message: `the run table is full of running runs (1 runs, ${runsHeld(a.app)!.bytes} bytes); retry later` })
  })

  it('an events stream sends keep-alives at the heartbeat, none without one', async () => {
    const a = processOn(createMemoryStore(), { heartbeatMs: 5 })
    const { id } = await waitingRun(a)
    const reader = (await a.events(id)).body!.pipeThrough(new TextDecoderStream()).getReader()
    let text = ''
    while (!text.includes(': keep-alive\n\n')) text += (await reader.read()).value ?? ''
    await reader.cancel()
    const quiet = processOn(createMemoryStore(), { heartbeatMs: 0 })
    const run = await quiet.start('await new Promise((resolve) => setTimeout(resolve, 40)); return 1')
    expect(await (await quiet.events(run.id)).text()).not.toContain('keep-alive')
  })

  it('a gap names the ids it skips and where the run\'s status is', async () => {
    const a = processOn(createMemoryStore(), { runs: { maxEventBytesPerRun: 400 } })
    const { id } = await a.start(`for (let i = 0; i < 20; i++) console.log('line ' + i); return 1`)
    await until(() => runsHeld(a.app)!.live === 0)
    const [gap] = parseSse(await (await a.events(id)).text())
    const { last } = gap!.data as { last: number }
    expect(gap).toEqual({
      event: 'gap',
      data: {
        id,
        code: 'EVENTS_DROPPED',
        first: 1,
        last,
        message: `events 1–${last} of this run were dropped from its buffer (maxEventBytesPerRun) or not kept across a restart, and cannot be sent; GET /v1/runs/${id} has its status and result`,
      },
    })
  })

  it('the run is handed to the platform\'s waitUntil (workerd), settled when the run ends', async () => {
    const a = processOn(createMemoryStore())
    const kept: Promise<unknown>[] = []
    const context = { waitUntil: (promise: Promise<unknown>) => void kept.push(promise), passThroughOnException: () => {}, props: {} }
    const response = await a.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code: 'await tools.hold({}); return 1', description: 'd' }) }, undefined, context as never)
    const { id } = (await response.json()) as { id: string }
    expect(kept).toHaveLength(1)
    let settled = false
    void kept[0]!.then(() => (settled = true))
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(settled).toBe(false)
    await a.release()
    await kept[0]
    expect((await a.get(id)).status).toBe('done')
  })

  it('without a session-log hub a run still runs to its end (no sub-call frames)', async () => {
    const runtime = createToolRuntime({ mode: 'both', codeRuntime: createInProcessRuntime() })
    const app = createToolsApp(runtime, { token: TOKEN })
    const response = await app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code: 'return 2', description: 'd' }) })
    const { id } = (await response.json()) as { id: string }
    await until(() => runsHeld(app)!.live === 0)
    const frames = parseSse(await (await app.request(`/v1/runs/${id}/events`, { headers: AUTH })).text())
    expect(frames.map((f) => f.event)).toEqual(['start', 'result', 'end'])
  })

  it('a run that succeeds while its durable state is in the store ends here (only a failed one is parked)', async () => {
    const store = createMemoryStore()
    const a = processOn(store)
    const run = await a.start('await tools.hold({}); return 3')
    await markParked(store, run.callId)
    await a.release()
    await until(() => runsHeld(a.app)!.live === 0)
    expect(parseSse(await (await a.events(run.id)).text()).at(-1)).toMatchObject({ event: 'end', data: { id: run.id, status: 'done' } })
    await eventually(async () => ((await recordOf(store, run.id))?.status === 'done' ? true : undefined))
  })

  it('without a store, nothing is written and nothing is reported', async () => {
    const reported: unknown[] = []
    const broker = createApprovalBroker()
    const f = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime(), approvals: broker }, { onError: (error: unknown) => void reported.push(error) })
    f.runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'echo' ? { kind: 'ask' } : decision))
    const response = await f.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code: "return await tools.echo({ text: 'x' })", description: 'd' }) })
    const { id } = (await response.json()) as { id: string }
    const stream = sseFrames(await f.app.request(`/v1/runs/${id}/events`, { headers: AUTH }))
    const approval = (await stream.until('approval')).data as PendingApproval
    // Asked without a reason: the listing has none.
    const listed = ((await (await f.app.request(`/v1/runs/${id}`, { headers: AUTH })).json()) as RunBody).approvals
    expect(listed).toHaveLength(1)
    expect('reason' in listed[0]!).toBe(false)
    await broker.decide(approval.id, { decision: 'allow' })
    await stream.until('end')
    expect(reported).toEqual([])
  })
})

describe('/v1/runs with a store: a burst of frames while a snapshot is written', () => {
  it('costs one more write, not one per frame', async () => {
    const base = createMemoryStore()
    let gate: (() => void) | undefined
    let held: Promise<void> | undefined
    let manifests = 0
    // The first piece written waits for the test: every frame of the burst arrives during that write.
    const store: DurableStore = {
      ...base,
      get: (key) => base.get(key),
      list: (prefix, options) => base.list(prefix, options),
      delete: (key, options) => base.delete(key, options),
      async put(key, value, options) {
        if (key.startsWith(RUN_EVENTS_PREFIX) && key.includes('/', RUN_EVENTS_PREFIX.length) && held === undefined) {
          held = new Promise<void>((resolve) => (gate = resolve))
          await held
        }
        if (key.startsWith(RUN_EVENTS_PREFIX) && !key.includes('/', RUN_EVENTS_PREFIX.length)) manifests++
        return base.put(key, value, options)
      },
    }
    const a = processOn(store)
    const { id } = await a.start(`const paid = tools.pay({ cents: 2 })\nawait tools.hold({})\nfor (let i = 0; i < 40; i++) await tools.echo({ text: 'n' + i })\nreturn await paid`)
    const stream = sseFrames(await a.events(id))
    await stream.until('approval')
    await until(() => held !== undefined)
    await a.release()
    for (let frame = await stream.next(); !(frame?.event === 'dispatch' && (frame.data as { arguments: { text?: string } }).arguments.text === 'n39'); frame = await stream.next()) {
      if (frame === undefined) throw new Error('the stream ended')
    }
    expect(manifests).toBe(0)
    gate!()
    await eventually(async () => (manifests === 2 ? true : undefined))
    // Let any write still queued land before counting again.
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(manifests).toBe(2)
    // The last snapshot holds every frame up to the last one of the burst.
    expect((await manifestOf(base, id))!.last).toBe(Number(stream.seen.at(-1)!.id))
    const approval = (await a.broker.pending())[0]!
    await a.broker.decide(approval.id, { decision: 'deny' })
    await until(() => runsHeld(a.app)!.live === 0)
    await eventually(async () => ((await eventKeys(base)).length === 0 ? true : undefined))
  })
})

describe('/v1/runs with a store: the owner\'s heartbeat', () => {
  afterEach(() => {
    vi.useRealTimers()
  })
  const beatOf = async (store: DurableStore, owner: string) => (await read<{ at: number }>(store, `${RUN_OWNER_PREFIX}${owner}`))?.at
  const tick = () => new Promise((resolve) => setTimeout(resolve, 5))

  it('beats every 5 s once the process runs a run: one heartbeat per process (its parked runs share it) until dispose', async () => {
    // Only the intervals are the test's: the runs' own timers stay real.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] })
    const store = createMemoryStore()
    const a = processOn(store)
    const first = await a.start('await tools.hold({}); return 1')
    const owner = (await eventually(() => recordOf(store, first.id))).owner!
    expect(owner).toBe(a.runtime.runs.owner)
    const started = await eventually(() => beatOf(store, owner))
    await tick()
    vi.advanceTimersByTime(4_999)
    await tick()
    expect(await beatOf(store, owner)).toBe(started)
    vi.advanceTimersByTime(1)
    await eventually(async () => ((await beatOf(store, owner))! > started! ? beatOf(store, owner) : undefined))
    expect(vi.getTimerCount()).toBe(1)
    // A second run while one runs: still one heartbeat.
    await a.start('return 3')
    expect(vi.getTimerCount()).toBe(1)
    await a.release()
    await until(() => runsHeld(a.app)!.live === 0)
    await a.runtime.dispose()
    expect(vi.getTimerCount()).toBe(0)
  })

  it('a heartbeat write that fails does not fail the run', async () => {
    const base = createMemoryStore()
    const failure = new Error('owners down')
    let failed = 0
    const store: DurableStore = {
      ...base,
      get: (key) => base.get(key),
      list: (prefix, options) => base.list(prefix, options),
      delete: (key, options) => base.delete(key, options),
      put: (key, value, options) => (key.startsWith(RUN_OWNER_PREFIX) ? (failed++, Promise.reject(failure)) : base.put(key, value, options)),
    }
    const a = processOn(store)
    const { id } = await a.start('return 1')
    await until(() => failed > 0 && runsHeld(a.app)!.live === 0)
    expect((await a.get(id)).status).toBe('done')
  })

  it('an app without a store keeps no heartbeat', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] })
    const f = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() })
    const response = await f.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code: 'await tools.wait({}); return 1', description: 'd' }) })
    const { id } = (await response.json()) as { id: string }
    await f.wait.started
    expect(vi.getTimerCount()).toBe(0)
    await f.app.request(`/v1/runs/${id}`, { method: 'DELETE', headers: AUTH })
  })
})

describe('/v1/runs: what a run holds while it lives, and lets go of', () => {
  it('its buffer holds only its own sub-calls; its hub and broker subscriptions and its stream subscriptions end with it', async () => {
    const a = processOn(createMemoryStore())
    const hubBefore = a.hub.subscriberCount
    const brokerBefore = a.broker.subscriberCount
    const first = await a.start(`await tools.echo({ text: 'one' }); await tools.hold({}); return 1`)
    const second = await a.start(`await tools.echo({ text: 'two' }); return 2`)
    const live = sseFrames(await a.events(first.id))
    await live.until('dispatch')
    await until(() => runsHeld(a.app)!.live === 1)
    await a.release()
    const frames = await live.rest()
    const others = parseSse(await (await a.events(second.id)).text())
    const texts = (list: SseFrame[]) => list.filter((f) => f.event === 'dispatch').map((f) => (f.data as { arguments: { text?: string } }).arguments.text ?? 'hold')
    expect(texts(frames)).toEqual(['one', 'hold'])
    expect(texts(others)).toEqual(['two'])
    expect(a.hub.subscriberCount).toBe(hubBefore)
    expect(a.broker.subscriberCount).toBe(brokerBefore)
    expect(runsHeld(a.app)).toMatchObject({ live: 0, subscribers: 0, streams: 0 })
  })

  it('a sibling call\'s dispatch is streamed while another call of the run waits for a person', async () => {
    const a = processOn(createMemoryStore())
    const { id } = await a.start(`const [paid, echoed] = await Promise.all([tools.pay({ cents: 1 }), tools.echo({ text: 'meanwhile' })]); return [paid, echoed.text]`)
    const live = sseFrames(await a.events(id))
    const approval = (await live.until('approval')).data as PendingApproval
    // The echo may be dispatched before the request is open (the broker hashes and writes it first): either order.
    while (!live.seen.some((frame) => frame.event === 'dispatch' && (frame.data as { name: string }).name === 'echo')) {
      if ((await live.next()) === undefined) throw new Error('the stream ended')
    }
    expect((await a.broker.pending()).map((p) => p.id)).toEqual([approval.id])
    await a.broker.decide(approval.id, { decision: 'allow' })
    expect((await live.rest()).at(-1)).toMatchObject({ event: 'end', data: { status: 'done' } })
  })

  it('a held cut-off is not seen before the run ends (or 256 frames)', async () => {
    let listener: ApprovalListener | undefined
    const stub = { pending: async () => [], decide: async () => ({ ok: true }), subscribe: (l: ApprovalListener) => ((listener = l), () => (listener = undefined)) } as unknown as ApprovalBroker
    const a = processOn(createMemoryStore(), { approvals: stub })
    const { id, callId } = await a.start(`await tools.hold({}); await tools.echo({ text: 'a' }); console.log('after'); await tools.wait({}); return 1`)
    const live = sseFrames(await a.events(id))
    await live.until('dispatch-start')
    listener!({ type: 'requested', approval: { id: 'q', kind: 'call', callId: `${callId}:code:2`, parentCallId: callId, name: 'echo' }, at: 1 } as unknown as ApprovalEvent)
    const approvalId = Number((await live.until('approval')).id)
    await a.release()
    await a.wait.started
    // Seen: the hold's dispatch and the echo's dispatch-start; held: the echo's dispatch, the log line, the wait's dispatch-start.
    expect((await a.get(id)).events.last).toBe(approvalId + 2)
    await a.app.request(`/v1/runs/${id}`, { method: 'DELETE', headers: AUTH })
    const tail = (await live.rest()).slice(live.seen.findIndex((f) => f.event === 'approval') + 1)
    expect(tail.map((f) => f.event)).toEqual(['dispatch', 'dispatch-start', 'dispatch', 'log', 'dispatch-start', 'dispatch', 'result', 'end'])
  })

  it('the heartbeat timer of an events stream is cleared when the stream ends', async () => {
    const a = processOn(createMemoryStore(), { heartbeatMs: 4321 })
    const set = vi.spyOn(globalThis, 'setInterval')
    const clear = vi.spyOn(globalThis, 'clearInterval')
    try {
      const { id } = await a.start('return 1')
      await until(() => runsHeld(a.app)!.live === 0)
      await (await a.events(id)).text()
      const heartbeats = set.mock.calls.flatMap((call, i) => (call[1] === 4321 ? [set.mock.results[i]!.value as unknown] : []))
      expect(heartbeats).toHaveLength(1)
      expect(clear.mock.calls.map((call) => call[0])).toContain(heartbeats[0])
    } finally {
      set.mockRestore()
      clear.mockRestore()
    }
  })
})

describe('/v1/runs with a store: records read from it, and writes that fail', () => {
  it('a malformed id never reaches the store: 404, however it is spelt', async () => {
    const a = processOn(createMemoryStore())
    for (const id of ['a'.repeat(300), 'no%20such', crypto.randomUUID().toUpperCase()]) {
      for (const method of ['GET', 'DELETE']) {
        const response = await a.app.request(`/v1/runs/${id}`, { method, headers: AUTH })
        expect(response.status, `${method} ${id}`).toBe(404)
        expect(await errorOf(response)).toEqual({ code: 'RUN_NOT_FOUND', message: 'no such run (a run id is a UUID)' })
      }
    }
  })

  it('GET of a record another process is running says running; of a finished one, never its leftover requests', async () => {
    const store = createMemoryStore()
    const [elsewhere, done] = [crypto.randomUUID(), crypto.randomUUID()]
    const running = { id: elsewhere, callId: `http-run-${elsewhere}`, status: 'running', createdAt: 1, events: { first: 1, last: 2, dropped: 0 }, owner: crypto.randomUUID() }
    const finished = { ...running, id: done, callId: `http-run-${done}`, status: 'done', settledAt: 2 }
    for (const record of [running, finished]) await putRecord(store, (record))
    const leftover = { id: 'left', kind: 'call', callId: `http-run-${done}:code:1`, parentCallId: `http-run-${done}`, name: 'pay', summary: 's', requestedAt: 1, expiresAt: 2 }
    const broker = { pending: async () => [leftover], decide: async () => ({ ok: true }), subscribe: () => () => {} } as unknown as ApprovalBroker
    const b = processOn(store, { approvals: broker })
    expect(await b.get(running.id)).toMatchObject({ status: 'running', approvals: [] })
    expect(await b.get(finished.id)).toMatchObject({ status: 'done', approvals: [] })
  })

  it('a record write that fails is reported, and the run goes on to its end', async () => {
    const base = createMemoryStore()
    const failure = new Error('records down')
    const store: DurableStore = {
      ...base,
      get: (key) => base.get(key),
      list: (prefix, options) => base.list(prefix, options),
      delete: (key, options) => base.delete(key, options),
      put: (key, value, options) => (key.startsWith('runs/http-run-') ? Promise.reject(failure) : base.put(key, value, options)),
    }
    const a = processOn(store)
    const { id } = await a.start('return 1')
    await until(() => runsHeld(a.app)!.live === 0)
    expect((await a.get(id)).status).toBe('done')
    await until(() => a.reported.length >= 2)
    expect(a.reported.every((error) => error === failure)).toBe(true)
  })

  it('a runtime whose execute rejects, with a store: the run ends failed with an internal error and end', async () => {
    const store = createMemoryStore()
    const reported: unknown[] = []
    const real = createToolRuntime({ mode: 'both', codeRuntime: createInProcessRuntime(), store })
    const broken = Object.create(real, { execute: { value: () => Promise.reject(new Error('runtime bug')) } }) as ToolRuntime
    const app = createToolsApp(broken, { token: TOKEN, onError: (error) => void reported.push((error as Error).message) })
    const response = await app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code: 'return 1', description: 'd' }) })
    const { id, callId } = (await response.json()) as { id: string; callId: string }
    await markParked(store, callId)
    await until(() => runsHeld(app)!.live === 0)
    const frames = parseSse(await (await app.request(`/v1/runs/${id}/events`, { headers: AUTH })).text())
    expect(frames.slice(-2)).toEqual([
      { event: 'error', id: String(frames.length - 1), data: { error: { code: 'INTERNAL', message: 'internal error' } } },
      { event: 'end', id: String(frames.length), data: { id, status: 'failed' } },
    ])
    expect(reported).toEqual(['runtime bug'])
  })

  it('resumeAppRuns: a record that cannot be read is passed over; without a broker nothing is listed, nothing reported', async () => {
    const store = createMemoryStore()
    const reported: unknown[] = []
    await store.put(`runs/http-run-${crypto.randomUUID()}`, '{not json')
    const id = crypto.randomUUID()
    await putRecord(store, ({ id, callId: `http-run-${id}`, status: 'running', createdAt: 1, events: { first: 1, last: 1, dropped: 0 } }))
    const f = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime(), store }, { onError: (error: unknown) => void reported.push(error) })
    const { handle, settle } = resumedHandle(`http-run-${id}`)
    expect((await resumeAppRuns(f.runtime, resumingRuntime([handle]).runtime)).adopted).toBe(1)
    settle(OK)
    await until(() => runsHeld(f.app)!.live === 0)
    expect(reported).toEqual([])
  })

  it('resumeAppRuns: a run waiting only for another run\'s request, or no longer for its own, is not snapshotted again', async () => {
    const store = createMemoryStore()
    const a = processOn(store)
    const { id, callId } = await waitingRun(a)
    await parkRun(a, store, callId)
    const parkedLast = (await manifestOf(store, id))!.last
    let listener: ApprovalListener | undefined
    const own = { id: 'mine', kind: 'call', callId: `${callId}:code:1`, parentCallId: callId, name: 'pay', summary: 's', requestedAt: 1, expiresAt: 2 }
    const other = { ...own, id: 'theirs', callId: 'someone-else:code:1', parentCallId: 'someone-else' }
    let listed: unknown[] = [other]
    const broker = {
      pending: async () => listed,
      decide: async () => ({ ok: true }),
      subscribe: (l: ApprovalListener) => ((listener = l), () => (listener = undefined)),
    } as unknown as ApprovalBroker
    const b = processOn(store, { approvals: broker })
    const { handle, settle } = resumedHandle(callId)
    expect((await resumeAppRuns(b.runtime, resumingRuntime([handle]).runtime)).adopted).toBe(1)
    await new Promise((resolve) => setTimeout(resolve, 30))
    expect(await manifestOf(store, id)).toMatchObject({ last: parkedLast })
    expect((await manifestOf(store, id))!.next).toBeUndefined()
    settle(OK)
    await until(() => runsHeld(b.app)!.live === 0)

    // Its own request pending: snapshotted at `resumed`; settled, no more.
    const c2 = processOn(store)
    const again = await waitingRun(c2)
    await parkRun(c2, store, again.callId)
    listed = [{ ...own, callId: `${again.callId}:code:1`, parentCallId: again.callId }]
    const c = processOn(store, { approvals: broker })
    const resumedAgain = resumedHandle(again.callId)
    expect((await resumeAppRuns(c.runtime, resumingRuntime([resumedAgain.handle]).runtime)).adopted).toBe(1)
    const atResumed = await eventually(async () => ((await manifestOf(store, again.id))?.next !== undefined ? manifestOf(store, again.id) : undefined))
    listener!({ type: 'decided', approval: listed[0], decision: 'allow', at: 3 } as unknown as ApprovalEvent)
    await new Promise((resolve) => setTimeout(resolve, 30))
    expect((await manifestOf(store, again.id))!.last).toBe(atResumed.last)
    resumedAgain.settle(OK)
    await until(() => runsHeld(c.app)!.live === 0)
  })
})

describe('a restart inside the reserved ids (issue 35 item 4)', () => {
  it('a client whose Last-Event-ID is the last saved frame is told the ids were reserved, not that events were dropped', async () => {
    const store = createMemoryStore()
    const a = processOn(store)
    const { id, callId } = await waitingRun(a)
    // The snapshot taken while it waits reserves a million ids; then the process dies (no graceful stop).
    const saved = await eventually(async () => ((await manifestOf(store, id))?.next !== undefined ? manifestOf(store, id) : undefined))
    await markParked(store, callId)
    const b = processOn(store)
    const { handle, settle } = resumedHandle(callId)
    expect((await resumeAppRuns(b.runtime, resumingRuntime([handle]).runtime, { staleMs: 0 })).adopted).toBe(1)
    const frames = await readUntil(sseFrames(await b.events(id, saved.last)), 'resumed')
    expect(frames.map((f) => f.event)).toEqual(['gap', 'resumed'])
    expect(frames[0]!.data).toEqual({
      id,
      code: 'EVENT_IDS_RESERVED',
      first: saved.last + 1,
      last: saved.next,
      message: `ids ${saved.last + 1}–${saved.next} were reserved by the process that ran this run before the server restarted, for events it might send after its last save; no event of this run was dropped from its buffer, and the run's events go on after them (an event sent under a reserved id after that save, if any, was not kept); GET /v1/runs/${id} has its status and result`,
    })
    expect(JSON.stringify(frames[0]!.data)).not.toMatch(/dropped from its buffer \(maxEventBytesPerRun\)/)
    expect(frames[1]!.id).toBe(String(saved.next! + 1))
    // From inside the reserve: the same, from there on.
    const inside = await readUntil(sseFrames(await b.events(id, saved.last + 500)), 'resumed')
    expect(inside[0]!.data).toMatchObject({ code: 'EVENT_IDS_RESERVED', first: saved.last + 501, last: saved.next })
    // From the start: every saved frame, the same gap, then the new ones.
    const all = await readUntil(sseFrames(await b.events(id)), 'resumed')
    expect(all.map((f) => f.event).slice(-2)).toEqual(['gap', 'resumed'])
    expect(all.at(-2)!.data).toMatchObject({ code: 'EVENT_IDS_RESERVED', first: saved.last + 1, last: saved.next })
    settle(OK)
    await eventually(async () => ((await recordOf(store, id))?.status === 'done' ? true : undefined))
  })

  it('a gap that spans dropped frames and a reserve says both', () => {
    const log = createRunEventLog(1 << 20, undefined, { frames: [{ id: 5, text: 'event: log\nid: 5\ndata: {}\n\n' }], last: 1005, dropped: 4, reservedFrom: 6 })
    log.append('resumed', {})
    expect(log.since(0)).toMatchObject({ gap: { first: 1, last: 4 }, frames: [{ id: 5 }] })
    expect(log.since(0).reserved).toBeUndefined()
    expect(log.since(5)).toMatchObject({ gap: { first: 6, last: 1005 }, reserved: { first: 6, last: 1005 }, frames: [{ id: 1006 }] })
  })
})
