/**
 * A `/v1/runs` run's events survive a restart: while it waits for a person its frames are
 * written to the store (`run-events/<id>`), and the process that resumes it rebuilds
 * its buffer from them under the same ids, then appends `resumed`, so a client's
 * `Last-Event-ID` from before the restart resumes where it was. Two app instances on one
 * memory store, each with its own sandbox, broker and runtime, stand for two processes;
 * the first one stops the way `npm start` does on Ctrl+C (examples/start.ts). The SIGKILL
 * version is in crash-resume.test.ts.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { createSessionLogHub, createToolsApp } from '../../../src/http/index.js'
import type { RunBody, RunTableOptions } from '../../../src/http/index.js'
import { createRunEventLog, createStoreRunEvents, MAX_RESTORED_EVENT_ID, RUN_EVENTS_PREFIX } from '../../../src/durable/run-table.js'
import { createToolRuntime } from '../../../src/registry/runtime.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { AnyToolDefinition } from '../../../src/types.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { AUTH, JSON_AUTH, TOKEN, createFixture, sseFrames } from '../http/fixtures.js'
import type { SseFrame } from '../http/fixtures.js'
import { until } from '../../support/poll.js'
import { createStoreRunRecords } from '../../../src/durable/runs.js'
import type { RunRecordJson } from '../../../src/durable/run-table.js'

/** Writes a `/v1/runs` record as another process would (its view in runs/http-run-<id>). */
const putRecord = (store: DurableStore, record: object) => createStoreRunRecords(store).put(record as RunRecordJson)

const cleanups: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => undefined)
})

/** One "process" on `store`: the npm start wiring (sandbox, broker and runtime over the store, the app with its shutdown signal). */
function processOn(store: DurableStore, runs?: RunTableOptions, extra: readonly AnyToolDefinition[] = [], heldPending?: Promise<void>) {
  const codeRuntime = createSandboxRuntime({ memoryMb: 32, prespawn: 0, parkAfterMs: 30 })
  const hub = createSessionLogHub()
  const approvals = createApprovalBroker({ store })
  // `heldPending`: the runtime's listing of open requests (what a resumed run's adoption reads first) waits for it.
  const seen = heldPending === undefined ? approvals : { ...approvals, pending: async () => (await heldPending, approvals.pending()) }
  const runtime = createToolRuntime({ mode: 'both', codeRuntime, sessionLog: hub, approvals: seen, store, runs: { resumeEveryMs: 0 } })
  const paid: number[] = []
  runtime.register(
    defineTool({
      name: 'pay',
      description: 'Pays (a person approves first).',
      parameters: { cents: { type: 'number', required: true } },
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: async (args) => {
        paid.push(args.cents)
        return `paid ${args.cents}`
      },
      // So other calls may run while it waits for a person.
      isConcurrencySafe: () => true,
    }),
  )
  runtime.register(
    defineTool({
      name: 'note',
      description: 'Returns its text.',
      parameters: { text: { type: 'string', required: true } },
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: (args) => args.text,
      isConcurrencySafe: () => true,
    }),
  )
  for (const tool of extra) runtime.register(tool)
  runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
  const stopping = new AbortController()
  const app = createToolsApp(runtime, { token: TOKEN, signal: stopping.signal, ...(runs === undefined ? {} : { runs }) })
  let stopped: Promise<void> | undefined
  /** What examples/start.ts does on Ctrl+C, in its order. */
  const shutdown = (): Promise<void> =>
    (stopped ??= (async () => {
      await runtime.dispose()
      stopping.abort(new DOMException('the server is shutting down', 'AbortError'))
      await codeRuntime.dispose()
      await approvals.dispose()
    })())
  cleanups.push(shutdown)
  const start = async (code: string): Promise<string> => {
    const response = await app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code, description: 'pays' }) })
    const body = (await response.json()) as { id: string }
    expect(response.status, JSON.stringify(body)).toBe(202)
    return body.id
  }
  const events = (id: string, lastEventId?: number) =>
    app.request(`/v1/runs/${id}/events`, { headers: { ...AUTH, ...(lastEventId === undefined ? {} : { 'Last-Event-ID': String(lastEventId) }) } })
  const get = async (id: string) => (await (await app.request(`/v1/runs/${id}`, { headers: AUTH })).json()) as RunBody
  return { app, runtime, approvals, paid, shutdown, start, events, get }
}

/** Reads frames until `stop` says so (or the stream ends); returns them. */
async function readUntil(stream: ReturnType<typeof sseFrames>, stop: (frame: SseFrame) => boolean): Promise<SseFrame[]> {
  const frames: SseFrame[] = []
  for (;;) {
    const frame = await stream.next()
    if (frame === undefined) return frames
    frames.push(frame)
    if (stop(frame)) return frames
  }
}

