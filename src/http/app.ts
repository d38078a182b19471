/**
 * The HTTP API: a Hono app over web-standard Request/Response that serves one
 * {@link ToolRuntime} (its tools, runs, approvals and events) and, with `mcp`, the MCP
 * endpoint behind the same gate. Node and workerd alike; docs/http-api.md lists the routes.
 * @module
 */
import { Hono } from 'hono'
import { methodNotAllowed } from 'hono/method-not-allowed'
import type { ToolRuntime } from '../runtime-types.js'
import type { ScopeKey } from '../types.js'
import { mountMcp, type McpOptions } from '../mcp/server.js'
import { requireRole } from './_principals.js'
import { HttpError, httpErrorHandler, httpNotFound } from './http-errors.js'
import { SERVER_OPTION_KEYS, checkRuntime, optionsError, resolveServerOptions, serverGate, type ResolvedServerOptions, type ServerOptions } from './_server-options.js'
import { CALL_ID_HEADER, SDK_LANGUAGE_HEADER, apiRoutes, refuseUnknownQuery } from './_routes.js'
import { holdRuns, runRoutes } from './_runs.js'
import type { RunsConfig } from './_runs.js'
import { resolveRunTableOptions } from '../durable/run-table.js'
import type { RunTableOptions } from '../durable/run-table.js'

/**
 * Options of {@link createToolsApp}; validated at creation (`INVALID_OPTIONS`). The
 * {@link ServerOptions} (`token` or `tokens`, `cors`, `signal`, bounds, `onError`) are the
 * MCP endpoint's too. Store, approvals, runs and events come from the runtime.
 */
export interface ToolsAppOptions extends ServerOptions {
  /** Interval of SSE keep-alive comments, in ms. Default 15,000; 0 disables. */
  readonly heartbeatMs?: number
  /** Bounds of the `/v1/runs` table (docs/http-api.md, "Runs as resources"). */
  readonly runs?: RunTableOptions
  /**
   * Mounts the MCP endpoint at `/mcp` behind the same tokens, origins, shutdown and
   * bounds: `true`, or its own few options (`agent`, `serverInfo`, …; docs/mcp.md).
   */
  readonly mcp?: true | McpOptions
}

/** `GET /v1/tools` and `GET /v1/tools/:name` answer with these. */
export interface ToolsListBody {
  readonly agent?: ScopeKey
  readonly mode: string
  readonly tools: readonly unknown[]
}

const invalidOptions = optionsError('createToolsApp')

interface ValidatedOptions extends RunsConfig, ResolvedServerOptions {}

/** Every name {@link ToolsAppOptions} holds: any other is refused, naming the closest. */
const APP_OPTION_KEYS: readonly string[] = [...SERVER_OPTION_KEYS, 'heartbeatMs', 'runs', 'mcp']

function validateOptions(runtime: ToolRuntime, options: ToolsAppOptions): ValidatedOptions {
  checkRuntime(runtime, invalidOptions)
  const server = resolveServerOptions(options, invalidOptions, APP_OPTION_KEYS)
  const heartbeatMs = options.heartbeatMs ?? 15_000
  if (typeof heartbeatMs !== 'number' || !Number.isFinite(heartbeatMs) || heartbeatMs < 0) invalidOptions('heartbeatMs must be a non-negative number')
  if (options.mcp !== undefined && options.mcp !== true && (typeof options.mcp !== 'object' || options.mcp === null)) invalidOptions('mcp must be true or an object of MCP options')
  return {
    ...server,
    hub: runtime.events,
    approvals: runtime.approvals,
    heartbeatMs,
    runs: resolveRunTableOptions(options.runs, invalidOptions),
  }
}

/**
 * Creates the HTTP API for `runtime`. Authentication is on by default; the error body
 * of every failure is `{ "error": { "code", "message" } }`. The runtime's store, approval
 * broker (`createToolRuntime({ approvals })`) and events are the app's: nothing else to wire.
 *
 * Routes (all under `/v1`): `GET /health`, `GET /tools`, `GET /tools/:name`,
 * `POST /tools/:name/execute`, `GET /sdk`, `GET /prompt`, `POST /run` (JSON, or SSE with
 * `Accept: text/event-stream`), with approvals `GET /approvals` and `POST /approvals/:id`;
 * `POST /runs`, `GET /runs/:id`, `GET /runs/:id/events`, `DELETE /runs/:id`; with `mcp`,
 * `POST /mcp`. With `tokens`, each token has roles (`run`, `approve`, `admin`) and a route
 * refuses a principal without its role (403 `FORBIDDEN`); `token` alone is one `admin` token.
 *
 * @example
 * ```ts
 * const runtime = createToolRuntime({ mode: 'both', codeRuntime, store, approvals: { timeoutMs: 60_000 } })
 * const app = createToolsApp(runtime, {
 *   tokens: [
 *     { token: process.env.AGENT_TOKEN!, roles: ['run'], agent: 'assistant' },
 *     { token: process.env.PERSON_TOKEN!, roles: ['run', 'approve'] },
 *   ],
 *   mcp: true,
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
    ...serverGate(config, {
      ...(config.corsMaxAge === undefined ? {} : { cors: { maxAgeSeconds: config.corsMaxAge, exposeHeaders: ['ETag', CALL_ID_HEADER, SDK_LANGUAGE_HEADER] } }),
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
    // Then the query: a parameter the route does not read is refused, never ignored.
    if (route.open === true) app.on(route.method, route.path, refuseUnknownQuery(route), ...route.handlers)
    else app.on(route.method, route.path, requireRole(route.roles ?? []), refuseUnknownQuery(route), ...route.handlers)
  }
  if (options.mcp !== undefined) app.route('/mcp', mountMcp(runtime, config, options.mcp === true ? {} : options.mcp, invalidOptions))
  holdRuns(app, runs)
  return app
}
