/**
 * `POST /v1/run`, as JSON and as an event stream: on the Node worker runtime (sub-calls,
 * failures, agents, cancellation), and on an in-process code runtime (no worker,
 * milliseconds a run) for the answers at the edges: overload refusals, content
 * negotiation, the stream's headers, frames and keep-alives, a runtime that throws.
 */
import { afterAll, describe, expect, it, vi } from 'vitest'
import { createNodeWorkerRuntime } from '../../../platforms/node/index.js'
import type { NodeWorkerRuntime } from '../../../platforms/node/index.js'
import type { CodeRuntime, CodeRuntimeLoad } from '../../../src/code-runtime/contract.js'
import { createToolsApp } from '../../../src/http/index.js'
import type { SessionLogHubEvent } from '../../../src/http/index.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import type { CodeDispatchEvent, CodeDispatchStartEvent, ToolRuntime } from '../../../src/runtime-types.js'
import type { ToolExecutionResult } from '../../../src/types.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { AUTH, JSON_AUTH, TOKEN, createFixture, errorOf, parseSse } from './fixtures.js'
import { until as waitFor } from '../../support/poll.js'

let started: NodeWorkerRuntime | undefined
/**
 * The Node worker runtime, started by the first test that runs a program on it: the
 * in-process cases at the end never start a worker thread (a mutation run re-runs them
 * alone, once per mutant they cover).
 */
const workers = (): NodeWorkerRuntime => (started ??= createNodeWorkerRuntime({ prespawn: 1 }))
afterAll(() => started?.dispose())

const PARALLEL = `
const [a, b] = await Promise.all([tools.echo({ text: 'a' }), tools.echo({ text: 'b' })])
console.log('got', a.text, b.text)
const c = await tools.echo({ text: a.text + b.text })
return c.text
`

const runInit = (body: unknown, accept?: string): RequestInit => ({
  method: 'POST',
  headers: { ...JSON_AUTH, ...(accept === undefined ? {} : { Accept: accept }) },
  body: JSON.stringify(body),
})

