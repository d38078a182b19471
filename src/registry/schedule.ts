/**
 * How a batch scheduler (`runToolCalls`) takes turns inside the pipeline, so that only
 * dispatch and body overlap while policy phases and tails keep model order.
 *
 * @module
 */

/**
 * Callbacks a batch scheduler hands to one execution so that only dispatch and body
 * overlap. Each callback is invoked exactly once per execution, in this order:
 * `beforePolicy` (awaited before any policy phase), `afterPolicy` (when the call leaves
 * its policy phases, dispatching or not), `dispatch` (at most once: runs the wrappers
 * and the body), `beforeTail` (awaited before post-policy / finalization / observation),
 * `afterTail` (after `tools/result` observed the final result).
 */
export interface PipelineSchedule {
  /** Resolves when this call may run its policy phases. */
  beforePolicy(): Promise<void>
  /** The call has left its policy phases. */
  afterPolicy(): void
  /**
   * Runs `task` (wrappers + body) when the scheduler allows. A rejection without the
   * task having started means the call was abandoned: `ABORTED_BEFORE_DISPATCH`.
   */
  dispatch<T>(task: () => Promise<T>): Promise<T>
  /** Resolves when this call may run its tail. */
  beforeTail(): Promise<void>
  /** The call published its result. */
  afterTail(): void
}

const noop = (): void => {}

/** Calls a scheduler callback; a broken scheduler must not break the call, it only loses ordering. */
function quietly(callback: (() => void) | undefined): void {
  try {
    // Stryker disable next-line OptionalChaining: calling an undefined callback throws into the catch below, a no-op as skipping it is
    callback?.()
  } catch {
    // Only ordering is lost; the call itself goes on.
  }
}

/** Normalizes an optional schedule: every callback is safe to call and runs at most once. */
export class Schedule {
  readonly scheduled: boolean
  #policyReleased = false
  #tailReleased = false
  #tailWait: Promise<void> | undefined
  readonly #inner: PipelineSchedule | undefined

  constructor(inner: PipelineSchedule | undefined) {
    this.#inner = inner
    this.scheduled = inner !== undefined
  }

  async beforePolicy(): Promise<void> {
    try {
      // Stryker disable next-line OptionalChaining: the pipeline calls beforePolicy only when scheduled (an inner schedule exists); without one the TypeError is caught and it resolves alike
      await this.#inner?.beforePolicy()
    } catch {
      // A broken scheduler must not break the call; it only loses ordering.
    }
  }

  afterPolicy(): void {
    if (this.#policyReleased) return
    this.#policyReleased = true
    quietly(this.#inner === undefined ? undefined : () => this.#inner!.afterPolicy())
  }

  dispatch<T>(task: () => Promise<T>): Promise<T> {
    return this.#inner === undefined ? task() : this.#inner.dispatch(task)
  }

  /** The turn of the tail; undefined when unscheduled (nothing to wait for, not even a tick). */
  beforeTail(): Promise<void> | undefined {
    if (this.#inner === undefined) return undefined
    const inner = this.#inner
    this.#tailWait ??= Promise.resolve()
      .then(() => inner.beforeTail())
      .then(noop, noop)
    return this.#tailWait
  }

  afterTail(): void {
    if (this.#tailReleased) return
    this.#tailReleased = true
    quietly(this.#inner === undefined ? undefined : () => this.#inner!.afterTail())
  }
}

/** The schedule of a plain `execute()`: every callback a no-op (it holds no inner schedule, so sharing it is safe). */
export const UNSCHEDULED = new Schedule(undefined)
