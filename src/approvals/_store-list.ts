/**
 * `pending()` of a broker over a store: the open requests of every process sharing it, read
 * within fixed bounds; unreadable records are skipped and counted. Private to `approvals/`.
 *
 * @module
 */
import type { DurableStore } from '../durable/store.js'
import { decodeDone, decodeOpen, DONE_PREFIX, hashOfKey, OPEN_PREFIX } from './_store-record.js'
import { deleteQuietly, removeLeftover } from './_store-wait.js'
import type { ApprovalListing, PendingApproval } from './types.js'

/** The most requests one `pending()` of a broker over a store returns (the oldest). */
export const MAX_LISTED_APPROVALS = 500
/** The most records one `pending()` reads. */
const MAX_EXAMINED = 1000
/** The most record text one `pending()` reads (characters); a record is at most 64 KiB, a garbage value up to the store's cap. */
const MAX_LISTING_CHARS = 8 * 1024 * 1024
/** Keys asked of the store per page, and records read at once. */
const PAGE = 100
const READ_AT_ONCE = 8
/** Settled records one `pending()` looks at for removal (one page, after a cursor that moves on each call). */
const SWEEP_PAGE = 50
/**
 * Record text checked between two yields to the event loop. A memory store answers in
 * microtasks, so without a yield a listing of 8 MiB would hold the host's loop for its whole
 * length (measured: 190 ms); 64 KiB (one record at the cap) is a few milliseconds of checking.
 */
const CHARS_PER_SLICE = 64 * 1024

/** Lets timers and I/O run (a macrotask, not a microtask: a promise chain never yields). */
const yieldToLoop = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0))

/** What one listing found. */
export interface ListingResult {
  readonly approvals: readonly PendingApproval[]
  readonly listing: ApprovalListing
}

interface Tally {
  examined: number
  malformed: number
  chars: number
  /** `chars` at the last yield to the event loop. */
  yieldedAt: number
  readonly found: PendingApproval[]
  /** Open records past their expiry and retention: removed after the listing. */
  readonly stale: { readonly hash: string; readonly approval: PendingApproval; readonly version: string }[]
}

/** Reads one page's records into `tally`; answers `false` when the text budget ran out. */
async function readPage(store: DurableStore, entries: readonly { key: string; version: string }[], tally: Tally, now: number, retainMs: number, agent: string | undefined): Promise<boolean> {
  for (let i = 0; i < entries.length; i += READ_AT_ONCE) {
    const chunk = entries.slice(i, i + READ_AT_ONCE)
    // A value the store refuses to read back (oversized, corrupt) counts as malformed, never fails the listing.
    const values = await Promise.all(chunk.map((entry) => store.get(entry.key).catch(() => null)))
    for (const [index, entry] of chunk.entries()) {
      if (tally.chars >= MAX_LISTING_CHARS) return false
      if (tally.chars - tally.yieldedAt >= CHARS_PER_SLICE) {
        tally.yieldedAt = tally.chars
        await yieldToLoop()
      }
      const value = values[index]
      tally.examined++
      // Removed since the page was listed: settled meanwhile.
      if (value === undefined) continue
      const hash = hashOfKey(entry.key)
      if (value !== null) tally.chars += value.value.length
      const approval = value === null || hash === undefined ? undefined : decodeOpen(value.value, hash)
      if (approval === undefined) tally.malformed++
      else if (now < approval.expiresAt) {
        // Another agent's (or the global layer's) request, for a listing of one agent's: read, not listed.
        if (agent === undefined || approval.agent === agent) tally.found.push(approval)
      }
      else if (now >= approval.expiresAt + retainMs) tally.stale.push({ hash: hash!, approval, version: value!.version })
    }
  }
  return true
}

/**
 * The open, unexpired requests in `store` (only `agent`'s when given), oldest first (then by id), at most
 * {@link MAX_LISTED_APPROVALS}; reads at most 1,000 records and 8 MiB of text. An open
 * record whose settlement was written by a process that died before removing it may be
 * listed until someone decides it (answered `APPROVAL_ALREADY_DECIDED`, and removed).
 */
export async function listOpen(store: DurableStore, retainMs: number, agent?: string): Promise<ListingResult> {
  const now = Date.now()
  const tally: Tally = { examined: 0, malformed: 0, chars: 0, yieldedAt: 0, found: [], stale: [] }
  let after: string | undefined
  let truncated = false
  for (;;) {
    const page = await store.list(OPEN_PREFIX, { limit: PAGE, ...(after === undefined ? {} : { after }) })
    const taken = page.entries.slice(0, MAX_EXAMINED - tally.examined)
    const whole = await readPage(store, taken, tally, now, retainMs, agent)
    const more = page.cursor !== undefined || taken.length < page.entries.length
    truncated = !whole || (more && tally.examined >= MAX_EXAMINED)
    if (truncated || page.cursor === undefined) break
    after = page.cursor
  }
  for (const stale of tally.stale.slice(0, SWEEP_PAGE)) await removeLeftover(store, stale.hash, stale.approval, stale.version)
  const sorted = tally.found.sort((a, b) => a.requestedAt - b.requestedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  if (sorted.length > MAX_LISTED_APPROVALS) truncated = true
  return {
    approvals: Object.freeze(sorted.slice(0, MAX_LISTED_APPROVALS)),
    listing: Object.freeze({ examined: tally.examined, malformed: tally.malformed, truncated }),
  }
}

/**
 * Removes settled records past their retention: one page of `approvals/done/` after
 * `after`, so successive calls walk the whole prefix. Returns where the next call starts.
 * Malformed records are left alone (they may be another version's).
 */
export async function sweepSettled(store: DurableStore, after: string | undefined, retainMs: number): Promise<string | undefined> {
  const page = await store.list(DONE_PREFIX, { limit: SWEEP_PAGE, ...(after === undefined ? {} : { after }) })
  const now = Date.now()
  for (const entry of page.entries) {
    const hash = hashOfKey(entry.key)
    const value = hash === undefined ? undefined : await store.get(entry.key).catch(() => undefined)
    const record = value === undefined || hash === undefined ? undefined : decodeDone(value.value, hash)
    if (record !== undefined && now >= record.settled.at + retainMs) await deleteQuietly(store, entry.key, value!.version)
  }
  return page.cursor
}
