/**
 * What one `pending()` of a store lists and what it leaves in the store, record by record
 * (brief s54 mutation2: the survivors of the listing by expiry keys, ecd12f8 / 0801e61).
 * Records are written as another process (or an older version) leaves them: with or
 * without their expiry keys, expired, re-opened under a later expiry.
 */
import { randomBytes } from 'node:crypto'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createApprovalBroker, type PendingApproval } from '../../../src/approvals/index.js'
import { listOpen } from '../../../src/approvals/_store-list.js'
import { BY_EXPIRY_PREFIX, decodeOpen, encodeOpen, expiryKey, hashOfId, newApprovalId, OPEN_PREFIX, openKey } from '../../../src/approvals/_store-record.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import type { DurableStore } from '../../../src/durable/store.js'

afterEach(() => {
  vi.useRealTimers()
})

/** One real open record, as the broker writes it: the fields every seeded record starts from. */
async function template(): Promise<PendingApproval> {
  const store = createMemoryStore()
  const broker = createApprovalBroker({ store })
  const controller = new AbortController()
  const opened = new Promise<PendingApproval>((resolve) => {
    broker.subscribe((event) => {
      if (event.type === 'requested') resolve(event.approval)
    })
  })
  Promise.resolve(broker.handler({ execution: { callId: 'template', name: 'pay', arguments: { n: 1 }, signal: controller.signal } } as never)).catch(() => undefined)
  const approval = await opened
  const stored = await store.get(openKey(hashOfId(approval.id)!))
  controller.abort()
  await broker.dispose()
  return decodeOpen(stored!.value, hashOfId(approval.id)!)!
}

/** Writes an open record (and, unless `keyed` is false, its expiry key) as another process would. */
async function seed(store: DurableStore, base: PendingApproval, fields: Partial<PendingApproval>, keyed = true): Promise<PendingApproval> {
  const hash = (fields.id === undefined ? undefined : hashOfId(fields.id)) ?? randomBytes(16).toString('hex')
  const approval = { ...base, id: newApprovalId(hash), callId: `seed-${hash.slice(0, 8)}`, ...fields } as PendingApproval
  await store.put(openKey(hash), encodeOpen(approval)!)
  if (keyed) await store.put(expiryKey(approval.expiresAt, hash), '')
  return approval
}

const ids = (approvals: readonly PendingApproval[]) => approvals.map((approval) => approval.id)

