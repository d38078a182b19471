/**
 * Background runs (`runtime.runs.table()`): each run driven to its end into its event log,
 * its record and event snapshots written in order, runs resumed from the store adopted back.
 * `/v1/runs` only shows them (docs/durability.md).
 * @module
 */
import type { PendingApproval } from '../approvals/types.js'
import type { ScopeKey, ToolExecutionResult } from '../types.js'
import type { FollowedRun, LiveEvents } from './_live-events.js'
import type { ResumedRun } from './runs.js'
import { createRunTable, EVENT_ID_RESERVE, liveShare, restoredEvents, RUN_CALL_ID_PREFIX, runRecord } from './run-table.js'
import type { ResolvedRunTableOptions, RunEventLog, RunEventStore, RunEventsSince, RunRecordJson, RunRecordStore, RunStatus, RunTable, RunTableHeld, StreamReader, TableRun } from './run-table.js'

/** The runs one sweep resumed, each handed to at most one table. */
export interface ResumedRunPool {
  /** How many were resumed (taken or not). */
  readonly size: number
  /** The resumed run of `callId`, once: a second take answers `undefined`. */
  take(callId: string): ResumedRun | undefined
  /** The call ids of every run this sweep resumed. */
  readonly callIds: readonly string[]
}

/** A table that shows runs: it takes back the resumed runs it started. */
export interface RunTableLink {
  /** Takes the runs of `resumed` it knows; ends the records of its runs lost before they parked. How many it took. */
  adopt(resumed: ResumedRunPool, staleMs: number): Promise<number>
  /** This process is starting run `callId` from the store: its live events from now on are the adopting table's. */
  starting?(callId: string): void
  /** Run `callId` is parking here: a snapshot of its frames so far is asked for (`queue`), which its park's record waits for. */
  parking?(callId: string): void
}

/** The store side a table drives its runs through: the runtime's runs (`RunService`, which documents each member). */
export interface RunStoreSide {
  readonly records: RunRecordStore | undefined
  readonly live: LiveEvents | undefined
  readonly owner: string
  events(maxBytes: number): RunEventStore | undefined
  follow(id: string, maxBytes: number, local: () => RunEventLog | undefined): Promise<FollowedRun | undefined>
  hold(): Promise<void>
  taken(callId: string): boolean
  adopted(run: { readonly id: string; readonly callId: string }, events: string | undefined): Promise<void>
  writeRecord(record: RunRecordJson): Promise<boolean>
  writeEvents(events: RunEventStore, run: { readonly id: string; readonly callId: string }, log: RunEventLog, reserve: number): Promise<boolean>
  writeSnapshotRecord(events: RunEventStore, record: RunRecordJson): Promise<boolean>
  deleteRecord(run: { readonly id: string; readonly callId: string }, after: () => Promise<void>): Promise<boolean>
  eventsDeleted(id: string): void
  parked(callId: string): Promise<boolean>
  queue(id: string, write: () => Promise<void>): Promise<void>
  track(work: Promise<unknown>): void
  attach(link: RunTableLink): () => void
  settleIfLost(seen: RunRecordJson, events: RunEventStore | undefined, staleMs: number): Promise<boolean>
}

/** One run to start in the background: what `execute` runs, and who asked. */
export interface BackgroundRunSpec {
  readonly callId: string
  readonly agent: ScopeKey | undefined
  /** The id of the principal that started it. */
  readonly principal: string
  /** The data of the run's `start` event. */
  readonly start: Readonly<Record<string, unknown>>
  /** Runs the call; `signal` fires on a cancel or the table's shutdown. Never rejects (a rejection is reported). */
  readonly execute: (signal: AbortSignal) => Promise<ToolExecutionResult>
}

/** One listing's open requests of a run (by its `run_code` call id); `truncated`: it stopped at a bound. */
export interface RunApprovalsListed {
  (runCallId: string): readonly PendingApproval[]
  readonly truncated?: boolean
}

