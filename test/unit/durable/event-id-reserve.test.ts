/**
 * The event-id reserve across processes (issue 38, the EVENT_IDS_RESERVED bug): whatever way a
 * run is left for the next process (parked with a waiting snapshot still queued, a process
 * that dies before its snapshot lands, one that dies right after it took the run up), no id a
 * client could read there names another frame in the next process, and a clean park costs no gap.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { BackgroundRunSources, BackgroundRunSpec } from '../../../src/durable/background-runs.js'
import { EVENT_ID_RESERVE } from '../../../src/durable/background-runs.js'
import { resolveRunServiceOptions, RunService } from '../../../src/durable/run-service.js'
import { DurableRuns, parkedIn, runKeySegment } from '../../../src/durable/runs.js'
import type { ResumedRun } from '../../../src/durable/runs.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import { createRunEventLog, MAX_RESTORED_EVENT_ID, resolveRunTableOptions, restoredEvents } from '../../../src/durable/run-table.js'
import type { RunRecordJson, TableRun } from '../../../src/durable/run-table.js'
import type { DurableStore } from '../../../src/durable/store.js'
import type { ToolExecutionResult } from '../../../src/types.js'
import { until } from '../../support/poll.js'
import { createStoreRunRecords } from '../../../src/durable/runs.js'
import { FIRST_CALL_NUMBERING, parkedState } from '../../support/parked-run.js'

const CALL = 'http-run-1'
const failed: ToolExecutionResult = { isError: true, error: { message: 'the runtime is shutting down', info: { name: 'ToolError', code: 'DISPOSED' } }, content: [] }

const services: { close(): void }[] = []
afterEach(() => {
  for (const service of services.splice(0)) service.close()
})

/**
 * One process's view of a shared store: writes whose key matches `hold` wait until `release`;
 * `die()` is a kill -9: what it had not written never lands, and it reads and writes nothing more.
 */
function processView(base: DurableStore) {
  let dead = false
  let hold: ((key: string) => boolean) | undefined
  const held: (() => void)[] = []
  const never = new Promise<never>(() => {})
  const gate = async (key: string): Promise<void> => {
    if (hold?.(key) === true) await new Promise<void>((resolve) => held.push(resolve))
    if (dead) await never
  }
  const store: DurableStore = {
    get: async (key) => (dead ? never : base.get(key)),
    list: async (prefix, options) => (dead ? never : base.list(prefix, options)),
    put: async (key, value, options) => (await gate(key), base.put(key, value, options)),
    delete: async (key, options) => (await gate(key), base.delete(key, options)),
  }
  return {
    store,
    held: () => held.length,
    hold: (match: (key: string) => boolean) => void (hold = match),
    release: () => {
      hold = undefined
      for (const resolve of held.splice(0)) resolve()
    },
    die: () => void (dead = true),
  }
}

/** A process on `store`: its runs' service and table, the live events it forwards to its runs. */
function processOn(store: DurableStore) {
  const durable = new DurableRuns(store)
  const service = new RunService(store, durable, async () => [], resolveRunServiceOptions({ resumeEveryMs: 0 }))
  services.push(service, durable)
  const listeners = new Map<string, (event: string, data: unknown) => void>()
  const reported: unknown[] = []
  const sources: BackgroundRunSources = {
    subscribe: (callId, append) => (listeners.set(callId, append), () => void listeners.delete(callId)),
    approvals: async () => (callId) => (callId === CALL ? [{ callId: `${CALL}:code:1` }] : []) as never,
    shutdown: undefined,
    report: (error) => void reported.push(error),
  }
  const runs = service.table(resolveRunTableOptions({}, (message) => { throw new Error(message) }), sources)
  // The runtime parks the run: its parked state lands in the run's record, in the run's write order.
  const park = async (): Promise<void> => {
    durable.forRun(CALL, undefined, { code: 'c', description: 'd' }).onPark(parkedState('pay'), FIRST_CALL_NUMBERING)
    await durable.flushed()
  }
  return { service, runs, reported, park, emit: (event: string, data: unknown) => listeners.get(CALL)?.(event, data) }
}

/** A run whose execution ends when the test says. */
function spec() {
  let finish: (result: ToolExecutionResult) => void = () => {}
  const s: BackgroundRunSpec = { callId: CALL, agent: undefined, principal: 'p', start: { callId: CALL }, execute: () => new Promise((resolve) => (finish = resolve)) }
  return { spec: s, finish: (result: ToolExecutionResult) => finish(result) }
}

/** The run as `runtime.resumeRuns()` hands it to the next process (its execution never ends here). */
const resumed = (): ResumedRun => ({ callId: CALL, result: new Promise(() => {}), cancel: () => {} })

