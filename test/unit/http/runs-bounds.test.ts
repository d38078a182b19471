/**
 * `/v1/runs` against hostile clients and heavy runs: the host is part of the boundary.
 * Malformed ids and `Last-Event-ID`s are refused before anything is looked up or
 * allocated; 10,000 lookups of unknown ids leave the table as it was; a run that logs a
 * lot keeps at most `maxEventBytesPerRun` of frames and tells a late client what it
 * dropped; a table full of running runs refuses new ones (503 `OVERLOADED`); the request
 * checks are `POST /v1/run`'s; records reach a durable store and leave it on eviction.
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import { createMemoryStore } from '../../../src/durable/index.js'
import type { DurableStore } from '../../../src/durable/index.js'
import { createToolsApp, runsHeld } from '../../../src/http/index.js'
import type { RunBody, ToolsAppOptions } from '../../../src/http/index.js'
import { utf8Length } from '../../../src/durable/run-table.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { eventually, until } from '../../support/poll.js'
import { AUTH, JSON_AUTH, TOKEN, createFixture, errorOf, parseSse } from './fixtures.js'
import { createStoreRunRecords } from '../../../src/durable/runs.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

function setup(options: Partial<ToolsAppOptions> & { readonly store?: DurableStore } = {}) {
  const { store, ...appOptions } = options
  const fixture = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime({ wallMs: 30_000 }), ...(store === undefined ? {} : { store }) }, appOptions)
  const start = async (code: string, extra: Record<string, unknown> = {}): Promise<{ id: string; callId: string }> => {
    const response = await fixture.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code, description: 'd', ...extra }) })
    expect(response.status, await response.clone().text()).toBe(202)
    return (await response.json()) as { id: string; callId: string }
  }
  const get = async (id: string): Promise<RunBody> => (await (await fixture.app.request(`/v1/runs/${id}`, { headers: AUTH })).json()) as RunBody
  const ended = async (id: string): Promise<RunBody> => {
    await until(() => runsHeld(fixture.app)!.live === 0, 'no live run', 20_000)
    return get(id)
  }
  const events = (id: string, lastEventId?: string) =>
    fixture.app.request(`/v1/runs/${id}/events`, { headers: lastEventId === undefined ? AUTH : { ...AUTH, 'Last-Event-ID': lastEventId } })
  return { ...fixture, start, get, ended, events }
}

/** The raw frames of an event-stream body (keep-alive comments left out). */
const rawFrames = (text: string): string[] => text.split('\n\n').filter((block) => block.trim() !== '' && !block.startsWith(':')).map((block) => `${block}\n\n`)

