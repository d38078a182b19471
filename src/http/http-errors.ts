/**
 * The one error vocabulary of the HTTP API and the MCP endpoint: every non-2xx answer is `{
 * "error": { "code": "…", "message": "…" } }` with `Content-Type: application/json`.
 * @module
 */
import type { ErrorHandler, NotFoundHandler } from 'hono'
import { HTTPException } from 'hono/http-exception'
import { ToolError } from '../errors.js'

type ExceptionStatus = NonNullable<ConstructorParameters<typeof HTTPException>[0]>

/** Every stable code an HTTP error body can carry. */
export type HttpErrorCode =
  /** No `Authorization: Bearer …` header, or the token is wrong. 401. */
  | 'UNAUTHORIZED'
  /** The token is valid but its principal lacks the route's role, or asks for an agent it is not pinned to. 403. */
  | 'FORBIDDEN'
  /** The request carries an `Origin` that is neither same-origin nor allowlisted. 403. */
  | 'FORBIDDEN_ORIGIN'
  /** The `Host` header names no name the local server answers to (DNS rebinding defence). 421. */
  | 'FORBIDDEN_HOST'
  /** A POST body that is not `application/json`. 415. */
  | 'UNSUPPORTED_MEDIA_TYPE'
  /** The body exceeds `maxBodyBytes`. 413. */
  | 'PAYLOAD_TOO_LARGE'
  /** The body is not well-formed UTF-8 JSON. 400. */
  | 'INVALID_JSON_BODY'
  /** The JSON is well-formed but the request is not (wrong field type, bad query parameter…). 400. */
  | 'INVALID_REQUEST'
  /** The route exists but not for this method; the `Allow` header lists the methods. 405. */
  | 'METHOD_NOT_ALLOWED'
  /** No such route. 404. */
  | 'NOT_FOUND'
  /** The tool name resolves to no tool visible to the caller. 404. */
  | 'UNKNOWN_TOOL'
  /** Prompt assembly failed on the runtime's configuration (e.g. an agent presenting code on a runtime without a code runtime). 409. */
  | 'ASSEMBLY_FAILED'
  /** The app was created with `notConfigured` (e.g. the edge worker without its token secret). 503. */
  | 'NOT_CONFIGURED'
  /** The app's shutdown signal fired, or the runtime was disposed. 503. */
  | 'SHUTTING_DOWN'
  /** The code runtime's runs and queue are full: retry after the `Retry-After` seconds. 503. */
  | 'OVERLOADED'
  /** (Node `serve()` only) The request headers exceed Node's limit. 431. */
  | 'REQUEST_HEADERS_TOO_LARGE'
  /** (Node `serve()` only) The request did not arrive within Node's request timeout. 408. */
  | 'REQUEST_TIMEOUT'
  /** An unexpected failure; the message never carries a stack. 500. */
  | 'INTERNAL'
  /** `POST /v1/approvals/:id`: the body is not exactly `{ decision: 'allow' | 'deny', reason?: string }`. 400. */
  | 'INVALID_DECISION'
  /** `POST /v1/approvals/:id`: no such approval request (never existed, or settled long ago). 404. */
  | 'APPROVAL_NOT_FOUND'
  /** `POST /v1/approvals/:id`: the request expired (and its call was denied) before this decision. 404. */
  | 'APPROVAL_EXPIRED'
  /** `POST /v1/approvals/:id`: the call was cancelled while it waited; there is nothing to decide. 404. */
  | 'APPROVAL_WITHDRAWN'
  /** `POST /v1/approvals/:id`: someone decided it first; the first decision stands. 409. */
  | 'APPROVAL_ALREADY_DECIDED'
  /** `/v1/approvals`: the approval broker was disposed (everything it held was denied). 503. */
  | 'BROKER_DISPOSED'
  /** `/v1/runs/:id`: no such run (malformed id, never existed, or evicted after its retention). 404. */
  | 'RUN_NOT_FOUND'

/** The JSON body of every HTTP error. */
export interface HttpErrorBody {
  readonly error: {
    readonly code: HttpErrorCode
    readonly message: string
  }
}

