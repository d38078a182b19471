/**
 * The HTTP API's routes and middleware through `app.request()`, answer by answer: the
 * options `createToolsApp` refuses (with the exact message an integrator reads), auth,
 * the body limit, the response shape and the headers every route shares, the agent and
 * call-id rules, each route, routing errors, CORS, not configured and shutting down.
 * Runs in Node and workerd. `POST /v1/run` is run.test.ts's (it needs a code runtime).
 */
import { describe, expect, it } from 'vitest'
import { createSessionLogHub, createToolsApp } from '../../../src/http/index.js'
import { createMcpApp } from '../../../src/mcp/index.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import type { PromptAssembly, ToolRuntime } from '../../../src/runtime-types.js'
import type { ToolExecutionResult, ToolSchema } from '../../../src/types.js'
import { refusalMessage } from '../../support/refusal.js'
import { AUTH, DOCUMENTED_BODY_LIMIT, JSON_AUTH, TOKEN, createFixture, echoOfBytes, echoTool, errorOf, pingOfBytes } from './fixtures.js'

const post = (body: unknown, headers: Record<string, string> = JSON_AUTH): RequestInit => ({
  method: 'POST',
  headers,
  body: typeof body === 'string' ? body : JSON.stringify(body),
})

describe('createToolsApp options', () => {
  const runtime = createToolRuntime()
  const code = (fn: () => unknown): string | undefined => {
    try {
      fn()
    } catch (error) {
      return (error as { code?: string }).code
    }
    return undefined
  }

  it('requires a token unless auth: false or notConfigured is explicit', () => {
    expect(code(() => createToolsApp(runtime, {}))).toBe('INVALID_OPTIONS')
    expect(code(() => createToolsApp(runtime, { token: 'short' }))).toBe('INVALID_OPTIONS')
    expect(code(() => createToolsApp(runtime, { token: 'has a space in it 1234' }))).toBe('INVALID_OPTIONS')
    expect(code(() => createToolsApp(runtime, { token: TOKEN, auth: false }))).toBe('INVALID_OPTIONS')
    expect(code(() => createToolsApp(runtime, { auth: true as unknown as false }))).toBe('INVALID_OPTIONS')
    expect(code(() => createToolsApp(runtime, { auth: false }))).toBeUndefined()
    expect(code(() => createToolsApp(runtime, { notConfigured: true }))).toBeUndefined()
    expect(code(() => createToolsApp(runtime, { token: TOKEN }))).toBeUndefined()
  })

  it('rejects malformed CORS, body caps, hubs and runtimes', () => {
    expect(code(() => createToolsApp(runtime, { token: TOKEN, cors: { origins: ['*'] } }))).toBe('INVALID_OPTIONS')
    expect(code(() => createToolsApp(runtime, { token: TOKEN, cors: { origins: ['https://a.example/path'] } }))).toBe('INVALID_OPTIONS')
    expect(code(() => createToolsApp(runtime, { token: TOKEN, cors: { origins: [] } }))).toBe('INVALID_OPTIONS')
    expect(code(() => createToolsApp(runtime, { token: TOKEN, cors: { origins: ['null'] } }))).toBe('INVALID_OPTIONS')
    expect(code(() => createToolsApp(runtime, { token: TOKEN, maxBodyBytes: 0 }))).toBe('INVALID_OPTIONS')
    expect(code(() => createToolsApp(runtime, { token: TOKEN, maxBodyBytes: 1.5 }))).toBe('INVALID_OPTIONS')
    expect(code(() => createToolsApp(runtime, { token: TOKEN, heartbeatMs: -1 }))).toBe('INVALID_OPTIONS')
    expect(code(() => createToolsApp(runtime, { token: TOKEN, sessionLog: {} } as never))).toBe('INVALID_OPTIONS')
    expect(code(() => createToolsApp(runtime, { token: TOKEN, notConfigured: '' }))).toBe('INVALID_OPTIONS')
    expect(code(() => createToolsApp(runtime, { token: TOKEN, onError: 'log' as never }))).toBe('INVALID_OPTIONS')
    expect(code(() => createToolsApp({} as never, { token: TOKEN }))).toBe('INVALID_OPTIONS')
    expect(code(() => createToolsApp(runtime, { token: TOKEN, cors: { origins: ['https://a.example'] } }))).toBeUndefined()
  })
})

