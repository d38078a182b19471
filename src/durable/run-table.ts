/**
 * The table behind `/v1/runs`: each run with its bounded buffer of event frames, kept until
 * evicted (maxRuns, bytes, retention; running runs never), and the store side of its records
 * and event snapshots. Bounds and formats: docs/http-api.md, "Runs as resources".
 * @module
 */
import type { DurableStore, StoreDeleteResult, StorePutResult, StoreWriteOptions } from './store.js'
import type { ScopeKey, ToolExecutionResult } from '../types.js'
import { utf8Length, utf8Pieces } from '../util/utf8.js'
import { parseStoredJson } from './stored-json.js'
import { refuseUnknownOptions } from '../util/unknown-field.js'
import { shareLeavingAQuarter } from '../util/shares.js'

/** A run's state as `GET /v1/runs/:id` reports it (`waiting` is `running` with pending approvals). */
export type RunStatus = 'running' | 'waiting' | 'done' | 'failed' | 'cancelled'

/** The state a run is stored with: `waiting` is derived from the approval broker when asked. */
export type StoredRunStatus = Exclude<RunStatus, 'waiting'>

/** Options of the run table (`createToolsApp({ runs })`); validated at creation (`INVALID_OPTIONS`). */
export interface RunTableOptions {
  /** The most runs kept, running and finished together. Default 256. */
  readonly maxRuns?: number
  /** The most bytes of event frames and results the table keeps, all runs together. Default 64 MiB. */
  readonly maxBytes?: number
  /** The most bytes of event frames one run keeps for reconnecting clients. Default 1 MiB. */
  readonly maxEventBytesPerRun?: number
  /** How long a finished run stays readable, in ms. Default 15 minutes. */
  readonly retentionMs?: number
  /**
   * The most `/v1/runs/:id/events` streams open at once, every run together; one more is
   * 503 `OVERLOADED`. Each stream replays its run's buffer (up to `maxEventBytesPerRun`)
   * on the host's thread, so this bounds that work. Default 64, shared ({@link streamShares}).
   */
  readonly maxStreams?: number
}

/** Running runs one principal may start: `maxRuns` less a quarter. */
export const liveShare: (maxRuns: number) => number = shareLeavingAQuarter

/** Who opens an event stream (`person`: holds `approve`). */
export interface StreamReader {
  readonly id: string
  readonly person: boolean
}

/** How `maxStreams` is shared: a reader without `approve` holds at most `perReader`, all of them `nonPersons` (docs/durability.md, "Shares"). */
export function streamShares(maxStreams: number): { readonly perReader: number; readonly nonPersons: number } {
  return { perReader: Math.max(1, Math.floor(maxStreams / 4)), nonPersons: shareLeavingAQuarter(maxStreams) }
}

/** The validated options, defaults applied. */
export interface ResolvedRunTableOptions {
  readonly maxRuns: number
  readonly maxBytes: number
  readonly maxEventBytesPerRun: number
  readonly retentionMs: number
  readonly maxStreams: number
}

/** Default `runs.maxRuns`. */
export const DEFAULT_MAX_RUNS = 256
/** Default `runs.maxBytes`: 64 MiB. */
export const DEFAULT_MAX_RUN_TABLE_BYTES = 64 * 1024 * 1024
/** Default `runs.maxEventBytesPerRun`: 1 MiB. */
export const DEFAULT_MAX_EVENT_BYTES_PER_RUN = 1024 * 1024
/** Default `runs.retentionMs`: 15 minutes. */
export const DEFAULT_RUN_RETENTION_MS = 15 * 60 * 1000
/** Default `runs.maxStreams`. */
export const DEFAULT_MAX_RUN_STREAMS = 64

/** The names {@link RunTableOptions} holds; any other is refused (`runs.maxRun` is not left at its default in silence). */
const RUN_TABLE_OPTION_KEYS: readonly string[] = ['maxRuns', 'maxBytes', 'maxEventBytesPerRun', 'retentionMs', 'maxStreams']

/** Validates the `runs` option of `createToolsApp`; `fail` throws the caller's `INVALID_OPTIONS`. */
export function resolveRunTableOptions(options: RunTableOptions | undefined, fail: (message: string) => never): ResolvedRunTableOptions {
  if (options !== undefined && (typeof options !== 'object' || options === null || Array.isArray(options))) fail('runs must be an object')
  refuseUnknownOptions(options, RUN_TABLE_OPTION_KEYS, fail, 'runs.')
  const positive = (name: keyof RunTableOptions, fallback: number): number => {
    const value = options?.[name] ?? fallback
    if (!Number.isSafeInteger(value) || value < 1) fail(`runs.${name} must be a positive integer`)
    return value
  }
  return {
    maxRuns: positive('maxRuns', DEFAULT_MAX_RUNS),
    maxBytes: positive('maxBytes', DEFAULT_MAX_RUN_TABLE_BYTES),
    maxEventBytesPerRun: positive('maxEventBytesPerRun', DEFAULT_MAX_EVENT_BYTES_PER_RUN),
    retentionMs: positive('retentionMs', DEFAULT_RUN_RETENTION_MS),
    maxStreams: positive('maxStreams', DEFAULT_MAX_RUN_STREAMS),
  }
}

