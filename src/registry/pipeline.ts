/**
 * The execution pipeline: one call in, one deep-frozen result out.
 *
 * ```
 * read input → snapshot args → mint token → code-only collapse → resolve → validateArgs
 *   → pre-aborted? → tools/pre-execute → guards → approval (ask)
 *   → tools/execute wrappers → body → output snapshot/validate/render/meta
 *   → tools/post-execute → finalizeContent → tools/result
 * ```
 *
 * Failure before dispatch skips straight to `finalizeContent` + `tools/result`. The
 * function never rejects and never returns while a body it started is still running.
 * docs/pipeline.md has the full rules; this file follows them in order.
 *
 * @module
 */
import { ToolError, formatViolations, toErrorData } from '../errors.js'
import type { JsonValue } from '../json/json-value.js'
import { snapshotLosslessJson } from '../json/lossless.js'
import type {
  ExecuteWrapper,
  PostExecuteListener,
  PreExecuteListener,
  ResultListener,
  ToolRuntime,
} from '../runtime-types.js'
import type {
  AdditionalContext,
  ContentBlock,
  PostToolDecision,
  PreToolDecision,
  ScopeKey,
  ToolDispatchExecution,
  ToolExecution,
  ToolExecutionResult,
  ToolExecutionToken,
  ToolFailure,
  ToolGuard,
  ToolPresentationMode,
  ToolRunContext,
} from '../types.js'
import type { RegisteredTool } from '../schema/tool-definition.js'
import type { PipelineSchedule } from './internal.js'
import {
  failure,
  failureFromError,
  snapshotContent,
  snapshotContext,
  snapshotContexts,
  success,
  withContent,
  withContexts,
} from './results.js'
import type { ScopedList } from './scoped-list.js'

/** The reserved Code Mode transport's name (kept here to avoid a cycle with code-mode/). */
export const RESERVED_TOOL_NAME = 'run_code'

/** The message of a model-direct call the `code` presentation routes back to `run_code`. */
export function routeBackMessage(name: string): string {
  return `only \`run_code\` is callable directly — call \`${name}\` from inside a \`run_code\` program instead`
}

const ABORTED_BEFORE_MESSAGE = 'the call was cancelled before the tool ran'
const ABORTED_MESSAGE = 'the call was cancelled while the tool ran'

/**
 * One tracked execution. Its signal is the caller's, also aborted when its scope is
 * disposed; it is materialized lazily (an AbortController per call is the single most
 * expensive thing on the hot path, and most tools never read `exec.signal`).
 */
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

/** What the pipeline needs from the runtime that owns it. */
export interface PipelineCore {
  readonly options: ToolRuntime['options']
  isDisposed(): boolean
  presentation(agent: ScopeKey | undefined): ToolPresentationMode
  resolve(name: string, agent: ScopeKey | undefined): RegisteredTool | undefined
  readonly preExecute: ScopedList<PreExecuteListener>
  readonly execute: ScopedList<ExecuteWrapper>
  readonly postExecute: ScopedList<PostExecuteListener>
  readonly result: ScopedList<ResultListener>
  readonly guards: ScopedList<ToolGuard>
  /** Starts tracking one execution of `agent` (for disposal: abort + await). */
  track(signal: AbortSignal, agent: ScopeKey | undefined): InFlight
  /** Tokens of executions currently in flight (a `parent` must be one of them). */
  readonly liveTokens: Set<symbol>
}

interface ParsedInput {
  readonly ok: boolean
  readonly message: string
  readonly callId: string
  readonly name: string
  readonly args: unknown
  readonly signal: AbortSignal | undefined
  readonly agent: ScopeKey | undefined
  readonly parent: symbol | undefined
}

/**
 * The lifecycle of a call whose input was unusable (it never dispatches). Its signal is
 * created on demand: workerd forbids creating an AbortController at module scope.
 */
const untracked: InFlight = Object.freeze({
  aborted: false,
  reason: undefined,
  signal: () => new AbortController().signal,
  release: () => {},
})
const noop = (): void => {}

function messageOf(error: unknown): string {
  const data = toErrorData(error)
  return data.message === '' ? data.name : data.message
}

