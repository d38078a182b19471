/**
 * A preflight engine whose analysis runs in a thread a platform spawns: per-check time budget,
 * bounded queue and pending checks answered on thread death, written once; a platform supplies {@link PreflightThread}.
 * @module
 */
import { checkNote } from './analyze.js'
import type { PreflightEngine, PreflightEngineRequest, PreflightEngineResult } from './types.js'

/** What a platform's thread offers the engine. */
export interface PreflightThread {
  postMessage(message: unknown): void
  /** Registers the one message listener. */
  onMessage(listener: (message: unknown) => void): void
  /** Registers the one listener for the thread's death (an error or an exit). */
  onExit(listener: (reason: string) => void): void
  terminate(): void
  /** Optional (Node): lets the thread keep the process alive. */
  ref?(): void
  /** Optional (Node): the thread no longer keeps the process alive. */
  unref?(): void
}

/** Options of {@link createThreadedPreflightEngine}. */
export interface ThreadedPreflightEngineOptions {
  /** Starts a thread running the preflight thread entry. */
  readonly spawn: () => PreflightThread
  /** A check's longest time before the thread is terminated, counted once the thread has loaded its compiler. Default 10,000 ms. */
  readonly timeoutMs?: number
  /**
   * A fresh thread's longest time to load its compiler (seconds, more on a loaded machine): its
   * checks wait for the load without their own clock running, and answer `CHECK_UNAVAILABLE` if
   * it takes longer. Default 60,000 ms.
   */
  readonly loadTimeoutMs?: number
  /** Checks waiting beyond which a check answers `CHECK_BUSY` at once. Default 32. */
  readonly maxQueued?: number
}

interface Pending {
  readonly resolve: (result: PreflightEngineResult) => void
  /** Armed when the check is sent to a ready thread, or when its thread becomes ready. */
  timer: ReturnType<typeof setTimeout> | undefined
}

/** What a thread posts once its compiler is loaded (see {@link servePreflightThread}). */
const READY = 'toolyard-preflight-ready'

const EMPTY_PLAN = Object.freeze({ calls: Object.freeze([]), dynamic: true })

/** An engine answer that is only a note (the check did not happen). */
export function noteResult(code: string, message: string): PreflightEngineResult {
  return { plan: EMPTY_PLAN, spans: [], diagnostics: undefined, notes: [checkNote(code, message)] }
}

function isResult(value: unknown): value is { id: number; result: PreflightEngineResult } {
  if (typeof value !== 'object' || value === null) return false
  const { id, result } = value as { id?: unknown; result?: { plan?: unknown; notes?: unknown; spans?: unknown } }
  return typeof id === 'number' && typeof result === 'object' && result !== null && typeof result.plan === 'object' && Array.isArray(result.notes) && Array.isArray(result.spans)
}