/** One event frame as kept: its id and its whole `event:`/`id:`/`data:` text. */
export interface RunEventFrame {
  readonly id: number
  readonly text: string
}

/** What a client resuming after `lastId` gets: the frames it missed, and the ids dropped before it could. */
export interface RunEventsSince {
  /** The ids that were dropped from the buffer and can no longer be sent (inclusive range). */
  readonly gap?: { readonly first: number; readonly last: number }
  /**
   * The part of `gap` that a process reserved before a restart (see
   * {@link RestoredRunEvents.reservedFrom}): ids that may never have named an event at all.
   */
  readonly reserved?: { readonly first: number; readonly last: number }
  readonly frames: readonly RunEventFrame[]
}

/** A run's bounded, resumable event buffer. */
export interface RunEventLog {
  /** Appends one frame (its id is the next one of the run, from 1); returns the id. */
  append(event: string, data: unknown): number
  /**
   * Keeps every frame appended from now on, outside the bound (the run's `result` and
   * `end`: what a late client needs most, each bounded by its producer).
   */
  pinRest(): void
  /** Marks the log complete (the run's `end` frame is its last); later appends are ignored. */
  close(): void
  /** Whether {@link RunEventLog.close} was called. */
  readonly closed: boolean
  /**
   * The frames after `lastId` (0: from the start), and the gap when some were dropped; at
   * most `maxBytes` of them (at least one), so a reader can pace itself.
   */
  since(lastId: number, maxBytes?: number): RunEventsSince
  /** Called with each frame appended from now on, and once (with an empty text) when the log closes; returns the unsubscribe. */
  subscribe(listener: (frame: RunEventFrame) => void): () => void
  /** The oldest id still held (`last + 1` when empty). */
  readonly first: number
  /** The newest id assigned (0 before the first frame). */
  readonly last: number
  /** How many frames were dropped to keep within the bound. */
  readonly dropped: number
  /** Bytes of the frames held. */
  readonly bytes: number
  /** Live subscriptions (a leak gauge). */
  readonly subscriberCount: number
}

/** UTF-8 length without encoding (no copy of a large frame). */
export { utf8Length }

/**
 * A run's frames as a process left them in the store ({@link RunEventStore}): the newest
 * ones, with consecutive ids (none: every id up to `last` is gone), and how many frames
 * of the run were dropped before them. `last` is where the next frame's id continues
 * from: the last stored frame's id, or past it when the process that stored them went on
 * assigning ids it may not have stored (ids are never given to two frames).
 */
export interface RestoredRunEvents {
  readonly frames: readonly RunEventFrame[]
  readonly last: number
  readonly dropped: number
  /**
   * When `last` is past the last stored frame because that process reserved ids: the first
   * reserved id (the reserve is `reservedFrom`..`last`). A reader resuming inside it is
   * told the ids were reserved, not that events were dropped.
   */
  readonly reservedFrom?: number
}

/**
 * Creates one run's event buffer of at most `maxBytes` of frames (the newest frame is
 * always kept, whatever its size: a frame is bounded by its producer), plus the frames
 * appended after `pinRest()`. `onBytes` hears every change of
 * the held bytes, so the table can keep its total. `restored` (a run resumed after a
 * restart) starts the buffer with the frames its last process stored, under their ids:
 * new frames continue after `restored.last`, so a client's `Last-Event-ID` means what it
 * meant before. Restored frames are counted in `bytes` but not reported to `onBytes`.
 */
