/**
 * Runs as HTTP resources: `POST /v1/runs` starts a background run, `GET` reads it and its
 * resumable event stream, `DELETE` cancels it (docs/http-api.md, "Runs as resources").
 *
 * @module
 */
import type { Context, Handler, Hono } from 'hono'
import type { PendingApproval } from '../approvals/types.js'
import type { ResumedRunPool, RunService } from '../durable/run-service.js'
import type { ToolRuntime } from '../runtime-types.js'
import type { ToolExecutionResult } from '../types.js'
import { HttpError, OVERLOADED_RETRY_AFTER_SECONDS } from './http-errors.js'
import { approvalOfRun, forwardApprovals } from './_approvals.js'
import { EVENT_OF } from './_run-stream.js'
import { CALL_ID_HEADER, prepareRun } from './_routes.js'
import type { ApiConfig, ApiRoute, PreparedRun } from './_routes.js'
import { sseResponse } from './_sse-sender.js'
import type { Role } from './auth.js'
import { canCancelRun, canReadRun, requestPrincipal } from './_principals.js'
import type { SseSender } from './_sse-sender.js'
import { continuedIds, createRunTable, runRecord } from '../durable/run-table.js'
import type { ResolvedRunTableOptions, RestoredRunEvents, RunEventStore, RunRecordJson, RunRecordStore, RunStatus, RunTable, RunTableHeld, TableRun } from '../durable/run-table.js'

/** What the run routes read besides the API's configuration. */
export interface RunsConfig extends ApiConfig {
  readonly runs: ResolvedRunTableOptions
}

/** A pending approval as `GET /v1/runs/:id` lists it: what a person needs to decide it. */
export interface RunApproval {
  /** What `POST /v1/approvals/:id` takes. */
  readonly id: string
  readonly kind: PendingApproval['kind']
  /** The asking call (a sub-call `<run callId>:code:<n>`, or the run's own call for a plan). */
  readonly callId: string
  readonly name: string
  readonly summary: string
  /** What the call will do, from its tool's preview (`PendingApproval.preview`), when it has one. */
  readonly preview?: string
  readonly reason?: string
  readonly requestedAt: number
  readonly expiresAt: number
}