/** Whether the one run's record holds a parked state (its view is there from its start). */
const parked = async (store: DurableStore) => {
  const [entry] = (await store.list('runs/')).entries
  return entry !== undefined && (JSON.parse((await store.get(entry.key))?.value ?? '{}') as { park?: unknown }).park !== undefined ? true : undefined
}
const eventKeys = async (store: DurableStore) => (await store.list(RUN_EVENTS_PREFIX)).entries.map((e) => e.key)

const PROGRAM = `
console.log('one')
const a = await tools.note({ text: 'before' })
console.log('two', a)
const paid = await tools.pay({ cents: 500 })
console.log('three', paid)
return { a, paid }
`

describe('a /v1/runs run keeps its events across a restart', () => {
  it('waits in app A; A stops as npm start does; app B resumes it: Last-Event-ID from before gets exactly the frames after it, then resumed, then the rest to end', async () => {
    const store = createMemoryStore()
    const a = processOn(store)
    const id = await a.start(PROGRAM)
    // A client follows the run live in A.
    const live = sseFrames(await a.events(id))
    const before = await readUntil(live, (frame) => frame.event === 'approval')
    expect(before.map((f) => f.event)).toEqual(['start', 'log', 'dispatch-start', 'dispatch', 'log', 'dispatch-start', 'approval'])
    await until(() => parked(store), 'the run to park')
    await a.shutdown()
    // The live stream closes without `end` and without the shutdown's own frames (its cut-off call, its DISPOSED result).
    expect(await readUntil(live, () => false)).toEqual([])
    const stored = (await createStoreRunRecords(store).get(id))! as unknown as { status: string; events: { last: number } }
    expect(stored.status).toBe('running')
    expect(stored.events.last).toBe(7)

    const b = processOn(store)
    const { adopted } = await b.runtime.runs.resume({ staleMs: 0 })
    expect(adopted).toBe(1)
    // A client that had read up to the first dispatch-start (id 3) reconnects to B.
    const resumed = sseFrames(await b.events(id, 3))
    const replayed = await readUntil(resumed, (frame) => frame.event === 'resumed')
    expect(replayed.map((f) => [f.id, f.event])).toEqual([...before.slice(3).map((f) => [f.id, f.event]), ['8', 'resumed']])
    // The same frames, byte for byte in their data.
    expect(replayed.slice(0, -1)).toEqual(before.slice(3))
    expect(replayed.at(-1)!.data).toMatchObject({ id, resumed: true })
    // B's run waits again: its snapshot now holds `resumed` too (a third process would go on after it).
    const manifestLast = async () => (JSON.parse((await store.get(`${RUN_EVENTS_PREFIX}${id}`))?.value ?? '{}') as { last?: number }).last ?? 0
    await until(async () => ((await manifestLast()) >= 8 ? true : undefined), "B's snapshot")
    const approval = before.at(-1)!.data as { id: string }
    const listed = await until(async () => (await b.approvals.pending()).find((p) => p.id === approval.id), 'the request in B')
    expect((await b.approvals.decide(listed.id, { decision: 'allow' })).ok).toBe(true)
    const rest = await readUntil(resumed, (frame) => frame.event === 'end')
    expect(rest.at(-1)).toMatchObject({ event: 'end', data: { id, status: 'done' } })
    expect(rest.map((f) => f.event)).toContain('result')
    // Ids only go up, and none repeats, across the restart.
    const ids = [...before, ...replayed, ...rest].filter((f) => f.id !== undefined).map((f) => Number(f.id))
    const afterResume = [...replayed, ...rest].map((f) => Number(f.id))
    expect(afterResume).toEqual([...afterResume].sort((x, y) => x - y))
    expect(new Set(afterResume).size).toBe(afterResume.length)
    expect(Math.min(...afterResume.slice(replayed.length - 1))).toBeGreaterThan(Math.max(...before.map((f) => Number(f.id))))
    expect(ids.length).toBeGreaterThan(before.length)
    expect(b.paid).toEqual([500])
    // Ended where it was resumed: the snapshot is gone with it, the record says done.
    await until(async () => ((await eventKeys(store)).length === 0 ? true : undefined), 'the snapshot to be deleted')
    expect((await b.get(id)).status).toBe('done')
    await b.shutdown()
  }, 60_000)

  it('a decision that lands while B still adopts the run: the calls it lets run are in the log after resumed (its events are heard from its start in B)', async () => {
    const store = createMemoryStore()
    const a = processOn(store)
    const id = await a.start(PROGRAM)
    await readUntil(sseFrames(await a.events(id)), (frame) => frame.event === 'approval')
    await until(() => parked(store), 'the run to park')
    await a.shutdown()

    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const b = processOn(store, undefined, [], held)
    // The adoption waits on the held listing; the resumed run itself is under way and asks again.
    const resuming = b.runtime.runs.resume({ staleMs: 0 })
    const request = await until(async () => (await b.approvals.pending())[0], 'the request in B')
    expect((await b.approvals.decide(request.id, { decision: 'allow' })).ok).toBe(true)
    await until(() => (b.paid.length === 1 ? true : undefined), 'the payment')
    release()
    expect((await resuming).adopted).toBe(1)
    await until(async () => ((await b.get(id)).status === 'done' ? true : undefined), 'the run to end')
    const frames = await readUntil(sseFrames(await b.events(id)), (frame) => frame.event === 'end')
    const after = frames.slice(frames.findIndex((frame) => frame.event === 'resumed'))
    expect(after[0]?.event).toBe('resumed')
    const pay = after.filter((frame) => (frame.data as { name?: unknown }).name === 'pay').map((frame) => frame.event)
    // It asked again in B (its approval frame), then ran.
    expect(pay).toEqual(['dispatch-start', 'approval', 'dispatch'])
    expect(after.map((frame) => frame.event)).toContain('result')
    await b.shutdown()
  }, 60_000)

  it('a run with more frames than maxEventBytesPerRun keeps the newest that fit; a client from before the kept ones gets the gap, then the rest', async () => {
    const store = createMemoryStore()
    const runs = { maxEventBytesPerRun: 4096 }
    const a = processOn(store, runs)
    // 60 log frames of ~300 bytes each: far more than 4 KiB.
    const id = await a.start(`for (let i = 0; i < 60; i++) console.log('line ' + i + ' ' + 'x'.repeat(200))\nreturn await tools.pay({ cents: 1 })`)
    const seen = await readUntil(sseFrames(await a.events(id)), (frame) => frame.event === 'approval')
    await until(() => parked(store), 'the run to park')
    await a.shutdown()
    const last = Number(seen.at(-1)!.id)
    // What the store holds for it is within the bound.
    let storedBytes = 0
    for (const key of await eventKeys(store)) if (key !== `${RUN_EVENTS_PREFIX}${id}`) storedBytes += new TextEncoder().encode((await store.get(key))!.value).byteLength
    expect(storedBytes).toBeGreaterThan(0)
    expect(storedBytes).toBeLessThanOrEqual(4096)

    const b = processOn(store, runs)
    expect((await b.runtime.runs.resume({ staleMs: 0 })).adopted).toBe(1)
    const body = await b.get(id)
    // The resumed run may have said more already: `resumed` itself is the id after A's last (below).
    expect(body.events.last).toBeGreaterThan(last)
    expect(body.events.dropped).toBeGreaterThan(0)
    const frames = await readUntil(sseFrames(await b.events(id, 1)), (frame) => frame.event === 'resumed')
    // The gap names the ids that were not kept, then the newest frames follow with their ids from A, the approval last.
    // The resumed run may drop more frames between the GET and the stream (its approval asks again meanwhile): the gap ends at or after the GET's.
    expect(frames[0]).toMatchObject({ event: 'gap', data: { code: 'EVENTS_DROPPED', first: 2 } })
    const gapLast = (frames[0]!.data as { last: number }).last
    expect(gapLast).toBeGreaterThanOrEqual(body.events.first - 1)
    const kept = frames.slice(1, -1)
    expect(kept.length).toBeGreaterThan(0)
    expect(Number(kept[0]!.id)).toBe(gapLast + 1)
    expect(kept.at(-1)).toEqual(seen.at(-1))
    for (const frame of kept) expect(frame).toEqual(seen.find((s) => s.id === frame.id))
    expect(frames.at(-1)).toMatchObject({ event: 'resumed', id: String(last + 1) })
    await b.shutdown()
  }, 60_000)

  it('garbage under the events key: the run is adopted with an empty buffer whose ids continue after the record’s last one', async () => {
    const store = createMemoryStore()
    const a = processOn(store)
    const id = await a.start(PROGRAM)
    const seen = await readUntil(sseFrames(await a.events(id)), (frame) => frame.event === 'approval')
    await until(() => parked(store), 'the run to park')
    await a.shutdown()
    // Another process (or anything else) wrote over the manifest.
    await store.put(`${RUN_EVENTS_PREFIX}${id}`, '{"v":1,"gen":"zz","pieces":3,"bytes":99999999999,"last":7,"dropped":0}')
    const b = processOn(store)
    expect((await b.runtime.runs.resume({ staleMs: 0 })).adopted).toBe(1)
    const frames = await readUntil(sseFrames(await b.events(id, 2)), (frame) => frame.event === 'resumed')
    expect(frames.map((f) => f.event)).toEqual(['gap', 'resumed'])
    expect(frames[0]!.data).toMatchObject({ first: 3, last: seen.length })
    expect(frames[1]!.id).toBe(String(seen.length + 1))
    await b.shutdown()
  }, 60_000)
})