export function createRunEventLog(maxBytes: number, onBytes: (delta: number) => void = () => {}, restored?: RestoredRunEvents): RunEventLog {
  const frames: (RunEventFrame & { readonly bytes: number })[] = []
  let head = 0
  let last = restored?.last ?? 0
  let bytes = 0
  let dropped = restored?.dropped ?? 0
  const reservedFrom = restored?.reservedFrom
  const reservedTo = restored?.last ?? 0
  for (const frame of restored?.frames ?? []) {
    const size = utf8Length(frame.text)
    frames.push({ id: frame.id, text: frame.text, bytes: size })
    bytes += size
  }
  // A smaller bound than the process that stored them had: the oldest go, counted.
  while (bytes > maxBytes && frames.length - head > 1) {
    bytes -= frames[head]!.bytes
    frames[head++] = undefined as never
    dropped++
  }
  let pinnedFrom = Number.POSITIVE_INFINITY
  let pinnedBytes = 0
  let closed = false
  const listeners = new Set<(frame: RunEventFrame) => void>()
  const drop = (): void => {
    const frame = frames[head]!
    frames[head++] = undefined as never
    bytes -= frame.bytes
    onBytes(-frame.bytes)
    dropped++
    // Compact once the dropped prefix is half the array: amortised O(1) per frame.
    // Stryker disable next-line ConditionalExpression,LogicalOperator,EqualityOperator,ArithmeticOperator,BlockStatement: compacting the dropped prefix sooner, later or never changes the time and memory a buffer costs, never what it holds or returns (every read starts at head)
    if (head > 1024 && head * 2 > frames.length) {
      frames.splice(0, head)
      head = 0
    }
  }
  return {
    append(event, data) {
      if (closed) return last
      const id = ++last
      const text = `event: ${event}\nid: ${id}\ndata: ${JSON.stringify(data)}\n\n`
      const size = utf8Length(text)
      frames.push({ id, text, bytes: size })
      bytes += size
      if (id >= pinnedFrom) pinnedBytes += size
      onBytes(size)
      // Pinned frames are kept outside the bound, so a large result never pushes the run's other frames out.
      while (bytes - pinnedBytes > maxBytes && frames.length - head > 1 && frames[head]!.id < pinnedFrom) drop()
      for (const listener of [...listeners]) {
        try {
          listener({ id, text })
        } catch {
          // A reader's failure is its own: the run and the other readers go on.
        }
      }
      return id
    },
    close() {
      closed = true
      // Readers waiting for a next frame learn there is none.
      for (const listener of [...listeners]) {
        try {
          listener({ id: last, text: '' })
        } catch {
          // As in append.
        }
      }
      listeners.clear()
    },
    get closed() {
      return closed
    },
    pinRest() {
      pinnedFrom = Math.min(pinnedFrom, last + 1)
    },
    since(lastId, limit = Number.POSITIVE_INFINITY) {
      const first = frames[head]?.id ?? last + 1
      const from = Math.max(lastId + 1, first)
      // Ids are ascending but may skip once, after a restart (see RestoredRunEvents.last): found by bisection.
      let lo = head
      let hi = frames.length
      while (lo < hi) {
        const mid = (lo + hi) >>> 1
        if (frames[mid]!.id < from) lo = mid + 1
        else hi = mid
      }
      const out: RunEventFrame[] = []
      let taken = 0
      for (let i = lo; i < frames.length; i++) {
        const frame = frames[i]!
        // A batch ends before a restart's skip: the next one says it (a gap), however the reader pages.
        if (out.length > 0 && (taken + frame.bytes > limit || frame.id !== out.at(-1)!.id + 1)) break
        taken += frame.bytes
        out.push({ id: frame.id, text: frame.text })
      }
      // Ids this buffer never held, before its first frame or in the skip, are reported as a gap.
      const next = frames[lo]?.id ?? last + 1
      if (lastId + 1 >= next) return { frames: out }
      const gap = { first: lastId + 1, last: next - 1 }
      // The part of it a previous process reserved (a skip, not necessarily a loss), said apart.
      const reserved = reservedFrom === undefined ? undefined : { first: Math.max(gap.first, reservedFrom), last: Math.min(gap.last, reservedTo) }
      return reserved !== undefined && reserved.first <= reserved.last ? { gap, reserved, frames: out } : { gap, frames: out }
    },
    subscribe(listener) {
      const entry = (frame: RunEventFrame): void => listener(frame)
      listeners.add(entry)
      return () => void listeners.delete(entry)
    },
    get first() {
      return frames[head]?.id ?? last + 1
    },
    get last() {
      return last
    },
    get dropped() {
      return dropped
    },
    get bytes() {
      return bytes
    },
    get subscriberCount() {
      return listeners.size
    },
  }
}

/** A run of the table: its record and its live parts (the abort controller, the event buffer). */
export interface TableRun {
  /** Server-assigned, unguessable (`crypto.randomUUID()`). */
  readonly id: string
  /** The `run_code` call's id (`http-run-<uuid>`): the `parentCallId` of its sub-calls and approvals. */
  readonly callId: string
  readonly agent: ScopeKey | undefined
  /** The id of the principal that started it (never a token); `undefined` for a record written before runs had one. */
  readonly principal: string | undefined
  /** Whether it ever asked a person (an `approval` event): then `approve` principals may read it. */
  readonly asked: boolean
  /** Epoch ms. */
  readonly createdAt: number
  /** The run's own abort switch (`DELETE /v1/runs/:id`). */
  readonly controller: AbortController
  readonly events: RunEventLog
  /** `running` until settled; `cancelled` once a cancel was asked, whatever the result. */
  readonly status: StoredRunStatus
  /** Epoch ms of the settlement. */
  readonly settledAt: number | undefined
  /** What `POST /v1/run` would have answered, once settled (absent after an internal failure). */
  readonly result: ToolExecutionResult | undefined
  /** Whether `DELETE` asked for the run to end. */
  readonly cancelRequested: boolean
}

/** A run's record as JSON: what a {@link RunRecordStore} keeps. */
export interface RunRecordJson {
  readonly id: string
  readonly callId: string
  readonly agent?: ScopeKey
  /** The id of the principal that started it (`GET` answers it only to that principal, `admin`, and `approve` once it `asked`). */
  readonly principal?: string
  /** Present once the run asked a person: the runs an `approve` principal may read. */
  readonly asked?: true
  readonly status: StoredRunStatus
  readonly createdAt: number
  readonly settledAt?: number
  readonly result?: ToolExecutionResult
  /**
   * The event buffer's summary: the ids still held, how many were dropped; while running,
   * `next`: the ids its process may give up to (the next one continues after; absent: `last` + {@link EVENT_ID_RESERVE}).
   */
  readonly events: { readonly first: number; readonly last: number; readonly dropped: number; readonly next?: number }
  /**
   * The app instance that ran it (see {@link RUN_OWNER_PREFIX}): how another process on the
   * same store tells a run that is still computing somewhere from one whose process died.
   */
  readonly owner?: string
}

