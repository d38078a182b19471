/**
 * The Node worker's entry, bundled by `scripts/gen-bootstrap.mjs` into `_worker-source.ts` and run
 * with `new Worker(source, { eval: true })`.
 * @module
 */
import { MessagePort, parentPort } from 'node:worker_threads'
import { startBootstrap } from '../../src/code-runtime/in-sandbox/bootstrap.js'
import { portEndpoint } from './_port-endpoint.js'

function drained(stream: NodeJS.WritableStream & { readonly writableLength?: number }): Promise<void> {
  if (stream.writableLength === 0) return Promise.resolve()
  return new Promise((resolve) => {
    stream.write('', () => resolve())
  })
}

const parent = parentPort
if (parent !== null) {
  const stdout = process.stdout
  const stderr = process.stderr
  const receive = (message: unknown): void => {
    const port = typeof message === 'object' && message !== null ? (message as { port?: unknown }).port : undefined
    if (!(port instanceof MessagePort)) return
    parent.off('message', receive)
    const handle = startBootstrap(portEndpoint(port), {
      flush: () => Promise.all([drained(stdout), drained(stderr)]).then(() => undefined),
    })
    // Report what escapes the program's promise chain (a throw in a timer callback) as its exception.
    process.on('uncaughtException', (error) => handle.reportUncaught(error))
    // A transiently unhandled rejection must not kill the run, as in browsers.
    process.on('unhandledRejection', () => undefined)
  }
  parent.on('message', receive)
}