describe('/v1/runs: ids and Last-Event-ID from a hostile client', () => {
  it('a malformed or unknown id is 404 RUN_NOT_FOUND on every route, without echoing it', async () => {
    const f = setup()
    const huge = 'a'.repeat(10_000)
    for (const id of [huge, crypto.randomUUID().toUpperCase(), 'not-a-uuid', `${crypto.randomUUID()}x`, '%00']) {
      for (const [method, suffix] of [['GET', ''], ['DELETE', ''], ['GET', '/events']] as const) {
        const response = await f.app.request(`/v1/runs/${id}${suffix}`, { method, headers: AUTH })
        expect(response.status).toBe(404)
        const error = await errorOf(response)
        expect(error.code).toBe('RUN_NOT_FOUND')
        expect(error.message).toBe('no such run (a run id is a UUID)')
      }
    }
    // HEAD of a live run's events: the stream's headers.
    const { id: live } = await f.start('await tools.wait({}); return 1')
    const head = await f.app.request(`/v1/runs/${live}/events`, { method: 'HEAD', headers: AUTH })
    expect(head.status).toBe(200)
    expect(head.headers.get('Content-Type')).toBe('text/event-stream; charset=utf-8')
    await f.app.request(`/v1/runs/${live}`, { method: 'DELETE', headers: AUTH })
    const put = await f.app.request(`/v1/runs/${crypto.randomUUID()}`, { method: 'PUT', headers: AUTH })
    expect(put.status).toBe(405)
    expect(put.headers.get('Allow')).toBe('GET, HEAD, DELETE')
    // Without the token nothing is revealed, not even whether the route exists.
    expect((await f.app.request(`/v1/runs/${crypto.randomUUID()}`)).status).toBe(401)
  })

  it('Last-Event-ID must be an id this run assigned: huge, negative, non-numeric or future ids are 400', async () => {
    const f = setup()
    const { id } = await f.start('return 1')
    await f.ended(id)
    const frames = parseSse(await (await f.events(id)).text())
    const last = frames.length
    for (const bad of ['99999999999999999999', '1e3', '-1', 'abc', '0x10', '1.5', String(last + 1), '9'.repeat(5000)]) {
      const response = await f.events(id, bad)
      expect(response.status, bad).toBe(400)
      expect((await errorOf(response)).code).toBe('INVALID_REQUEST')
    }
    // Empty (what a first EventSource connection sends, if anything) means from the start.
    expect(parseSse(await (await f.events(id, ' ')).text())).toEqual(frames)
    expect(parseSse(await (await f.events(id, '0')).text())).toEqual(frames)
  })

  it('10,000 lookups of unknown ids allocate nothing in the table and leave the heap as it was', async () => {
    const f = setup()
    const { id } = await f.start('return 1')
    await f.ended(id)
    const before = runsHeld(f.app)!
    const lookup = async () => {
      for (let i = 0; i < 10_000; i++) {
        const path = i % 3 === 0 ? `/v1/runs/${crypto.randomUUID()}` : i % 3 === 1 ? `/v1/runs/${crypto.randomUUID()}/events` : `/v1/runs/${'z'.repeat(1 + (i % 500))}`
        const response = await f.app.request(path, { method: i % 5 === 0 && !path.endsWith('/events') ? 'DELETE' : 'GET', headers: AUTH })
        expect(response.status).toBe(404)
        await response.arrayBuffer()
      }
    }
    await lookup() // warm-up: code paths, caches
    gc()
    gc()
    const heapBefore = process.memoryUsage().heapUsed
    await lookup()
    gc()
    gc()
    const grown = process.memoryUsage().heapUsed - heapBefore
    expect(runsHeld(f.app)).toEqual(before)
    // Nothing is kept per lookup: 10,000 of them keeping even 500 bytes each would be 5 MB.
    expect(grown).toBeLessThan(2 * 1024 * 1024)
  }, 60_000)
})

describe('/v1/runs: a run that logs a lot', () => {
  it('keeps at most maxEventBytesPerRun of frames (plus its result and end), and a late client is told which ids were dropped', async () => {
    const max = 8 * 1024
    const f = setup({ runs: { maxEventBytesPerRun: max } })
    const { id } = await f.start(`for (let i = 0; i < 300; i++) console.log(String(i).padEnd(100, '.')); return 'logged'`)
    const body = await f.ended(id)
    expect(body.status).toBe('done')
    expect(body.events.dropped).toBeGreaterThan(250)
    expect(body.events.first).toBe(body.events.dropped + 1)

    const text = await (await f.events(id)).text()
    const raw = rawFrames(text)
    const frames = parseSse(text)
    expect(frames[0]).toEqual({ event: 'gap', data: expect.objectContaining({ id, code: 'EVENTS_DROPPED', first: 1, last: body.events.first - 1 }) })
    // After the gap: every id still held, in order, without a hole, ending with result and end.
    const ids = frames.slice(1).map((frame) => Number(frame.id))
    expect(ids).toEqual(Array.from({ length: body.events.last - body.events.first + 1 }, (_, i) => body.events.first + i))
    expect(frames.slice(-2).map((frame) => frame.event)).toEqual(['result', 'end'])
    // The bound: the frames kept besides the pinned result and end fit in maxEventBytesPerRun.
    const kept = raw.slice(1, -2).reduce((sum, frame) => sum + utf8Length(frame), 0)
    expect(kept).toBeLessThanOrEqual(max)
    expect(kept).toBeGreaterThan(max / 2)
    expect(frames.slice(1, -2).every((frame) => frame.event === 'log')).toBe(true)

    // A client resuming inside the dropped range hears of the rest of the gap, then gets every frame held.
    const resumed = parseSse(await (await f.events(id, '10')).text())
    expect(resumed[0]).toMatchObject({ event: 'gap', data: { first: 11, last: body.events.first - 1 } })
    expect(resumed.slice(1)).toEqual(frames.slice(1))
    // One inside the held range gets no gap.
    const inside = parseSse(await (await f.events(id, String(body.events.first))).text())
    expect(inside).toEqual(frames.slice(2))
  })
})