describe('createStoreRunEvents (the snapshot format)', () => {
  function logOf(texts: readonly string[], maxBytes = 1 << 20) {
    const log = createRunEventLog(maxBytes)
    for (const text of texts) log.append('log', { text })
    return log
  }

  it('round-trips frames under their ids through pieces cut within a small value cap, surrogate pairs whole', async () => {
    const store = createMemoryStore({ maxValueBytes: 1500 })
    const events = createStoreRunEvents(store, 1 << 20)
    const log = logOf(Array.from({ length: 30 }, (_, i) => `frame ${i} 😀 ${'é'.repeat(100)}`))
    await events.put('r1', log)
    const pieces = (await store.list(`${RUN_EVENTS_PREFIX}r1/`)).entries
    expect(pieces.length).toBeGreaterThan(3)
    const restored = await events.load('r1')
    expect(restored).toEqual({ frames: log.since(0).frames, last: 30, dropped: 0 })
    // A second snapshot replaces the first: the old pieces go.
    log.append('log', { text: 'one more' })
    await events.put('r1', log)
    expect((await events.load('r1'))!.last).toBe(31)
    const after = (await store.list(`${RUN_EVENTS_PREFIX}r1/`)).entries.map((e) => e.key)
    expect(after.some((key) => pieces.some((p) => p.key === key))).toBe(false)
    await events.delete('r1')
    expect((await store.list(RUN_EVENTS_PREFIX)).entries).toEqual([])
  })

  it('a snapshot that reserves ids: the next process continues after them, and a reader in the skip gets a gap', async () => {
    const store = createMemoryStore()
    const events = createStoreRunEvents(store, 1 << 20)
    const log = logOf(['a', 'b', 'c'])
    await events.put('r2', log, 1000)
    const restored = (await events.load('r2'))!
    expect(restored.frames.map((f) => f.id)).toEqual([1, 2, 3])
    expect(restored.last).toBe(1003)
    const next = createRunEventLog(1 << 20, undefined, restored)
    expect(next.append('resumed', {})).toBe(1004)
    // From the start: every frame, in order, the skip inside the batch.
    // A batch stops before the skip, so every reader is told of it.
    expect(next.since(0).frames.map((f) => f.id)).toEqual([1, 2, 3])
    expect(next.since(0).gap).toBeUndefined()
    // From the last stored frame: the ids the dead process may have given are a gap, then the new frame.
    expect(next.since(3)).toMatchObject({ gap: { first: 4, last: 1003 }, frames: [{ id: 1004 }] })
    expect(next.since(500)).toMatchObject({ gap: { first: 501, last: 1003 }, frames: [{ id: 1004 }] })
    expect(next.since(1004)).toEqual({ frames: [] })
    // Without a reserve (a run left by a graceful shutdown), ids continue right after the last frame.
    await events.put('r3', log)
    expect((await events.load('r3'))!.last).toBe(3)
    // A manifest whose `next` is behind its `last` is not one this code wrote.
    const manifest = JSON.parse((await store.get(`${RUN_EVENTS_PREFIX}r2`))!.value) as Record<string, unknown>
    await store.put(`${RUN_EVENTS_PREFIX}r2`, JSON.stringify({ ...manifest, next: 2 }))
    expect(await events.load('r2')).toBeUndefined()
  })

  it('keeps the newest frames within the bound and counts the rest as dropped', async () => {
    const store = createMemoryStore()
    const events = createStoreRunEvents(store, 2000)
    const log = logOf(Array.from({ length: 50 }, (_, i) => `frame ${i} ${'x'.repeat(60)}`))
    await events.put('r2', log)
    const restored = (await events.load('r2'))!
    expect(restored.last).toBe(50)
    expect(restored.frames.at(-1)!.id).toBe(50)
    expect(restored.frames.length).toBeLessThan(50)
    expect(restored.dropped).toBe(50 - restored.frames.length)
    expect(restored.frames.map((f) => f.id)).toEqual(Array.from({ length: restored.frames.length }, (_, i) => 51 - restored.frames.length + i))
    expect(JSON.stringify(restored.frames.map((f) => f.text)).length).toBeLessThanOrEqual(2000)
  })

  it('garbage is never a snapshot: each variant differs from a loadable one in one thing and loads as undefined', async () => {
    const store = createMemoryStore()
    const events = createStoreRunEvents(store, 4096)
    const key = `${RUN_EVENTS_PREFIX}r3`
    const frame = (id: number) => `event: log\nid: ${id}\ndata: {}\n\n`
    const good = JSON.stringify([frame(1), frame(2)])
    /** A well-formed snapshot of frames 1 and 2, with `m` over its manifest and `body` as its one piece. */
    const write = async (m: Record<string, unknown> = {}, body: string | null = good) => {
      await store.delete(`${key}/g1.0`)
      await store.put(key, JSON.stringify({ v: 1, gen: 'g1', pieces: 1, bytes: good.length, last: 2, dropped: 0, ...m }))
      if (body !== null) await store.put(`${key}/g1.0`, body)
    }
    const accented = JSON.stringify([frame(1), frame(2)].map((text) => text.replace('{}', '"é"')))
    // The controls: they load.
    await write({ bytes: Buffer.byteLength(accented) }, accented)
    expect((await events.load('r3'))!.frames).toHaveLength(2)
    await write()
    expect(await events.load('r3')).toEqual({ frames: [{ id: 1, text: frame(1) }, { id: 2, text: frame(2) }], last: 2, dropped: 0 })
    await write({ next: 2 })
    expect((await events.load('r3'))!.last).toBe(2)
    const variants: [string, () => Promise<unknown>][] = [
      ['not JSON', () => store.put(key, '{nope')],
      ['JSON null', () => store.put(key, 'null')],
      ['a manifest over 512 chars', () => write({ pad: 'x'.repeat(600) })],
      ['another version', () => write({ v: 2 })],
      ['no generation', () => write({ gen: 7 })],
      ['a generation outside [0-9a-z]', () => write({ gen: 'G1' })],
      ['a size past the bound', () => write({ bytes: 4097 })],
      ['a negative size', () => write({ bytes: -1 })],
      ['a fractional size', () => write({ bytes: 1.5 })],
      ['a size as a string', () => write({ bytes: String(good.length) })],
      ['more pieces than the bound needs', () => write({ pieces: 6 })],
      ['a last past MAX_RESTORED_EVENT_ID', () => write({ last: 1e12 + 1 })],
      ['a negative dropped', () => write({ dropped: -1 })],
      ['a fractional dropped', () => write({ dropped: 0.5 })],
      ['a dropped past MAX_RESTORED_EVENT_ID', () => write({ dropped: 1e12 + 1 })],
      ['a next behind last', () => write({ next: 1 })],
      ['a next past MAX_RESTORED_EVENT_ID', () => write({ next: 1e12 + 1 })],
      ['a missing piece', () => write({}, null)],
      ['a piece longer than declared', () => write({ bytes: good.length - 1 })],
      ['pieces shorter than declared', () => write({ bytes: good.length + 1 })],
      // Its length in chars is what the manifest says, its UTF-8 bytes are 2 more (é twice): bytes, not chars, are the size.
      ['multi-byte text over the declared bytes', () => write({ bytes: accented.length }, accented)],
      ['not JSON in the piece', () => write({ bytes: good.length }, `${good.slice(0, -1)}}`)],
      ['not an array', () => write({ bytes: 4 }, '"ab"')],
      ['more frames than ids', () => write({ last: 1 }, good)],
      ['ids that do not end at last', () => write({ last: 3 })],
      ['a frame that is not a string', () => write({ bytes: JSON.stringify([1, frame(2)]).length }, JSON.stringify([1, frame(2)]))],
      ['a frame text with a second data line', () => {
        const body = JSON.stringify([frame(1), 'event: log\nid: 2\ndata: {}\nevent: end\n\n'])
        return write({ bytes: body.length }, body)
      }],
    ]
    for (const [name, corrupt] of variants) {
      await corrupt()
      expect(await events.load('r3'), name).toBeUndefined()
    }
  })

  it('cuts its body into pieces as large as the store takes, each within the cap, never between the halves of a surrogate pair', async () => {
    const store = createMemoryStore({ maxValueBytes: 1500 })
    const events = createStoreRunEvents(store, 1 << 20)
    const log = createRunEventLog(1 << 20)
    // Pairs at both ends of the surrogate range (U+10000, U+10FFFF), and BMP characters above it (3 bytes each).
    for (let i = 0; i < 40; i++) log.append('log', { text: `${i} ${'😀é'.repeat(20)}${'\ud800\udc00\udbff\udfff\ue000\uffff'.repeat(10)}` })
    await events.put('r4', log)
    const manifest = JSON.parse((await store.get(`${RUN_EVENTS_PREFIX}r4`))!.value) as { gen: string; pieces: number; bytes: number }
    const pieces: string[] = []
    for (let n = 0; n < manifest.pieces; n++) pieces.push((await store.get(`${RUN_EVENTS_PREFIX}r4/${manifest.gen}.${n}`))!.value)
    // 1500 is under 2 KiB: the pieces halve from 64 KiB down to 1 KiB.
    for (const piece of pieces.slice(0, -1)) {
      expect(Buffer.byteLength(piece)).toBeLessThanOrEqual(1024)
      expect(Buffer.byteLength(piece)).toBeGreaterThan(1024 - 4)
    }
    for (const piece of pieces) {
      expect(piece.charCodeAt(0) >= 0xdc00 && piece.charCodeAt(0) <= 0xdfff, 'a piece starting with a low surrogate').toBe(false)
      const lastUnit = piece.charCodeAt(piece.length - 1)
      expect(lastUnit >= 0xd800 && lastUnit <= 0xdbff, 'a piece ending with a high surrogate').toBe(false)
    }
    expect(pieces.reduce((sum, piece) => sum + Buffer.byteLength(piece), 0)).toBe(manifest.bytes)
    expect(await events.load('r4')).toEqual({ frames: log.since(0).frames, last: 40, dropped: 0 })
  })
})

