/**
 * A run's sub-calls as the page keeps them, with a bound on what it draws (issue 34 item 6).
 * A program may fire 10,000 calls without awaiting them; the page used to draw every one as
 * a timeline row and a card, each frame, and its main thread stalled half a second at a time.
 * Now each frame draws at most {@link MAX_DRAWN_CALLS} sub-calls (the first ones of the run),
 * plus every call that asked a person (a call waiting for approval is always drawn and
 * decidable, even the 9,000th) and every card the user opened; the rest are one summary row
 * whose counts are kept as the events come, O(1) each, never by a scan of every call.
 *
 * The first ones, not the latest: the rows drawn never move or change places while the run
 * goes on (a card or a button does not slide away from the pointer), and the order of the
 * first calls is where a program's shape (its barriers, its overlap) shows.
 *
 * @module
 */
import { isDenial, type SubCallRecord } from './cards.js'

/** The sub-calls a run draws at most, apart from those that asked a person or that the user opened. */
export const MAX_DRAWN_CALLS = 200

/**
 * Cards and rows one frame builds at most, new or rebuilt (issue 34 item 6): the first
 * frames of a flood would otherwise build the 200 drawn calls' rows and cards at once
 * (tens of ms of script, style and layout in one frame). Past the bound a changed row or
 * card keeps its last drawing and a new one waits (with every call after it); the next
 * frame goes on. The draw after a run has ended draws everything.
 */
export const MAX_BUILT_PER_FRAME = 12

/** What a frame may still build ({@link MAX_BUILT_PER_FRAME}), and whether it left any for the next frame. */
export interface DrawBudget {
  left: number
  short: boolean
}

/** What a drawn sub-call shows: waiting for a person, running, or how it settled. */
export type CallState = 'waiting' | 'running' | 'done' | 'failed' | 'denied'

/** A sub-call's state (a denied call did not fail: a person, a policy or a timeout said no). */
export function callState(record: SubCallRecord): CallState {
  if (record.end === undefined) return record.approval?.state === 'pending' ? 'waiting' : 'running'
  if (record.isError !== true) return 'done'
  return isDenial(record) ? 'denied' : 'failed'
}

/** The calls a run does not draw, by state (`running` includes any still starting). */
export interface HiddenCalls {
  readonly count: number
  readonly running: number
  readonly done: number
  readonly failed: number
  readonly denied: number
}

/** How a sub-call settled, from its dispatch event. */
export interface Settlement {
  readonly durationMs: number
  readonly isError: boolean
  readonly content?: SubCallRecord['content']
  readonly error?: SubCallRecord['error']
}

interface Entry {
  readonly record: SubCallRecord
  /** Its place in the run (submission order). */
  readonly seq: number
  /** Counted as settled (so a second dispatch event for it counts nothing). */
  settled?: 'done' | 'failed' | 'denied'
}

/** One run's sub-calls: every record by id (for its events), and the bounded set the page draws. */
export class RunCalls {
  readonly #entries = new Map<string, Entry>()
  /** The first {@link MAX_DRAWN_CALLS} calls, in submission order. */
  readonly #first: SubCallRecord[] = []
  /** Calls past the first that are drawn anyway (asked a person, opened by the user), by id. */
  readonly #kept = new Map<string, Entry>()
  #keptSorted: readonly SubCallRecord[] = []
  #keptDirty = false
  #inFlight = 0
  #done = 0
  #failed = 0
  #denied = 0
  #latest = 0

  constructor(readonly maxDrawn: number = MAX_DRAWN_CALLS) {}

  /** Every sub-call the run started. */
  get size(): number {
    return this.#entries.size
  }

  /** Sub-calls started and not yet settled. */
  get inFlight(): number {
    return this.#inFlight
  }

  /** The latest start or end of any sub-call (ms since the run started). */
  get latest(): number {
    return this.#latest
  }

  get(subCallId: string): SubCallRecord | undefined {
    return this.#entries.get(subCallId)?.record
  }

  /** A sub-call started (its dispatch-start event). A second start of the same id is ignored. */
  start(record: SubCallRecord): void {
    if (this.#entries.has(record.subCallId)) return
    const entry: Entry = { record, seq: this.#entries.size }
    this.#entries.set(record.subCallId, entry)
    if (this.#first.length < this.maxDrawn) this.#first.push(record)
    this.#inFlight++
    this.#latest = Math.max(this.#latest, record.start)
  }

  /** A sub-call settled (its dispatch event); `undefined` for an id this run never started. */
  settle(subCallId: string, settlement: Settlement): SubCallRecord | undefined {
    const entry = this.#entries.get(subCallId)
    if (entry === undefined) return undefined
    const record = entry.record
    record.end = record.start + settlement.durationMs
    record.isError = settlement.isError
    if (settlement.content !== undefined) record.content = settlement.content
    if (settlement.error !== undefined) record.error = settlement.error
    this.#latest = Math.max(this.#latest, record.end)
    const state = callState(record) as 'done' | 'failed' | 'denied'
    if (entry.settled === undefined) this.#inFlight--
    else this.#count(entry.settled, -1)
    entry.settled = state
    this.#count(state, 1)
    return record
  }

  /** Draws `subCallId` from now on, whatever its place (a call that asked a person, a card the user opened). */
  keep(subCallId: string): void {
    const entry = this.#entries.get(subCallId)
    if (entry === undefined || entry.seq < this.maxDrawn || this.#kept.has(subCallId)) return
    this.#kept.set(subCallId, entry)
    this.#keptDirty = true
  }

  /** What the page draws: the first calls, then those kept past them, in submission order. */
  drawn(): readonly SubCallRecord[] {
    if (this.#kept.size === 0) return this.#first
    if (this.#keptDirty) {
      this.#keptSorted = [...this.#kept.values()].sort((a, b) => a.seq - b.seq).map((entry) => entry.record)
      this.#keptDirty = false
    }
    return [...this.#first, ...this.#keptSorted]
  }

  /** The calls not drawn, by state: the run's counts less the drawn calls' (O(drawn), never O(calls)). */
  hidden(drawn: readonly SubCallRecord[] = this.drawn()): HiddenCalls {
    let done = 0
    let failed = 0
    let denied = 0
    for (const record of drawn) {
      const settled = this.#entries.get(record.subCallId)?.settled
      if (settled === 'done') done++
      else if (settled === 'failed') failed++
      else if (settled === 'denied') denied++
    }
    const count = this.#entries.size - drawn.length
    const hidden = { done: this.#done - done, failed: this.#failed - failed, denied: this.#denied - denied }
    return { count, ...hidden, running: count - hidden.done - hidden.failed - hidden.denied }
  }

  #count(state: 'done' | 'failed' | 'denied', by: 1 | -1): void {
    if (state === 'done') this.#done += by
    else if (state === 'failed') this.#failed += by
    else this.#denied += by
  }
}

/** Thousands grouped as in en-US; one formatter for every frame (`toLocaleString` builds one per call, ~30 µs). */
const GROUPED = new Intl.NumberFormat('en-US')

/** "9,800 more sub-calls: 9,790 done, 10 failed" (the parts that are not zero). */
export function hiddenText(hidden: HiddenCalls): string {
  const n = (value: number): string => GROUPED.format(value)
  const parts = (['done', 'failed', 'denied', 'running'] as const).filter((key) => hidden[key] > 0).map((key) => `${n(hidden[key])} ${key}`)
  return `${n(hidden.count)} more sub-call${hidden.count === 1 ? '' : 's'}${parts.length === 0 ? '' : `: ${parts.join(', ')}`}`
}
