/**
 * `pending()` of a broker over a store: the open requests of every process sharing it, read
 * within fixed bounds; unreadable records are skipped and counted. Private to `approvals/`.
 *
 * @module
 */
import type { DurableStore, StoreEntry } from '../durable/store.js'
import { BY_EXPIRY_PREFIX, decodeDone, decodeOpen, DONE_PREFIX, expiryKey, hashOfId, hashOfKey, markerTime, OPEN_PREFIX, openKey, readExpiryKey } from './_store-record.js'
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
/** Records past expiry and retention one `pending()` removes by their expiry keys ({@link sweepExpired}). */
const EXPIRED_PAGE = 10
/**
 * Record text checked between two yields to the event loop. A memory store answers in
 * microtasks, so without a yield a listing of 8 MiB would hold the host's loop for its whole
 * length (measured: 190 ms); 64 KiB (one record at the cap) is a few milliseconds of checking.
 */
const CHARS_PER_SLICE = 64 * 1024

/** Lets timers and I/O run (a macrotask, not a microtask: a promise chain never yields). */
const yieldToLoop = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0))

/** Which requests a listing keeps: an agent's, a run's (by its `run_code` call id). */
export interface ListingFilter {
  readonly agent?: string | undefined
  readonly run?: string | undefined
}

/** Whether `approval` is one of run `runCallId`'s: its plan request (by `callId`), or a sub-call's (by `parentCallId`). */
export function approvalOfRun(approval: PendingApproval, runCallId: string): boolean {
  return approval.kind === 'plan' ? approval.callId === runCallId : approval.parentCallId === runCallId
}

const kept = (approval: PendingApproval, filter: ListingFilter): boolean =>
  (filter.agent === undefined || approval.agent === filter.agent) && (filter.run === undefined || approvalOfRun(approval, filter.run))

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
  /** The hashes whose records the walk read under their expiry keys: the scan skips them. */
  readonly seen: Set<string>
  /** Expiry keys naming no open record of that expiry (settled, or re-opened since): removed after the listing. */
  readonly orphans: { readonly key: string; readonly version: string }[]
  /** Open records past their expiry and retention: removed after the listing. */
  readonly stale: { readonly hash: string; readonly approval: PendingApproval; readonly version: string }[]
  /** Unexpired open records the scan found without an expiry key: given one after the listing. */
  readonly unordered: PendingApproval[]
}

type Entry = { readonly key: string; readonly version: string }

const over = (tally: Tally): boolean => tally.examined >= MAX_EXAMINED || tally.chars >= MAX_LISTING_CHARS

/** Checks one record read (counted); `undefined` when absent, `null` when unreadable or malformed. */
async function account(value: StoreEntry | null | undefined, hash: string, tally: Tally): Promise<PendingApproval | null | undefined> {
  tally.examined++
  if (value === undefined) return undefined
  if (value !== null) tally.chars += value.value.length
  if (tally.chars - tally.yieldedAt >= CHARS_PER_SLICE) {
    tally.yieldedAt = tally.chars
    await yieldToLoop()
  }
  const approval = value === null ? undefined : decodeOpen(value.value, hash)
  if (approval === undefined) tally.malformed++
  return approval ?? null
}

/** Reads, 8 at a time, the open records of the hashes `hashOf` names in `entries`; `take` answers `false` to stop. Answers whether every entry was read. */
async function readEach(store: DurableStore, entries: readonly Entry[], tally: Tally, hashOf: (entry: Entry) => string | undefined, take: (entry: Entry, hash: string, approval: PendingApproval | null | undefined) => boolean): Promise<boolean> {
  const wanted = entries.flatMap((entry) => {
    const hash = hashOf(entry)
    return hash === undefined ? [] : [{ entry, hash }]
  })
  for (let i = 0; i < wanted.length; i += READ_AT_ONCE) {
    const chunk = wanted.slice(i, i + READ_AT_ONCE)
    // A value the store refuses to read back (oversized, corrupt) counts as malformed, never fails the listing.
    const values = await Promise.all(chunk.map(({ hash }) => store.get(openKey(hash)).catch(() => null)))
    for (const [index, { entry, hash }] of chunk.entries()) {
      if (over(tally)) return false
      if (!take(entry, hash, await account(values[index], hash, tally))) return false
    }
  }
  return true
}

/**
 * Walks the expiry keys from now on: the unexpired requests in the order they expire, so
 * expired records cost nothing and which are listed never depends on their hashes. Stops
 * at one more than the listing shows, or at a bound. Answers whether it reached the end.
 */
async function walkByExpiry(store: DurableStore, tally: Tally, now: number, filter: ListingFilter): Promise<boolean> {
  let after = BY_EXPIRY_PREFIX + markerTime(now)
  for (;;) {
    const page = await store.list(BY_EXPIRY_PREFIX, { limit: PAGE, after })
    const whole = await readEach(store, page.entries, tally, (entry) => readExpiryKey(entry.key)?.hash, (entry, hash, approval) => {
      if (approval === null) {
        tally.seen.add(hash)
        return true
      }
      // The record went (or is another request of the same call): the key is left over.
      if (approval === undefined || markerTime(approval.expiresAt) !== markerTime(readExpiryKey(entry.key)!.at)) tally.orphans.push(entry)
      else {
        tally.seen.add(hash)
        if (now < approval.expiresAt && kept(approval, filter)) tally.found.push(approval)
      }
      return tally.found.length <= MAX_LISTED_APPROVALS
    })
    if (!whole || tally.found.length > MAX_LISTED_APPROVALS) return false
    if (page.cursor === undefined) return true
    if (over(tally)) return false
    after = page.cursor
  }
}