/**
 * Where a process with a store says it is alive while it runs or parks runs (one heartbeat per process):
 * `owners/<owner>` (the runtime's heartbeat, docs/durability.md) holds `{ "at": <epoch ms> }`, rewritten every few seconds.
 */
export const RUN_OWNER_PREFIX = 'owners/'

/**
 * The result of a run that nothing can finish: its process (or Durable Object) stopped
 * while it computed or called a tool, before it ever parked, so no state is left to resume.
 */
export function interruptedRunResult(where: string): ToolExecutionResult {
  const message = `the run was interrupted: ${where} stopped before the run parked, so there is no state to resume it from; its calls may or may not have taken effect`
  return { isError: true, error: { message, info: { name: 'ToolError', code: 'INTERRUPTED' } }, content: [{ type: 'text', text: `Error: ${message}` }] }
}

/** Where run records go: a later backend keeps them past the process (one JSON value per run). */
export interface RunRecordStore {
  /** Writes `record`, by compare-and-set when `ifVersion` is given (a conflict is an answer, as in `DurableStore.put`). */
  put(record: RunRecordJson, options?: StoreWriteOptions): Promise<StorePutResult>
  get(id: string): Promise<RunRecordJson | undefined>
  /** The record with its version, for a compare-and-set write over it. */
  read(id: string): Promise<{ readonly record: RunRecordJson; readonly version: string } | undefined>
  delete(id: string, options?: StoreWriteOptions): Promise<StoreDeleteResult>
  /** The ids of the records kept, oldest key order first, at most `limit`. */
  list(limit: number): Promise<readonly string[]>
}

/** The record of `run` as JSON. */
export function runRecord(run: TableRun): RunRecordJson {
  return {
    id: run.id,
    callId: run.callId,
    ...(run.agent === undefined ? {} : { agent: run.agent }),
    ...(run.principal === undefined ? {} : { principal: run.principal }),
    ...(run.asked ? { asked: true as const } : {}),
    status: run.status,
    createdAt: run.createdAt,
    ...(run.settledAt === undefined ? {} : { settledAt: run.settledAt }),
    ...(run.result === undefined ? {} : { result: run.result }),
    events: { first: run.events.first, last: run.events.last, dropped: run.events.dropped },
  }
}

const STORED_STATUSES: readonly StoredRunStatus[] = ['running', 'done', 'failed', 'cancelled']

/** A `/v1/runs` run's view as its record (`runs/<callId>`, `view`) keeps it: the record without what the record names itself (call id, agent, principal, owner). */
export type StoredView = Omit<RunRecordJson, 'callId' | 'agent' | 'principal' | 'owner'>

/** The call id of the table run `id` (its record is `runs/<callId>`): a table run's id is the uuid of its call id. */
export const RUN_CALL_ID_PREFIX = 'http-run-'

/** A stored view, checked (another process wrote it, or something else did: one that is not one is absent, never a crash). */
export function readRunView(value: unknown): StoredView | undefined {
  const view = value as Partial<StoredView> | null
  if (typeof view !== 'object' || view === null || typeof view.id !== 'string') return undefined
  if (!STORED_STATUSES.includes(view.status as StoredRunStatus) || typeof view.createdAt !== 'number') return undefined
  if (view.asked !== undefined && view.asked !== true) return undefined
  return typeof view.events === 'object' && view.events !== null ? (view as StoredView) : undefined
}

/** The view part of `record`. */
export function storedView(record: RunRecordJson): StoredView {
  const { callId: _callId, agent: _agent, principal: _principal, owner: _owner, ...view } = record
  return view
}

/**
 * Where a `/v1/runs` run's event frames are kept for the process that resumes it after a
 * restart: `run-events/<id>` (a small manifest) and `run-events/<id>/<gen>.<n>`
 * (the frames' JSON, cut into pieces each within any store's value cap).
 */
export const RUN_EVENTS_PREFIX = 'run-events/'

/** Where a run's frames go across a restart (one snapshot per run, replaced whole). */
export interface RunEventStore {
  /**
   * Stores the newest frames of `log` that fit the bound (the rest counted as dropped),
   * replacing the previous snapshot. `reserve` > 0: this process may go on assigning that
   * many ids without storing them (a run that computes after its snapshot); the process
   * that loads the snapshot continues after them, so no id ever names two frames.
   */
  put(id: string, log: RunEventLog, reserve?: number, options?: StoreWriteOptions): Promise<StorePutResult>
  /** The stored frames, or `undefined` when there are none or they are not a snapshot this code wrote whole. */
  load(id: string): Promise<RestoredRunEvents | undefined>
  /** {@link RunEventStore.load} with the manifest's version, for a compare-and-set write over it. */
  read(id: string): Promise<{ readonly events: RestoredRunEvents; readonly version: string } | undefined>
  /** Removes the snapshot and every piece of it (stray ones of an interrupted write included); with `ifVersion`, only while its manifest is that version. */
  delete(id: string, options?: StoreWriteOptions): Promise<void>
}

/**
 * The largest event id a restored buffer may continue from: a stored number past it is not
 * one this code wrote (a run would need years of frames), and ids stay well within what
 * `Last-Event-ID` accepts (15 digits) and a double counts exactly.
 */
