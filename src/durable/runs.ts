/**
 * Durable Code Mode runs over a {@link DurableStore}: park to the store, resume in any process
 * (one claimer by compare-and-set), sub-calls exactly once (docs/durability.md).
 *
 * @module
 */
import type { ParkedRunState } from '../code-runtime/contract.js'
import { isParkedRunState } from '../code-runtime/journal.js'
import { ToolError } from '../errors.js'
import type { JsonValue } from '../json/json-value.js'
import { traceCarrierOf } from '../telemetry/trace-context.js'
import type { TraceCarrier } from '../telemetry/types.js'
import { argumentsHash, newRunSecret, runSecretOf } from './call-key.js'
import { RUN_OWNER_PREFIX } from './run-table.js'
import { getPieces, MAX_PIECE_BYTES, newPiecesGen, piecesGenTime, putPieces, readRunView, RUN_CALL_ID_PREFIX, RUN_EVENTS_PREFIX, storedEventsGen, storedView, sweepPieces } from './run-table.js'
import type { PieceSweepBounds, PieceSweepResult } from './run-table.js'
import type { RunRecordJson, RunRecordStore, StoredView } from './run-table.js'
import type { DurableStore, StoreEntry, StorePutResult } from './store.js'
import { utf8Length } from '../util/utf8.js'
import { parseStoredJson } from './stored-json.js'

/** How a run's sub-calls were numbered when it parked: the count so far, and the numbers of the calls it waits on (by the program's call number). */
export interface DurableRunNumbering {
  readonly submitted: number
  readonly calls: readonly (readonly [number, number])[]
}

/** A run's parked state in its record: enough to run `run_code` again from where it parked. */
export interface StoredPark {
  readonly code: string
  readonly description: string
  /** The program's language when it is not the model's (`ToolRuntimeOptions.codeRuntimes`): the resumed run goes to that runtime. */
  readonly language?: string
  readonly state: ParkedRunState
  /** How its sub-calls were numbered (the calls it waits on keep their ids). */
  readonly numbering: DurableRunNumbering
  /**
   * The run's secret, minted when it started: its sub-calls' records and approvals are bound
   * to it, so no call made from outside the run (whatever id it names) reaches them. Absent
   * in records written before secrets; such a run gets a new one when it resumes.
   */
  readonly secret?: string
  /** The W3C context of its `run_code` span when it parked: the resumed run's span continues that trace. */
  readonly trace?: TraceCarrier
}

/** Where a park too large for one value lives: `run-parks/<run>/<gen>.<n>`, named by the record's `parkPieces`. */
const RUN_PARKS_PREFIX = 'run-parks/'

/** The most UTF-8 bytes of a park read back from pieces (a park is bounded by the runtime's `maxParkedBytes`, 128 MiB by default). */
const MAX_PARK_BYTES = 256 * 1024 * 1024

/** A park kept in pieces because the record with it would pass the store's value cap. */
export interface ParkPieces {
  readonly gen: string
  readonly pieces: number
  /** UTF-8 bytes of the park's JSON, all pieces together. */
  readonly bytes: number
}

/**
 * What `runs/<run>` holds, the one record of a run: who holds it (`owner`, `claim`), its
 * parked state while one exists (`park`), and, for a `/v1/runs` run, its view (`view`).
 */
export interface StoredRun {
  readonly version: 1
  /** The `run_code` call's id (sub-calls are `<callId>:code:<n>`). */
  readonly callId: string
  readonly agent?: string
  /** Who started the run (a non-secret principal label): its resumed sub-calls' approvals name it. */
  readonly principal?: string
  readonly park?: StoredPark
  /** In place of `park` when the record with it would not fit the store's value cap. */
  readonly parkPieces?: ParkPieces
  readonly view?: StoredView
  /** Who is running it now (a process's random id) and since when (epoch ms); absent while only parked. */
  readonly owner?: string
  readonly claimedAt?: number
  /**
   * The fence: a random token minted when the run started here or was claimed. The holder's
   * writes check that `owner` and `claim` are still its own; another process's claim changes it.
   */
  readonly claim?: string
}

/** One run a process resumed from the store, and the result its `run_code` call ends with. */
export interface ResumedRun {
  readonly callId: string
  readonly agent?: string
  /** The `run_code` call's result (a `ToolExecutionResult`), once the resumed run ends. */
  readonly result: Promise<unknown>
  /** Aborts the resumed run (its waiting calls and all). */
  cancel(reason?: unknown): void
}

/** What a sub-call's record says: how far it got, and which call it was (tool, agent, arguments' hash, run secret). */
interface CallRecord {
  readonly state: 'started' | 'done'
  readonly name: string
  readonly agent?: string
  readonly args?: string
  readonly run?: string
  readonly value?: JsonValue
}

/** The sub-call a `tools/execute` wrapper sees, as {@link DurableRuns.aroundBody} reads it. */
export interface DurableSubCall {
  readonly callId: string
  readonly name: string
  readonly agent?: string
  readonly arguments: JsonValue
  /** The enclosing call's token: a run's sub-call carries its `run_code` call's. */
  readonly parent?: symbol
}

/** Characters a store key segment may hold; anything else in a call id is hashed. */
const SAFE_SEGMENT = /^[A-Za-z0-9._~:@=+-]{1,80}$/

