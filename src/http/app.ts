/**
 * The HTTP API: a Hono app over web-standard Request/Response that serves one
 * {@link ToolRuntime} — tool schemas, the Code Mode SDK, the assembled prompt, direct
 * execution and `run_code` (JSON or server-sent events). It runs unchanged under
 * `@hono/node-server` and as a Cloudflare Worker. docs/http-api.md documents every route.
 *
 * The shape: the shared middleware (`_middleware.ts`, also the MCP endpoint's), the
 * route table (`_routes.ts`), errors thrown as `HttpError` and rendered once by `onError`.
 *
 * @module
 */
import { Hono } from 'hono'
import { methodNotAllowed } from 'hono/method-not-allowed'
import { ToolError } from '../errors.js'
import type { AnyApprovalBroker } from '../approvals/types.js'
import type { ToolRuntime } from '../runtime-types.js'
import type { ScopeKey } from '../types.js'
import { resolveAuthOptions } from './auth.js'
import type { AuthOptions, PrincipalSet } from './auth.js'
import { requireRole } from './_principals.js'
import { HttpError, httpErrorHandler, httpNotFound, reportToConsole } from './http-errors.js'
import type { InternalErrorReporter } from './http-errors.js'
import { gate } from './_middleware.js'
import { resolveMaxBodyBytes } from './request-body.js'
import { isApprovalBroker } from './_approvals.js'
import { DEFAULT_MAX_STREAM_BACKLOG_BYTES, DEFAULT_STREAM_WRITE_TIMEOUT_MS } from './_sse-sender.js'
import { CALL_ID_HEADER, SDK_LANGUAGE_HEADER, apiRoutes } from './_routes.js'
import type { ApiConfig } from './_routes.js'
import type { SessionLogHub } from './session-log-hub.js'
import type { DurableStore } from '../durable/store.js'
import { holdRuns, runRoutes } from './_runs.js'
import type { RunsConfig } from './_runs.js'
import { resolveRunTableOptions } from './run-table.js'
import type { RunTableOptions } from './run-table.js'

/** Cross-origin access: off unless an allowlist is given. */
export interface ToolsAppCorsOptions {
  /** Exact origins (`https://app.example`) allowed to call the API from a browser. No wildcard. */
  readonly origins: readonly string[]
  /** How long a browser may cache a preflight. Default 600 seconds. */
  readonly maxAgeSeconds?: number
}

/**
 * Options of {@link createToolsApp}; validated at creation (`INVALID_OPTIONS`). The
 * authentication options ({@link AuthOptions}: `token` or `tokens`, `auth: false`,
 * `notConfigured`, `unauthorizedHint`) are the MCP endpoint's too; every `/v1` route
 * except `/v1/health` needs a token, and the roles its route lists (docs/http-api.md,
 * "Tokens and roles").
 */
export interface ToolsAppOptions extends AuthOptions {
  /** CORS allowlist; absent → no cross-origin request is served. */
  readonly cors?: ToolsAppCorsOptions
  /** Cap on a request body, enforced while reading. Default 1 MiB. */
  readonly maxBodyBytes?: number
  /**
   * The hub the runtime was created with (`sessionLog`), so `POST /v1/run` can stream
   * each sub-call's `tool/code-dispatch-start` / `tool/code-dispatch` as it happens.
   * Absent → streamed runs carry only `start` and `result`.
   */
  readonly sessionLog?: SessionLogHub
  /**
   * The approval broker whose `handler` the runtime was created with
   * (`createToolRuntime({ approval: broker.handler })`): serves `GET /v1/approvals` and
   * `POST /v1/approvals/:id`, and streamed runs carry their sub-calls' `approval` and
   * `approval-settled` events. Absent → those routes answer 404. A broker over a store
   * (`createApprovalBroker({ store })`) lists and decides the requests of every process
   * sharing the store.
   */
  readonly approvals?: AnyApprovalBroker
  /** Shutdown: aborting it aborts every in-flight call; later calls answer 503 `SHUTTING_DOWN`. */
  readonly signal?: AbortSignal
  /** Interval of SSE keep-alive comments, in ms. Default 15,000; 0 disables. */
  readonly heartbeatMs?: number
  /**
   * The most bytes of events a `/v1/run` stream may hold unread. A client that falls
   * further behind gets a final `error` event (`STREAM_BACKLOG`) and its stream closes; the
   * run goes on. Default 4 MiB.
   */
  readonly maxStreamBacklogBytes?: number
  /**
   * How long one event may wait for the client to take it before the stream is aborted
   * (a client that reads nothing), in ms. Default 30,000.
   */
  readonly streamWriteTimeoutMs?: number
  /**
   * Receives every exception answered as 500 `INTERNAL` (the client only sees
   * `internal error`). Default: `console.error`.
   */
  readonly onError?: (error: unknown, request: Request) => void
  /** Bounds of the `/v1/runs` table (docs/http-api.md, "Runs as resources"). */
  readonly runs?: RunTableOptions
  /** A durable store that receives each `/v1/runs` run's record (`http-runs/<id>`); absent → memory only. */
  readonly store?: DurableStore
}

