/**
 * The HTTP API's routes and middleware, answer by answer: exact messages and headers,
 * the agent and call-id rules, content negotiation, CORS, the 405 `Allow`, overload and
 * the event stream (with an in-process code runtime: no worker, milliseconds a run).
 */
import { describe, expect, it } from 'vitest'
import type { CodeRuntime, CodeRuntimeLoad } from '../../../src/code-runtime/contract.js'
import { ToolError } from '../../../src/errors.js'
import { createSessionLogHub, createToolsApp } from '../../../src/http/index.js'
import { httpErrorHandler, reportToConsole, toHttpError, HttpError } from '../../../src/http/http-errors.js'
import type { SessionLogHubEvent } from '../../../src/http/session-log-hub.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import type { CodeLogEvent, ToolRuntime } from '../../../src/runtime-types.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { AUTH, JSON_AUTH, TOKEN, createFixture, echoTool, errorOf, parseSse } from './fixtures.js'

const post = (body: unknown, headers: Record<string, string> = JSON_AUTH): RequestInit => ({ method: 'POST', headers, body: JSON.stringify(body) })

describe('agent and call-id rules', () => {
  const { app, results } = createFixture()

  it('agent in the query: absent, once, valid', async () => {
    expect((await (await app.request('/v1/tools', { headers: AUTH })).json()) as object).not.toHaveProperty('agent')
    expect(await (await app.request('/v1/tools?agent=alice', { headers: AUTH })).json()).toMatchObject({ agent: 'alice' })
    expect(await errorOf(await app.request('/v1/tools?agent=a&agent=b', { headers: AUTH }))).toEqual({ code: 'INVALID_REQUEST', message: 'agent must be given at most once' })
    const bad = { code: 'INVALID_REQUEST', message: 'agent must be a non-empty string of at most 256 characters' }
    expect(await errorOf(await app.request('/v1/tools?agent=', { headers: AUTH }))).toEqual(bad)
    expect(await errorOf(await app.request(`/v1/tools?agent=${'a'.repeat(257)}`, { headers: AUTH }))).toEqual(bad)
    expect((await app.request(`/v1/tools?agent=${'a'.repeat(256)}`, { headers: AUTH })).status).toBe(200)
  })

  it('agent in the body: must agree with the query, may be absent or undefined', async () => {
    const execute = (path: string, body: unknown) => app.request(path, post(body))
    expect(await errorOf(await execute('/v1/tools/secret/execute?agent=alice', { agent: 'bob' }))).toEqual({ code: 'INVALID_REQUEST', message: 'agent differs between the query and the body' })
    expect((await execute('/v1/tools/secret/execute?agent=alice', { agent: 'alice' })).status).toBe(200)
    expect((await execute('/v1/tools/secret/execute', { agent: 'alice' })).status).toBe(200)
    expect((await execute('/v1/tools/secret/execute?agent=alice', {})).status).toBe(200)
    expect(await errorOf(await execute('/v1/tools/echo/execute', { agent: 7, arguments: { text: 'x' } }))).toEqual({ code: 'INVALID_REQUEST', message: 'agent must be a non-empty string of at most 256 characters' })
    const last = results.at(-1)!
    expect(last.name).toBe('secret')
    expect(last.agent).toBe('alice')
    // The global layer: no `agent` key reaches the pipeline.
    await execute('/v1/tools/echo/execute', { arguments: { text: 'g' } })
    expect(Object.hasOwn(results.at(-1)!, 'agent')).toBe(false)
  })

  it('a body that is not a JSON object', async () => {
    for (const body of [[1], 'text', null, 3]) {
      expect(await errorOf(await app.request('/v1/tools/echo/execute', post(body)))).toEqual({ code: 'INVALID_REQUEST', message: 'the request body must be a JSON object (expected fields: arguments, callId, agent)' })
    }
  })

  it('call ids: printable ASCII without surrounding spaces, 1–256 characters; echoed in the header', async () => {
    const bad = { code: 'INVALID_REQUEST', message: 'callId must be 1–256 printable ASCII characters, without leading or trailing spaces' }
    for (const callId of ['', ' x', 'x ', 'a\tb', 'é', 'x'.repeat(257), 5]) {
      expect(await errorOf(await app.request('/v1/tools/echo/execute', post({ callId, arguments: { text: 'x' } })))).toEqual(bad)
    }
    for (const callId of ['x', 'a b', '~!', 'x'.repeat(256)]) {
      const response = await app.request('/v1/tools/echo/execute', post({ callId, arguments: { text: 'x' } }))
      expect(response.status).toBe(200)
      expect(response.headers.get('X-Toolyard-Call-Id')).toBe(callId)
    }
    const generated = await app.request('/v1/tools/echo/execute', post({ arguments: { text: 'x' } }))
    expect(generated.headers.get('X-Toolyard-Call-Id')).toMatch(/^http-[0-9a-f-]{36}$/)
  })

  it('arguments default to {} when absent', async () => {
    const response = await app.request('/v1/tools/echo/execute', post({}))
    expect(((await response.json()) as { error: { info: { code: string } } }).error.info.code).toBe('INVALID_ARGS')
    expect(results.at(-1)!.result.isError).toBe(true)
  })

  it('an unknown tool is 404 with the call id', async () => {
    const response = await app.request('/v1/tools/nope/execute', post({ callId: 'c-404' }))
    expect(response.status).toBe(404)
    expect(response.headers.get('X-Toolyard-Call-Id')).toBe('c-404')
    expect(await errorOf(response)).toEqual({ code: 'UNKNOWN_TOOL', message: 'unknown tool "nope"' })
  })
})

