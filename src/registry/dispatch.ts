/**
 * Dispatch: the `tools/execute` wrappers around the body.
 * @module
 */
import { ToolError, toErrorData } from '../errors.js'
import type { JsonValue } from '../json/json-value.js'
import type { ExecuteWrapper } from '../runtime-types.js'
import type { RegisteredTool } from '../schema/tool-definition.js'
import type {
  AdditionalContext,
  AnyToolDefinition,
  ScopeKey,
  ToolDispatchExecution,
  ToolExecution,
  ToolExecutionToken,
  ToolRunContext,
} from '../types.js'
import { ABORTED_BEFORE_MESSAGE, ABORTED_MESSAGE, messageOf, type DispatchOutcome } from './call.js'
import type { InFlight } from './in-flight.js'
import { failure, failureFromError, snapshotContext } from './results.js'

/**
 * The `tools/execute` view: every field frozen except `signal`, an accessor that only
 * accepts an AbortSignal (so it can be replaced and restored, never deleted or broken).
 */
class DispatchView {
  declare readonly token: ToolExecutionToken
  declare readonly callId: string
  declare readonly name: string
  declare readonly arguments: JsonValue
  declare readonly agent?: ScopeKey
  declare readonly parent?: ToolExecutionToken
  declare readonly deadline?: number
  #signal: AbortSignal | undefined
  readonly #life: InFlight
  readonly #definition: AnyToolDefinition

  constructor(execution: ToolExecution, life: InFlight, definition: AnyToolDefinition) {
    this.#life = life
    this.#definition = definition
    const self = this as { -readonly [K in keyof ToolDispatchExecution]: ToolDispatchExecution[K] }
    self.token = execution.token
    self.callId = execution.callId
    self.name = execution.name
    self.arguments = execution.arguments
    if (execution.agent !== undefined) self.agent = execution.agent
    if (execution.parent !== undefined) self.parent = execution.parent
    // Read once, after approval: a call's deadline moves only while it waits for a person.
    if (execution.deadline !== undefined) self.deadline = execution.deadline
    if (execution.principal !== undefined) self.principal = execution.principal
    Object.freeze(this)
  }

  get signal(): AbortSignal {
    return this.#signal ?? this.#life.signal()
  }

  set signal(next: AbortSignal) {
    if (!(next instanceof AbortSignal)) throw new ToolError('WRAPPER_FAILED', 'a tools/execute wrapper may only set signal to an AbortSignal')
    this.#signal = next
  }

  /** The replacement signal, or undefined when no wrapper replaced it (no fusing needed). */
  static replaced(view: DispatchView): AbortSignal | undefined {
    const current = view.#signal
    return current === undefined || current === view.#life.signal() ? undefined : current
  }

  /** The definition a live view resolved to, or undefined for any other object. */
  static definitionOf(view: unknown): AnyToolDefinition | undefined {
    return typeof view === 'object' && view !== null && #definition in view ? (view as DispatchView).#definition : undefined
  }
}

/**
 * The frozen definition a `tools/execute` view resolved to (shadowing applied), or `undefined` for
 * an object that is not a live dispatch view of a toolyard registry.
 */
export const dispatchDefinition: (view: unknown) => AnyToolDefinition | undefined = DispatchView.definitionOf

/** One dispatch: the wrapper chain, the body invocations it makes, and their settlement. */
class Dispatch {
  readonly #execution: ToolExecution
  readonly #life: InFlight
  readonly #definition: AnyToolDefinition
  readonly #args: unknown
  readonly #contexts: AdditionalContext[]
  readonly #wrappers: readonly ExecuteWrapper[]
  readonly #view: DispatchView
  #closed = false
  #deferOpen = true
  #bodyInvoked = false
  #running = 0
  #quiet: (() => void) | undefined
  // Stryker disable next-line ArrayDeclaration: a seeded member is a string
  readonly #bodyErrors: unknown[] = []
  #abortSentinel: ToolError | undefined

  constructor(execution: ToolExecution, life: InFlight, registered: RegisteredTool, args: unknown, contexts: AdditionalContext[], wrappers: readonly ExecuteWrapper[]) {
    this.#execution = execution
    this.#life = life
    this.#definition = registered.definition
    this.#args = args
    this.#contexts = contexts
    this.#wrappers = wrappers
    this.#view = new DispatchView(execution, life, registered.definition)
  }