/** `GET /v1/tools` and `GET /v1/tools/:name` answer with these. */
export interface ToolsListBody {
  readonly agent?: ScopeKey
  readonly mode: string
  readonly tools: readonly unknown[]
}

function invalidOptions(message: string): never {
  throw new ToolError('INVALID_OPTIONS', `createToolsApp: ${message}`)
}

/** Each entry must be an exact origin: `scheme://host[:port]`, no path, not `null`. */
function exactOrigins(origins: unknown): Set<string> {
  if (!Array.isArray(origins) || origins.length === 0) invalidOptions('cors.origins must be a non-empty array')
  const out = new Set<string>()
  for (const origin of origins as unknown[]) {
    let parsed: string | undefined
    try {
      parsed = typeof origin === 'string' ? new URL(origin).origin : undefined
    } catch {
      // Not a URL at all: reported below with the other malformed entries.
      parsed = undefined
    }
    if (
      parsed === undefined ||
      parsed !== origin ||
      // Stryker disable next-line ConditionalExpression,StringLiteral: an entry whose origin is "null" (file:, data:) is not that origin, refused above; the entry "null" itself is no URL
      parsed === 'null'
    ) {
      invalidOptions(`cors.origins entry ${JSON.stringify(String(origin))} is not an exact origin (scheme://host[:port])`)
    }
    out.add(origin as string)
  }
  return out
}

interface ValidatedOptions extends RunsConfig {
  readonly principals: PrincipalSet | undefined
  readonly unauthorizedHint: string | undefined
  readonly corsOrigins: ReadonlySet<string>
  readonly corsMaxAge: number | undefined
}

function validateOptions(runtime: ToolRuntime, options: ToolsAppOptions): ValidatedOptions {
  if (typeof runtime !== 'object' || runtime === null || typeof runtime.execute !== 'function') invalidOptions('runtime must be a ToolRuntime')
  if (typeof options !== 'object' || options === null) invalidOptions('options must be an object')
  const { notConfigured, principals, unauthorizedHint } = resolveAuthOptions(options, invalidOptions)
  const corsOrigins = options.cors === undefined ? new Set<string>() : exactOrigins(options.cors?.origins)
  const maxAge = options.cors?.maxAgeSeconds
  if (maxAge !== undefined && (!Number.isSafeInteger(maxAge) || maxAge < 0)) invalidOptions('cors.maxAgeSeconds must be a non-negative integer')
  const hub = options.sessionLog
  if (hub !== undefined && (typeof hub !== 'object' || hub === null || typeof hub.subscribe !== 'function')) {
    invalidOptions('sessionLog must be a hub from createSessionLogHub()')
  }
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) invalidOptions('signal must be an AbortSignal')
  if (options.approvals !== undefined && !isApprovalBroker(options.approvals)) invalidOptions('approvals must be a broker from createApprovalBroker()')
  const heartbeatMs = options.heartbeatMs ?? 15_000
  if (typeof heartbeatMs !== 'number' || !Number.isFinite(heartbeatMs) || heartbeatMs < 0) invalidOptions('heartbeatMs must be a non-negative number')
  if (options.onError !== undefined && typeof options.onError !== 'function') invalidOptions('onError must be a function')
  const store = options.store
  if (store !== undefined && (typeof store !== 'object' || store === null || typeof store.get !== 'function' || typeof store.put !== 'function')) invalidOptions('store must be a DurableStore')
  const maxStreamBacklogBytes = options.maxStreamBacklogBytes ?? DEFAULT_MAX_STREAM_BACKLOG_BYTES
  if (!Number.isSafeInteger(maxStreamBacklogBytes) || maxStreamBacklogBytes <= 0) invalidOptions('maxStreamBacklogBytes must be a positive integer')
  const streamWriteTimeoutMs = options.streamWriteTimeoutMs ?? DEFAULT_STREAM_WRITE_TIMEOUT_MS
  if (typeof streamWriteTimeoutMs !== 'number' || !Number.isFinite(streamWriteTimeoutMs) || streamWriteTimeoutMs <= 0 || streamWriteTimeoutMs > 2_147_483_647) {
    invalidOptions('streamWriteTimeoutMs must be a positive number of milliseconds, at most 2147483647')
  }
  return {
    principals,
    unauthorizedHint,
    corsOrigins,
    corsMaxAge: options.cors === undefined ? undefined : (maxAge ?? 600),
    maxBodyBytes: resolveMaxBodyBytes(options.maxBodyBytes, invalidOptions),
    notConfigured,
    hub,
    approvals: options.approvals,
    shutdown: options.signal,
    heartbeatMs,
    maxStreamBacklogBytes,
    streamWriteTimeoutMs,
    report: (options.onError as InternalErrorReporter | undefined) ?? reportToConsole,
    runs: resolveRunTableOptions(options.runs, invalidOptions),
    store,
  }
}