/**
 * Reads, in hash order and within what the walk left of the bounds, the open records the
 * walk did not: written before expiry keys existed, by a process that died between its two
 * writes, expired ones, garbage. Answers whether it reached the end.
 */
async function scanOpen(store: DurableStore, tally: Tally, now: number, retainMs: number, filter: ListingFilter): Promise<boolean> {
  let after: string | undefined
  for (;;) {
    if (over(tally)) return false
    const page = await store.list(OPEN_PREFIX, { limit: PAGE, ...(after === undefined ? {} : { after }) })
    const whole = await readEach(store, page.entries, tally, (entry) => {
      const hash = hashOfKey(entry.key)
      // A key that names no hash: read (and counted malformed) under its own name.
      return hash === undefined ? entry.key.slice(OPEN_PREFIX.length) : tally.seen.has(hash) ? undefined : hash
    }, (entry, hash, approval) => {
      if (approval === null || approval === undefined || hashOfKey(entry.key) === undefined) return true
      if (now < approval.expiresAt) {
        if (kept(approval, filter)) tally.found.push(approval)
        tally.unordered.push(approval)
      } else if (now >= approval.expiresAt + retainMs) tally.stale.push({ hash, approval, version: entry.version })
      return true
    })
    if (!whole) return false
    if (page.cursor === undefined) return true
    after = page.cursor
  }
}

/**
 * Lists the expiry keys before now (keys only, at most 1,000): the scan skips their records,
 * expired ones it need not read (after a crash, a day of them would fill its bounds and cut
 * every listing). Answers the first {@link EXPIRED_PAGE} past expiry and retention.
 */
async function listExpired(store: DurableStore, tally: Tally, now: number, retainMs: number): Promise<Entry[]> {
  const stale: Entry[] = []
  let after: string | undefined
  for (let listed = 0; listed < MAX_EXAMINED; listed += PAGE) {
    const page = await store.list(BY_EXPIRY_PREFIX, { limit: PAGE, ...(after === undefined ? {} : { after }) })
    for (const entry of page.entries) {
      const named = readExpiryKey(entry.key)
      if (named === undefined) continue
      if (named.at >= now) return stale
      tally.seen.add(named.hash)
      if (now >= named.at + retainMs && stale.length < EXPIRED_PAGE) stale.push(entry)
    }
    if (page.cursor === undefined) return stale
    after = page.cursor
  }
  return stale
}

/** Removes the open records (and keys) of `stale` expiry keys, past expiry and retention: what no process settled (it died, or was disposed). */
async function sweepExpired(store: DurableStore, stale: readonly Entry[]): Promise<void> {
  for (const entry of stale) {
    const named = readExpiryKey(entry.key)!
    const open = await store.get(openKey(named.hash)).catch(() => undefined)
    const approval = open === undefined ? undefined : decodeOpen(open.value, named.hash)
    if (approval !== undefined && markerTime(approval.expiresAt) === markerTime(named.at)) await removeLeftover(store, named.hash, approval, open!.version)
    else await deleteQuietly(store, entry.key, entry.version)
  }
}

const byAge = (a: PendingApproval, b: PendingApproval): number => a.requestedAt - b.requestedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/**
 * The open, unexpired requests in `store` (only `agent`'s and run `run`'s when given), oldest first (then by
 * id), at most {@link MAX_LISTED_APPROVALS}: the oldest of the 501 that expire first (with
 * one timeout, the 500 oldest). Walks
 * the expiry keys, then reads the open records the walk did not (in hash order, within
 * the same bounds: at most 1,000 records and 8 MiB of text) and gives an expiry key to each
 * unexpired one without (50 per listing). An open record whose settlement was written by a
 * process that died before removing it may be listed until someone decides it (answered
 * `APPROVAL_ALREADY_DECIDED`, and removed).
 */
export async function listOpen(store: DurableStore, retainMs: number, agent?: string, run?: string): Promise<ListingResult> {
  const filter: ListingFilter = { agent, run }
  const now = Date.now()
  const tally: Tally = { examined: 0, malformed: 0, chars: 0, yieldedAt: 0, found: [], seen: new Set(), orphans: [], stale: [], unordered: [] }
  const walked = await walkByExpiry(store, tally, now, filter)
  // Past the cap already: the scan could only add requests that expire later (or of an older version, indexed once the walk is whole).
  const expired = await listExpired(store, tally, now, retainMs).catch(() => [])
  let truncated = !walked || !(await scanOpen(store, tally, now, retainMs, filter))
  // Only after a whole walk is a record the walk did not read known to lack its key.
  if (walked) for (const approval of tally.unordered.slice(0, SWEEP_PAGE)) await store.put(expiryKey(approval.expiresAt, hashOfId(approval.id)!), '').catch(() => undefined)
  for (const orphan of tally.orphans.slice(0, SWEEP_PAGE)) await deleteQuietly(store, orphan.key, orphan.version)
  for (const stale of tally.stale.slice(0, SWEEP_PAGE)) await removeLeftover(store, stale.hash, stale.approval, stale.version)
  await sweepExpired(store, expired).catch(() => undefined)
  if (tally.found.length > MAX_LISTED_APPROVALS) truncated = true
  const listed = tally.found.sort(byAge).slice(0, MAX_LISTED_APPROVALS)
  return {
    approvals: Object.freeze(listed),
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