describe('POST /v1/run (JSON)', () => {
  it('runs a program with sub-calls and answers the run_code result', async () => {
    const { app, results } = createFixture({ mode: 'both', codeRuntime: workers() })
    const response = await app.request('/v1/run', runInit({ code: PARALLEL, description: 'echo twice' }))
    expect(response.status).toBe(200)
    const callId = response.headers.get('X-Toolyard-Call-Id')!
    expect(callId).toMatch(/^http-run-/)
    const result = (await response.json()) as ToolExecutionResult
    expect(result.isError).toBe(false)
    if (!result.isError) expect(result.value).toMatchObject({ result: 'ab', logs: ['got a b'] })
    const subCalls = results.filter((r) => r.callId.startsWith(`${callId}:code:`))
    expect(subCalls.map((r) => r.callId).sort()).toEqual([`${callId}:code:1`, `${callId}:code:2`, `${callId}:code:3`])
  })

  it('reports a failing program as a 200 result with CODE_RUN_FAILED', async () => {
    const { app } = createFixture({ mode: 'both', codeRuntime: workers() })
    const response = await app.request('/v1/run', runInit({ code: 'throw new Error("nope")', description: 'fail' }))
    expect(response.status).toBe(200)
    const result = (await response.json()) as ToolExecutionResult
    expect(result.isError && result.error.info?.code).toBe('CODE_RUN_FAILED')
  })

  it('answers a program whose value nests thousands of levels (the response is built by recursive JSON.stringify)', async () => {
    const { app } = createFixture({ mode: 'both', codeRuntime: workers() })
    const code = 'let v: unknown = 1\nfor (let i = 0; i < 5_000; i++) v = [v]\nreturn v'
    const response = await app.request('/v1/run', runInit({ code, description: 'deep' }))
    expect(response.status).toBe(200)
    const result = (await response.json()) as ToolExecutionResult
    expect(result.isError).toBe(false)
    if (!result.isError) expect((result.value as { result: string }).result).toMatch(/\[value rendered as text: nested deeper than 100 levels\]$/)
  })

  it('leaves argument checking to the pipeline (INVALID_ARGS) and refuses a client callId', async () => {
    const { app } = createFixture({ mode: 'both', codeRuntime: workers() })
    const noCode = (await (await app.request('/v1/run', runInit({ description: 'x' }))).json()) as ToolExecutionResult
    expect(noCode.isError && noCode.error.info?.code).toBe('INVALID_ARGS')
    const withId = await app.request('/v1/run', runInit({ code: 'return 1', description: 'x', callId: 'mine' }))
    expect(withId.status).toBe(400)
    expect(await errorOf(withId)).toEqual({
      code: 'INVALID_REQUEST',
      message: 'callId is assigned by the server for runs (see the X-Toolyard-Call-Id header)',
    })
  })

  it('answers 404 UNKNOWN_TOOL where run_code is not offered (native presentation), as JSON and for an event stream alike', async () => {
    const { app, runtime, results } = createFixture({ mode: 'native', codeRuntime: workers() })
    runtime.agent('coder').presentAs('code')
    for (const accept of [undefined, 'text/event-stream']) {
      const response = await app.request('/v1/run', runInit({ code: 'return 1', description: 'x' }, accept))
      expect(response.status, accept).toBe(404)
      expect(response.headers.get('Content-Type')).toBe('application/json')
      expect(await errorOf(response)).toEqual({ code: 'UNKNOWN_TOOL', message: 'unknown tool "run_code"' })
    }
    // Decided before anything ran: no run_code call was made.
    expect(results).toEqual([])
    // An agent whose presentation offers run_code streams as usual.
    const streamed = await app.request('/v1/run', runInit({ code: 'return 1', description: 'x', agent: 'coder' }, 'text/event-stream'))
    expect(streamed.status).toBe(200)
    expect(parseSse(await streamed.text()).at(-1)).toMatchObject({ event: 'result', data: { isError: false } })
  })

  it("runs in the agent's layer", async () => {
    const { app } = createFixture({ mode: 'both', codeRuntime: workers() })
    const ok = (await (await app.request('/v1/run', runInit({ code: 'return await tools.secret({})', description: 's', agent: 'alice' }))).json()) as ToolExecutionResult
    expect(ok.isError).toBe(false)
    if (!ok.isError) expect(ok.value).toMatchObject({ result: 'for alice' })
    const global = (await (await app.request('/v1/run', runInit({ code: 'return await tools.secret({})', description: 's' }))).json()) as ToolExecutionResult
    expect(global.isError).toBe(true)
  })
})