/** The body of `GET /v1/runs/:id` (and of `DELETE`). */
export interface RunBody {
  readonly id: string
  readonly callId: string
  readonly agent?: string
  /** The id of the principal that started it. */
  readonly principal?: string
  readonly status: RunStatus
  readonly createdAt: number
  readonly settledAt?: number
  readonly approvals: readonly RunApproval[]
  /** The ids the event buffer still holds (`first`..`last`) and how many it dropped. */
  readonly events: RunRecordJson['events']
  /** What `POST /v1/run` would have answered, once the run ended. */
  readonly result?: ToolExecutionResult
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const END_EVENT = 'end'
/** The most bytes of buffered frames queued in one synchronous step of a replay: the host does the rest in slices. */
const MAX_REPLAY_BATCH_BYTES = 128 * 1024

const held = new WeakMap<Hono, RunTable>()

/**
 * What the run table of an app created by `createToolsApp` holds (runs, running ones,
 * bytes, event subscriptions), or `undefined` for another app. For leak checks in tests
 * and health probes; nothing else about the runs is reachable through it.
 */
export function runsHeld(app: Hono): RunTableHeld | undefined {
  return held.get(app)?.held
}

function runNotFound(id: string): HttpError {
  // A malformed id is not echoed: it is the client's text, of any length.
  return new HttpError('RUN_NOT_FOUND', UUID.test(id) ? `no run ${id} (never started here, or evicted after its retention)` : 'no such run (a run id is a UUID)')
}

function invalidRequest(message: string): HttpError {
  return new HttpError('INVALID_REQUEST', message)
}

/** The run's pending approvals. Awaited: a broker over a store lists them asynchronously. */
async function pendingOf(config: ApiConfig, callId: string): Promise<RunApproval[]> {
  if (config.approvals === undefined) return []
  const pending: readonly PendingApproval[] = await config.approvals.pending()
  return pending
    .filter((approval) => approvalOfRun(approval, callId))
    .map((a) => ({
      id: a.id,
      kind: a.kind,
      callId: a.callId,
      name: a.name,
      summary: a.summary,
      ...(a.preview === undefined ? {} : { preview: a.preview }),
      ...(a.reason === undefined ? {} : { reason: a.reason }),
      requestedAt: a.requestedAt,
      expiresAt: a.expiresAt,
    }))
}

/** The answer of `GET /v1/runs/:id` for a record: `running` becomes `waiting` while approvals are pending. */
async function runBody(record: RunRecordJson, config: ApiConfig, cancelRequested: boolean): Promise<RunBody> {
  const approvals = record.status === 'running' ? await pendingOf(config, record.callId) : []
  const status: RunStatus = record.status !== 'running' ? record.status : cancelRequested ? 'cancelled' : approvals.length > 0 ? 'waiting' : 'running'
  return {
    id: record.id,
    callId: record.callId,
    ...(record.agent === undefined ? {} : { agent: record.agent }),
    ...(record.principal === undefined ? {} : { principal: record.principal }),
    status,
    createdAt: record.createdAt,
    ...(record.settledAt === undefined ? {} : { settledAt: record.settledAt }),
    approvals,
    events: record.events,
    ...(record.result === undefined ? {} : { result: record.result }),
  }
}

/**
 * Writes each run's record and event snapshot in order (a later write never lands before
 * an earlier one), the record marked with `owner`; failures go to `report`. A snapshot
 * asked for while one is already queued is that one: it reads the buffer when its turn
 * comes, so a burst of frames costs one write (plus the one under way, if any).
 */
function recordWriter(service: RunService, events: RunEventStore | undefined, config: ApiConfig) {
  const records = service.records
  const snapshots = new Set<string>()
  /** Each run's last snapshot (its last id, and whether it reserved ids): an unchanged one is not written again. */
  const written = new Map<string, string>()
  /** The id up to which each run's last snapshot reserved ids: past half of the reserve, the next frame writes a snapshot. */
  const reserved = new Map<string, number>()
  // Through the runtime's runs: a dispose waits for these writes.
  const enqueue = (run: TableRun, write: () => Promise<void>, request: Request): void => {
    if (records === undefined) return
    // A run another instance took over (this one was presumed dead) is that instance's to write (small hunk, issue 37 fencing).
    const fenced = async (): Promise<void> => (service.taken(run.callId) ? undefined : write())
    service.queue(run.id, fenced).catch((error: unknown) => config.report(error, request))
  }
  /**
   * `final`: the run is left for the next process and assigns no more ids here (a graceful
   * shutdown), so the next process continues right after its last frame. Otherwise the
   * run goes on computing after the snapshot (a decision arrives) and may be killed before
   * the next one: it reserves {@link EVENT_ID_RESERVE} ids, which the next process skips,
   * so an id a client read from this process never names another frame there.
   */
  const snapshot = (run: TableRun, request: Request, final = false): void => {
    if (events === undefined || snapshots.has(run.id)) return
    snapshots.add(run.id)
    enqueue(
      run,
      async () => {
        snapshots.delete(run.id)
        const last = run.events.last
        const reserve = final ? 0 : EVENT_ID_RESERVE
        if (written.get(run.id) === `${last}:${reserve}`) return
        // Both by compare-and-set: a process the run was taken from (it was presumed dead) writes neither over its new holder's.
        if (!(await service.writeEvents(events, run, run.events, reserve))) return
        written.set(run.id, `${last}:${reserve}`)
        reserved.set(run.id, last + reserve)
        // The record's `events` summary follows: a process that cannot read the frames still continues their ids.
        // A snapshot is of a run some process will go on with: its record says `running` (a run left for the next process included).
        const { settledAt: _settledAt, result: _result, ...record } = runRecord(run)
        await service.writeSnapshotRecord(events, { ...record, status: 'running', owner: service.owner })
      },
      request,
    )
  }
  const dropEvents = async (id: string): Promise<void> => {
    written.delete(id)
    reserved.delete(id)
    // Stryker disable next-line OptionalChaining: dropEvents runs only in a write enqueue() let through, which needs a store, and a store gives events too
    await events?.delete(id)
    service.eventsDeleted(id)
  }
  const write = async (run: TableRun): Promise<boolean> => service.writeRecord({ ...runRecord(run), owner: service.owner })
  return {
    service,
    put: (run: TableRun, request: Request) => enqueue(run, async () => void (await write(run)), request),
    /** The run's record, and its event snapshot gone: it ended here, nobody resumes it. */
    settled: (run: TableRun, request: Request) =>
      enqueue(
        run,
        async () => {
          if (await write(run)) await dropEvents(run.id)
        },
        request,
      ),
    snapshot,
    /** Whether `run`'s ids are past half of what its last snapshot reserved (a run that computes long after a decision). */
    pastReserve: (run: TableRun): boolean => {
      const until = reserved.get(run.id)
      return until !== undefined && run.events.last > until - EVENT_ID_RESERVE / 2
    },
    delete: (run: TableRun, request: Request) =>
      enqueue(
        run,
        async () => void (await service.deleteRecord(run, () => dropEvents(run.id))),
        request,
      ),
  }
}

type RunWriter = ReturnType<typeof recordWriter>

/**
 * The frames of one run, with what a restart needs: while the run waits for a person
 * (from its `approval` frame until that request is settled) each frame asks for a
 * snapshot, so a process that resumes it after a restart finds what its clients saw.
 * A waiting call that ends without its request being settled was cut off (the runtime is
 * shutting down, or the run was cancelled): the frames from there on are held back until
 * the run's end says which: dropped when the run is left in the store for the next
 * process (they describe this process's shutdown, not the run, and their ids are then
 * the next process's to give), else appended.
 */
function runFrames(run: TableRun, snapshot: () => void, pastReserve: () => boolean, waitingFor: readonly string[]) {
  // The asking calls whose requests are open (a resumed run starts with those its last process left).
  const waiting = new Set<string>(waitingFor)
  let held: [string, unknown][] | undefined
  // Set once a waiting call was cut off: the run is ending, nothing more is held back or snapshotted.
  let cutOff = false
  const release = (): void => {
    const frames = held ?? []
    held = undefined
    for (const [event, data] of frames) run.events.append(event, data)
  }
  return {
    append(event: string, data: unknown): void {
      if (held !== undefined) {
        if (held.length < MAX_HELD_FRAMES) {
          held.push([event, data])
          return
        }
        // Too many for an ending run: they go out, in order.
        release()
      }
      const ids = (typeof data === 'object' && data !== null ? data : {}) as { readonly subCallId?: unknown; readonly callId?: unknown }
      if (!cutOff && event === 'dispatch' && typeof ids.subCallId === 'string' && waiting.has(ids.subCallId)) {
        cutOff = true
        held = [[event, data]]
        return
      }
      if (event === 'approval' && typeof ids.callId === 'string') waiting.add(ids.callId)
      if (event === 'approval-settled' && typeof ids.callId === 'string') waiting.delete(ids.callId)
      run.events.append(event, data)
      if (!cutOff && (waiting.size > 0 || pastReserve())) snapshot()
    },
    /** The run ended here: the frames held back are its own after all. */
    release,
  }
}

/**
 * Ids a snapshot taken while a run waits reserves for the frames its process may assign
 * before the next snapshot (see the writer's `snapshot`): a run past half of them writes
 * another. A million: a snapshot per half a million frames at most, and ids stay far
 * below MAX_RESTORED_EVENT_ID after any number of restarts a run could live through.
 */
const EVENT_ID_RESERVE = 1_000_000

/** The most frames held back after a waiting call was cut off; past it they go out (the run is ending anyway). */
const MAX_HELD_FRAMES = 256

/** Runs `prepared` to its end, its events into the run's buffer, then settles it in the table. */
async function drive(
  run: TableRun,
  prepared: PreparedRun,
  table: RunTable,
  config: RunsConfig,
  request: Request,
  writer: RunWriter,
  resumed?: { readonly waitingFor: readonly string[] },
): Promise<void> {
  // Other instances stream it from the store (a watchable store: PostgreSQL).
  writer.service.live?.publish(run.id, run.events, (error) => config.report(error, request))
  const frames = runFrames(run, () => writer.snapshot(run, request), () => writer.pastReserve(run), resumed?.waitingFor ?? [])
  const first = resumed === undefined ? 'start' : 'resumed'
  const append = (event: string, data: unknown): void => {
    if (event === 'approval') table.noteAsked(run)
    frames.append(event, data)
  }
  append(first, { id: run.id, ...prepared.start })
  const unsubscribe = config.hub?.subscribe(
    (event) => {
      const name = EVENT_OF[event.type]
      if (name !== undefined) append(name, event)
    },
    { parentCallId: run.callId },
  )
  const stopApprovals = forwardApprovals(config.approvals, run.callId, append)
  writer.put(run, request)
  const signal = config.shutdown === undefined ? run.controller.signal : AbortSignal.any([run.controller.signal, config.shutdown])
  let result: ToolExecutionResult | undefined
  try {
    result = await prepared.execute(signal)
  } catch (error) {
    // runtime.execute never rejects; a runtime that does is a bug to report, not to show.
    config.report(error, request)
  } finally {
    unsubscribe?.()
    stopApprovals()
  }
  // A durable run parked in the store when the app shut down is resumed by the next
  // process: its record stays `running` for that process to adopt, not `failed`, and its
  // buffer ends without `result` and `end` (a client's stream closes; it reconnects there).
  const parked = await parkedForNextProcess(run, result, writer.service)
  try {
    if (!parked) {
      frames.release()
      run.events.pinRest()
      if (result === undefined) append('error', { error: { code: 'INTERNAL', message: 'internal error' } })
      else append('result', result)
    }
  } finally {
    // Whatever failed above, the run ends in the table and its streams get `end` (or, left for the next process, close).
    table.settle(run, result)
    if (!parked) run.events.append(END_EVENT, { id: run.id, status: run.status })
    run.events.close()
    if (parked) writer.snapshot(run, request, true)
    else writer.settled(run, request)
  }
}

/**
 * Whether `run` ended with its durable record still in the store (`runs/<callId>`): a run
 * that ends deletes it before its call returns, unless its runtime was shutting down, and
 * then the next process resumes it.
 */
async function parkedForNextProcess(run: TableRun, result: ToolExecutionResult | undefined, service: RunService): Promise<boolean> {
  if (run.cancelRequested || result === undefined || !result.isError) return false
  return service.parked(run.callId)
}

/** Keeps the background run alive where the platform would end it with the response (workerd's `waitUntil`). */
function keepAlive(c: Context, work: Promise<void>): void {
  let waitUntil: ((promise: Promise<unknown>) => void) | undefined
  try {
    const context = c.executionCtx
    waitUntil = context.waitUntil.bind(context)
  } catch {
    // No execution context (Node, `app.request()`): the process outlives the response anyway.
  }
  waitUntil?.(work)
}

function startRun(runtime: ToolRuntime, config: RunsConfig, table: RunTable, writer: RunWriter): Handler {
  return async (c) => {
    const prepared = await prepareRun(c, runtime, config)
    const run = table.admit({ callId: prepared.callId, agent: prepared.agent, principal: prepared.principal })
    if (run === undefined) {
      const { runs, bytes } = table.held
      throw new HttpError('OVERLOADED', `the run table is full of running runs (${runs} runs, ${bytes} bytes); retry later`, {
        'Retry-After': String(OVERLOADED_RETRY_AFTER_SECONDS),
      })
    }
    // Alive on the store before its record names this process (another instance may read it at once).
    await runtime.runs.hold()
    const request = c.req.raw
    const driven = drive(run, prepared, table, config, request, writer).catch((error: unknown) => config.report(error, request))
    runtime.runs.track(driven)
    keepAlive(c, driven)
    return c.json({ id: run.id, status: 'running' satisfies RunStatus, callId: run.callId }, 202, {
      Location: `/v1/runs/${run.id}`,
      [CALL_ID_HEADER]: run.callId,
    })
  }
}

/** Who may start runs and cancel their own (`admin`: any); who may read one (its own, or one that asked a person, with `approve`). */
const RUN: readonly Role[] = ['run']
const READ_RUN: readonly Role[] = ['run', 'approve']

/**
 * The run named by the path, from the table; `undefined` (when `records` may hold it) or a
 * thrown 404 otherwise. Another principal's run is a 404 as well, with the same message as
 * one that never existed: a `run` token learns nothing of other principals' runs.
 */
function tableRun(c: Context, table: RunTable): { id: string; run: TableRun | undefined } {
  const id = c.req.param('id') as string
  if (!UUID.test(id)) throw runNotFound(id)
  const run = table.get(id)
  if (run !== undefined && !canReadRun(requestPrincipal(c), run.principal, run.asked)) throw runNotFound(id)
  return { id, run }
}

async function storedRecord(c: Context, id: string, records: RunRecordStore | undefined): Promise<RunRecordJson> {
  const record = await records?.get(id)
  if (record === undefined || !canReadRun(requestPrincipal(c), record.principal, record.asked === true)) throw runNotFound(id)
  return record
}

/** Cancelling is its starter's (or an admin's): a reader with `approve` is told so (it may already read the run). */
function refuseCancel(c: Context, owner: string | undefined): void {
  if (!canCancelRun(requestPrincipal(c), owner)) throw new HttpError('FORBIDDEN', 'cancelling a run another principal started needs the admin role')
}

function getRun(config: ApiConfig, table: RunTable, records: RunRecordStore | undefined): Handler {
  return async (c) => {
    const { id, run } = tableRun(c, table)
    if (run !== undefined) return c.json(await runBody(runRecord(run), config, run.cancelRequested))
    return c.json(await runBody(await storedRecord(c, id, records), config, false))
  }
}

function cancelRun(config: ApiConfig, table: RunTable, records: RunRecordStore | undefined): Handler {
  return async (c) => {
    const { id, run } = tableRun(c, table)
    if (run === undefined) {
      const record = await storedRecord(c, id, records)
      refuseCancel(c, record.principal)
      // Only the process running a run holds its controller.
      if (record.status === 'running') throw new HttpError('RUN_NOT_FOUND', `run ${id} is not running in this process; it cannot be cancelled here`)
      // Stryker disable next-line BooleanLiteral: a stored record that is still running was refused above, and a finished one's status does not read cancelRequested
      return c.json(await runBody(record, config, false))
    }
    refuseCancel(c, run.principal)
    table.cancel(run, new DOMException('the run was cancelled (DELETE /v1/runs/:id)', 'AbortError'))
    return c.json(await runBody(runRecord(run), config, run.cancelRequested))
  }
}

/** What an events stream reads of a run: this process's table run, or one followed from the store. */
type StreamedEvents = Pick<TableRun, 'id' | 'events'>

/** `Last-Event-ID`: absent or empty → 0 (from the start); else an id this run has assigned. */
function lastEventId(c: Context, last: number): number {
  // Stryker disable next-line MethodExpression: a Request's header values never start or end with whitespace (the Headers class strips it)
  const header = c.req.header('Last-Event-ID')?.trim()
  if (header === undefined || header === '') return 0
  if (!/^\d{1,15}$/.test(header)) throw invalidRequest('Last-Event-ID must be the id of an event of this run (a non-negative integer)')
  const id = Number(header)
  if (id > last) throw invalidRequest(`Last-Event-ID ${id} is past this run's last event id (${last})`)
  return id
}

function runEvents(config: RunsConfig, table: RunTable, service: RunService): Handler {
  return async (c) => {
    const found = tableRun(c, table)
    const { id } = found
    let run: StreamedEvents | undefined = found.run
    let unfollow: (() => void) | undefined
    // A run this process does not hold (another instance's, or one parked by a process that died, before a sweep adopts it): the run service reads it from the store.
    if (run === undefined && service.records !== undefined && (await storedRecord(c, id, service.records)).status === 'running') {
      const followed = await service.follow(id, config.runs.maxEventBytesPerRun, () => table.get(id)?.events).catch((error: unknown) => {
        if ((error as { code?: unknown }).code !== 'OVERLOADED') throw error
        throw new HttpError('OVERLOADED', (error as Error).message, { 'Retry-After': String(OVERLOADED_RETRY_AFTER_SECONDS) })
      })
      run = followed
      unfollow = followed?.stop
    }
    // A run's buffer lives in the process that ran it; a record in the store has none.
    if (run === undefined) throw runNotFound(id)
    try {
      const lastId = lastEventId(c, run.events.last)
      // The client has the `end` frame: 204 is what tells an EventSource to stop reconnecting.
      if (run.events.closed && lastId === run.events.last) return c.body(null, 204)
      // A HEAD gets the stream's headers without a stream (nothing would read it).
      if (c.req.method === 'HEAD') return c.body(null, 200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-store' })
      // Every stream replays its run's buffer on this thread: their number bounds that work.
      const release = table.openStream()
      if (release === undefined) {
        throw new HttpError('OVERLOADED', `this server has ${config.runs.maxStreams} event streams open (runs.maxStreams); close one or retry later`, {
          'Retry-After': String(OVERLOADED_RETRY_AFTER_SECONDS),
        })
      }
      const following = unfollow
      const stream = streamEvents(c, run, lastId, config, () => {
        following?.()
        release()
      })
      unfollow = undefined
      return stream
    } finally {
      // No stream (204, HEAD, a refusal): nothing follows the run any more.
      unfollow?.()
    }
  }
}

/**
 * The frame telling a resuming client which ids it cannot get (no `id:` line: its last id
 * stays what it had). Ids a process reserved before a restart are said to be reserved
 * (`EVENT_IDS_RESERVED`), not dropped: most often nothing was ever sent under them.
 */
function gapFrame(run: StreamedEvents, gap: { first: number; last: number }, reserved: { first: number; last: number } | undefined): string {
  const status = `GET /v1/runs/${run.id} has its status and result`
  const data =
    reserved !== undefined && reserved.first === gap.first && reserved.last === gap.last
      ? {
          id: run.id,
          code: 'EVENT_IDS_RESERVED',
          first: gap.first,
          last: gap.last,
          message: `ids ${gap.first}–${gap.last} were reserved by the process that ran this run before the server restarted, for events it might send after its last save; no event of this run was dropped from its buffer, and the run's events go on after them (an event sent under a reserved id after that save, if any, was not kept); ${status}`,
        }
      : {
          id: run.id,
          code: 'EVENTS_DROPPED',
          first: gap.first,
          last: gap.last,
          ...(reserved === undefined ? {} : { reserved }),
          message: `events ${gap.first}–${gap.last} of this run were dropped from its buffer (maxEventBytesPerRun) or not kept across a restart, and cannot be sent${reserved === undefined ? '' : ` (ids ${reserved.first}–${reserved.last} among them were only reserved before a restart and may name no event at all)`}; ${status}`,
        }
  return `event: gap\ndata: ${JSON.stringify(data)}\n\n`
}

/** How often a stream looks for new frames when no notification reached it (a run of another request, on workerd). */
const POLL_MS = 50

/**
 * Resolves at the run's next frame, when `finished` settles, or after {@link POLL_MS}.
 * The notification only wakes this reader; it never writes for it, so the run (another
 * request's work) does no I/O on this request's stream, which workerd forbids.
 */
async function nextFrame(run: StreamedEvents, finished: Promise<void>): Promise<void> {
  let unsubscribe: () => void = () => {}
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    await Promise.race([
      new Promise<void>((resolve) => (unsubscribe = run.events.subscribe(() => resolve()))),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, POLL_MS))),
      finished,
    ])
  } finally {
    unsubscribe()
    clearTimeout(timer)
  }
}

