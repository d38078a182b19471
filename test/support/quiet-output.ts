/**
 * Lines a green `npm test` run must not print, because a newcomer reads them as problems:
 * each is dropped where it is printed, and only when it is exactly that line.
 *
 * @module
 */
import type { Plugin } from 'vite'

/**
 * Vite's dependency optimizer announcing its work on a fresh clone: "(client) [optimizer]
 * scanning dependencies..." and "… bundling dependencies...". Routine, not news.
 */
export const OPTIMIZER_PROGRESS = /\[optimizer\] (?:scanning|bundling) dependencies\.\.\.$/

/** A vite plugin that drops the optimizer's progress lines from the info log. */
export function quietOptimizerProgress(): Plugin {
  return {
    name: 'toolyard:quiet-optimizer-progress',
    configResolved(config) {
      const logger = config.logger
      const info = logger.info
      logger.info = (message, options) => {
        if (!OPTIMIZER_PROGRESS.test(message)) info.call(logger, message, options)
      }
    },
  }
}

/**
 * workerd's log of the pool's runner socket closing at the end of each test file
 * ("exception = workerd/api/web-socket.c++:821: disconnected: WebSocket peer disconnected").
 * @cloudflare/vitest-pool-workers drops its siblings ("WebSocket was aborted", …) but not
 * this one, and writes it with `process.stdout.write` from its structured-log handler,
 * which a config cannot replace.
 */
export const WORKERD_PEER_DISCONNECTED = /^exception = workerd\/api\/web-socket\.c\+\+:\d+: disconnected: WebSocket peer disconnected\n?$/

/** Wraps `write` so that exactly the workerd disconnect line is dropped; every other chunk passes unchanged. */
export function withoutWorkerdDisconnects(write: StreamWrite): StreamWrite {
  return function (this: unknown, chunk, ...rest) {
    if (typeof chunk === 'string' && WORKERD_PEER_DISCONNECTED.test(chunk)) return true
    return write.call(this, chunk, ...rest)
  }
}
/** The shape of `process.stdout.write`, loosely: a chunk, then encoding and callback as given. */
type StreamWrite = (chunk: string | Uint8Array, ...rest: never[]) => boolean

/** A vite plugin (the workerd project's) that installs {@link withoutWorkerdDisconnects} on this process's stdout and stderr, once. */
export function quietWorkerdDisconnects(): Plugin {
  return {
    name: 'toolyard:quiet-workerd-disconnects',
    configResolved() {
      // The pool prints workerd's info-level lines on stdout, warnings and errors on stderr.
      for (const stream of [process.stdout, process.stderr] as (NodeJS.WriteStream & { [QUIET]?: true })[]) {
        if (stream[QUIET]) continue
        stream.write = withoutWorkerdDisconnects(stream.write.bind(stream) as StreamWrite) as typeof stream.write
        stream[QUIET] = true
      }
    },
  }
}
const QUIET = Symbol.for('toolyard.quietWorkerdDisconnects')
