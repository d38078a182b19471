/**
 * The local Node server for a toolyard HTTP app (`@hono/node-server`), with a `Host`
 * check against DNS rebinding: a page on `evil.example` whose name an attacker points at
 * 127.0.0.1 sends `Host: evil.example`, and is refused before the app sees the request.
 *
 * @module
 */
import type { AddressInfo } from 'node:net'
import { serve as honoServe } from '@hono/node-server'
import type { ServerType } from '@hono/node-server'
import { ToolError } from '../../src/errors.js'
import { httpErrorResponse } from '../../src/http/http-errors.js'

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

function invalid(message: string): never {
  throw new ToolError('INVALID_OPTIONS', `serve: ${message}`)
}

function formatHost(hostname: string, port: number): string {
  return hostname.includes(':') && !hostname.startsWith('[') ? `[${hostname}]:${port}` : `${hostname}:${port}`
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
  const port = options.port ?? 8787
  if (!Number.isInteger(port) || port < 0 || port > 65535) invalid('port must be an integer in 0–65535')
  const hostname = options.hostname ?? '127.0.0.1'
  if (typeof hostname !== 'string' || hostname.length === 0) invalid('hostname must be a non-empty string')
  const extraHosts = options.allowedHosts ?? []
  if (!Array.isArray(extraHosts) || extraHosts.some((h) => typeof h !== 'string' || h.length === 0 || /[\s/]/.test(h))) {
    invalid('allowedHosts must be an array of host names (name or name:port)')
  }

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

  const server = await new Promise<ServerType>((resolve, reject) => {
    const created = honoServe({ fetch, port, hostname }, () => resolve(created))
    created.once('error', reject)
  })
  const address = server.address() as AddressInfo
  const boundPort = address.port
  for (const name of ['127.0.0.1', 'localhost', '[::1]', hostname]) allowed.add(formatHost(name, boundPort).toLowerCase())
  for (const name of extraHosts) allowed.add(name.toLowerCase())

  let closed: Promise<void> | undefined
  const closeIdle = (): void => {
    if ('closeIdleConnections' in server && typeof server.closeIdleConnections === 'function') server.closeIdleConnections()
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
