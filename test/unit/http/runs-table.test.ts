/**
 * The run table's budgets, on a clock the test moves: finished runs leave after
 * `retentionMs`, oldest first past `maxRuns` or `maxBytes`; running runs never leave, so a
 * table full of them admits nothing; a run's event buffer drops its oldest frames past
 * `maxEventBytesPerRun` and says which ids are gone.
 */
import { describe, expect, it } from 'vitest'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import { createRunEventLog, createRunTable, interruptedRunResult, resolveRunTableOptions, utf8Length } from '../../../src/durable/run-table.js'
import { createStoreRunRecords } from '../../../src/durable/runs.js'
import type { RunRecordJson } from '../../../src/durable/run-table.js'
import type { ResolvedRunTableOptions, TableRun } from '../../../src/durable/run-table.js'
import type { ToolExecutionResult } from '../../../src/types.js'

const ok = (value: unknown): ToolExecutionResult => ({ isError: false, value, content: [] }) as unknown as ToolExecutionResult
const options = (overrides: Partial<ResolvedRunTableOptions> = {}): ResolvedRunTableOptions => ({ maxRuns: 3, maxBytes: 1 << 20, maxEventBytesPerRun: 1 << 16, retentionMs: 1000, maxStreams: 64, ...overrides })

function table(overrides: Partial<ResolvedRunTableOptions> = {}) {
  let now = 0
  const evicted: string[] = []
  const runs = createRunTable(options(overrides), () => now, (run) => evicted.push(run.id))
  const admit = (): TableRun => {
    const run = runs.admit({ callId: `http-run-${crypto.randomUUID()}`, agent: undefined })
    if (run === undefined) throw new Error('refused')
    return run
  }
  return { runs, admit, evicted, advance: (ms: number) => (now += ms) }
}