/** What a table's runs hear and where their failures go (given by what shows them: the HTTP app). */
export interface BackgroundRunSources {
  /** Forwards the live events of run `callId` (its sub-calls, logs, approvals) to `append`; returns the unsubscribe. */
  subscribe(callId: string, append: (event: string, data: unknown) => void): () => void
  /** Reads the open approval requests once (only run `runCallId`'s when given): each run's (its sub-calls', its plan's). */
  approvals(runCallId?: string): Promise<RunApprovalsListed>
  /** Ends every run (the app's shutdown). */
  readonly shutdown: AbortSignal | undefined
  /** Where a background failure goes (an eviction's write, an adoption). */
  report(error: unknown): void
}

/** The runs of one table (the HTTP app's `/v1/runs`), driven by the runtime's runs. */
export interface BackgroundRuns {
  /** Starts a run: `undefined` when the table is full of running runs (the caller answers `OVERLOADED`). */
  start(spec: BackgroundRunSpec, report?: (error: unknown) => void): Promise<{ readonly run: TableRun; readonly driven: Promise<void> } | undefined>
  /** The run with this id in this process, or `undefined`. */
  get(id: string): TableRun | undefined
  /** The record the store holds of run `id` (any process's), or `undefined` (no store, or none). */
  stored(id: string): Promise<RunRecordJson | undefined>
  /** The events of run `id` as the store has them, for a run this process does not hold (see `RunService.follow`). */
  follow(id: string): Promise<FollowedRun | undefined>
  /** What `GET /v1/runs/:id` shows of a run of this table or a stored record: `running` is `waiting` while it has open requests. */
  view(run: TableRun | RunRecordJson): Promise<RunView>
  /** Asks the run to end: its signal fires, it settles as `cancelled`. */
  cancel(run: TableRun, reason: unknown): void
  /** Why `principal` may start no run now ({@link liveShare}), or `undefined`. */
  shareRefusal(principal: string | undefined): string | undefined
  /** `RunTable.openStream`. */
  openStream(): (() => void) | undefined
  openStream(reader: StreamReader): (() => void) | string | undefined
  readonly held: RunTableHeld
  readonly options: ResolvedRunTableOptions
}

/** A pending approval as a run's view lists it: what a person needs to decide it. */
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

/** A run as its readers see it (the body of `GET /v1/runs/:id`). */
export interface RunView {
  readonly id: string
  readonly callId: string
  readonly agent?: string
  /** The id of the principal that started it. */
  readonly principal?: string
  readonly status: RunStatus
  readonly createdAt: number
  readonly settledAt?: number
  readonly approvals: readonly RunApproval[]
  /** `true` when the listing behind `approvals` stopped at a bound. */
  readonly approvalsTruncated?: true
  /** The ids the event buffer still holds (`first`..`last`) and how many it dropped. */
  readonly events: { readonly first: number; readonly last: number; readonly dropped: number }
  /** What `POST /v1/run` would have answered, once the run ended. */
  readonly result?: ToolExecutionResult
}

const END_EVENT = 'end'

export { EVENT_ID_RESERVE }

/** The most frames held back after a waiting call was cut off; past it they go out (the run is ending anyway). */
export const MAX_HELD_FRAMES = 256

/** Frames a resumed run's early listener keeps before a table adopts it; later ones are not kept. */
export const MAX_EARLY_FRAMES = 1_024

/**
 * The live events of a run this process resumes, from the moment it starts it until a table
 * adopts it: the adoption reads the store first, and a decision that lands meanwhile lets the
 * run's calls go on, whose frames would otherwise reach no table (they are the table's once it
 * adopts the run, after its `resumed` frame).
 */
interface EarlyEvents {
  readonly frames: [string, unknown][]
  /** The adopting table's append, once adopted: frames go straight to it. */
  target: ((event: string, data: unknown) => void) | undefined
  readonly unsubscribe: () => void
}

