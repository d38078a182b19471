/**
 * `createPreflightWorker()`: a preflight engine whose checks run in one `worker_threads` thread
 * (`preflight-thread.ts`), so neither the compiler's load (seconds) nor a check (tens of ms warm)
 * nor a hostile program's worst case holds the host's event loop.
 * @module
 */
import { spawnCappedWorker } from './_capped-worker.js'
import { createThreadedPreflightEngine, type PreflightThread } from '../../src/preflight/threaded-engine.js'
import type { PreflightEngine } from '../../src/preflight/types.js'

/** Options of {@link createPreflightWorker}. */
export interface PreflightWorkerOptions {
  /** A check's longest time in the thread before the thread is terminated (`CHECK_TIMEOUT`). Default 10,000 ms, counted once the compiler is loaded. */
  readonly timeoutMs?: number
  /** A fresh thread's longest time to load the compiler; its checks answer `CHECK_UNAVAILABLE` past it. Default 60,000 ms. */
  readonly loadTimeoutMs?: number
  /** Checks waiting for the thread beyond which a check answers `CHECK_BUSY`. Default 32. */
  readonly maxQueued?: number
  /** The thread's old-generation heap cap (`resourceLimits`), in MB. Default 512. */
  readonly maxHeapMb?: number
}

/** Where the thread's code is: the compiled entry next to this file, or (running from source under tsx/vitest) the TypeScript one through tsx. */
function threadSource(): { readonly source: string; readonly eval: true } | URL {
  const here = import.meta.url
  if (!here.endsWith('.ts')) return new URL('./preflight-thread.js', here)
  const entry = JSON.stringify(new URL('./preflight-thread.ts', here).href)
  return { source: `const { register } = await import('tsx/esm/api'); register(); await import(${entry})`, eval: true }
}

function spawn(maxHeapMb: number): PreflightThread {
  const where = threadSource()
  const common = { env: {}, argv: [], execArgv: [], stdout: true, stderr: true, resourceLimits: { maxOldGenerationSizeMb: maxHeapMb }, name: 'toolyard-preflight' }
  const worker = where instanceof URL ? spawnCappedWorker(where, common) : spawnCappedWorker(where.source, { ...common, eval: true })
  // The engine unrefs the thread whenever no check is pending (after its listeners are added: a
  // 'message' listener refs a Worker again), so an idle checker never keeps the process alive.
  return {
    postMessage: (message) => worker.postMessage(message),
    onMessage: (listener) => worker.on('message', listener),
    onExit: (listener) => {
      worker.on('error', (error) => listener(error.message))
      worker.on('exit', (code) => listener(`exit code ${code}`))
    },
    terminate: () => void worker.terminate(),
    ref: () => worker.ref(),
    unref: () => worker.unref(),
  }
}

/**
 * Creates a preflight engine backed by one `worker_threads` thread, started on the first check and
 * unref'd.
 * @example
 * ```ts
 * const runtime = createToolRuntime({ mode: 'code', codeRuntime: createSandboxRuntime(), preflightEngine: createPreflightWorker() })
 * ```
 */
export function createPreflightWorker(options: PreflightWorkerOptions = {}): PreflightEngine {
  const maxHeapMb = options.maxHeapMb ?? 512
  return createThreadedPreflightEngine({
    spawn: () => spawn(maxHeapMb),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.loadTimeoutMs === undefined ? {} : { loadTimeoutMs: options.loadTimeoutMs }),
    ...(options.maxQueued === undefined ? {} : { maxQueued: options.maxQueued }),
  })
}
