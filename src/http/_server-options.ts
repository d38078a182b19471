/**
 * The options the HTTP API and the MCP endpoint share (tokens, CORS, shutdown, body and
 * stream bounds, error reporting), validated once with one set of texts, and the gate they
 * build. `createToolsApp` and `createMcpApp` each add their own few.
 * @module
 */
import { ToolError } from '../errors.js'
import type { ToolRuntime } from '../runtime-types.js'
import { resolveAuthOptions } from './auth.js'
import type { AuthOptions, PrincipalSet } from './auth.js'
import type { InternalErrorReporter } from './http-errors.js'
import { reportToConsole } from './http-errors.js'
import { gate, type GateCorsOptions } from './_middleware.js'
import { resolveMaxBodyBytes } from './request-body.js'
import { DEFAULT_MAX_STREAM_BACKLOG_BYTES, DEFAULT_STREAM_WRITE_TIMEOUT_MS } from './_sse-sender.js'
import type { MiddlewareHandler } from 'hono'
import { positiveInteger } from '../util/guards.js'
import { refuseUnknownOptions } from '../util/unknown-field.js'

/** Cross-origin access: off unless an allowlist is given. */
export interface CorsOptions {
  /** Exact origins (`https://app.example`) allowed to call from a browser. No wildcard. */
  readonly origins: readonly string[]
  /** How long a browser may cache a preflight (the API's routes). Default 600 seconds. */
  readonly maxAgeSeconds?: number
}

/**
 * What the HTTP API and the MCP endpoint both take, with the same names and rules: the
 * authentication options ({@link AuthOptions}) and the ones below.
 */
export interface ServerOptions extends AuthOptions {
  /** CORS allowlist; absent → no cross-origin request is served. */
  readonly cors?: CorsOptions
  /** Cap on a request body, enforced while reading. Default 1 MiB. */
  readonly maxBodyBytes?: number
  /** Shutdown: aborting it aborts every in-flight call; later requests answer 503 `SHUTTING_DOWN`. */
  readonly signal?: AbortSignal
  /** The most bytes of events a stream may hold unread. Default 4 MiB. */
  readonly maxStreamBacklogBytes?: number
  /** How long one event may wait for the client to take it before the stream is aborted, in ms. Default 30,000. */
  readonly streamWriteTimeoutMs?: number
  /** Receives every exception answered as 500 `INTERNAL` (the client only sees `internal error`). Default: `console.error`. */
  readonly onError?: (error: unknown, request: Request) => void
}

/**
 * The names {@link ServerOptions} holds: a factory that takes them plus its own few refuses
 * any other (`refuseUnknownOptions`), so a misspelt bound (`maxBodyByte`) is an error, not
 * the default in silence.
 */
export const SERVER_OPTION_KEYS: readonly string[] = [
  'token', 'tokens', 'auth', 'notConfigured', 'unauthorizedHint',
  'cors', 'maxBodyBytes', 'signal', 'maxStreamBacklogBytes', 'streamWriteTimeoutMs', 'onError',
]
const CORS_KEYS: readonly string[] = ['origins', 'maxAgeSeconds']

/** {@link ServerOptions}, validated and with defaults. */
export interface ResolvedServerOptions {
  readonly principals: PrincipalSet | undefined
  readonly unauthorizedHint: string | undefined
  readonly notConfigured: string | undefined
  readonly corsOrigins: ReadonlySet<string>
  /** `undefined`: no CORS answered (no allowlist). */
  readonly corsMaxAge: number | undefined
  readonly maxBodyBytes: number
  readonly shutdown: AbortSignal | undefined
  readonly maxStreamBacklogBytes: number
  readonly streamWriteTimeoutMs: number
  readonly report: InternalErrorReporter
}

/** Options that moved, and where to: a stale caller is told, never silently ignored. */
const MOVED: Readonly<Record<string, string>> = {
  approvals: 'approvals come from the runtime: createToolRuntime({ approvals })',
  sessionLog: "events come from the runtime (runtime.events); give a sink as createToolRuntime's sessionLog",
  store: 'the store comes from the runtime: createToolRuntime({ store })',
  allowedOrigins: 'use cors: { origins }',
  elicitationTimeoutMs: "the timeout is the runtime's approvals.timeoutMs",
  elicitationPlans: "plans are the runtime's approvals.plans",
}

/** The factory's `INVALID_OPTIONS` thrower: every message starts with its name. */
export function optionsError(factory: string): (message: string) => never {
  return (message) => {
    throw new ToolError('INVALID_OPTIONS', `${factory}: ${message}`)
  }
}