describe('createToolsApp: what it refuses, and why', () => {
  const runtime = createToolRuntime()
  /** The message of the INVALID_OPTIONS error `createToolsApp(r, options)` throws. */
  const app = (options: unknown, r: unknown = runtime) => refusalMessage('INVALID_OPTIONS', () => createToolsApp(r as never, options as never))

  it('a runtime that is not a ToolRuntime', () => {
    // A function with the right members is not one either.
    const callable = Object.assign(() => undefined, { execute: () => undefined })
    for (const r of [null, 'runtime', {}, { execute: 'no' }, callable]) expect(app({ token: TOKEN }, r)).toBe('createToolsApp: runtime must be a ToolRuntime (from createToolRuntime)')
  })

  it('options that are not an object', () => {
    expect(app(null)).toBe('createToolsApp: options must be an object')
    expect(app('token')).toBe('createToolsApp: options must be an object')
  })

  it('CORS origins that are not exact origins', () => {
    expect(app({ token: TOKEN, cors: {} })).toBe('createToolsApp: cors.origins must be a non-empty array')
    expect(app({ token: TOKEN, cors: null })).toBe('createToolsApp: cors.origins must be a non-empty array')
    expect(app({ token: TOKEN, cors: { origins: 'https://a.example' } })).toBe('createToolsApp: cors.origins must be a non-empty array')
    expect(app({ token: TOKEN, cors: { origins: [] } })).toBe('createToolsApp: cors.origins must be a non-empty array')
    for (const origin of ['*', 'https://a.example/', 'https://a.example/path', 'null', 'not a url', 'HTTPS://A.EXAMPLE', 42, undefined, { toString: () => 'https://a.example' }]) {
      expect(app({ token: TOKEN, cors: { origins: ['https://ok.example', origin] } })).toBe(
        `createToolsApp: cors.origins entry ${JSON.stringify(String(origin))} is not an exact origin (scheme://host[:port])`,
      )
    }
    expect(app({ token: TOKEN, cors: { origins: ['https://a.example', 'http://localhost:8080'] } })).toBeUndefined()
  })

  it('a CORS max age that is not a non-negative integer', () => {
    for (const maxAgeSeconds of [-1, 1.5, Number.NaN, '60']) {
      expect(app({ token: TOKEN, cors: { origins: ['https://a.example'], maxAgeSeconds } })).toBe('createToolsApp: cors.maxAgeSeconds must be a non-negative integer')
    }
    expect(app({ token: TOKEN, cors: { origins: ['https://a.example'], maxAgeSeconds: 0 } })).toBeUndefined()
  })

  it('options that moved to the runtime (or were renamed) are refused, saying where they went', () => {
    expect(app({ token: TOKEN, sessionLog: createSessionLogHub() })).toBe("createToolsApp: sessionLog is no longer an option here: events come from the runtime (runtime.events); give a sink as createToolRuntime's sessionLog")
    expect(app({ token: TOKEN, approvals: undefined })).toBe('createToolsApp: approvals is no longer an option here: approvals come from the runtime: createToolRuntime({ approvals })')
    expect(app({ token: TOKEN, store: {} })).toBe('createToolsApp: store is no longer an option here: the store comes from the runtime: createToolRuntime({ store })')
    expect(app({ token: TOKEN, allowedOrigins: [] })).toBe('createToolsApp: allowedOrigins is no longer an option here: use cors: { origins }')
    expect(app({ token: TOKEN, elicitationTimeoutMs: 1 })).toBe("createToolsApp: elicitationTimeoutMs is no longer an option here: the timeout is the runtime's approvals.timeoutMs")
    expect(app({ token: TOKEN, elicitationPlans: true })).toBe("createToolsApp: elicitationPlans is no longer an option here: plans are the runtime's approvals.plans")
  })

  it('a signal that is not an AbortSignal', () => {
    expect(app({ token: TOKEN, signal: { aborted: false } })).toBe('createToolsApp: signal must be an AbortSignal')
    expect(app({ token: TOKEN, signal: new AbortController().signal })).toBeUndefined()
  })

  it('a heartbeat that is not a non-negative finite number', () => {
    for (const heartbeatMs of [-1, Number.POSITIVE_INFINITY, Number.NaN, '100']) expect(app({ token: TOKEN, heartbeatMs })).toBe('createToolsApp: heartbeatMs must be a non-negative number')
    expect(app({ token: TOKEN, heartbeatMs: 0 })).toBeUndefined()
    expect(app({ token: TOKEN, heartbeatMs: 0.5 })).toBeUndefined()
  })

  it('an error reporter that is not a function', () => {
    expect(app({ token: TOKEN, onError: {} })).toBe('createToolsApp: onError must be a function')
  })

  it('a body cap that is not a positive integer', () => {
    for (const maxBodyBytes of [0, -5, 2.5, '1024', Number.MAX_SAFE_INTEGER + 1]) expect(app({ token: TOKEN, maxBodyBytes })).toBe('createToolsApp: maxBodyBytes must be a positive integer')
    expect(app({ token: TOKEN, maxBodyBytes: 1 })).toBeUndefined()
  })

  it('a stream backlog that is not a positive integer', () => {
    for (const maxStreamBacklogBytes of [0, -1, 1.5, '1024', Number.NaN, Number.MAX_SAFE_INTEGER + 1]) {
      expect(app({ token: TOKEN, maxStreamBacklogBytes })).toBe('createToolsApp: maxStreamBacklogBytes must be a positive integer')
    }
    expect(app({ token: TOKEN, maxStreamBacklogBytes: 1 })).toBeUndefined()
  })

  it('a stream write timeout that is not a positive number of milliseconds within a timer’s range', () => {
    for (const streamWriteTimeoutMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '100', 2_147_483_648]) {
      expect(app({ token: TOKEN, streamWriteTimeoutMs })).toBe('createToolsApp: streamWriteTimeoutMs must be a positive number of milliseconds, at most 2147483647')
    }
    expect(app({ token: TOKEN, streamWriteTimeoutMs: 2_147_483_647 })).toBeUndefined()
    expect(app({ token: TOKEN, streamWriteTimeoutMs: 0.5 })).toBeUndefined()
  })

  it('run table bounds that are not positive integers', () => {
    expect(app({ token: TOKEN, runs: 'big' })).toBe('createToolsApp: runs must be an object')
    expect(app({ token: TOKEN, runs: null })).toBe('createToolsApp: runs must be an object')
    for (const name of ['maxRuns', 'maxBytes', 'maxEventBytesPerRun', 'retentionMs', 'maxStreams']) {
      for (const value of [0, -1, 1.5, '8']) expect(app({ token: TOKEN, runs: { [name]: value } })).toBe(`createToolsApp: runs.${name} must be a positive integer`)
      expect(app({ token: TOKEN, runs: { [name]: 1 } })).toBeUndefined()
    }
  })
})

