/**
 * `runtime.runs.table()` in process (src/durable/background-runs.ts; issue 38 item 1): a
 * background run driven to its end with its event log and store writes, the frames held back
 * when a waiting call is cut off, a run left parked for the next process, resumed runs
 * adopted back, and the reader that pages a log after an id.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { EVENT_ID_RESERVE, MAX_HELD_FRAMES, readEvents, recordWriter, runFrames } from '../../../src/durable/background-runs.js'
import type { BackgroundRunSources, BackgroundRunSpec } from '../../../src/durable/background-runs.js'
import { resolveRunServiceOptions, RunService } from '../../../src/durable/run-service.js'
import { DurableRuns, runKeySegment } from '../../../src/durable/runs.js'
import type { ResumedRun } from '../../../src/durable/runs.js'
import { createRunEventLog, createStoreRunEvents, resolveRunTableOptions } from '../../../src/durable/run-table.js'
import type { RunEventLog, RunEventsSince, RunRecordJson, RunTableOptions, TableRun } from '../../../src/durable/run-table.js'
import type { DurableStore } from '../../../src/durable/store.js'
import type { PendingApproval } from '../../../src/approvals/types.js'
import type { ToolExecutionResult } from '../../../src/types.js'
import { cueStore, readJson } from '../../support/cue-store.js'
import { until } from '../../support/poll.js'
import { FIRST_CALL_NUMBERING, parkedState } from '../../support/parked-run.js'

/** Marks run `callId` parked in its record (as a runtime leaves it when it stops with the run parked): a parked state beside its view. */
async function markParked(store: DurableStore, callId: string): Promise<void> {
  const key = `runs/${runKeySegment(callId)}`
  const current = (JSON.parse((await store.get(key))?.value ?? 'null') as Record<string, unknown> | null) ?? { version: 1, callId }
  await store.put(key, JSON.stringify({ ...current, park: { code: 'c', description: 'd', state: parkedState('pay'), numbering: FIRST_CALL_NUMBERING } }))
}


const ok = (value: unknown): ToolExecutionResult => ({ isError: false, value, content: [{ type: 'text', text: String(value) }] }) as ToolExecutionResult
const failed = (message: string): ToolExecutionResult => ({ isError: true, error: { message, info: { name: 'ToolError', code: 'X' } }, content: [] }) as ToolExecutionResult

const pending = (callId: string, over: Partial<PendingApproval> = {}): PendingApproval =>
  ({ id: `ap-${callId}`, kind: 'call', callId, parentCallId: callId.split(':')[0], name: 'pay', summary: 'pay 1', requestedAt: 1, expiresAt: 2, principal: 'p', internal: 'x', ...over }) as unknown as PendingApproval

const events = (log: RunEventLog): [string, unknown][] =>
  log.since(0).frames.map((frame) => {
    const [, event, data] = /^event: (.*)\nid: \d+\ndata: (.*)\n\n$/.exec(frame.text)!
    return [event!, JSON.parse(data!)]
  })

/** Sources the test drives: `emit` sends a live event to the runs subscribed to `callId`. */
function testSources(over: Partial<BackgroundRunSources> = {}) {
  const listeners = new Map<string, (event: string, data: unknown) => void>()
  const reported: unknown[] = []
  const sources: BackgroundRunSources = {
    subscribe: (callId, append) => {
      listeners.set(callId, append)
      return () => void listeners.delete(callId)
    },
    approvals: async () => () => [],
    shutdown: undefined,
    report: (error) => void reported.push(error),
    ...over,
  }
  return { sources, reported, listeners, emit: (callId: string, event: string, data: unknown) => listeners.get(callId)?.(event, data) }
}

/** A spec whose execution ends when the test says (`finish`), seeing the signal it got. */
function pendingSpec(callId = 'http-run-1') {
  let finish: (result: ToolExecutionResult) => void = () => {}
  let fail: (error: unknown) => void = () => {}
  let signal: AbortSignal | undefined
  const spec: BackgroundRunSpec = {
    callId,
    agent: 'a',
    principal: 'p',
    start: { callId, agent: 'a' },
    execute: (s) => {
      signal = s
      return new Promise((resolve, reject) => ((finish = resolve), (fail = reject)))
    },
  }
  return { spec, finish: (r: ToolExecutionResult) => finish(r), fail: (e: unknown) => fail(e), signal: () => signal }
}

