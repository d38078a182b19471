/**
 * A store broker's poll over settlement markers (src/approvals/_store-markers.ts): a pass
 * without decisions reads no settlement key whatever the number of open requests, a decision
 * in another broker still settles this one's call, a settlement without a marker is found
 * by the full pass, markers timed by a clock behind ours (within the window) are found, and
 * old markers are pruned. Stores are real (memory, file); a wrapper counts their calls.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createFileStore } from '../../../platforms/node/file-store.js'
import { FULL_PASS_EVERY_MS, MARKER_RETAIN_MS, MARKER_SKEW_MS } from '../../../src/approvals/_store-markers.js'
import { markerKey, readMarkerKey, SETTLED_PREFIX } from '../../../src/approvals/_store-record.js'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { ApprovalBroker, PendingApproval } from '../../../src/approvals/index.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { until } from '../../support/poll.js'

const POLL_MS = 20
const brokers: ApprovalBroker[] = []
const dirs: string[] = []
afterEach(async () => {
  vi.useRealTimers()
  for (const b of brokers.splice(0)) await b.dispose()
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function broker(store: DurableStore): ApprovalBroker {
  const b = createApprovalBroker({ store, pollIntervalMs: POLL_MS, timeoutMs: 3_600_000 })
  brokers.push(b)
  return b
}

/** `store` with its calls counted; `putKey` may rewrite (or drop, answering `undefined`) a key written. */
function counting(store: DurableStore, putKey: (key: string) => string | undefined = (key) => key) {
  const counts = { get: 0, list: 0, keysRead: new Set<string>() }
  const counted: DurableStore = {
    get: (key) => (counts.get++, counts.keysRead.add(key), store.get(key)),
    put: (key, value, options) => {
      const written = putKey(key)
      return written === undefined ? Promise.resolve({ ok: true, version: 'dropped' }) : store.put(written, value, options)
    },
    delete: (key, options) => store.delete(key, options),
    list: (prefix, options) => (counts.list++, store.list(prefix, options)),
  }
  return { counted, counts }
}

let seq = 0
/** Asks `b` as the registry does: the request once open, and the call's outcome. */
function ask(b: ApprovalBroker): { opened: Promise<PendingApproval>; outcome: Promise<string> } {
  const callId = `marker-${++seq}`
  const opened = new Promise<PendingApproval>((resolve) => {
    const stop = b.subscribe((event) => {
      if (event.type !== 'requested' || event.approval.callId !== callId) return
      stop()
      resolve(event.approval)
    })
  })
  const execution = { callId, name: 'pay', arguments: { cents: 5 }, signal: new AbortController().signal }
  const outcome = Promise.resolve(b.handler({ execution, reason: 'moves money' } as never)).then(
    () => 'allowed',
    (error: unknown) => `denied: ${(error as Error).message}`,
  )
  return { opened, outcome }
}

async function openMany(b: ApprovalBroker, n: number): Promise<void> {
  for (let i = 0; i < n; i += 250) await Promise.all(Array.from({ length: Math.min(250, n - i) }, () => ask(b).opened))
}

/** Waits until `counts` saw `passes` more listings (one per poll pass). */
async function passes(counts: { list: number }, n: number): Promise<void> {
  const from = counts.list
  await until(() => counts.list >= from + n, `${n} poll passes`)
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'toolyard-markers-'))
  dirs.push(dir)
  return dir
}

