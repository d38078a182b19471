/**
 * The HTTP API: a Hono app over web-standard Request/Response that serves one
 * {@link ToolRuntime} — tool schemas, the Code Mode SDK, the assembled prompt, direct
 * execution and `run_code` (JSON or server-sent events). It runs unchanged under
 * `@hono/node-server` and as a Cloudflare Worker. docs/http-api.md documents every route.
 *
 * @module
 */
import { Hono } from 'hono'
import type { Context, MiddlewareHandler } from 'hono'
import { hasSdkRenderer, renderToolsSdk } from '../code-mode/sdk.js'
import type { SdkToolInput } from '../code-mode/sdk.js'
import { ToolError } from '../errors.js'
import type { ToolRuntime } from '../runtime-types.js'
import type { ScopeKey, ToolExecutionResult } from '../types.js'
import { bearerToken, digestsEqual, resolveAuthOptions, sha256 } from './auth.js'
import { httpErrorResponse } from './http-errors.js'
import { readJsonBody } from './request-body.js'
import type { SessionLogHub, SessionLogHubEvent } from './session-log-hub.js'

/** Cross-origin access: off unless an allowlist is given. */
export interface ToolsAppCorsOptions {
  /** Exact origins (`https://app.example`) allowed to call the API from a browser. No wildcard. */
  readonly origins: readonly string[]
  /** How long a browser may cache a preflight. Default 600 seconds. */
  readonly maxAgeSeconds?: number
}

/** Options of {@link createToolsApp}; validated at creation (`INVALID_OPTIONS`). */
export interface ToolsAppOptions {
  /**
   * The bearer token every `/v1` route except `/v1/health` requires (at least 16
   * printable ASCII characters, no spaces). Required unless `auth: false` or `notConfigured`.
   */
  readonly token?: string
  /** `false` disables authentication; must be said explicitly (and not together with `token`). */
  readonly auth?: false
  /** CORS allowlist; absent → no cross-origin request is served. */
  readonly cors?: ToolsAppCorsOptions
  /** Cap on a request body, enforced while reading. Default 1 MiB. */
  readonly maxBodyBytes?: number
  /**
   * When truthy, every `/v1` route but `/v1/health` answers 503 `NOT_CONFIGURED` (e.g. the
   * edge worker without its token secret); a string replaces the message.
   */
  readonly notConfigured?: boolean | string
  /**
   * The hub the runtime was created with (`sessionLog`), so `POST /v1/run` can stream
   * each sub-call's `tool/code-dispatch-start` / `tool/code-dispatch` as it happens.
   * Absent → streamed runs carry only `start` and `result`.
   */
  readonly sessionLog?: SessionLogHub
  /** Shutdown: aborting it aborts every in-flight call; later calls answer 503 `SHUTTING_DOWN`. */
  readonly signal?: AbortSignal
  /** Interval of SSE keep-alive comments, in ms. Default 15,000; 0 disables. */
  readonly heartbeatMs?: number
}

/** `GET /v1/tools` and `GET /v1/tools/:name` answer with these. */
export interface ToolsListBody {
  readonly agent?: ScopeKey
  readonly mode: string
  readonly tools: readonly unknown[]
}

const DEFAULT_MAX_BODY_BYTES = 1024 * 1024
const MAX_ID_LENGTH = 256
const CALL_ID_HEADER = 'X-Toolyard-Call-Id'

type RouteMethods = readonly ('GET' | 'POST')[]

/** Every route, for 405 answers with `Allow`. */
const ROUTES: readonly (readonly [string, RouteMethods])[] = [
  ['/v1/health', ['GET']],
  ['/v1/tools', ['GET']],
  ['/v1/tools/:name', ['GET']],
  ['/v1/tools/:name/execute', ['POST']],
  ['/v1/sdk', ['GET']],
  ['/v1/prompt', ['GET']],
  ['/v1/run', ['POST']],
]

function invalidOptions(message: string): never {
  throw new ToolError('INVALID_OPTIONS', `createToolsApp: ${message}`)
}

interface ValidatedOptions {
  readonly token: string | undefined
  readonly corsOrigins: ReadonlySet<string>
  readonly corsMaxAge: number
  readonly maxBodyBytes: number
  readonly notConfigured: string | undefined
  readonly hub: SessionLogHub | undefined
  readonly shutdown: AbortSignal | undefined
  readonly heartbeatMs: number
}