describe('describing tools, the SDK and the prompt', () => {
  const { app } = createFixture()

  it('a tool with its output schema; a tool without one gets {}', async () => {
    const body = (await (await app.request('/v1/tools/echo', { headers: AUTH })).json()) as { tool: { output: unknown } }
    expect(body.tool.output).toEqual(echoTool.output.schema)
  })

  it('the SDK: strong ETag of its bytes, private caching, language header; one language at most', async () => {
    const response = await app.request('/v1/sdk', { headers: AUTH })
    const text = await response.text()
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)))
    const b64url = btoa(String.fromCharCode(...digest)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
    expect(response.headers.get('ETag')).toBe(`"sha256-${b64url}"`)
    expect(response.headers.get('ETag')).not.toMatch(/[=+/]/)
    expect(response.headers.get('Cache-Control')).toBe('private, no-cache')
    expect(response.headers.get('Vary')).toBe('Authorization')
    expect(response.headers.get('X-Toolyard-Sdk-Language')).toBe('typescript')
    expect(response.headers.get('Content-Type')).toBe('text/plain; charset=utf-8')
    expect(text).toContain('echo')
    expect(await errorOf(await app.request('/v1/sdk?language=typescript&language=python', { headers: AUTH }))).toEqual({ code: 'INVALID_REQUEST', message: 'language must be given at most once' })
    expect(await errorOf(await app.request('/v1/sdk?language=cobol', { headers: AUTH }))).toEqual({ code: 'INVALID_REQUEST', message: 'no SDK renderer for language "cobol" (typescript, python)' })
    expect((await app.request('/v1/sdk?language=python', { headers: AUTH })).headers.get('X-Toolyard-Sdk-Language')).toBe('python')
  })

  it('every SDK variant’s ETag is the base64url SHA-256 of its bytes', async () => {
    for (const query of ['', '?language=python', '?agent=alice', '?agent=alice&language=python']) {
      const response = await app.request(`/v1/sdk${query}`, { headers: AUTH })
      const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new Uint8Array(await response.arrayBuffer())))
      const b64url = btoa(String.fromCharCode(...digest)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
      expect([query, response.headers.get('ETag')]).toEqual([query, `"sha256-${b64url}"`])
    }
  })

  it('the SDK renders each tool with its output schema', async () => {
    const text = await (await app.request('/v1/sdk', { headers: AUTH })).text()
    // echo's output schema is { text: string }: the SDK's return type names it.
    expect(text).toMatch(/text: string/)
  })

  it('the prompt refuses a per-request mode', async () => {
    expect(await errorOf(await app.request('/v1/prompt?mode=code', { headers: AUTH }))).toEqual({
      code: 'INVALID_REQUEST',
      message: 'mode cannot be chosen per request: the prompt uses the presentation of the agent (pick an agent that declared the mode)',
    })
  })
})