function listenEarly(sources: BackgroundRunSources, callId: string): EarlyEvents {
  const early: EarlyEvents = {
    frames: [],
    target: undefined,
    unsubscribe: sources.subscribe(callId, (event, data) => {
      if (early.target !== undefined) early.target(event, data)
      else if (early.frames.length < MAX_EARLY_FRAMES) early.frames.push([event, data])
    }),
  }
  return early
}

/** How many stored run records a process looks through when it adopts resumed runs. */
const MAX_ADOPTED_RECORDS = 1000

/**
 * Writes each run's record and event snapshot in order (a later write never lands before
 * an earlier one), the record marked with the process as owner. A snapshot asked for while
 * one is already queued is that one: a burst of frames costs one write.
 */
export function recordWriter(service: RunStoreSide, events: RunEventStore | undefined) {
  const records = service.records
  const snapshots = new Set<string>()
  /** Runs left for the next process: their queued snapshot is the final one, whenever it was asked. */
  const finals = new Set<string>()
  /** Each run's last snapshot (its last id, and whether it reserved ids): an unchanged one is not written again. */
  const written = new Map<string, string>()
  /** The id up to which each run's last landed write reserved ids. */
  const reserved = new Map<string, number>()
  // Through the runtime's runs: a dispose waits for these writes.
  const enqueue = (run: TableRun, write: () => Promise<void>, report: (error: unknown) => void): Promise<void> => {
    if (records === undefined) return Promise.resolve()
    // A run another instance took over (this one was presumed dead) is that instance's to write.
    const fenced = async (): Promise<void> => (service.taken(run.callId) ? undefined : write())
    return service.queue(run.id, fenced).catch(report)
  }
  /**
   * The record of a running run, with the ids its process may give up to (`events.next`):
   * `final` (left for the next process, no more ids here) its last id, else {@link EVENT_ID_RESERVE} more.
   */
  const running = async (run: TableRun, final: boolean, snapshot?: RunEventStore): Promise<boolean> => {
    const { settledAt: _settledAt, result: _result, ...fields } = runRecord(run)
    const next = fields.events.last + (final ? 0 : EVENT_ID_RESERVE)
    const record: RunRecordJson = { ...fields, status: 'running', events: { ...fields.events, next }, owner: service.owner }
    const ok = await (snapshot === undefined ? service.writeRecord(record) : service.writeSnapshotRecord(snapshot, record))
    if (ok && !final) reserved.set(run.id, Math.max(reserved.get(run.id) ?? 0, next))
    return ok
  }
  /**
   * `final`: the run is left for the next process and assigns no more ids here, so the next
   * process continues right after its last frame. Otherwise the run may go on computing and
   * be killed before the next snapshot: it reserves {@link EVENT_ID_RESERVE} ids, which the
   * next process skips, so an id a client read here never names another frame there.
   */
  const snapshot = (run: TableRun, report: (error: unknown) => void, final = false): void => {
    if (final) finals.add(run.id)
    if (events === undefined || snapshots.has(run.id)) return
    snapshots.add(run.id)
    void enqueue(
      run,
      async () => {
        snapshots.delete(run.id)
        const last = run.events.last
        const leaving = finals.has(run.id)
        const reserve = leaving ? 0 : EVENT_ID_RESERVE
        if (written.get(run.id) === `${last}:${reserve}`) return
        // Both by compare-and-set: a process the run was taken from writes neither over its new holder's.
        if (!(await service.writeEvents(events, run, run.events, reserve))) return
        written.set(run.id, `${last}:${reserve}`)
        // The record follows, saying `running`: some process goes on with the run.
        await running(run, leaving, events)
      },
      report,
    )
  }
  const dropEvents = async (id: string): Promise<void> => {
    written.delete(id)
    reserved.delete(id)
    finals.delete(id)
    // Stryker disable next-line OptionalChaining: dropEvents runs only in a write enqueue() let through, which needs a store, and a store gives events too
    await events?.delete(id)
    service.eventsDeleted(id)
  }
  const write = async (run: TableRun): Promise<boolean> => service.writeRecord({ ...runRecord(run), owner: service.owner })
  return {
    service,
    /** The record of a run that starts here, with the ids it may give. */
    put: (run: TableRun, report: (error: unknown) => void) => void enqueue(run, async () => void (await running(run, false)), report),
    /** The same, awaited: a run taken up from the store reserves its ids before it gives any. */
    reserve: (run: TableRun, report: (error: unknown) => void) => enqueue(run, async () => void (await running(run, false)), report),
    /** The run's record, and its event snapshot gone: it ended here, nobody resumes it. */
    settled: (run: TableRun, report: (error: unknown) => void) =>
      void enqueue(
        run,
        async () => {
          if (await write(run)) await dropEvents(run.id)
        },
        report,
      ),
    snapshot,
    /** Whether `run`'s ids are past half of what its last landed write reserved (a run that computes long after a decision). */
    pastReserve: (run: TableRun): boolean => {
      const until = reserved.get(run.id)
      return until !== undefined && run.events.last > until - EVENT_ID_RESERVE / 2
    },
    delete: (run: TableRun, report: (error: unknown) => void) => void enqueue(run, async () => void (await service.deleteRecord(run, () => dropEvents(run.id))), report),
  }
}

