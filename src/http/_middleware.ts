/**
 * The middleware the HTTP API and the MCP endpoint share, in order: response headers, origin
 * and CORS, availability, bearer token. Each failure throws an {@link HttpError}.
 *
 * @module
 */
import type { Context, MiddlewareHandler } from 'hono'
import { cors } from 'hono/cors'
import { secureHeaders } from 'hono/secure-headers'
import { ANONYMOUS_ADMIN, bearerToken } from './auth.js'
import type { Principal, PrincipalSet } from './auth.js'
import { HttpError } from './http-errors.js'

/** CORS for the allowlisted origins (the API has it; the MCP endpoint only admits them). */
export interface GateCorsOptions {
  readonly maxAgeSeconds: number
  /** Response headers a page may read (`Access-Control-Expose-Headers`). */
  readonly exposeHeaders: readonly string[]
}

/** What the shared middleware needs, validated by the app that creates it. */
export interface GateOptions {
  /** The accepted tokens; `undefined` = authentication disabled (`auth: false`: every request acts as `admin`). */
  readonly principals: PrincipalSet | undefined
  /** Appended to every 401 message (where a valid token is found). */
  readonly unauthorizedHint?: string
  /** The 503 `NOT_CONFIGURED` message, when the app was created `notConfigured`. */
  readonly notConfigured: string | undefined
  /** The shutdown signal: once aborted, requests answer 503 `SHUTTING_DOWN`. */
  readonly shutdown: AbortSignal | undefined
  /** Exact origins admitted besides same-origin. */
  readonly allowedOrigins: ReadonlySet<string>
  /** Answer CORS for `allowedOrigins` (preflights, response headers). */
  readonly cors?: GateCorsOptions
  /** Paths served without a token, while unconfigured and while shutting down (`/v1/health`: it reveals nothing). */
  readonly openPaths?: ReadonlySet<string>
}

/**
 * Every API response: `Cache-Control: no-store` unless the route chose its own, and the
 * OWASP REST headers through Hono's `secureHeaders` (the HSTS and cross-origin-isolation
 * defaults stay off: the local server speaks plain HTTP, and the API is meant to be
 * fetched cross-origin by allowlisted pages).
 */
function responseHeaders(): MiddlewareHandler[] {
  const secure = secureHeaders({
    xContentTypeOptions: true,
    xFrameOptions: 'DENY',
    contentSecurityPolicy: { frameAncestors: ["'none'"] },
    referrerPolicy: 'no-referrer',
    crossOriginEmbedderPolicy: false,
    crossOriginResourcePolicy: false,
    crossOriginOpenerPolicy: false,
    originAgentCluster: false,
    strictTransportSecurity: false,
    xDnsPrefetchControl: false,
    xDownloadOptions: false,
    xPermittedCrossDomainPolicies: false,
    xXssProtection: false,
  })
  const noStoreByDefault: MiddlewareHandler = async (c, next) => {
    await next()
    if (!c.res.headers.has('Cache-Control')) c.res.headers.set('Cache-Control', 'no-store')
  }
  return [secure, noStoreByDefault]
}

/** A `Host` value: a DNS name or IPv4 address, or a bracketed IPv6 address, with an optional port. */
const HOST_VALUE = /^(?:[a-z0-9.-]+|\[[0-9a-f:.]+\])(?::\d{1,5})?$/i

/**
 * The app's own origin for this request: the request's scheme with the `Host` header the
 * server validated (Node's `serve()` refuses any other name; workerd sets it), not the
 * request target. An absolute-form request (`GET http://evil.example/v1/tools`) carries a
 * target of the client's choosing, so the target's origin says nothing about who we are.
 * Without a `Host` header (an in-process `app.request()`), the URL is all there is.
 * `undefined` when the `Host` is not a host name at all: no origin matches it.
 */
function ownOrigin(request: Request): string | undefined {
  const url = new URL(request.url)
  const host = request.headers.get('Host')
  if (host === null) return url.origin
  if (!HOST_VALUE.test(host)) return undefined
  try {
    return new URL(`${url.protocol}//${host}`).origin
  } catch {
    // A port out of range or a malformed IPv6 literal: not a host any origin can name.
    return undefined
  }
}

/**
 * Refuses a browser `Origin` that is neither the app's own nor allowlisted (403
 * `FORBIDDEN_ORIGIN`, before anything runs: a foreign page cannot even trigger a call
 * blind). Allowlisted origins go through Hono's `cors` when the app serves CORS.
 */
