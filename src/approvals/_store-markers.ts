/**
 * A store broker's poll by settlement markers: `claim` writes `approvals/settled/<time>-<hash>`
 * first; a poll lists the markers since its last listing (minus a skew window) and reads only
 * the settlement keys they name, not every open request's (docs/approvals.md). Private.
 * @module
 */
import type { DurableStore } from '../durable/store.js'
import { markerTime, readMarkerKey, SETTLED_PREFIX } from './_store-record.js'
import { deleteQuietly } from './_store-wait.js'

/**
 * How far back a listing reaches before the local time of the last complete one: markers
 * are timed by their writer's clock, and a marker is written a little before it is listed.
 * A marker timed earlier than that (a clock more than this behind, a write that took longer)
 * is found by the next full pass ({@link FULL_PASS_EVERY_MS}).
 */
export const MARKER_SKEW_MS = 5_000
/** How often a poll reads the settlement key of every open request anyway (settlements without a marker: written by an older version, or past the skew window). */
export const FULL_PASS_EVERY_MS = 30_000
/**
 * How long a marker is kept: longer than a full pass's period, so a poll that lags less than
 * that still finds it by its marker. Not `retainSettledMs` (24 hours by default): a file
 * store's listing reads its whole directory, and a day of markers would weigh on each one.
 */
export const MARKER_RETAIN_MS = 5 * 60_000
/** Markers one listing returns; a poll with more to read carries on from there at its next pass. */
export const MARKER_PAGE = 500
/** Expired markers one prune removes; a full page prunes again at the next pass. */
const PRUNE_PAGE = 100
/** How often a poll prunes markers when the last prune found fewer than a page. */
const PRUNE_EVERY_MS = 10_000

/** Where a broker's listing of markers stands. */
export interface MarkerScan {
  /** The next walk starts {@link MARKER_SKEW_MS} before this local time: the start of the last walk that reached the last marker. */
  listedUpTo: number
  /** A walk whose page left more to list: it goes on after `after` at the next pass. */
  walk: { readonly startedAt: number; readonly after: string; floor: number } | undefined
  /** When the next prune is due (local time). */
  nextPrune: number
}

/** A scan that lists the markers written from `since` (local epoch ms, minus {@link MARKER_SKEW_MS}) on. */
export function newMarkerScan(since: number): MarkerScan {
  return { listedUpTo: since, walk: undefined, nextPrune: since }
}

/**
 * A call's request is about to be watched, asked at `askedAt` (local time): the next walk
 * reaches back to it, so a decision taken after its keys were read (and perhaps listed
 * before the watch existed) is found by its marker. A walk under way goes on (restarting it
 * at every new request could keep it from ever reaching the end). The `first` watch after
 * none needs nothing older: the listing starts over from it (not from where the last poll
 * stopped, which would list every marker kept since).
 */
export function watchFrom(scan: MarkerScan, askedAt: number, first: boolean): void {
  if (first) {
    scan.walk = undefined
    scan.listedUpTo = askedAt
  } else if (scan.walk !== undefined) scan.walk.floor = Math.min(scan.walk.floor, askedAt)
  else scan.listedUpTo = Math.min(scan.listedUpTo, askedAt)
}

/**
 * Lists one page of markers and answers the call hashes they name. A walk starts
 * {@link MARKER_SKEW_MS} before `listedUpTo`; a page that leaves more is followed at the
 * next call, and a walk that reached the end moves `listedUpTo` to its start.
 */
export async function scanMarkers(store: DurableStore, scan: MarkerScan, now: number): Promise<Set<string>> {
  const walk = scan.walk ?? { startedAt: now, after: SETTLED_PREFIX + markerTime(scan.listedUpTo - MARKER_SKEW_MS), floor: Number.POSITIVE_INFINITY }
  const page = await store.list(SETTLED_PREFIX, { limit: MARKER_PAGE, after: walk.after })
  const named = new Set<string>()
  for (const entry of page.entries) {
    const marker = readMarkerKey(entry.key)
    if (marker !== undefined) named.add(marker.hash)
  }
  if (page.cursor === undefined) {
    scan.listedUpTo = Math.min(Math.max(scan.listedUpTo, walk.startedAt), walk.floor)
    scan.walk = undefined
  } else {
    scan.walk = { startedAt: walk.startedAt, after: page.cursor, floor: walk.floor }
  }
  return named
}

/**
 * Removes markers older than {@link MARKER_RETAIN_MS}, oldest first, at most a page, when a
 * prune is due; a full page makes the next one due at once. Keys under the prefix that are
 * not markers are left alone (they may be another version's).
 */
export async function pruneMarkers(store: DurableStore, scan: MarkerScan, now: number): Promise<void> {
  if (now < scan.nextPrune) return
  scan.nextPrune = now + PRUNE_EVERY_MS
  const page = await store.list(SETTLED_PREFIX, { limit: PRUNE_PAGE })
  let pruned = 0
  for (const entry of page.entries) {
    const marker = readMarkerKey(entry.key)
    if (marker === undefined) continue
    if (marker.at >= now - MARKER_RETAIN_MS) break
    await deleteQuietly(store, entry.key, entry.version)
    pruned++
  }
  if (pruned === PRUNE_PAGE) scan.nextPrune = now
}
