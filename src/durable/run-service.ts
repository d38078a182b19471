/**
 * `runtime.runs`: what the runtime keeps of its runs in the store (records, event snapshots,
 * one heartbeat per process), its resume loop, and its in-flight writes, drained on dispose.
 * Its tables of background runs (`table()`, the HTTP app's) attach to it. docs/durability.md.
 * @module
 */
import { ToolError } from '../errors.js'
import { refuseUnknownOptions } from '../util/unknown-field.js'
import { createRunEventLog, restoredEvents, createStoreRunEvents, interruptedRunResult, RUN_CALL_ID_PREFIX, storedView } from './run-table.js'
import type { RunEventLog, RunEventStore, RunRecordJson, RunRecordStore } from './run-table.js'
import { createLiveEvents, LIVE_POLL_MS, type FollowedRun, type LiveEvents } from './_live-events.js'
import { createStoreRunRecords, parkedIn, readStoredRun, runKey, sweepEventPieces, sweepParkPieces } from './runs.js'
import type { DurableRuns, ResumedRun } from './runs.js'
import type { DurableStore } from './store.js'
import { createBackgroundRuns } from './background-runs.js'
import type { BackgroundRunSources, BackgroundRuns, ResumedRunPool, RunStoreSide, RunTableLink } from './background-runs.js'
import type { PieceSweepBounds, PieceSweepResult, ResolvedRunTableOptions } from './run-table.js'

export type { BackgroundRunSources, BackgroundRunSpec, BackgroundRuns, ResumedRunPool, RunTableLink } from './background-runs.js'

/** Options of the runtime's runs (`createToolRuntime({ runs })`). */
export interface RunServiceOptions {
  /**
   * How often a runtime holding a store, with a table of runs attached (`createToolsApp`),
   * resumes the runs no live process holds; 0: never on its own (call `runtime.resumeRuns()`).
   * Default 10,000 ms.
   */
  readonly resumeEveryMs?: number
  /** How long a process may stay silent before its runs count as left. Default 30,000 ms. */
  readonly staleMs?: number
  /**
   * The most runs this process reads from the store for event streams at once (runs it does
   * not hold: another instance's, or one a dead process left before a sweep adopts it); one
   * more is refused with `OVERLOADED`. Each polls the store. Default 64.
   */
  readonly maxFollowers?: number
}

/** What one resume sweep did. */
export interface RunsResumed {
  readonly resumed: readonly ResumedRun[]
  /** How many of them an attached table took back (`/v1/runs` runs). */
  readonly adopted: number
}

/** Starts a stored run's `run_code` call again (the runtime's execution). */
type ResumeAll = (staleMs: number) => Promise<ResumedRun[]>

const DEFAULT_RESUME_EVERY_MS = 10_000
const DEFAULT_STALE_MS = 30_000
const DEFAULT_MAX_FOLLOWERS = 64
const MAX_TIMER_MS = 2_147_483_647
/** Writes a run's holder makes over others' before it gives up (each conflict is another process's write). */
const MAX_CAS_ATTEMPTS = 4
/**
 * Pieces younger than this (or than `staleMs`, the larger) are never swept: a park or snapshot
 * is written pieces first, its record after, and 15 minutes is far past the slowest spill (4,096
 * pieces of 64 KiB for the largest park).
 */
export const PIECE_SWEEP_MIN_AGE_MS = 15 * 60 * 1000
/** Keys one sweep pass lists, and pieces it deletes, per family (`run-parks/`, `run-events/`). */
export const PIECE_SWEEP_MAX_KEYS = 1000
export const PIECE_SWEEP_MAX_DELETES = 250
/** A resume sweep starts a piece sweep at most this often: each pass reads the record of every long-parked run whose pieces it lists. */
export const PIECE_SWEEP_EVERY_MS = 60_000