describe('/v1/runs/:id/events: a slow reader', () => {
  it('a buffer larger than maxStreamBacklogBytes is replayed at the reader\'s pace, whole', async () => {
    const f = setup({ maxStreamBacklogBytes: 16 * 1024 })
    const { id } = await f.start(`for (let i = 0; i < 40; i++) await tools.echo({ text: String(i).padEnd(2000, '.') }); return 'ok'`)
    await f.ended(id)
    const frames = parseSse(await (await f.events(id)).text())
    // 40 sub-calls × (dispatch-start + dispatch) of more than 2 KB each: about 10 backlogs' worth.
    expect(frames.map((frame) => frame.event).filter((event) => event === 'dispatch')).toHaveLength(40)
    expect(frames.map((frame) => Number(frame.id))).toEqual(frames.map((_, i) => i + 1))
    expect(frames.at(-1)!.event).toBe('end')
  })

  it('a reader slower than its live run holds at most a batch in its stream: it gets every frame, or a gap for those its run\'s buffer dropped meanwhile', async () => {
    for (const maxEventBytesPerRun of [1024 * 1024, 16 * 1024]) {
      const f = setup({ maxStreamBacklogBytes: 16 * 1024, runs: { maxEventBytesPerRun } })
      let release: () => void = () => {}
      const held = new Promise<void>((resolve) => (release = resolve))
      f.runtime.register(
        defineTool({ name: 'hold', description: 'Waits for the test.', parameters: {}, output: { schema: { type: 'null' }, render: () => [] }, execute: async () => (await held, null) }),
      )
      const { id } = await f.start(`await tools.hold({}); for (let i = 0; i < 40; i++) await tools.echo({ text: String(i).padEnd(2000, '.') }); return 'ok'`)
      // This client connects, then reads nothing while the run floods it (about 260 KB of frames).
      const slow = await f.events(id)
      await new Promise((resolve) => setTimeout(resolve, 50))
      release()
      const body = await f.ended(id)
      const got = parseSse(await slow.text())
      expect(got.at(-1)).toMatchObject({ event: 'end', data: { id, status: 'done' } })
      expect(got.filter((frame) => frame.event === 'error')).toEqual([])
      // Every id of the run, once: read, or named by a gap.
      const accounted: number[] = []
      for (const frame of got) {
        if (frame.event === 'gap') {
          const { first, last } = frame.data as { first: number; last: number }
          for (let i = first; i <= last; i++) accounted.push(i)
        } else accounted.push(Number(frame.id))
      }
      expect(accounted).toEqual(Array.from({ length: body.events.last }, (_, i) => i + 1))
      const gaps = got.filter((frame) => frame.event === 'gap').length
      if (maxEventBytesPerRun === 1024 * 1024) {
        expect(gaps).toBe(0)
        expect(got).toEqual(parseSse(await (await f.events(id)).text()))
      } else expect(gaps).toBeGreaterThan(0)
      expect(runsHeld(f.app)!.subscribers).toBe(0)
    }
  })
})

describe('/v1/runs/:id/events: many readers', () => {
  it('at most runs.maxStreams event streams at once, every run together: one more is 503 OVERLOADED with Retry-After before anything is replayed; a closed stream frees its place', async () => {
    // Each stream replays its run's whole buffer (up to maxEventBytesPerRun) on the host's
    // thread: 300 readers of one run with a 1 MiB buffer held GET /v1/health for 15 s.
    const f = setup({ runs: { maxStreams: 3 } })
    const a = await f.start('await tools.wait({}); return 1')
    const b = await f.start('return 2')
    await f.wait.started
    const open = [await f.events(a.id), await f.events(a.id), await f.events(a.id)]
    for (const response of open) expect(response.status).toBe(200)
    expect(runsHeld(f.app)!.streams).toBe(3)
    for (const id of [a.id, b.id]) {
      const refused = await f.events(id)
      expect(refused.status).toBe(503)
      expect(refused.headers.get('Retry-After')).toBe('1')
      expect(await errorOf(refused)).toEqual({ code: 'OVERLOADED', message: 'this server has 3 event streams open (runs.maxStreams); close one or retry later' })
    }
    // HEAD opens no stream.
    expect((await f.app.request(`/v1/runs/${b.id}/events`, { method: 'HEAD', headers: AUTH })).status).toBe(200)
    // A stream its client cancels gives its place back.
    await open[0]!.body!.cancel()
    await until(() => runsHeld(f.app)!.streams === 2, 'two streams', 5_000)
    const again = await f.events(b.id)
    expect(again.status).toBe(200)
    expect(parseSse(await again.text()).at(-1)).toMatchObject({ event: 'end', data: { id: b.id, status: 'done' } })
    // So does a stream that ends with its run.
    await f.app.request(`/v1/runs/${a.id}`, { method: 'DELETE', headers: AUTH })
    for (const response of open.slice(1)) expect(parseSse(await response.text()).at(-1)).toMatchObject({ event: 'end', data: { id: a.id, status: 'cancelled' } })
    await until(() => runsHeld(f.app)!.streams === 0, 'no stream', 5_000)
  })
})