describe('createStoreRunEvents: the bounds a snapshot is read within', () => {
  const frame = (id: number) => `event: log\nid: ${id}\ndata: {}\n\n`
  const key = `${RUN_EVENTS_PREFIX}r5`
  /** Writes a snapshot by hand: `texts` as its body cut into `pieces` pieces, the manifest `m` over the consistent one. */
  async function writeRaw(store: DurableStore, texts: unknown[], m: Record<string, unknown> = {}, pieces = 1, gen: unknown = 'g1') {
    const body = JSON.stringify(texts)
    const size = Math.ceil(body.length / pieces)
    for (let n = 0; n < pieces; n++) await store.put(`${key}/${String(gen)}.${n}`, body.slice(n * size, (n + 1) * size))
    await store.put(key, JSON.stringify({ v: 1, gen, pieces, bytes: Buffer.byteLength(body), last: texts.length, dropped: 0, ...m }))
  }

  it('nothing stored is no snapshot', async () => {
    expect(await createStoreRunEvents(createMemoryStore(), 4096).load('none')).toBeUndefined()
  })

  it('a manifest of 512 characters is read, 513 is not', async () => {
    const store = createMemoryStore()
    const events = createStoreRunEvents(store, 4096)
    const padTo = async (chars: number) => {
      await writeRaw(store, [frame(1)])
      const manifest = (await store.get(key))!.value
      const pad = chars - manifest.length - ',"pad":""'.length
      await store.put(key, `${manifest.slice(0, -1)},"pad":"${'x'.repeat(pad)}"}`)
      expect((await store.get(key))!.value.length).toBe(chars)
    }
    await padTo(512)
    expect((await events.load('r5'))!.frames).toHaveLength(1)
    await padTo(513)
    expect(await events.load('r5')).toBeUndefined()
  })

  it('a snapshot written under a larger bound is not read under a smaller one', async () => {
    const store = createMemoryStore()
    const log = createRunEventLog(1 << 20)
    for (let i = 0; i < 40; i++) log.append('log', { text: 'x'.repeat(100) })
    await createStoreRunEvents(store, 8192).put('r6', log)
    expect((await createStoreRunEvents(store, 8192).load('r6'))!.frames.length).toBeGreaterThan(0)
    expect(await createStoreRunEvents(store, 4096).load('r6')).toBeUndefined()
  })

  it('at most as many pieces as the bound needs at the smallest piece size, plus one', async () => {
    const store = createMemoryStore()
    // 4096 bytes at 1 KiB a piece: 4, plus one for a body cut short of a full piece.
    const events = createStoreRunEvents(store, 4096)
    const texts = [frame(1), frame(2), frame(3), frame(4), frame(5), frame(6)]
    await writeRaw(store, texts, {}, 5)
    expect((await events.load('r5'))!.frames).toHaveLength(6)
    await store.delete(key)
    await writeRaw(store, texts, {}, 6)
    expect(await events.load('r5')).toBeUndefined()
  })

  it('a generation that is not a string is not read, even with pieces under its name', async () => {
    const store = createMemoryStore()
    await writeRaw(store, [frame(1)], {}, 1, 7)
    expect(await createStoreRunEvents(store, 4096).load('r5')).toBeUndefined()
  })

  it('ids past MAX_RESTORED_EVENT_ID are not read, even when the frames carry them', async () => {
    const store = createMemoryStore()
    const ids = [MAX_RESTORED_EVENT_ID, MAX_RESTORED_EVENT_ID + 1]
    await writeRaw(store, ids.map(frame), { last: MAX_RESTORED_EVENT_ID + 1 })
    expect(await createStoreRunEvents(store, 4096).load('r5')).toBeUndefined()
    await writeRaw(store, [frame(MAX_RESTORED_EVENT_ID)], { last: MAX_RESTORED_EVENT_ID })
    expect((await createStoreRunEvents(store, 4096).load('r5'))!.last).toBe(MAX_RESTORED_EVENT_ID)
  })

  it('a body that is a JSON object, more frames than ids (from id 0), or a frame that is an array is not read', async () => {
    const store = createMemoryStore()
    const events = createStoreRunEvents(store, 4096)
    await store.put(`${key}/g1.0`, '{}')
    await store.put(key, JSON.stringify({ v: 1, gen: 'g1', pieces: 1, bytes: 2, last: 0, dropped: 0 }))
    expect(await events.load('r5')).toBeUndefined()
    await writeRaw(store, [frame(0), frame(1)], { last: 1 })
    expect(await events.load('r5')).toBeUndefined()
    await writeRaw(store, [[frame(1)]])
    expect(await events.load('r5')).toBeUndefined()
  })

  it('a piece with more bytes than the manifest has left is the last one read', async () => {
    const base = createMemoryStore()
    const read: string[] = []
    const store: DurableStore = { ...base, get: (k) => (read.push(k), base.get(k)), put: (k, v, o) => base.put(k, v, o), list: (p, o) => base.list(p, o), delete: (k, o) => base.delete(k, o) }
    const body = JSON.stringify([frame(1)])
    // As many characters as the manifest's bytes, but two more bytes (é twice): then a second piece.
    const accented = `${body.slice(0, -1).replace('{}', '"éé"').slice(0, body.length)}`
    await base.put(`${key}/g1.0`, accented)
    await base.put(`${key}/g1.1`, ']')
    await base.put(key, JSON.stringify({ v: 1, gen: 'g1', pieces: 2, bytes: accented.length + 1, last: 1, dropped: 0 }))
    expect(await createStoreRunEvents(store, 4096).load('r5')).toBeUndefined()
    expect(read).toEqual([key, `${key}/g1.0`])
  })

  it('a body of exactly maxBytes keeps every frame; one byte less drops the oldest', async () => {
    const store = createMemoryStore()
    const log = createRunEventLog(1 << 20)
    log.append('log', { text: 'a' })
    log.append('log', { text: 'b' })
    const exact = JSON.stringify(log.since(0).frames.map((f) => f.text)).length
    expect(await (async () => {
      await createStoreRunEvents(store, exact).put('r7', log)
      return createStoreRunEvents(store, exact).load('r7')
    })()).toMatchObject({ last: 2, dropped: 0, frames: [{ id: 1 }, { id: 2 }] })
    await createStoreRunEvents(store, exact - 1).put('r7', log)
    expect(await createStoreRunEvents(store, exact - 1).load('r7')).toMatchObject({ last: 2, dropped: 1, frames: [{ id: 2 }] })
  })

  it('a buffer with no frames left keeps its last id; a snapshot without a reserve writes no next', async () => {
    const store = createMemoryStore()
    const events = createStoreRunEvents(store, 4096)
    const emptied = createRunEventLog(4096, undefined, { frames: [], last: 7, dropped: 7 })
    await events.put('r8', emptied)
    expect(await events.load('r8')).toEqual({ frames: [], last: 7, dropped: 7 })
    expect('next' in JSON.parse((await store.get(`${RUN_EVENTS_PREFIX}r8`))!.value)).toBe(false)
  })

  it('a store that refuses large values gets pieces halved down to 1 KiB, then the refusal; any other failure at once', async () => {
    const log = createRunEventLog(1 << 20)
    for (let i = 0; i < 100; i++) log.append('log', { text: `${i} ${'y'.repeat(500)}` })
    // 40,000 bytes a value: 64 KiB pieces are refused, 32 KiB ones fit.
    const roomy = createMemoryStore({ maxValueBytes: 40_000 })
    await createStoreRunEvents(roomy, 1 << 20).put('r9', log)
    const sizes = await Promise.all((await roomy.list(`${RUN_EVENTS_PREFIX}r9/`)).entries.map(async (e) => Buffer.byteLength((await roomy.get(e.key))!.value)))
    expect(Math.max(...sizes)).toBe(32 * 1024)
    expect((await createStoreRunEvents(roomy, 1 << 20).load('r9'))!.frames).toHaveLength(100)
    // 500 bytes a value: not even 1 KiB pieces fit.
    const tiny = createMemoryStore({ maxValueBytes: 500 })
    await expect(createStoreRunEvents(tiny, 1 << 20).put('r9', log)).rejects.toMatchObject({ code: 'STORE_VALUE_TOO_LARGE' })
    // A store that is down: one attempt, its error.
    const base = createMemoryStore()
    let puts = 0
    const down: DurableStore = {
      ...base,
      get: (k) => base.get(k),
      list: (prefix, options) => base.list(prefix, options),
      delete: (k, options) => base.delete(k, options),
      put: async () => {
        puts++
        throw new Error('store down')
      },
    }
    await expect(createStoreRunEvents(down, 1 << 20).put('r9', log)).rejects.toThrow('store down')
    expect(puts).toBe(1)
  })

  it('more pieces than a page of the store\'s listing: a new snapshot keeps all of its own, and delete removes them all', async () => {
    const base = createMemoryStore({ maxValueBytes: 1500 })
    // A store may list fewer keys than asked: this one gives three a page.
    const store: DurableStore = {
      ...base,
      get: (k) => base.get(k),
      put: (k, v, o) => base.put(k, v, o),
      delete: (k, o) => base.delete(k, o),
      list: (prefix, options) => base.list(prefix, { ...options, limit: Math.min(3, options?.limit ?? 3) }),
    }
    const events = createStoreRunEvents(store, 1 << 20)
    const log = createRunEventLog(1 << 20)
    for (let i = 0; i < 12; i++) log.append('log', { text: 'z'.repeat(1000) })
    const keys = async (): Promise<number> => {
      let count = 0
      for (let after: string | undefined; ; ) {
        const page = await store.list(RUN_EVENTS_PREFIX, { limit: 1000, ...(after === undefined ? {} : { after }) })
        count += page.entries.length
        if (page.cursor === undefined || page.entries.length === 0) return count
        after = page.cursor
      }
    }
    await events.put('r10', log)
    const first = JSON.parse((await store.get(`${RUN_EVENTS_PREFIX}r10`))!.value) as { pieces: number }
    // The manifest and more than a page of pieces.
    expect(first.pieces).toBeGreaterThan(6)
    expect(await keys()).toBe(first.pieces + 1)
    expect((await events.load('r10'))!.frames).toHaveLength(12)
    // A second snapshot of the same run: its pieces replace the first one's, all of them.
    log.append('log', { text: 'one more' })
    await events.put('r10', log)
    const second = JSON.parse((await store.get(`${RUN_EVENTS_PREFIX}r10`))!.value) as { pieces: number }
    expect(await keys()).toBe(second.pieces + 1)
    expect((await events.load('r10'))!.frames).toHaveLength(13)
    await events.delete('r10')
    expect(await keys()).toBe(0)
  })
})