/**
 * Creates the HTTP API for `runtime`. Authentication is on by default; the error body
 * of every failure is `{ "error": { "code", "message" } }`.
 *
 * Routes (all under `/v1`): `GET /health`, `GET /tools`, `GET /tools/:name`,
 * `POST /tools/:name/execute`, `GET /sdk`, `GET /prompt`, `POST /run` (JSON, or SSE with
 * `Accept: text/event-stream`), and with `approvals`, `GET /approvals` and
 * `POST /approvals/:id`; `POST /runs`, `GET /runs/:id`, `GET /runs/:id/events`,
 * `DELETE /runs/:id` (background runs). `agent` selects the agent layer everywhere it applies.
 * With `tokens`, each token has roles (`run`, `approve`, `admin`) and a route refuses a
 * principal without its role (403 `FORBIDDEN`); `token` alone is one `admin` token.
 *
 * @example
 * ```ts
 * const hub = createSessionLogHub()
 * const runtime = createToolRuntime({ mode: 'both', codeRuntime, sessionLog: hub })
 * const app = createToolsApp(runtime, {
 *   tokens: [
 *     { token: process.env.AGENT_TOKEN!, roles: ['run'], agent: 'assistant' },
 *     { token: process.env.PERSON_TOKEN!, roles: ['run', 'approve'] },
 *   ],
 *   sessionLog: hub,
 * })
 * export default app // a Cloudflare Worker, or serve(app) on Node
 * ```
 * @see docs/http-api.md
 */
export function createToolsApp(runtime: ToolRuntime, options: ToolsAppOptions): Hono {
  const config = validateOptions(runtime, options)
  const runs = runRoutes(runtime, config)
  const routes = [...apiRoutes(runtime, config), ...runs.routes]
  const app = new Hono()
  app.onError(httpErrorHandler(config.report))
  app.notFound(httpNotFound)
  app.use(
    '/v1/*',
    ...gate({
      principals: config.principals,
      ...(config.unauthorizedHint === undefined ? {} : { unauthorizedHint: config.unauthorizedHint }),
      notConfigured: config.notConfigured,
      shutdown: config.shutdown,
      allowedOrigins: config.corsOrigins,
      ...(config.corsMaxAge === undefined
        ? {}
        : { cors: { maxAgeSeconds: config.corsMaxAge, exposeHeaders: ['ETag', CALL_ID_HEADER, SDK_LANGUAGE_HEADER] } }),
      openPaths: new Set(routes.filter((route) => route.open === true).map((route) => route.path)),
    }),
    // A known path with another method: 405 with `Allow`, from the routes registered below.
    methodNotAllowed({
      app,
      onMethodNotAllowed: (c, methods) => {
        const allow = [...methods, ...(config.corsMaxAge === undefined ? [] : ['OPTIONS'])].join(', ')
        throw new HttpError('METHOD_NOT_ALLOWED', `${c.req.method} is not allowed here; use ${allow}`, { Allow: allow })
      },
    }),
  )
  for (const route of routes) {
    // The role check runs first, before a route reads its body or anything it holds.
    if (route.open === true) app.on(route.method, route.path, ...route.handlers)
    else app.on(route.method, route.path, requireRole(route.roles ?? []), ...route.handlers)
  }
  holdRuns(app, runs)
  return app
}