export const MAX_RESTORED_EVENT_ID = 1e12

/** The largest piece written: under every driver's default value cap (the edge's is 128 KiB). */
export const MAX_PIECE_BYTES = 64 * 1024
/** A store whose cap is smaller gets smaller pieces, down to this. */
const MIN_PIECE_BYTES = 1024
/** A manifest is a few numbers: anything longer is not one. */
const MAX_MANIFEST_CHARS = 512
const GEN = /^[0-9a-z]{1,16}$/
const FRAME = /^event: [a-z][a-z-]{0,31}\nid: (\d{1,15})\ndata: [^\n\r]*\n\n$/

interface EventsManifest {
  readonly v: 1
  readonly gen: string
  readonly pieces: number
  /** UTF-8 bytes of the pieces together (the JSON array of the frames' texts). */
  readonly bytes: number
  readonly last: number
  readonly dropped: number
  /** Where the next process's ids continue from (≥ `last`); absent: `last`. */
  readonly next?: number
}

function readManifest(text: string, maxBytes: number): EventsManifest | undefined {
  if (text.length > MAX_MANIFEST_CHARS) return undefined
  let m: Partial<EventsManifest> | null
  try {
    m = JSON.parse(text) as Partial<EventsManifest> | null
  } catch {
    return undefined
  }
  const count = (x: unknown, max: number): boolean => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0 && x <= max
  if (typeof m !== 'object' || m === null || m.v !== 1 || typeof m.gen !== 'string' || !GEN.test(m.gen)) return undefined
  if (!count(m.bytes, maxBytes) || !count(m.pieces, Math.ceil(maxBytes / MIN_PIECE_BYTES) + 1)) return undefined
  if (m.next !== undefined && (!count(m.next, MAX_RESTORED_EVENT_ID) || (m.next as number) < (m.last as number))) return undefined
  return count(m.last, MAX_RESTORED_EVENT_ID) && count(m.dropped, MAX_RESTORED_EVENT_ID) ? (m as EventsManifest) : undefined
}

/** The generation a stored snapshot's manifest names, or `undefined` when the text is not a manifest. */
export function storedEventsGen(text: string): string | undefined {
  return readManifest(text, Number.MAX_SAFE_INTEGER)?.gen
}

/** The frames of a stored body, checked: each a frame text whose `id:` is the next of the run's, ending at `last`. */
async function readFrames(body: string, last: number): Promise<RunEventFrame[] | undefined> {
  let texts: unknown
  try {
    texts = await parseStoredJson(body)
  } catch {
    return undefined
  }
  if (!Array.isArray(texts) || texts.length > last) return undefined
  const frames: RunEventFrame[] = []
  let id = last - texts.length
  for (const text of texts) {
    id++
    if (typeof text !== 'string' || Number(FRAME.exec(text)?.[1]) !== id) return undefined
    frames.push({ id, text })
  }
  return frames
}

/**
 * A new generation of pieces: the epoch ms it was made (9 base-36 digits) then 7 random hex
 * digits. The time is what lets {@link sweepPieces} tell a write still under way from a leftover.
 */
export function newPiecesGen(now = Date.now()): string {
  return now.toString(36).padStart(9, '0') + crypto.randomUUID().slice(0, 7)
}

/** When generation `gen` was made (epoch ms); `undefined` for one that carries no time (12 hex digits, written before gens did). */
export function piecesGenTime(gen: string): number | undefined {
  return /^[0-9a-z]{16}$/.test(gen) ? parseInt(gen.slice(0, 9), 36) : undefined
}

/** The bounds of one {@link sweepPieces} pass. */
export interface PieceSweepBounds {
  /** Keys listed at most. */
  readonly maxKeys: number
  /** Pieces deleted at most. */
  readonly maxDeletes: number
  /** Pieces of a generation younger than this are kept whatever names them: their record may not be written yet. */
  readonly minAgeMs: number
}

/** What one {@link sweepPieces} pass did. */
export interface PieceSweepResult {
  readonly listed: number
  readonly deleted: number
  /** Where the next pass goes on (`after`); absent once the listing reached its end. */
  readonly cursor?: string
}

/**
 * One bounded pass over the pieces under `prefix` (`<prefix><owner>/<gen>.<n>`, from `after`
 * on): deletes each piece older than `minAgeMs` by its generation's time whose owner no longer
 * names its generation. `current(owner)` reads the owner's record: the generation it names,
 * `null` when it is gone or names none, `undefined` when it cannot tell (unreadable: kept).
 * A piece rewritten since it was listed is kept (the delete is conditional on its version);
 * a generation without a time is never judged old. Other keys under `prefix` are skipped.
 */