const services: { close(): void }[] = []
afterEach(() => {
  for (const service of services.splice(0)) service.close()
})

/** The runtime's runs on `store`, with its durable runs (the one writer of `runs/<callId>`) as the runtime wires them. */
function serviceOn(store: DurableStore | undefined, resumeAll: (staleMs: number) => Promise<ResumedRun[]> = async () => []) {
  const durable = store === undefined ? undefined : new DurableRuns(store)
  const service = new RunService(store, durable, resumeAll, resolveRunServiceOptions({ resumeEveryMs: 0 }))
  services.push(service)
  if (durable !== undefined) services.push(durable)
  // The runtime parks run `callId`: its parked state lands in the run's record, in the run's write order.
  const park = async (callId: string): Promise<void> => {
    durable!.forRun(callId, undefined, { code: 'c', description: 'd' }).onPark(parkedState('pay'), FIRST_CALL_NUMBERING)
    await durable!.flushed()
  }
  return Object.assign(service, { park })
}

const tableOptions = (over: RunTableOptions = {}) => resolveRunTableOptions(over, (message) => {
  throw new Error(message)
})

/** A cue store, a service on it, a table with default options, and run `http-run-1` started there (its body pending). */
async function startedOnStore() {
  const cues = cueStore()
  const service = serviceOn(cues.store)
  const t = testSources()
  const runs = service.table(tableOptions(), t.sources)
  const p = pendingSpec()
  const { run, driven } = (await runs.start(p.spec))!
  return { cues, service, t, runs, p, run, driven }
}

describe('runFrames: what a waiting run snapshots, and what a cut-off run holds back', () => {
  const setup = (waitingFor: readonly string[] = [], pastReserve = () => false) => {
    const log = createRunEventLog(1 << 20)
    let snapshots = 0
    const frames = runFrames(log, () => snapshots++, pastReserve, waitingFor)
    return { log, frames, snapshots: () => snapshots }
  }

  it('snapshots each frame from an approval until it is settled, and not before or after', () => {
    const { log, frames, snapshots } = setup()
    frames.append('dispatch-start', { subCallId: 'r:code:1' })
    frames.append('approval', { callId: 7 })
    expect(snapshots()).toBe(0)
    frames.append('approval', { callId: 'r:code:1' })
    expect(snapshots()).toBe(1)
    frames.append('log', { line: 'x' })
    expect(snapshots()).toBe(2)
    frames.append('approval-settled', { callId: 'r:code:2' })
    expect(snapshots()).toBe(3)
    frames.append('approval-settled', { callId: 'r:code:1' })
    frames.append('log', 'not an object')
    // Only an `approval` frame makes a call wait; only a `dispatch` of a waiting call cuts it off.
    frames.append('log', { callId: 'r:code:5' })
    expect(snapshots()).toBe(3)
    frames.append('approval', { callId: 'r:code:6' })
    frames.append('dispatch-start', { subCallId: 'r:code:6' })
    expect(log.last).toBe(10)
    expect(snapshots()).toBe(5)
  })

  it('a run past half its reserve snapshots again; a resumed run waits on what it was given', () => {
    let past = false
    const a = setup([], () => past)
    a.frames.append('log', {})
    past = true
    a.frames.append('log', {})
    expect(a.snapshots()).toBe(1)
    const b = setup(['r:code:3'])
    b.frames.append('log', {})
    expect(b.snapshots()).toBe(1)
  })

  it('a waiting call cut off: that frame and the rest are held (no snapshot) until release, which appends them in order', () => {
    const { log, frames, snapshots } = setup()
    frames.append('approval', { callId: 'r:code:1' })
    frames.append('dispatch', { subCallId: 'r:code:2' })
    const before = snapshots()
    expect(before).toBe(2)
    frames.append('dispatch', { subCallId: 'r:code:1', outcome: 'cut' })
    frames.append('dispatch', { subCallId: 'r:code:1' })
    frames.append('log', { n: 1 })
    expect(log.last).toBe(2)
    expect(snapshots()).toBe(before)
    frames.release()
    expect(events(log).slice(2)).toEqual([
      ['dispatch', { subCallId: 'r:code:1', outcome: 'cut' }],
      ['dispatch', { subCallId: 'r:code:1' }],
      ['log', { n: 1 }],
    ])
    // Cut off once: nothing is held or snapshotted again.
    frames.append('approval', { callId: 'r:code:9' })
    frames.append('dispatch', { subCallId: 'r:code:9' })
    expect(log.last).toBe(7)
    expect(snapshots()).toBe(before)
    frames.release()
    expect(log.last).toBe(7)
  })

  it(`past ${MAX_HELD_FRAMES} held frames they all go out, in order, and the next ones too`, () => {
    const { log, frames } = setup(['r:code:1'])
    frames.append('dispatch', { subCallId: 'r:code:1' })
    for (let n = 1; n < MAX_HELD_FRAMES; n++) frames.append('log', { n })
    expect(log.last).toBe(0)
    frames.append('log', { n: MAX_HELD_FRAMES })
    expect(log.last).toBe(MAX_HELD_FRAMES + 1)
    expect(events(log).map(([, data]) => (data as { n?: number }).n ?? 0)).toEqual(Array.from({ length: MAX_HELD_FRAMES + 1 }, (_, n) => n))
    frames.append('log', { n: -1 })
    expect(log.last).toBe(MAX_HELD_FRAMES + 2)
  })
})