describe('authentication', () => {
  const { app } = createFixture()

  it('leaves /v1/health open', async () => {
    const response = await app.request('/v1/health')
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ status: 'ok' })
  })

  it('answers 401 with a Bearer challenge when the token is missing, wrong or of another scheme', async () => {
    const missing = await app.request('/v1/tools')
    expect(missing.status).toBe(401)
    expect(missing.headers.get('WWW-Authenticate')).toBe('Bearer realm="toolyard"')
    expect(await errorOf(missing)).toMatchObject({ code: 'UNAUTHORIZED' })

    const wrong = await app.request('/v1/tools', { headers: { Authorization: `Bearer ${TOKEN}x` } })
    expect(wrong.status).toBe(401)
    expect(wrong.headers.get('WWW-Authenticate')).toBe('Bearer realm="toolyard", error="invalid_token"')
    expect((await errorOf(wrong)).code).toBe('UNAUTHORIZED')

    const basic = await app.request('/v1/tools', { headers: { Authorization: `Basic ${btoa(`u:${TOKEN}`)}` } })
    expect(basic.status).toBe(401)

    // Every protected route, not just one.
    for (const [path, init] of [
      ['/v1/sdk', {}],
      ['/v1/prompt', {}],
      ['/v1/catalog/search?q=echo', {}],
      ['/v1/tools/echo', {}],
      ['/v1/tools/echo/execute', post({ arguments: { text: 'x' } }, { 'Content-Type': 'application/json' })],
      ['/v1/run', post({ code: 'return 1', description: 'x' }, { 'Content-Type': 'application/json' })],
      ['/v1/nothing-here', {}],
    ] as const) {
      expect((await app.request(path, init)).status, path).toBe(401)
    }
  })

  it('accepts the right token, with any case of the scheme', async () => {
    expect((await app.request('/v1/tools', { headers: AUTH })).status).toBe(200)
    expect((await app.request('/v1/tools', { headers: { Authorization: `bearer ${TOKEN}` } })).status).toBe(200)
  })

  it('serves without a token only when auth: false was explicit', async () => {
    const { runtime } = createFixture()
    const open = createToolsApp(runtime, { auth: false })
    expect((await open.request('/v1/tools')).status).toBe(200)
  })
})

/** The API and, mounted beside it at /mcp, the MCP endpoint with the same token: one gate, two apps. */
function apiWithMcp(appOptions: Parameters<typeof createFixture>[1] = {}) {
  const fixture = createFixture({}, appOptions)
  fixture.app.route('/mcp', createMcpApp(fixture.runtime, { token: TOKEN }))
  const headers = (authorization: string | undefined, extra: Record<string, string> = {}) =>
    authorization === undefined ? extra : { ...extra, Authorization: authorization }
  const endpoints = {
    api: (authorization?: string) => fixture.app.request('/v1/tools', { headers: headers(authorization) }),
    mcp: (authorization?: string) =>
      fixture.app.request('/mcp', {
        method: 'POST',
        headers: headers(authorization, { 'Content-Type': 'application/json' }),
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      }),
  }
  return { ...fixture, endpoints }
}

describe('bearer token: only the exact token under the Bearer scheme gets in (API and MCP)', () => {
  const { endpoints } = apiWithMcp()
  const changeAt = (text: string, index: number): string => `${text.slice(0, index)}${text[index] === 'a' ? 'b' : 'a'}${text.slice(index + 1)}`
  const middle = Math.floor(TOKEN.length / 2)

  // Presented under the right scheme, but not the token: 401 with error="invalid_token".
  const wrongTokens: [string, string][] = [
    ['a one-character prefix', TOKEN.slice(0, 1)],
    ['the first half (a prefix)', TOKEN.slice(0, middle)],
    ['the token without its last character (suffix-truncated)', TOKEN.slice(0, -1)],
    ['the token without its first character (a suffix)', TOKEN.slice(1)],
    ['the token plus one character', `${TOKEN}x`],
    ['the token twice', `${TOKEN}${TOKEN}`],
    ['same length, first character changed', changeAt(TOKEN, 0)],
    ['same length, a middle character changed', changeAt(TOKEN, middle)],
    ['same length, last character changed', changeAt(TOKEN, TOKEN.length - 1)],
    ['the token upper-cased', TOKEN.toUpperCase()],
  ]
  // No bearer credentials at all: 401 with the bare challenge.
  const noBearer: [string, string | undefined][] = [
    ['no Authorization header', undefined],
    ['an empty Authorization header', ''],
    ['a blank Authorization header', '   '],
    ['the scheme with an empty token', 'Bearer '],
    ['the scheme alone', 'Bearer'],
    ['the token without a scheme', TOKEN],
    ['the token under Basic', `Basic ${TOKEN}`],
    ['user:token under Basic', `Basic ${btoa(`u:${TOKEN}`)}`],
    ['the token under another scheme', `Token ${TOKEN}`],
    ['a prefix of the scheme', `Bear ${TOKEN}`],
    ['the scheme glued to the token', `Bearer${TOKEN}`],
    ['a colon after the scheme', `Bearer:${TOKEN}`],
    ['two tokens', `Bearer ${TOKEN} ${TOKEN}`],
    ['two Authorization headers, joined by the server', `Bearer ${TOKEN}, Bearer ${TOKEN}`],
  ]

  for (const endpoint of ['api', 'mcp'] as const) {
    it.each(wrongTokens)(`${endpoint}: refuses %s with 401 invalid_token`, async (_label, token) => {
      const response = await endpoints[endpoint](`Bearer ${token}`)
      expect(response.status).toBe(401)
      expect(response.headers.get('WWW-Authenticate')).toBe('Bearer realm="toolyard", error="invalid_token"')
      expect(await errorOf(response)).toEqual({ code: 'UNAUTHORIZED', message: 'the bearer token is not valid' })
    })

    it.each(noBearer)(`${endpoint}: refuses %s with 401 and the bare challenge`, async (_label, authorization) => {
      const response = await endpoints[endpoint](authorization)
      expect(response.status).toBe(401)
      expect(response.headers.get('WWW-Authenticate')).toBe('Bearer realm="toolyard"')
      const absent = authorization === undefined || authorization.trim() === ''
      expect(await errorOf(response)).toEqual({ code: 'UNAUTHORIZED', message: absent ? 'a bearer token is required' : 'the Authorization header must be "Bearer <token>": one bearer token' })
    })

    it(`${endpoint}: accepts the exact token under any case of the scheme`, async () => {
      for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
        expect((await endpoints[endpoint](`${scheme} ${TOKEN}`)).status, scheme).toBe(200)
      }
    })
  }
})