/** A store key segment for a call id: the id itself when it is safe and short, else a hash of it (the record keeps the id). */
export function runKeySegment(callId: string): string {
  if (SAFE_SEGMENT.test(callId) && callId !== '.' && callId !== '..') return callId
  let a = 0x811c9dc5
  let b = 0x01000193
  for (let i = 0; i < callId.length; i++) {
    const c = callId.charCodeAt(i)
    a = Math.imul(a ^ c, 0x01000193)
    b = Math.imul(b ^ c, 0x5bd1e995)
  }
  return `h-${(a >>> 0).toString(36)}-${(b >>> 0).toString(36)}-${callId.length}`
}

/** How a sub-call id splits into its run's call id and its number; `undefined` for any other id. */
function subCallOf(callId: string): { readonly run: string; readonly n: string } | undefined {
  const at = callId.lastIndexOf(':code:')
  if (at <= 0) return undefined
  const n = callId.slice(at + 6)
  return /^[1-9][0-9]{0,15}$/.test(n) ? { run: callId.slice(0, at), n } : undefined
}

/** The key of the record of run `callId`. */
export function runKey(callId: string): string {
  return `runs/${runKeySegment(callId)}`
}

/** Whether the run of `callId` is parked in `store` (its record has a parked state: some process resumes it). Rejects as the store does. */
export async function parkedIn(store: DurableStore, callId: string): Promise<boolean> {
  const entry = await store.get(runKey(callId))
  const record = entry === undefined ? undefined : await readStoredRun(entry.value)
  return (record?.park ?? record?.parkPieces) !== undefined
}

/** The prefix of the pieces of generation `gen` of run `callId`'s park. */
function parkPiecesPrefix(callId: string, gen: string): string {
  return `${RUN_PARKS_PREFIX}${runKeySegment(callId)}/${gen}.`
}

/** The park a record holds, read from its pieces when it was spilled; `undefined` when it has none or its pieces are not whole. */
async function parkOf(store: DurableStore, record: StoredRun): Promise<StoredPark | undefined> {
  const spilled = record.parkPieces
  if (record.park !== undefined || spilled === undefined) return record.park
  const text = await getPieces(store, parkPiecesPrefix(record.callId, spilled.gen), spilled.pieces, spilled.bytes)
  if (text === undefined) return undefined
  try {
    return readPark(await parseStoredJson(text))
  } catch {
    return undefined
  }
}

/**
 * One bounded pass of {@link sweepPieces} over spilled parks' pieces: those of a run whose
 * record is gone, or names another generation (a crash between the pieces and the record, a
 * failed delete), once older than `bounds.minAgeMs`.
 */
export function sweepParkPieces(store: DurableStore, bounds: PieceSweepBounds, after?: string, now?: number): Promise<PieceSweepResult> {
  const named = async (segment: string): Promise<string | null | undefined> => {
    const entry = await store.get(`runs/${segment}`)
    if (entry === undefined) return null
    const record = await readStoredRun(entry.value)
    return record === undefined ? undefined : (record.parkPieces?.gen ?? null)
  }
  return sweepPieces(store, RUN_PARKS_PREFIX, named, bounds, after, now)
}

/**
 * The same over `/v1/runs` event snapshots' pieces: those its manifest no longer names, and a
 * whole snapshot (manifest first) whose run's record is gone while its generation is older than
 * `bounds.minAgeMs` (a process that stopped between deleting the record and the snapshot).
 */
export function sweepEventPieces(store: DurableStore, bounds: PieceSweepBounds, after?: string, now = Date.now()): Promise<PieceSweepResult> {
  const named = async (id: string): Promise<string | null | undefined> => {
    const entry = await store.get(`${RUN_EVENTS_PREFIX}${id}`)
    const gen = entry === undefined ? null : storedEventsGen(entry.value)
    const made = gen === null || gen === undefined ? undefined : piecesGenTime(gen)
    // A snapshot is written before its run's first record: a young one is kept whatever the record says.
    if (made === undefined || now - made < bounds.minAgeMs || (await store.get(runKey(RUN_CALL_ID_PREFIX + id))) !== undefined) return gen
    return (await store.delete(`${RUN_EVENTS_PREFIX}${id}`, { ifVersion: entry!.version })).ok ? null : undefined
  }
  return sweepPieces(store, RUN_EVENTS_PREFIX, named, bounds, after, now)
}

/** Deletes the pieces of a spilled park (a failure leaves them to {@link sweepParkPieces}: pieces no record names are never read). */
async function deletePieces(store: DurableStore, callId: string, spilled: ParkPieces): Promise<void> {
  for (let n = 0; n < spilled.pieces; n++) await store.delete(`${parkPiecesPrefix(callId, spilled.gen)}${n}`).catch(() => undefined)
}

/** Writes of a run's record tried over conflicts (each another process's write) before giving up. */
const MAX_CAS_ATTEMPTS = 4

/** How often a process holding durable runs says it is alive. */
export const HEARTBEAT_MS = 5_000

/** What {@link processId} makes: anything else in a record's `owner` names no process (it was not written by one). */
const PROCESS_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** A random id for this process, so a claim says who holds a run. */
function processId(): string {
  return crypto.randomUUID()
}