type RunWriter = ReturnType<typeof recordWriter>

/**
 * The frames of one run, with what a restart needs: while the run waits for a person (from
 * its `approval` frame until that request is settled) each frame asks for a snapshot. A
 * waiting call that ends without its request being settled was cut off (shutdown, or a
 * cancel): the frames from there on are held back until the run's end says which: dropped
 * when the run is left for the next process (their ids are then that process's to give),
 * else appended.
 */
export function runFrames(log: RunEventLog, snapshot: () => void, pastReserve: () => boolean, waitingFor: readonly string[]) {
  // The asking calls whose requests are open (a resumed run starts with those its last process left).
  const waiting = new Set<string>(waitingFor)
  let held: [string, unknown][] | undefined
  // Set once a waiting call was cut off: the run is ending, nothing more is held back or snapshotted.
  let cutOff = false
  const release = (): void => {
    const frames = held ?? []
    held = undefined
    for (const [event, data] of frames) log.append(event, data)
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
      log.append(event, data)
      if (!cutOff && (waiting.size > 0 || pastReserve())) snapshot()
    },
    /** The run ended here: the frames held back are its own after all. */
    release,
  }
}

/** What {@link drive} works with: the table, the writer, the sources. */
interface Driver {
  readonly table: RunTable
  readonly writer: RunWriter
  readonly sources: BackgroundRunSources
}

/** Runs `spec` to its end, its events into the run's log, then settles it in the table. */
async function drive(run: TableRun, spec: BackgroundRunSpec, { table, writer, sources }: Driver, report: (error: unknown) => void, resumed?: { readonly waitingFor: readonly string[]; readonly early?: EarlyEvents | undefined }): Promise<void> {
  // Other instances stream it from the store (a watchable store: PostgreSQL).
  writer.service.live?.publish(run.id, run.events, report)
  const frames = runFrames(run.events, () => writer.snapshot(run, report), () => writer.pastReserve(run), resumed?.waitingFor ?? [])
  const append = (event: string, data: unknown): void => {
    if (event === 'approval') table.noteAsked(run)
    frames.append(event, data)
  }
  append(resumed === undefined ? 'start' : 'resumed', { id: run.id, ...spec.start })
  const early = resumed?.early
  let unsubscribe: () => void
  if (early === undefined) unsubscribe = sources.subscribe(run.callId, append)
  else {
    // What the run did between its start here and this adoption, in order, then live.
    for (const [event, data] of early.frames.splice(0)) append(event, data)
    early.target = append
    unsubscribe = early.unsubscribe
  }
  // A run taken up from the store wrote its record (its reserve) before its first frame.
  if (resumed === undefined) writer.put(run, report)
  const signal = sources.shutdown === undefined ? run.controller.signal : AbortSignal.any([run.controller.signal, sources.shutdown])
  let result: ToolExecutionResult | undefined
  try {
    result = await spec.execute(signal)
  } catch (error) {
    // runtime.execute never rejects; a runtime that does is a bug to report, not to show.
    report(error)
  } finally {
    unsubscribe()
  }
  // A durable run parked when the runtime shut down is the next process's: its record stays
  // `running` for it to adopt, and its log ends without `result` and `end`.
  const parked = await parkedForNextProcess(run, result, writer.service)
  try {
    if (!parked) {
      frames.release()
      run.events.pinRest()
      if (result === undefined) append('error', { error: { code: 'INTERNAL', message: 'internal error' } })
      else append('result', result)
    }
  } finally {
    // Whatever failed above, the run ends in the table and its readers get `end` (or, left for the next process, a close).
    table.settle(run, result)
    if (!parked) run.events.append(END_EVENT, { id: run.id, status: run.status })
    run.events.close()
    if (parked) writer.snapshot(run, report, true)
    else writer.settled(run, report)
  }
}

