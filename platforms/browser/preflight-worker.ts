/**
 * `createPreflightWorker()` for the browser: a preflight engine whose checks run in a module Web
 * Worker (`preflight-worker-entry.ts`), so the compiler's load and every check stay off the page's
 * main thread.
 * @module
 */
import { ToolError } from '../../src/errors.js'
import { createThreadedPreflightEngine, type PreflightThread } from '../../src/preflight/threaded-engine.js'
import type { PreflightEngine } from '../../src/preflight/types.js'

/** Options of the browser {@link createPreflightWorker}. */
export interface BrowserPreflightWorkerOptions {
  /**
   * Where the compiler's lib files are served (`lib.es2022.d.ts` and what it references:
   * the `lib/` folder of the `typescript` package), e.g. `'/node_modules/typescript/lib/'`
   * or a CDN folder of the same version.
   */
  readonly libBaseUrl: string | URL
  /**
   * The worker script: `platforms/browser/preflight-worker-entry.ts`, bundled on its own
   * (it carries the compiler). Default `new URL('./preflight-worker-entry.js', import.meta.url)`.
   */
  readonly workerUrl?: string | URL
  /** A check's longest time before the worker is terminated (`CHECK_TIMEOUT`). Default 10,000 ms, counted once the compiler is loaded. */
  readonly timeoutMs?: number
  /** A fresh thread's longest time to load the compiler; its checks answer `CHECK_UNAVAILABLE` past it. Default 60,000 ms. */
  readonly loadTimeoutMs?: number
  /** Checks waiting beyond which a check answers `CHECK_BUSY`. Default 32. */
  readonly maxQueued?: number
}

function spawn(url: URL): PreflightThread {
  const worker = new Worker(url, { type: 'module', name: 'toolyard-preflight' })
  return {
    postMessage: (message) => worker.postMessage(message),
    onMessage: (listener) => worker.addEventListener('message', (event) => listener(event.data)),
    onExit: (listener) => {
      worker.addEventListener('error', (event) => listener(event.message || 'the worker failed to load'))
      worker.addEventListener('messageerror', () => listener('a message could not be read'))
    },
    terminate: () => worker.terminate(),
  }
}

/**
 * Creates a preflight engine backed by one module Web Worker, started on the first check.
 *
 * @example
 * ```ts
 * import { createPreflightWorker } from 'toolyard/browser'
 * const runtime = createToolRuntime({ mode: 'code', codeRuntime, preflightEngine: createPreflightWorker({ libBaseUrl: '/typescript-lib/' }) })
 * ```
 */
export function createPreflightWorker(options: BrowserPreflightWorkerOptions): PreflightEngine {
  const { libBaseUrl } = options ?? {}
  if (typeof libBaseUrl !== 'string' && !(libBaseUrl instanceof URL)) throw new ToolError('INVALID_OPTIONS', 'createPreflightWorker: options.libBaseUrl must be a string or a URL')
  const url = new URL(options.workerUrl ?? new URL('./preflight-worker-entry.js', import.meta.url), globalThis.location?.href)
  url.searchParams.set('lib', new URL(libBaseUrl, globalThis.location?.href).href)
  return createThreadedPreflightEngine({
    spawn: () => spawn(url),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.loadTimeoutMs === undefined ? {} : { loadTimeoutMs: options.loadTimeoutMs }),
    ...(options.maxQueued === undefined ? {} : { maxQueued: options.maxQueued }),
  })
}