/** Run `id` as process `p` took it up: admitted to its table by `adopt`. */
async function adoptIn(p: ReturnType<typeof processOn>, id: string): Promise<TableRun> {
  expect(await p.service.adopt([resumed()])).toMatchObject({ adopted: 1 })
  return p.runs.get(id)!
}

const ids = (run: TableRun): number[] => run.events.since(0).frames.map((frame) => frame.id)

describe('the event-id reserve: every way a run is left for the next process', () => {
  it('parked while its waiting snapshot is still queued: the next process goes on right after the last frame, no reserved gap', async () => {
    const base = createMemoryStore()
    const a = processView(base)
    const pa = processOn(a.store)
    const s = spec()
    const { run, driven } = (await pa.runs.start(s.spec))!
    await until(async () => (await createStoreRunRecords(base).get(run.id)) !== undefined, 'the start record')
    // The waiting snapshot's write is slow: the park waits for it (it never lands before the frames it covers).
    a.hold((key) => key.startsWith('run-events/'))
    pa.emit('approval', { callId: `${CALL}:code:1` })
    pa.emit('dispatch', { subCallId: `${CALL}:code:1`, outcome: 'cut off by the shutdown' })
    const parking = pa.park()
    await until(() => (a.held() > 0 ? true : undefined), 'the snapshot write')
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(await parkedIn(base, CALL)).toBe(false)
    a.release()
    await parking
    expect(await parkedIn(base, CALL)).toBe(true)
    // The shutdown ends the call after the park landed (runtime.dispose flushes the parks first): the final snapshot, exact.
    s.finish(failed)
    await driven
    expect(ids(run)).toEqual([1, 2])
    await pa.service.drained()

    const next = await adoptIn(processOn(base), run.id)
    expect(next.events.since(2)).toMatchObject({ frames: [{ id: 3 }] })
    expect(next.events.since(2).gap).toBeUndefined()
  })

  it('a process that dies before its first waiting snapshot lands: the next process skips the reserve (read from the store, then adopted)', async () => {
    const base = createMemoryStore()
    const a = processView(base)
    const pa = processOn(a.store)
    const { run } = (await pa.runs.start(spec().spec))!
    await until(async () => (await createStoreRunRecords(base).get(run.id)) !== undefined, 'the start record')
    a.hold((key) => key.startsWith('run-events/'))
    pa.emit('log', { line: 'seen by a client' })
    pa.emit('approval', { callId: `${CALL}:code:1` })
    await until(() => a.held() > 0, 'the snapshot write')
    a.die()
    // It had parked the run (its parked state beside the view in its record).
    const key = `runs/${runKeySegment(CALL)}`
    await base.put(key, JSON.stringify({ ...(JSON.parse((await base.get(key))!.value) as object), park: { code: 'c', description: 'd', state: parkedState('pay'), numbering: FIRST_CALL_NUMBERING } }))
    const seen = run.events.last
    expect(seen).toBe(3)

    const pb = processOn(base)
    // Before the adoption: read from the store, its ids go on past every id the dead process gave.
    const followed = (await pb.runs.follow(run.id))!
    expect(followed.events.last).toBeGreaterThanOrEqual(seen + EVENT_ID_RESERVE / 2)
    expect(followed.events.since(seen)).toMatchObject({ reserved: { first: seen + 1 } })
    followed.stop()
    const next = await adoptIn(pb, run.id)
    expect(ids(next)[0]).toBeGreaterThan(seen + EVENT_ID_RESERVE / 2)
    expect(next.events.since(seen).reserved?.first).toBe(seen + 1)
  })

  it('a process that dies right after it took a cleanly parked run up: the third goes on past every id the second gave', async () => {
    const base = createMemoryStore()
    const pa = processOn(base)
    const s = spec()
    const { run, driven } = (await pa.runs.start(s.spec))!
    pa.emit('approval', { callId: `${CALL}:code:1` })
    await pa.park()
    s.finish(failed)
    await driven
    await pa.service.drained()
    const parkedAt = run.events.last

    const b = processView(base)
    b.hold(() => true)
    const pb = processOn(b.store)
    void pb.service.adopt([resumed()])
    await until(() => b.held() > 0, 'the second process’s first write')
    const second = pb.runs.get(run.id)
    const given = second?.events.last ?? parkedAt
    b.die()

    const third = await adoptIn(processOn(base), run.id)
    expect(ids(third).at(-1)).toBeGreaterThan(given)
    expect(third.events.since(parkedAt).frames[0]!.id).toBeGreaterThan(given)
  })
})