describe('the run table', () => {
  it('a finished run is readable for retentionMs, then evicted; a running one stays however old', () => {
    const t = table()
    const finished = t.admit()
    const running = t.admit()
    t.runs.settle(finished, ok(1))
    expect(finished.status).toBe('done')
    t.advance(1000)
    expect(t.runs.get(finished.id)).toBe(finished)
    t.advance(1)
    expect(t.runs.get(finished.id)).toBeUndefined()
    expect(t.evicted).toEqual([finished.id])
    t.advance(1_000_000)
    expect(t.runs.get(running.id)).toBe(running)
    expect(t.runs.held).toMatchObject({ runs: 1, live: 1 })
  })

  it('past maxRuns the oldest finished run goes first; a table full of running runs admits nothing', () => {
    const t = table()
    const [a, b, c] = [t.admit(), t.admit(), t.admit()]
    t.runs.settle(b, ok(1))
    t.runs.settle(a, ok(1))
    const d = t.admit()
    // b ended first: it is the oldest finished, whatever its start.
    expect(t.evicted).toEqual([b.id])
    t.runs.settle(c, ok(1))
    t.admit()
    expect(t.evicted).toEqual([b.id, a.id])
    t.admit()
    expect(t.evicted).toEqual([b.id, a.id, c.id])
    expect(t.runs.admit({ callId: 'x', agent: undefined })).toBeUndefined()
    expect(t.runs.held).toMatchObject({ runs: 3, live: 3 })
    expect(t.runs.get(d.id)).toBe(d)
  })

  it('past maxBytes finished runs are evicted oldest first; running runs over the budget refuse admission', () => {
    const t = table({ maxRuns: 100, maxBytes: 10_000 })
    const old = t.admit()
    old.events.append('log', { text: 'x'.repeat(4000) })
    t.runs.settle(old, ok(null))
    const big = t.admit()
    big.events.append('log', { text: 'y'.repeat(7000) })
    // The table went over its bytes: the finished run left, the running one stays.
    expect(t.evicted).toEqual([old.id])
    expect(t.runs.held.bytes).toBe(big.events.bytes)
    big.events.append('log', { text: 'z'.repeat(4000) })
    expect(t.runs.held.bytes).toBeGreaterThan(10_000)
    expect(t.runs.admit({ callId: 'x', agent: undefined })).toBeUndefined()
  })

  it('cancel aborts the run once and makes it end cancelled; settle is once; a settled run is not cancelled', () => {
    const t = table()
    const run = t.admit()
    t.runs.cancel(run, new Error('stop'))
    t.runs.cancel(run, new Error('again'))
    expect(run.controller.signal.reason).toEqual(new Error('stop'))
    t.runs.settle(run, ok(1))
    expect(run.status).toBe('cancelled')
    t.runs.settle(run, undefined)
    expect(run.status).toBe('cancelled')
    const done = t.admit()
    t.runs.settle(done, undefined)
    expect(done.status).toBe('failed')
    t.runs.cancel(done, new Error('late'))
    expect(done.controller.signal.aborted).toBe(false)
    expect(done.status).toBe('failed')
  })

  it('counts bytes exactly: a restored buffer at admission, a result at settle, nothing twice; a run holds its id; subscribers are counted', () => {
    const t = table({ maxRuns: 10, maxBytes: 1 << 20 })
    const text = 'event: log\nid: 1\ndata: "restored"\n\n'
    const restored = t.runs.admit({ callId: 'c', agent: undefined, id: 'r1', createdAt: 5, events: { frames: [{ id: 1, text }], last: 1, dropped: 0 } })!
    expect(restored).toMatchObject({ id: 'r1', createdAt: 5 })
    expect(t.runs.held.bytes).toBe(utf8Length(text))
    // The same id again is refused.
    expect(t.runs.admit({ callId: 'c', agent: undefined, id: 'r1' })).toBeUndefined()
    const result = ok({ answer: 'é'.repeat(10) })
    t.runs.settle(restored, result)
    expect(t.runs.held).toMatchObject({ live: 0, bytes: utf8Length(text) + utf8Length(JSON.stringify(result)) })
    // Settled twice: counted once.
    t.runs.settle(restored, ok(2))
    expect(t.runs.held).toMatchObject({ live: 0, bytes: utf8Length(text) + utf8Length(JSON.stringify(result)) })
    expect(restored.result).toBe(result)
    // A stream's place is given back once, however often its release is called.
    const release = t.runs.openStream()!
    expect(t.runs.held.streams).toBe(1)
    release()
    release()
    expect(t.runs.held.streams).toBe(0)
    const running = t.admit()
    const stop = running.events.subscribe(() => {})
    expect(t.runs.held.subscribers).toBe(1)
    stop()
    expect(t.runs.held.subscribers).toBe(0)
  })

  it('the bytes budget is a bound reached exactly: at it a new run is refused and a finished one kept; past it the finished one goes at once', () => {
    const text = (n: number) => `event: log\nid: 1\ndata: "${'x'.repeat(n)}"\n\n`
    const size = utf8Length(text(100))
    const t = table({ maxRuns: 10, maxBytes: size })
    const full = t.runs.admit({ callId: 'c', agent: undefined, events: { frames: [{ id: 1, text: text(100) }], last: 1, dropped: 0 } })!
    expect(t.runs.held.bytes).toBe(size)
    expect(t.runs.admit({ callId: 'd', agent: undefined })).toBeUndefined()
    // Finished with no result: still exactly at the budget, so it stays.
    t.runs.settle(full, undefined)
    expect(t.runs.get(full.id)).toBe(full)
    expect(t.evicted).toEqual([])
    // A running run's next frame takes the table past its budget: the finished run goes then, not at the next lookup.
    const u = table({ maxRuns: 10, maxBytes: 2 * size })
    const done = u.runs.admit({ callId: 'c', agent: undefined, events: { frames: [{ id: 1, text: text(100) }], last: 1, dropped: 0 } })!
    u.runs.settle(done, undefined)
    const live = u.admit()
    live.events.append('log', 'y'.repeat(50))
    expect(u.evicted).toEqual([])
    live.events.append('log', 'y'.repeat(100))
    expect(u.evicted).toEqual([done.id])
  })

  it('a frame within the budget evicts nothing, even with an expired finished run: that waits for the next lookup', () => {
    const t = table({ maxRuns: 10 })
    const done = t.admit()
    t.runs.settle(done, ok(1))
    const live = t.admit()
    t.advance(5000)
    live.events.append('log', 1)
    expect(t.evicted).toEqual([])
    expect(t.runs.get(done.id)).toBeUndefined()
    expect(t.evicted).toEqual([done.id])
  })

  it('options are validated', () => {
    const fail = (message: string): never => {
      throw new Error(message)
    }
    expect(resolveRunTableOptions(undefined, fail)).toEqual({ maxRuns: 256, maxBytes: 64 * 1024 * 1024, maxEventBytesPerRun: 1024 * 1024, retentionMs: 15 * 60 * 1000, maxStreams: 64 })
    for (const bad of [{ maxRuns: 0 }, { maxBytes: 1.5 }, { maxEventBytesPerRun: -1 }, { retentionMs: Number.NaN }, { maxRuns: '3' }, { maxStreams: 0 }]) {
      expect(() => resolveRunTableOptions(bad as never, fail)).toThrow(/^runs\./)
    }
    expect(() => resolveRunTableOptions(null as never, fail)).toThrow('runs must be an object')
    expect(() => resolveRunTableOptions('big' as never, fail)).toThrow('runs must be an object')
  })
})