describe('/v1/runs: admission and the request checks of POST /v1/run', () => {
  it('a table full of running runs answers 503 OVERLOADED; once one ends, a new run is admitted in its place', async () => {
    const f = setup({ runs: { maxRuns: 2 } })
    const first = await f.start('await tools.wait({}); return 1')
    await f.wait.started
    f.wait.reset()
    const second = await f.start('await tools.wait({}); return 2')
    await f.wait.started
    const refused = await f.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code: 'return 3', description: 'd' }) })
    expect(refused.status).toBe(503)
    expect(refused.headers.get('Retry-After')).toBe('1')
    expect((await errorOf(refused)).code).toBe('OVERLOADED')
    expect((await f.app.request(`/v1/runs/${first.id}`, { method: 'DELETE', headers: AUTH })).status).toBe(200)
    await until(() => runsHeld(f.app)!.live === 1)
    const third = await f.start('return 3')
    // The finished run made room: the oldest finished one is evicted first, running ones never.
    expect((await f.app.request(`/v1/runs/${first.id}`, { headers: AUTH })).status).toBe(404)
    expect((await f.get(second.id)).status).toBe('running')
    expect(third.id).not.toBe(first.id)
    await f.app.request(`/v1/runs/${second.id}`, { method: 'DELETE', headers: AUTH })
    await until(() => runsHeld(f.app)!.live === 0)
    expect(f.inFlight).toBe(0)
  })

  it('the body, agent and tool checks are those of POST /v1/run; the agent is kept with the run', async () => {
    const f = setup()
    const post = (body: unknown) => f.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify(body) })
    expect((await errorOf(await post({ code: 'return 1', description: 'd', callId: 'mine' }))).message).toContain('callId is assigned by the server')
    expect((await errorOf(await post({ code: 'return 1', description: 'd', source: 'x' }))).message).toContain('unknown field "source"')
    expect((await errorOf(await f.app.request('/v1/runs', { method: 'POST', headers: { ...AUTH, 'Content-Type': 'text/plain' }, body: '{}' }))).code).toBe('UNSUPPORTED_MEDIA_TYPE')
    expect(runsHeld(f.app)!.runs).toBe(0)

    const { id } = await f.start('return await tools.secret({})', { agent: 'alice' })
    const body = await f.ended(id)
    expect(body).toMatchObject({ agent: 'alice', status: 'done', result: { isError: false, value: { result: 'for alice' } } })
    const start = parseSse(await (await f.events(id)).text())[0]
    expect(start).toMatchObject({ event: 'start', id: '1', data: { id, callId: body.callId, agent: 'alice' } })

    // A program that fails ends `failed` with the result POST /v1/run would give.
    const failed = await f.start('throw new Error("nope")')
    expect(await f.ended(failed.id)).toMatchObject({ status: 'failed', result: { isError: true, error: { info: { code: 'CODE_RUN_FAILED' } } } })

    const native = createFixture({ mode: 'native', codeRuntime: createInProcessRuntime() })
    const unknown = await native.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code: 'return 1', description: 'd' }) })
    expect(unknown.status).toBe(404)
    expect((await errorOf(unknown)).code).toBe('UNKNOWN_TOOL')
  })

  it('the app shutting down ends a background run (failed, not cancelled: nobody asked)', async () => {
    const shutdown = new AbortController()
    const store = createMemoryStore()
    const f = setup({ signal: shutdown.signal, store })
    const { id } = await f.start('await tools.wait({}); return 1')
    await f.wait.started
    shutdown.abort()
    await until(() => runsHeld(f.app)!.live === 0)
    // Every route answers 503 now; the record says how the run ended.
    expect((await f.app.request(`/v1/runs/${id}`, { headers: AUTH })).status).toBe(503)
    expect(f.wait.aborted).toBe(1)
    await eventually(async () => expect(await createStoreRunRecords(store).get(id)).toMatchObject({ status: 'failed', result: { isError: true } }), 10_000)
  })
})