/** Whether `run` ended with its durable state still in the store: its runtime shut down, the next process resumes it. */
async function parkedForNextProcess(run: TableRun, result: ToolExecutionResult | undefined, service: RunStoreSide): Promise<boolean> {
  if (run.cancelRequested || result === undefined || !result.isError) return false
  return service.parked(run.callId)
}

/**
 * Takes back the runs this process resumed from the store that were started in a table:
 * each comes back under the id its clients know, its log rebuilt from the frames its last
 * process stored (none readable: its ids continue after the record's), then a `resumed`
 * event. A record still `running` that nothing resumed is ended when its process is gone
 * (`RunService.settleIfLost`). Returns how many were adopted.
 */
async function adoptResumed(resumed: ResumedRunPool, events: RunEventStore | undefined, driver: Driver, staleMs: number, early: ReadonlyMap<string, EarlyEvents>): Promise<number> {
  const { writer, table, sources } = driver
  const { service } = writer
  const records = service.records
  if (records === undefined) return 0
  // Read once for every run adopted here; on a failure only a new request of theirs starts their snapshots again.
  const open = resumed.size === 0 ? () => [] : await sources.approvals().catch((error: unknown) => (sources.report(error), () => []))
  let adopted = 0
  for (const id of await records.list(MAX_ADOPTED_RECORDS)) {
    const record = await records.get(id)
    if (record === undefined || record.status !== 'running' || table.get(record.id) !== undefined) continue
    const handle = resumed.take(record.callId)
    if (handle === undefined) {
      await service.settleIfLost(record, events, staleMs)
      continue
    }
    const loaded = await events?.read(record.id).catch((error: unknown) => void sources.report(error))
    const run = table.admit({ callId: record.callId, agent: record.agent, principal: record.principal, asked: record.asked === true, id: record.id, createdAt: record.createdAt, events: restoredEvents(record, loaded?.events) })
    if (run === undefined) continue
    // Its writes go on by compare-and-set from what was read here.
    // Alive on the store before a claim names this process.
    await service.hold()
    await service.adopted(run, loaded?.version)
    // Its ids reserved in the store before it gives one: a process that dies right after never lets the next one give them again.
    await writer.reserve(run, sources.report)
    adopted++
    const spec: BackgroundRunSpec = {
      callId: record.callId,
      agent: record.agent,
      principal: record.principal ?? '',
      start: { callId: record.callId, ...(record.agent === undefined ? {} : { agent: record.agent }), resumed: true },
      execute: (signal) => {
        // The resumed execution is already under way: a cancel (or the shutdown) cancels it.
        if (signal.aborted) handle.cancel(signal.reason)
        else
          // Stryker disable next-line ObjectLiteral,BooleanLiteral: a signal fires 'abort' at most once
          signal.addEventListener('abort', () => handle.cancel(signal.reason), { once: true })
        return handle.result as Promise<ToolExecutionResult>
      },
    }
    // Its open requests: it waits again at once, so its `resumed` frame is in the next snapshot.
    service.track(drive(run, spec, driver, sources.report, { waitingFor: open(record.callId).map((approval) => approval.callId), early: early.get(record.callId) }).catch(sources.report))
  }
  return adopted
}