/**
 * Sends the run's frames after `lastId` until its `end` frame, pulling them from the
 * buffer in batches (half a backlog, at most {@link MAX_REPLAY_BATCH_BYTES}) and waiting
 * for the client to take each batch and for the host's loop to turn before the next: a
 * long buffer reaches a slow reader whole, and the stream's writer never holds more than
 * a batch. Frames dropped from the buffer before the reader got them (it fell further
 * behind than `maxEventBytesPerRun`) are reported as a `gap`, then it goes on.
 */
async function pump(run: StreamedEvents, lastId: number, sender: SseSender, batchBytes: number, stopped: () => boolean, finished: Promise<void>): Promise<void> {
  let cursor = lastId
  while (!stopped()) {
    const { gap, reserved, frames } = run.events.since(cursor, batchBytes)
    // One write per batch, not per frame: a frame's write costs the host far more than
    // its bytes (a promise, a timer, the response stream's queue), times every reader.
    let batch = gap === undefined ? '' : gapFrame(run, gap, reserved)
    for (const frame of frames) batch += frame.text
    if (batch !== '') sender.send(batch)
    cursor = frames.at(-1)?.id ?? gap?.last ?? cursor
    if (cursor >= run.events.last && run.events.closed) return
    // The next batch waits for this one to be taken, live frames included: a reader slower
    // than its run falls behind in the run's buffer (bounded), never in this stream.
    await Promise.race([sender.drained(), finished])
    if (cursor >= run.events.last) await nextFrame(run, finished)
    // A client that reads in-process takes a batch within microtasks: one macrotask between
    // batches keeps the host's loop turning.
    else await new Promise((resolve) => setTimeout(resolve, 0))
  }
}