function malformedInput(message: string, callId: unknown = '', name: unknown = ''): ParsedInput {
  return {
    ok: false,
    message,
    callId: typeof callId === 'string' ? callId : '',
    name: typeof name === 'string' ? name : '',
    args: undefined,
    signal: undefined,
    agent: undefined,
    parent: undefined,
  }
}

function parseInput(raw: unknown): ParsedInput {
  try {
    if (typeof raw !== 'object' || raw === null) return malformedInput('the execution input must be an object')
    const r = raw as Record<string, unknown>
    const callId = r.callId
    const name = r.name
    const signal = r.signal
    const agent = r.agent
    const parent = r.parent
    const args = r.arguments
    if (typeof callId !== 'string') return malformedInput('the execution input needs a string callId', callId, name)
    if (typeof name !== 'string') return malformedInput('the execution input needs a string name', callId, name)
    if (!(signal instanceof AbortSignal)) return malformedInput('the execution input needs an AbortSignal as signal', callId, name)
    if (agent !== undefined && typeof agent !== 'string') return malformedInput('the execution input agent must be a string', callId, name)
    if (parent !== undefined && typeof parent !== 'symbol') {
      return malformedInput('the execution input parent must be an execution token', callId, name)
    }
    return { ok: true, message: '', callId, name, args, signal, agent, parent }
  } catch (error) {
    return malformedInput(`the execution input could not be read: ${messageOf(error)}`)
  }
}

/** Normalizes the optional schedule: every callback is safe to call and runs at most once. */
class Schedule {
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
      await this.#inner?.beforePolicy()
    } catch {
      // A broken scheduler must not break the call; it only loses ordering.
    }
  }

  afterPolicy(): void {
    if (this.#policyReleased) return
    this.#policyReleased = true
    try {
      this.#inner?.afterPolicy()
    } catch {
      // see beforePolicy
    }
  }

  dispatch<T>(task: () => Promise<T>): Promise<T> {
    return this.#inner === undefined ? task() : this.#inner.dispatch(task)
  }

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
    try {
      this.#inner?.afterTail()
    } catch {
      // see beforePolicy
    }
  }
}

/** The schedule of a plain `execute()`: every callback a no-op (stateless, so shared). */
const UNSCHEDULED = new Schedule(undefined)

type PreRank = 0 | 1 | 2
const PRE_RANK: Record<PreToolDecision['kind'], PreRank> = { allow: 0, ask: 1, deny: 2 }

function checkPreDecision(value: unknown): PreToolDecision | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const kind = (value as { kind?: unknown }).kind
  if (kind === 'allow') return { kind: 'allow' }
  if (kind === 'deny') {
    const reason = (value as { reason?: unknown }).reason
    return typeof reason === 'string' ? { kind: 'deny', reason } : undefined
  }
  if (kind === 'ask') {
    const reason = (value as { reason?: unknown }).reason
    if (reason !== undefined && typeof reason !== 'string') return undefined
    return reason === undefined ? { kind: 'ask' } : { kind: 'ask', reason }
  }
  return undefined
}

type Approval = { readonly kind: 'value'; readonly value: unknown } | { readonly kind: 'error'; readonly error: unknown } | { readonly kind: 'aborted' }