/** A run's view: `running` becomes `waiting` while `approvals` are open, `cancelled` once a cancel was asked. */
function viewOf(record: RunRecordJson, cancelRequested: boolean, approvals: readonly PendingApproval[], truncated: boolean): RunView {
  const status: RunStatus = record.status !== 'running' ? record.status : cancelRequested ? 'cancelled' : approvals.length > 0 ? 'waiting' : 'running'
  return {
    id: record.id,
    callId: record.callId,
    ...(record.agent === undefined ? {} : { agent: record.agent }),
    ...(record.principal === undefined ? {} : { principal: record.principal }),
    status,
    createdAt: record.createdAt,
    ...(record.settledAt === undefined ? {} : { settledAt: record.settledAt }),
    approvals: approvals.map((a) => ({
      id: a.id,
      kind: a.kind,
      callId: a.callId,
      name: a.name,
      summary: a.summary,
      ...(a.preview === undefined ? {} : { preview: a.preview }),
      ...(a.reason === undefined ? {} : { reason: a.reason }),
      requestedAt: a.requestedAt,
      expiresAt: a.expiresAt,
    })),
    ...(truncated ? { approvalsTruncated: true as const } : {}),
    events: { first: record.events.first, last: record.events.last, dropped: record.events.dropped },
    ...(record.result === undefined ? {} : { result: record.result }),
  }
}

/**
 * A table of background runs on `service` (`runtime.runs.table()`): runs it starts are
 * written to the store as they go; runs the service resumes from the store come back to it.
 */
export function createBackgroundRuns(service: RunStoreSide, options: ResolvedRunTableOptions, sources: BackgroundRunSources, now: () => number = Date.now): BackgroundRuns {
  const events = service.events(options.maxEventBytesPerRun)
  const writer = recordWriter(service, events)
  const table = createRunTable(options, now, (run) => writer.delete(run, sources.report))
  const driver: Driver = { table, writer, sources }
  const early = new Map<string, EarlyEvents>()
  service.attach({
    starting: (callId) => {
      if (!early.has(callId)) early.set(callId, listenEarly(sources, callId))
    },
    parking: (callId) => {
      // Its frames up to the park (the park may come before its `approval` frame, whose request is still being written): the park lands after them.
      const run = table.get(callId.slice(RUN_CALL_ID_PREFIX.length))
      if (run !== undefined && run.callId === callId && run.status === 'running') writer.snapshot(run, sources.report)
    },
    adopt: async (resumed, staleMs) => {
      try {
        return await adoptResumed(resumed, events, driver, staleMs, early)
      } finally {
        // Adopted runs' listeners are their drives' now; the others are no run of this table's.
        for (const callId of resumed.callIds) {
          const listener = early.get(callId)
          early.delete(callId)
          if (listener !== undefined && listener.target === undefined) listener.unsubscribe()
        }
      }
    },
  })
  return {
    async start(spec, report = sources.report) {
      // Its id is its call id's uuid: its record, runs/<callId>, is found from the id with no index.
      const id = spec.callId.startsWith(RUN_CALL_ID_PREFIX) ? spec.callId.slice(RUN_CALL_ID_PREFIX.length) : undefined
      const run = table.admit({ callId: spec.callId, agent: spec.agent, principal: spec.principal, fresh: true, ...(id === undefined ? {} : { id }) })
      if (run === undefined) return undefined
      // Alive on the store before its record names this process (another instance may read it at once).
      await service.hold()
      const driven = drive(run, spec, driver, report).catch(report)
      service.track(driven)
      return { run, driven }
    },
    shareRefusal: (principal) => {
      const share = liveShare(options.maxRuns)
      if (principal === undefined || table.liveOf(principal) < share || table.held.live >= options.maxRuns) return undefined
      return `this token has ${table.liveOf(principal)} runs running, the most one token may (runs.maxRuns ${options.maxRuns} less a quarter left to the others); retry once some end`
    },
    get: (id) => table.get(id),
    stored: async (id) => service.records?.get(id),
    follow: (id) => service.follow(id, options.maxEventBytesPerRun, () => table.get(id)?.events),
    view: async (run) => {
      const record = 'controller' in run ? runRecord(run) : run
      const cancelRequested = 'controller' in run && run.cancelRequested
      // A cancelled run's requests are being withdrawn (a decision answers APPROVAL_WITHDRAWN): none is listed as open.
      if (record.status !== 'running' || cancelRequested) return viewOf(record, cancelRequested, [], false)
      const open = await sources.approvals(record.callId)
      return viewOf(record, cancelRequested, open(record.callId), open.truncated === true)
    },
    cancel: (run, reason) => table.cancel(run, reason),
    openStream: ((reader?: StreamReader) => (reader === undefined ? table.openStream() : table.openStream(reader))) as BackgroundRuns['openStream'],
    get held() {
      return table.held
    },
    options,
  }
}