describe('a background run: driven to its end, written as it goes', () => {
  it('start → its frames (start, live events, result, end), its record done and owned, no snapshot left, unsubscribed', async () => {
    const cues = cueStore()
    const service = serviceOn(cues.store)
    const t = testSources()
    const runs = service.table(tableOptions(), t.sources)
    const p = pendingSpec()
    const started = (await runs.start(p.spec))!
    const { run } = started
    expect(runs.get(run.id)).toBe(run)
    expect(runs.options.maxRuns).toBe(256)
    // Its record is written as it starts: another process can read it at once.
    await until(async () => (await runs.stored(run.id))?.status === 'running', 'the running record')
    t.emit('http-run-1', 'log', { line: 'hi' })
    expect(p.signal()!.aborted).toBe(false)
    p.finish(ok(42))
    await started.driven
    await service.drained()
    expect(events(run.events)).toEqual([
      ['start', { id: run.id, callId: 'http-run-1', agent: 'a' }],
      ['log', { line: 'hi' }],
      ['result', ok(42)],
      ['end', { id: run.id, status: 'done' }],
    ])
    expect(run.events.closed).toBe(true)
    expect(t.listeners.size).toBe(0)
    const record = (await runs.stored(run.id))!
    expect(record).toMatchObject({ id: run.id, callId: 'http-run-1', agent: 'a', principal: 'p', status: 'done', result: ok(42), events: { first: 1, last: 4, dropped: 0 } })
    expect(record.owner).toBe(service.owner)
    expect(record.asked).toBeUndefined()
    expect(run.asked).toBe(false)
    expect((await cues.base.list('run-events/')).entries).toEqual([])
    expect(t.reported).toEqual([])
    expect(runs.held).toMatchObject({ runs: 1, live: 0 })
  })

  it('a full table answers undefined; without a store nothing is written and stored() is undefined', async () => {
    const service = serviceOn(undefined)
    const runs = service.table(tableOptions({ maxRuns: 1 }), testSources().sources)
    const p = pendingSpec()
    const first = (await runs.start(p.spec))!
    expect(await runs.start(pendingSpec('http-run-2').spec)).toBeUndefined()
    expect(await runs.stored(first.run.id)).toBeUndefined()
    expect(await runs.follow(first.run.id)).toBeUndefined()
    p.finish(ok(1))
    await first.driven
  })

  it('an execution that rejects is reported (to the run’s reporter) and ends the run failed with INTERNAL', async () => {
    const service = serviceOn(cueStore().store)
    const t = testSources()
    const runs = service.table(tableOptions(), t.sources)
    const p = pendingSpec()
    const mine: unknown[] = []
    const started = (await runs.start(p.spec, (error) => void mine.push(error)))!
    const boom = new Error('boom')
    p.fail(boom)
    await started.driven
    expect(mine).toEqual([boom])
    expect(t.reported).toEqual([])
    expect(events(started.run.events).slice(-2)).toEqual([
      ['error', { error: { code: 'INTERNAL', message: 'internal error' } }],
      ['end', { id: started.run.id, status: 'failed' }],
    ])
    await service.drained()
    expect((await runs.stored(started.run.id))!.status).toBe('failed')
  })

  it('cancel aborts the execution’s signal with the reason and ends it cancelled; the shutdown signal aborts it too', async () => {
    const shutdown = new AbortController()
    const service = serviceOn(cueStore().store)
    const runs = service.table(tableOptions(), testSources({ shutdown: shutdown.signal }).sources)
    const p = pendingSpec()
    const started = (await runs.start(p.spec))!
    const reason = new Error('stop')
    runs.cancel(started.run, reason)
    expect(p.signal()!.reason).toBe(reason)
    p.finish(failed('cancelled'))
    await started.driven
    expect(started.run.status).toBe('cancelled')
    const q = pendingSpec('http-run-2')
    const second = (await runs.start(q.spec))!
    shutdown.abort(new Error('bye'))
    expect(q.signal()!.aborted).toBe(true)
    q.finish(ok(0))
    await second.driven
    expect(second.run.status).toBe('done')
  })

  it('an approval makes the run snapshot its frames with a reserve of ids, and its record say running and asked; the end deletes it', async () => {
    const { cues, service, t, runs, p, run, driven } = await startedOnStore()
    t.emit('http-run-1', 'approval', { callId: 'http-run-1:code:1' })
    // The run goes on (drained() would wait for it): its writes are awaited in the store.
    await until(async () => (await runs.stored(run.id))?.asked, 'the snapshot record')
    const snapshot = (await createStoreRunEvents(cues.store, 1 << 20).read(run.id))!
    expect(snapshot.events.frames.map((frame) => frame.id)).toEqual([1, 2])
    expect(snapshot.events.last).toBe(2 + EVENT_ID_RESERVE)
    expect(snapshot.events.reservedFrom).toBe(3)
    expect(await runs.stored(run.id)).toMatchObject({ status: 'running', asked: true, events: { last: 2 } })
    expect(run.asked).toBe(true)
    p.finish(ok(1))
    await driven
    await service.drained()
    expect(await createStoreRunEvents(cues.store, 1 << 20).read(run.id)).toBeUndefined()
    expect((await runs.stored(run.id))!.status).toBe('done')
  })

  it('a run that parks before any approval frame: its table snapshots its frames first, so the park never lands without them', async () => {
    const { cues, service, t, p, run, driven } = await startedOnStore()
    t.emit('http-run-1', 'log', { line: 'before the park' })
    await service.park('http-run-1')
    const snapshot = (await createStoreRunEvents(cues.store, 1 << 20).read(run.id))!
    expect(snapshot.events.frames.map((frame) => frame.id)).toEqual([1, 2])
    p.finish(ok(1))
    await driven
    await service.drained()
  })

  it('a park asked for a run this table does not hold, or holds ended, writes no snapshot', async () => {
    const { cues, service, t, runs, p, run, driven } = await startedOnStore()
    p.finish(ok(1))
    await driven
    await service.drained()
    expect(runs.get(run.id)?.status).toBe('done')
    await service.park('http-run-1')
    await service.park('http-run-99')
    await service.drained()
    expect((await cues.base.list('run-events/')).entries).toEqual([])
    expect(t.reported).toEqual([])
  })

  it('parked when its runtime stopped: no result or end, the cut-off frames dropped, a final snapshot (no reserve), the record still running', async () => {
    const { cues, service, t, runs, p, run, driven } = await startedOnStore()
    t.emit('http-run-1', 'approval', { callId: 'http-run-1:code:1' })
    // Asked while the waiting snapshot may still be queued: that one becomes the final one.
    t.emit('http-run-1', 'dispatch', { subCallId: 'http-run-1:code:1', outcome: 'cut off' })
    await service.park('http-run-1')
    p.finish(failed('the runtime is shutting down'))
    await driven
    await service.drained()
    expect(events(run.events).map(([event]) => event)).toEqual(['start', 'approval'])
    expect(run.events.closed).toBe(true)
    const snapshot = (await createStoreRunEvents(cues.store, 1 << 20).read(run.id))!
    expect(snapshot.events.last).toBe(2)
    expect(snapshot.events.reservedFrom).toBeUndefined()
    expect(await runs.stored(run.id)).toMatchObject({ status: 'running', events: { last: 2, next: 2 } })
  })

  it('a failed result of a run that is not parked (or cannot be read) ends it failed, with its held frames', async () => {
    const { cues, t, runs, p, run, driven } = await startedOnStore()
    t.emit('http-run-1', 'approval', { callId: 'http-run-1:code:1' })
    t.emit('http-run-1', 'dispatch', { subCallId: 'http-run-1:code:1' })
    cues.before = (op) => {
      if (op.op === 'get' && op.key.startsWith('runs/')) throw new Error('store down')
    }
    p.finish(failed('x'))
    await driven
    cues.before = undefined
    expect(events(run.events).map(([event]) => event)).toEqual(['start', 'approval', 'dispatch', 'result', 'end'])
  })

  it('an evicted run’s record and snapshot go from the store; a store that fails is reported', async () => {
    let now = 1_000
    const cues = cueStore()
    const service = serviceOn(cues.store)
    const t = testSources()
    const { createBackgroundRuns } = await import('../../../src/durable/background-runs.js')
    const runs = createBackgroundRuns(service, tableOptions({ retentionMs: 10 }), t.sources, () => now)
    const p = pendingSpec()
    const { run, driven } = (await runs.start(p.spec))!
    p.finish(ok(1))
    await driven
    await service.drained()
    expect(await runs.stored(run.id)).toBeDefined()
    now += 11
    expect(runs.get(run.id)).toBeUndefined()
    await service.drained()
    expect(await runs.stored(run.id)).toBeUndefined()
    const q = pendingSpec('http-run-2')
    cues.before = (op) => {
      if (op.op === 'put') throw new Error('store down')
    }
    const second = (await runs.start(q.spec))!
    q.finish(ok(2))
    await second.driven
    await service.drained()
    expect(t.reported.map((error) => (error as Error).message)).toContain('store down')
  })
})