function checkMs(value: unknown, name: string, min: number): number | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > MAX_TIMER_MS) {
    throw new ToolError('INVALID_OPTIONS', `createToolRuntime: runs.${name} must be an integer from ${min} to ${MAX_TIMER_MS} (ms)`)
  }
  return value
}

/** The names {@link RunServiceOptions} holds: `runs.maxFollower` is refused, not ignored. */
const RUN_SERVICE_OPTION_KEYS: readonly string[] = ['resumeEveryMs', 'staleMs', 'maxFollowers']

/** Validates `createToolRuntime({ runs })`. */
export function resolveRunServiceOptions(options: unknown): Required<RunServiceOptions> {
  if (options !== undefined && (typeof options !== 'object' || options === null)) throw new ToolError('INVALID_OPTIONS', 'createToolRuntime: runs must be an object')
  refuseUnknownOptions(options, RUN_SERVICE_OPTION_KEYS, (message) => {
    throw new ToolError('INVALID_OPTIONS', `createToolRuntime: ${message}`)
  }, 'runs.')
  const o = (options ?? {}) as RunServiceOptions
  const maxFollowers = o.maxFollowers ?? DEFAULT_MAX_FOLLOWERS
  if (typeof maxFollowers !== 'number' || !Number.isSafeInteger(maxFollowers) || maxFollowers < 0) {
    throw new ToolError('INVALID_OPTIONS', 'createToolRuntime: runs.maxFollowers must be a non-negative integer')
  }
  return { resumeEveryMs: checkMs(o.resumeEveryMs, 'resumeEveryMs', 0) ?? DEFAULT_RESUME_EVERY_MS, staleMs: checkMs(o.staleMs, 'staleMs', 0) ?? DEFAULT_STALE_MS, maxFollowers }
}

/** The runtime's runs: their store side, one per runtime (`runtime.runs`). */
export class RunService implements RunStoreSide {
  readonly #store: DurableStore | undefined
  readonly #durable: DurableRuns | undefined
  readonly #resumeAll: ResumeAll
  readonly #options: Required<RunServiceOptions>
  readonly #links = new Set<RunTableLink>()
  /** Work whose end a dispose waits for: each run's ordered writes, and the tables' runs as they end. */
  readonly #writes = new Map<string, Promise<void>>()
  readonly #work = new Set<Promise<unknown>>()
  /** Each run's snapshot manifest version as this process last wrote or read it: its snapshot writes are compare-and-set on it. */
  readonly #versions = new Map<string, string | null>()
  /** Runs another process wrote since (it took the run over, or ended it as lost): this process writes nothing more of them. */
  readonly #fenced = new Set<string>()
  #loop: ReturnType<typeof setInterval> | undefined
  /** Where each family's piece sweep goes on at its next pass, and whether a pass is under way. */
  readonly #sweptTo: { parks?: string; events?: string } = {}
  #sweeping = false
  #sweptAt = Number.NEGATIVE_INFINITY
  #closed = false
  #followers = 0
  /** The store side of the tables' runs (absent without a store). */
  readonly records: RunRecordStore | undefined
  /** Runs' frames across instances (a store with `watch`, such as PostgreSQL's; else absent). */
  readonly live: LiveEvents | undefined

