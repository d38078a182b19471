/**
 * The store side of a broker over a `DurableStore`: reading a call's keys, settling a request
 * by compare-and-set, and finding or opening a call's request. Private (docs/approvals.md).
 *
 * @module
 */
import type { DurableStore } from '../durable/store.js'
import { ToolError } from '../errors.js'
import { denial, type RequestFields } from './_request.js'
import {
  BY_PRINCIPAL_PREFIX,
  callHash,
  decodeDone,
  decodeOpen,
  doneKey,
  encodeDone,
  encodeOpen,
  expiryKey,
  markerKey,
  MAX_APPROVAL_RECORD_BYTES,
  markerTime,
  newApprovalId,
  openKey,
  principalKey,
  sameCall,
  type DoneRecord,
  type StoredSettlement,
} from './_store-record.js'
import type { PendingApproval } from './types.js'

/**
 * The most requests of one principal open in a store at once, counted in the store
 * (`approvals/by/<principal>/`), so across every process sharing it: past it a call of that
 * principal is denied at once, unasked. The listing a person reads holds at most
 * `MAX_LISTED_APPROVALS` (500), oldest first: a bound kept per process let one `run` token
 * hold 200 on each of three servers sharing a store, and another principal's request was
 * not listed (red team, stop 54). Processes opening at the same moment may each pass it by
 * one (each counts before the others' keys land): at most 200 + (processes - 1).
 */
export const MAX_WAITING_PER_PRINCIPAL = 200

/** How often a read-compare-write is retried when other writers keep winning (each loss means progress elsewhere). */
const CLAIM_ATTEMPTS = 8

/** A key as read: its version and, when it parsed, its record. */
export interface Read<T> {
  readonly version: string | undefined
  readonly record: T | undefined
}

/** Reads `approvals/open/<hash>`. */
export async function readOpen(store: DurableStore, hash: string): Promise<Read<PendingApproval>> {
  const entry = await store.get(openKey(hash))
  return { version: entry?.version, record: entry === undefined ? undefined : decodeOpen(entry.value, hash) }
}

/** Reads `approvals/done/<hash>`. */
export async function readDone(store: DurableStore, hash: string): Promise<Read<DoneRecord>> {
  const entry = await store.get(doneKey(hash))
  return { version: entry?.version, record: entry === undefined ? undefined : decodeDone(entry.value, hash) }
}

/** Deletes a key only at the version it was read at; failures are left for the next reader. */
export async function deleteQuietly(store: DurableStore, key: string, version: string | undefined): Promise<void> {
  if (version === undefined) return
  await store.delete(key, { ifVersion: version }).catch(() => undefined)
}

/** What a claim found: the settlement that landed (ours or another's), or `undefined` when the request is no longer open anywhere. */
export type Claimed = { readonly record: DoneRecord; readonly mine: boolean } | undefined

/**
 * Settles `approval` in the store, unless it already is: writes a settlement marker (so that
 * other processes' polls find it without reading every open request: _store-markers.ts), the
 * settlement key with compare-and-set, then removes the open key. Answers the settlement that landed. A
 * settlement key holding another id (a withdrawn earlier request of the same call) is
 * overwritten only while the open key still holds `approval`: a request that is no longer
 * open can never be settled again (answer `undefined`).
 */
export async function claim(store: DurableStore, hash: string, approval: PendingApproval, settled: StoredSettlement): Promise<Claimed> {
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const done = await readDone(store, hash)
    if (done.record?.approval.id === approval.id) {
      await removeOpen(store, hash, approval.id)
      return { record: done.record, mine: false }
    }
    const open = await readOpen(store, hash)
    if (open.record?.id !== approval.id) {
      // Gone since the settlement was read: another decision may have landed (and removed it) in between.
      const landed = await readDone(store, hash)
      return landed.record?.approval.id === approval.id ? { record: landed.record, mine: false } : undefined
    }
    const record: DoneRecord = Object.freeze({ approval, settled })
    // The marker first: a crash between the two writes leaves a marker naming no settlement
    // (a poll reads one key for nothing), never a settlement no marker names (a poll would
    // miss it until its next full pass). A marker whose settlement lost the race names the key
    // where the winner's landed.
    await store.put(markerKey(Date.now(), hash), '')
    const put = await store.put(doneKey(hash), encodeDone(record), { ifVersion: done.version ?? null })
    if (put.ok) {
      await removeLeftover(store, hash, approval, open.version)
      return { record, mine: true }
    }
  }
  throw new ToolError('STORE_BUSY', `the approval ${JSON.stringify(approval.id)} could not be settled: other writers kept changing it`)
}

/** Removes a leftover open record of an already settled request. */
async function removeOpen(store: DurableStore, hash: string, id: string): Promise<void> {
  const open = await readOpen(store, hash)
  if (open.record?.id === id) await removeLeftover(store, hash, open.record, open.version)
}

/** What asking found: a request to wait for, or a settlement to answer at once. */
export type Attachment =
  | { readonly kind: 'wait'; readonly hash: string; readonly approval: PendingApproval; readonly created: boolean }
  | { readonly kind: 'answer'; readonly hash: string; readonly record: DoneRecord }

/** Runs `body` after every earlier `body` of `principal` in this process has settled. */
export type OneAtATime = <T>(principal: string, body: () => Promise<T>) => Promise<T>