describe('view: a run as GET /v1/runs/:id shows it', () => {
  it('running → waiting with its open requests (only what a person needs), cancelled once asked; a stored record as it is', async () => {
    const open: PendingApproval[] = [pending('http-run-1:code:1', { preview: 'pays', reason: 'money' } as Partial<PendingApproval>)]
    const service = serviceOn(cueStore().store)
    const runs = service.table(tableOptions(), testSources({ approvals: async () => (callId) => (callId === 'http-run-1' ? open : []) }).sources)
    const p = pendingSpec()
    const { run, driven } = (await runs.start(p.spec))!
    const view = await runs.view(run)
    expect(view).toStrictEqual({
      id: run.id,
      callId: 'http-run-1',
      agent: 'a',
      principal: 'p',
      status: 'waiting',
      createdAt: run.createdAt,
      approvals: [{ id: 'ap-http-run-1:code:1', kind: 'call', callId: 'http-run-1:code:1', name: 'pay', summary: 'pay 1', preview: 'pays', reason: 'money', requestedAt: 1, expiresAt: 2 }],
      events: { first: 1, last: 1, dropped: 0 },
    })
    open.length = 0
    expect((await runs.view(run)).status).toBe('running')
    runs.cancel(run, new Error('x'))
    expect((await runs.view(run)).status).toBe('cancelled')
    p.finish(ok(3))
    await driven
    expect(await runs.view(run)).toMatchObject({ status: 'cancelled', settledAt: run.settledAt, result: ok(3), approvals: [] })
    const record: RunRecordJson = { id: 'r', callId: 'http-run-r', status: 'running', createdAt: 1, events: { first: 1, last: 0, dropped: 0 } }
    expect(await runs.view(record)).toStrictEqual({ id: 'r', callId: 'http-run-r', status: 'running', createdAt: 1, approvals: [], events: record.events })
    open.push(pending('http-run-1:code:2'))
    const waiting = await runs.view({ ...record, callId: 'http-run-1' })
    expect(waiting.status).toBe('waiting')
    expect(waiting.approvals).toStrictEqual([{ id: 'ap-http-run-1:code:2', kind: 'call', callId: 'http-run-1:code:2', name: 'pay', summary: 'pay 1', requestedAt: 1, expiresAt: 2 }])
    const done = await runs.view({ ...record, callId: 'http-run-1', status: 'done' })
    expect(done.status).toBe('done')
    expect(done.approvals).toEqual([])
  })
})