describe('the default body limit is 1 MiB: exactly that much is read, one byte more is 413 (API and MCP)', () => {
  const { app } = apiWithMcp()
  const execute = (body: string) => app.request('/v1/tools/echo/execute', { method: 'POST', headers: JSON_AUTH, body })
  const rpc = (body: string) => app.request('/mcp', { method: 'POST', headers: JSON_AUTH, body })

  it('api: a body of exactly the limit runs the tool', async () => {
    const response = await execute(echoOfBytes(DOCUMENTED_BODY_LIMIT))
    expect(response.status).toBe(200)
    const result = (await response.json()) as ToolExecutionResult
    expect(result.isError).toBe(false)
  })

  it('api: one byte over the limit is 413 PAYLOAD_TOO_LARGE', async () => {
    const response = await execute(echoOfBytes(DOCUMENTED_BODY_LIMIT + 1))
    expect(response.status).toBe(413)
    expect(await errorOf(response)).toEqual({ code: 'PAYLOAD_TOO_LARGE', message: `the request body exceeds ${DOCUMENTED_BODY_LIMIT} bytes` })
  })

  it('mcp: a body of exactly the limit is answered', async () => {
    const response = await rpc(pingOfBytes(DOCUMENTED_BODY_LIMIT))
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ jsonrpc: '2.0', id: 1, result: {} })
  })

  it('mcp: one byte over the limit is 413 PAYLOAD_TOO_LARGE', async () => {
    const response = await rpc(pingOfBytes(DOCUMENTED_BODY_LIMIT + 1))
    expect(response.status).toBe(413)
    expect(await errorOf(response)).toEqual({ code: 'PAYLOAD_TOO_LARGE', message: `the request body exceeds ${DOCUMENTED_BODY_LIMIT} bytes` })
  })
})