describe('POST /v1/run (server-sent events)', () => {
  it('streams start, each dispatch-start / dispatch as it happens, then the result', async () => {
    const { app, hub } = createFixture({ mode: 'both', codeRuntime: workers() })
    const response = await app.request('/v1/run', runInit({ code: PARALLEL, description: 'echo twice' }, 'text/event-stream'))
    expect(response.status).toBe(200)
    expect(response.headers.get('Content-Type')).toBe('text/event-stream; charset=utf-8')
    expect(response.headers.get('Cache-Control')).toBe('no-store')
    const callId = response.headers.get('X-Toolyard-Call-Id')!
    const text = await response.text()
    // Framing: every frame is `event:`, `id:`, one `data:` line, blank line.
    expect(text).toMatch(/^event: start\nid: 1\ndata: \{.*\}\n\n/)
    const events = parseSse(text)
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => String(i + 1)))
    expect(events[0]).toMatchObject({ event: 'start', data: { callId } })
    expect(events.at(-1)?.event).toBe('result')
    const result = events.at(-1)?.data as ToolExecutionResult
    expect(result.isError).toBe(false)
    if (!result.isError) expect(result.value).toMatchObject({ result: 'ab', logs: ['got a b'] })

    // Console lines stream live as `log` events, in program order between the sub-calls.
    const between = events.slice(1, -1)
    const logIndex = between.findIndex((e) => e.event === 'log')
    expect(between[logIndex]?.data).toMatchObject({ type: 'tool/code-log', parentCallId: callId, entry: { text: 'got a b' } })
    expect(between.filter((e) => e.event === 'log')).toHaveLength(1)
    const dispatch = between.filter((e) => e.event.startsWith('dispatch'))
    expect(logIndex).toBeLessThan(between.findIndex((e) => e.event === 'dispatch-start' && (e.data as CodeDispatchStartEvent).subCallId === `${callId}:code:3`))
    expect(dispatch.map((e) => e.event).sort()).toEqual(['dispatch', 'dispatch', 'dispatch', 'dispatch-start', 'dispatch-start', 'dispatch-start'])
    // Each sub-call starts before it settles; the third (after Promise.all) starts after both settled.
    const position = (event: string, n: number): number =>
      dispatch.findIndex((e) => e.event === event && (e.data as CodeDispatchStartEvent).subCallId === `${callId}:code:${n}`)
    for (const n of [1, 2, 3]) expect(position('dispatch-start', n)).toBeLessThan(position('dispatch', n))
    expect(position('dispatch-start', 3)).toBeGreaterThan(Math.max(position('dispatch', 1), position('dispatch', 2)))
    const settled = dispatch.find((e) => e.event === 'dispatch')?.data as CodeDispatchEvent
    expect(settled).toMatchObject({ type: 'tool/code-dispatch', parentCallId: callId, name: 'echo', isError: false })
    expect(hub.subscriberCount).toBe(0)
  })

  it("never mixes another run's sub-calls into a stream", async () => {
    const { app } = createFixture({ mode: 'both', codeRuntime: workers() })
    const [one, two] = await Promise.all([
      app.request('/v1/run', runInit({ code: PARALLEL, description: 'one' }, 'text/event-stream')),
      app.request('/v1/run', runInit({ code: PARALLEL, description: 'two' }, 'text/event-stream')),
    ])
    for (const response of [one, two]) {
      const callId = response.headers.get('X-Toolyard-Call-Id')!
      const all = parseSse(await response.text())
      const events = all.filter((e) => e.event.startsWith('dispatch'))
      expect(events, JSON.stringify(all.at(-1))).toHaveLength(6)
      for (const event of events) expect((event.data as CodeDispatchStartEvent).parentCallId).toBe(callId)
    }
  })

  it('carries a failed run in the result event', async () => {
    const { app } = createFixture({ mode: 'both', codeRuntime: workers() })
    const response = await app.request('/v1/run', runInit({ code: 'await tools.fail({}); return 1', description: 'x' }, 'text/event-stream'))
    const events = parseSse(await response.text())
    expect(events.map((e) => e.event)).toEqual(['start', 'dispatch-start', 'dispatch', 'result'])
    expect((events[2]?.data as CodeDispatchEvent).isError).toBe(true)
    const result = events[3]?.data as ToolExecutionResult
    expect(result.isError && result.error.info?.code).toBe('CODE_RUN_FAILED')
  })

  it('answers JSON when text/event-stream is refused with q=0', async () => {
    const { app } = createFixture({ mode: 'both', codeRuntime: workers() })
    const response = await app.request('/v1/run', runInit({ code: 'return 2', description: 'x' }, 'text/event-stream;q=0, application/json'))
    expect(response.headers.get('Content-Type')).toMatch(/^application\/json/)
  })

  it('requires the token for streams too', async () => {
    const { app } = createFixture({ mode: 'both', codeRuntime: workers() })
    const response = await app.request('/v1/run', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({ code: 'return 1', description: 'x' }),
    })
    expect(response.status).toBe(401)
    expect(AUTH.Authorization).toMatch(/^Bearer /)
  })
})

/** A code runtime that reports a load, for the overload checks. */
function loadedRuntime(load: CodeRuntimeLoad): CodeRuntime {
  const inner = createInProcessRuntime()
  return Object.assign(Object.create(inner) as CodeRuntime, { load: () => load })
}