describe('follow and streams: what the table lends its readers', () => {
  it('follow() reads a running run from the store, then this process’s own log of it; openStream counts up to maxStreams', async () => {
    const service = serviceOn(cueStore().store)
    const runs = service.table(tableOptions({ maxStreams: 1 }), testSources().sources)
    const p = pendingSpec()
    const { run, driven } = (await runs.start(p.spec))!
    await until(async () => (await runs.stored(run.id))?.status === 'running', 'the running record')
    const followed = (await runs.follow(run.id))!
    expect(followed.id).toBe(run.id)
    // The poll (1 s) finds the run in this process's table and reads its log from then on.
    await until(() => followed.events === run.events, 'the local log', 10_000)
    followed.stop()
    const release = runs.openStream()!
    expect(runs.held.streams).toBe(1)
    expect(runs.openStream()).toBeUndefined()
    release()
    expect(runs.held.streams).toBe(0)
    p.finish(ok(1))
    await driven
  })
})

describe('recordWriter: the reserve a snapshot takes', () => {
  it('past half the reserve a run counts as past it; an unchanged snapshot is not written again', async () => {
    const cues = cueStore()
    const service = serviceOn(cues.store)
    const writer = recordWriter(service, service.events(1 << 20))
    const run = { id: 'r', callId: 'http-run-r', agent: undefined, principal: 'p', asked: false, createdAt: 1, controller: new AbortController(), events: createRunEventLog(1 << 20), status: 'running', settledAt: undefined, result: undefined, cancelRequested: false } as { -readonly [K in keyof TableRun]: TableRun[K] }
    run.events.append('start', {})
    expect(writer.pastReserve(run)).toBe(false)
    const report = (error: unknown): void => {
      throw error
    }
    writer.snapshot(run, report)
    writer.snapshot(run, report)
    await service.drained()
    const puts = () => cues.ops.filter((op) => op.op === 'put' && op.key === 'run-events/r').length
    expect(puts()).toBe(1)
    writer.snapshot(run, report)
    await service.drained()
    expect(puts()).toBe(1)
    expect(writer.pastReserve(run)).toBe(false)
    run.events = createRunEventLog(1 << 20, undefined, { frames: [], last: 1 + EVENT_ID_RESERVE / 2, dropped: 0 })
    expect(writer.pastReserve(run)).toBe(false)
    run.events = createRunEventLog(1 << 20, undefined, { frames: [], last: 2 + EVENT_ID_RESERVE / 2, dropped: 0 })
    expect(writer.pastReserve(run)).toBe(true)
    // Final: written again without a reserve.
    writer.snapshot(run, report, true)
    await service.drained()
    expect(puts()).toBe(2)
    expect((await createStoreRunEvents(cues.store, 1 << 20).read('r'))!.events.reservedFrom).toBeUndefined()
  })
})