function validateOptions(options: ToolsAppOptions): ValidatedOptions {
  if (typeof options !== 'object' || options === null) invalidOptions('options must be an object')
  const { notConfigured } = resolveAuthOptions(options, invalidOptions)
  const corsOrigins = new Set<string>()
  let corsMaxAge = 600
  if (options.cors !== undefined) {
    const { origins, maxAgeSeconds } = options.cors ?? ({} as ToolsAppCorsOptions)
    if (!Array.isArray(origins) || origins.length === 0) invalidOptions('cors.origins must be a non-empty array')
    for (const origin of origins as unknown[]) {
      let parsed: URL | undefined
      try {
        parsed = typeof origin === 'string' ? new URL(origin) : undefined
      } catch {
        parsed = undefined
      }
      if (parsed === undefined || parsed.origin !== origin || parsed.origin === 'null') {
        invalidOptions(`cors.origins entry ${JSON.stringify(String(origin))} is not an exact origin (scheme://host[:port])`)
      }
      corsOrigins.add(origin as string)
    }
    if (maxAgeSeconds !== undefined) {
      if (!Number.isSafeInteger(maxAgeSeconds) || maxAgeSeconds < 0) invalidOptions('cors.maxAgeSeconds must be a non-negative integer')
      corsMaxAge = maxAgeSeconds
    }
  }
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes <= 0) invalidOptions('maxBodyBytes must be a positive integer')
  const hub = options.sessionLog
  if (hub !== undefined && (typeof hub !== 'object' || hub === null || typeof hub.subscribe !== 'function')) {
    invalidOptions('sessionLog must be a hub from createSessionLogHub()')
  }
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) invalidOptions('signal must be an AbortSignal')
  const heartbeatMs = options.heartbeatMs ?? 15_000
  if (typeof heartbeatMs !== 'number' || !Number.isFinite(heartbeatMs) || heartbeatMs < 0) {
    invalidOptions('heartbeatMs must be a non-negative number')
  }
  return {
    token: options.token,
    corsOrigins,
    corsMaxAge,
    maxBodyBytes,
    notConfigured,
    hub,
    shutdown: options.signal,
    heartbeatMs,
  }
}

/** Whether an `Accept` header asks for server-sent events. */
function wantsEventStream(accept: string | undefined): boolean {
  if (accept === undefined) return false
  return accept.split(',').some((part) => {
    const [type, ...params] = part.split(';')
    if (type?.trim().toLowerCase() !== 'text/event-stream') return false
    // `q=0` means "not acceptable".
    return !params.some((p) => /^\s*q\s*=\s*0(\.0*)?\s*$/i.test(p))
  })
}

function base64Url(bytes: Uint8Array): string {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

/** Whether `If-None-Match` matches the strong `etag` (weak comparison, as RFC 9110 asks for this header). */
function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false
  if (ifNoneMatch.trim() === '*') return true
  return ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)
}