describe('one response shape', () => {
  it('every JSON answer, success or error, API or MCP, is plain application/json', async () => {
    const { app } = apiWithMcp()
    const responses = [
      await app.request('/v1/health'),
      await app.request('/v1/tools', { headers: AUTH }),
      await app.request('/v1/tools'),
      await app.request('/v1/tools/nope', { headers: AUTH }),
      await app.request('/v1/tools/echo/execute', { method: 'POST', headers: JSON_AUTH, body: '{"arguments":{"text":"x"}}' }),
      await app.request('/v1/tools/echo/execute', { method: 'POST', headers: JSON_AUTH, body: '{' }),
      await app.request('/v1/nowhere', { headers: AUTH }),
      await app.request('/mcp', { method: 'POST', headers: JSON_AUTH, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' }),
      await app.request('/mcp', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' }),
      await app.request('/mcp', { headers: AUTH }),
    ]
    expect(responses.map((r) => r.status)).toEqual([200, 200, 401, 404, 200, 400, 404, 200, 401, 405])
    for (const response of responses) {
      expect(response.headers.get('Content-Type'), String(response.status)).toBe('application/json')
      // The security headers ride on errors too (they are applied on the way out).
      expect(response.headers.get('X-Content-Type-Options')).toBe('nosniff')
      expect(response.headers.get('X-Frame-Options')).toBe('DENY')
      expect(response.headers.get('Cache-Control')).toBe('no-store')
    }
  })

  it('GET /v1/tools/:name and POST …/execute say the same thing about an unknown tool', async () => {
    const { app } = createFixture()
    for (const name of ['nope', 'secret']) {
      const described = await errorOf(await app.request(`/v1/tools/${name}`, { headers: AUTH }))
      const executed = await errorOf(await app.request(`/v1/tools/${name}/execute`, post({ arguments: {} })))
      expect(described).toEqual({ code: 'UNKNOWN_TOOL', message: `unknown tool "${name}"` })
      expect(executed).toEqual(described)
    }
  })

  it('an unknown tool name a client chose is quoted at most 64 characters and its length, never echoed whole', async () => {
    const { app, runtime } = createFixture()
    const name = 'a'.repeat(5_000)
    const message = `unknown tool "${'a'.repeat(64)}"… (5000 characters)`
    expect(await errorOf(await app.request(`/v1/tools/${name}`, { headers: AUTH }))).toEqual({ code: 'UNKNOWN_TOOL', message })
    expect(await errorOf(await app.request(`/v1/tools/${name}/execute`, post({ arguments: {} })))).toEqual({ code: 'UNKNOWN_TOOL', message })
    const result = await runtime.execute({ callId: 'c-long', name, arguments: {}, signal: new AbortController().signal })
    expect(result.isError ? [result.error.info?.code, result.error.message] : result.value).toEqual(['UNKNOWN_TOOL', message])
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
      expect(await errorOf(await app.request('/v1/tools/echo/execute', post(JSON.stringify(body))))).toEqual({ code: 'INVALID_REQUEST', message: 'the request body must be a JSON object (expected fields: arguments, callId, agent)' })
    }
  })

  it('call ids: printable ASCII without surrounding spaces, 1–256 characters; echoed in the header in the principal\'s namespace', async () => {
    const bad = { code: 'INVALID_REQUEST', message: 'callId must be 1–256 printable ASCII characters, without leading or trailing spaces' }
    for (const callId of ['', ' x', 'x ', 'a\tb', 'é', 'x'.repeat(257), 5]) {
      expect(await errorOf(await app.request('/v1/tools/echo/execute', post({ callId, arguments: { text: 'x' } })))).toEqual(bad)
    }
    for (const callId of ['x', 'a b', '~!', 'x'.repeat(256)]) {
      const response = await app.request('/v1/tools/echo/execute', post({ callId, arguments: { text: 'x' } }))
      expect(response.status).toBe(200)
      // The `token` shorthand's principal is `admin`.
      expect(response.headers.get('X-Toolyard-Call-Id')).toBe(`client.admin.${callId}`)
    }
    const generated = await app.request('/v1/tools/echo/execute', post({ arguments: { text: 'x' } }))
    expect(generated.headers.get('X-Toolyard-Call-Id')).toMatch(/^http-[0-9a-f-]{36}$/)
  })

  it('an unknown tool is 404 with the call id', async () => {
    const response = await app.request('/v1/tools/nope/execute', post({ callId: 'c-404' }))
    expect(response.status).toBe(404)
    expect(response.headers.get('X-Toolyard-Call-Id')).toBe('client.admin.c-404')
    expect(await errorOf(response)).toEqual({ code: 'UNKNOWN_TOOL', message: 'unknown tool "nope"' })
  })
})

describe('GET /v1/tools', () => {
  const { app } = createFixture()

  it('lists the visible schemas of the global layer', async () => {
    const response = await app.request('/v1/tools', { headers: AUTH })
    expect(response.status).toBe(200)
    expect(response.headers.get('Cache-Control')).toBe('no-store')
    expect(response.headers.get('X-Content-Type-Options')).toBe('nosniff')
    const body = (await response.json()) as { mode: string; tools: ToolSchema[] }
    expect(body.mode).toBe('native')
    expect(body.tools.map((t) => t.name).sort()).toEqual(['echo', 'fail', 'wait'])
    expect(body.tools.find((t) => t.name === 'echo')?.parameters).toMatchObject({ type: 'object', required: ['text'] })
  })

  it("lists an agent's layer with ?agent=", async () => {
    const body = (await (await app.request('/v1/tools?agent=alice', { headers: AUTH })).json()) as { agent: string; tools: ToolSchema[] }
    expect(body.agent).toBe('alice')
    expect(body.tools.map((t) => t.name).sort()).toEqual(['echo', 'fail', 'secret', 'wait'])
  })

  it('rejects an empty, repeated or oversized agent', async () => {
    for (const query of ['agent=', 'agent=a&agent=b', `agent=${'x'.repeat(257)}`]) {
      const response = await app.request(`/v1/tools?${query}`, { headers: AUTH })
      expect(response.status, query).toBe(400)
      expect((await errorOf(response)).code).toBe('INVALID_REQUEST')
    }
  })
})

describe('GET /v1/tools/:name', () => {
  const { app } = createFixture()

  it('returns one tool with its output schema', async () => {
    const response = await app.request('/v1/tools/echo', { headers: AUTH })
    expect(response.status).toBe(200)
    const body = (await response.json()) as { tool: ToolSchema & { output: unknown } }
    expect(body.tool.name).toBe('echo')
    expect(body.tool.output).toMatchObject({ type: 'object', required: ['text'] })
    expect(body.tool.output).toEqual(echoTool.output.schema)
  })

  it('answers 404 UNKNOWN_TOOL for a name the caller cannot see', async () => {
    const response = await app.request('/v1/tools/secret', { headers: AUTH })
    expect(response.status).toBe(404)
    expect((await errorOf(response)).code).toBe('UNKNOWN_TOOL')
    expect((await app.request('/v1/tools/secret?agent=alice', { headers: AUTH })).status).toBe(200)
  })
})

describe('GET /v1/sdk', () => {
  it('serves the SDK as text with a strong SHA-256 ETag and honours If-None-Match', async () => {
    const { app } = createFixture()
    const response = await app.request('/v1/sdk', { headers: AUTH })
    expect(response.status).toBe(200)
    expect(response.headers.get('Content-Type')).toBe('text/plain; charset=utf-8')
    const etag = response.headers.get('ETag')!
    expect(etag).toMatch(/^"sha256-[A-Za-z0-9_-]{43}"$/)
    const text = await response.text()
    expect(text).toContain('echo')
    // The tag is the hash of the bytes.
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)))
    const b64 = btoa(String.fromCharCode(...digest)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
    expect(etag).toBe(`"sha256-${b64}"`)

    for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const cached = await app.request('/v1/sdk', { headers: { ...AUTH, 'If-None-Match': ifNoneMatch } })
      expect(cached.status, ifNoneMatch).toBe(304)
      expect(cached.headers.get('ETag')).toBe(etag)
      expect(await cached.text()).toBe('')
    }
    const stale = await app.request('/v1/sdk', { headers: { ...AUTH, 'If-None-Match': '"sha256-stale"' } })
    expect(stale.status).toBe(200)
    // Byte-stable: the same tool set gives the same tag.
    expect((await app.request('/v1/sdk', { headers: AUTH })).headers.get('ETag')).toBe(etag)
  })

  it('renders Python on request, with its own tag, and changes the tag when the tool set changes', async () => {
    const { app, runtime } = createFixture()
    const ts = await app.request('/v1/sdk?language=typescript', { headers: AUTH })
    const py = await app.request('/v1/sdk?language=python', { headers: AUTH })
    expect(py.status).toBe(200)
    expect(py.headers.get('X-Toolyard-Sdk-Language')).toBe('python')
    expect(await py.text()).toMatch(/TypedDict|def |class /)
    expect(py.headers.get('ETag')).not.toBe(ts.headers.get('ETag'))
    const before = ts.headers.get('ETag')
    const off = runtime.register({ ...echoTool, name: 'echo2' })
    const after = (await app.request('/v1/sdk?language=typescript', { headers: AUTH })).headers.get('ETag')
    expect(after).not.toBe(before)
    off()
    expect((await app.request('/v1/sdk?language=typescript', { headers: AUTH })).headers.get('ETag')).toBe(before)
  })

  it("includes the agent's layer with ?agent=", async () => {
    const { app } = createFixture()
    expect(await (await app.request('/v1/sdk', { headers: AUTH })).text()).not.toContain('secret')
    expect(await (await app.request('/v1/sdk?agent=alice', { headers: AUTH })).text()).toContain('secret')
  })

  it('rejects an unknown language', async () => {
    const { app } = createFixture()
    for (const query of ['language=cobol', 'language=constructor', 'language=python&language=typescript']) {
      const response = await app.request(`/v1/sdk?${query}`, { headers: AUTH })
      expect(response.status, query).toBe(400)
      expect((await errorOf(response)).code).toBe('INVALID_REQUEST')
    }
  })

  it('caches privately, names its language, and refuses a second language or an unknown one with the exact message', async () => {
    const { app } = createFixture()
    const response = await app.request('/v1/sdk', { headers: AUTH })
    expect(response.headers.get('ETag')).not.toMatch(/[=+/]/)
    expect(response.headers.get('Cache-Control')).toBe('private, no-cache')
    expect(response.headers.get('Vary')).toBe('Authorization')
    expect(response.headers.get('X-Toolyard-Sdk-Language')).toBe('typescript')
    expect(await errorOf(await app.request('/v1/sdk?language=typescript&language=python', { headers: AUTH }))).toEqual({ code: 'INVALID_REQUEST', message: 'language must be given at most once' })
    expect(await errorOf(await app.request('/v1/sdk?language=cobol', { headers: AUTH }))).toEqual({ code: 'INVALID_REQUEST', message: 'no SDK renderer for language "cobol" (typescript, python)' })
  })

  it('every SDK variant’s ETag is the base64url SHA-256 of its bytes', async () => {
    const { app } = createFixture()
    for (const query of ['', '?language=python', '?agent=alice', '?agent=alice&language=python']) {
      const response = await app.request(`/v1/sdk${query}`, { headers: AUTH })
      const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new Uint8Array(await response.arrayBuffer())))
      const b64url = btoa(String.fromCharCode(...digest)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
      expect([query, response.headers.get('ETag')]).toEqual([query, `"sha256-${b64url}"`])
    }
  })

  it('renders each tool with its output schema', async () => {
    const { app } = createFixture()
    const text = await (await app.request('/v1/sdk', { headers: AUTH })).text()
    // echo's output schema is { text: string }: the SDK's return type names it.
    expect(text).toMatch(/text: string/)
  })

  it('answers HEAD with the headers and no body', async () => {
    const { app } = createFixture()
    const response = await app.request('/v1/sdk', { method: 'HEAD', headers: AUTH })
    expect(response.status).toBe(200)
    expect(response.headers.get('ETag')).toMatch(/^"sha256-/)
    expect(await response.text()).toBe('')
  })
})