describe('utf8Length', () => {
  it('counts UTF-8 bytes exactly at every width boundary, a surrogate pair as 4', () => {
    for (const text of ['', 'a', '\u007f', '\u0080', '\u07ff', '\u0800', '\ud7ff', '\ue000', '\uffff', '😀', 'é€😀a', 'x😀'.repeat(3), '\ud800\udc00', '\udbff\udfff']) {
      expect(utf8Length(text), JSON.stringify(text)).toBe(Buffer.byteLength(text, 'utf8'))
    }
  })
})

describe("a run's event buffer", () => {
  it('drops its oldest frames past its bound, keeps ids monotonic, and reports the gap to a client that resumes before it', () => {
    const log = createRunEventLog(1000)
    for (let i = 0; i < 100; i++) log.append('log', { i, text: 'é'.repeat(20) })
    expect(log.bytes).toBeLessThanOrEqual(1000)
    expect(log.last).toBe(100)
    expect(log.first).toBe(log.dropped + 1)
    const all = log.since(0)
    expect(all.gap).toEqual({ first: 1, last: log.first - 1 })
    expect(all.frames.map((frame) => frame.id)).toEqual(Array.from({ length: 100 - log.dropped }, (_, i) => log.first + i))
    expect(all.frames.reduce((sum, frame) => sum + utf8Length(frame.text), 0)).toBe(log.bytes)
    expect(log.since(log.first - 1)).toEqual({ frames: all.frames })
    expect(log.since(99).frames.map((frame) => frame.id)).toEqual([100])
    expect(log.since(100)).toEqual({ frames: [] })
  })

  it('keeps a frame larger than the bound alone; frames after pinRest are kept outside the bound; close ends appends', () => {
    const log = createRunEventLog(100)
    log.append('a', 'x'.repeat(500))
    expect(log.since(0).frames).toHaveLength(1)
    log.append('b', 1)
    expect(log.since(0).frames.map((frame) => frame.id)).toEqual([2])
    log.pinRest()
    log.append('result', 'y'.repeat(500))
    log.append('end', {})
    expect(log.since(0).frames.map((frame) => frame.id)).toEqual([2, 3, 4])
    log.close()
    expect(log.append('late', 1)).toBe(4)
    expect(log.last).toBe(4)
  })

  it('a bound reached exactly keeps every frame; an oversized frame after others is kept alone; one left alone before pinRest goes with the next pinned frame', () => {
    const sizes: number[] = []
    const probe = createRunEventLog(1 << 20, (delta) => sizes.push(delta))
    for (let i = 0; i < 3; i++) probe.append('log', 'x'.repeat(40))
    const size = utf8Length(probe.since(0).frames[0]!.text)
    expect(sizes).toEqual([size, size, size])
    const exact = createRunEventLog(3 * size)
    for (let i = 0; i < 3; i++) exact.append('log', 'x'.repeat(40))
    expect([exact.dropped, exact.first, exact.bytes]).toEqual([0, 1, 3 * size])
    const deltas: number[] = []
    const after = createRunEventLog(2 * size, (delta) => deltas.push(delta))
    after.append('log', 'x'.repeat(40))
    after.append('log', 'x'.repeat(40))
    after.append('big', 'y'.repeat(500))
    expect(after.since(0).frames.map((frame) => frame.id)).toEqual([3])
    expect(after.bytes).toBe(utf8Length(after.since(0).frames[0]!.text))
    // What the table is told adds up to what the buffer holds: each drop is a negative delta.
    expect(deltas.slice(3)).toEqual([-size, -size])
    expect(deltas.reduce((sum, delta) => sum + delta, 0)).toBe(after.bytes)
    // Pinned from here: the oversized unpinned frame is past the bound, and the next frame lets it go.
    after.pinRest()
    after.append('result', 'z'.repeat(300))
    expect(after.since(0).frames.map((frame) => frame.id)).toEqual([4])
    expect(after.dropped).toBe(3)
  })

  it('since(lastId, limit): at least one frame, then as many as fit the limit exactly', () => {
    const log = createRunEventLog(1 << 20)
    for (let i = 0; i < 4; i++) log.append('log', 'x'.repeat(40))
    const size = utf8Length(log.since(0).frames[0]!.text)
    expect(log.since(0, 2 * size).frames.map((frame) => frame.id)).toEqual([1, 2])
    expect(log.since(0, 2 * size - 1).frames.map((frame) => frame.id)).toEqual([1])
    expect(log.since(1, 1).frames.map((frame) => frame.id)).toEqual([2])
  })

  it('a buffer restored with no frames starts after its last id; restored frames past a smaller bound go oldest first, counted, and are not reported as new bytes', () => {
    const empty = createRunEventLog(4096, undefined, { frames: [], last: 7, dropped: 7 })
    expect(empty.first).toBe(8)
    expect(empty.since(0)).toEqual({ gap: { first: 1, last: 7 }, frames: [] })
    expect(empty.since(7)).toEqual({ frames: [] })
    const source = createRunEventLog(1 << 20)
    for (let i = 0; i < 5; i++) source.append('log', 'x'.repeat(40))
    const frames = source.since(0).frames
    const size = utf8Length(frames[0]!.text)
    const deltas: number[] = []
    const smaller = createRunEventLog(2 * size + 1, (delta) => deltas.push(delta), { frames, last: 5, dropped: 2 })
    expect(smaller.since(0).frames.map((frame) => frame.id)).toEqual([4, 5])
    expect([smaller.first, smaller.dropped, smaller.bytes]).toEqual([4, 5, 2 * size])
    expect(deltas).toEqual([])
    // A single restored frame over the bound is kept.
    const alone = createRunEventLog(10, undefined, { frames: frames.slice(-1), last: 5, dropped: 4 })
    expect([alone.first, alone.bytes]).toEqual([5, size])
    // Exactly at the bound: all kept.
    const exact = createRunEventLog(2 * size, undefined, { frames: frames.slice(-2), last: 5, dropped: 3 })
    expect([exact.first, exact.dropped, exact.bytes]).toEqual([4, 3, 2 * size])
    // Past it with the newest frame alone over it: the older ones go, the newest stays.
    const big = createRunEventLog(1 << 20)
    big.append('log', 'x')
    big.append('log', 'y'.repeat(300))
    const [small, large] = big.since(0).frames
    const newest = createRunEventLog(100, undefined, { frames: [small!, large!], last: 2, dropped: 0 })
    expect(newest.since(0).frames.map((frame) => frame.id)).toEqual([2])
    expect([newest.dropped, newest.bytes]).toEqual([1, utf8Length(large!.text)])
  })

  it('subscribers hear each frame and then the close; one that throws does not stop the others; unsubscribed ones hear nothing', () => {
    const log = createRunEventLog(1 << 20)
    const heard: [string, number, string][] = []
    const stop = log.subscribe((frame) => heard.push(['a', frame.id, frame.text]))
    log.subscribe(() => {
      throw new Error('reader bug')
    })
    log.subscribe((frame) => heard.push(['c', frame.id, frame.text]))
    expect(log.subscriberCount).toBe(3)
    log.append('log', 1)
    stop()
    expect(log.subscriberCount).toBe(2)
    log.append('log', 2)
    log.close()
    const text = (id: number) => `event: log\nid: ${id}\ndata: ${id}\n\n`
    expect(heard).toEqual([
      ['a', 1, text(1)],
      ['c', 1, text(1)],
      ['c', 2, text(2)],
      ['c', 2, ''],
    ])
    expect(log.subscriberCount).toBe(0)
  })

  it('compacts: 100,000 frames through a small bound hold only what fits', () => {
    const log = createRunEventLog(4096)
    for (let i = 0; i < 100_000; i++) log.append('log', i)
    expect(log.bytes).toBeLessThanOrEqual(4096)
    expect(log.since(0).frames.length).toBe(100_000 - log.dropped)
    expect(log.since(0).frames[0]!.id).toBe(log.first)
  })
})

