/**
 * The one error body the HTTP API answers with, and its stable codes. Every non-2xx
 * response the app (and the Node server's Host check) produces is
 * `{ "error": { "code": "…", "message": "…" } }`; the codes are part of the public
 * contract (docs/http-api.md lists them with their statuses).
 *
 * @module
 */

/** Every stable code an HTTP error body can carry. */
export type HttpErrorCode =
  /** No `Authorization: Bearer …` header, or the token is wrong. 401. */
  | 'UNAUTHORIZED'
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
  /** Prompt assembly failed on the runtime's configuration (e.g. code mode without a code runtime). 409. */
  | 'ASSEMBLY_FAILED'
  /** The app was created with `notConfigured` (e.g. the edge worker without its token secret). 503. */
  | 'NOT_CONFIGURED'
  /** The app's shutdown signal fired, or the runtime was disposed. 503. */
  | 'SHUTTING_DOWN'
  /** (Node `serve()` only) The request headers exceed Node's limit. 431. */
  | 'REQUEST_HEADERS_TOO_LARGE'
  /** (Node `serve()` only) The request did not arrive within Node's request timeout. 408. */
  | 'REQUEST_TIMEOUT'
  /** An unexpected failure; the message never carries a stack. 500. */
  | 'INTERNAL'

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
  REQUEST_HEADERS_TOO_LARGE: 431,
  REQUEST_TIMEOUT: 408,
  INTERNAL: 500,
})

/**
 * Builds the error response for `code`: the documented body, `application/json`,
 * `Cache-Control: no-store`, plus `headers`.
 *
 * @example
 * ```ts
 * return httpErrorResponse('METHOD_NOT_ALLOWED', 'use GET', { Allow: 'GET, HEAD' })
 * ```
 */
export function httpErrorResponse(code: HttpErrorCode, message: string, headers?: Record<string, string>): Response {
  const body: HttpErrorBody = { error: { code, message } }
  return new Response(JSON.stringify(body), {
    status: httpErrorStatus[code],
    headers: {
      'Content-Type': 'application/json; charset=utf-8',
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
      ...headers,
    },
  })
}
