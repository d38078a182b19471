/**
 * The local Node server for a toolyard HTTP app (`@hono/node-server`), with a `Host` check against
 * DNS rebinding: a page on `evil.example` whose name an attacker points at 127.0.0.1 sends `Host:
 * evil.example`, and is refused before the app sees the request.
 * @module
 */
import { createServer } from 'node:http'
import type { Server } from 'node:http'
import { isIP } from 'node:net'
import type { AddressInfo, Socket } from 'node:net'
import { RequestError, getRequestListener } from '@hono/node-server'
import { ToolError } from '../../src/errors.js'
import { httpErrorResponse, httpErrorStatus } from '../../src/http/http-errors.js'
import type { HttpErrorCode } from '../../src/http/http-errors.js'
import { refuseUnknownOptions } from '../../src/util/unknown-field.js'

/** Anything with a web-standard `fetch` handler (a Hono app). */
export interface FetchApp {
  fetch(request: Request, ...rest: never[]): Response | Promise<Response>
}

/** Options of {@link serve}. */
export interface ServeOptions {
  /** The port; default 8787. 0 picks a free port (read it from the returned `port`). */
  readonly port?: number
  /** The interface to bind; default `127.0.0.1`. */
  readonly hostname?: string
  /**
   * Further `Host` header values to accept (`name` or `name:port`, e.g. a reverse
   * proxy's public name). The server's own names are always accepted: `127.0.0.1:<port>`,
   * `localhost:<port>`, `[::1]:<port>` and the bound hostname with the port.
   */
  readonly allowedHosts?: readonly string[]
  /**
   * How long a client may take to send a whole request, headers and body, in ms; default
   * 30,000. Past it the request is answered `408 REQUEST_TIMEOUT` and the connection
   * closed. Node's own default (300 s) let a client that sends a body one byte every few
   * seconds hold a socket for five minutes; a 1 MiB body (the API's cap) at 35 KB/s still
   * arrives in time. Responses are not timed: an event stream may stay open.
   */
  readonly requestTimeoutMs?: number
  /** How long a client may take to send a request's headers, in ms; default 10,000, at most `requestTimeoutMs`. */
  readonly headersTimeoutMs?: number
  /**
   * The most connections open at once; default 1,024. A connection past it is closed at
   * once, before it is read: each open socket holds a file descriptor and buffers, and
   * idle or slow sockets cost nothing to open.
   */
  readonly maxConnections?: number
}

/** A running server. */
export interface ServedApp {
  /** `http://<host>:<port>` as a browser on this machine should open it. */
  readonly url: string
  /** The bound port. */
  readonly port: number
  /**
   * Stops accepting connections, closes idle keep-alive connections, and resolves once
   * every open connection has ended. Abort in-flight work first (the app's `signal`, or
   * disposing the runtime) so that streamed responses end. Idempotent.
   */
  close(): Promise<void>
}

/** The names {@link ServeOptions} holds: any other is refused, naming the closest (`maxConnection` is not left at 1,024 in silence). */
const SERVE_OPTION_KEYS: readonly string[] = ['port', 'hostname', 'allowedHosts', 'requestTimeoutMs', 'headersTimeoutMs', 'maxConnections']

/** Default {@link ServeOptions.requestTimeoutMs}. */
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000
/** Default {@link ServeOptions.headersTimeoutMs}. */
const DEFAULT_HEADERS_TIMEOUT_MS = 10_000
/** Default {@link ServeOptions.maxConnections}. */
const DEFAULT_MAX_CONNECTIONS = 1_024
/** How often the request timeouts are checked (ms). */
const TIMEOUT_CHECK_MS = 1_000

function invalid(message: string): never {
  throw new ToolError('INVALID_OPTIONS', `serve: ${message}`)
}

function formatHost(hostname: string, port: number): string {
  return hostname.includes(':') && !hostname.startsWith('[') ? `[${hostname}]:${port}` : `${hostname}:${port}`
}