export async function sweepPieces(
  store: DurableStore,
  prefix: string,
  current: (owner: string) => Promise<string | null | undefined>,
  bounds: PieceSweepBounds,
  after?: string,
  now = Date.now(),
): Promise<PieceSweepResult> {
  const owners = new Map<string, string | null | undefined>()
  let listed = 0
  let deleted = 0
  let cursor = after
  while (listed < bounds.maxKeys) {
    const page = await store.list(prefix, { limit: Math.min(500, bounds.maxKeys - listed), ...(cursor === undefined ? {} : { after: cursor }) })
    for (const { key, version } of page.entries) {
      listed++
      cursor = key
      const piece = /^([^/]+)\/([^/.]+)\.[0-9]+$/.exec(key.slice(prefix.length))
      const made = piece === null ? undefined : piecesGenTime(piece[2]!)
      if (piece === null || made === undefined || now - made < bounds.minAgeMs) continue
      const owner = piece[1]!
      if (!owners.has(owner)) owners.set(owner, await current(owner))
      const named = owners.get(owner)
      if (named === undefined || named === piece[2]) continue
      if ((await store.delete(key, { ifVersion: version })).ok) deleted++
      if (deleted >= bounds.maxDeletes) return { listed, deleted, cursor: key }
    }
    if (page.cursor === undefined || page.entries.length === 0) return { listed, deleted }
  }
  return { listed, deleted, ...(cursor === undefined ? {} : { cursor }) }
}

/**
 * Writes `body` as the values `<prefix>0`, `<prefix>1`… of at most `size.bytes` UTF-8 bytes
 * each; a store with a smaller value cap halves `size.bytes` (kept for the next write), down
 * to 1 KiB. How many pieces.
 */
export async function putPieces(store: DurableStore, prefix: string, body: string, size: { bytes: number }): Promise<number> {
  for (;;) {
    const pieces = utf8Pieces(body, size.bytes)
    try {
      for (let n = 0; n < pieces.length; n++) await store.put(`${prefix}${n}`, pieces[n]!)
      return pieces.length
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'STORE_VALUE_TOO_LARGE' || size.bytes <= MIN_PIECE_BYTES) throw error
      size.bytes = Math.max(MIN_PIECE_BYTES, size.bytes >> 1)
    }
  }
}

/**
 * The text of `count` pieces written by {@link putPieces}, or `undefined` when one is missing
 * or they are not `bytes` UTF-8 bytes together: read one by one and given up on past `bytes`,
 * so pieces another process filled with garbage cost at most that much memory.
 */
export async function getPieces(store: DurableStore, prefix: string, count: number, bytes: number): Promise<string | undefined> {
  const parts: string[] = []
  let read = 0
  for (let n = 0; n < count; n++) {
    const piece = await store.get(`${prefix}${n}`)
    // Checked before it is kept: a piece longer than what is left of the size is not one of them.
    if (
      piece === undefined ||
      // Stryker disable next-line ConditionalExpression,ArithmeticOperator: a piece longer in characters is longer in bytes, so the byte check below refuses it at the same piece; this one only spares measuring it
      piece.value.length > bytes - read
    ) {
      return undefined
    }
    read += utf8Length(piece.value)
    if (read > bytes) return undefined
    parts.push(piece.value)
  }
  return read === bytes ? parts.join('') : undefined
}

/**
 * A {@link RunEventStore} over a `DurableStore`, keeping at most `maxBytes` (UTF-8, the
 * frames' JSON) per run: what is written, and all that is ever read back (pieces are
 * read one by one and given up on past the manifest's size, which is itself within the
 * bound), so a store another process filled with garbage costs at most that much memory
 * and one parse of that size. A snapshot is written pieces first, then its manifest, then
 * the previous snapshot's pieces are deleted: an interrupted write leaves the previous
 * snapshot readable.
 */
export function createStoreRunEvents(store: DurableStore, maxBytes: number): RunEventStore {
  const base = (id: string): string => `${RUN_EVENTS_PREFIX}${id}`
  /** Deletes the pieces of `id` that are not of generation `keep`. */
  const sweep = async (id: string, keep: string | undefined): Promise<void> => {
    const prefix = `${base(id)}/`
    for (let after: string | undefined; ; ) {
      const page = await store.list(prefix, { limit: 1000, ...(after === undefined ? {} : { after }) })
      for (const { key } of page.entries) if (keep === undefined || !key.startsWith(`${prefix}${keep}.`)) await store.delete(key)
      if (page.cursor === undefined || page.entries.length === 0) return
      after = page.cursor
    }
  }
  // Shrunk once for good when the store refuses a piece (its cap is smaller than the edge's).
  const pieceSize = { bytes: MAX_PIECE_BYTES }
  return {
    async put(id, log, reserve = 0, options) {
      const { frames } = log.since(0)
      // The newest frames whose JSON fits the bound; the older ones count as dropped.
      const entries: string[] = []
      let bytes = 2
      for (let i = frames.length - 1; i >= 0; i--) {
        const entry = JSON.stringify(frames[i]!.text)
        const size = utf8Length(entry) + (entries.length > 0 ? 1 : 0)
        if (bytes + size > maxBytes) break
        entries.push(entry)
        bytes += size
      }
      entries.reverse()
      const body = `[${entries.join(',')}]`
      const gen = newPiecesGen()
      const pieces = await putPieces(store, `${base(id)}/${gen}.`, body, pieceSize)
      const last = frames.at(-1)?.id ?? log.last
      const next = Math.min(MAX_RESTORED_EVENT_ID, last + reserve)
      const manifest: EventsManifest = { v: 1, gen, pieces, bytes, last, dropped: log.dropped + frames.length - entries.length, ...(next > last ? { next } : {}) }
      const put = await store.put(base(id), JSON.stringify(manifest), options)
      // Lost a compare-and-set (another process writes this run's snapshots now): only this write's pieces go.
      if (put.ok) await sweep(id, gen)
      else for (let n = 0; n < pieces; n++) await store.delete(`${base(id)}/${gen}.${n}`)
      return put
    },
    async load(id) {
      return (await this.read(id))?.events
    },
    async read(id) {
      const entry = await store.get(base(id))
      const manifest = entry === undefined ? undefined : readManifest(entry.value, maxBytes)
      if (manifest === undefined) return undefined
      const body = await getPieces(store, `${base(id)}/${manifest.gen}.`, manifest.pieces, manifest.bytes)
      if (body === undefined) return undefined
      const frames = await readFrames(body, manifest.last)
      if (frames === undefined) return undefined
      const next = manifest.next ?? manifest.last
      return { events: { frames, last: next, dropped: manifest.dropped, ...(next > manifest.last ? { reservedFrom: manifest.last + 1 } : {}) }, version: entry!.version }
    },
    async delete(id, options) {
      if (!(await store.delete(base(id), options)).ok) return
      await sweep(id, undefined)
    },
  }
}

