/**
 * The suites on Deno (bundled by bundle.ts, run by deno.test.ts): the sandbox from
 * `toolyard/node` (node:worker_threads) and from `toolyard/browser` (Web Workers), the
 * HTTP app behind `Deno.serve`.
 * @module
 */
import { createSandboxRuntime as createWebWorkerSandbox } from '../../platforms/browser/index.js'
import { createSandboxRuntime } from '../../platforms/node/index.js'
import { runAndExit } from './report.js'
import { registerSuites, type Served } from './suites.js'

/** The part of Deno's global the runner uses (Deno's own typings are not part of this build). */
interface DenoGlobal {
  readonly version: { readonly deno: string }
  readonly env: { get(name: string): string | undefined }
  exit(code: number): never
  serve(
    options: { hostname: string; port: number; onListen?: (address: { port: number }) => void },
    handler: (request: Request) => Response | Promise<Response>,
  ): { readonly finished: Promise<void>; shutdown(): Promise<void> }
}
const Deno = (globalThis as unknown as { Deno: DenoGlobal }).Deno

registerSuites({
  name: 'deno',
  workerHeapCapped: true,
  sandboxes: [
    { entry: 'toolyard/node', make: (options) => createSandboxRuntime(options) },
    {
      entry: 'toolyard/browser',
      make: (options) => createWebWorkerSandbox(options),
      // The engine's own behaviour (values, logs, bindings, TypeScript…) is the same code as on toolyard/node; where the host differs (its Worker) runs here.
      contractBlocks: { only: ['descriptors', 'abort', 'budgets', 'settlement', 'the global environment', 'dispose', 'lifecycle'], why: 'the engine is the one run in full on toolyard/node on Deno; this entry runs the blocks its Web Worker host can change' },
    },
  ],
  // The README's one-liner, on a free port.
  serve: (fetch) =>
    new Promise<Served>((resolve) => {
      const server = Deno.serve({ hostname: '127.0.0.1', port: 0, onListen: ({ port }) => resolve({ url: `http://127.0.0.1:${port}`, close: () => server.shutdown() }) }, fetch)
    }),
})

await runAndExit('deno', Deno.version.deno, (code) => Deno.exit(code), Deno.env.get('TOOLYARD_RUNTIME_FILTER'))
