/**
 * `createPreflightWorker()`: a preflight engine whose checks run in one
 * `worker_threads` thread (`preflight-thread.ts`), so neither the compiler's load
 * (seconds) nor a check (tens of ms warm) nor a hostile program's worst case holds the
 * host's event loop. A check that outlasts `timeoutMs` terminates the thread (a fresh
 * one starts on the next check) and answers a `CHECK_TIMEOUT` note; more than
 * `maxQueued` checks waiting answer `CHECK_BUSY` at once. Notes never block a run.
 *
 * @module
 */
import { Worker } from 'node:worker_threads'
import { checkNote } from '../../src/preflight/analyze.js'
import type { PreflightEngine, PreflightEngineRequest, PreflightEngineResult } from '../../src/preflight/types.js'

/** Options of {@link createPreflightWorker}. */
export interface PreflightWorkerOptions {
  /** A check's longest time in the thread before the thread is terminated. Default 10,000 ms. */
  readonly timeoutMs?: number
  /** Checks waiting for the thread beyond which a check answers `CHECK_BUSY`. Default 32. */
  readonly maxQueued?: number
  /** The thread's old-generation heap cap (`resourceLimits`), in MB. Default 512 (1,000 tools' SDK checked: about 150 MB). */
  readonly maxHeapMb?: number
}

interface Pending {
  readonly resolve: (result: PreflightEngineResult) => void
  readonly timer: ReturnType<typeof setTimeout>
}

const EMPTY_PLAN = Object.freeze({ calls: Object.freeze([]), dynamic: true })
const noteResult = (code: string, message: string): PreflightEngineResult => ({ plan: EMPTY_PLAN, spans: [], diagnostics: undefined, notes: [checkNote(code, message)] })

/** Where the thread's code is: the compiled entry next to this file, or (running from source under tsx/vitest) the TypeScript one through tsx. */
function threadSource(): { readonly source: string; readonly eval: boolean } | URL {
  const here = import.meta.url
  if (!here.endsWith('.ts')) return new URL('./preflight-thread.js', here)
  const entry = JSON.stringify(new URL('./preflight-thread.ts', here).href)
  return { source: `const { register } = await import('tsx/esm/api'); register(); await import(${entry})`, eval: true }
}

function isResult(value: unknown): value is { id: number; result: PreflightEngineResult } {
  if (typeof value !== 'object' || value === null) return false
  const { id, result } = value as { id?: unknown; result?: { plan?: unknown; notes?: unknown } }
  return typeof id === 'number' && typeof result === 'object' && result !== null && typeof result.plan === 'object' && Array.isArray(result.notes)
}

/**
 * Creates a preflight engine backed by one `worker_threads` thread, started on the first
 * check and unref'd (it never keeps the process alive). Pass it as
 * `createToolRuntime({ preflightEngine })`; `dispose()` ends the thread.
 *
 * @example
 * ```ts
 * const runtime = createToolRuntime({ mode: 'code', codeRuntime: createSandboxRuntime(), preflightEngine: createPreflightWorker() })
 * ```
 */
export function createPreflightWorker(options: PreflightWorkerOptions = {}): PreflightEngine {
  const timeoutMs = options.timeoutMs ?? 10_000
  const maxQueued = options.maxQueued ?? 32
  const maxHeapMb = options.maxHeapMb ?? 512
  let worker: Worker | undefined
  let sentDeclarations: string | undefined
  let nextId = 0
  let disposed = false
  const pending = new Map<number, Pending>()

  const stop = (code: string, message: string): void => {
    const current = worker
    worker = undefined
    sentDeclarations = undefined
    for (const [id, entry] of pending) {
      clearTimeout(entry.timer)
      pending.delete(id)
      entry.resolve(noteResult(code, message))
    }
    if (current !== undefined) void current.terminate()
  }

  const start = (): Worker => {
    const where = threadSource()
    const created =
      where instanceof URL
        ? new Worker(where, { env: {}, argv: [], execArgv: [], stdout: true, stderr: true, resourceLimits: { maxOldGenerationSizeMb: maxHeapMb }, name: 'toolyard-preflight' })
        : new Worker(where.source, { eval: true, env: {}, argv: [], execArgv: [], stdout: true, stderr: true, resourceLimits: { maxOldGenerationSizeMb: maxHeapMb }, name: 'toolyard-preflight' })
    created.unref()
    created.on('message', (message: unknown) => {
      if (created !== worker || !isResult(message)) return
      const entry = pending.get(message.id)
      if (entry === undefined) return
      pending.delete(message.id)
      clearTimeout(entry.timer)
      entry.resolve(message.result)
    })
    created.on('error', (error) => {
      if (created === worker) stop('CHECK_FAILED', `the preflight thread failed: ${error.message}`)
    })
    created.on('exit', (code) => {
      if (created === worker) stop('CHECK_FAILED', `the preflight thread exited (code ${code})`)
    })
    return created
  }

  return {
    where: 'thread',
    analyze(request: PreflightEngineRequest): Promise<PreflightEngineResult> {
      if (disposed) return Promise.resolve(noteResult('CHECK_UNAVAILABLE', 'the preflight engine was disposed'))
      if (pending.size >= maxQueued) return Promise.resolve(noteResult('CHECK_BUSY', `${maxQueued} checks are already waiting; the program was not checked`))
      const thread = (worker ??= start())
      const id = ++nextId
      // The SDK text crosses only when it changed since the last check this thread saw.
      const declarations = request.declarations === sentDeclarations && request.declarations !== undefined ? null : request.declarations
      sentDeclarations = request.declarations
      return new Promise((resolve) => {
        const timer = setTimeout(() => stop('CHECK_TIMEOUT', `the preflight did not finish within ${timeoutMs} ms; the thread was stopped and the program was not checked`), timeoutMs)
        pending.set(id, { resolve, timer })
        thread.postMessage({ id, program: request.program, language: request.language, declarations })
      })
    },
    async dispose() {
      disposed = true
      stop('CHECK_UNAVAILABLE', 'the preflight engine was disposed')
    },
  }
}