describe('/v1/runs: a runtime that breaks its contract', () => {
  it('an execute that rejects ends the run failed, without a result, with an INTERNAL error event and end; onError hears it', async () => {
    const fixture = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() })
    const reported: unknown[] = []
    const broken = Object.create(fixture.runtime, { execute: { value: () => Promise.reject(new Error('a bug')) } }) as typeof fixture.runtime
    const app = createToolsApp(broken, { token: TOKEN, onError: (error) => reported.push(error) })
    const started = await app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code: 'return 1', description: 'd' }) })
    const { id } = (await started.json()) as { id: string }
    await until(() => runsHeld(app)!.live === 0)
    const body = (await (await app.request(`/v1/runs/${id}`, { headers: AUTH })).json()) as RunBody
    expect(body.status).toBe('failed')
    expect(body.result).toBeUndefined()
    const frames = parseSse(await (await app.request(`/v1/runs/${id}/events`, { headers: AUTH })).text())
    expect(frames.map((frame) => frame.event)).toEqual(['start', 'error', 'end'])
    expect(frames[1]!.data).toEqual({ error: { code: 'INTERNAL', message: 'internal error' } })
    expect(reported).toEqual([new Error('a bug')])
  })
})

describe('/v1/runs with a durable store', () => {
  it('each run record reaches the store (status, result, buffer summary); another app on the store reads it; eviction deletes it', async () => {
    const store = createMemoryStore()
    const f = setup({ store, runs: { maxRuns: 1 } })
    const { id, callId } = await f.start('return 40 + 2')
    const body = await f.ended(id)
    const stored = await until(async () => {
      const record = await createStoreRunRecords(store).get(id)
      return record?.status === 'done' && record
    }, 'the record to say done', 10_000)
    expect(stored).toEqual({ id, callId, status: 'done', createdAt: body.createdAt, settledAt: body.settledAt, result: body.result, events: body.events, owner: expect.stringMatching(/^[0-9a-f-]{36}$/), principal: 'admin' })

    // Another process (an app sharing the store) answers GET from the record; DELETE of a finished run is idempotent there too.
    const other = createToolsApp(f.runtime, { token: TOKEN })
    const elsewhere = await other.request(`/v1/runs/${id}`, { headers: AUTH })
    expect(elsewhere.status).toBe(200)
    expect(await elsewhere.json()).toEqual(body)
    expect((await other.request(`/v1/runs/${id}`, { method: 'DELETE', headers: AUTH })).status).toBe(200)
    expect((await other.request(`/v1/runs/${id}/events`, { headers: AUTH })).status).toBe(404)
    // A record that is not one (unreadable, another id, a status we never write) is absent, not a 500.
    const raw = JSON.parse((await store.get(`runs/${callId}`))!.value) as { view: Record<string, unknown> }
    for (const junk of ['{not json', JSON.stringify({ ...raw, view: { ...raw.view, id: crypto.randomUUID() } }), JSON.stringify({ ...raw, view: { ...raw.view, status: 'waiting' } }), 'null']) {
      const forged = crypto.randomUUID()
      await store.put(`runs/http-run-${forged}`, junk.replaceAll(callId, `http-run-${forged}`).replace(/"id":"[^"]+"/, (m) => (m.includes(id) ? `"id":"${forged}"` : m)))
      const answer = await other.request(`/v1/runs/${forged}`, { headers: AUTH })
      expect(answer.status, junk).toBe(404)
      expect((await errorOf(answer)).code).toBe('RUN_NOT_FOUND')
    }

    // maxRuns 1: the next run evicts this one, and its record leaves the store.
    const next = await f.start('return 1')
    await f.ended(next.id)
    await eventually(async () => expect(await createStoreRunRecords(store).get(id)).toBeUndefined(), 10_000)
    expect((await other.request(`/v1/runs/${id}`, { headers: AUTH })).status).toBe(404)
  })
})