/** A DNS name (RFC 1123 labels, at most 253 characters, one trailing dot allowed). */
const HOST_NAME = /^(?=.{1,253}\.?$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i

/** Whether `hostname` is something `listen()` can be given: an IPv4 or IPv6 address (unbracketed) or a DNS name. */
function isHostname(hostname: string): boolean {
  return isIP(hostname) !== 0 || HOST_NAME.test(hostname)
}

/** `value` quoted for a message: a caller's string, bounded. */
function quoteHost(value: unknown): string {
  if (typeof value !== 'string') return typeof value
  return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value)
}

/**
 * Why listening failed, in the options' words when the hostname is the cause: a name that
 * does not resolve (`ENOTFOUND`, `EAI_AGAIN`) or an address that is not this machine's
 * (`EADDRNOTAVAIL`) is `INVALID_OPTIONS` naming it, not Node's bare `getaddrinfo` error.
 * Anything else (a port in use: `EADDRINUSE`, `EACCES`) is Node's error as it is.
 */
function listenFailure(error: Error & { code?: string }, hostname: string): Error {
  if (error.code === 'ENOTFOUND' || error.code === 'EAI_AGAIN' || error.code === 'EAI_NONAME') {
    return new ToolError('INVALID_OPTIONS', `serve: hostname ${quoteHost(hostname)} does not resolve to an address of this machine (${error.code})`)
  }
  if (error.code === 'EADDRNOTAVAIL') return new ToolError('INVALID_OPTIONS', `serve: hostname ${quoteHost(hostname)} is not an address of this machine (EADDRNOTAVAIL)`)
  return error
}

/** Answers a request the adapter could not turn into a `Request`, or a handler that threw. */
function requestFailure(error: unknown): Response {
  if (error instanceof RequestError) {
    // A missing or malformed Host header is a Host the server does not answer to.
    if (/host/i.test(error.message)) return httpErrorResponse('FORBIDDEN_HOST', 'this server does not answer to that Host name')
    return httpErrorResponse('NOT_FOUND', 'the request target is not a valid path')
  }
  return httpErrorResponse('INTERNAL', 'internal error')
}

/**
 * Bytes that are not HTTP at all (a malformed request line or header, a body longer than its
 * `Content-Length` spilling into a "next request"): Node's default answer is an empty 400.
 */
