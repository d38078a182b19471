/**
 * `runtime.runs.follow()` in process (src/durable/run-service.ts; issue 38 item 4): the events
 * of a run this process does not hold, read from the store's snapshot and polled until the
 * run's record ends or this process adopts the run; the follower cap; a store that fails on
 * cue; a watchable store whose followers close when the record settles.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { resolveRunServiceOptions, RunService } from '../../../src/durable/run-service.js'
import { DurableRuns } from '../../../src/durable/runs.js'
import { createRunEventLog, createStoreRunEvents, EVENT_ID_RESERVE } from '../../../src/durable/run-table.js'
import type { RunEventLog, RunRecordJson } from '../../../src/durable/run-table.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { cueStore } from '../../support/cue-store.js'
import { until } from '../../support/poll.js'
import { FIRST_CALL_NUMBERING, parkedState } from '../../support/parked-run.js'

afterEach(() => {
  vi.useRealTimers()
})

const record = (over: Partial<RunRecordJson> = {}): RunRecordJson => ({ id: 'x', callId: 'http-run-x', status: 'running', createdAt: 1, events: { first: 1, last: 7, dropped: 6, next: 7 }, ...over })

const stops: (() => void)[] = []
afterEach(() => {
  for (const stop of stops.splice(0)) stop()
})

function serviceOn(store: DurableStore, options: Parameters<typeof resolveRunServiceOptions>[0] = { resumeEveryMs: 0 }) {
  const durable = new DurableRuns(store)
  stops.push(() => durable.close())
  return new RunService(store, durable, async () => [], resolveRunServiceOptions(options))
}

const none = (): RunEventLog | undefined => undefined

describe('follow(): a run this process does not hold', () => {
  it('answers undefined without a store, for an unknown run, and for one that is not running; none of them counts', async () => {
    const bare = new RunService(undefined, undefined, async () => [], resolveRunServiceOptions(undefined))
    expect(await bare.follow('x', 4096, none)).toBeUndefined()
    const cues = cueStore()
    const service = serviceOn(cues.store)
    expect(await service.follow('x', 4096, none)).toBeUndefined()
    for (const status of ['done', 'failed', 'cancelled'] as const) {
      await service.records!.put(record({ status }))
      expect(await service.follow('x', 4096, none)).toBeUndefined()
    }
    expect(service.followers).toBe(0)
    expect(service.live).toBeUndefined()
  })

  it('no snapshot: an empty log whose ids continue after the record’s last; a snapshot: its frames, under their ids', async () => {
    const cues = cueStore()
    const service = serviceOn(cues.store)
    await service.records!.put(record())
    const followed = (await service.follow('x', 4096, none, 60_000))!
    stops.push(followed.stop)
    expect(followed.id).toBe('x')
    expect(followed.events.last).toBe(7)
    expect(followed.events.since(0).frames).toEqual([])
    expect(followed.events.closed).toBe(false)
    followed.stop()
    // A record that names no bound: its process may have given a reserve of ids more, skipped here.
    await service.records!.put(record({ events: { first: 1, last: 7, dropped: 6 } }))
    const unbound = (await service.follow('x', 4096, none, 60_000))!
    stops.push(unbound.stop)
    expect(unbound.events.since(7)).toMatchObject({ gap: { first: 8, last: 7 + EVENT_ID_RESERVE }, reserved: { first: 8, last: 7 + EVENT_ID_RESERVE } })
    unbound.stop()
    const log = createRunEventLog(4096)
    log.append('message', { n: 1 })
    log.append('message', { n: 2 })
    await createStoreRunEvents(cues.store, 4096).put('x', log)
    const snap = (await service.follow('x', 4096, none, 60_000))!
    stops.push(snap.stop)
    expect(snap.events.since(0).frames.map((f) => f.id)).toEqual([1, 2])
    expect(snap.events.since(0).frames[1]!.text).toContain('"n":2')
  })

  it('counts each follower until it stops (stop is idempotent); past runs.maxFollowers: OVERLOADED, with the figures', async () => {
    const cues = cueStore()
    const service = serviceOn(cues.store, { resumeEveryMs: 0, maxFollowers: 2 })
    await service.records!.put(record())
    const one = (await service.follow('x', 4096, none, 60_000))!
    const two = (await service.follow('x', 4096, none, 60_000))!
    expect(service.followers).toBe(2)
    await expect(service.follow('x', 4096, none, 60_000)).rejects.toMatchObject({
      code: 'OVERLOADED',
      message: 'this process follows 2 runs from the store (runs.maxFollowers 2); close an events stream or retry later',
    })
    expect(service.followers).toBe(2)
    one.stop()
    one.stop()
    expect(service.followers).toBe(1)
    const three = (await service.follow('x', 4096, none, 60_000))!
    expect(service.followers).toBe(2)
    two.stop()
    three.stop()
    expect(service.followers).toBe(0)
    const closed = serviceOn(cues.store, { resumeEveryMs: 0, maxFollowers: 0 })
    await expect(closed.follow('x', 4096, none, 60_000)).rejects.toMatchObject({ code: 'OVERLOADED' })
    expect(closed.followers).toBe(0)
  })

  it('the slot is taken before the first await: concurrent follows cannot pass the cap together', async () => {
    const cues = cueStore()
    const service = serviceOn(cues.store, { resumeEveryMs: 0, maxFollowers: 1 })
    await service.records!.put(record())
    const both = await Promise.allSettled([service.follow('x', 4096, none, 60_000), service.follow('x', 4096, none, 60_000)])
    expect(both.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected'])
    for (const r of both) if (r.status === 'fulfilled') r.value!.stop()
    expect(service.followers).toBe(0)
  })

  it('a snapshot the store fails to read: the follow rejects as the store did, and its slot is given back', async () => {
    const cues = cueStore()
    const service = serviceOn(cues.store, { resumeEveryMs: 0, maxFollowers: 1 })
    await service.records!.put(record())
    cues.before = (op) => {
      if (op.op === 'get' && op.key === 'run-events/x') throw new Error('disk gone')
    }
    await expect(service.follow('x', 4096, none, 60_000)).rejects.toThrow('disk gone')
    expect(service.followers).toBe(0)
    cues.before = undefined
    const followed = (await service.follow('x', 4096, none, 60_000))!
    expect(service.followers).toBe(1)
    followed.stop()
  })

  it('polls the record: once it settles, an end frame with its status closes the log; a failed poll is retried', async () => {
    const cues = cueStore()
    const service = serviceOn(cues.store)
    await service.records!.put(record())
    const followed = (await service.follow('x', 4096, none, 2))!
    stops.push(followed.stop)
    let failures = 0
    cues.before = (op) => {
      if (op.op === 'get' && op.key === 'runs/http-run-x' && failures < 2) {
        failures++
        throw new Error('flaky')
      }
    }
    await until(() => failures === 2, 'two failed polls')
    expect(followed.events.closed).toBe(false)
    await service.records!.put(record({ status: 'failed', settledAt: 2 }))
    await until(() => followed.events.closed, 'the log to close')
    const frames = followed.events.since(0).frames
    expect(frames.map((f) => f.id)).toEqual([8])
    expect(frames[0]!.text).toBe('event: end\nid: 8\ndata: {"id":"x","status":"failed"}\n\n')
    // Closed: no more polls read the record.
    cues.ops.length = 0
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(cues.ops.filter((o) => o.key === 'runs/http-run-x')).toEqual([])
  })

  it('a record that goes away is no end: the reader keeps the stored log open', async () => {
    const cues = cueStore()
    const service = serviceOn(cues.store)
    await service.records!.put(record())
    const followed = (await service.follow('x', 4096, none, 2))!
    stops.push(followed.stop)
    await service.records!.delete('x')
    const reads = cues.ops.length
    await until(() => cues.ops.length > reads + 3, 'a few polls')
    expect(followed.events.closed).toBe(false)
  })

  it("adopted here meanwhile: the reader goes on from this process's own log, the stored one closes, polling stops", async () => {
    const cues = cueStore()
    const service = serviceOn(cues.store)
    await service.records!.put(record())
    let local: RunEventLog | undefined
    const followed = (await service.follow('x', 4096, () => local, 2))!
    stops.push(followed.stop)
    const stored = followed.events
    local = createRunEventLog(4096)
    local.append('message', { here: true })
    await until(() => followed.events === local, 'the adopted log')
    expect(stored.closed).toBe(true)
    expect(stored.since(0).frames).toEqual([])
    expect(local.closed).toBe(false)
    // Settled afterwards: the adopted log is this process's to end, the poll no longer reads.
    await service.records!.put(record({ status: 'done' }))
    cues.ops.length = 0
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(cues.ops.filter((o) => o.op === 'get' && o.key === 'runs/http-run-x')).toEqual([])
    expect(local.closed).toBe(false)
  })

  it('adopted between the poll’s read and its check: no end frame is written to the stored log', async () => {
    const cues = cueStore()
    const service = serviceOn(cues.store)
    await service.records!.put(record())
    let local: RunEventLog | undefined
    const followed = (await service.follow('x', 4096, () => local, 2))!
    stops.push(followed.stop)
    const stored = followed.events
    await service.records!.put(record({ status: 'done' }))
    const adopted = createRunEventLog(4096)
    cues.after = (op) => {
      if (op.op === 'get' && op.key === 'runs/http-run-x') local = adopted
    }
    await until(() => followed.events === adopted, 'the adopted log')
    expect(stored.since(0).frames).toEqual([])
    expect(adopted.since(0).frames).toEqual([])
  })
})

describe('follow() over a watchable store', () => {
  /** A memory store with a no-op `watch` (the polls carry the test): live events are on. */
  function watchable() {
    const cues = cueStore()
    const store = Object.assign(cues.store, { watch: () => () => {} })
    return { cues, store }
  }

  it('a follower closes when the record leaves running (polled every second), not before', async () => {
    vi.useFakeTimers()
    const { store } = watchable()
    const service = serviceOn(store)
    expect(service.live).toBeDefined()
    await service.records!.put(record())
    const followed = (await service.follow('x', 4096, none))!
    stops.push(followed.stop)
    expect(service.followers).toBe(1)
    await vi.advanceTimersByTimeAsync(3_000)
    expect(followed.events.closed).toBe(false)
    await service.records!.put(record({ status: 'cancelled' }))
    await vi.advanceTimersByTimeAsync(1_000)
    expect(followed.events.closed).toBe(true)
    followed.stop()
    expect(service.followers).toBe(0)
  })

  it('a record that is gone counts as ended too', async () => {
    vi.useFakeTimers()
    const { store } = watchable()
    const service = serviceOn(store)
    await service.records!.put(record())
    const followed = (await service.follow('x', 4096, none))!
    stops.push(followed.stop)
    await service.records!.delete('x')
    await vi.advanceTimersByTimeAsync(1_000)
    expect(followed.events.closed).toBe(true)
  })
})