/** Streams a run's frames after `lastId`, then every new one, until its `end` frame (or the client leaves). */
function streamEvents(c: Context, run: StreamedEvents, lastId: number, config: ApiConfig, release: () => void): Response {
  let stopped = false
  let finish: () => void = () => {}
  const finished = new Promise<void>((resolve) => (finish = resolve))
  // Leaving a stream never touches the run: it goes on, and its buffer waits for the next client.
  const stop = (): void => {
    stopped = true
    finish()
  }
  const options = {
    maxBacklogBytes: config.maxStreamBacklogBytes,
    writeTimeoutMs: config.streamWriteTimeoutMs,
    heartbeatMs: config.heartbeatMs,
    // Only a single frame larger than the backlog cap can get here (batches are half of it).
    // No `id:` line: a client that reconnects resumes after the last frame it did read.
    finalFrame: (dropped: number) =>
      `event: error\ndata: ${JSON.stringify({
        id: run.id,
        error: {
          code: 'STREAM_BACKLOG',
          message: `this stream fell behind: ${dropped} bytes of events were not read in time (maxStreamBacklogBytes ${config.maxStreamBacklogBytes}); reconnect with Last-Event-ID to resume`,
        },
      })}\n\n`,
    onFallBehind: stop,
    onClientGone: stop,
    onClosed: release,
  }
  const batchBytes = Math.max(1, Math.min(MAX_REPLAY_BATCH_BYTES, Math.floor(config.maxStreamBacklogBytes / 2)))
  return sseResponse(c, options, (sender) => pump(run, lastId, sender, batchBytes, () => stopped, finished))
}

