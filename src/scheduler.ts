/**
 * Parallel scheduling for tool calls: one pool implementation shared by the agent loop's batches
 * (`runToolCalls`, registry/batch.ts) and the Code Mode bridge's per-run pool.
 * @module
 */
import { ToolError } from './errors.js'
import type { ToolExecutionMode } from './types.js'

/** Options of {@link createCallPool}. */
export interface CallPoolOptions {
  /** How many `parallel` tasks may run at once. A positive integer; 1 means serial. */
  readonly maxParallel: number
}

/** A bounded, order-preserving task pool. */
export interface CallPool {
  /** Queues `task`; resolves or rejects with its outcome. */
  submit<T>(mode: ToolExecutionMode, task: () => Promise<T>): Promise<T>
  /**
   * Rejects every queued, not yet started task with `reason` (they never start) and closes the pool
   * to later submissions.
   */
  abandon(reason: unknown): void
  /** Resolves once the pool is idle: every started task settled and nothing is queued. */
  drain(): Promise<void>
}

interface QueuedTask {
  readonly exclusive: boolean
  readonly task: () => Promise<unknown>
  readonly resolve: (value: unknown) => void
  readonly reject: (reason: unknown) => void
}

/** Throws `INVALID_OPTIONS` unless `value` is a positive safe integer. */
function assertPositiveInteger(value: unknown, what: string): asserts value is number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new ToolError('INVALID_OPTIONS', `${what} must be a positive integer (got ${describe(value)})`)
  }
}

function describe(value: unknown): string {
  if (typeof value === 'number') return String(value)
  if (typeof value === 'string') return JSON.stringify(value)
  return value === null ? 'null' : typeof value
}

/**
 * Creates a bounded rolling pool.
 *
 * @example
 * ```ts
 * const pool = createCallPool({ maxParallel: 10 })
 * const a = pool.submit('parallel', () => readFile('a'))
 * const b = pool.submit('exclusive', () => writeFile('b')) // waits for a, runs alone
 * ```
 */
export function createCallPool(options: CallPoolOptions): CallPool {
  if (typeof options !== 'object' || options === null) {
    throw new ToolError('INVALID_OPTIONS', 'createCallPool options must be an object')
  }
  const maxParallel = options.maxParallel
  assertPositiveInteger(maxParallel, 'maxParallel')

  // A plain array with a moving head: submit/shift stay O(1) amortized for long runs.
  let queue: QueuedTask[] = []
  let head = 0
  let running = 0
  let exclusiveRunning = false
  let pumping = false
  let abandoned = false
  let abandonReason: unknown
  let idleWaiters: Array<() => void> = []

  const settleIdle = (): void => {
    if (running !== 0 || head < queue.length || idleWaiters.length === 0) return
    const waiters = idleWaiters
    idleWaiters = []
    for (const wake of waiters) wake()
  }

  const start = (entry: QueuedTask): void => {
    running += 1
    if (entry.exclusive) exclusiveRunning = true
    let promise: Promise<unknown>
    try {
      promise = Promise.resolve(entry.task())
    } catch (error) {
      promise = Promise.reject(error)
    }
    promise.then(
      (value) => finish(entry, true, value),
      (error: unknown) => finish(entry, false, error),
    )
  }

  const finish = (entry: QueuedTask, ok: boolean, outcome: unknown): void => {
    running -= 1
    if (entry.exclusive) exclusiveRunning = false
    if (ok) entry.resolve(outcome)
    else entry.reject(outcome)
    pump()
    settleIdle()
  }

  const pump = (): void => {
    // A task may submit synchronously from inside start(); the outer loop picks it up.
    if (pumping) return
    pumping = true
    try {
      while (head < queue.length && !exclusiveRunning) {
        const next = queue[head]!
        if (next.exclusive ? running > 0 : running >= maxParallel) break
        queue[head] = undefined as unknown as QueuedTask
        head += 1
        start(next)
      }
      if (head === queue.length) {
        queue = []
        head = 0
      }
    } finally {
      pumping = false
    }
  }

  return Object.freeze({
    submit<T>(mode: ToolExecutionMode, task: () => Promise<T>): Promise<T> {
      if (abandoned) return Promise.reject(abandonReason)
      if (typeof task !== 'function') {
        return Promise.reject(new ToolError('INVALID_OPTIONS', 'CallPool.submit needs a task function'))
      }
      return new Promise<T>((resolve, reject) => {
        queue.push({ exclusive: mode !== 'parallel', task, resolve: resolve as (value: unknown) => void, reject })
        pump()
      })
    },
    abandon(reason: unknown): void {
      if (!abandoned) {
        abandoned = true
        abandonReason = reason
      }
      const pending = queue.slice(head)
      queue = []
      head = 0
      for (const entry of pending) entry.reject(reason)
      settleIdle()
    },
    drain(): Promise<void> {
      if (running === 0 && head >= queue.length) return Promise.resolve()
      return new Promise<void>((resolve) => idleWaiters.push(resolve))
    },
  })
}