function sseFrame(event: string, id: number, data: unknown): string {
  // JSON.stringify escapes every line break, so one `data:` line is always enough.
  return `event: ${event}\nid: ${id}\ndata: ${JSON.stringify(data)}\n\n`
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function invalidRequest(message: string): Response {
  return httpErrorResponse('INVALID_REQUEST', message)
}

function validId(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_ID_LENGTH
}

/**
 * A call id travels back in the `X-Toolyard-Call-Id` header, so it must be a valid,
 * unaltered header value: printable ASCII, no surrounding spaces (which a header would
 * trim). Checked before the call runs — a tool must never run for a request whose
 * answer cannot then be written.
 */
function validCallId(value: unknown): value is string {
  return validId(value) && /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(value)
}

/**
 * Creates the HTTP API for `runtime`. Authentication is on by default; the error body
 * of every failure is `{ "error": { "code", "message" } }`.
 *
 * Routes (all under `/v1`): `GET /health`, `GET /tools`, `GET /tools/:name`,
 * `POST /tools/:name/execute`, `GET /sdk`, `GET /prompt`, `POST /run` (JSON, or SSE with
 * `Accept: text/event-stream`). `agent` selects the agent layer everywhere it applies.
 *
 * @example
 * ```ts
 * const hub = createSessionLogHub()
 * const runtime = createToolRuntime({ mode: 'both', codeRuntime, sessionLog: hub })
 * const app = createToolsApp(runtime, { token: process.env.TOOLYARD_TOKEN, sessionLog: hub })
 * export default app // a Cloudflare Worker, or serve(app) on Node
 * ```
 * @see docs/http-api.md
 */
export function createToolsApp(runtime: ToolRuntime, options: ToolsAppOptions): Hono {
  if (typeof runtime !== 'object' || runtime === null || typeof runtime.execute !== 'function') {
    invalidOptions('runtime must be a ToolRuntime')
  }
  const config = validateOptions(options)
  const tokenDigest = config.token === undefined ? undefined : sha256(config.token)
  // Hash the token now so a malformed environment fails before the first request.
  tokenDigest?.catch(() => {})
  const app = new Hono()

  const signalFor = (request: Request, extra?: AbortSignal): AbortSignal => {
    const signals = [request.signal]
    if (config.shutdown !== undefined) signals.push(config.shutdown)
    if (extra !== undefined) signals.push(extra)
    return signals.length === 1 ? request.signal : AbortSignal.any(signals)
  }

  /** Reads `agent` from the query; a Response when it is malformed. */
  const queryAgent = (c: Context): ScopeKey | undefined | Response => {
    const values = c.req.queries('agent')
    if (values === undefined || values.length === 0) return undefined
    if (values.length > 1) return invalidRequest('agent must be given at most once')
    const value = values[0]
    if (!validId(value)) return invalidRequest(`agent must be a non-empty string of at most ${MAX_ID_LENGTH} characters`)
    return value
  }

  /** Reads `agent` from the body (or the query); conflicting values are an error. */
  const bodyAgent = (c: Context, body: Record<string, unknown>): ScopeKey | undefined | Response => {
    const fromQuery = queryAgent(c)
    if (fromQuery instanceof Response) return fromQuery
    if (!Object.hasOwn(body, 'agent') || body.agent === undefined) return fromQuery
    if (!validId(body.agent)) return invalidRequest(`agent must be a non-empty string of at most ${MAX_ID_LENGTH} characters`)
    if (fromQuery !== undefined && fromQuery !== body.agent) return invalidRequest('agent differs between the query and the body')
    return body.agent
  }

  const readObjectBody = async (c: Context): Promise<Record<string, unknown> | Response> => {
    const outcome = await readJsonBody(c.req.raw, config.maxBodyBytes)
    if (!outcome.ok) return outcome.response
    if (!isPlainObject(outcome.value)) return invalidRequest('the request body must be a JSON object')
    return outcome.value
  }

  /** Maps the runtime's configuration errors to responses; anything else is INTERNAL. */
  const runtimeFailure = (error: unknown): Response => {
    if (error instanceof ToolError && error.code === 'ASSEMBLY_FAILED') return httpErrorResponse('ASSEMBLY_FAILED', error.message)
    if (error instanceof ToolError && error.code === 'DISPOSED') return httpErrorResponse('SHUTTING_DOWN', 'the tool runtime was disposed')
    throw error
  }

  const resultResponse = (c: Context, callId: string, result: ToolExecutionResult): Response => {
    if (result.isError && result.error.info?.code === 'UNKNOWN_TOOL') {
      return httpErrorResponse('UNKNOWN_TOOL', result.error.message, { [CALL_ID_HEADER]: callId })
    }
    return c.json(result, 200, { [CALL_ID_HEADER]: callId })
  }

  // ── error handling ──
  app.onError(() => httpErrorResponse('INTERNAL', 'internal error'))
  app.notFound((c) => httpErrorResponse('NOT_FOUND', `no route for ${c.req.method} ${c.req.path}`))

  // ── response hygiene for every API response ──
  app.use('/v1/*', async (c, next) => {
    await next()
    const headers = c.res.headers
    if (!headers.has('Cache-Control')) headers.set('Cache-Control', 'no-store')
    headers.set('X-Content-Type-Options', 'nosniff')
  })

  // ── origin check and CORS ──
  const originGate: MiddlewareHandler = async (c, next) => {
    const origin = c.req.header('Origin')
    const allowlisted = origin !== undefined && config.corsOrigins.has(origin)
    if (origin !== undefined && !allowlisted && origin !== new URL(c.req.url).origin) {
      return httpErrorResponse('FORBIDDEN_ORIGIN', 'cross-origin requests from this origin are not allowed')
    }
    if (allowlisted && c.req.method === 'OPTIONS' && c.req.header('Access-Control-Request-Method') !== undefined) {
      return new Response(null, {
        status: 204,
        headers: {
          'Access-Control-Allow-Origin': origin,
          'Access-Control-Allow-Methods': 'GET, HEAD, POST',
          'Access-Control-Allow-Headers': 'Authorization, Content-Type, Accept, If-None-Match',
          'Access-Control-Max-Age': String(config.corsMaxAge),
          Vary: 'Origin',
        },
      })
    }
    await next()
    if (allowlisted) {
      c.res.headers.set('Access-Control-Allow-Origin', origin)
      c.res.headers.set('Access-Control-Expose-Headers', `ETag, ${CALL_ID_HEADER}, X-Toolyard-Sdk-Language`)
      c.res.headers.append('Vary', 'Origin')
    }
    return undefined
  }
  app.use('/v1/*', originGate)

  // ── availability and authentication (health stays open: it reveals nothing) ──
  app.use('/v1/*', async (c, next) => {
    if (c.req.path === '/v1/health') return next()
    if (config.notConfigured !== undefined) return httpErrorResponse('NOT_CONFIGURED', config.notConfigured)
    if (config.shutdown?.aborted === true) return httpErrorResponse('SHUTTING_DOWN', 'the server is shutting down')
    if (tokenDigest !== undefined) {
      const presented = bearerToken(c.req.header('Authorization'))
      const challenge = { 'WWW-Authenticate': 'Bearer realm="toolyard"' }
      if (presented === undefined) return httpErrorResponse('UNAUTHORIZED', 'a bearer token is required', challenge)
      const [expected, actual] = await Promise.all([tokenDigest, sha256(presented)])
      if (!digestsEqual(expected, actual)) {
        return httpErrorResponse('UNAUTHORIZED', 'the bearer token is not valid', {
          'WWW-Authenticate': 'Bearer realm="toolyard", error="invalid_token"',
        })
      }
    }
    return next()
  })

  // ── routes ──
  app.get('/v1/health', (c) =>
    c.json({ status: config.notConfigured === undefined ? (config.shutdown?.aborted === true ? 'shutting-down' : 'ok') : 'not-configured' }),
  )

  app.get('/v1/tools', (c) => {
    const agent = queryAgent(c)
    if (agent instanceof Response) return agent
    try {
      const body: ToolsListBody = { ...(agent === undefined ? {} : { agent }), mode: runtime.presentation(agent), tools: runtime.schemas(agent) }
      return c.json(body)
    } catch (error) {
      return runtimeFailure(error)
    }
  })

  app.get('/v1/tools/:name', (c) => {
    const agent = queryAgent(c)
    if (agent instanceof Response) return agent
    const name = c.req.param('name')
    try {
      const schema = runtime.schemas(agent).find((s) => s.name === name)
      if (schema === undefined) return httpErrorResponse('UNKNOWN_TOOL', `no tool named ${JSON.stringify(name)} is visible`)
      const definition = runtime.get(name, agent)
      return c.json({
        ...(agent === undefined ? {} : { agent }),
        tool: { ...schema, output: definition?.output.schema ?? {} },
      })
    } catch (error) {
      return runtimeFailure(error)
    }
  })

  app.get('/v1/sdk', async (c) => {
    const agent = queryAgent(c)
    if (agent instanceof Response) return agent
    const languages = c.req.queries('language') ?? []
    if (languages.length > 1) return invalidRequest('language must be given at most once')
    const language = languages[0] ?? runtime.options.codeRuntime?.language ?? 'typescript'
    if (!hasSdkRenderer(language)) return invalidRequest(`no SDK renderer for language ${JSON.stringify(language)} (typescript, python)`)
    let text: string
    try {
      const tools: SdkToolInput[] = runtime.schemas(agent).map((schema) => ({
        name: schema.name,
        description: schema.description,
        parameters: schema.parameters,
        output: runtime.get(schema.name, agent)?.output.schema ?? {},
      }))
      text = renderToolsSdk(tools, { language })
    } catch (error) {
      return runtimeFailure(error)
    }
    const bytes = new TextEncoder().encode(text)
    const etag = `"sha256-${base64Url(await sha256(bytes))}"`
    const headers = {
      ETag: etag,
      'Cache-Control': 'private, no-cache',
      Vary: 'Authorization',
      'X-Toolyard-Sdk-Language': language,
    }
    if (etagMatches(c.req.header('If-None-Match'), etag)) return new Response(null, { status: 304, headers })
    return new Response(bytes, { status: 200, headers: { ...headers, 'Content-Type': 'text/plain; charset=utf-8' } })
  })

  app.get('/v1/prompt', (c) => {
    const agent = queryAgent(c)
    if (agent instanceof Response) return agent
    if (c.req.query('mode') !== undefined) {
      return invalidRequest('mode cannot be chosen per request: the prompt uses the presentation of the agent (pick an agent that declared the mode)')
    }
    try {
      const assembly = runtime.assemble(agent)
      return c.json({ ...(agent === undefined ? {} : { agent }), mode: assembly.mode, sections: assembly.sections, tools: assembly.tools })
    } catch (error) {
      return runtimeFailure(error)
    }
  })

  app.post('/v1/tools/:name/execute', async (c) => {
    const body = await readObjectBody(c)
    if (body instanceof Response) return body
    const agent = bodyAgent(c, body)
    if (agent instanceof Response) return agent
    const callId = body.callId === undefined ? `http-${crypto.randomUUID()}` : body.callId
    if (!validCallId(callId)) {
      return invalidRequest(`callId must be 1–${MAX_ID_LENGTH} printable ASCII characters, without leading or trailing spaces`)
    }
    const args = Object.hasOwn(body, 'arguments') ? body.arguments : {}
    const result = await runtime.execute({
      callId,
      name: c.req.param('name'),
      arguments: args,
      signal: signalFor(c.req.raw),
      ...(agent === undefined ? {} : { agent }),
    })
    return resultResponse(c, callId, result)
  })

  app.post('/v1/run', async (c) => {
    const body = await readObjectBody(c)
    if (body instanceof Response) return body
    const agent = bodyAgent(c, body)
    if (agent instanceof Response) return agent
    if (Object.hasOwn(body, 'callId')) return invalidRequest('callId is assigned by the server for runs (see the X-Toolyard-Call-Id header)')
    // The id is ours alone, so the stream's filter can never pick up another request's sub-calls.
    const callId = `http-run-${crypto.randomUUID()}`
    // Only the fields the client sent: an absent `code` is then reported by the schema as
    // missing, not as an `undefined` that is "not lossless JSON".
    const args: Record<string, unknown> = {}
    if (Object.hasOwn(body, 'code')) args.code = body.code
    if (Object.hasOwn(body, 'description')) args.description = body.description
    const agentPart = agent === undefined ? {} : { agent }
    if (!wantsEventStream(c.req.header('Accept'))) {
      const result = await runtime.execute({ callId, name: 'run_code', arguments: args, signal: signalFor(c.req.raw), ...agentPart })
      return resultResponse(c, callId, result)
    }
    return streamRun(c.req.raw, callId, args, agentPart)
  })

  const streamRun = (request: Request, callId: string, args: Record<string, unknown>, agentPart: { agent?: ScopeKey }): Response => {
    const encoder = new TextEncoder()
    const cancelled = new AbortController()
    let sink: ReadableStreamDefaultController<Uint8Array> | undefined
    let open = true
    let sequence = 0
    const write = (text: string): void => {
      if (!open || sink === undefined) return
      try {
        sink.enqueue(encoder.encode(text))
      } catch {
        open = false
      }
    }
    const send = (event: string, data: unknown): void => write(sseFrame(event, ++sequence, data))
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        sink = controller
      },
      cancel(reason) {
        open = false
        cancelled.abort(reason ?? new DOMException('the client went away', 'AbortError'))
      },
    })

    send('start', { callId, ...agentPart })
    const onEvent = (event: SessionLogHubEvent): void => {
      if (event.type === 'tool/code-dispatch-start') send('dispatch-start', event)
      else if (event.type === 'tool/code-dispatch') send('dispatch', event)
      else if (event.type === 'tool/code-log') send('log', event)
    }
    const unsubscribe = config.hub?.subscribe(onEvent, { parentCallId: callId }) ?? (() => {})
    const heartbeat = config.heartbeatMs > 0 ? setInterval(() => write(': keep-alive\n\n'), config.heartbeatMs) : undefined

    void runtime
      .execute({ callId, name: 'run_code', arguments: args, signal: signalFor(request, cancelled.signal), ...agentPart })
      .then(
        (result) => send('result', result),
        () => send('error', { error: { code: 'INTERNAL', message: 'internal error' } }),
      )
      .finally(() => {
        if (heartbeat !== undefined) clearInterval(heartbeat)
        unsubscribe()
        if (open) {
          open = false
          try {
            sink?.close()
          } catch {
            // Already closed by a cancel racing the settlement.
          }
        }
      })

    return new Response(stream, {
      status: 200,
      headers: {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-store',
        'X-Accel-Buffering': 'no',
        [CALL_ID_HEADER]: callId,
      },
    })
  }

  // ── wrong method on a known route ──
  for (const [path, methods] of ROUTES) {
    const allowed = methods.flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m]))
    if (config.corsOrigins.size > 0) allowed.push('OPTIONS')
    const allow = allowed.join(', ')
    app.all(path, (c) => httpErrorResponse('METHOD_NOT_ALLOWED', `${c.req.method} is not allowed here; use ${allow}`, { Allow: allow }))
  }

  return app
}