/**
 * Takes back the runs this process resumed from the store that were started through
 * `POST /v1/runs`: each goes back into the table under the id its clients know, its buffer
 * rebuilt from the frames its last process stored (same ids; none when they are missing or
 * unreadable, and then its ids still continue after the record's last one), then a
 * `resumed` event, and its record is updated as it ends. A record still `running` that
 * nothing resumed is ended when its process is gone (`RunService.settleIfLost`). Returns
 * how many were adopted.
 */
async function adoptResumed(resumed: ResumedRunPool, events: RunEventStore | undefined, table: RunTable, config: RunsConfig, writer: RunWriter, staleMs: number): Promise<number> {
  const { service } = writer
  const records = service.records
  if (records === undefined) return 0
  const request = new Request('http://toolyard.invalid/v1/runs')
  // Listed once for every run adopted here (a broker over a store reads them from it).
  const pending: readonly PendingApproval[] =
    resumed.size === 0 || config.approvals === undefined
      ? // Stryker disable next-line ArrayDeclaration: pending only feeds waitingFor, through approvalOfRun, which no non-approval entry passes
        []
      : await (async () => config.approvals!.pending())().catch((error: unknown) => {
          // Then only a new request of theirs starts their snapshots again.
          config.report(error, request)
          // Stryker disable next-line ArrayDeclaration: as above, an entry that is not an approval never passes approvalOfRun
          return []
        })
  let adopted = 0
  for (const id of await records.list(MAX_ADOPTED_RECORDS)) {
    const read = await records.read(id)
    const record = read?.record
    if (record === undefined || record.status !== 'running' || table.get(record.id) !== undefined) continue
    const handle = resumed.take(record.callId)
    if (handle === undefined) {
      await service.settleIfLost(record, events, staleMs)
      continue
    }
    const loaded = await events?.read(record.id).catch((error: unknown) => void config.report(error, request))
    const restored = loaded?.events ?? continuedIds(record)
    const run = table.admit({ callId: record.callId, agent: record.agent, principal: record.principal, asked: record.asked === true, id: record.id, createdAt: record.createdAt, events: restored })
    if (run === undefined) continue
    // Its writes go on by compare-and-set from what was read here.
    service.adopted(run.id, read!.version, loaded?.version)
    await service.hold()
    adopted++
    const prepared: PreparedRun = {
      callId: record.callId,
      agent: record.agent,
      principal: record.principal ?? '',
      start: { callId: record.callId, ...(record.agent === undefined ? {} : { agent: record.agent }), resumed: true },
      execute: (signal) => {
        // The resumed execution is already under way: DELETE (or the app's shutdown) cancels it.
        if (signal.aborted) handle.cancel(signal.reason)
        else
          // Stryker disable next-line ObjectLiteral,BooleanLiteral: a signal fires 'abort' at most once
          signal.addEventListener('abort', () => handle.cancel(signal.reason), { once: true })
        // Its approvals name its principal, as before the restart: the parked run's record kept it.
        return handle.result as Promise<ToolExecutionResult>
      },
    }
    // Its open requests: it waits again at once, so its `resumed` frame is in the next snapshot.
    const waitingFor = pending.filter((approval) => approvalOfRun(approval, record.callId)).map((approval) => approval.callId)
    service.track(drive(run, prepared, table, config, request, writer, { waitingFor }).catch((error: unknown) => config.report(error, request)))
  }
  return adopted
}