/** Each entry must be an exact origin: `scheme://host[:port]`, no path, not `null`. */
function exactOrigins(origins: unknown, fail: (message: string) => never): Set<string> {
  if (!Array.isArray(origins) || origins.length === 0) fail('cors.origins must be a non-empty array')
  const out = new Set<string>()
  for (const origin of origins as unknown[]) {
    let parsed: string | undefined
    try {
      parsed = typeof origin === 'string' ? new URL(origin).origin : undefined
    } catch {
      parsed = undefined
    }
    // An entry whose origin is "null" (file:, data:) differs from its own text, so it is refused here too.
    if (parsed === undefined || parsed !== origin) fail(`cors.origins entry ${JSON.stringify(String(origin))} is not an exact origin (scheme://host[:port])`)
    out.add(origin as string)
  }
  return out
}

/** Checks that `runtime` is a runtime (with the members the surfaces read). */
export function checkRuntime(runtime: unknown, fail: (message: string) => never): asserts runtime is ToolRuntime {
  const given = runtime as Partial<ToolRuntime> | null
  if (typeof given !== 'object' || given === null || typeof given.execute !== 'function' || typeof given.view !== 'function' || typeof given.events?.subscribe !== 'function') {
    fail('runtime must be a ToolRuntime (from createToolRuntime)')
  }
}

/**
 * Validates {@link ServerOptions}; `fail` throws the factory's `INVALID_OPTIONS`. `known` is every
 * name the factory's options hold (these and its own): any other is refused before a value is read,
 * so a misspelt `tokens` is named as such rather than told as "a token is required"; a moved
 * option is told where it went first.
 */
export function resolveServerOptions(options: ServerOptions, fail: (message: string) => never, known: readonly string[] = SERVER_OPTION_KEYS): ResolvedServerOptions {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) fail('options must be an object')
  for (const [name, where] of Object.entries(MOVED)) if (Object.hasOwn(options, name)) fail(`${name} is no longer an option here: ${where}`)
  refuseUnknownOptions(options, known, fail)
  const { notConfigured, principals, unauthorizedHint } = resolveAuthOptions(options, fail)
  refuseUnknownOptions(options.cors, CORS_KEYS, fail, 'cors.')
  const corsOrigins = options.cors === undefined ? new Set<string>() : exactOrigins(options.cors?.origins, fail)
  const maxAge = options.cors?.maxAgeSeconds
  if (maxAge !== undefined && (!Number.isSafeInteger(maxAge) || maxAge < 0)) fail('cors.maxAgeSeconds must be a non-negative integer')
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) fail('signal must be an AbortSignal')
  if (options.onError !== undefined && typeof options.onError !== 'function') fail('onError must be a function')
  const streamWriteTimeoutMs = options.streamWriteTimeoutMs ?? DEFAULT_STREAM_WRITE_TIMEOUT_MS
  if (typeof streamWriteTimeoutMs !== 'number' || !Number.isFinite(streamWriteTimeoutMs) || streamWriteTimeoutMs <= 0 || streamWriteTimeoutMs > 2_147_483_647) {
    fail('streamWriteTimeoutMs must be a positive number of milliseconds, at most 2147483647')
  }
  return {
    principals,
    unauthorizedHint,
    notConfigured,
    corsOrigins,
    corsMaxAge: options.cors === undefined ? undefined : (maxAge ?? 600),
    maxBodyBytes: resolveMaxBodyBytes(options.maxBodyBytes, fail),
    shutdown: options.signal,
    maxStreamBacklogBytes: positiveInteger('maxStreamBacklogBytes', options.maxStreamBacklogBytes, DEFAULT_MAX_STREAM_BACKLOG_BYTES, fail),
    streamWriteTimeoutMs,
    report: options.onError ?? reportToConsole,
  }
}

/** The shared gate for `resolved`: CORS answered only where `cors` is given (the API), origins admitted everywhere. */
export function serverGate(resolved: ResolvedServerOptions, extra: { readonly cors?: GateCorsOptions; readonly openPaths?: ReadonlySet<string> } = {}): MiddlewareHandler[] {
  return gate({
    principals: resolved.principals,
    ...(resolved.unauthorizedHint === undefined ? {} : { unauthorizedHint: resolved.unauthorizedHint }),
    notConfigured: resolved.notConfigured,
    shutdown: resolved.shutdown,
    allowedOrigins: resolved.corsOrigins,
    ...extra,
  })
}