describe('a snapshot leaves the store with its run', () => {
  /** A snapshot of a few frames, as a process would have left it under `id`. */
  async function leaveSnapshot(store: DurableStore, id: string): Promise<void> {
    const log = createRunEventLog(1 << 20)
    log.append('start', { id })
    log.append('log', { text: 'left behind' })
    await createStoreRunEvents(store, 1 << 20).put(id, log)
    expect((await eventKeys(store)).length).toBe(2)
  }

  it('an evicted run takes its snapshot with it, stray pieces included', async () => {
    const store = createMemoryStore()
    const fixture = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime(), store }, { runs: { retentionMs: 1 } })
    cleanups.push(() => fixture.runtime.dispose())
    const response = await fixture.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code: 'return 1', description: 'quick' }) })
    const { id } = (await response.json()) as { id: string }
    await until(async () => ((((await createStoreRunRecords(store).get(id)) ?? {}) as { status?: string }).status === 'done' ? true : undefined), 'the run to end')
    // Its own writes first (the end's record, then its snapshot's removal): the snapshot below comes after them.
    await fixture.runtime.runs.drained()
    // Left by an earlier process (or a write a crash interrupted): the eviction of the run removes it.
    await leaveSnapshot(store, id)
    await new Promise((resolve) => setTimeout(resolve, 20))
    // Any lookup sweeps the table: the run is past its retention.
    expect((await fixture.app.request(`/v1/runs/${crypto.randomUUID()}`, { headers: AUTH })).status).toBe(404)
    await until(async () => ((await createStoreRunRecords(store).get(id)) === undefined && (await eventKeys(store)).length === 0 ? true : undefined), 'the record and the snapshot to go')
  })

  it('a run ended as lost (INTERRUPTED) by another process loses its snapshot too', async () => {
    const store = createMemoryStore()
    const fixture = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime(), store })
    cleanups.push(() => fixture.runtime.dispose())
    const id = crypto.randomUUID()
    const record: RunRecordJson = { id, callId: `http-run-${id}`, status: 'running', createdAt: Date.now(), events: { first: 1, last: 2, dropped: 0 }, owner: crypto.randomUUID() }
    await putRecord(store, (record))
    await leaveSnapshot(store, id)
    await fixture.runtime.runs.resume({ staleMs: 30_000 })
    expect(((await createStoreRunRecords(store).get(id))! as unknown as { status: string }).status).toBe('failed')
    expect(await eventKeys(store)).toEqual([])
  })
})