/** How many stored run records a process looks through when it adopts resumed runs. */
const MAX_ADOPTED_RECORDS = 1000

/**
 * The run routes and their table, attached to the runtime's runs (`runtime.runs`): runs it
 * resumes from the store come back here. `app` is registered for {@link runsHeld} by the
 * caller once created (`holdRuns`).
 */
export function runRoutes(runtime: ToolRuntime, config: RunsConfig): { readonly routes: readonly ApiRoute[]; readonly table: RunTable } {
  const service = runtime.runs
  const events = service.events(config.runs.maxEventBytesPerRun)
  // Evictions have no request of their own: a failure is reported against a synthetic one.
  const background = new Request('http://toolyard.invalid/v1/runs')
  const writer = recordWriter(service, events, config)
  const table = createRunTable(config.runs, Date.now, (run) => writer.delete(run, background))
  service.attach({ adopt: (resumed, staleMs) => adoptResumed(resumed, events, table, config, writer, staleMs) })
  return {
    table,
    routes: [
      { method: 'POST', path: '/v1/runs', roles: RUN, handlers: [startRun(runtime, config, table, writer)] },
      { method: 'GET', path: '/v1/runs/:id', roles: READ_RUN, handlers: [getRun(config, table, service.records)] },
      { method: 'DELETE', path: '/v1/runs/:id', roles: RUN, handlers: [cancelRun(config, table, service.records)] },
      { method: 'GET', path: '/v1/runs/:id/events', roles: READ_RUN, handlers: [runEvents(config, table, service)] },
    ],
  }
}

/** Makes `runs.table` the one {@link runsHeld} reports for `app`. */
export function holdRuns(app: Hono, runs: ReturnType<typeof runRoutes>): void {
  held.set(app, runs.table)
}