describe('POST /v1/run on an in-process code runtime', () => {
  it('refuses a run with 503 OVERLOADED when runs and queue are both full, before anything runs', async () => {
    const full = createFixture({ mode: 'both', codeRuntime: loadedRuntime({ running: 2, maxConcurrentRuns: 2, queued: 3, maxQueuedRuns: 3 }) })
    const response = await full.app.request('/v1/run', runInit({ code: 'return 1', description: 'd' }))
    expect(response.status).toBe(503)
    expect(response.headers.get('Retry-After')).toBe('1')
    expect(response.headers.get('X-Toolyard-Call-Id')).toBeNull()
    expect(await errorOf(response)).toEqual({ code: 'OVERLOADED', message: 'the code runtime is at capacity (2 runs running, 3 waiting); retry later' })
    expect(full.results).toEqual([])
    const streamed = await full.app.request('/v1/run', runInit({ code: 'return 1', description: 'd' }, 'text/event-stream'))
    expect(streamed.status).toBe(503)
  })

  it('runs while either runs or queue has room', async () => {
    for (const load of [
      { running: 1, maxConcurrentRuns: 2, queued: 3, maxQueuedRuns: 3 },
      { running: 2, maxConcurrentRuns: 2, queued: 2, maxQueuedRuns: 3 },
      { running: 3, maxConcurrentRuns: 2, queued: 0, maxQueuedRuns: 3 },
    ]) {
      const { app } = createFixture({ mode: 'both', codeRuntime: loadedRuntime(load) })
      expect((await app.request('/v1/run', runInit({ code: 'return 1', description: 'd' }))).status).toBe(200)
    }
    const { app } = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() })
    expect((await app.request('/v1/run', runInit({ code: 'return 1', description: 'd' }))).status).toBe(200)
  })

  it('a run the pipeline refuses as OVERLOADED answers 503 with its call id', async () => {
    const refusing = Object.assign(Object.create(createInProcessRuntime()) as CodeRuntime, {
      run: async () => ({ logs: [], error: { kind: 'overloaded', message: 'no room' }, stats: { wallMs: 0, computeMs: 0 } }),
    })
    const { app } = createFixture({ mode: 'both', codeRuntime: refusing })
    const response = await app.request('/v1/run', runInit({ code: 'return 1', description: 'd' }))
    expect(response.status).toBe(503)
    expect(response.headers.get('Retry-After')).toBe('1')
    expect(response.headers.get('X-Toolyard-Call-Id')).toMatch(/^http-run-/)
    expect((await errorOf(response)).code).toBe('OVERLOADED')
  })

  it('passes only the fields the client sent', async () => {
    const { app, results } = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() })
    await app.request('/v1/run', runInit({ description: 'no code' }))
    const result = results.at(-1)!.result
    expect(result.isError).toBe(true)
    expect(JSON.stringify(result)).toMatch(/code/)
    expect(JSON.stringify(result)).not.toMatch(/lossless/)
  })

  it.each([
    ['text/event-stream', true],
    ['TEXT/EVENT-STREAM', true],
    [' text/event-stream ; q=0.5', true],
    ['application/json, text/event-stream', true],
    ['text/event-stream;q=0', false],
    ['text/event-stream; q = 0.000', false],
    ['text/event-stream;Q=0.', false],
    ['text/event-stream; q=0.01', true],
    ['text/event-stream; q=00', true],
    ['text/event-stream; level=0', true],
    ['text/event-stream; xq=0', true],
    ['text/event-streams', false],
    ['application/json', false],
  ])('Accept %j streams: %s', async (accept, streams) => {
    const { app } = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() })
    const response = await app.request('/v1/run', runInit({ code: 'return 1', description: 'd' }, accept))
    expect(response.status).toBe(200)
    expect(response.headers.get('Content-Type')).toBe(streams ? 'text/event-stream; charset=utf-8' : 'application/json')
    await response.text()
  })

  it('the stream: documented headers, start/result frames numbered, keep-alives at the heartbeat', async () => {
    const { app, hub } = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() }, { heartbeatMs: 5 })
    const response = await app.request('/v1/run', runInit({ code: 'await new Promise((r) => setTimeout(r, 60)); return 7', description: 'd' }, 'text/event-stream'))
    expect(response.headers.get('Cache-Control')).toBe('no-store')
    expect(response.headers.get('X-Accel-Buffering')).toBe('no')
    const callId = response.headers.get('X-Toolyard-Call-Id')
    expect(callId).toMatch(/^http-run-[0-9a-f-]{36}$/)
    const text = await response.text()
    expect(text).toContain(': keep-alive\n\n')
    const events = parseSse(text)
    expect(events.map((e) => [e.event, e.id])).toEqual([
      ['start', '1'],
      ['result', '2'],
    ])
    expect(events[0]!.data).toEqual({ callId })
    expect(hub.subscriberCount).toBe(0)
  })

  it('the stream without a heartbeat sends no keep-alive', async () => {
    const { app } = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() }, { heartbeatMs: 0 })
    const response = await app.request('/v1/run', runInit({ code: 'await new Promise((r) => setTimeout(r, 30)); return 7', description: 'd' }, 'text/event-stream'))
    expect(await response.text()).not.toContain('keep-alive')
  })

  it('the stream carries the run’s own sub-calls and console lines, named as documented', async () => {
    const { app, hub } = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() })
    const others: SessionLogHubEvent[] = []
    hub.subscribe((e) => others.push(e))
    const response = await app.request('/v1/run', runInit({ code: "console.log('hi'); return await tools.echo({ text: 'x' })", description: 'd' }, 'text/event-stream'))
    const names = parseSse(await response.text()).map((e) => e.event)
    expect(names[0]).toBe('start')
    expect(names.at(-1)).toBe('result')
    expect(names).toContain('dispatch-start')
    expect(names).toContain('dispatch')
    expect(others.length).toBeGreaterThan(0)
  })

  it('a client that cancels its stream cancels its run and releases its subscriptions', async () => {
    const { app, hub, wait, results, runtime } = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() })
    const reasons: unknown[] = []
    runtime.on('tools/execute', async (execution, next) => {
      execution.signal.addEventListener('abort', () => reasons.push(execution.signal.reason), { once: true })
      return next()
    })
    const response = await app.request('/v1/run', runInit({ code: 'await tools.wait({}); return 1', description: 'hang' }, 'text/event-stream'))
    const callId = response.headers.get('X-Toolyard-Call-Id')!
    const reader = response.body!.getReader()
    await wait.started
    expect(hub.subscriberCount).toBe(1)
    await reader.cancel()
    const settled = await waitFor(() => results.find((r) => r.callId === callId))
    expect(settled.result.isError && settled.result.error.info?.code).toBe('CODE_RUN_FAILED')
    expect(wait.aborted).toBe(1)
    // The calls see why: the client went away.
    expect(reasons.length).toBeGreaterThan(0)
    for (const reason of reasons) expect([(reason as DOMException).name, (reason as DOMException).message]).toEqual(['AbortError', 'the client went away'])
    await waitFor(() => (hub.subscriberCount === 0 ? true : undefined))
  })

  it("a request whose signal fires cancels its run; the stream still ends with the result", async () => {
    const { app, wait, results } = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() })
    const client = new AbortController()
    const response = await app.request(
      new Request('http://localhost/v1/run', { ...runInit({ code: 'await tools.wait({}); return 1', description: 'hang' }, 'text/event-stream'), signal: client.signal }),
    )
    const callId = response.headers.get('X-Toolyard-Call-Id')!
    await wait.started
    client.abort()
    const settled = await waitFor(() => results.find((r) => r.callId === callId))
    expect(settled.result.isError && settled.result.error.message).toMatch(/abort/)
    expect(wait.aborted).toBe(1)
    const events = parseSse(await response.text())
    expect(events.at(-1)?.event).toBe('result')
  })

  it('two streamed runs at once: each stream carries only its own sub-calls', async () => {
    const { app } = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() })
    const [one, two] = await Promise.all([
      app.request('/v1/run', runInit({ code: "await tools.echo({ text: 'one' }); await new Promise((r) => setTimeout(r, 20)); return await tools.echo({ text: 'one' })", description: 'one' }, 'text/event-stream')),
      app.request('/v1/run', runInit({ code: "await tools.echo({ text: 'two' }); await new Promise((r) => setTimeout(r, 20)); return await tools.echo({ text: 'two' })", description: 'two' }, 'text/event-stream')),
    ])
    const texts = async (response: Response) =>
      parseSse(await response.text())
        .filter((e) => e.event === 'dispatch')
        .map((e) => (e.data as { arguments: { text: string } }).arguments.text)
    expect(await texts(one)).toEqual(['one', 'one'])
    expect(await texts(two)).toEqual(['two', 'two'])
  })

  it('a client that does not read falls behind the backlog: a last STREAM_BACKLOG error frame; the run goes on, not cancelled', async () => {
    const { app, wait } = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime({ wallMs: 60_000 }) }, { maxStreamBacklogBytes: 64, heartbeatMs: 1 })
    const client = new AbortController()
    const response = await app.request(
      new Request('http://localhost/v1/run', { ...runInit({ code: "console.log('x'.repeat(500)); await tools.wait({}); return 1", description: 'd' }, 'text/event-stream'), signal: client.signal }),
    )
    const callId = response.headers.get('X-Toolyard-Call-Id')!
    await wait.started
    // Keep-alives pile up behind a frame the client does not take.
    await new Promise((resolve) => setTimeout(resolve, 100))
    const events = parseSse(await response.text())
    expect(events.at(-1)).toEqual({
      event: 'error',
      // Numbered as the stream's other frames (the frames it dropped took their ids).
      id: expect.stringMatching(/^\d+$/),
      data: { callId, error: { code: 'STREAM_BACKLOG', message: expect.stringMatching(/^this stream fell behind: \d+ bytes of events were not read in time \(maxStreamBacklogBytes 64\) and were dropped; the run goes on without this stream$/) } },
    })
    // The stream is over; its run is not: the waiting call was never aborted, not even when its client then leaves.
    client.abort()
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(wait.aborted).toBe(0)
  })

  it('the heartbeat timer is cleared when the stream ends', async () => {
    const { app } = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() }, { heartbeatMs: 4321 })
    const set = vi.spyOn(globalThis, 'setInterval')
    const clear = vi.spyOn(globalThis, 'clearInterval')
    try {
      const response = await app.request('/v1/run', runInit({ code: 'return 7', description: 'd' }, 'text/event-stream'))
      await response.text()
      const heartbeats = set.mock.calls.flatMap((call, i) => (call[1] === 4321 ? [set.mock.results[i]!.value as unknown] : []))
      expect(heartbeats).toHaveLength(1)
      expect(clear.mock.calls.map((call) => call[0])).toContain(heartbeats[0])
    } finally {
      set.mockRestore()
      clear.mockRestore()
    }
  })

  it('a runtime whose execute rejects ends the stream with an internal error event and reports it', async () => {
    const reported: unknown[] = []
    const real = createToolRuntime({ mode: 'both', codeRuntime: createInProcessRuntime() })
    const broken = Object.create(real, { execute: { value: () => Promise.reject(new Error('runtime bug')) } }) as ToolRuntime
    const app = createToolsApp(broken, { token: TOKEN, onError: (error) => reported.push((error as Error).message) })
    const response = await app.request('/v1/run', runInit({ code: 'return 1', description: 'd' }, 'text/event-stream'))
    const events = parseSse(await response.text())
    expect(events.map((e) => e.event)).toEqual(['start', 'error'])
    expect(events[1]!.data).toEqual({ error: { code: 'INTERNAL', message: 'internal error' } })
    expect(reported).toEqual(['runtime bug'])
  })
})