/** The status each code is answered with. */
export const httpErrorStatus: Readonly<Record<HttpErrorCode, number>> = Object.freeze({
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  FORBIDDEN_ORIGIN: 403,
  FORBIDDEN_HOST: 421,
  UNSUPPORTED_MEDIA_TYPE: 415,
  PAYLOAD_TOO_LARGE: 413,
  INVALID_JSON_BODY: 400,
  INVALID_REQUEST: 400,
  METHOD_NOT_ALLOWED: 405,
  NOT_FOUND: 404,
  UNKNOWN_TOOL: 404,
  ASSEMBLY_FAILED: 409,
  NOT_CONFIGURED: 503,
  SHUTTING_DOWN: 503,
  OVERLOADED: 503,
  REQUEST_HEADERS_TOO_LARGE: 431,
  REQUEST_TIMEOUT: 408,
  INTERNAL: 500,
  INVALID_DECISION: 400,
  APPROVAL_NOT_FOUND: 404,
  APPROVAL_EXPIRED: 404,
  APPROVAL_WITHDRAWN: 404,
  APPROVAL_ALREADY_DECIDED: 409,
  BROKER_DISPOSED: 503,
  RUN_NOT_FOUND: 404,
})

/**
 * Builds the error response for `code`: the documented body, `application/json` (JSON
 * has no charset parameter: it is UTF-8 by definition, RFC 8259 §11, and the success
 * bodies carry none either), `Cache-Control: no-store`, plus `headers`. The apps throw
 * {@link HttpError} instead; this is for code outside a Hono app (the Node server's own
 * checks).
 *
 * @example
 * ```ts
 * return httpErrorResponse('FORBIDDEN_HOST', 'this server does not answer to that Host name')
 * ```
 */
export function httpErrorResponse(code: HttpErrorCode, message: string, headers?: Readonly<Record<string, string>>): Response {
  const body: HttpErrorBody = { error: { code, message } }
  return new Response(JSON.stringify(body), {
    status: httpErrorStatus[code],
    headers: {
      'Content-Type': 'application/json',
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
      ...headers,
    },
  })
}

/** Seconds a client is asked to wait after `OVERLOADED` (runs mostly end within a few). */
export const OVERLOADED_RETRY_AFTER_SECONDS = 1

/**
 * A failed request, thrown by handlers and middleware and rendered by the app's `onError` as the
 * documented error body.
 * @example
 * ```ts
 * app.get('/v1/thing', () => {
 *   throw new HttpError('METHOD_NOT_ALLOWED', 'use POST', { Allow: 'POST' })
 * })
 * ```
 */
export class HttpError extends HTTPException {
  /** The stable code of the body (its status follows from {@link httpErrorStatus}). */
  readonly code: HttpErrorCode
  /** Extra response headers (`Allow`, `WWW-Authenticate`, the call id…). */
  readonly headers: Readonly<Record<string, string>>

  constructor(code: HttpErrorCode, message: string, headers: Readonly<Record<string, string>> = {}) {
    super(httpErrorStatus[code] as ExceptionStatus, { message })
    this.name = 'HttpError'
    this.code = code
    this.headers = headers
  }

  /** The documented error response. */
  override getResponse(): Response {
    return httpErrorResponse(this.code, this.message, this.headers)
  }
}

/**
 * The HTTP error a thrown value stands for: an {@link HttpError} as is; the runtime's
 * configuration failures (`ASSEMBLY_FAILED`, `DISPOSED`) as their documented answers;
 * anything else as `INTERNAL`, whose message never carries the exception's.
 */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error
  if (error instanceof ToolError && error.code === 'ASSEMBLY_FAILED') return new HttpError('ASSEMBLY_FAILED', error.message)
  if (error instanceof ToolError && error.code === 'DISPOSED') return new HttpError('SHUTTING_DOWN', 'the tool runtime was disposed')
  return new HttpError('INTERNAL', 'internal error')
}

/** Receives every exception answered as 500 `INTERNAL`, with the request it failed. */
export type InternalErrorReporter = (error: unknown, request: Request) => void

/** The default reporter: the server's console, as Hono's own error handler does. */
export const reportToConsole: InternalErrorReporter = (error, request) => {
  console.error(`toolyard: internal error answering ${request.method} ${new URL(request.url).pathname}:`, error)
}

/**
 * The `onError` of the HTTP API and the MCP endpoint: renders every thrown error once,
 * in the one JSON shape, and hands unexpected ones to `report` (the client only learns
 * `internal error`).
 *
 * @example
 * ```ts
 * app.onError(httpErrorHandler(reportToConsole))
 * ```
 */
export function httpErrorHandler(report: InternalErrorReporter): ErrorHandler {
  return (error, c) => {
    const httpError = toHttpError(error)
    if (httpError.code === 'INTERNAL') report(error, c.req.raw)
    return httpError.getResponse()
  }
}

/** The `notFound` of the HTTP API and the MCP endpoint: 404 `NOT_FOUND` in the one shape. */
export const httpNotFound: NotFoundHandler = (c) => new HttpError('NOT_FOUND', `no route for ${c.req.method} ${c.req.path}`).getResponse()
