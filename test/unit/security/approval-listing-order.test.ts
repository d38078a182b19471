/**
 * `pending()` lists the requests that wait longest, whatever their hashes (brief s54
 * "listing", item 4). It read up to 1,000 open records in key (hash) order and sorted those:
 * with more than 1,000 open (six principals at their bound of 200), the listing held the
 * oldest of a random subset, not the oldest. Now it walks expiry keys
 * (`approvals/exp/<expiry>-<hash>`) from now on, and a repair page puts back the key of an
 * open record that lacks one (written before these keys existed, or by a process that died
 * between its two writes).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createApprovalBroker, MAX_LISTED_APPROVALS, type ApprovalBroker, type PendingApproval } from '../../../src/approvals/index.js'
import { BY_EXPIRY_PREFIX, expiryKey, hashOfId } from '../../../src/approvals/_store-record.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { createFileStore } from '../../../platforms/node/index.js'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

let seq = 0
/** Opens `count` requests one after the other through the broker's public handler; answers them as opened, and the calls' cancel. */
async function openMany(broker: ApprovalBroker, count: number): Promise<{ opened: PendingApproval[]; cancel: () => void }> {
  const controllers: AbortController[] = []
  const opened: PendingApproval[] = []
  const stop = broker.subscribe((event) => {
    if (event.type === 'requested') opened.push(event.approval)
  })
  for (let i = 0; i < count; i++) {
    const controller = new AbortController()
    controllers.push(controller)
    const execution = { callId: `order-${++seq}`, name: 'pay', arguments: { n: seq }, signal: controller.signal }
    Promise.resolve(broker.handler({ execution } as never)).catch(() => undefined)
    // Each asked after the last opened: the first is the oldest.
    while (opened.length <= i) await new Promise((resolve) => setTimeout(resolve, 0))
  }
  stop()
  return { opened, cancel: () => controllers.forEach((controller) => controller.abort()) }
}

const byAge = (a: PendingApproval, b: PendingApproval) => a.requestedAt - b.requestedAt || (a.id < b.id ? -1 : 1)

async function oldestListed(store: DurableStore, count: number): Promise<void> {
  const broker = createApprovalBroker({ store })
  const { opened, cancel } = await openMany(broker, count)
  const listed = await broker.pending()
  // Before: the oldest 500 of the first 1,000 hashes (the oldest request missing in most runs), truncated.
  expect(listed.map((approval) => approval.id)).toEqual([...opened].sort(byAge).slice(0, MAX_LISTED_APPROVALS).map((approval) => approval.id))
  expect(listed.listing).toMatchObject({ truncated: true, malformed: 0 })
  // Read only what it shows, and one more (the walk stops at the 501st): not 1,000.
  expect(listed.listing!.examined).toBeLessThanOrEqual(MAX_LISTED_APPROVALS + 1 + 20)
  cancel()
  await broker.dispose()
}

describe('pending() lists the oldest requests, not the oldest of a subset', () => {
  it('1,200 open in a memory store: the 500 oldest, in order', async () => {
    await oldestListed(createMemoryStore(), 1200)
  }, 60_000)

  it('a file store lists by its expiry keys too (60 open, all in order; 1,050 took 16 s here, so the bound is the memory case)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolyard-listing-'))
    dirs.push(dir)
    const store = createFileStore(dir)
    const broker = createApprovalBroker({ store })
    const { opened, cancel } = await openMany(broker, 60)
    const listed = await broker.pending()
    expect(listed.map((approval) => approval.id)).toEqual([...opened].sort(byAge).map((approval) => approval.id))
    expect(listed.listing).toEqual({ examined: 60, malformed: 0, truncated: false })
    expect((await store.list(BY_EXPIRY_PREFIX)).entries).toHaveLength(60)
    cancel()
    await broker.dispose()
  }, 60_000)

  it('an open record without its expiry key (an older version wrote it) is listed, and gets its key back; its leftover key goes with it when decided', async () => {
    const store = createMemoryStore()
    const broker = createApprovalBroker({ store })
    const { opened, cancel } = await openMany(broker, 3)
    const [first] = opened
    const key = expiryKey(first!.expiresAt, hashOfId(first!.id)!)
    expect((await store.delete(key)).ok).toBe(true)
    // The repair page of the listing reads it (hash order), lists it and writes its key again.
    expect((await broker.pending()).map((approval) => approval.id)).toEqual(opened.map((approval) => approval.id))
    expect(await store.get(key)).toBeDefined()
    expect((await broker.decide(first!.id, { decision: 'deny' })).ok).toBe(true)
    expect(await store.get(key)).toBeUndefined()
    expect((await store.list(BY_EXPIRY_PREFIX)).entries).toHaveLength(2)
    cancel()
    await broker.dispose()
    // Withdrawn: no key is left behind.
    await expect.poll(async () => (await store.list(BY_EXPIRY_PREFIX)).entries.length).toBe(0)
  })

  it('1,050 requests left open and expired by a disposed broker: a new request is listed, the listing whole, 1,000 of the expired records unread', async () => {
    const store = createMemoryStore()
    const gone = createApprovalBroker({ store, timeoutMs: 4000 })
    const controller = new AbortController()
    const opened = new Promise<void>((resolve) => {
      let left = 1050
      gone.subscribe((event) => {
        if (event.type === 'requested' && --left === 0) resolve()
      })
    })
    for (let i = 0; i < 1050; i++) {
      const execution = { callId: `expired-${i}`, name: 'pay', arguments: { i }, signal: controller.signal }
      Promise.resolve(gone.handler({ execution } as never)).catch(() => undefined)
    }
    await opened
    // Every one opened by now, so expired 4 s from now.
    const last = Date.now() + 4000
    // Disposed: its requests stay open in the store (for another process), and expire there unsettled.
    await gone.dispose()
    while (Date.now() <= last + 1) await new Promise((resolve) => setTimeout(resolve, 50))
    const broker = createApprovalBroker({ store })
    const { opened: [fresh], cancel } = await openMany(broker, 1)
    const listed = await broker.pending()
    expect(listed.map((approval) => approval.id)).toEqual([fresh!.id])
    // Before: the scan read the expired records in hash order, reached 1,000 and said truncated: true. Now the first
    // 1,000 expiry keys before now are listed (keys only) and their records skipped: the fresh one and 50 are read.
    expect(listed.listing).toEqual({ examined: 51, malformed: 0, truncated: false })
    cancel()
    await broker.dispose()
  }, 60_000)

  it('an expiry key naming no open record (its writer died after removing the record) is removed by the listing', async () => {
    const store = createMemoryStore()
    const broker = createApprovalBroker({ store })
    const orphan = expiryKey(Date.now() + 60_000, 'a'.repeat(32))
    await store.put(orphan, '')
    expect(await broker.pending()).toEqual([])
    expect(await store.get(orphan)).toBeUndefined()
    await broker.dispose()
  })
})