/** How often a reader looks for new frames when no notification reached it (a run of another request, on workerd). */
const POLL_MS = 50

/**
 * Resolves at the log's next frame, when `finished` settles, or after {@link POLL_MS}. The
 * notification only wakes this reader; it never writes for it, so the run (another
 * request's work) does no I/O on this reader's stream, which workerd forbids.
 */
async function nextFrame(events: RunEventLog, finished: Promise<void>): Promise<void> {
  let unsubscribe: () => void = () => {}
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    await Promise.race([
      new Promise<void>((resolve) => (unsubscribe = events.subscribe(() => resolve()))),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, POLL_MS))),
      finished,
    ])
  } finally {
    unsubscribe()
    clearTimeout(timer)
  }
}

/** Where {@link readEvents} hands a run's frames. */
export interface RunEventsReader {
  /** One batch: the frames (at most the batch's bytes, at least one) and the gap before them, if any. */
  send(batch: RunEventsSince): void
  /** Resolves once the reader took what was sent. */
  drained(): Promise<void>
  /** Whether the reader left (the reading stops). */
  stopped(): boolean
  /** Settles when the reader leaves: a wait for the next frame ends then. */
  readonly finished: Promise<void>
}

/**
 * Reads a run's frames after `lastId` until its `end` frame, in batches of at most
 * `batchBytes`, each sent once the previous one was taken and the host's loop turned: a
 * long log reaches a slow reader whole, and it never holds more than a batch. Frames
 * dropped before the reader got them come as a `gap`, then it goes on. `run.events` is read
 * at each step (a followed run's log is replaced by this process's own once adopted).
 */
export async function readEvents(run: { readonly events: RunEventLog }, lastId: number, batchBytes: number, reader: RunEventsReader): Promise<void> {
  let cursor = lastId
  while (!reader.stopped()) {
    const batch = run.events.since(cursor, batchBytes)
    if (batch.gap !== undefined || batch.frames.length > 0) reader.send(batch)
    cursor = batch.frames.at(-1)?.id ?? batch.gap?.last ?? cursor
    if (cursor >= run.events.last && run.events.closed) return
    // The next batch waits for this one to be taken: a reader slower than its run falls behind in the run's log (bounded), never in its stream.
    await Promise.race([reader.drained(), reader.finished])
    if (cursor >= run.events.last) await nextFrame(run.events, reader.finished)
    // A reader in-process takes a batch within microtasks: one macrotask between batches keeps the host's loop turning.
    else await new Promise((resolve) => setTimeout(resolve, 0))
  }
}