  constructor(store: DurableStore | undefined, durable: DurableRuns | undefined, resumeAll: ResumeAll, options: Required<RunServiceOptions>) {
    this.#store = store
    this.#durable = durable
    this.#resumeAll = resumeAll
    this.#options = options
    this.records = store === undefined ? undefined : createStoreRunRecords(store)
    this.live = store === undefined ? undefined : createLiveEvents(store)
    // A park's record lands after the run's queued writes (its snapshots): never before the frames it had when it parked.
    durable?.parkAfter((callId) => this.#parking(callId))
  }

  /**
   * Run `callId` is parking here: its tables ask for a snapshot of its frames (queued after its
   * earlier writes); what the park waits for is every write of the run queued by then.
   */
  #parking(callId: string): Promise<void> | undefined {
    if (!callId.startsWith(RUN_CALL_ID_PREFIX)) return undefined
    for (const link of this.#links) link.parking?.(callId)
    return this.#writes.get(callId.slice(RUN_CALL_ID_PREFIX.length))
  }

  /**
   * A table of background runs (the HTTP app's `/v1/runs`): `start` drives a run to its end
   * with its event log and store writes; runs this service resumes come back to it.
   */
  table(options: ResolvedRunTableOptions, sources: BackgroundRunSources): BackgroundRuns {
    return createBackgroundRuns(this, options, sources)
  }

  /** Whether runs outlive this process (the runtime has a store). */
  get durable(): boolean {
    return this.#store !== undefined
  }

  /** This process's id in the store: the `owner` of the runs it runs. */
  get owner(): string {
    return this.#durable?.owner ?? ''
  }

  /** Where a table keeps each run's newest event frames (`maxBytes` each) for the process that resumes it. */
  events(maxBytes: number): RunEventStore | undefined {
    return this.#store === undefined ? undefined : createStoreRunEvents(this.#store, maxBytes)
  }

  /** How many runs this process follows from the store now (at most `runs.maxFollowers`). */
  get followers(): number {
    return this.#followers
  }

  /**
   * The events of run `id` as the store has them, for a process that does not hold the run:
   * followed live across instances on a watchable store; else its stored snapshot (the ids
   * its last process reserved included; none stored: its ids continue after its record's),
   * read every `pollMs` until `local()` gives this process's own log of it (adopted: the
   * reader goes on from that one) or its record ends (an `end` frame closes it). `undefined`
   * when the store has no running record of it. Throws `OVERLOADED` past `runs.maxFollowers`.
   */
  async follow(id: string, maxBytes: number, local: () => RunEventLog | undefined, pollMs = LIVE_POLL_MS): Promise<FollowedRun | undefined> {
    const records = this.records
    const record = await records?.get(id)
    if (records === undefined || record?.status !== 'running') return undefined
    if (this.#followers >= this.#options.maxFollowers) {
      throw new ToolError('OVERLOADED', `this process follows ${this.#followers} runs from the store (runs.maxFollowers ${this.#options.maxFollowers}); close an events stream or retry later`)
    }
    // Taken before the first await: concurrent requests cannot pass the cap together.
    this.#followers++
    let held = true
    const release = (): void => {
      if (held) this.#followers--
      held = false
    }
    try {
      const followed = this.live !== undefined ? await this.live.follow(id, maxBytes, async () => (await records.get(id))?.status !== 'running') : await this.#poll(id, record, maxBytes, local, pollMs)
      return {
        id,
        get events() {
          return followed.events
        },
        stop: () => {
          followed.stop()
          release()
        },
      }
    } catch (error) {
      release()
      throw error
    }
  }

  async #poll(id: string, record: RunRecordJson, maxBytes: number, local: () => RunEventLog | undefined, pollMs: number): Promise<FollowedRun> {
    const records = this.records!
    const stored = createRunEventLog(maxBytes, undefined, restoredEvents(record, await createStoreRunEvents(this.#store!, maxBytes).load(id)))
    let current = stored
    let checking = false
    const stop = (): void => clearInterval(timer)
    const adopt = (): boolean => {
      const adopted = local()
      if (adopted === undefined) return false
      stop()
      current = adopted
      // Wakes a reader waiting on the snapshot: it reads the adopted log from now on.
      stored.close()
      return true
    }
    const check = async (): Promise<void> => {
      if (adopt()) return
      const now = await records.get(id)
      // Adopted meanwhile (its record rewritten then), or not settled: nothing to end.
      if (adopt() || now === undefined || now.status === 'running') return
      stop()
      stored.append('end', { id, status: now.status })
      stored.close()
    }
    const timer = setInterval(() => {
      if (checking) return
      checking = true
      void check()
        .catch(() => undefined)
        .finally(() => (checking = false))
    }, pollMs)
    ;(timer as { unref?: () => void }).unref?.()
    return {
      id,
      get events() {
        return current
      },
      stop,
    }
  }

  /**
   * A run started here: the process's heartbeat says so from now on (one per process, shared with
   * parked runs). Resolves once the first beat has landed; write a record naming this process after it.
   */
  hold(): Promise<void> {
    return this.#durable?.beat() ?? Promise.resolve()
  }

  /** Whether the process `owner` said it was alive less than `staleMs` ago. */
  alive(owner: string, staleMs: number): Promise<boolean> {
    return this.#durable === undefined ? Promise.resolve(false) : this.#durable.alive(owner, staleMs)
  }

  /** Whether another instance took the run of `callId` over from this process (fencing): its records are no longer this process's to write. */
  taken(callId: string): boolean {
    return this.#durable?.taken(callId) ?? false
  }

  /** Run `run` was taken up from the store with its snapshot at this version: this process holds its record and writes its snapshots on from there. */
  async adopted(run: { readonly id: string; readonly callId: string }, events: string | undefined): Promise<void> {
    this.#versions.set(run.id, events ?? null)
    this.#fenced.delete(run.id)
    if (!((await this.#durable?.adopt(run.callId)) ?? false)) this.#fence(run.id)
  }

  /** Whether another process claimed or ended run `id` since this one wrote it (fencing): this process writes nothing more of it. */
  fenced(id: string): boolean {
    return this.#fenced.has(id)
  }

  /**
   * Writes run `record`'s view into the run's one record (`runs/<callId>`), through the
   * runtime's durable runs (the record's one writer), while this process holds the run's
   * claim; otherwise the process is fenced off the run for good. Whether it was written.
   */
  async writeRecord(record: RunRecordJson): Promise<boolean> {
    const durable = this.#durable
    if (durable === undefined || this.#fenced.has(record.id)) return false
    const meta = { ...(record.agent === undefined ? {} : { agent: record.agent }), ...(record.principal === undefined ? {} : { principal: record.principal }) }
    return (await durable.writeView(record.callId, meta, storedView(record))) || this.#fence(record.id)
  }

  /**
   * Writes run `run`'s event snapshot (`events.put`) by compare-and-set on its manifest. On
   * a conflict, it writes again only while this process still holds the run's claim. Whether it was written.
   */
  async writeEvents(events: RunEventStore, run: { readonly id: string; readonly callId: string }, log: RunEventLog, reserve: number): Promise<boolean> {
    const durable = this.#durable
    if (durable === undefined) return false
    for (let attempt = 0; ; attempt++) {
      if (this.#fenced.has(run.id) || this.taken(run.callId)) return this.#fence(run.id)
      const put = await events.put(run.id, log, reserve, { ifVersion: this.#versions.get(run.id) ?? null })
      if (put.ok) {
        this.#versions.set(run.id, put.version)
        return true
      }
      if (!(await durable.holds(run.callId))) return this.#fence(run.id)
      if (attempt + 1 >= MAX_CAS_ATTEMPTS) throw new ToolError('STORE_BUSY', `run ${run.id}'s events were written by another process ${MAX_CAS_ATTEMPTS} times while this one held the run; not written`)
      this.#versions.set(run.id, put.version ?? null)
    }
  }

  /**
   * Writes run `record` after a snapshot of its events (`writeEvents`); when the record is
   * fenced off, the snapshot just written goes too (unless another process wrote one since).
   */
  async writeSnapshotRecord(events: RunEventStore, record: RunRecordJson): Promise<boolean> {
    if (await this.writeRecord(record)) return true
    const written = this.#versions.get(record.id)
    if (written !== undefined && written !== null) await events.delete(record.id, { ifVersion: written })
    return false
  }

  /** Deletes run `run`'s record while this process holds it; then `after` (its snapshot's removal). Whether it did. */
  async deleteRecord(run: { readonly id: string; readonly callId: string }, after: () => Promise<void>): Promise<boolean> {
    this.#versions.delete(run.id)
    const fenced = this.#fenced.delete(run.id)
    // Called even when fenced: the runtime forgets the run's claim.
    const gone = (await this.#durable?.deleteView(run.callId)) ?? false
    if (fenced || !gone) return false
    await after()
    return true
  }

  /** The run's snapshot was deleted: a later one is created anew. */
  eventsDeleted(id: string): void {
    if (this.#versions.has(id)) this.#versions.set(id, null)
  }

  #fence(id: string): false {
    this.#fenced.add(id)
    return false
  }

  /** Whether the run of `callId` is parked in the store (some process will resume it); `false` when it cannot be read. */
  async parked(callId: string): Promise<boolean> {
    return this.#parked(callId).catch(() => false)
  }

  async #parked(callId: string): Promise<boolean> {
    return this.#store !== undefined && (await parkedIn(this.#store, callId))
  }

  /** Queues `write` after the earlier writes of run `id`; a dispose waits for it. Rejects as `write` does. */
  queue(id: string, write: () => Promise<void>): Promise<void> {
    const next = (this.#writes.get(id) ?? Promise.resolve()).catch(() => undefined).then(write)
    const settled = next.then(
      () => undefined,
      () => undefined,
    )
    this.#writes.set(id, settled)
    void settled.then(() => {
      if (this.#writes.get(id) === settled) this.#writes.delete(id)
    })
    return next
  }

  /** Work a dispose waits for (a table's run as it ends, and the writes that follows). */
  track(work: Promise<unknown>): void {
    const tracked = work.then(
      () => undefined,
      () => undefined,
    )
    this.#work.add(tracked)
    void tracked.then(() => this.#work.delete(tracked))
  }

  /** Resolves once every tracked run and queued write has landed, those queued meanwhile included. */
  async drained(): Promise<void> {
    while (this.#work.size > 0 || this.#writes.size > 0) await Promise.all([...this.#work, ...this.#writes.values()])
  }

  /**
   * Attaches a table: resumed runs are handed to it. With a store and `resumeEveryMs`, the
   * first attach starts the resume loop (a sweep now, then every `resumeEveryMs`).
   * Returns the detach.
   */
  attach(link: RunTableLink): () => void {
    this.#links.add(link)
    if (this.#store !== undefined && this.#options.resumeEveryMs > 0 && this.#loop === undefined && !this.#closed) {
      const sweep = (): void => {
        this.resume().catch((error: unknown) => console.error('resuming runs failed:', error))
      }
      // After the caller's synchronous set-up (its tools registered, its app built).
      setTimeout(sweep, 0)
      this.#loop = setInterval(sweep, this.#options.resumeEveryMs)
      ;(this.#loop as { unref?: () => void }).unref?.()
    }
    return () => void this.#links.delete(link)
  }

  /**
   * Claims and resumes the stored runs no live process holds (silent for `staleMs`), and
   * hands them to the attached tables, which end the records of their runs lost before
   * they parked.
   */
  async resume(options?: { readonly staleMs?: number }): Promise<RunsResumed> {
    const staleMs = options?.staleMs ?? this.#options.staleMs
    if (this.#closed) return { resumed: [], adopted: 0 }
    const resumed = await this.adopt(await this.#resumeAll(staleMs), staleMs)
    // In the background (a dispose waits for it): a failed pass is retried by a later sweep.
    const now = Date.now()
    if (!this.#sweeping && now - this.#sweptAt >= PIECE_SWEEP_EVERY_MS) {
      this.#sweptAt = now
      this.track(this.sweepPieces(now, staleMs).catch(() => undefined))
    }
    return resumed
  }

  /**
   * One bounded pass over the store's pieces that no record names any more (a process that
   * stopped between a park's pieces and its record, a delete that failed): at most
   * {@link PIECE_SWEEP_MAX_KEYS} keys listed and {@link PIECE_SWEEP_MAX_DELETES} deleted per
   * family, going on where the last pass stopped; pieces younger than
   * {@link PIECE_SWEEP_MIN_AGE_MS} (or `staleMs`) stay. A resume sweep runs one, at most every {@link PIECE_SWEEP_EVERY_MS}.
   */
  async sweepPieces(now = Date.now(), staleMs = this.#options.staleMs): Promise<{ readonly parks: PieceSweepResult; readonly events: PieceSweepResult }> {
    const store = this.#store
    const none = { listed: 0, deleted: 0 }
    if (store === undefined || this.#sweeping) return { parks: none, events: none }
    this.#sweeping = true
    try {
      const bounds: PieceSweepBounds = { maxKeys: PIECE_SWEEP_MAX_KEYS, maxDeletes: PIECE_SWEEP_MAX_DELETES, minAgeMs: Math.max(staleMs, PIECE_SWEEP_MIN_AGE_MS) }
      const parks = await sweepParkPieces(store, bounds, this.#sweptTo.parks, now)
      this.#sweptTo.parks = parks.cursor
      const events = await sweepEventPieces(store, bounds, this.#sweptTo.events, now)
      this.#sweptTo.events = events.cursor
      return { parks, events }
    } finally {
      this.#sweeping = false
    }
  }

  /** This process is starting stored run `callId` (a resume sweep): the attached tables listen to its events from now on. */
  starting(callId: string): void {
    for (const link of this.#links) link.starting?.(callId)
  }

  /** Hands `resumed` (runs this process resumed) to the attached tables, each run to at most one; they end their lost runs' records. */
  async adopt(resumed: readonly ResumedRun[], staleMs = this.#options.staleMs): Promise<RunsResumed> {
    const left = new Map(resumed.map((run) => [run.callId, run]))
    const pool: ResumedRunPool = {
      size: resumed.length,
      callIds: resumed.map((run) => run.callId),
      take: (callId) => {
        const run = left.get(callId)
        left.delete(callId)
        return run
      },
    }
    let adopted = 0
    for (const link of this.#links) adopted += await link.adopt(pool, staleMs)
    return { resumed, adopted }
  }

  /**
   * Ends `record` as `failed` (`INTERRUPTED`) when nothing will finish its run: `running`,
   * not parked, and its process silent for `staleMs`. Whether it did.
   */
  async settleIfLost(seen: RunRecordJson, events: RunEventStore | undefined, staleMs: number): Promise<boolean> {
    if (this.records === undefined || this.#store === undefined || seen.status !== 'running' || seen.owner === this.owner) return false
    // Read with its version (a store that cannot say is no proof of a loss: the failure goes to the caller); the write below lands only over the record judged here.
    const entry = await this.#store.get(runKey(seen.callId))
    const stored = entry === undefined ? undefined : await readStoredRun(entry.value)
    const record = (await this.records.read(seen.id))?.record
    if (stored === undefined || (stored.park ?? stored.parkPieces) !== undefined || record === undefined || record.status !== 'running' || record.owner === this.owner || record.callId !== seen.callId) return false
    if (record.owner !== undefined && (await this.alive(record.owner, staleMs))) return false
    const put = await this.records.put({ ...record, status: 'failed', settledAt: Date.now(), result: interruptedRunResult('the process running it') }, { ifVersion: entry!.version })
    // Its process wrote it meanwhile: not lost after all.
    if (!put.ok) return false
    // Nobody will stream its frames again: a snapshot it left goes.
    await events?.delete(record.id)
    return true
  }

  /** The runtime is being disposed: no more sweeps. */
  close(): void {
    this.#closed = true
    clearInterval(this.#loop)
    this.#loop = undefined
  }
}