  async run(): Promise<DispatchOutcome> {
    let ok = true
    let value: unknown
    let error: unknown
    try {
      value = await this.#step(0)
    } catch (caught) {
      ok = false
      error = caught
    }
    this.#closed = true
    // Quiescence: a wrapper that did not await next() must not let us return with a body running.
    if (this.#running > 0) await new Promise<void>((resolve) => (this.#quiet = resolve))
    this.#deferOpen = false
    return ok ? { kind: 'value', value, bodyInvoked: this.#bodyInvoked } : this.#failed(error)
  }

  #step(index: number): Promise<unknown> {
    const wrapper = this.#wrappers[index]
    if (wrapper === undefined) return this.#invokeBody()
    try {
      return Promise.resolve(wrapper(this.#view, () => this.#step(index + 1) as Promise<JsonValue>))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  #invokeBody(): Promise<unknown> {
    if (this.#closed) return Promise.reject(new ToolError('WRAPPER_FAILED', 'next() was called after the dispatch settled'))
    if (this.#life.aborted) {
      this.#abortSentinel ??= new ToolError('ABORTED_BEFORE_DISPATCH', ABORTED_BEFORE_MESSAGE)
      return Promise.reject(this.#abortSentinel)
    }
    this.#bodyInvoked = true
    let promise: Promise<unknown>
    try {
      promise = Promise.resolve(this.#definition.execute(this.#args as never, this.#runContext()))
    } catch (error) {
      promise = Promise.reject(error)
    }
    this.#running += 1
    const settle = (): void => {
      this.#running -= 1
      if (this.#running === 0 && this.#quiet !== undefined) this.#quiet()
    }
    return promise.then(
      (value) => {
        settle()
        return value
      },
      (error: unknown) => {
        settle()
        this.#bodyErrors.push(error)
        throw error
      },
    )
  }

  #runContext(): ToolRunContext {
    const execution = this.#execution
    const life = this.#life
    const replaced = DispatchView.replaced(this.#view)
    let fused: AbortSignal | undefined
    const context = {
      token: execution.token,
      callId: execution.callId,
      name: execution.name,
      arguments: execution.arguments,
      get signal(): AbortSignal {
        return replaced === undefined ? life.signal() : (fused ??= AbortSignal.any([replaced, life.signal()]))
      },
      deferContext: (deferred: AdditionalContext): void => {
        // After the call settled there is no result left to carry the context.
        if (!this.#deferOpen) return
        this.#contexts.push(snapshotContext(deferred, 'deferContext(context)'))
      },
    } as { -readonly [K in keyof ToolRunContext]: ToolRunContext[K] }
    if (execution.agent !== undefined) context.agent = execution.agent
    if (execution.parent !== undefined) context.parent = execution.parent
    if (execution.deadline !== undefined) context.deadline = execution.deadline
    if (execution.principal !== undefined) context.principal = execution.principal
    return Object.freeze(context)
  }

  #failed(error: unknown): DispatchOutcome {
    const contexts = [...this.#contexts]
    if (this.#abortSentinel !== undefined && error === this.#abortSentinel) {
      const result = this.#bodyInvoked ? failure('ABORTED', ABORTED_MESSAGE, contexts) : failure('ABORTED_BEFORE_DISPATCH', ABORTED_BEFORE_MESSAGE, contexts)
      return { kind: 'failure', result }
    }
    if (this.#bodyErrors.includes(error)) {
      // A body that rejects with the caller's own abort reason acknowledged the cancellation.
      if (this.#life.aborted && error === this.#life.reason) return { kind: 'failure', result: failure('ABORTED', ABORTED_MESSAGE, contexts) }
      return { kind: 'failure', result: failureFromError(error, 'TOOL_FAILED', contexts) }
    }
    if (error instanceof ToolError && (error.code === 'TOOL_TIMEOUT' || error.code === 'INTERRUPTED' || error.code === 'REPLAY_DIVERGED' || error.code === 'RUN_TAKEN_OVER')) {
      return { kind: 'failure', result: failure(error.code, messageOf(error), contexts, error.name) }
    }
    const result = failure('WRAPPER_FAILED', `a tools/execute wrapper failed: ${messageOf(error)}`, contexts, toErrorData(error).name)
    return { kind: 'failure', result }
  }
}

/** Runs the wrappers and the body of one call. */
export function dispatch(
  execution: ToolExecution,
  life: InFlight,
  registered: RegisteredTool,
  args: unknown,
  contexts: AdditionalContext[],
  wrappers: readonly ExecuteWrapper[],
): Promise<DispatchOutcome> {
  return new Dispatch(execution, life, registered, args, contexts, wrappers).run()
}