describe('runtime.runs: what it asks of its durable runs', () => {
  it('taken() is the durable runs’ fence, false without a store', async () => {
    expect(new RunService(undefined, undefined, async () => [], resolveRunServiceOptions(undefined)).taken('r')).toBe(false)
    const cues = cueStore()
    const a = new DurableRuns(cues.store)
    const service = new RunService(cues.store, a, async () => [], resolveRunServiceOptions({ resumeEveryMs: 0 }))
    stops.push(() => a.close())
    const run = a.forRun('r', undefined, { code: 'c', description: 'd' })
    run.onPark({ version: 1, vm: { clockMs: 0, timers: [], journal: { inputs: [], reads: [], ops: '', calls: [] } }, logs: [], logBytes: 0, logTruncated: false, busyMs: 0, wallMs: 0, lastCallId: 0, calls: [] } as never, { submitted: 0, calls: [] })
    await a.flushed()
    const b = new DurableRuns(cues.store)
    stops.push(() => b.close())
    await b.resumeAll(async () => undefined, { staleMs: 0 })
    expect(service.taken('r')).toBe(false)
    run.onPark({ version: 1, vm: { clockMs: 0, timers: [], journal: { inputs: [], reads: [], ops: '', calls: [] } }, logs: [], logBytes: 0, logTruncated: false, busyMs: 0, wallMs: 0, lastCallId: 0, calls: [] } as never, { submitted: 0, calls: [] })
    await a.flushed()
    expect(service.taken('r')).toBe(true)
  })

  it('parked() answers false when the store cannot say', async () => {
    const cues = cueStore()
    const service = serviceOn(cues.store)
    await cues.base.put('runs/r', JSON.stringify({ version: 1, callId: 'r', park: { code: 'c', description: 'd', state: parkedState('pay'), numbering: FIRST_CALL_NUMBERING } }))
    expect(await service.parked('r')).toBe(true)
    cues.before = () => {
      throw new Error('down')
    }
    expect(await service.parked('r')).toBe(false)
  })
})