describe('run records in a store (createStoreRunRecords): the view in runs/http-run-<id>', () => {
  const record = (over: Partial<RunRecordJson> = {}): RunRecordJson => ({
    id: 'r1',
    callId: 'http-run-r1',
    status: 'done',
    createdAt: 5,
    settledAt: 6,
    result: ok('x'),
    events: { first: 1, last: 3, dropped: 0 },
    owner: 'o1',
    ...over,
  })
  const viewOf = ({ callId: _c, owner: _o, ...view }: RunRecordJson) => view

  it('round-trips a record as the view of runs/http-run-<id>, under a new claim; lists ids; delete removes it; run-records/ is not read', async () => {
    const store = createMemoryStore()
    const records = createStoreRunRecords(store)
    await records.put(record())
    await records.put(record({ id: 'r2', callId: 'http-run-r2' }))
    expect(await records.get('r1')).toEqual(record())
    const stored = JSON.parse((await store.get('runs/http-run-r1'))!.value)
    expect(stored).toEqual({ version: 1, callId: 'http-run-r1', view: viewOf(record()), owner: 'o1', claim: expect.stringMatching(/^[0-9a-f-]{36}$/) })
    expect(await records.list(10)).toEqual(['r1', 'r2'])
    expect(await records.list(1)).toEqual(['r1'])
    // Over a parked run's record, the view goes beside its parked state.
    await store.put('runs/http-run-r3', JSON.stringify({ version: 1, callId: 'http-run-r3', park: { code: 'c' } }))
    expect((await records.put(record({ id: 'r3', callId: 'http-run-r3' }), { ifVersion: 'stale' })).ok).toBe(false)
    await store.put('run-records/r4', JSON.stringify(record({ id: 'r4', callId: 'http-run-r4' })))
    expect(await records.get('r4')).toBeUndefined()
    expect(await records.list(10)).toEqual(['r1', 'r2', 'r3'])
    await records.delete('r1')
    expect(await records.get('r1')).toBeUndefined()
    expect(await records.list(10)).toEqual(['r2', 'r3'])
  })

  it('a record over the store’s value cap is kept without its result; any other failure, or one without a result, is thrown', async () => {
    const store = createMemoryStore({ maxValueBytes: 400 })
    const records = createStoreRunRecords(store)
    const big = record({ result: ok('y'.repeat(1000)) })
    await records.put(big)
    const { result: _result, ...rest } = big
    expect(await records.get('r1')).toEqual(rest)
    await expect(records.put(record({ id: 'r2', result: undefined, callId: 'c'.repeat(1000) }))).rejects.toMatchObject({ code: 'STORE_VALUE_TOO_LARGE' })
    // Those are thrown after one write: only a result over the cap is worth a second one.
    let puts = 0
    const counting = createStoreRunRecords({ ...store, put: (key: string, value: string) => (puts++, store.put(key, value)) })
    await expect(counting.put(record({ id: 'r3', result: undefined, callId: 'c'.repeat(1000) }))).rejects.toMatchObject({ code: 'STORE_VALUE_TOO_LARGE' })
    expect(puts).toBe(1)
    const failing = createStoreRunRecords({ ...store, put: () => (puts++, Promise.reject(Object.assign(new Error('down'), { code: 'STORE_FAILED' }))) })
    await expect(failing.put(record())).rejects.toThrow('down')
    expect(puts).toBe(2)
  })

  it('what is not a record this code wrote reads as absent, never as a crash', async () => {
    const store = createMemoryStore()
    const records = createStoreRunRecords(store)
    const view = viewOf(record())
    const wrap = (over: Record<string, unknown> = {}, viewOver: Record<string, unknown> = {}) => JSON.stringify({ version: 1, callId: 'http-run-r1', owner: 'o1', view: { ...view, ...viewOver }, ...over })
    const variants: [string, string][] = [
      ['not JSON', '{nope'],
      ['null', 'null'],
      ['a number', '7'],
      ['another id', wrap({}, { id: 'r2' })],
      ['another call id', wrap({ callId: 'http-run-r2' })],
      ['no callId', wrap({ callId: 1 })],
      ['an unknown status', wrap({}, { status: 'waiting' })],
      ['a createdAt string', wrap({}, { createdAt: '5' })],
      ['an owner number', wrap({ owner: 1 })],
      ['no events', wrap({}, { events: undefined })],
      ['events null', wrap({}, { events: null })],
      ['events a string', wrap({}, { events: 'x' })],
      ['no view', wrap({ view: undefined })],
    ]
    for (const [name, value] of variants) {
      await store.put('runs/http-run-r1', value)
      expect(await records.get('r1'), name).toBeUndefined()
    }
    // Controls: each status, and a record without an owner, read back.
    for (const status of ['running', 'done', 'failed', 'cancelled'] as const) {
      await store.put('runs/http-run-r1', wrap({}, { status }))
      expect((await records.get('r1'))?.status).toBe(status)
    }
    await store.put('runs/http-run-r1', wrap({ owner: undefined }))
    const { owner: _owner, ...unowned } = record()
    expect(await records.get('r1')).toEqual(unowned)
  })

  it('interruptedRunResult says where the run stopped, as an INTERRUPTED tool error', () => {
    const message = 'the run was interrupted: the process stopped before the run parked, so there is no state to resume it from; its calls may or may not have taken effect'
    expect(interruptedRunResult('the process')).toEqual({
      isError: true,
      error: { message, info: { name: 'ToolError', code: 'INTERRUPTED' } },
      content: [{ type: 'text', text: `Error: ${message}` }],
    })
  })
})