describe('store broker: a poll pass reads what was decided since, not every open request', () => {
  it('1,000 open requests and no decision: 10 passes read no settlement key (memory store)', async () => {
    const { counted, counts } = counting(createMemoryStore())
    const a = broker(counted)
    await openMany(a, 1000)
    await passes(counts, 2)
    const gets = counts.get
    await passes(counts, 10)
    // Was: one read per open request per pass (10,000 here).
    expect(counts.get - gets).toBe(0)
  })

  it.each(['memory', 'file'])('a decision in broker B settles broker A\'s call within a few passes, reading only its key (%s store)', async (kind) => {
    const dir = kind === 'file' ? tempDir() : ''
    const shared = kind === 'file' ? undefined : createMemoryStore()
    const open = (): DurableStore => shared ?? createFileStore(dir)
    const { counted, counts } = counting(open())
    const a = broker(counted)
    const b = broker(open())
    await openMany(a, kind === 'file' ? 200 : 1000)
    const { opened, outcome } = ask(a)
    const request = await opened
    await passes(counts, 2)
    const gets = counts.get
    const lists = counts.list
    counts.keysRead.clear()
    expect(await b.decide(request.id, { decision: 'allow' })).toMatchObject({ ok: true })
    expect(await outcome).toBe('allowed')
    // Only the decided request's keys are read (its settlement and its open record), a few reads
    // a pass: again while a pass lists the marker before the settlement lands, which on a loaded
    // machine can span several 20 ms passes. Was: every open request's key, every pass.
    const hash = request.id.slice(0, 32)
    expect([...counts.keysRead].filter((key) => !key.endsWith(`/${hash}`))).toEqual([])
    expect(counts.get - gets).toBeLessThanOrEqual(3 * Math.max(1, counts.list - lists))
    const markers = (await counted.list(SETTLED_PREFIX)).entries.map((entry) => readMarkerKey(entry.key)?.hash)
    expect(markers).toContain(request.id.slice(0, 32))
  })

  it('a settlement whose marker was lost is found by the full pass, not before', async () => {
    const store = createMemoryStore()
    const { counted, counts } = counting(store)
    const a = broker(counted)
    // B's markers are lost (a crash between the marker and the settlement cannot do this: the marker is written first).
    const b = broker(counting(store, (key) => (key.startsWith(SETTLED_PREFIX) ? undefined : key)).counted)
    const { opened, outcome } = ask(a)
    const request = await opened
    let answer: string | undefined
    void outcome.then((value) => (answer = value))
    expect(await b.decide(request.id, { decision: 'deny', reason: 'no' })).toMatchObject({ ok: true })
    await passes(counts, 10)
    expect(answer).toBeUndefined()
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(Date.now() + FULL_PASS_EVERY_MS + 1000)
    expect(await outcome).toBe('denied: pay was denied by a person: no')
  })

  it(`markers timed by a clock up to ${MARKER_SKEW_MS} ms behind are found; further behind, by the full pass`, async () => {
    const store = createMemoryStore()
    const { counted, counts } = counting(store)
    const a = broker(counted)
    await openMany(a, 200)
    const behind = (ms: number) =>
      broker(counting(store, (key) => {
        const marker = readMarkerKey(key)
        return marker === undefined ? key : markerKey(marker.at - ms, marker.hash)
      }).counted)
    const near = ask(a)
    const far = ask(a)
    const [nearRequest, farRequest] = await Promise.all([near.opened, far.opened])
    // A's listing has moved on past the moment these were asked.
    await new Promise((resolve) => setTimeout(resolve, 300))
    await passes(counts, 2)
    let farAnswer: string | undefined
    void far.outcome.then((value) => (farAnswer = value))
    const gets = counts.get
    expect(await behind(MARKER_SKEW_MS - 1500).decide(nearRequest.id, { decision: 'allow' })).toMatchObject({ ok: true })
    expect(await near.outcome).toBe('allowed')
    expect(counts.get - gets).toBeLessThanOrEqual(4)
    expect(await behind(MARKER_SKEW_MS + 2000).decide(farRequest.id, { decision: 'allow' })).toMatchObject({ ok: true })
    await passes(counts, 10)
    expect(farAnswer).toBeUndefined()
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(Date.now() + FULL_PASS_EVERY_MS + 1000)
    expect(await far.outcome).toBe('allowed')
  })

  it(`markers older than ${MARKER_RETAIN_MS} ms are pruned (a page at a time), newer ones kept`, async () => {
    const store = createMemoryStore()
    const now = Date.now()
    const hash = (i: number) => i.toString(16).padStart(32, '0')
    for (let i = 0; i < 150; i++) await store.put(markerKey(now - MARKER_RETAIN_MS - 60_000 + i, hash(i)), '')
    await store.put(markerKey(now - MARKER_RETAIN_MS + 60_000, hash(999)), '')
    await store.put(`${SETTLED_PREFIX}not-a-marker`, '')
    const a = broker(store)
    ask(a)
    await until(async () => (await store.list(SETTLED_PREFIX, { limit: 1000 })).entries.length === 2, 'the old markers pruned')
    expect((await store.list(SETTLED_PREFIX)).entries.map((entry) => entry.key)).toEqual([markerKey(now - MARKER_RETAIN_MS + 60_000, hash(999)), `${SETTLED_PREFIX}not-a-marker`])
  })
})