function originCheck(allowed: ReadonlySet<string>, corsOptions: GateCorsOptions | undefined): MiddlewareHandler {
  const corsHandler =
    corsOptions === undefined
      ? undefined
      : cors({
          origin: (origin) => (allowed.has(origin) ? origin : null),
          allowMethods: ['GET', 'HEAD', 'POST', 'DELETE'],
          allowHeaders: ['Authorization', 'Content-Type', 'Accept', 'If-None-Match'],
          exposeHeaders: [...corsOptions.exposeHeaders],
          maxAge: corsOptions.maxAgeSeconds,
          // The token is a header, never a cookie: no credentialed requests.
          credentials: false,
        })
  return async (c, next) => {
    const origin = c.req.header('Origin')
    if (origin === undefined) return next()
    if (allowed.has(origin)) return corsHandler === undefined ? next() : corsHandler(c, next)
    if (origin === ownOrigin(c.req.raw)) return next()
    throw new HttpError('FORBIDDEN_ORIGIN', 'cross-origin requests from this origin are not allowed')
  }
}

function availability(notConfigured: string | undefined, shutdown: AbortSignal | undefined, open: ReadonlySet<string>): MiddlewareHandler {
  return async (c, next) => {
    if (!open.has(c.req.path)) {
      if (notConfigured !== undefined) throw new HttpError('NOT_CONFIGURED', notConfigured)
      if (shutdown?.aborted === true) throw new HttpError('SHUTTING_DOWN', 'the server is shutting down')
    }
    await next()
  }
}

/** The principal of each request the gate let through, by its `Request` (a mounted sub-app shares it). */
const principals = new WeakMap<Request, Principal>()

/**
 * Who sent the request, as the gate resolved it. A route behind the gate always has one;
 * anything else (a path the gate leaves open) gets none, and is refused rather than served.
 */
export function principalOf(c: Context): Principal | undefined {
  return principals.get(c.req.raw)
}

/**
 * The bearer-token check. Hono's `bearerAuth` is not used, for measured reasons: its
 * token grammar is RFC 6750's `b64token`, so a valid toolyard token with `!` or `#` (any
 * printable ASCII is allowed) is refused with 400 `invalid_request` even when it is the
 * right one; another scheme (`Basic …`) also gets a 400 with a text body instead of our
 * 401 JSON; and its comparison ends with a character loop over the longer of the two
 * raw strings, so the secret's length shows in the timing. Here both sides are hashed
 * with SHA-256 and only the 32-byte digests are compared, every configured one, without
 * an early exit (`PrincipalSet.identify`).
 */
function bearerTokenCheck(set: PrincipalSet, open: ReadonlySet<string>, hint: string | undefined): MiddlewareHandler {
  const said = (message: string): string => (hint === undefined ? message : `${message}; ${hint}`)
  return async (c, next) => {
    if (open.has(c.req.path)) return next()
    const header = c.req.header('Authorization')
    const presented = bearerToken(header)
    if (presented === undefined) {
      // A header that is there but is not one bearer token (another scheme, two headers joined
      // by a comma, two tokens) is told as such: "required" would send its sender looking for a header it sent.
      // A Request's header values come trimmed: a blank header is ''.
      const why = header === undefined || header === '' ? 'a bearer token is required' : 'the Authorization header must be "Bearer <token>": one bearer token'
      throw new HttpError('UNAUTHORIZED', said(why), { 'WWW-Authenticate': 'Bearer realm="toolyard"' })
    }
    const principal = await set.identify(presented)
    if (principal === undefined) {
      throw new HttpError('UNAUTHORIZED', said('the bearer token is not valid'), {
        'WWW-Authenticate': 'Bearer realm="toolyard", error="invalid_token"',
      })
    }
    principals.set(c.req.raw, principal)
    await next()
  }
}

/** With `auth: false` every request acts as `admin` (said explicitly at creation). */
const anonymous: MiddlewareHandler = async (c, next) => {
  principals.set(c.req.raw, ANONYMOUS_ADMIN)
  await next()
}

/**
 * The shared middleware, in order, for `app.use(path, ...gate(options))`.
 *
 * @example
 * ```ts
 * app.use('/v1/*', ...gate({ principals, notConfigured: undefined, shutdown, allowedOrigins: new Set() }))
 * ```
 */
export function gate(options: GateOptions): MiddlewareHandler[] {
  const open = options.openPaths ?? new Set<string>()
  return [
    ...responseHeaders(),
    originCheck(options.allowedOrigins, options.cors),
    availability(options.notConfigured, options.shutdown, open),
    options.principals === undefined ? anonymous : bearerTokenCheck(options.principals, open, options.unauthorizedHint),
  ]
}