/** Awaits the approval handler, but gives up as soon as the call is cancelled (a human may never answer). */
function awaitApproval(run: () => unknown, signal: AbortSignal): Promise<Approval> {
  if (signal.aborted) return Promise.resolve({ kind: 'aborted' })
  return new Promise<Approval>((resolve) => {
    const onAbort = (): void => resolve({ kind: 'aborted' })
    signal.addEventListener('abort', onAbort, { once: true })
    const done = (outcome: Approval): void => {
      signal.removeEventListener('abort', onAbort)
      resolve(outcome)
    }
    let pending: Promise<unknown>
    try {
      pending = Promise.resolve(run())
    } catch (error) {
      pending = Promise.reject(error)
    }
    pending.then(
      (value) => done({ kind: 'value', value }),
      (error: unknown) => done({ kind: 'error', error }),
    )
  })
}

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
  #signal: AbortSignal | undefined
  readonly #tracked: InFlight
  readonly #definition: RegisteredTool['definition']

  constructor(execution: ToolExecution, tracked: InFlight, definition: RegisteredTool['definition']) {
    this.#tracked = tracked
    this.#definition = definition
    const self = this as { -readonly [K in keyof ToolDispatchExecution]: ToolDispatchExecution[K] }
    self.token = execution.token
    self.callId = execution.callId
    self.name = execution.name
    self.arguments = execution.arguments
    if (execution.agent !== undefined) self.agent = execution.agent
    if (execution.parent !== undefined) self.parent = execution.parent
    Object.freeze(this)
  }

  get signal(): AbortSignal {
    return this.#signal ?? this.#tracked.signal()
  }

  set signal(next: AbortSignal) {
    if (!(next instanceof AbortSignal)) throw new ToolError('WRAPPER_FAILED', 'a tools/execute wrapper may only set signal to an AbortSignal')
    this.#signal = next
  }

  /** The replacement signal, or undefined when no wrapper replaced it (no fusing needed). */
  static replaced(view: DispatchView): AbortSignal | undefined {
    const current = view.#signal
    return current === undefined || current === view.#tracked.signal() ? undefined : current
  }

  /** The definition a live view resolved to, or undefined for any other object. */
  static definitionOf(view: unknown): RegisteredTool['definition'] | undefined {
    return typeof view === 'object' && view !== null && #definition in view ? (view as DispatchView).#definition : undefined
  }
}

/** The frozen definition a `tools/execute` view resolved to (what `timeoutPolicy()` reads). */
export const dispatchViewDefinition = DispatchView.definitionOf

/** A value projected through an output declaration, or why it could not be. */
type Materialized =
  | { readonly ok: true; readonly value: JsonValue; readonly content: readonly ContentBlock[]; readonly meta: JsonValue | undefined }
  | { readonly ok: false; readonly message: string }

function materialize(registered: RegisteredTool, args: unknown, raw: unknown, topLevel: boolean): Materialized {
  const definition = registered.definition
  let value: JsonValue
  try {
    value = snapshotLosslessJson(raw)
  } catch (error) {
    return { ok: false, message: `the value is not lossless JSON: ${messageOf(error)}` }
  }
  const violations = registered.validateOutput(value)
  if (violations.length > 0) return { ok: false, message: formatViolations('the value does not match the output schema', violations) }
  let content: readonly ContentBlock[]
  try {
    content = snapshotContent(definition.output.render(args, value), 'output.render()')
  } catch (error) {
    return { ok: false, message: `output.render failed: ${messageOf(error)}` }
  }
  let meta: JsonValue | undefined
  const presentationMeta = definition.output.presentationMeta
  if (topLevel && presentationMeta !== undefined) {
    try {
      const produced: unknown = presentationMeta.call(definition.output, args, value)
      meta = produced === undefined ? undefined : snapshotLosslessJson(produced)
    } catch (error) {
      return { ok: false, message: `output.presentationMeta failed: ${messageOf(error)}` }
    }
  }
  return { ok: true, value, content, meta }
}

function isPostDecision(value: unknown): value is PostToolDecision {
  if (typeof value !== 'object' || value === null) return false
  const kind = (value as { kind?: unknown }).kind
  return kind === 'accept' || kind === 'block'
}

const ACCEPT: PostToolDecision = Object.freeze({ kind: 'accept' as const })

/** What the wrappers + body produced. */
type DispatchOutcome =
  | { readonly kind: 'value'; readonly value: unknown; readonly bodyInvoked: boolean }
  | { readonly kind: 'failure'; readonly result: ToolFailure; readonly bodyInvoked: boolean }

/**
 * Runs one call through the whole pipeline. Never rejects; always publishes exactly one
 * frozen result to `tools/result` before resolving with it.
 */
export async function executePipeline(
  core: PipelineCore,
  raw: unknown,
  schedule?: PipelineSchedule,
  scopeDisposed = false,
): Promise<ToolExecutionResult> {
  const sched = schedule === undefined ? UNSCHEDULED : new Schedule(schedule)
  const input = parseInput(raw)
  const tracked = input.ok && input.signal !== undefined ? core.track(input.signal, input.agent) : undefined
  try {
    return await run(core, input, tracked, sched, scopeDisposed)
  } catch (error) {
    // Unreachable by design (every stage contains its own failures); kept so the promise never rejects.
    return failureFromError(error, 'TOOL_FAILED', [], 'internal pipeline error: ')
  } finally {
    tracked?.release()
    sched.afterPolicy()
    sched.afterTail()
  }
}

