/**
 * Event streams have back-pressure, a backlog cap and a write timeout (issue 19, finding 7:
 * a client that never read pinned 320 MB of frames after its run ended). A stream that
 * falls behind is closed with a final `error` event (`STREAM_BACKLOG`); the run goes on.
 */
import { connect } from 'node:net'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest'
import { serve } from '../../../platforms/node/index.js'
import type { ServedApp } from '../../../platforms/node/index.js'
import { createToolsApp } from '../../../src/http/index.js'
import { createSseSender } from '../../../src/http/_sse-sender.js'
import type { FallBehindReason, SseSenderOptions } from '../../../src/http/_sse-sender.js'
import type { SSEStreamingApi } from 'hono/streaming'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { JSON_AUTH, TOKEN, createFixture, parseSse } from './fixtures.js'
import { until } from '../../support/poll.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** 200 sub-calls of 100 KB each: about 40 MB of frames (arguments in both events, content in one). */
const FLOOD = `for (let i = 0; i < 200; i++) await tools.echo({ text: String(i).padEnd(100000, 'x') }); return 'done'`

const heapAfterGc = (): number => {
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

describe('a client that stops reading', () => {
  const fixture = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime({ wallMs: 60_000 }) }, { maxStreamBacklogBytes: 1024 * 1024, streamWriteTimeoutMs: 120_000 })
  let server: ServedApp
  beforeAll(async () => {
    server = await serve(fixture.app, { port: 0 })
  })
  afterAll(async () => {
    await server.close()
    await fixture.runtime.dispose()
  })

  it('is cut off at the backlog cap: the run finishes unaffected, nothing of its 40 MB stays pinned, the client finally reads STREAM_BACKLOG', async () => {
    const before = heapAfterGc()
    const body = JSON.stringify({ code: FLOOD, description: 'flood' })
    const socket = connect(server.port, '127.0.0.1')
    await new Promise<void>((resolve) => socket.once('connect', resolve))
    // Not a byte read until the run is over.
    socket.pause()
    socket.write(
      `POST /v1/run HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nAuthorization: ${JSON_AUTH.Authorization}\r\nContent-Type: application/json\r\n` +
        `Accept: text/event-stream\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    )
    onTestFinished(() => void socket.destroy())
    await until(() => fixture.results.some((r) => r.name === 'run_code'), 'the run to end')
    const run = fixture.results.find((r) => r.name === 'run_code')!.result
    // The run was not aborted by its stream being cut: every sub-call ran, the program returned.
    expect(run.isError).toBe(false)
    expect(run.isError ? undefined : run.value).toMatchObject({ result: 'done' })
    expect(fixture.results.filter((r) => r.name === 'echo')).toHaveLength(200)
    // The stream stopped listening long before: no subscription is left.
    expect(fixture.hub.subscriberCount).toBe(0)
    // About 40 MB was produced for this client; what the host still holds is the cap, a frame
    // and socket buffers (the fixture's own record of the 200 results is let go first).
    fixture.results.length = 0
    const retained = heapAfterGc() - before
    expect(retained).toBeLessThan(10 * 1024 * 1024)

    // The client reads at last: what it got, then the final event, then the end of the stream.
    let text = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => (text += chunk))
    socket.resume()
    await new Promise<void>((resolve) => socket.once('end', resolve))
    socket.destroy()
    const payload = text.slice(text.indexOf('\r\n\r\n') + 4)
    // Chunked transfer encoding: keep only the SSE frames.
    const frames = parseSse(payload.split(/\r\n[0-9a-f]+\r\n|^[0-9a-f]+\r\n/).join('').replace(/\r\n0\r\n\r\n$/, ''))
    expect(frames[0]!.event).toBe('start')
    const last = frames.at(-1)!
    expect(last.event).toBe('error')
    expect(last.data).toMatchObject({ error: { code: 'STREAM_BACKLOG', message: expect.stringMatching(/^this stream fell behind: \d+ bytes of events were not read in time \(maxStreamBacklogBytes 1048576\)/) } })
    expect(frames.some((f) => f.event === 'result')).toBe(false)
    // Ids are consecutive up to the drop; the final event's id is past the dropped ones'.
    const ids = frames.map((f) => Number(f.id))
    expect(ids.slice(0, -1)).toEqual(ids.slice(0, -1).map((_, i) => i + 1))
    expect(ids.at(-1)!).toBeGreaterThan(ids.length)
  }, 60_000)
})

describe('a client that reads nothing at all', () => {
  it('is aborted at the write timeout; the run goes on and nothing of the stream remains', async () => {
    const fixture = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime({ wallMs: 60_000 }) }, { maxStreamBacklogBytes: 1024 * 1024, streamWriteTimeoutMs: 300 })
    const response = await fixture.app.request('/v1/run', {
      method: 'POST',
      headers: { ...JSON_AUTH, Accept: 'text/event-stream' },
      body: JSON.stringify({ code: FLOOD, description: 'flood' }),
    })
    expect(response.status).toBe(200)
    await until(() => fixture.results.some((r) => r.name === 'run_code'), 'the run to end')
    expect(fixture.results.find((r) => r.name === 'run_code')!.result.isError).toBe(false)
    expect(fixture.hub.subscriberCount).toBe(0)
    // The body was cancelled: a late reader finds at most what was already handed over, then the end.
    const text = await response.text().catch(() => '')
    expect(text.length).toBeLessThan(1024 * 1024)
    await fixture.runtime.dispose()
  }, 60_000)

  it('a client that keeps up gets every event, whatever the total', async () => {
    const fixture = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime({ wallMs: 60_000 }) }, { maxStreamBacklogBytes: 1024 * 1024 })
    const response = await fixture.app.request('/v1/run', {
      method: 'POST',
      headers: { ...JSON_AUTH, Accept: 'text/event-stream' },
      body: JSON.stringify({ code: FLOOD, description: 'flood' }),
    })
    const frames = parseSse(await response.text())
    expect(frames.filter((f) => f.event === 'dispatch')).toHaveLength(200)
    expect(frames.at(-1)!.event).toBe('result')
    await fixture.runtime.dispose()
  }, 60_000)

  it('refuses invalid options', () => {
    const { runtime } = createFixture()
    for (const bad of [{ maxStreamBacklogBytes: 0 }, { maxStreamBacklogBytes: 1.5 }, { streamWriteTimeoutMs: 0 }, { streamWriteTimeoutMs: Number.NaN }]) {
      expect(() => createToolsApp(runtime, { token: TOKEN, ...(bad as object) })).toThrow(/maxStreamBacklogBytes must be a positive integer|streamWriteTimeoutMs must be a positive number/)
    }
  })
})

/**
 * The writer itself, on a stream the test drives: each write waits until the test takes it
 * (or never), so the queue, the cap and the timeout are exact, without a socket.
 */
function fakeStream() {
  const writes: { text: string; taken: boolean; take: () => void }[] = []
  let aborted = false
  let closed = 0
  const stream = {
    write(chunk: Uint8Array) {
      return new Promise((resolve) => {
        const write = { text: new TextDecoder().decode(chunk), taken: false, take: () => ((write.taken = true), resolve(stream)) }
        writes.push(write)
      })
    },
    abort() {
      aborted = true
    },
    get aborted() {
      return aborted
    },
    close() {
      closed++
      return Promise.resolve()
    },
  }
  return {
    stream: stream as unknown as SSEStreamingApi,
    writes,
    /** Takes every write, and the ones they lead to, until a turn of the loop brings no new one. */
    async takeAll() {
      for (let turn = 0; turn < 100; turn++) {
        const open = writes.filter((w) => !w.taken)
        if (open.length === 0 && turn > 0) return
        for (const w of open) w.take()
        await new Promise((resolve) => setTimeout(resolve, 0))
      }
      throw new Error('the writer kept writing')
    },
    get aborted() {
      return aborted
    },
    get closed() {
      return closed
    },
  }
}

function sender(stream: SSEStreamingApi, options: Partial<SseSenderOptions> = {}) {
  const fell: FallBehindReason[] = []
  const finals: number[] = []
  const s = createSseSender(stream, {
    maxBacklogBytes: 10,
    writeTimeoutMs: 1000,
    finalFrame: (dropped) => (finals.push(dropped), `final:${dropped}`),
    onFallBehind: (reason) => void fell.push(reason),
    ...options,
  })
  return { s, fell, finals }
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0))

describe('createSseSender (the one writer of an event stream)', () => {
  afterEach(() => void vi.useRealTimers())

  it('hands the stream one frame at a time, in order, and counts queued plus in-flight bytes as UTF-8', async () => {
    const f = fakeStream()
    const { s, fell } = sender(f.stream, { maxBacklogBytes: 100 })
    expect(s.backlogBytes).toBe(0)
    s.send('a')
    s.send('é') // 2 bytes
    s.send('ccc')
    // One write is out; the rest wait in the writer's queue, not in the stream's.
    expect(f.writes.map((w) => w.text)).toEqual(['a'])
    expect(s.backlogBytes).toBe(6)
    f.writes[0]!.take()
    await tick()
    expect(f.writes.map((w) => w.text)).toEqual(['a', 'é'])
    expect(s.backlogBytes).toBe(5)
    let drained = false
    void s.drained().then(() => (drained = true))
    await f.takeAll()
    expect(f.writes.map((w) => w.text)).toEqual(['a', 'é', 'ccc'])
    expect(drained).toBe(true)
    expect(s.backlogBytes).toBe(0)
    expect(s.fallen).toBeUndefined()
    expect(fell).toEqual([])
    // A stream that kept up is neither closed nor aborted by its writer: Hono closes it.
    expect(f.closed).toBe(0)
    expect(f.aborted).toBe(false)
  })

  it('drained() resolves at once when nothing is queued, and every waiter once the queue is out', async () => {
    const f = fakeStream()
    const { s } = sender(f.stream, { maxBacklogBytes: 100 })
    let idle = false
    void s.drained().then(() => (idle = true))
    await Promise.resolve()
    expect(idle).toBe(true)
    s.send('x')
    const waiters = [false, false]
    void s.drained().then(() => (waiters[0] = true))
    void s.drained().then(() => (waiters[1] = true))
    await tick()
    expect(waiters).toEqual([false, false])
    await f.takeAll()
    expect(waiters).toEqual([true, true])
  })

  it('accepts a backlog of exactly maxBacklogBytes; one byte more drops the queue, sends the final frame with the dropped bytes, then closes', async () => {
    const f = fakeStream()
    const { s, fell, finals } = sender(f.stream, { maxBacklogBytes: 10 })
    s.send('1234') // being written: 4
    s.send('123456') // queued: 4 + 6 = 10, at the cap
    expect(s.fallen).toBeUndefined()
    expect(s.backlogBytes).toBe(10)
    s.send('x') // 11: over
    expect(s.fallen).toBe('backlog')
    expect(fell).toEqual(['backlog'])
    // Dropped: what was queued (6) and the refused frame (1); the frame being written still goes out.
    expect(finals).toEqual([7])
    expect(s.backlogBytes).toBe(4 + 'final:7'.length)
    // Nothing more is taken once the stream fell behind.
    s.send('late')
    expect(fell).toEqual(['backlog'])
    await f.takeAll()
    expect(f.writes.map((w) => w.text)).toEqual(['1234', 'final:7'])
    expect(f.closed).toBe(1)
    expect(f.aborted).toBe(false)
    expect(s.backlogBytes).toBe(0)
  })

  it('takes a first frame larger than the cap whole (an empty backlog accepts anything); the next frame is over', async () => {
    const f = fakeStream()
    const { s, finals } = sender(f.stream, { maxBacklogBytes: 10 })
    s.send('x'.repeat(50))
    expect(s.fallen).toBeUndefined()
    expect(f.writes.map((w) => w.text.length)).toEqual([50])
    s.send('y')
    expect(s.fallen).toBe('backlog')
    expect(finals).toEqual([1])
    await f.takeAll()
    expect(f.writes.map((w) => w.text)).toEqual(['x'.repeat(50), 'final:1'])
  })

  it('a write not taken within writeTimeoutMs aborts the stream and drops its queue; a write taken in time does not', async () => {
    vi.useFakeTimers()
    const f = fakeStream()
    const { s, fell } = sender(f.stream, { maxBacklogBytes: 100, writeTimeoutMs: 1000 })
    s.send('first')
    await vi.advanceTimersByTimeAsync(999)
    f.writes[0]!.take()
    await vi.advanceTimersByTimeAsync(0)
    expect(s.fallen).toBeUndefined()
    s.send('second')
    s.send('third')
    await vi.advanceTimersByTimeAsync(999)
    expect(s.fallen).toBeUndefined()
    expect(f.aborted).toBe(false)
    let drained = false
    void s.drained().then(() => (drained = true))
    await vi.advanceTimersByTimeAsync(1)
    expect(s.fallen).toBe('write-timeout')
    expect(fell).toEqual(['write-timeout'])
    expect(f.aborted).toBe(true)
    expect(f.writes.map((w) => w.text)).toEqual(['first', 'second'])
    expect(s.backlogBytes).toBe(0)
    expect(drained).toBe(true)
    // An aborted stream is not closed as well.
    expect(f.closed).toBe(0)
    s.send('fourth')
    expect(f.writes).toHaveLength(2)
  })

  it('a write taken in time leaves no timer behind (30 s per frame would pin every frame of a fast stream)', async () => {
    vi.useFakeTimers()
    const f = fakeStream()
    const { s } = sender(f.stream, { maxBacklogBytes: 100, writeTimeoutMs: 30_000 })
    s.send('a')
    expect(vi.getTimerCount()).toBe(1)
    f.writes[0]!.take()
    await vi.advanceTimersByTimeAsync(0)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('a stream cut off at the cap whose final frame is then not taken is aborted, still fallen for the backlog, its producer told once', async () => {
    vi.useFakeTimers()
    const f = fakeStream()
    const { s, fell } = sender(f.stream, { maxBacklogBytes: 10, writeTimeoutMs: 1000 })
    s.send('1234567890')
    s.send('x')
    expect(fell).toEqual(['backlog'])
    f.writes[0]!.take()
    await vi.advanceTimersByTimeAsync(0)
    expect(f.writes.map((w) => w.text)).toEqual(['1234567890', 'final:1'])
    await vi.advanceTimersByTimeAsync(1000)
    expect(f.aborted).toBe(true)
    expect(f.closed).toBe(0)
    expect(s.fallen).toBe('backlog')
    expect(fell).toEqual(['backlog'])
  })

  it('a producer whose onFallBehind throws does not break the writer', async () => {
    const f = fakeStream()
    const { s } = sender(f.stream, {
      maxBacklogBytes: 1,
      onFallBehind: () => {
        throw new Error('cleanup failed')
      },
    })
    s.send('a')
    expect(() => s.send('b')).not.toThrow()
    expect(s.fallen).toBe('backlog')
    await f.takeAll()
    expect(f.writes.map((w) => w.text)).toEqual(['a', 'final:1'])
    expect(f.closed).toBe(1)
  })
})