/**
 * Ids a running run's process may give beyond what it last stored: the next process skips
 * them (unless the run was left parked, all its ids stored). A million: ids stay far below
 * MAX_RESTORED_EVENT_ID after any number of restarts a run could live through.
 */
export const EVENT_ID_RESERVE = 1_000_000

/** A stored id count, or `undefined` when it is not a plausible one. */
const storedId = (x: unknown): number | undefined => (typeof x === 'number' && Number.isSafeInteger(x) && x >= 0 && x <= MAX_RESTORED_EVENT_ID ? x : undefined)

/**
 * What the next process rebuilds a running run's buffer from: its stored frames (none: an
 * empty buffer after the record's last id), its ids continuing after every id its last
 * process may have given: the record's and the snapshot's bounds, the larger (a record
 * without one: its `last` + {@link EVENT_ID_RESERVE}). The ids past what was stored are `reservedFrom` on.
 */
export function restoredEvents(record: RunRecordJson, stored: RestoredRunEvents | undefined): RestoredRunEvents {
  const summary = record.events as { last?: unknown; next?: unknown }
  const last = storedId(summary.last) ?? 0
  const base = stored ?? { frames: [], last, dropped: last }
  const next = storedId(summary.next)
  const bound = Math.max(base.last, next !== undefined && next >= last ? next : Math.min(MAX_RESTORED_EVENT_ID, last + EVENT_ID_RESERVE))
  const known = (base.reservedFrom ?? base.last + 1) - 1
  return bound > base.last ? { frames: base.frames, last: bound, dropped: base.dropped, reservedFrom: known + 1 } : base
}

/** What the table holds (a leak and bound gauge for tests and health probes). */
export interface RunTableHeld {
  /** Runs kept, running and finished. */
  readonly runs: number
  /** Runs still running. */
  readonly live: number
  /** Bytes of event frames and results held. */
  readonly bytes: number
  /** Live event subscriptions across all runs (open `/events` streams and the runs' own producers). */
  readonly subscribers: number
  /** `/v1/runs/:id/events` streams open (at most `maxStreams`). */
  readonly streams: number
}

/** The run table. */
export interface RunTable {
  /**
   * Adds a running run, after evicting what the budgets require; `undefined` when the table
   * is full of running runs (or their bytes fill it): the caller answers `OVERLOADED`.
   */
  admit(init: {
    readonly callId: string
    readonly agent: ScopeKey | undefined
    /** Who started it (absent: a record from before runs had principals; only `approve` and `admin` read it). */
    readonly principal?: string | undefined
    /** A resumed run that had asked a person before its restart. */
    readonly asked?: boolean
    readonly id?: string
    readonly createdAt?: number
    /** The frames of a run resumed after a restart (its buffer continues after them). */
    readonly events?: RestoredRunEvents
    /** A new run (not adopted): refused past its principal's {@link liveShare}. */
    readonly fresh?: boolean
  }): TableRun | undefined
  /** Runs of `principal` still running. */
  liveOf(principal: string): number
  /** The run with this id, or `undefined` (evicted, or never existed). Sweeps first. */
  get(id: string): TableRun | undefined
  /** Asks the run to end: its controller aborts, and it will settle as `cancelled`. No-op once settled. */
  cancel(run: TableRun, reason: unknown): void
  /** Notes that the run asked a person (its `approval` event): `approve` principals may read it from then on. */
  noteAsked(run: TableRun): void
  /** Records the run's end: `cancelled` if a cancel was asked, else `done` / `failed` from the result. */
  settle(run: TableRun, result: ToolExecutionResult | undefined): void
  /** A place for one event stream (its release, called once), `undefined` past `maxStreams`, a message past `reader`'s share. */
  openStream(): (() => void) | undefined
  openStream(reader: StreamReader): (() => void) | string | undefined
  readonly held: RunTableHeld
}

type MutableRun = { -readonly [K in keyof TableRun]: TableRun[K] }

/**
 * Creates an empty run table. `now` is the clock (tests move it); `onEvict` hears each run
 * that leaves the table (a durable backend deletes its record then).
 */
