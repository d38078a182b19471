/**
 * The calls in flight: one record per tracked execution (caller cancellation, scope disposal,
 * settlement) and the set of live execution tokens a `parent` must name.
 * @module
 */
import type { ToolError } from '../errors.js'
import type { ApprovalHandler, ScopeKey } from '../types.js'
import type { CallSpan } from '../telemetry/telemetry.js'

/** What a live token stands for: the nested calls of this execution read it. */
export interface LiveCall {
  /** The execution's call id (a nested call's `parentCallId`). */
  readonly callId: string
  /** Who decides the `ask`s of this execution and of the calls nested in it, when not the registry's handler. */
  readonly approval: ApprovalHandler | undefined
  /** The execution's span, when the registry has telemetry: its nested calls' parent. */
  readonly span?: CallSpan | undefined
  /** Who asked for the execution: its nested calls carry it. */
  readonly principal?: string | undefined
}

/** One tracked execution. */
export interface InFlight {
  /** True once the caller aborted or the scope was disposed. */
  readonly aborted: boolean
  /** The abort reason (the caller's own reason object when the caller aborted). */
  readonly reason: unknown
  /** The execution's signal (created on first use). */
  signal(): AbortSignal
  /** Marks the execution settled. */
  release(): void
}

/** The lifecycle of a call whose input was unusable (it never dispatches). */
export const UNTRACKED: InFlight = Object.freeze({
  aborted: false,
  reason: undefined,
  signal: () => new AbortController().signal,
  release: () => {},
})

/** The lifecycle of one in-flight execution: caller cancellation, scope disposal, and settlement. */
class InFlightRecord implements InFlight {
  readonly #caller: AbortSignal
  readonly agent: ScopeKey | undefined
  readonly #onRelease: (record: InFlightRecord) => void
  #controller: AbortController | undefined
  /** The caller's signal or our own, whichever fires first: the one thing that listens to the caller. */
  #combined: AbortSignal | undefined
  #onAbort: (() => void) | undefined
  #disposed = false
  #disposeReason: unknown
  #waiters: (() => void)[] | undefined
  #released = false

  constructor(caller: AbortSignal, agent: ScopeKey | undefined, onRelease: (record: InFlightRecord) => void) {
    this.#caller = caller
    this.agent = agent
    this.#onRelease = onRelease
  }

  get aborted(): boolean {
    return this.#disposed || this.#caller.aborted
  }

  /**
   * Why the call was aborted: whichever came first, disposal or the caller (dispose() is a no-op
   * after a caller abort).
   */
  get reason(): unknown {
    return this.#disposed ? this.#disposeReason : this.#caller.reason
  }

  signal(): AbortSignal {
    if (this.#controller === undefined) {
      const controller = new AbortController()
      this.#controller = controller
      // Disposal, when there was one, came first (dispose() ignores an aborted call).
      if (this.#disposed) controller.abort(this.#disposeReason)
      else if (this.#caller.aborted) controller.abort(this.#caller.reason)
      else if (!this.#released) {
        // AbortSignal.any follows the caller without adding a listener to it: a Code Mode
        // run's signal is the caller of every sub-call, and one listener each would pile up
        // (Node warns past ten). A released call stops following (see release()).
        this.#combined = AbortSignal.any([this.#caller, controller.signal])
        this.#onAbort = () => controller.abort(this.#caller.reason)
        // Stryker disable next-line ObjectLiteral,BooleanLiteral: #combined is private and fires 'abort' at most once
        this.#combined.addEventListener('abort', this.#onAbort, { once: true })
      }
    }
    return this.#controller.signal
  }

  dispose(reason: unknown): void {
    if (this.aborted) return
    this.#disposed = true
    this.#disposeReason = reason
    this.#controller?.abort(reason)
  }

  settled(): Promise<void> {
    if (this.#released) return Promise.resolve()
    return new Promise<void>((resolve) => (this.#waiters ??= []).push(resolve))
  }

  release(): void {
    // Stryker disable next-line ConditionalExpression: a second release repeats only no-ops (everything it undoes is undone)
    if (this.#released) return
    this.#released = true
    // Stryker disable next-line OptionalChaining: signal() sets #onAbort and #combined together
    if (this.#onAbort !== undefined) this.#combined?.removeEventListener('abort', this.#onAbort)
    this.#combined = undefined
    this.#onRelease(this)
    const waiters = this.#waiters
    this.#waiters = undefined
    if (waiters !== undefined) for (const wake of waiters) wake()
  }
}

/** Every execution of one registry that has not settled yet. */
export class InFlightCalls {
  /** Tokens of executions currently in flight (a `parent` must be one of them), with what nested calls inherit. */
  readonly liveTokens = new Map<symbol, LiveCall>()
  readonly #records = new Set<InFlightRecord>()
  readonly #forget = (record: InFlightRecord): void => {
    this.#records.delete(record)
  }

  /** Starts tracking one execution of `agent` (undefined: the global layer). */
  track(signal: AbortSignal, agent: ScopeKey | undefined): InFlight {
    const record = new InFlightRecord(signal, agent, this.#forget)
    this.#records.add(record)
    return record
  }

  /**
   * Aborts the executions of `agent` (of every scope when `agent` is undefined: registry
   * disposal) with `reason`, and resolves once they all settled.
   */
  async quiesce(reason: ToolError, agent?: ScopeKey): Promise<void> {
    // Stryker disable next-line ArrayDeclaration: Promise.all resolves a non-promise member at once
    const waits: Promise<void>[] = []
    for (const record of [...this.#records]) {
      if (agent !== undefined && record.agent !== agent) continue
      record.dispose(reason)
      waits.push(record.settled())
    }
    await Promise.all(waits)
  }
}