describe('adoption: the runs the service resumed come back to the table that started them', () => {
  const stored = (over: Partial<RunRecordJson> = {}): RunRecordJson => ({ id: '5d54f032-0245-4a05-a48e-d72c43f4f211', callId: 'http-run-5d54f032-0245-4a05-a48e-d72c43f4f211', agent: 'ag', principal: 'p', asked: true, status: 'running', createdAt: 5, events: { first: 1, last: 2, dropped: 0, next: 2 }, owner: 'gone', ...over })

  it('a resumed run comes back under its id with its stored frames, a resumed frame, waits again on its open requests, and ends there', async () => {
    const cues = cueStore()
    const service = serviceOn(cues.store)
    await service.records!.put(stored())
    const log = createRunEventLog(1 << 20)
    log.append('start', { n: 1 })
    log.append('approval', { callId: 'http-run-5d54f032-0245-4a05-a48e-d72c43f4f211:code:1' })
    await createStoreRunEvents(cues.store, 1 << 20).put(stored().id, log)
    const t = testSources({ approvals: async () => (callId) => (callId === 'http-run-5d54f032-0245-4a05-a48e-d72c43f4f211' ? [pending('http-run-5d54f032-0245-4a05-a48e-d72c43f4f211:code:1')] : []) })
    const runs = service.table(tableOptions(), t.sources)
    let finish: (value: unknown) => void = () => {}
    const cancelled: unknown[] = []
    const handle: ResumedRun = { callId: 'http-run-5d54f032-0245-4a05-a48e-d72c43f4f211', result: new Promise((resolve) => (finish = resolve)), cancel: (reason) => void cancelled.push(reason) }
    expect(await service.adopt([handle])).toMatchObject({ adopted: 1 })
    const run = runs.get(stored().id)!
    expect(run).toMatchObject({ callId: 'http-run-5d54f032-0245-4a05-a48e-d72c43f4f211', agent: 'ag', principal: 'p', asked: true, createdAt: 5 })
    expect(events(run.events)).toEqual([
      ['start', { n: 1 }],
      ['approval', { callId: 'http-run-5d54f032-0245-4a05-a48e-d72c43f4f211:code:1' }],
      ['resumed', { id: run.id, callId: 'http-run-5d54f032-0245-4a05-a48e-d72c43f4f211', agent: 'ag', resumed: true }],
    ])
    // Waiting again: the resumed frame is in a snapshot.
    await until(async () => (await createStoreRunEvents(cues.store, 1 << 20).read(run.id))?.events.frames.length === 3, 'the resumed frame stored')
    // Adopted once: a second sweep over the same record leaves it.
    expect(await service.adopt([handle])).toMatchObject({ adopted: 0 })
    const reason = new Error('cancel')
    runs.cancel(run, reason)
    expect(cancelled).toEqual([reason])
    finish(ok('done'))
    await until(() => run.status !== 'running')
    expect(run.status).toBe('cancelled')
    await service.drained()
    expect((await runs.stored(run.id))!.status).toBe('cancelled')
  })

  it('a run cancelled by the shutdown before its execution is taken: the handle is cancelled at once; no snapshot: ids continue past the record’s reserve', async () => {
    const shutdown = new AbortController()
    shutdown.abort(new Error('down'))
    const cues = cueStore()
    const service = serviceOn(cues.store)
    // A record that names no bound (its process may have gone on): the reserve after its last id is skipped.
    await service.records!.put(stored({ events: { first: 1, last: 9, dropped: 0 } }))
    const runs = service.table(tableOptions(), testSources({ shutdown: shutdown.signal }).sources)
    const cancelled: unknown[] = []
    const handle: ResumedRun = { callId: 'http-run-5d54f032-0245-4a05-a48e-d72c43f4f211', result: Promise.resolve(ok(1)), cancel: (reason) => void cancelled.push(reason) }
    await service.adopt([handle])
    const run = runs.get(stored().id)!
    expect(run.events.since(0)).toMatchObject({ gap: { first: 1, last: 9 + EVENT_ID_RESERVE }, reserved: { first: 10, last: 9 + EVENT_ID_RESERVE } })
    expect(cancelled).toHaveLength(1)
    await until(() => run.status !== 'running')
  })

  it('a running record nothing resumed, whose process is gone, ends failed INTERRUPTED; records not running or held are left', async () => {
    const cues = cueStore()
    const service = serviceOn(cues.store)
    await service.records!.put(stored())
    await service.records!.put(stored({ id: 'b', callId: 'http-run-b', status: 'done' }))
    const t = testSources({
      approvals: async () => {
        throw new Error('broker down')
      },
    })
    service.table(tableOptions(), t.sources)
    const other: ResumedRun = { callId: 'http-run-z', result: Promise.resolve(undefined), cancel: () => {} }
    expect(await service.adopt([other])).toMatchObject({ adopted: 0 })
    expect(t.reported.map((e) => (e as Error).message)).toEqual(['broker down'])
    expect(await service.records!.get(stored().id)).toMatchObject({ status: 'failed', result: { error: { info: { code: 'INTERRUPTED' } } } })
    expect(await service.records!.get('b')).toMatchObject({ status: 'done' })
  })

  it('an unreadable snapshot is reported and the run adopted with continued ids; a full table leaves it', async () => {
    const cues = cueStore()
    const service = serviceOn(cues.store)
    await service.records!.put(stored())
    const t = testSources()
    const runs = service.table(tableOptions({ maxRuns: 1 }), t.sources)
    const busy = pendingSpec('http-run-busy')
    const first = (await runs.start(busy.spec))!
    const handle: ResumedRun = { callId: 'http-run-5d54f032-0245-4a05-a48e-d72c43f4f211', result: Promise.resolve(ok(1)), cancel: () => {} }
    expect(await service.adopt([handle])).toMatchObject({ adopted: 0 })
    busy.finish(ok(0))
    await first.driven
    cues.before = (op) => {
      if (op.op === 'get' && op.key.startsWith('run-events/')) throw new Error('snapshot unreadable')
    }
    const runs2 = serviceOn(cues.store)
    await runs2.records!.put(stored({ id: 'c', callId: 'http-run-c' }))
    const t2 = testSources()
    const table2 = runs2.table(tableOptions(), t2.sources)
    await runs2.adopt([{ callId: 'http-run-c', result: Promise.resolve(ok(1)), cancel: () => {} }])
    cues.before = undefined
    expect(t2.reported.map((e) => (e as Error).message)).toEqual(['snapshot unreadable'])
    const run = table2.get('c')!
    expect(run.events.since(0).frames[0]!.id).toBe(3)
  })
})