export function createRunTable(options: ResolvedRunTableOptions, now: () => number = Date.now, onEvict: (run: TableRun) => void = () => {}): RunTable {
  const runs = new Map<string, MutableRun>()
  // Finished runs in the order they ended: the eviction order.
  const finished = new Set<MutableRun>()
  let bytes = 0
  let live = 0
  const liveBy = new Map<string, number>()
  let streams = 0
  const streamsOf = new Map<string, number>()
  let nonPersonStreams = 0
  const resultBytes = new WeakMap<MutableRun, number>()

  const evict = (run: MutableRun): void => {
    runs.delete(run.id)
    finished.delete(run)
    bytes -= run.events.bytes + (resultBytes.get(run) ?? 0)
    resultBytes.delete(run)
    onEvict(run)
  }
  /** Evicts finished runs, oldest first, while one is expired or the table is over a budget (`room` runs to spare). */
  const sweep = (room: number): void => {
    const expiredBefore = now() - options.retentionMs
    for (const run of finished) {
      if ((run.settledAt as number) >= expiredBefore && runs.size + room <= options.maxRuns && bytes <= options.maxBytes) break
      evict(run)
    }
  }

  function openStream(): (() => void) | undefined
  function openStream(reader: StreamReader): (() => void) | string | undefined
  function openStream(reader?: StreamReader): (() => void) | string | undefined {
    if (streams >= options.maxStreams) return undefined
    const counted = reader !== undefined && !reader.person ? reader.id : undefined
    if (counted !== undefined) {
      const { perReader, nonPersons } = streamShares(options.maxStreams)
      const held = streamsOf.get(counted) ?? 0
      if (held >= perReader) return `this token has ${held} event streams open, the most a token without the approve role may (a quarter of runs.maxStreams, ${options.maxStreams}); close one or retry later`
      if (nonPersonStreams >= nonPersons) return `tokens without the approve role have ${nonPersonStreams} event streams open, the most they may together (runs.maxStreams ${options.maxStreams} less a quarter kept for people); close one or retry later`
      streamsOf.set(counted, held + 1)
      nonPersonStreams++
    }
    streams++
    let open = true
    return () => {
      if (!open) return
      open = false
      streams--
      if (counted === undefined) return
      nonPersonStreams--
      const left = (streamsOf.get(counted) ?? 1) - 1
      if (left > 0) streamsOf.set(counted, left)
      else streamsOf.delete(counted)
    }
  }

  return {
    admit({ callId, agent, principal, asked, id, createdAt, events, fresh }) {
      sweep(1)
      if (runs.size >= options.maxRuns || bytes >= options.maxBytes) return undefined
      if (fresh === true && principal !== undefined && (liveBy.get(principal) ?? 0) >= liveShare(options.maxRuns)) return undefined
      if (id !== undefined && runs.has(id)) return undefined
      const run: MutableRun = {
        // A run resumed after a restart keeps the id its clients know.
        id: id ?? crypto.randomUUID(),
        callId,
        agent,
        principal,
        asked: asked === true,
        createdAt: createdAt ?? now(),
        controller: new AbortController(),
        // A run's bytes count while it is in the table; after eviction its buffer is no longer the table's.
        events: createRunEventLog(options.maxEventBytesPerRun, (delta) => {
          if (runs.get(run.id) !== run) return
          bytes += delta
          if (delta > 0 && bytes > options.maxBytes) sweep(0)
        }, events),
        status: 'running',
        settledAt: undefined,
        result: undefined,
        cancelRequested: false,
      }
      runs.set(run.id, run)
      // Restored frames were not reported while the run was not yet the table's.
      bytes += run.events.bytes
      live++
      if (principal !== undefined) liveBy.set(principal, (liveBy.get(principal) ?? 0) + 1)
      return run
    },
    get(id) {
      sweep(0)
      return runs.get(id)
    },
    cancel(run, reason) {
      const entry = run as MutableRun
      if (entry.status !== 'running' || entry.cancelRequested) return
      entry.cancelRequested = true
      entry.controller.abort(reason)
    },
    noteAsked(run) {
      ;(run as MutableRun).asked = true
    },
    settle(run, result) {
      const entry = run as MutableRun
      if (entry.status !== 'running') return
      entry.status = entry.cancelRequested ? 'cancelled' : result === undefined || result.isError ? 'failed' : 'done'
      entry.settledAt = now()
      entry.result = result
      live--
      const left = entry.principal === undefined ? 0 : (liveBy.get(entry.principal) ?? 1) - 1
      if (left > 0) liveBy.set(entry.principal!, left)
      else if (entry.principal !== undefined) liveBy.delete(entry.principal)
      if (runs.get(entry.id) !== entry) return
      const size = result === undefined ? 0 : utf8Length(JSON.stringify(result))
      resultBytes.set(entry, size)
      bytes += size
      finished.add(entry)
      sweep(0)
    },
    openStream,
    liveOf: (principal) => liveBy.get(principal) ?? 0,
    get held() {
      let subscribers = 0
      for (const run of runs.values()) subscribers += run.events.subscriberCount
      return { runs: runs.size, live, bytes, subscribers, streams }
    },
  }
}