describe('GET /v1/prompt', () => {
  it('returns the assembly: sections and wire tools', async () => {
    const { app, runtime } = createFixture()
    const response = await app.request('/v1/prompt', { headers: AUTH })
    expect(response.status).toBe(200)
    const body = (await response.json()) as PromptAssembly
    const expected = runtime.assemble()
    expect(body.mode).toBe('native')
    expect(body.tools).toEqual(JSON.parse(JSON.stringify(expected.tools)))
    expect(body.sections).toEqual(JSON.parse(JSON.stringify(expected.sections)))
  })

  it("uses the agent's presentation with ?agent=", async () => {
    const { app, runtime } = createFixture()
    runtime.section({ id: 'intro', order: 10, text: 'You are helpful.' })
    runtime.agent('alice').section({ id: 'alice-only', order: 20, text: 'Alice rules.' })
    const body = (await (await app.request('/v1/prompt?agent=alice', { headers: AUTH })).json()) as PromptAssembly
    expect(body.sections.map((s) => s.id)).toEqual(expect.arrayContaining(['intro', 'alice-only']))
    expect(body.tools.map((t) => t.name)).toContain('secret')
  })

  it('answers 409 ASSEMBLY_FAILED when the configuration cannot assemble (an agent presenting code, no code runtime)', async () => {
    const { app, runtime } = createFixture()
    runtime.agent('coder').presentAs('code')
    const response = await app.request('/v1/prompt?agent=coder', { headers: AUTH })
    expect(response.status).toBe(409)
    const error = await errorOf(response)
    expect(error.code).toBe('ASSEMBLY_FAILED')
    expect(error.message).toMatch(/codeRuntime/)
  })

  it('refuses a per-request mode', async () => {
    const { app } = createFixture()
    const response = await app.request('/v1/prompt?mode=code', { headers: AUTH })
    expect(response.status).toBe(400)
    expect(await errorOf(response)).toEqual({
      code: 'INVALID_REQUEST',
      message: 'mode cannot be chosen per request: the prompt uses the presentation of the agent (pick an agent that declared the mode)',
    })
  })
})

