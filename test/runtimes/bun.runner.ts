/**
 * The suites on Bun (bundled by bundle.ts, run by bun.test.ts): the sandbox from
 * `toolyard/node` (node:worker_threads), the HTTP app behind `Bun.serve`.
 * @module
 */
import { createSandboxRuntime } from '../../platforms/node/index.js'
import { runAndExit } from './report.js'
import { registerSuites } from './suites.js'

/** The part of Bun's global the runner uses (Bun's own typings are not part of this build). */
interface BunGlobal {
  readonly version: string
  readonly env: Record<string, string | undefined>
  serve(options: { hostname: string; port: number; idleTimeout?: number; fetch: (request: Request) => Response | Promise<Response> }): {
    readonly port: number
    stop(closeActiveConnections?: boolean): Promise<void>
  }
}
const Bun = (globalThis as unknown as { Bun: BunGlobal }).Bun

registerSuites({
  name: 'bun',
  workerHeapCapped: false,
  sandboxes: [{ entry: 'toolyard/node', make: (options) => createSandboxRuntime(options) }],
  serve: (fetch) => {
    const server = Bun.serve({ hostname: '127.0.0.1', port: 0, idleTimeout: 30, fetch })
    return { url: `http://127.0.0.1:${server.port}`, close: () => server.stop(true) }
  },
})

await runAndExit('bun', Bun.version, (code) => process.exit(code), Bun.env.TOOLYARD_RUNTIME_FILTER)