/** The request's timing as the broker sets it. */
export interface AttachOptions {
  readonly timeoutMs: number
  readonly retainSettledMs: number
  /** The broker's queue for openings of one principal's requests (count, open, count key): openings in one process never pass the bound together. */
  readonly oneAtATime?: OneAtATime
}

/** How many requests of `principal` the store counts as open and unexpired at `now` (at most {@link MAX_WAITING_PER_PRINCIPAL}): one listing of keys. */
async function countOpen(store: DurableStore, principal: string, now: number): Promise<number> {
  const prefix = `${BY_PRINCIPAL_PREFIX}${principal}/`
  // Keys sort by expiry: those after `now`'s time are the unexpired ones (expired keys are removed when their requests settle or are swept).
  const page = await store.list(prefix, { limit: MAX_WAITING_PER_PRINCIPAL, after: prefix + markerTime(now) })
  return page.entries.length
}

/**
 * Writes `approval`'s open record (`text`) unless another writer opened the key first
 * (`false`), then its expiry key (the listing's order). A request with a principal is
 * counted first, and denied past {@link MAX_WAITING_PER_PRINCIPAL}; once open, its count
 * key is written too.
 */
async function openRequest(store: DurableStore, hash: string, approval: PendingApproval, text: string, options: AttachOptions): Promise<boolean> {
  const principal = approval.principal
  const open = async (): Promise<boolean> => {
    if (principal !== undefined) {
      const waiting = await countOpen(store, principal, Date.now())
      if (waiting >= MAX_WAITING_PER_PRINCIPAL) {
        throw denial(`${approval.name} was not put to a person: principal ${principal} already has ${waiting} requests waiting for one in the approval store, across every server sharing it (at most ${MAX_WAITING_PER_PRINCIPAL}); retry once some are decided`)
      }
    }
    const put = await store.put(openKey(hash), text, { ifVersion: null })
    if (!put.ok) return false
    try {
      await store.put(expiryKey(approval.expiresAt, hash), '')
      if (principal !== undefined) await store.put(principalKey(principal, approval.expiresAt, hash), '')
    } catch (error) {
      // Unordered it would be listed late; uncounted, nothing would bound it: it must not stay open.
      await removeLeftover(store, hash, approval, put.version)
      throw error
    }
    return true
  }
  return principal === undefined || options.oneAtATime === undefined ? open() : options.oneAtATime(principal, open)
}

/**
 * Removes an open record left after its request settled (or expired past retention): its
 * count and expiry keys first, so a crash between leaves an open record (removed or
 * indexed again by the next listing), never a key that outlives its record unnoticed.
 */
export async function removeLeftover(store: DurableStore, hash: string, approval: PendingApproval, version: string | undefined): Promise<void> {
  if (approval.principal !== undefined) await store.delete(principalKey(approval.principal, approval.expiresAt, hash)).catch(() => undefined)
  await store.delete(expiryKey(approval.expiresAt, hash)).catch(() => undefined)
  await deleteQuietly(store, openKey(hash), version)
}

/**
 * Finds the request of the call `fields` describe, or opens one. An open request of the
 * same call is re-attached (same id, same expiry; expired already → settled as expired);
 * a settlement of the same call kept within `retainSettledMs` is answered at once, unless
 * it was a withdrawal (the call was cancelled then; asked again, it asks again).
 */
export async function attach(store: DurableStore, fields: RequestFields, runKey: string | undefined, options: AttachOptions): Promise<Attachment> {
  const hash = await callHash(fields, runKey)
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const [open, done] = await Promise.all([readOpen(store, hash), readDone(store, hash)])
    const now = Date.now()
    if (open.version !== undefined) {
      const found = open.record
      if (found === undefined) {
        // Not a record this broker can read: it names our call's key, so it is garbage there.
        await deleteQuietly(store, openKey(hash), open.version)
        continue
      }
      // A record under our key that is not our call: a hash collision, or a record written before calls were bound to their arguments.
      if (!sameCall(found, fields)) throw denial('the approval request collides with another call in the store (same key hash); it was not asked')
      if (done.record?.approval.id === found.id) {
        await removeLeftover(store, hash, found, open.version)
        if (done.record.settled.kind !== 'withdrawn') return { kind: 'answer', hash, record: done.record }
        continue
      }
      if (now < found.expiresAt) return { kind: 'wait', hash, approval: found, created: false }
      const claimed = await claim(store, hash, found, Object.freeze({ kind: 'expired', at: found.expiresAt }))
      if (claimed !== undefined) return { kind: 'answer', hash, record: claimed.record }
      continue
    }
    const kept = done.record
    if (kept !== undefined && sameCall(kept.approval, fields) && kept.settled.kind !== 'withdrawn' && now < kept.settled.at + options.retainSettledMs) {
      return { kind: 'answer', hash, record: kept }
    }
    const approval: PendingApproval = Object.freeze({ id: newApprovalId(hash), ...fields, requestedAt: now, expiresAt: now + options.timeoutMs })
    const text = encodeOpen(approval)
    if (text === undefined) throw denial(`the approval request for ${fields.name} is too large to keep in the store (over ${MAX_APPROVAL_RECORD_BYTES} bytes); it was not asked`)
    if (await openRequest(store, hash, approval, text, options)) return { kind: 'wait', hash, approval, created: true }
  }
  throw new ToolError('STORE_BUSY', 'the approval request could not be opened: other writers kept changing its key')
}