describe('answers every route shares', () => {
  it('security headers, and no-store unless the route chose its caching', async () => {
    const { app } = createFixture()
    const response = await app.request('/v1/tools', { headers: AUTH })
    expect(response.headers.get('Cache-Control')).toBe('no-store')
    expect(response.headers.get('X-Content-Type-Options')).toBe('nosniff')
    expect(response.headers.get('X-Frame-Options')).toBe('DENY')
    expect(response.headers.get('Content-Security-Policy')).toBe("frame-ancestors 'none'")
    expect(response.headers.get('Referrer-Policy')).toBe('no-referrer')
    for (const name of ['Cross-Origin-Embedder-Policy', 'Cross-Origin-Resource-Policy', 'Cross-Origin-Opener-Policy', 'Origin-Agent-Cluster', 'Strict-Transport-Security', 'X-DNS-Prefetch-Control', 'X-Download-Options', 'X-Permitted-Cross-Domain-Policies', 'X-XSS-Protection']) {
      expect([name, response.headers.get(name)]).toEqual([name, null])
    }
    const failed = await app.request('/v1/tools')
    expect(failed.headers.get('Cache-Control')).toBe('no-store')
    expect(failed.headers.get('X-Content-Type-Options')).toBe('nosniff')
  })

  it('the token errors name the scheme; a missing token and a wrong one say different things', async () => {
    const { app } = createFixture()
    const missing = await app.request('/v1/tools')
    expect(missing.headers.get('WWW-Authenticate')).toBe('Bearer realm="toolyard"')
    expect(await errorOf(missing)).toEqual({ code: 'UNAUTHORIZED', message: 'a bearer token is required' })
    const wrong = await app.request('/v1/tools', { headers: { Authorization: `Bearer ${TOKEN.slice(0, -1)}` } })
    expect(wrong.headers.get('WWW-Authenticate')).toBe('Bearer realm="toolyard", error="invalid_token"')
    expect(await errorOf(wrong)).toEqual({ code: 'UNAUTHORIZED', message: 'the bearer token is not valid' })
  })

  it('405 lists the methods, OPTIONS too when the app serves CORS', async () => {
    const plain = createFixture().app
    const response = await plain.request('/v1/tools', { method: 'POST', headers: AUTH })
    expect(response.headers.get('Allow')).toBe('GET, HEAD')
    expect(await errorOf(response)).toEqual({ code: 'METHOD_NOT_ALLOWED', message: 'POST is not allowed here; use GET, HEAD' })
    const withCors = createFixture({}, { cors: { origins: ['https://page.example'] } }).app
    expect((await withCors.request('/v1/tools', { method: 'POST', headers: AUTH })).headers.get('Allow')).toBe('GET, HEAD, OPTIONS')
  })

  it('CORS: allowlisted origins get the headers and a preflight (default max age 600 s), others 403', async () => {
    const { app } = createFixture({}, { cors: { origins: ['https://page.example'] } })
    const preflight = await app.request('/v1/tools', {
      method: 'OPTIONS',
      headers: { Origin: 'https://page.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization, content-type, accept, if-none-match' },
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('Access-Control-Allow-Origin')).toBe('https://page.example')
    expect(preflight.headers.get('Access-Control-Allow-Methods')).toBe('GET,HEAD,POST,DELETE')
    expect(preflight.headers.get('Access-Control-Allow-Headers')).toBe('Authorization,Content-Type,Accept,If-None-Match')
    expect(preflight.headers.get('Access-Control-Max-Age')).toBe('600')
    expect(preflight.headers.get('Access-Control-Allow-Credentials')).toBeNull()
    const simple = await app.request('/v1/tools', { headers: { ...AUTH, Origin: 'https://page.example' } })
    expect(simple.headers.get('Access-Control-Allow-Origin')).toBe('https://page.example')
    expect(simple.headers.get('Access-Control-Expose-Headers')).toBe('ETag,X-Toolyard-Call-Id,X-Toolyard-Sdk-Language')
    const foreign = await app.request('/v1/tools', { headers: { ...AUTH, Origin: 'https://evil.example' } })
    expect(await errorOf(foreign)).toEqual({ code: 'FORBIDDEN_ORIGIN', message: 'cross-origin requests from this origin are not allowed' })
    const custom = createFixture({}, { cors: { origins: ['https://page.example'], maxAgeSeconds: 5 } }).app
    const short = await custom.request('/v1/tools', { method: 'OPTIONS', headers: { Origin: 'https://page.example', 'Access-Control-Request-Method': 'GET' } })
    expect(short.headers.get('Access-Control-Max-Age')).toBe('5')
  })

  it('an allowlisted origin without CORS configured passes through untouched', async () => {
    const { app } = createFixture({}, {})
    // Same-origin requests carry the app's own origin: admitted without CORS headers.
    const same = await app.request('http://localhost/v1/tools', { headers: { ...AUTH, Origin: 'http://localhost' } })
    expect(same.status).toBe(200)
    expect(same.headers.get('Access-Control-Allow-Origin')).toBeNull()
  })

  it('shutting down: protected routes answer 503, health says so', async () => {
    const shutdown = new AbortController()
    const { app } = createFixture({}, { signal: shutdown.signal })
    expect(await (await app.request('/v1/health')).json()).toEqual({ status: 'ok' })
    shutdown.abort()
    expect(await errorOf(await app.request('/v1/tools', { headers: AUTH }))).toEqual({ code: 'SHUTTING_DOWN', message: 'the server is shutting down' })
    expect(await (await app.request('/v1/health')).json()).toEqual({ status: 'shutting-down' })
  })

  it('not configured: the default message, or the one given', async () => {
    const runtime = createToolRuntime()
    const plain = createToolsApp(runtime, { notConfigured: true })
    expect(await errorOf(await plain.request('/v1/tools'))).toEqual({ code: 'NOT_CONFIGURED', message: 'this server is not configured (no API token was provided)' })
    expect(await (await plain.request('/v1/health')).json()).toEqual({ status: 'not-configured' })
    const custom = createToolsApp(runtime, { notConfigured: 'set TOOLYARD_TOKEN and restart' })
    expect(await errorOf(await custom.request('/v1/tools'))).toEqual({ code: 'NOT_CONFIGURED', message: 'set TOOLYARD_TOKEN and restart' })
  })
})

describe('errors as HTTP answers', () => {
  it('maps the runtime’s configuration failures and hides everything else', () => {
    const http = new HttpError('NOT_FOUND', 'x')
    expect(toHttpError(http)).toBe(http)
    expect(toHttpError(new ToolError('ASSEMBLY_FAILED', 'a listener threw'))).toMatchObject({ code: 'ASSEMBLY_FAILED', message: 'a listener threw', status: 409 })
    expect(toHttpError(new ToolError('DISPOSED', 'gone'))).toMatchObject({ code: 'SHUTTING_DOWN', message: 'the tool runtime was disposed', status: 503 })
    expect(toHttpError(new ToolError('INVALID_OPTIONS', 'x'))).toMatchObject({ code: 'INTERNAL', message: 'internal error', status: 500 })
    expect(toHttpError(Object.assign(new Error('x'), { code: 'ASSEMBLY_FAILED' }))).toMatchObject({ code: 'INTERNAL' })
    expect(toHttpError(Object.assign(new Error('x'), { code: 'DISPOSED' }))).toMatchObject({ code: 'INTERNAL' })
    expect(http.name).toBe('HttpError')
  })

  it('reports only internal errors, with the request', async () => {
    const reported: unknown[] = []
    const handler = httpErrorHandler((error, request) => reported.push([error, request.url]))
    const c = { req: { raw: new Request('http://x.local/v1/p') } } as never
    const boom = new Error('boom')
    const response = handler(boom, c) as Response
    expect(response.status).toBe(500)
    expect(reported).toEqual([[boom, 'http://x.local/v1/p']])
    handler(new HttpError('NOT_FOUND', 'n'), c)
    expect(reported).toHaveLength(1)
  })

  it('the console reporter names the method and path', () => {
    const lines: unknown[][] = []
    const original = console.error
    console.error = (...args: unknown[]) => lines.push(args)
    try {
      const error = new Error('e')
      reportToConsole(error, new Request('http://x.local/v1/run?q=1', { method: 'POST' }))
      expect(lines).toEqual([['toolyard: internal error answering POST /v1/run:', error]])
    } finally {
      console.error = original
    }
  })
})

/** A code runtime that reports a load, for the overload checks. */
function loadedRuntime(load: CodeRuntimeLoad): CodeRuntime {
  const inner = createInProcessRuntime()
  return Object.assign(Object.create(inner) as CodeRuntime, { load: () => load })
}

describe('POST /v1/run', () => {
  it('refuses a run with 503 OVERLOADED when runs and queue are both full, before anything runs', async () => {
    const full = createFixture({ mode: 'both', codeRuntime: loadedRuntime({ running: 2, maxConcurrentRuns: 2, queued: 3, maxQueuedRuns: 3 }) })
    const response = await full.app.request('/v1/run', post({ code: 'return 1', description: 'd' }))
    expect(response.status).toBe(503)
    expect(response.headers.get('Retry-After')).toBe('1')
    expect(response.headers.get('X-Toolyard-Call-Id')).toBeNull()
    expect(await errorOf(response)).toEqual({ code: 'OVERLOADED', message: 'the code runtime is at capacity (2 runs running, 3 waiting); retry later' })
    expect(full.results).toEqual([])
    const streamed = await full.app.request('/v1/run', post({ code: 'return 1', description: 'd' }, { ...JSON_AUTH, Accept: 'text/event-stream' }))
    expect(streamed.status).toBe(503)
  })

  it('runs while either runs or queue has room', async () => {
    for (const load of [
      { running: 1, maxConcurrentRuns: 2, queued: 3, maxQueuedRuns: 3 },
      { running: 2, maxConcurrentRuns: 2, queued: 2, maxQueuedRuns: 3 },
      { running: 3, maxConcurrentRuns: 2, queued: 0, maxQueuedRuns: 3 },
    ]) {
      const { app } = createFixture({ mode: 'both', codeRuntime: loadedRuntime(load) })
      expect((await app.request('/v1/run', post({ code: 'return 1', description: 'd' }))).status).toBe(200)
    }
    const { app } = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() })
    expect((await app.request('/v1/run', post({ code: 'return 1', description: 'd' }))).status).toBe(200)
  })

  it('a run the pipeline refuses as OVERLOADED answers 503 with its call id', async () => {
    const refusing = Object.assign(Object.create(createInProcessRuntime()) as CodeRuntime, {
      run: async () => ({ logs: [], error: { kind: 'overloaded', message: 'no room' }, stats: { wallMs: 0, computeMs: 0 } }),
    })
    const { app } = createFixture({ mode: 'both', codeRuntime: refusing })
    const response = await app.request('/v1/run', post({ code: 'return 1', description: 'd' }))
    expect(response.status).toBe(503)
    expect(response.headers.get('Retry-After')).toBe('1')
    expect(response.headers.get('X-Toolyard-Call-Id')).toMatch(/^http-run-/)
    expect((await errorOf(response)).code).toBe('OVERLOADED')
  })

  it('refuses a client call id, and a run without run_code', async () => {
    const { app } = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() })
    expect(await errorOf(await app.request('/v1/run', post({ code: 'return 1', description: 'd', callId: 'mine' })))).toEqual({
      code: 'INVALID_REQUEST',
      message: 'callId is assigned by the server for runs (see the X-Toolyard-Call-Id header)',
    })
    const native = createFixture().app
    expect(await errorOf(await native.request('/v1/run', post({ code: 'return 1', description: 'd' })))).toEqual({ code: 'UNKNOWN_TOOL', message: 'unknown tool "run_code"' })
  })

  it('passes only the fields the client sent', async () => {
    const { app, results } = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() })
    await app.request('/v1/run', post({ description: 'no code' }))
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
    const response = await app.request('/v1/run', post({ code: 'return 1', description: 'd' }, { ...JSON_AUTH, Accept: accept }))
    expect(response.status).toBe(200)
    expect(response.headers.get('Content-Type')).toBe(streams ? 'text/event-stream; charset=utf-8' : 'application/json')
    await response.text()
  })

  it('the stream: documented headers, start/result frames numbered, keep-alives at the heartbeat', async () => {
    const { app, hub } = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() }, { heartbeatMs: 5 })
    const response = await app.request('/v1/run', post({ code: 'await new Promise((r) => setTimeout(r, 60)); return 7', description: 'd' }, { ...JSON_AUTH, Accept: 'text/event-stream' }))
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
    const response = await app.request('/v1/run', post({ code: 'await new Promise((r) => setTimeout(r, 30)); return 7', description: 'd' }, { ...JSON_AUTH, Accept: 'text/event-stream' }))
    expect(await response.text()).not.toContain('keep-alive')
  })

  it('the stream carries the run’s own sub-calls and console lines, named as documented', async () => {
    const { app, hub } = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() })
    const others: SessionLogHubEvent[] = []
    hub.subscribe((e) => others.push(e))
    const response = await app.request('/v1/run', post({ code: "console.log('hi'); return await tools.echo({ text: 'x' })", description: 'd' }, { ...JSON_AUTH, Accept: 'text/event-stream' }))
    const names = parseSse(await response.text()).map((e) => e.event)
    expect(names[0]).toBe('start')
    expect(names.at(-1)).toBe('result')
    expect(names).toContain('dispatch-start')
    expect(names).toContain('dispatch')
    expect(others.length).toBeGreaterThan(0)
  })

  it('a runtime whose execute rejects ends the stream with an internal error event and reports it', async () => {
    const reported: unknown[] = []
    const real = createToolRuntime({ mode: 'both', codeRuntime: createInProcessRuntime() })
    const broken = Object.create(real, { execute: { value: () => Promise.reject(new Error('runtime bug')) } }) as ToolRuntime
    const app = createToolsApp(broken, { token: TOKEN, onError: (error) => reported.push((error as Error).message) })
    const response = await app.request('/v1/run', post({ code: 'return 1', description: 'd' }, { ...JSON_AUTH, Accept: 'text/event-stream' }))
    const events = parseSse(await response.text())
    expect(events.map((e) => e.event)).toEqual(['start', 'error'])
    expect(events[1]!.data).toEqual({ error: { code: 'INTERNAL', message: 'internal error' } })
    expect(reported).toEqual(['runtime bug'])
  })
})