async function run(
  core: PipelineCore,
  input: ParsedInput,
  tracked: InFlight | undefined,
  sched: Schedule,
  scopeDisposed: boolean,
): Promise<ToolExecutionResult> {
  if (sched.scheduled) await sched.beforePolicy()

  let args: JsonValue = null
  let argsError: unknown
  let argsBad = false
  if (input.ok) {
    try {
      args = snapshotLosslessJson(input.args)
    } catch (error) {
      argsBad = true
      argsError = error
    }
  }
  const token = Symbol('toolyard.execution') as ToolExecutionToken
  const parent = input.parent !== undefined && core.liveTokens.has(input.parent) ? (input.parent as ToolExecutionToken) : undefined
  const life: InFlight = tracked ?? untracked
  const execution = {
    token,
    callId: input.callId,
    name: input.name,
    arguments: args,
    get signal(): AbortSignal {
      return life.signal()
    },
  } as { -readonly [K in keyof ToolExecution]: ToolExecution[K] }
  if (input.agent !== undefined) execution.agent = input.agent
  if (parent !== undefined) execution.parent = parent
  Object.freeze(execution)
  const agent = input.agent

  core.liveTokens.add(token)
  try {
    if (!input.ok) return await tail(core, execution, sched, failure('INVALID_EXECUTION', input.message), undefined)
    if (argsBad) {
      return await tail(core, execution, sched, failure('INVALID_ARGS', `arguments are not lossless JSON: ${messageOf(argsError)}`), undefined)
    }
    if (core.isDisposed() || scopeDisposed) {
      const message = scopeDisposed ? `agent scope ${JSON.stringify(agent)} is disposed` : 'the tool runtime is disposed'
      return await tail(core, execution, sched, failure('DISPOSED', message), undefined)
    }

    const name = input.name
    // Code-only collapse: before resolution and policy, so nothing observes or approves a call that can only fail.
    if (parent === undefined && name !== RESERVED_TOOL_NAME && core.presentation(agent) === 'code') {
      const message = core.resolve(name, agent) !== undefined ? routeBackMessage(name) : `unknown tool ${JSON.stringify(name)}`
      return await tail(core, execution, sched, failure('UNKNOWN_TOOL', message), undefined)
    }
    const registered = core.resolve(name, agent)
    if (registered === undefined) {
      return await tail(core, execution, sched, failure('UNKNOWN_TOOL', `unknown tool ${JSON.stringify(name)}`), undefined)
    }
    const definition = registered.definition

    let typedArgs: unknown = args
    if (definition.validateArgs !== undefined) {
      try {
        typedArgs = definition.validateArgs(args)
      } catch (error) {
        const data = toErrorData(error)
        return await tail(core, execution, sched, failure('INVALID_ARGS', messageOf(error), [], data.name), registered)
      }
    }

    if (life.aborted) return await tail(core, execution, sched, failure('ABORTED_BEFORE_DISPATCH', ABORTED_BEFORE_MESSAGE), registered)

    // ── tools/pre-execute: strictest decision wins; a denial ends the waterfall ──
    let decision: PreToolDecision = { kind: 'allow' }
    for (const listener of core.preExecute.list(agent)) {
      let next: unknown
      try {
        next = await listener(decision, execution)
      } catch (error) {
        const message = `a tools/pre-execute listener failed (denied): ${messageOf(error)}`
        return await tail(core, execution, sched, failure('DENIED_BY_GATE', message), registered)
      }
      const checked = checkPreDecision(next)
      if (checked === undefined) {
        const message = 'a tools/pre-execute listener returned a malformed decision (denied)'
        return await tail(core, execution, sched, failure('DENIED_BY_GATE', message), registered)
      }
      if (PRE_RANK[checked.kind] >= PRE_RANK[decision.kind]) decision = checked
      if (decision.kind === 'deny') {
        return await tail(core, execution, sched, failure('DENIED_BY_GATE', decision.reason === '' ? 'denied by policy' : decision.reason), registered)
      }
    }
    if (life.aborted) return await tail(core, execution, sched, failure('ABORTED_BEFORE_DISPATCH', ABORTED_BEFORE_MESSAGE), registered)

    // ── guards: monotonic; run before approval so a guard-denied call never reaches a human ──
    for (const guard of core.guards.list(agent)) {
      let verdict: unknown
      try {
        verdict = guard(execution)
      } catch (error) {
        return await tail(core, execution, sched, failure('DENIED_BY_GUARD', `a guard failed (denied): ${messageOf(error)}`), registered)
      }
      if (verdict === undefined) continue
      const message = typeof verdict === 'string' ? (verdict === '' ? 'denied by a guard' : verdict) : 'a guard returned a non-string verdict (denied)'
      return await tail(core, execution, sched, failure('DENIED_BY_GUARD', message), registered)
    }

    // ── approval for ask ──
    if (decision.kind === 'ask') {
      const reason = decision.reason
      const approval = core.options.approval
      const why = reason === undefined || reason === '' ? '' : ` (${reason})`
      if (approval === undefined) {
        const message = `approval required${why} but no approval handler is configured`
        return await tail(core, execution, sched, failure('DENIED_BY_APPROVAL', message), registered)
      }
      const request = Object.freeze({ execution, ...(reason !== undefined ? { reason } : {}) })
      const verdict = await awaitApproval(() => approval(request), life.signal())
      if (verdict.kind === 'aborted') {
        return await tail(core, execution, sched, failure('ABORTED_BEFORE_DISPATCH', ABORTED_BEFORE_MESSAGE), registered)
      }
      if (verdict.kind === 'error') {
        const message = `the approval handler failed (denied): ${messageOf(verdict.error)}`
        return await tail(core, execution, sched, failure('DENIED_BY_APPROVAL', message), registered)
      }
      if (verdict.value !== true) return await tail(core, execution, sched, failure('DENIED_BY_APPROVAL', `approval denied${why}`), registered)
    }
    if (life.aborted) return await tail(core, execution, sched, failure('ABORTED_BEFORE_DISPATCH', ABORTED_BEFORE_MESSAGE), registered)

    // ── dispatch: wrappers around the body ──
    sched.afterPolicy()
    const toolContexts: AdditionalContext[] = []
    let started = false
    let outcome: DispatchOutcome
    try {
      outcome = await sched.dispatch(() => {
        started = true
        return dispatch(core, execution, life, registered, typedArgs, toolContexts)
      })
    } catch (error) {
      // Only a scheduler that abandoned the call before starting it gets here.
      if (started) outcome = { kind: 'failure', result: failureFromError(error, 'TOOL_FAILED', toolContexts), bodyInvoked: true }
      else outcome = { kind: 'failure', result: failure('ABORTED_BEFORE_DISPATCH', ABORTED_BEFORE_MESSAGE), bodyInvoked: false }
    }
    const pending = sched.beforeTail()
    if (pending !== undefined) await pending

    // ── normalization of the dispatched outcome ──
    let result: ToolExecutionResult
    if (outcome.kind === 'failure') result = outcome.result
    else {
      const projected = materialize(registered, typedArgs, outcome.value, parent === undefined)
      result = projected.ok
        ? success(projected.value, projected.content, projected.meta, toolContexts)
        : failure('INVALID_OUTPUT', `${name} returned an invalid output: ${projected.message}`, toolContexts)
    }
    result = cancelSuccess(result, life, outcome.bodyInvoked)

    const skipPost = !result.isError ? false : result.error.info?.code === 'ABORTED_BEFORE_DISPATCH'
    if (!skipPost) {
      result = await postExecute(core, execution, registered, typedArgs, result, toolContexts, parent === undefined)
      result = cancelSuccess(result, life, outcome.bodyInvoked)
    }
    return await tail(core, execution, sched, result, registered)
  } finally {
    core.liveTokens.delete(token)
  }
}

