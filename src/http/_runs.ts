/**
 * Runs as HTTP resources: `POST /v1/runs` starts a background run, `GET` reads it and its
 * resumable event stream, `DELETE` cancels it (docs/http-api.md, "Runs as resources").
 *
 * @module
 */
import type { Context, Handler, Hono } from 'hono'
import type { PendingApproval } from '../approvals/types.js'
import type { ToolRuntime } from '../runtime-types.js'
import { HttpError, OVERLOADED_RETRY_AFTER_SECONDS } from './http-errors.js'
import { approvalOfRun, forwardApprovals, listPending } from './_approvals.js'
import { EVENT_OF } from './_run-stream.js'
import { CALL_ID_HEADER, NO_QUERY, prepareRun } from './_routes.js'
import type { ApiConfig, ApiRoute } from './_routes.js'
import { sseResponse } from './_sse-sender.js'
import { hasRole } from './auth.js'
import type { Role } from './auth.js'
import { canCancelRun, canReadRun, requestPrincipal } from './_principals.js'
import type { ResolvedRunTableOptions, RunEventsSince, RunRecordJson, RunStatus, RunTableHeld, TableRun } from '../durable/run-table.js'
import { readEvents } from '../durable/background-runs.js'
import type { BackgroundRunSources, BackgroundRuns } from '../durable/background-runs.js'

/** What the run routes read besides the API's configuration. */
export interface RunsConfig extends ApiConfig {
  readonly runs: ResolvedRunTableOptions
}

/** The body of `GET /v1/runs/:id` (and of `DELETE`): the run's view. */
export type { RunApproval, RunView as RunBody } from '../durable/background-runs.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
/** The most bytes of buffered frames queued in one synchronous step of a replay: the host does the rest in slices. */
const MAX_REPLAY_BATCH_BYTES = 128 * 1024

const held = new WeakMap<Hono, BackgroundRuns>()

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