describe('POST /v1/tools/:name/execute', () => {
  it('answers the frozen result as JSON with the call id', async () => {
    const { app, results } = createFixture()
    const response = await app.request('/v1/tools/echo/execute', post({ arguments: { text: 'hello' } }))
    expect(response.status).toBe(200)
    const callId = response.headers.get('X-Toolyard-Call-Id')!
    expect(callId).toMatch(/^http-/)
    const result = (await response.json()) as ToolExecutionResult
    expect(result).toEqual({ isError: false, value: { text: 'hello' }, content: [{ type: 'text', text: 'hello' }] })
    expect(results.at(-1)).toMatchObject({ callId, name: 'echo' })
  })

  it('uses a caller-chosen callId and agent', async () => {
    const { app, results } = createFixture()
    const response = await app.request('/v1/tools/secret/execute', post({ arguments: {}, callId: 'model-call-7', agent: 'alice' }))
    expect(response.status).toBe(200)
    expect(response.headers.get('X-Toolyard-Call-Id')).toBe('client.admin.model-call-7')
    expect(((await response.json()) as { value: unknown }).value).toBe('for alice')
    expect(results.at(-1)).toMatchObject({ callId: 'client.admin.model-call-7', agent: 'alice' })
    // The agent may come from the query too.
    expect((await app.request('/v1/tools/secret/execute?agent=alice', post({}))).status).toBe(200)
  })

  it('reports tool-level failures as 200 results with the library codes', async () => {
    const { app } = createFixture()
    const failed = (await (await app.request('/v1/tools/fail/execute', post({ arguments: {} }))).json()) as ToolExecutionResult
    expect(failed.isError).toBe(true)
    if (failed.isError) {
      expect(failed.error.info?.code).toBe('TOOL_FAILED')
      expect(failed.content).toEqual([{ type: 'text', text: `Error: ${failed.error.message}` }])
    }
    const invalid = await app.request('/v1/tools/echo/execute', post({ arguments: { text: 42 } }))
    expect(invalid.status).toBe(200)
    const invalidResult = (await invalid.json()) as ToolExecutionResult
    expect(invalidResult.isError && invalidResult.error.info?.code).toBe('INVALID_ARGS')
  })

  it('treats a missing arguments field as {}', async () => {
    const { app, results } = createFixture()
    const result = (await (await app.request('/v1/tools/echo/execute', post({}))).json()) as ToolExecutionResult
    expect(result.isError && result.error.info?.code).toBe('INVALID_ARGS')
    expect(results.at(-1)!.result.isError).toBe(true)
  })

  it('answers 404 UNKNOWN_TOOL for an unknown or invisible tool', async () => {
    const { app } = createFixture()
    for (const name of ['nope', 'secret', '__proto__', 'constructor']) {
      const response = await app.request(`/v1/tools/${name}/execute`, post({ arguments: {} }))
      expect(response.status, name).toBe(404)
      expect((await errorOf(response)).code).toBe('UNKNOWN_TOOL')
    }
  })

  it('validates the envelope: object body, callId, agent', async () => {
    const { app } = createFixture()
    const cases: [unknown, string][] = [
      [[1, 2], 'INVALID_REQUEST'],
      ['"text"', 'INVALID_REQUEST'],
      ['null', 'INVALID_REQUEST'],
      [{ callId: 7 }, 'INVALID_REQUEST'],
      [{ callId: '' }, 'INVALID_REQUEST'],
      [{ agent: 3 }, 'INVALID_REQUEST'],
    ]
    for (const [body, expected] of cases) {
      const response = await app.request('/v1/tools/echo/execute', post(body))
      expect(response.status, JSON.stringify(body)).toBe(400)
      expect((await errorOf(response)).code).toBe(expected)
    }
    const conflict = await app.request('/v1/tools/echo/execute?agent=bob', post({ agent: 'alice' }))
    expect(conflict.status).toBe(400)
  })

  it('answers 415 for a non-JSON body, 400 for malformed JSON and 413 over the cap', async () => {
    const { app } = createFixture({}, { maxBodyBytes: 256 })
    const asText = await app.request('/v1/tools/echo/execute', post('{}', { ...AUTH, 'Content-Type': 'text/plain' }))
    expect(asText.status).toBe(415)
    expect((await errorOf(asText)).code).toBe('UNSUPPORTED_MEDIA_TYPE')
    const form = await app.request('/v1/tools/echo/execute', post('a=1', { ...AUTH, 'Content-Type': 'application/x-www-form-urlencoded' }))
    expect(form.status).toBe(415)
    const noType = await app.request('/v1/tools/echo/execute', { method: 'POST', headers: AUTH, body: new Uint8Array([0x7b, 0x7d]) })
    expect(noType.status).toBe(415)

    const malformed = await app.request('/v1/tools/echo/execute', post('{"arguments": {'))
    expect(malformed.status).toBe(400)
    expect((await errorOf(malformed)).code).toBe('INVALID_JSON_BODY')

    const big = await app.request('/v1/tools/echo/execute', post({ arguments: { text: 'x'.repeat(300) } }))
    expect(big.status).toBe(413)
    expect((await errorOf(big)).code).toBe('PAYLOAD_TOO_LARGE')
    // Just under the cap still works.
    expect((await app.request('/v1/tools/echo/execute', post({ arguments: { text: 'x'.repeat(200) } }))).status).toBe(200)
  })

  it('aborts the execution when the client goes away', async () => {
    const { app, wait, results } = createFixture()
    const client = new AbortController()
    const pending = app.request(
      new Request('http://localhost/v1/tools/wait/execute', { ...post({ arguments: {}, callId: 'waiting' }), signal: client.signal }),
    )
    await wait.started
    expect(wait.aborted).toBe(0)
    client.abort()
    await Promise.resolve(pending).catch(() => undefined)
    expect(wait.aborted).toBe(1)
    const outcome = results.find((r) => r.callId === 'client.admin.waiting')!.result
    expect(outcome.isError && outcome.error.info?.code).toBe('ABORTED')
  })
})

describe('routing errors', () => {
  const { app } = createFixture()

  it('answers 405 with Allow for a wrong method on a known route', async () => {
    const cases: [string, string, string][] = [
      ['POST', '/v1/tools', 'GET, HEAD'],
      ['DELETE', '/v1/sdk', 'GET, HEAD'],
      ['GET', '/v1/tools/echo/execute', 'POST'],
      ['GET', '/v1/run', 'POST'],
      ['PUT', '/v1/prompt', 'GET, HEAD'],
      ['POST', '/v1/health', 'GET, HEAD'],
    ]
    for (const [method, path, allow] of cases) {
      const response = await app.request(path, { method, headers: JSON_AUTH })
      expect(response.status, `${method} ${path}`).toBe(405)
      expect(response.headers.get('Allow')).toBe(allow)
      expect((await errorOf(response)).code).toBe('METHOD_NOT_ALLOWED')
    }
  })

  it('answers 404 NOT_FOUND for unknown routes', async () => {
    for (const path of ['/v1/nope', '/v2/tools', '/', '/v1/tools/echo/execute/more']) {
      const response = await app.request(path, { headers: AUTH })
      expect(response.status, path).toBe(404)
      expect((await errorOf(response)).code).toBe('NOT_FOUND')
    }
  })

  it('answers 500 INTERNAL without leaking the exception', async () => {
    const { runtime } = createFixture()
    // A runtime whose catalog read throws: a stand-in for any unexpected failure.
    const broken: ToolRuntime = {
      register: (d) => runtime.register(d),
      guard: (g) => runtime.guard(g),
      on: (hook, listener) => runtime.on(hook, listener),
      section: (s) => runtime.section(s),
      agent: (id) => runtime.agent(id),
      get: (name, scope) => runtime.get(name, scope),
      schemas: () => {
        throw new Error('db password is hunter2')
      },
      execute: (input) => runtime.execute(input),
      executionMode: (input) => runtime.executionMode(input),
      presentation: (scope) => runtime.presentation(scope),
      // `/v1/tools` reads the catalog from the agent's view.
      view: () => {
        throw new Error('db password is hunter2')
      },
      assemble: (scope) => runtime.assemble(scope),
      catalog: (scope) => runtime.catalog(scope),
      preflight: (request) => runtime.preflight(request),
      resumeRuns: (options) => runtime.resumeRuns(options),
      runs: runtime.runs,
      options: runtime.options,
      approvals: runtime.approvals,
      events: runtime.events,
      dispose: () => runtime.dispose(),
    }
    const reported: [unknown, string][] = []
    const app2 = createToolsApp(broken, { token: TOKEN, onError: (error, request) => reported.push([error, request.url]) })
    const response = await app2.request('/v1/tools', { headers: AUTH })
    expect(response.status).toBe(500)
    const error = await errorOf(response)
    expect(error).toEqual({ code: 'INTERNAL', message: 'internal error' })
    // The operator gets the exception; the client never does.
    expect(reported).toEqual([[expect.objectContaining({ message: 'db password is hunter2' }), 'http://localhost/v1/tools']])
    // A documented failure is not an internal one: nothing more is reported.
    expect((await app2.request('/v1/nothing', { headers: AUTH })).status).toBe(404)
    expect(reported).toHaveLength(1)
  })
})

