/**
 * `listOpen` and `sweepSettled` (src/approvals/_store-list.ts) against stores that list out
 * of order, hand back oversized pages or fail on cue: the survivors of the file's mutation
 * run (docs/testing.md). What a caller sees: the list, its counts, what is removed.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { listOpen, sweepSettled } from '../../../src/approvals/_store-list.js'
import { doneKey, hashOfId, newApprovalId, openKey } from '../../../src/approvals/_store-record.js'
import type { PendingApproval } from '../../../src/approvals/types.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import type { DurableStore, StoreListOptions } from '../../../src/durable/store.js'
import { cueStore } from '../../support/cue-store.js'

afterEach(() => {
  vi.restoreAllMocks()
})

const hashOf = (i: number) => i.toString(16).padStart(32, '0')
function approval(over: Record<string, unknown> = {}): PendingApproval {
  return { id: newApprovalId(hashOf(1)), callId: 'c1', kind: 'call', name: 'pay', arguments: { cents: 5 }, argumentsHash: 'a'.repeat(64), summary: 'pay 5', requestedAt: 1000, expiresAt: 2000, ...over } as PendingApproval
}
const openOf = (i: number, over: Record<string, unknown> = {}) => JSON.stringify({ format: 'toolyard-approval/1', approval: approval({ id: newApprovalId(hashOf(i)), ...over }) })
const doneOf = (i: number, at: number, over: Record<string, unknown> = {}) =>
  JSON.stringify({ format: 'toolyard-approval/1', approval: approval({ id: newApprovalId(hashOf(i)), ...over }), settled: { kind: 'expired', at } })

/** `base` with each list page's entries reversed (a store need not list in key order) and every list's options logged. */
function reversing(base: DurableStore, lists: StoreListOptions[] = []): DurableStore {
  return {
    ...base,
    list: async (prefix, options) => {
      lists.push({ ...options })
      const page = await base.list(prefix, options)
      return { ...page, entries: [...page.entries].reverse() }
    },
  }
}

describe('listOpen: order, boundaries, bounds', () => {
  it('oldest first, then by id, whatever order the store lists them in', async () => {
    const base = createMemoryStore()
    for (let i = 1; i <= 6; i++) await base.put(openKey(hashOf(i)), openOf(i, { requestedAt: 1000, expiresAt: Date.now() + 60_000 }))
    await base.put(openKey(hashOf(7)), openOf(7, { requestedAt: 999, expiresAt: Date.now() + 60_000 }))
    const result = await listOpen(reversing(base), 0)
    expect(result.approvals.map((a) => hashOfId(a.id))).toEqual([7, 1, 2, 3, 4, 5, 6].map(hashOf))
  })

  it('a request is listed until its expiresAt (not at it) and removed at exactly expiresAt + retention', async () => {
    const base = createMemoryStore()
    await base.put(openKey(hashOf(1)), openOf(1, { requestedAt: 1000, expiresAt: 5000 }))
    await base.put(openKey(hashOf(2)), openOf(2, { requestedAt: 1000, expiresAt: 3000 }))
    await base.put(openKey(hashOf(3)), openOf(3, { requestedAt: 1000, expiresAt: 3001 }))
    vi.spyOn(Date, 'now').mockReturnValue(4999)
    expect((await listOpen(base, 2000)).approvals.map((a) => hashOfId(a.id))).toEqual([hashOf(1)])
    vi.spyOn(Date, 'now').mockReturnValue(5000)
    const result = await listOpen(base, 2000)
    expect(result.approvals).toEqual([])
    // 3000 + 2000 is due at 5000; 3001 + 2000 is not yet.
    expect(await base.get(openKey(hashOf(2)))).toBeUndefined()
    expect(await base.get(openKey(hashOf(3)))).toBeDefined()
    expect(await base.get(openKey(hashOf(1)))).toBeDefined()
  })

  it('a record under a key that names no hash is malformed, even when its id names none either', async () => {
    const base = createMemoryStore()
    await base.put('approvals/open/not-a-hash', JSON.stringify({ format: 'toolyard-approval/1', approval: approval({ id: 'x', expiresAt: Date.now() + 60_000 }) }))
    expect(await listOpen(base, 0)).toEqual({ approvals: [], listing: { examined: 1, malformed: 1, truncated: false } })
  })

  it('a store that hands back more than a page: still at most 1,000 records read, and truncated', async () => {
    const base = createMemoryStore()
    for (let i = 0; i < 1001; i++) await base.put(openKey(hashOf(i)), 'garbage')
    const big: DurableStore = {
      ...base,
      list: async (prefix) => {
        const first = await base.list(prefix, { limit: 1000 })
        const rest = await base.list(prefix, { limit: 1000, after: first.cursor! })
        return { entries: [...first.entries, ...rest.entries] }
      },
    }
    expect((await listOpen(big, 0)).listing).toEqual({ examined: 1000, malformed: 1000, truncated: true })
  })

  it('an oversized page after the first: read only up to 1,000 records in all', async () => {
    const base = createMemoryStore()
    for (let i = 0; i < 1100; i++) await base.put(openKey(hashOf(i)), 'garbage')
    const big: DurableStore = {
      ...base,
      list: async (prefix, options) => {
        if (options?.after === undefined) return base.list(prefix, { limit: 100 })
        const first = await base.list(prefix, { limit: 1000, after: options.after })
        const rest = await base.list(prefix, { limit: 1000, after: first.cursor! })
        return { entries: [...first.entries, ...rest.entries] }
      },
    }
    expect((await listOpen(big, 0)).listing).toEqual({ examined: 1000, malformed: 1000, truncated: true })
  })

  it('stops asking for pages once 1,000 records are read (the pages after are not listed), and asks the first page without a cursor', async () => {
    const cues = cueStore()
    for (let i = 0; i < 1001; i++) await cues.base.put(openKey(hashOf(i)), 'garbage')
    const lists: StoreListOptions[] = []
    const result = await listOpen(reversing(cues.store, lists), 0)
    expect(result.listing).toEqual({ examined: 1000, malformed: 1000, truncated: true })
    // Ten pages of open records, after the walk of expiry keys and the list of expired ones (none either; brief s54 "listing").
    expect(cues.ops.filter((op) => op.op === 'list' && op.key === 'approvals/open/')).toHaveLength(10)
    expect(cues.ops.filter((op) => op.op === 'list')).toHaveLength(12)
    expect(Object.keys(lists[2]!)).toEqual(['limit'])
  })

  it('yields to the event loop once per 64 KiB of record text read (at exactly 64 KiB), not per record', async () => {
    const base = createMemoryStore({ maxValueBytes: 1024 * 1024 })
    for (let i = 0; i < 5; i++) await base.put(openKey(hashOf(i)), 'x'.repeat(32 * 1024))
    const timeout = vi.spyOn(globalThis, 'setTimeout')
    const result = await listOpen(base, 0)
    expect(result.listing).toEqual({ examined: 5, malformed: 5, truncated: false })
    // Before the 3rd record (64 KiB read) and before the 5th (64 KiB more).
    expect(timeout.mock.calls.filter((call) => call[1] === 0)).toHaveLength(2)
  })
})