function startRun(runtime: ToolRuntime, config: RunsConfig, table: BackgroundRuns): Handler {
  return async (c) => {
    const prepared = await prepareRun(c, runtime, config)
    const request = c.req.raw
    const started = await table.start(prepared, (error) => config.report(error, request))
    if (started === undefined) {
      const { runs, bytes } = table.held
      throw new HttpError('OVERLOADED', table.shareRefusal(prepared.principal) ?? `the run table is full of running runs (${runs} runs, ${bytes} bytes); retry later`, {
        'Retry-After': String(OVERLOADED_RETRY_AFTER_SECONDS),
      })
    }
    keepAlive(c, started.driven)
    const { id, callId } = started.run
    return c.json({ id, status: 'running' satisfies RunStatus, callId }, 202, { Location: `/v1/runs/${id}`, [CALL_ID_HEADER]: callId })
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
function tableRun(c: Context, table: BackgroundRuns): { id: string; run: TableRun | undefined } {
  const id = c.req.param('id') as string
  if (!UUID.test(id)) throw runNotFound(id)
  const run = table.get(id)
  if (run !== undefined && !canReadRun(requestPrincipal(c), run.principal, run.asked, run.agent)) throw runNotFound(id)
  return { id, run }
}

async function storedRecord(c: Context, id: string, table: BackgroundRuns): Promise<RunRecordJson> {
  const record = await table.stored(id)
  if (record === undefined || !canReadRun(requestPrincipal(c), record.principal, record.asked === true, record.agent)) throw runNotFound(id)
  return record
}

/** Cancelling is its starter's (or an admin's): a reader with `approve` is told so (it may already read the run). */
function refuseCancel(c: Context, owner: string | undefined): void {
  if (!canCancelRun(requestPrincipal(c), owner)) throw new HttpError('FORBIDDEN', 'cancelling a run another principal started needs the admin role')
}

function getRun(table: BackgroundRuns): Handler {
  return async (c) => {
    const { id, run } = tableRun(c, table)
    return c.json(await table.view(run ?? (await storedRecord(c, id, table))))
  }
}

function cancelRun(table: BackgroundRuns): Handler {
  return async (c) => {
    const { id, run } = tableRun(c, table)
    if (run === undefined) {
      const record = await storedRecord(c, id, table)
      refuseCancel(c, record.principal)
      // Only the process running a run holds its controller.
      if (record.status === 'running') throw new HttpError('RUN_NOT_FOUND', `run ${id} is not running in this process; it cannot be cancelled here`)
      return c.json(await table.view(record))
    }
    refuseCancel(c, run.principal)
    table.cancel(run, new DOMException('the run was cancelled (DELETE /v1/runs/:id)', 'AbortError'))
    return c.json(await table.view(run))
  }
}

/** What an events stream reads of a run: this process's table run, or one followed from the store. */
type StreamedEvents = Pick<TableRun, 'id' | 'events'>

/** `Last-Event-ID`: absent or empty → 0 (from the start); else an id this run has assigned (`last` absent: the form only). */
function lastEventId(c: Context, last: number | undefined): number {
  // Stryker disable next-line MethodExpression: a Request's header values never start or end with whitespace (the Headers class strips it)
  const header = c.req.header('Last-Event-ID')?.trim()
  if (header === undefined || header === '') return 0
  if (!/^\d{1,15}$/.test(header)) throw new HttpError('INVALID_REQUEST', 'Last-Event-ID must be the id of an event of this run (a non-negative integer)')
  const id = Number(header)
  if (last !== undefined && id > last) throw new HttpError('INVALID_REQUEST', `Last-Event-ID ${id} is past this run's last event id (${last})`)
  return id
}

/** What a HEAD of an events route answers: the stream's headers, no stream. */
function streamHeaders(c: Context): Response {
  return c.body(null, 200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-store' })
}

function runEvents(config: RunsConfig, table: BackgroundRuns): Handler {
  return async (c) => {
    const found = tableRun(c, table)
    const { id } = found
    let run: StreamedEvents | undefined = found.run
    let unfollow: (() => void) | undefined
    // A run this process does not hold (another instance's, or one a dead process left, before a sweep adopts it): read from the store.
    if (run === undefined && (await storedRecord(c, id, table)).status === 'running') {
      // A HEAD reads nothing more: following loads the run's stored events (up to
      // maxEventBytesPerRun) and takes one of runs.maxFollowers, only to discard them. Its
      // Last-Event-ID is checked for its form; whether it is past the run's last id is the GET's to say.
      if (c.req.method === 'HEAD') {
        lastEventId(c, undefined)
        return streamHeaders(c)
      }
      const followed = await table.follow(id).catch((error: unknown) => {
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
      if (c.req.method === 'HEAD') return streamHeaders(c)
      // Every stream replays its run's buffer on this thread: their number bounds that work.
      const reader = requestPrincipal(c)
      const release = table.openStream({ id: reader.id, person: hasRole(reader, 'approve') })
      if (typeof release !== 'function') {
        throw new HttpError('OVERLOADED', release ?? `this server has ${config.runs.maxStreams} event streams open (runs.maxStreams); close one or retry later`, {
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
  // One write per batch, not per frame: a frame's write costs the host far more than its bytes, times every reader.
  const text = (batch: RunEventsSince): string => (batch.gap === undefined ? '' : gapFrame(run, batch.gap, batch.reserved)) + batch.frames.map((frame) => frame.text).join('')
  return sseResponse(c, options, (sender) => readEvents(run, lastId, batchBytes, { send: (batch) => sender.send(text(batch)), drained: () => sender.drained(), stopped: () => stopped, finished }))
}

/** The live events of a run (sub-calls, logs, approvals) as its frames, and the approvals a resumed run waits on. */
function runSources(config: RunsConfig): BackgroundRunSources {
  // Evictions and adoptions have no request of their own: a failure is reported against a synthetic one.
  const background = new Request('http://toolyard.invalid/v1/runs')
  return {
    subscribe: (callId, append) => {
      const unsubscribe = config.hub?.subscribe(
        (event) => {
          const name = EVENT_OF[event.type]
          if (name !== undefined) append(name, event)
        },
        { parentCallId: callId },
      )
      const stopApprovals = forwardApprovals(config.approvals, callId, append)
      return () => {
        unsubscribe?.()
        stopApprovals()
      }
    },
    // Awaited: a broker over a store lists them asynchronously.
    approvals: async (runCallId) => {
      const listed = config.approvals === undefined ? { approvals: [] as readonly PendingApproval[], truncated: false } : await listPending(config.approvals, { run: runCallId })
      return Object.assign((callId: string) => listed.approvals.filter((approval) => approvalOfRun(approval, callId)), { truncated: listed.truncated })
    },
    shutdown: config.shutdown,
    report: (error) => config.report(error, background),
  }
}

/**
 * The run routes over a table of the runtime's runs (`runtime.runs.table()`). `app` is
 * registered for {@link runsHeld} by the caller once created (`holdRuns`).
 */
export function runRoutes(runtime: ToolRuntime, config: RunsConfig): { readonly routes: readonly ApiRoute[]; readonly table: BackgroundRuns } {
  const table = runtime.runs.table(config.runs, runSources(config))
  return {
    table,
    routes: [
      { method: 'POST', path: '/v1/runs', roles: RUN, handlers: [startRun(runtime, config, table)] },
      { method: 'GET', path: '/v1/runs/:id', roles: READ_RUN, query: NO_QUERY, handlers: [getRun(table)] },
      { method: 'DELETE', path: '/v1/runs/:id', roles: RUN, query: NO_QUERY, handlers: [cancelRun(table)] },
      { method: 'GET', path: '/v1/runs/:id/events', roles: READ_RUN, query: NO_QUERY, handlers: [runEvents(config, table)] },
    ],
  }
}

/** Makes `runs.table` the one {@link runsHeld} reports for `app`. */
export function holdRuns(app: Hono, runs: ReturnType<typeof runRoutes>): void {
  held.set(app, runs.table)
}