function clientError(error: Error & { code?: string }, socket: Socket): void {
  // As Node's own handler: answer only on a connection nothing was written to yet.
  if (error.code === 'ECONNRESET' || !socket.writable || socket.bytesWritten > 0) {
    socket.destroy()
    return
  }
  const [code, reason, message]: [HttpErrorCode, string, string] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? ['REQUEST_HEADERS_TOO_LARGE', 'Request Header Fields Too Large', 'the request headers are too large']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? ['REQUEST_TIMEOUT', 'Request Timeout', 'the request did not arrive in time']
        : ['INVALID_REQUEST', 'Bad Request', 'the request is not well-formed HTTP']
  const status = httpErrorStatus[code]
  const body = JSON.stringify({ error: { code, message } })
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`,
  )
}

/**
 * Serves `app` on Node. Resolves once the server is listening.
 *
 * @example
 * ```ts
 * const server = await serve(createToolsApp(runtime, { token }), { port: 8787 })
 * console.log(`listening on ${server.url}`)
 * process.once('SIGINT', () => void server.close())
 * ```
 */
export async function serve(app: FetchApp, options: ServeOptions = {}): Promise<ServedApp> {
  if (typeof app !== 'object' || app === null || typeof app.fetch !== 'function') invalid('app must have a fetch(request) handler')
  if (typeof options !== 'object' || options === null || Array.isArray(options)) invalid('options must be an object')
  refuseUnknownOptions(options, SERVE_OPTION_KEYS, invalid)
  const port = options.port ?? 8787
  if (!Number.isInteger(port) || port < 0 || port > 65535) invalid('port must be an integer in 0–65535')
  const hostname = options.hostname ?? '127.0.0.1'
  if (typeof hostname !== 'string' || !isHostname(hostname)) {
    invalid(`hostname must be an IP address (127.0.0.1, ::1, 0.0.0.0) or a host name of letters, digits, hyphens and dots (got ${quoteHost(hostname)})`)
  }
  const extraHosts = options.allowedHosts ?? []
  if (!Array.isArray(extraHosts) || extraHosts.some((h) => typeof h !== 'string' || h.length === 0 || /[\s/]/.test(h))) {
    invalid('allowedHosts must be an array of host names (name or name:port)')
  }

  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS
  const headersTimeoutMs = options.headersTimeoutMs ?? Math.min(DEFAULT_HEADERS_TIMEOUT_MS, requestTimeoutMs)
  const maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS
  if (!Number.isSafeInteger(requestTimeoutMs) || requestTimeoutMs < 1) invalid('requestTimeoutMs must be a positive integer (ms)')
  if (!Number.isSafeInteger(headersTimeoutMs) || headersTimeoutMs < 1 || headersTimeoutMs > requestTimeoutMs) {
    invalid('headersTimeoutMs must be a positive integer (ms), at most requestTimeoutMs')
  }
  if (!Number.isSafeInteger(maxConnections) || maxConnections < 1) invalid('maxConnections must be a positive integer')

  // Filled in once the port is known (port 0 binds an ephemeral one).
  const allowed = new Set<string>()
  let closing = false
  const fetch = async (request: Request): Promise<Response> => {
    const host = request.headers.get('Host')?.toLowerCase()
    if (host === undefined || !allowed.has(host)) {
      return httpErrorResponse('FORBIDDEN_HOST', 'this server does not answer to that Host name')
    }
    const response = await app.fetch(request)
    // Once closing, no connection is kept alive for another request.
    if (closing) {
      try {
        response.headers.set('Connection', 'close')
      } catch {
        // Immutable headers (a fetched response passed through): the idle sweep below still ends it.
      }
    }
    return response
  }

  // `getRequestListener` + our own server rather than `@hono/node-server`'s `serve()`: it
  // lets every failure before or around the app answer with the documented error body
  // instead of an empty 400/500 (a Host header that is not a valid host, a request target
  // with a backslash, a fetch handler that throws).
  const listener = getRequestListener(fetch, { hostname, errorHandler: requestFailure })
  const server = await new Promise<Server>((resolve, reject) => {
    // Node answers an HTTP/1.1 request without Host itself (an empty 400).
    const created = createServer(
      {
        requireHostHeader: false,
        requestTimeout: requestTimeoutMs,
        headersTimeout: headersTimeoutMs,
        // Node checks the two timeouts on this period (30 s by default, which would let a
        // slow request live up to twice its timeout).
        connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_MS, headersTimeoutMs),
      },
      listener,
    )
    created.maxConnections = maxConnections
    created.on('clientError', clientError)
    // Named: the same function must be taken off once listening, or it stays on the server and
    // swallows the server's next 'error' (an arrow given to off() removes nothing).
    const failedToListen = (error: Error & { code?: string }): void => reject(listenFailure(error, hostname))
    created.once('error', failedToListen)
    created.listen(port, hostname, () => {
      created.off('error', failedToListen)
      resolve(created)
    })
  })
  const address = server.address() as AddressInfo
  const boundPort = address.port
  for (const name of ['127.0.0.1', 'localhost', '[::1]', hostname]) allowed.add(formatHost(name, boundPort).toLowerCase())
  for (const name of extraHosts) allowed.add(name.toLowerCase())

  // Connections that have not sent a request yet.
  const unused = new Set<Socket>()
  server.on('connection', (socket: Socket) => {
    unused.add(socket)
    socket.once('close', () => unused.delete(socket))
  })
  server.on('request', (request: { socket: Socket }) => unused.delete(request.socket))

  let closed: Promise<void> | undefined
  const closeIdle = (): void => {
    if ('closeIdleConnections' in server && typeof server.closeIdleConnections === 'function') server.closeIdleConnections()
    for (const socket of unused) socket.destroy()
  }
  return {
    url: `http://${formatHost(hostname === '0.0.0.0' || hostname === '::' ? '127.0.0.1' : hostname, boundPort)}`,
    port: boundPort,
    close() {
      closed ??= new Promise<void>((resolve, reject) => {
        closing = true
        // Connections busy now (a stream, a run) become idle later: sweep until the server has closed.
        const sweep = setInterval(closeIdle, 25)
        server.close((error) => {
          clearInterval(sweep)
          if (error === undefined) resolve()
          else reject(error)
        })
        closeIdle()
      })
      return closed
    },
  }
}