describe('sweepSettled: boundaries and a hostile store', () => {
  it('removes a settlement at exactly settled.at + retention, not a millisecond before', async () => {
    const base = createMemoryStore()
    await base.put(doneKey(hashOf(1)), doneOf(1, 3000))
    await base.put(doneKey(hashOf(2)), doneOf(2, 3001))
    vi.spyOn(Date, 'now').mockReturnValue(5000)
    await sweepSettled(base, undefined, 2000)
    expect((await base.list('approvals/done/')).entries.map((entry) => entry.key)).toEqual([doneKey(hashOf(2))])
  })

  it('walks on from its cursor: a first page of settlements still kept is not read again', async () => {
    const base = createMemoryStore()
    const now = Date.now()
    for (let i = 0; i < 50; i++) await base.put(doneKey(hashOf(i)), doneOf(i, now))
    for (let i = 50; i < 55; i++) await base.put(doneKey(hashOf(i)), doneOf(i, now - 10_000))
    const lists: StoreListOptions[] = []
    const store = reversing(base, lists)
    const next = await sweepSettled(store, undefined, 5000)
    expect(next).toBeDefined()
    expect(Object.keys(lists[0]!)).toEqual(['limit'])
    expect(await sweepSettled(store, next, 5000)).toBeUndefined()
    expect((await base.list('approvals/done/', { limit: 1000 })).entries).toHaveLength(50)
  })

  it('a settlement under a key that names no hash is never read nor removed, even with an id that names none', async () => {
    const cues = cueStore()
    await cues.base.put('approvals/done/not-a-hash', doneOf(1, 0, { id: 'x' }))
    await sweepSettled(cues.store, undefined, 0)
    expect(await cues.base.get('approvals/done/not-a-hash')).toBeDefined()
    expect(cues.ops.filter((op) => op.op !== 'list')).toEqual([])
  })

  it('a settlement the store fails to read is skipped; the sweep goes on to the next', async () => {
    const cues = cueStore()
    await cues.base.put(doneKey(hashOf(1)), doneOf(1, 0))
    await cues.base.put(doneKey(hashOf(2)), doneOf(2, 0))
    cues.before = (op) => {
      if (op.op === 'get' && op.key === doneKey(hashOf(1))) throw new Error('unreadable')
    }
    expect(await sweepSettled(cues.store, undefined, 0)).toBeUndefined()
    expect((await cues.base.list('approvals/done/')).entries.map((entry) => entry.key)).toEqual([doneKey(hashOf(1))])
  })
})