describe('CORS and origins', () => {
  it('serves no other origin when no allowlist is given', async () => {
    const { app } = createFixture()
    const response = await app.request('/v1/tools', { headers: { ...AUTH, Origin: 'https://evil.example' } })
    expect(response.status).toBe(403)
    expect((await errorOf(response)).code).toBe('FORBIDDEN_ORIGIN')
    expect(response.headers.get('Access-Control-Allow-Origin')).toBeNull()
    const preflight = await app.request('/v1/tools', {
      method: 'OPTIONS',
      headers: { Origin: 'https://evil.example', 'Access-Control-Request-Method': 'GET' },
    })
    expect(preflight.status).toBe(403)
    expect(preflight.headers.get('Access-Control-Allow-Origin')).toBeNull()
    // A POST with a JSON body from a foreign page is refused before it can run anything.
    const run = await app.request('/v1/tools/echo/execute', post({ arguments: { text: 'x' } }, { ...JSON_AUTH, Origin: 'null' }))
    expect(run.status).toBe(403)
  })

  it('accepts a same-origin Origin header (browsers send it on POST)', async () => {
    const { app } = createFixture()
    const response = await app.request('http://localhost/v1/tools/echo/execute', post({ arguments: { text: 'x' } }, { ...JSON_AUTH, Origin: 'http://localhost' }))
    expect(response.status).toBe(200)
    expect(response.headers.get('Access-Control-Allow-Origin')).toBeNull()
  })

  it('allows exactly the allowlisted origins, without credentials', async () => {
    const { app } = createFixture({}, { cors: { origins: ['https://app.example'], maxAgeSeconds: 60 } })
    const preflight = await app.request('/v1/tools/echo/execute', {
      method: 'OPTIONS',
      headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization, content-type' },
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('Access-Control-Allow-Origin')).toBe('https://app.example')
    // Hono's cors joins lists with a bare comma.
    expect(preflight.headers.get('Access-Control-Allow-Methods')?.split(/,\s*/)).toEqual(['GET', 'HEAD', 'POST', 'DELETE'])
    expect(preflight.headers.get('Access-Control-Allow-Headers')).toMatch(/Authorization/)
    expect(preflight.headers.get('Access-Control-Max-Age')).toBe('60')
    expect(preflight.headers.get('Access-Control-Allow-Credentials')).toBeNull()

    const response = await app.request('/v1/tools', { headers: { ...AUTH, Origin: 'https://app.example' } })
    expect(response.status).toBe(200)
    expect(response.headers.get('Access-Control-Allow-Origin')).toBe('https://app.example')
    expect(response.headers.get('Vary')).toMatch(/Origin/)
    expect(response.headers.get('Access-Control-Expose-Headers')).toMatch(/ETag/)
    // Auth still applies to allowlisted origins.
    expect((await app.request('/v1/tools', { headers: { Origin: 'https://app.example' } })).status).toBe(401)

    // A 304 still tells the allowlisted page it may read it (Hono's etag drops unlisted headers from a 304).
    const etag = (await app.request('/v1/sdk', { headers: AUTH })).headers.get('ETag')!
    const cached = await app.request('/v1/sdk', { headers: { ...AUTH, Origin: 'https://app.example', 'If-None-Match': etag } })
    expect(cached.status).toBe(304)
    expect(cached.headers.get('Access-Control-Allow-Origin')).toBe('https://app.example')
    expect(cached.headers.get('Access-Control-Expose-Headers')).toMatch(/X-Toolyard-Sdk-Language/)
    expect(cached.headers.get('X-Toolyard-Sdk-Language')).toBe('typescript')

    for (const origin of ['https://evil.example', 'https://app.example.evil.example', 'http://app.example']) {
      const other = await app.request('/v1/tools', { headers: { ...AUTH, Origin: origin } })
      expect(other.status, origin).toBe(403)
    }
  })
})

describe('not configured and shutting down', () => {
  it('answers 503 NOT_CONFIGURED on every tool route', async () => {
    const { runtime } = createFixture()
    const app = createToolsApp(runtime, { notConfigured: 'set the TOOLYARD_TOKEN secret' })
    expect(await (await app.request('/v1/health')).json()).toEqual({ status: 'not-configured' })
    for (const [path, init] of [
      ['/v1/tools', {}],
      ['/v1/sdk', {}],
      ['/v1/prompt', {}],
      ['/v1/tools/echo/execute', post({ arguments: { text: 'x' } })],
      ['/v1/run', post({ code: 'return 1', description: 'x' })],
    ] as const) {
      const response = await app.request(path, init)
      expect(response.status, path).toBe(503)
      expect(await errorOf(response)).toEqual({ code: 'NOT_CONFIGURED', message: 'set the TOOLYARD_TOKEN secret' })
    }
  })

  it('aborts in-flight calls and refuses new ones once the shutdown signal fires', async () => {
    const stop = new AbortController()
    const { app, wait, results } = createFixture({}, { signal: stop.signal })
    const pending = app.request('/v1/tools/wait/execute', post({ arguments: {}, callId: 'in-flight' }))
    await wait.started
    stop.abort()
    const response = await pending
    expect(response.status).toBe(200)
    const result = (await response.json()) as ToolExecutionResult
    expect(result.isError && result.error.info?.code).toBe('ABORTED')
    expect(wait.aborted).toBe(1)
    expect(results.find((r) => r.callId === 'client.admin.in-flight')).toBeDefined()
    const later = await app.request('/v1/tools', { headers: AUTH })
    expect(later.status).toBe(503)
    expect((await errorOf(later)).code).toBe('SHUTTING_DOWN')
    expect(await (await app.request('/v1/health')).json()).toEqual({ status: 'shutting-down' })
  })
})