describe('pending() of a store: which records, in what order, and what the store holds after', () => {
  it('records without expiry keys (the scan) are filtered by agent like the walked ones, and get their keys back', async () => {
    const base = await template()
    const store = createMemoryStore()
    const now = Date.now()
    const a = await seed(store, base, { agent: 'team-a', requestedAt: now - 2, expiresAt: now + 60_000 }, false)
    const b = await seed(store, base, { agent: 'team-b', requestedAt: now - 1, expiresAt: now + 60_000 }, false)
    const mine = await listOpen(store, 60_000, 'team-a')
    expect(ids(mine.approvals)).toEqual([a.id])
    expect(mine.listing).toEqual({ examined: 2, malformed: 0, truncated: false })
    // Both are unordered (whatever the agent): both get their expiry keys.
    expect((await store.list(BY_EXPIRY_PREFIX)).entries.map((entry) => entry.key).sort()).toEqual([expiryKey(a.expiresAt, hashOfId(a.id)!), expiryKey(b.expiresAt, hashOfId(b.id)!)].sort())
    expect((await store.get(expiryKey(a.expiresAt, hashOfId(a.id)!)))!.value).toBe('')
    expect(ids((await listOpen(store, 60_000, 'team-c')).approvals)).toEqual([])
    // Without an agent, every one (read by the scan: a fresh store of the same unkeyed records).
    const fresh = createMemoryStore()
    for (const approval of [a, b]) await fresh.put(openKey(hashOfId(approval.id)!), encodeOpen(approval)!)
    expect(ids((await listOpen(fresh, 60_000)).approvals)).toEqual([a.id, b.id])
  })

  it('requests asked in the same millisecond are listed by id, whatever order they expire in', async () => {
    const base = await template()
    const store = createMemoryStore()
    const now = Date.now()
    // 200, so the engine sorts by merges and not only by insertion.
    const hashes = Array.from({ length: 200 }, () => randomBytes(16).toString('hex')).sort()
    const seeded: PendingApproval[] = []
    // The walk reads them by expiry, an order unrelated to their ids.
    for (const hash of hashes) seeded.push(await seed(store, base, { id: newApprovalId(hash), requestedAt: now - 10, expiresAt: now + 60_000 + Math.floor(Math.random() * 10_000) }))
    const listed = await listOpen(store, 60_000)
    expect(ids(listed.approvals)).toEqual(ids(seeded))
  })

  it('an expired key naming a record re-opened under a later expiry: the key goes, the open record stays listed', async () => {
    const base = await template()
    const store = createMemoryStore()
    const now = Date.now()
    const live = await seed(store, base, { requestedAt: now - 5, expiresAt: now + 60_000 })
    const hash = hashOfId(live.id)!
    const old = expiryKey(now - 120_000, hash)
    await store.put(old, '')
    // And an expired key naming no record at all.
    const gone = expiryKey(now - 120_000, randomBytes(16).toString('hex'))
    await store.put(gone, '')
    const listed = await listOpen(store, 1000)
    expect(ids(listed.approvals)).toEqual([live.id])
    expect(await store.get(old)).toBeUndefined()
    expect(await store.get(gone)).toBeUndefined()
    expect(await store.get(openKey(hash))).toBeDefined()
    expect(await store.get(expiryKey(live.expiresAt, hash))).toBeDefined()
  })

  it('records past expiry and retention: ten removed per listing by their expiry keys, from the oldest, exactly at expiry + retention', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const now = 1_900_000_000_000
    vi.setSystemTime(now)
    const base = await template()
    const store = createMemoryStore()
    const retainMs = 1000
    const seeded: PendingApproval[] = []
    // The first expired exactly retainMs ago: due now (not one millisecond later).
    for (let i = 0; i < 12; i++) seeded.push(await seed(store, base, { requestedAt: now - 10_000, expiresAt: now - retainMs - i }))
    const listed = await listOpen(store, retainMs)
    expect(listed.approvals).toEqual([])
    expect(listed.listing).toEqual({ examined: 0, malformed: 0, truncated: false })
    // Oldest expiry first: the ten with the lowest expiresAt (i = 11 .. 2) are gone, records and keys.
    const left = (await store.list(OPEN_PREFIX)).entries.map((entry) => entry.key).sort()
    expect(left).toEqual([seeded[0]!, seeded[1]!].map((approval) => openKey(hashOfId(approval.id)!)).sort())
    expect((await store.list(BY_EXPIRY_PREFIX)).entries).toHaveLength(2)
    await listOpen(store, retainMs)
    expect((await store.list(OPEN_PREFIX)).entries).toEqual([])
    expect((await store.list(BY_EXPIRY_PREFIX)).entries).toEqual([])
  })

  it('an expired record within retention stays (it may still be answered), records past it go', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const now = 1_900_000_000_000
    vi.setSystemTime(now)
    const base = await template()
    const store = createMemoryStore()
    const kept = await seed(store, base, { requestedAt: now - 10_000, expiresAt: now - 999 })
    await listOpen(store, 1000)
    expect(await store.get(openKey(hashOfId(kept.id)!))).toBeDefined()
    expect(await store.get(expiryKey(kept.expiresAt, hashOfId(kept.id)!))).toBeDefined()
  })

  it('a garbage key among the expiry keys is skipped: the stale records after it are still removed', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const now = 1_900_000_000_000
    vi.setSystemTime(now)
    const base = await template()
    const store = createMemoryStore()
    await store.put(`${BY_EXPIRY_PREFIX}-not-a-key`, '')
    const stale = await seed(store, base, { requestedAt: now - 10_000, expiresAt: now - 5000 })
    const listed = await listOpen(store, 1000)
    expect(listed.listing).toEqual({ examined: 0, malformed: 0, truncated: false })
    expect(await store.get(openKey(hashOfId(stale.id)!))).toBeUndefined()
  })

  it('a request expiring this very millisecond is not listed, from either path', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const now = 1_900_000_000_000
    vi.setSystemTime(now)
    const base = await template()
    const store = createMemoryStore()
    await seed(store, base, { requestedAt: now - 10_000, expiresAt: now }, false)
    await seed(store, base, { requestedAt: now - 10_000, expiresAt: now })
    const listed = await listOpen(store, 60_000)
    expect(listed.approvals).toEqual([])
  })

  it('a request re-opened under a later expiry (its earlier key still ahead): listed once, the earlier key removed', async () => {
    const base = await template()
    const store = createMemoryStore()
    const now = Date.now()
    const live = await seed(store, base, { requestedAt: now - 5, expiresAt: now + 60_000 })
    const hash = hashOfId(live.id)!
    const earlier = expiryKey(now + 30_000, hash)
    await store.put(earlier, '')
    const listed = await listOpen(store, 60_000)
    expect(ids(listed.approvals)).toEqual([live.id])
    expect(await store.get(earlier)).toBeUndefined()
    expect(await store.get(expiryKey(live.expiresAt, hash))).toBeDefined()
  })

  it('300 keyed and 300 unkeyed requests: the walk is whole, the scan adds the rest; 500 listed, the oldest, truncated', async () => {
    const base = await template()
    const store = createMemoryStore()
    const now = Date.now()
    const seeded: PendingApproval[] = []
    for (let i = 0; i < 600; i++) seeded.push(await seed(store, base, { requestedAt: now - 1000 + i, expiresAt: now + 60_000 }, i % 2 === 0))
    const listed = await listOpen(store, 60_000)
    expect(ids(listed.approvals)).toEqual(ids(seeded.slice(0, 500)))
    expect(listed.listing).toEqual({ examined: 600, malformed: 0, truncated: true })
    // The unkeyed ones get their keys, 50 per listing.
    expect((await store.list(BY_EXPIRY_PREFIX, { limit: 1000 })).entries).toHaveLength(350)
  }, 30_000)

  it('a record removed between the scan listing its key and reading it (settled by another process) is skipped, the rest listed', async () => {
    const base = await template()
    const inner = createMemoryStore()
    const now = Date.now()
    const kept = await seed(inner, base, { requestedAt: now - 5, expiresAt: now + 60_000 }, false)
    const settled = await seed(inner, base, { requestedAt: now - 4, expiresAt: now + 60_000 }, false)
    const store: DurableStore = Object.assign(Object.create(inner) as DurableStore, {
      list: async (prefix: string, options?: never) => {
        const page = await inner.list(prefix, options)
        if (prefix === OPEN_PREFIX) await inner.delete(openKey(hashOfId(settled.id)!))
        return page
      },
    })
    const listed = await listOpen(store, 60_000)
    expect(ids(listed.approvals)).toEqual([kept.id])
    expect(listed.listing).toEqual({ examined: 2, malformed: 0, truncated: false })
  })

  it('a malformed record under an expiry key is counted once and skipped: the walk goes on to the next', async () => {
    const base = await template()
    const store = createMemoryStore()
    const now = Date.now()
    const garbage = randomBytes(16).toString('hex')
    await store.put(openKey(garbage), 'not a record')
    await store.put(expiryKey(now + 30_000, garbage), '')
    const live = await seed(store, base, { requestedAt: now - 5, expiresAt: now + 60_000 })
    const listed = await listOpen(store, 60_000)
    expect(ids(listed.approvals)).toEqual([live.id])
    // Not read again by the scan: two reads, one malformed.
    expect(listed.listing).toEqual({ examined: 2, malformed: 1, truncated: false })
  })

  it('a record the store refuses to read back counts as malformed and never fails the listing', async () => {
    const base = await template()
    const inner = createMemoryStore()
    const now = Date.now()
    const broken = await seed(inner, base, { requestedAt: now - 6, expiresAt: now + 60_000 })
    const kept = await seed(inner, base, { requestedAt: now - 5, expiresAt: now + 60_000 }, false)
    const store: DurableStore = Object.assign(Object.create(inner) as DurableStore, {
      get: async (key: string) => {
        if (key === openKey(hashOfId(broken.id)!)) throw new Error('corrupt')
        return inner.get(key)
      },
    })
    const listed = await listOpen(store, 60_000)
    expect(ids(listed.approvals)).toEqual([kept.id])
    expect(listed.listing).toEqual({ examined: 2, malformed: 1, truncated: false })
  })

  it('501 past the cap: the walk stops at the 501st read (1 over what is shown), truncated', async () => {
    const base = await template()
    const store = createMemoryStore()
    const now = Date.now()
    for (let i = 0; i < 530; i++) await seed(store, base, { requestedAt: now - 1000 + i, expiresAt: now + 60_000 + i })
    const listed = await listOpen(store, 60_000)
    expect(listed.approvals).toHaveLength(500)
    expect(listed.listing).toEqual({ examined: 501, malformed: 0, truncated: true })
  }, 30_000)

  it('60 leftover expiry keys and 60 unkeyed records past retention: 50 of each removed per listing', async () => {
    const base = await template()
    const store = createMemoryStore()
    const now = Date.now()
    for (let i = 0; i < 60; i++) await store.put(expiryKey(now + 60_000 + i, randomBytes(16).toString('hex')), '')
    for (let i = 0; i < 60; i++) await seed(store, base, { requestedAt: now - 20_000, expiresAt: now - 10_000 }, false)
    const listed = await listOpen(store, 1000)
    expect(listed.approvals).toEqual([])
    expect((await store.list(BY_EXPIRY_PREFIX, { limit: 1000 })).entries).toHaveLength(10)
    expect((await store.list(OPEN_PREFIX, { limit: 1000 })).entries).toHaveLength(10)
    await listOpen(store, 1000)
    expect((await store.list(BY_EXPIRY_PREFIX, { limit: 1000 })).entries).toEqual([])
    expect((await store.list(OPEN_PREFIX, { limit: 1000 })).entries).toEqual([])
  }, 30_000)

  it('8 MiB of record text read: the listing stops there (128 garbage records of 64 KiB), truncated', async () => {
    const store = createMemoryStore({ maxValueBytes: 1024 * 1024 })
    for (let i = 0; i < 130; i++) await store.put(openKey(randomBytes(16).toString('hex')), 'x'.repeat(64 * 1024))
    const listed = await listOpen(store, 60_000)
    expect(listed.approvals).toEqual([])
    expect(listed.listing).toEqual({ examined: 128, malformed: 128, truncated: true })
  }, 30_000)
})