/**
 * Whether the heartbeat at `key` (`{ "at": <epoch ms> }`, rewritten every
 * {@link HEARTBEAT_MS} by a live process) is less than `staleMs` old. Absent or
 * unreadable (another process wrote something else there): not alive.
 */
export async function beatWithin(store: DurableStore, key: string, staleMs: number): Promise<boolean> {
  const entry = await store.get(key)
  if (entry === undefined || entry.value.length > 256) return false
  try {
    const at = (JSON.parse(entry.value) as { at?: unknown } | null)?.at
    return typeof at === 'number' && Date.now() - at < staleMs
  } catch {
    return false
  }
}

/** The durable-run side of a tool runtime with a store. */
export class DurableRuns {
  readonly #store: DurableStore
  readonly #owner = processId()
  /** Runs that have parked (here or before a restart): their sub-calls are recorded. */
  readonly #durable = new Set<string>()
  /** States waiting for the `run_code` call that resumes them. */
  readonly #resuming = new Map<string, { readonly state: ParkedRunState; readonly numbering: DurableRunNumbering; readonly secret: string | undefined }>()
  /** Each live run's secret, by its call id (set when it starts or resumes, gone when it ends). */
  readonly #secrets = new Map<string, string>()
  /** Each run's writes, in order (a park's state never lands after the delete of its end). */
  readonly #writes = new Map<string, Promise<void>>()
  /**
   * Each run's parks not yet in its write queue: a park waits there for {@link DurableRuns.parkAfter}'s
   * writes (outside the queue, so those writes, which queue behind it, never wait for it); its end's write waits for them.
   */
  readonly #parks = new Map<string, Promise<void>>()
  /** What a park waits for before its record is written (see {@link DurableRuns.parkAfter}). */
  #parkGate: (callId: string) => Promise<unknown> | undefined = () => undefined
  /** The fence: each run's claim token as this process minted it (at its start or its claim), whether its record holds it yet, and the last version seen holding it. */
  readonly #claims = new Map<string, { readonly token: string; stored: boolean; version: string | undefined }>()
  /** Runs with a view (`/v1/runs`): their record and claim outlive the `run_code` call, until {@link DurableRuns.deleteView}. */
  readonly #viewed = new Set<string>()
  /** Runs another process took over (a claim after this one was presumed dead): this process writes nothing more of them. */
  readonly #taken = new Set<string>()
  /** The size of a park's pieces, shrunk for good when the store refuses one. */
  readonly #pieceSize = { bytes: MAX_PIECE_BYTES }
  #closing = false
  #heartbeat: ReturnType<typeof setInterval> | undefined
  #firstBeat: Promise<void> = Promise.resolve()

  constructor(store: DurableStore) {
    this.#store = store
  }