/** Cancellation replaces only a success: ABORTED after the body started, ABORTED_BEFORE_DISPATCH otherwise. */
function cancelSuccess(result: ToolExecutionResult, life: InFlight, bodyInvoked: boolean): ToolExecutionResult {
  if (result.isError || !life.aborted) return result
  const contexts = result.additionalContexts ?? []
  return bodyInvoked ? failure('ABORTED', ABORTED_MESSAGE, contexts) : failure('ABORTED_BEFORE_DISPATCH', ABORTED_BEFORE_MESSAGE, contexts)
}

/** Wrappers + body. Never rejects; returns only once every body it started has settled. */
async function dispatch(
  core: PipelineCore,
  execution: ToolExecution,
  life: InFlight,
  registered: RegisteredTool,
  args: unknown,
  toolContexts: AdditionalContext[],
): Promise<DispatchOutcome> {
  const definition = registered.definition
  const wrappers = core.execute.list(execution.agent)
  const view = new DispatchView(execution, life, definition)

  let closed = false
  let deferOpen = true
  let bodyInvoked = false
  let running = 0
  let quiet: (() => void) | undefined
  const bodyErrors: unknown[] = []
  let abortSentinel: ToolError | undefined

  const deferContext = (context: AdditionalContext): void => {
    // After the call settled there is no result left to carry the context.
    if (!deferOpen) return
    toolContexts.push(snapshotContext(context, 'deferContext(context)'))
  }

  const invokeBody = (): Promise<unknown> => {
    if (closed) return Promise.reject(new ToolError('WRAPPER_FAILED', 'next() was called after the dispatch settled'))
    if (life.aborted) {
      abortSentinel ??= new ToolError('ABORTED_BEFORE_DISPATCH', ABORTED_BEFORE_MESSAGE)
      return Promise.reject(abortSentinel)
    }
    // Re-fuse the caller's signal right before the body: a wrapper cannot drop caller cancellation.
    const replaced = DispatchView.replaced(view)
    let fused: AbortSignal | undefined
    const context = {
      token: execution.token,
      callId: execution.callId,
      name: execution.name,
      arguments: execution.arguments,
      get signal(): AbortSignal {
        return replaced === undefined ? life.signal() : (fused ??= AbortSignal.any([replaced, life.signal()]))
      },
      deferContext,
    } as { -readonly [K in keyof ToolRunContext]: ToolRunContext[K] }
    if (execution.agent !== undefined) context.agent = execution.agent
    if (execution.parent !== undefined) context.parent = execution.parent
    Object.freeze(context)
    bodyInvoked = true
    let promise: Promise<unknown>
    try {
      promise = Promise.resolve(definition.execute(args, context))
    } catch (error) {
      promise = Promise.reject(error)
    }
    running += 1
    const settle = (): void => {
      running -= 1
      if (running === 0 && quiet !== undefined) quiet()
    }
    return promise.then(
      (value) => {
        settle()
        return value
      },
      (error: unknown) => {
        settle()
        bodyErrors.push(error)
        throw error
      },
    )
  }

  const step = (index: number): Promise<unknown> => {
    const wrapper = wrappers[index]
    if (wrapper === undefined) return invokeBody()
    try {
      return Promise.resolve(wrapper(view, () => step(index + 1) as Promise<JsonValue>))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  let ok = true
  let value: unknown
  let error: unknown
  try {
    value = await step(0)
  } catch (caught) {
    ok = false
    error = caught
  }
  closed = true
  // Quiescence: a wrapper that did not await next() must not let us return with a body running.
  if (running > 0) await new Promise<void>((resolve) => (quiet = resolve))
  deferOpen = false

  if (ok) return { kind: 'value', value, bodyInvoked }
  const contexts = [...toolContexts]
  if (abortSentinel !== undefined && error === abortSentinel) {
    return {
      kind: 'failure',
      result: bodyInvoked ? failure('ABORTED', ABORTED_MESSAGE, contexts) : failure('ABORTED_BEFORE_DISPATCH', ABORTED_BEFORE_MESSAGE, contexts),
      bodyInvoked,
    }
  }
  if (bodyErrors.includes(error)) {
    // A body that rejects with the caller's own abort reason acknowledged the cancellation.
    if (life.aborted && error === life.reason) {
      return { kind: 'failure', result: failure('ABORTED', ABORTED_MESSAGE, contexts), bodyInvoked }
    }
    return { kind: 'failure', result: failureFromError(error, 'TOOL_FAILED', contexts), bodyInvoked }
  }
  if (error instanceof ToolError && error.code === 'TOOL_TIMEOUT') {
    return { kind: 'failure', result: failure('TOOL_TIMEOUT', messageOf(error), contexts, error.name), bodyInvoked }
  }
  const data = toErrorData(error)
  return {
    kind: 'failure',
    result: failure('WRAPPER_FAILED', `a tools/execute wrapper failed: ${messageOf(error)}`, contexts, data.name),
    bodyInvoked,
  }
}

/** The `tools/post-execute` waterfall and the application of its final decision. */
async function postExecute(
  core: PipelineCore,
  execution: ToolExecution,
  registered: RegisteredTool,
  args: unknown,
  result: ToolExecutionResult,
  toolContexts: readonly AdditionalContext[],
  topLevel: boolean,
): Promise<ToolExecutionResult> {
  const listeners = core.postExecute.list(execution.agent)
  if (listeners.length === 0) return result
  const policyFailure = (message: string): ToolFailure => failure('POST_POLICY_FAILED', message, toolContexts)

  let decision: PostToolDecision = ACCEPT
  for (const listener of listeners) {
    let next: unknown
    try {
      next = await listener(decision, execution, result)
    } catch (error) {
      return policyFailure(`a tools/post-execute listener failed: ${messageOf(error)}`)
    }
    if (!isPostDecision(next)) return policyFailure('a tools/post-execute listener returned a malformed decision')
    decision = next
    // A block is final: later listeners cannot turn it back into an accept.
    if (decision.kind === 'block') break
  }

  try {
    if (decision.kind === 'block') {
      const feedback = (decision as { feedback?: unknown }).feedback
      if (typeof feedback !== 'string') return policyFailure('a block decision needs string feedback')
      const contexts =
        decision.additionalContexts === undefined ? [] : snapshotContexts(decision.additionalContexts, 'block.additionalContexts')
      return failure('BLOCKED', feedback, contexts)
    }
    const accept = decision
    const decided =
      accept.additionalContexts === undefined ? [] : snapshotContexts(accept.additionalContexts, 'accept.additionalContexts')
    const contexts = [...toolContexts, ...decided]
    const hasContent = accept.content !== undefined
    const hasValue = accept.value !== undefined
    if (hasContent && hasValue) return policyFailure('an accept decision may replace content or value, never both')
    if (hasValue) {
      if (result.isError) return policyFailure('an accept decision cannot give a failed result a value')
      const projected = materialize(registered, args, accept.value, topLevel)
      if (!projected.ok) return policyFailure(`the replacement value is invalid: ${projected.message}`)
      return success(projected.value, projected.content, projected.meta, contexts)
    }
    if (hasContent) return withContexts(withContent(result, snapshotContent(accept.content, 'accept.content')), contexts)
    return contexts.length === toolContexts.length ? result : withContexts(result, contexts)
  } catch (error) {
    return policyFailure(`a tools/post-execute decision is malformed: ${messageOf(error)}`)
  }
}

/** finalizeContent (exactly once) → publish to `tools/result` (observe-only). */
async function tail(
  core: PipelineCore,
  execution: ToolExecution,
  sched: Schedule,
  result: ToolExecutionResult,
  registered: RegisteredTool | undefined,
): Promise<ToolExecutionResult> {
  sched.afterPolicy()
  const pending = sched.beforeTail()
  if (pending !== undefined) await pending
  const finalize = registered?.definition.finalizeContent
  if (finalize !== undefined) {
    try {
      const replaced: unknown = finalize.call(registered!.definition, execution, result)
      if (replaced !== undefined) result = withContent(result, snapshotContent(replaced, 'finalizeContent()'))
    } catch {
      // finalizeContent must be total; a throw (or malformed content) keeps the previous content.
    }
  }
  for (const listener of core.result.list(execution.agent)) {
    try {
      const returned: unknown = listener(execution, result)
      if (typeof returned === 'object' && returned !== null && typeof (returned as { then?: unknown }).then === 'function') {
        ;(returned as Promise<unknown>).then(noop, noop)
      }
    } catch {
      // Observers never change an outcome.
    }
  }
  sched.afterTail()
  return result
}