describe('readEvents: a log paged after an id', () => {
  const reader = (over: { stopped?: () => boolean } = {}) => {
    const batches: RunEventsSince[] = []
    let finish: () => void = () => {}
    const finished = new Promise<void>((resolve) => (finish = resolve))
    return { batches, finish, reader: { send: (b: RunEventsSince) => void batches.push(b), drained: async () => {}, stopped: over.stopped ?? (() => false), finished } }
  }

  it('sends the frames after lastId in batches of at most batchBytes (at least one frame), then live ones, until the end', async () => {
    const log = createRunEventLog(1 << 20)
    for (let n = 0; n < 5; n++) log.append('log', { n })
    const size = log.since(0).frames[0]!.text.length
    const r = reader()
    const done = readEvents({ events: log }, 1, size * 2, r.reader)
    await until(() => r.batches.length === 2)
    expect(r.batches.map((b) => b.frames.map((f) => f.id))).toEqual([
      [2, 3],
      [4, 5],
    ])
    log.append('log', { n: 5 })
    await until(() => r.batches.length === 3)
    log.append('end', {})
    log.close()
    await done
    expect(r.batches.flatMap((b) => b.frames.map((f) => f.id))).toEqual([2, 3, 4, 5, 6, 7])
  })

  it('a gap before the first frame it can send comes with that batch; a closed log read to its end returns at once', async () => {
    const log = createRunEventLog(200)
    for (let n = 0; n < 10; n++) log.append('log', { n })
    log.close()
    const r = reader()
    await readEvents({ events: log }, 0, 1 << 20, r.reader)
    expect(r.batches[0]!.gap).toEqual({ first: 1, last: log.first - 1 })
    const q = reader()
    await readEvents({ events: log }, log.last, 1 << 20, q.reader)
    expect(q.batches).toEqual([])
  })

  it('a closed log read in small batches goes to its end; a log of nothing but a gap sends that gap alone', async () => {
    const log = createRunEventLog(1 << 20)
    for (let n = 0; n < 5; n++) log.append('log', { n })
    log.close()
    const r = reader()
    await readEvents({ events: log }, 0, 1, r.reader)
    expect(r.batches.map((b) => b.frames.map((f) => f.id))).toEqual([[1], [2], [3], [4], [5]])
    const restored = createRunEventLog(1 << 20, undefined, { frames: [], last: 9, dropped: 9 })
    restored.close()
    const g = reader()
    await readEvents({ events: restored }, 0, 1 << 20, g.reader)
    expect(g.batches).toEqual([{ gap: { first: 1, last: 9 }, frames: [] }])
  })

  it('a reader caught up wakes at the next frame, well before the poll would', async () => {
    const log = createRunEventLog(1 << 20)
    log.append('log', {})
    const r = reader()
    const done = readEvents({ events: log }, 0, 1 << 20, r.reader)
    await until(() => r.batches.length === 1 && log.subscriberCount === 1, 'the reader waiting')
    log.append('log', {})
    // The wake is synchronous with the append; the reader sends on its next turn.
    await until(() => r.batches.length === 2)
    log.close()
    await done
    expect(log.subscriberCount).toBe(0)
  })

  it('stops when the reader left, a wait for the next frame included (finished settles it)', async () => {
    const log = createRunEventLog(1 << 20)
    log.append('log', {})
    let stopped = false
    const r = reader({ stopped: () => stopped })
    const done = readEvents({ events: log }, 0, 1 << 20, r.reader)
    await until(() => r.batches.length === 1)
    stopped = true
    r.finish()
    await done
    expect(log.subscriberCount).toBe(0)
    const none = reader({ stopped: () => true })
    await readEvents({ events: log }, 0, 1 << 20, none.reader)
    expect(none.batches).toEqual([])
  })
})