  /**
   * Says this process is alive (`owners/<id>`, every {@link HEARTBEAT_MS}) while it holds
   * durable runs, so another process on the store leaves them alone; a process that died
   * stops beating, and its runs are resumed by the next `resumeAll` after `staleMs`. Resolves
   * once the first beat has landed: a record naming this process as its owner is written only
   * after that, or another process reading it would judge this one dead and take the run.
   */
  beat(): Promise<void> {
    if (this.#closing) return Promise.resolve()
    if (this.#heartbeat !== undefined) return this.#firstBeat
    const write = () => this.#queue(RUN_OWNER_PREFIX, () => this.#store.put(RUN_OWNER_PREFIX + this.#owner, JSON.stringify({ at: Date.now() })))
    this.#firstBeat = write()
    this.#heartbeat = setInterval(write, HEARTBEAT_MS)
    return this.#firstBeat
  }

  /** Whether the process `owner` said it was alive less than `staleMs` ago (an id that is not a process's: no). */
  async alive(owner: string, staleMs: number): Promise<boolean> {
    return PROCESS_ID.test(owner) && (await beatWithin(this.#store, RUN_OWNER_PREFIX + owner, staleMs))
  }

  /** This process's id: the `owner` of what it runs. */
  get owner(): string {
    return this.#owner
  }

  /** The store the runs live in. */
  get store(): DurableStore {
    return this.#store
  }

  /** The runtime is shutting down: runs it aborts now stay in the store, to be resumed by the next process. */
  close(): void {
    this.#closing = true
    if (this.#heartbeat !== undefined) clearInterval(this.#heartbeat)
    this.#heartbeat = undefined
  }

  #queue(run: string, write: () => Promise<unknown>): Promise<void> {
    const previous = this.#writes.get(run) ?? Promise.resolve()
    const next = previous.then(write).then(
      () => undefined,
      () => undefined,
    )
    this.#writes.set(run, next)
    void next.then(() => {
      if (this.#writes.get(run) === next) this.#writes.delete(run)
    })
    return next
  }

  /**
   * A park's record of run `callId` is written only once what `gate(callId)` returns has settled
   * (whatever its outcome): the runs' tables hand the writes of the run's event snapshot there, so
   * a park never lands before the frames the run had when it parked (a process killed after the
   * park shows them to the next one). `gate` runs when the park is asked; it must not wait for
   * this run's queued writes (they may queue behind the park's).
   */
  parkAfter(gate: (callId: string) => Promise<unknown> | undefined): void {
    this.#parkGate = gate
  }

  /** Queues `write` once `before` settles (its order kept among the run's parks; the run's end waits for it). */
  #queueAfter(run: string, before: Promise<unknown> | undefined, write: () => Promise<unknown>): Promise<void> {
    const previous = this.#parks.get(run)
    if (before === undefined && previous === undefined) return this.#queue(run, write)
    const settled = (promise: Promise<unknown> | undefined) => (promise ?? Promise.resolve()).then(
      () => undefined,
      () => undefined,
    )
    const next = Promise.all([settled(previous), settled(before)]).then(() => this.#queue(run, write))
    this.#parks.set(run, next)
    void next.then(() => {
      if (this.#parks.get(run) === next) this.#parks.delete(run)
    })
    return next
  }

  /** Resolves once every write queued so far has landed, the parks waiting for their snapshots included (tests; a clean shutdown). */
  async flushed(): Promise<void> {
    while (this.#writes.size > 0 || this.#parks.size > 0) await Promise.all([...this.#writes.values(), ...this.#parks.values()])
  }

  /**
   * The `durable` part of a `run_code` request: where its parked states go, and the state
   * to resume from when this call is a resumption.
   */
  forRun(callId: string, agent: string | undefined, args: { readonly code: string; readonly description: string; readonly language?: string }, principal?: string, trace?: TraceCarrier) {
    const resume = this.#resuming.get(callId)
    this.#resuming.delete(callId)
    if (resume !== undefined) this.#durable.add(callId)
    // A run started here gets its own claim (its view may have minted it first); a resumed one keeps the claim its sweep wrote.
    else this.#claimOf(callId)
    // Kept from the parked state: the resumed run's calls re-attach to their approvals and records.
    const secret = resume?.secret ?? newRunSecret()
    this.#secrets.set(callId, secret)
    const onPark = (state: ParkedRunState, numbering: DurableRunNumbering): void => {
      this.#durable.add(callId)
      const beating = this.beat()
      const park: StoredPark = {
        code: args.code,
        description: args.description,
        ...(args.language === undefined ? {} : { language: args.language }),
        state,
        numbering,
        secret,
        ...(trace === undefined ? {} : { trace }),
      }
      const meta = { ...(agent === undefined ? {} : { agent }), ...(principal === undefined ? {} : { principal }) }
      // After the run's frames so far are in the store (its table's snapshot): a kill after the park never loses them.
      let gate: Promise<unknown> | undefined
      try {
        gate = this.#parkGate(callId)
      } catch {
        // A gate that fails to start waits for nothing: the park still lands.
      }
      void this.#queueAfter(callId, gate, async () => {
        await beating
        if (this.#claims.has(callId)) await this.#writeOwn(callId, (current) => ({ ...meta, ...current, park }))
      })
    }
    return { onPark, secret, ...(resume === undefined ? {} : { resume: { state: resume.state, numbering: resume.numbering } }) }
  }

  /**
   * A `run_code` call ended: forget its record and its calls' (unless the process is
   * shutting down). Resolves once that has landed: a run's record is gone when its call
   * returns, so a record still there after a run ended means it is left for the next process.
   */
  ended(callId: string): Promise<void> {
    this.#secrets.delete(callId)
    const parked = this.#durable.delete(callId)
    if (!parked && !this.#viewed.has(callId)) this.#claims.delete(callId)
    if (!parked || this.#closing) return Promise.resolve()
    const segment = runKeySegment(callId)
    // After its parks, those still waiting for their snapshots included: an end never lands before a park.
    return this.#queueAfter(callId, undefined, async () => {
      // Only the holder ends it: a record another process claimed since stays (that process goes on with the run).
      // A run with a view keeps its record (without its parked state) until its table lets it go:
      // one whose view this process wrote, or whose stored record holds one (a run a sweep
      // resumed may end before its table adopts it, when its decision was taken meanwhile).
      const viewed = this.#viewed.has(callId) || (await this.#storedWithView(callId))
      const gone = viewed ? await this.#writeOwn(callId, ({ park: _park, parkPieces: _pieces, ...rest }) => rest, true) : await this.#deleteOwn(callId)
      if (!this.#viewed.has(callId)) this.#claims.delete(callId)
      if (!gone) return
      for (;;) {
        const page = await this.#store.list(`calls/${segment}/`, { limit: 1000 })
        for (const entry of page.entries) await this.#store.delete(entry.key)
        if (page.cursor === undefined || page.entries.length === 0) break
      }
    })
  }

  /**
   * The `tools/execute` wrapper that makes a durable run's sub-calls happen once: a call
   * recorded `done` answers from its record; one recorded `started` (its body was running
   * when a process died) fails as `INTERRUPTED` unless the tool is idempotent. Only the
   * run's own sub-calls (their `parent` token bound to the run's secret) touch its records;
   * a record of another tool, agent or arguments under the same number fails the call as
   * `REPLAY_DIVERGED` (the replay branched: what was done is not what is asked now).
   */
  async aroundBody(call: DurableSubCall, idempotent: boolean, next: () => Promise<JsonValue>): Promise<JsonValue> {
    const sub = subCallOf(call.callId)
    if (sub === undefined || !this.#durable.has(sub.run)) return next()
    const secret = this.#secrets.get(sub.run)
    // A call naming the run's sub-call id from outside the run (a direct call, another run): not the run's.
    if (secret === undefined || call.parent === undefined || runSecretOf(call.parent) !== secret) return next()
    const { name } = call
    const mine: CallRecord = { state: 'started', name, ...(call.agent === undefined ? {} : { agent: call.agent }), args: await argumentsHash(call.arguments), run: secret }
    const key = `calls/${runKeySegment(sub.run)}/${sub.n}`
    const found = await this.#store.get(key)
    const record = found === undefined ? undefined : await readCallRecord(found.value)
    if (found !== undefined) {
      if (record === undefined || record.run !== mine.run || record.name !== name || record.agent !== mine.agent || record.args !== mine.args) {
        throw new ToolError('REPLAY_DIVERGED', divergence(sub.n, record, mine))
      }
      if (record.state === 'done') return record.value ?? null
      if (!idempotent) {
        throw new ToolError('INTERRUPTED', `${name} was running when its process stopped; it may or may not have taken effect, and it is not run again (its tool is not idempotent)`)
      }
    }
    // Checked before writing too: a process the run was taken from writes no record, which its new holder would read as a call cut off.
    await this.#fence(sub.run, name)
    // Compare-and-set on what was read: a record another process wrote since (it claimed the run meanwhile) is never replaced.
    const put = await this.#store.put(key, JSON.stringify(mine), { ifVersion: found?.version ?? null })
    if (!put.ok) {
      this.#taken.add(sub.run)
      throw takenOver(name)
    }
    // Written, then checked: a claim after this check finds the `started` record and never runs the call again; a claim before it stops this process here.
    await this.#fence(sub.run, name)
    const value = await next()
    try {
      // Only over its own `started`: an idempotent call made again by the run's new holder keeps that one's record.
      await this.#store.put(key, JSON.stringify({ ...mine, state: 'done', value } satisfies CallRecord), { ifVersion: put.version })
    } catch {
      // A value too large for the store: the call stays `started`; after a crash it is INTERRUPTED, never run twice.
    }
    return value
  }

  /** Whether another process took the run of `callId` over from this one (its records and results are that process's to write). */
  taken(callId: string): boolean {
    return this.#taken.has(callId)
  }

  /**
   * Whether this process holds the run of `callId` now: it claimed or parked it, and its
   * record still names this process and its claim. `false` (and the run counts as taken) otherwise.
   */
  holds(callId: string): Promise<boolean> {
    // In the run's write order: a park under way is this process's own write, not a claim.
    let answer: Promise<boolean> = Promise.resolve(false)
    const check = async (): Promise<boolean> => {
      if (!(this.#claims.get(callId)?.stored ?? false)) return false
      const own = await this.#own(callId)
      return own !== undefined && own !== false
    }
    return this.#queue(callId, () => (answer = check())).then(() => answer)
  }

  /** Throws `RUN_TAKEN_OVER` when the run's record no longer holds this process's claim. */
  async #fence(callId: string, name: string): Promise<void> {
    if (this.#taken.has(callId)) throw takenOver(name)
    if (this.#claims.has(callId) && (await this.#own(callId)) === false) throw takenOver(name)
  }

  /**
   * Reads the record of `callId` and checks its claim: the entry while it names this process
   * and its claim, `undefined` while this process's first park has not landed, `false`
   * (the run counts as taken from then on) once another process claimed, parked or ended it.
   */
  async #own(callId: string): Promise<StoreEntry | undefined | false> {
    const claim = this.#claims.get(callId)
    if (this.#taken.has(callId) || claim === undefined) return this.#lose(callId)
    const entry = await this.#store.get(`runs/${runKeySegment(callId)}`)
    if (entry === undefined) return claim.stored ? this.#lose(callId) : undefined
    // The version last seen holding the claim spares parsing a journal at every sub-call.
    if (entry.version !== claim.version) {
      const record = await readStoredRun(entry.value)
      if (record?.owner !== this.#owner || record.claim !== claim.token) return this.#lose(callId)
      claim.version = entry.version
    }
    return entry
  }

  #lose(callId: string): false {
    this.#taken.add(callId)
    return false
  }

  /**
   * Writes the record of `callId` as `update` makes it from the stored one (absent: a new
   * record) while it holds this process's claim, compare-and-set on what was read (atomicity
   * only). `existing`: only over a record already there. Whether it landed.
   */
  async #writeOwn(callId: string, update: (current: Partial<StoredRun>) => Partial<StoredRun>, existing = false): Promise<boolean> {
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const found = await this.#own(callId)
      const claim = this.#claims.get(callId)
      if (found === false || claim === undefined || (existing && found === undefined)) return false
      const current: Partial<StoredRun> = found === undefined ? {} : ((await readStoredRun(found.value)) ?? {})
      const record: StoredRun = { ...update(current), version: 1, callId, owner: this.#owner, claimedAt: current.claimedAt ?? Date.now(), claim: claim.token }
      const put = await this.#putRecord(callId, record, found?.version ?? null, current.parkPieces)
      if (put.ok) {
        claim.stored = true
        claim.version = put.version
        return true
      }
    }
    return false
  }

  /**
   * Puts `record` (a new `park` replaces the pieces of an earlier one). One too large for the
   * store has its park spilled into pieces, else loses its view's result (which then lives
   * only in memory). `previous`: the pieces the replaced record named, deleted once it is
   * replaced by a record that no longer names them; a write that does not land deletes its own.
   */
  async #putRecord(callId: string, record: StoredRun, ifVersion: string | null, previous?: ParkPieces): Promise<StorePutResult> {
    let next = record
    if (record.park !== undefined && record.parkPieces !== undefined) {
      const { parkPieces: _stale, ...rest } = record
      next = rest
    }
    let spilled: ParkPieces | undefined
    for (;;) {
      try {
        const put = await this.#store.put(runKey(callId), JSON.stringify(next), { ifVersion })
        const orphan = put.ok ? previous : spilled
        if (orphan !== undefined && orphan.gen !== next.parkPieces?.gen) await deletePieces(this.#store, callId, orphan)
        return put
      } catch (error) {
        if ((error as { code?: unknown }).code !== 'STORE_VALUE_TOO_LARGE' || (next.park === undefined && next.view?.result === undefined)) {
          if (spilled !== undefined) await deletePieces(this.#store, callId, spilled)
          throw error
        }
        if (next.park !== undefined) {
          const { park, ...rest } = next
          spilled = await this.#spill(callId, park)
          next = { ...rest, parkPieces: spilled }
        } else {
          const { result: _omitted, ...view } = next.view!
          next = { ...next, view }
        }
      }
    }
  }

  /** Writes `park` as pieces of a new generation; what the record names them by. */
  async #spill(callId: string, park: StoredPark): Promise<ParkPieces> {
    const text = JSON.stringify(park)
    const gen = newPiecesGen()
    const pieces = await putPieces(this.#store, parkPiecesPrefix(callId, gen), text, this.#pieceSize)
    return { gen, pieces, bytes: utf8Length(text) }
  }

  /** A run's claim, minted when the run is new to this process. */
  #claimOf(callId: string) {
    let claim = this.#claims.get(callId)
    if (claim === undefined) this.#claims.set(callId, (claim = { token: crypto.randomUUID(), stored: false, version: undefined }))
    return claim
  }

  /**
   * Writes the view of a `/v1/runs` run into its record (in the run's write order, beside its
   * parked state) while this process holds it. Whether it landed: `false` once another
   * process claimed or ended the run (this one writes nothing more of it).
   */
  writeView(callId: string, meta: { readonly agent?: string; readonly principal?: string }, view: StoredView): Promise<boolean> {
    this.#viewed.add(callId)
    if (this.#taken.has(callId)) return Promise.resolve(false)
    this.#claimOf(callId)
    let landed = false
    let failure: { readonly error: unknown } | undefined
    const write = async (): Promise<void> => {
      landed = await this.#writeOwn(callId, (current) => ({ ...meta, ...current, view })).catch((error: unknown) => ((failure = { error }), false))
    }
    // A store's failure goes to the caller (the table reports it); the run's later writes still queue.
    return this.#queue(callId, write).then(() => {
      if (failure !== undefined) throw failure.error
      return landed
    })
  }

  /**
   * Takes up the record of run `callId` for this process when a sweep did not claim it here
   * already (a run handed back to a table by another path): a new claim, compare-and-set on
   * what was read. Whether this process holds it now.
   */
  adopt(callId: string): Promise<boolean> {
    let held = false
    return this.#queue(callId, async () => {
      const claim = this.#claims.get(callId)
      if (claim?.stored === true && !this.#taken.has(callId)) {
        held = (await this.#own(callId)) !== false
        return
      }
      const entry = await this.#store.get(runKey(callId))
      const record = entry === undefined ? undefined : await readStoredRun(entry.value)
      if (record === undefined) return
      const token = crypto.randomUUID()
      const put = await this.#putRecord(callId, { ...record, owner: this.#owner, claimedAt: Date.now(), claim: token }, entry!.version, record.parkPieces)
      if (!put.ok) return
      this.#claims.set(callId, { token, stored: true, version: put.version })
      this.#taken.delete(callId)
      this.#viewed.add(callId)
      held = true
    }).then(() => held)
  }

  /** Deletes the record of a `/v1/runs` run its table let go (only while this process holds it). Whether it did. */
  deleteView(callId: string): Promise<boolean> {
    let gone = false
    return this.#queue(callId, async () => {
      gone = !this.#taken.has(callId) && (this.#claims.get(callId)?.stored ?? false) && (await this.#deleteOwn(callId))
      this.#viewed.delete(callId)
      if (!this.#durable.has(callId)) this.#claims.delete(callId)
    }).then(() => gone)
  }

  /**
   * Whether the record of `callId`, held by this process's claim, carries a `/v1/runs` view
   * (then marked viewed here: the record is its table's, which adopts, ends and deletes it).
   */
  async #storedWithView(callId: string): Promise<boolean> {
    const found = await this.#own(callId)
    if (found === false || found === undefined || (await readStoredRun(found.value))?.view === undefined) return false
    this.#viewed.add(callId)
    return true
  }

  /** Deletes the record of `callId` while it holds this process's claim. Whether it did. */
  async #deleteOwn(callId: string): Promise<boolean> {
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const found = await this.#own(callId)
      if (found === false || found === undefined) return false
      if (!(await this.#store.delete(`runs/${runKeySegment(callId)}`, { ifVersion: found.version })).ok) continue
      const spilled = (await readStoredRun(found.value))?.parkPieces
      if (spilled !== undefined) await deletePieces(this.#store, callId, spilled)
      return true
    }
    return false
  }

  /**
   * Claims every run in the store that no live process holds (parked, or claimed by a
   * process more than `staleMs` ago) and resumes each through `start(callId, agent,
   * args)`, the runtime's `run_code` execution. Of two processes calling this on one
   * store, each run goes to exactly one (compare-and-set on its record).
   */
  async resumeAll(
    start: (callId: string, agent: string | undefined, args: { readonly code: string; readonly description: string; readonly language?: string }, signal: AbortSignal, principal: string | undefined, trace?: TraceCarrier) => Promise<unknown>,
    options: { readonly staleMs?: number } = {},
  ): Promise<ResumedRun[]> {
    const staleMs = options.staleMs ?? 30_000
    const resumed: ResumedRun[] = []
    let after: string | undefined
    for (;;) {
      const page = await this.#store.list('runs/', { limit: 100, ...(after === undefined ? {} : { after }) })
      for (const { key } of page.entries) {
        // One record the store cannot read now (replaced since the listing, a storage error) is skipped, not the sweep's end: the next sweep sees it again.
        const entry = await this.#store.get(key).catch(() => undefined)
        if (entry === undefined) continue
        const record = await readStoredRun(entry.value)
        // A record without a parked state (a `/v1/runs` run's view) has nothing to resume.
        if (record === undefined || key !== runKey(record.callId)) continue
        const park = await parkOf(this.#store, record).catch(() => undefined)
        if (park === undefined) continue
        // Ours already, or held by a process that is alive (its heartbeat is fresh): not ours to resume.
        if (record.owner === this.#owner) continue
        if (record.owner !== undefined && (await this.alive(record.owner, staleMs))) continue
        // Alive on the store before the claim names this process (see beat()).
        await this.beat()
        const token = crypto.randomUUID()
        const claimed: StoredRun = { ...record, owner: this.#owner, claimedAt: Date.now(), claim: token }
        // Through #putRecord: the claim's few more bytes may take an inline park past the cap.
        const put = await this.#putRecord(record.callId, claimed, entry.version, record.parkPieces)
        if (!put.ok) continue
        this.#claims.set(record.callId, { token, stored: true, version: put.version })
        this.#taken.delete(record.callId)
        this.#resuming.set(record.callId, { state: park.state, numbering: park.numbering, secret: park.secret })
        const controller = new AbortController()
        resumed.push({
          callId: record.callId,
          ...(record.agent === undefined ? {} : { agent: record.agent }),
          result: start(record.callId, record.agent, { code: park.code, description: park.description, ...(park.language === undefined ? {} : { language: park.language }) }, controller.signal, record.principal, park.trace),
          cancel: (reason?: unknown) => controller.abort(reason),
        })
      }
      if (page.cursor === undefined || page.entries.length === 0) break
      after = page.cursor
    }
    return resumed
  }
}

/** The error of a sub-call that a process the run was taken from does not make. */
function takenOver(name: string): ToolError {
  return new ToolError('RUN_TAKEN_OVER', `${name} was not made: another instance took this run over (this one was presumed dead) and goes on with it`)
}

/** A stored run's record, or `undefined` when the text is not one (a foreign or damaged record is skipped, never trusted). */
export async function readStoredRun(text: string): Promise<StoredRun | undefined> {
  let value: unknown
  try {
    value = await parseStoredJson(text)
  } catch {
    return undefined
  }
  const v = value as Partial<StoredRun> | null
  if (typeof v !== 'object' || v === null || v.version !== 1 || typeof v.callId !== 'string') return undefined
  if (v.agent !== undefined && typeof v.agent !== 'string') return undefined
  if (v.principal !== undefined && (typeof v.principal !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(v.principal))) return undefined
  if (v.owner !== undefined && typeof v.owner !== 'string') return undefined
  if (v.claim !== undefined && (typeof v.claim !== 'string' || v.claim.length > 64)) return undefined
  if (v.parkPieces !== undefined && !isParkPieces(v.parkPieces)) return undefined
  const park = v.park === undefined ? undefined : readPark(v.park)
  const view = v.view === undefined ? undefined : readRunView(v.view)
  if ((v.park !== undefined && park === undefined) || (v.view !== undefined && view === undefined)) return undefined
  const { park: _park, view: _view, ...rest } = v
  return { ...(rest as StoredRun), ...(park === undefined ? {} : { park }), ...(view === undefined ? {} : { view }) }
}

function isParkPieces(value: unknown): value is ParkPieces {
  const v = value as Partial<ParkPieces> | null
  const count = (x: unknown, max: number): boolean => typeof x === 'number' && Number.isSafeInteger(x) && x >= 1 && x <= max
  return typeof v === 'object' && v !== null && typeof v.gen === 'string' && /^(?:[0-9a-f]{12}|[0-9a-z]{16})$/.test(v.gen) && count(v.bytes, MAX_PARK_BYTES) && count(v.pieces, Math.ceil(v.bytes! / 1024))
}

/** A record's parked state, checked; `undefined` when it is not one. */
function readPark(value: unknown): StoredPark | undefined {
  const v = value as Partial<StoredPark> | null
  if (typeof v !== 'object' || v === null || typeof v.code !== 'string' || typeof v.description !== 'string') return undefined
  if (v.language !== undefined && (typeof v.language !== 'string' || v.language.length > 32)) return undefined
  if (v.secret !== undefined && (typeof v.secret !== 'string' || v.secret.length > 64)) return undefined
  if (!isParkedRunState(v.state)) return undefined
  const numbering = v.numbering as Partial<DurableRunNumbering> | undefined
  const count = (x: unknown): boolean => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0
  if (typeof numbering !== 'object' || numbering === null || !count(numbering.submitted) || !Array.isArray(numbering.calls)) return undefined
  if (!numbering.calls.every((pair) => Array.isArray(pair) && pair.length === 2 && count(pair[0]) && count(pair[1]))) return undefined
  if (v.trace === undefined) return v as StoredPark
  // A context that is not one is dropped, not trusted (the resumed run then starts its own trace).
  const trace = traceCarrierOf(v.trace)
  const { trace: _dropped, ...rest } = v
  return { ...(rest as StoredPark), ...(trace === undefined || (trace.tracestate?.length ?? 0) > 512 ? {} : { trace }) }
}

/** A record's `/v1/runs` view as the table's record of the run, or `undefined` when it has none. */
function runRecordOf(stored: StoredRun | undefined, id: string): RunRecordJson | undefined {
  const view = stored?.view
  if (stored === undefined || view === undefined || view.id !== id || stored.callId !== RUN_CALL_ID_PREFIX + id) return undefined
  return {
    ...view,
    callId: stored.callId,
    ...(stored.agent === undefined ? {} : { agent: stored.agent }),
    ...(stored.principal === undefined ? {} : { principal: stored.principal }),
    ...(stored.owner === undefined ? {} : { owner: stored.owner }),
  }
}

/**
 * The `/v1/runs` runs' records as readers see them: run `id`'s is the view in
 * `runs/http-run-<id>` (no index). `put` is for a process ending another's run as lost: it
 * mints a new claim, so the old holder, if alive after all, writes nothing more of it.
 */
export function createStoreRunRecords(store: DurableStore): RunRecordStore {
  const keyOf = (id: string) => runKey(RUN_CALL_ID_PREFIX + id)
  return {
    async put(record, options) {
      const entry = await store.get(runKey(record.callId))
      if (options?.ifVersion !== undefined && entry?.version !== (options.ifVersion ?? undefined)) return { ok: false, version: entry?.version }
      const { owner: _owner, agent: _agent, principal: _principal, ...current } = (entry === undefined ? undefined : await readStoredRun(entry.value)) ?? {}
      const next: StoredRun = {
        ...current,
        version: 1,
        callId: record.callId,
        ...(record.agent === undefined ? {} : { agent: record.agent }),
        ...(record.principal === undefined ? {} : { principal: record.principal }),
        view: storedView(record),
        ...(record.owner === undefined ? {} : { owner: record.owner }),
        claim: crypto.randomUUID(),
      }
      const write = (value: StoredRun) => store.put(runKey(record.callId), JSON.stringify(value), { ifVersion: entry?.version ?? null })
      try {
        return await write(next)
      } catch (error) {
        if ((error as { code?: unknown }).code !== 'STORE_VALUE_TOO_LARGE' || record.result === undefined) throw error
        const { result: _omitted, ...view } = next.view!
        return write({ ...next, view })
      }
    },
    async get(id) {
      return (await this.read(id))?.record
    },
    async read(id) {
      const entry = await store.get(keyOf(id))
      const record = entry === undefined ? undefined : runRecordOf(await readStoredRun(entry.value), id)
      return record === undefined ? undefined : { record, version: entry!.version }
    },
    delete(id, options) {
      return store.delete(keyOf(id), options)
    },
    async list(limit) {
      const prefix = runKey(RUN_CALL_ID_PREFIX)
      const page = await store.list(prefix, { limit })
      return page.entries.map((entry) => entry.key.slice(prefix.length))
    },
  }
}

async function readCallRecord(text: string): Promise<CallRecord | undefined> {
  try {
    const v = (await parseStoredJson(text)) as Partial<CallRecord> | null
    if (typeof v !== 'object' || v === null || typeof v.name !== 'string' || (v.state !== 'started' && v.state !== 'done')) return undefined
    return v as CallRecord
  } catch {
    return undefined
  }
}

/** Why a record does not answer the call made now: what differs (never the secret itself). */
function divergence(n: string, record: CallRecord | undefined, now: CallRecord): string {
  const what =
    record === undefined
      ? 'an unreadable record'
      : record.run !== now.run
        ? 'a record of another run under the same call id'
        : record.name !== now.name
          ? `a call of ${record.name}`
          : record.agent !== now.agent
            ? `a call by agent ${JSON.stringify(record.agent ?? null)}`
            : `a call of ${record.name} with other arguments`
  return `the run's call ${n} replayed as ${now.name}, but its record holds ${what}: the program did not replay as it ran (it branched on something live, like the clock), so this call was not made`
}