/** Creates an engine over threads that `spawn` starts (one at a time, on the first check). */
export function createThreadedPreflightEngine(options: ThreadedPreflightEngineOptions): PreflightEngine {
  const timeoutMs = options.timeoutMs ?? 10_000
  const loadTimeoutMs = options.loadTimeoutMs ?? 60_000
  const maxQueued = options.maxQueued ?? 32
  let thread: PreflightThread | undefined
  // The compiler's load is not a check's cost: a check's clock starts once its thread is ready.
  let ready = false
  let loadTimer: ReturnType<typeof setTimeout> | undefined
  let sentDeclarations: string | undefined
  let nextId = 0
  let disposed = false
  const pending = new Map<number, Pending>()

  const stop = (code: string, message: string): void => {
    const current = thread
    thread = undefined
    sentDeclarations = undefined
    ready = false
    clearTimeout(loadTimer)
    for (const [id, entry] of pending) {
      clearTimeout(entry.timer)
      pending.delete(id)
      entry.resolve(noteResult(code, message))
    }
    current?.terminate()
  }

  const armCheck = (entry: Pending): void => {
    entry.timer = setTimeout(() => stop('CHECK_TIMEOUT', `the preflight did not finish within ${timeoutMs} ms; the thread was stopped and the program was not checked`), timeoutMs)
  }

  const start = (): PreflightThread => {
    const created = options.spawn()
    loadTimer = setTimeout(() => stop('CHECK_UNAVAILABLE', `the preflight thread did not load its compiler within ${loadTimeoutMs} ms; the program was not checked`), loadTimeoutMs)
    created.onMessage((message) => {
      if (created !== thread) return
      if (message === READY) {
        ready = true
        clearTimeout(loadTimer)
        for (const entry of pending.values()) armCheck(entry)
        return
      }
      if (!isResult(message)) return
      const entry = pending.get(message.id)
      if (entry === undefined) return
      pending.delete(message.id)
      clearTimeout(entry.timer)
      if (pending.size === 0) created.unref?.()
      entry.resolve(message.result)
    })
    created.onExit((reason) => {
      if (created === thread) stop('CHECK_FAILED', `the preflight thread ended: ${reason}`)
    })
    // After the listeners: on Node, adding a message listener refs the thread again.
    created.unref?.()
    return created
  }

  return {
    where: 'thread',
    analyze(request: PreflightEngineRequest): Promise<PreflightEngineResult> {
      if (disposed) return Promise.resolve(noteResult('CHECK_UNAVAILABLE', 'the preflight engine was disposed'))
      if (pending.size >= maxQueued) return Promise.resolve(noteResult('CHECK_BUSY', `${maxQueued} checks are already waiting; the program was not checked`))
      const current = (thread ??= start())
      const id = ++nextId
      // The SDK text crosses only when it changed since the last check this thread saw.
      const declarations = request.declarations === sentDeclarations && request.declarations !== undefined ? null : request.declarations
      // A plan-only request (plan approval's) leaves the thread's SDK text as it was.
      if (request.declarations !== undefined) sentDeclarations = request.declarations
      return new Promise((resolve) => {
        const entry: Pending = { resolve, timer: undefined }
        if (ready) armCheck(entry)
        pending.set(id, entry)
        current.ref?.()
        current.postMessage({ id, program: request.program, language: request.language, declarations })
      })
    },
    async dispose() {
      disposed = true
      stop('CHECK_UNAVAILABLE', 'the preflight engine was disposed')
    },
  }
}

/**
 * The thread side: answers each request with the analysis `analyze` gives (the caller supplies the
 * compiler), and tells the engine it is ready once `loaded` (the compiler's warm-up) settles, so the
 * load does not count against a check's budget.
 */
export function servePreflightThread(post: (message: unknown) => void, analyze: (request: PreflightEngineRequest) => Promise<PreflightEngineResult>, loaded?: Promise<unknown>): (message: unknown) => void {
  let declarations: string | undefined
  const handle = (message: unknown): void => {
    if (typeof message !== 'object' || message === null) return
    const { id, program, language, declarations: sent } = message as Record<string, unknown>
    if (typeof id !== 'number' || typeof program !== 'string' || typeof language !== 'string') return
    if (typeof sent === 'string') declarations = sent
    // `undefined`: plan only, for this request; the kept SDK text stays for the next check.
    void analyze({ program, language, declarations: sent === undefined ? undefined : declarations }).then((result) => post({ id, result }))
  }
  // Checks start only after READY is posted, so the engine's clock for a check never starts after
  // the check did. The engine bounds how many wait (`maxQueued`). A failed load is ready too: each
  // check then answers the analysis's own note at once. A plan-only request (plan approval's: no
  // `declarations`) needs no compiler and is read at once: held behind the load (seconds, tens of
  // seconds on a loaded machine) it outlasted the registry's PLAN_READ_TIMEOUT_MS, and the person
  // was asked call by call instead of being shown the program's plan.
  let waiting: unknown[] | undefined = []
  const ready = (): void => {
    const held = waiting ?? []
    waiting = undefined
    post(READY)
    for (const message of held) handle(message)
  }
  void Promise.resolve(loaded).then(ready, ready)
  return (message) => (waiting === undefined || isPlanOnly(message) ? handle(message) : void waiting.push(message))
}

/** A request that asks only for the program's plan (no `declarations` key or value: see {@link PreflightEngineRequest}). */
function isPlanOnly(message: unknown): boolean {
  return typeof message === 'object' && message !== null && (message as { declarations?: unknown }).declarations === undefined
}