describe('a log read across the ids a previous process reserved', () => {
  it('a batch stops before the skip: the reader is told the reserved ids, however it reads', () => {
    const frame = (id: number, event = 'log') => ({ id, text: `event: ${event}\nid: ${id}\ndata: {}\n\n` })
    const log = createRunEventLog(1 << 20, undefined, { frames: [frame(1), frame(2)], last: 2 + EVENT_ID_RESERVE, dropped: 0, reservedFrom: 3 })
    log.append('resumed', {})
    expect(log.since(0)).toEqual({ frames: [frame(1), frame(2)] })
    expect(log.since(2)).toEqual({ gap: { first: 3, last: 2 + EVENT_ID_RESERVE }, reserved: { first: 3, last: 2 + EVENT_ID_RESERVE }, frames: [frame(3 + EVENT_ID_RESERVE, 'resumed')] })
  })
})

describe('restoredEvents: the one rule a next process rebuilds a buffer by', () => {
  const R = EVENT_ID_RESERVE
  const record = (events: Record<string, unknown>): RunRecordJson => ({ id: 'r', callId: CALL, status: 'running', createdAt: 1, events: { first: 1, last: 0, dropped: 0, ...events } }) as RunRecordJson
  const frame = (id: number) => ({ id, text: `event: log\nid: ${id}\ndata: {}\n\n` })

  it('no snapshot: after the record’s bound; a record without a plausible one reserves after its last', () => {
    expect(restoredEvents(record({ last: 5, next: 5 }), undefined)).toEqual({ frames: [], last: 5, dropped: 5 })
    expect(restoredEvents(record({ last: 5, next: 9 }), undefined)).toEqual({ frames: [], last: 9, dropped: 5, reservedFrom: 6 })
    for (const next of [undefined, 4, -1, 2.5, '9', MAX_RESTORED_EVENT_ID + 1]) {
      expect(restoredEvents(record({ last: 5, next }), undefined), String(next)).toEqual({ frames: [], last: 5 + R, dropped: 5, reservedFrom: 6 })
    }
    expect(restoredEvents(record({ last: 'x' }), undefined)).toEqual({ frames: [], last: R, dropped: 0, reservedFrom: 1 })
    expect(restoredEvents(record({ last: MAX_RESTORED_EVENT_ID - 1 }), undefined)).toEqual({ frames: [], last: MAX_RESTORED_EVENT_ID, dropped: MAX_RESTORED_EVENT_ID - 1, reservedFrom: MAX_RESTORED_EVENT_ID })
    expect(restoredEvents(record({ last: MAX_RESTORED_EVENT_ID }), undefined)).toEqual({ frames: [], last: MAX_RESTORED_EVENT_ID, dropped: MAX_RESTORED_EVENT_ID })
  })

  it('a snapshot: the larger of its bound and the record’s; a clean park (both exact) is the snapshot as stored', () => {
    const parked = { frames: [frame(1), frame(2)], last: 2, dropped: 0 }
    expect(restoredEvents(record({ last: 2, next: 2 }), parked)).toBe(parked)
    const reserving = { frames: [frame(1), frame(2)], last: 2 + R, dropped: 0, reservedFrom: 3 }
    expect(restoredEvents(record({ last: 2, next: 2 }), reserving)).toBe(reserving)
    // A record written after the snapshot (more frames, or a process that took the run up): its bound wins.
    expect(restoredEvents(record({ last: 4, next: 4 + R }), parked)).toEqual({ frames: parked.frames, last: 4 + R, dropped: 0, reservedFrom: 3 })
    expect(restoredEvents(record({ last: 5, next: 5 }), parked)).toEqual({ frames: parked.frames, last: 5, dropped: 0, reservedFrom: 3 })
    expect(restoredEvents(record({ last: 3, next: 3 + R }), reserving)).toEqual({ frames: reserving.frames, last: 3 + R, dropped: 0, reservedFrom: 3 })
  })
})

describe('the writer: what a record write reserves', () => {
  it('the start record arms the reserve: a run that never waits snapshots once past half of it', async () => {
    const base = createMemoryStore()
    const p = processOn(base)
    const s = spec()
    const { run, driven } = (await p.runs.start(s.spec))!
    await until(async () => (await createStoreRunRecords(base).get(run.id)) !== undefined, 'the start record')
    const stored = (await createStoreRunRecords(base).get(run.id))! as unknown as RunRecordJson
    expect(stored.events).toEqual({ first: 1, last: 1, dropped: 0, next: 1 + EVENT_ID_RESERVE })
    for (let i = 0; i < EVENT_ID_RESERVE / 2; i++) run.events.append('log', i)
    p.emit('log', { line: 'one more' })
    await until(async () => (await base.get(`run-events/${run.id}`)) !== undefined, 'the snapshot past half the reserve')
    s.finish({ isError: false, value: 1, content: [] } as ToolExecutionResult)
    await driven
    await p.service.drained()
    expect(await base.get(`run-events/${run.id}`)).toBeUndefined()
  }, 60_000)
})