describe('createSessionLogHub', () => {
  const event = (parentCallId: string): CodeLogEvent => ({ type: 'tool/code-log', parentCallId, entry: { source: 'console', level: 'log', text: parentCallId } })

  it('keeps delivering to the other subscribers of a run when one unsubscribes', () => {
    const hub = createSessionLogHub()
    const got: string[] = []
    const first = hub.subscribe(() => got.push('first'), { parentCallId: 'p' })
    hub.subscribe(() => got.push('second'), { parentCallId: 'p' })
    first()
    first()
    hub.appendLog(event('p'))
    expect(got).toEqual(['second'])
    expect(hub.subscriberCount).toBe(1)
  })

  it('a run subscribed again after its last subscriber left still gets its events', () => {
    const hub = createSessionLogHub()
    const got: string[] = []
    hub.subscribe(() => got.push('a'), { parentCallId: 'p' })()
    hub.subscribe(() => got.push('b'), { parentCallId: 'p' })
    hub.appendLog(event('p'))
    hub.appendLog(event('q'))
    expect(got).toEqual(['b'])
  })

  it('forwards before delivering, delivers even when forwarding throws, and contains a subscriber’s throw', () => {
    const order: string[] = []
    const hub = createSessionLogHub({
      forward: {
        append: () => {
          order.push('forward')
          throw new Error('sink down')
        },
      },
    })
    hub.subscribe(() => {
      order.push('throwing')
      throw new Error('listener bug')
    })
    hub.subscribe(() => order.push('next'))
    expect(() => hub.append(event('p') as never)).toThrow('sink down')
    expect(order).toEqual(['forward', 'throwing', 'next'])
  })
})
