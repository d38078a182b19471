/**
 * The dispatch bridge: `run_code`'s body.
 * @module
 */
import { CodeRunFailedError, ToolCallError, ToolError, toolCallErrorOf } from '../errors.js'
import type { CodeRunFailureKind } from '../errors.js'
import type { CodeBindingCallOptions, CodeBindingFunction, CodeLogEntry, CodeRunRequest, CodeRunResult, ParkedRunState } from '../code-runtime/contract.js'
import { bindRunSecret, newRunSecret } from '../durable/call-key.js'
import type { JsonValue } from '../json/json-value.js'
import { snapshotLosslessJson } from '../json/lossless.js'
import { hostTurn } from '../code-runtime/sliced-delivery.js'
import { MAX_LANE_CHARS } from '../code-runtime/run-lanes.js'
import { createCallPool, type CallPool } from '../scheduler.js'
import type { CodeDispatchEvent, CodeDispatchStartEvent } from '../runtime-types.js'
import type { AdditionalContext, ToolExecutionMode, ToolExecutionResult, ToolRunContext } from '../types.js'
import { catalogNamespace } from './catalog-bindings.js'
import type { CallSpan } from '../telemetry/telemetry.js'
import type { CodeModeRegistry, DurableRunNumbering, RunCodeArgs } from './registry-seam.js'
import { prettyJson, truncateToBytes, utf8ByteLength } from './render-output.js'
import type { RunCodeOutput } from './render-output.js'

/** The global name the binding namespace is exposed as inside a program. */
export const CODE_BINDINGS_GLOBAL = 'tools'

/** Flushed slots dropped at once, at the least (see `CodeRun.#flushContexts`). */
const SLOT_COMPACTION = 256

interface SubCallSlot {
  settled: boolean
  contexts: readonly AdditionalContext[]
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return typeof error.message === 'string' ? error.message : String(error.name)
  if (typeof error === 'string') return error
  return 'unknown error'
}

function settlementReason(): unknown {
  // DOMException is a web standard in every runtime we support; its name marks it as an abort.
  return new DOMException('run_code settled; the sub-call was cancelled', 'AbortError')
}

/** A settled sub-call's outcome in the `tools/result` vocabulary (a registry whose execute threw still gets one). */
function dispatchOutcome(result: ToolExecutionResult | undefined, thrown: unknown): Pick<CodeDispatchEvent, 'isError' | 'content' | 'error'> {
  if (result === undefined) {
    return { isError: true, content: [{ type: 'text', text: `Error: ${messageOf(thrown)}` }], error: { message: messageOf(thrown) } }
  }
  if (!result.isError) return { isError: false, content: result.content }
  const code = result.error.info === undefined ? {} : { code: String(result.error.info.code) }
  return { isError: true, content: result.content, error: { message: result.error.message, ...code } }
}

/** The binding call's deadline and wall-clock hold, as a sub-call's input carries them (read defensively: a runtime supplies them). */
function subCallClock(options: CodeBindingCallOptions | undefined): { deadline?: number; holdWallClock?: () => () => void } {
  if (typeof options !== 'object' || options === null) return {}
  const { deadline, holdWallClock } = options
  return {
    ...(typeof deadline === 'number' && Number.isFinite(deadline) ? { deadline } : {}),
    ...(typeof holdWallClock === 'function' ? { holdWallClock } : {}),
  }
}

class CodeRun {
  readonly #registry: CodeModeRegistry
  readonly #exec: ToolRunContext
  readonly #abort = new AbortController()
  readonly #pool: CallPool
  readonly #slots: SubCallSlot[] = []
  readonly #followOuter: () => void
  #settled = false
  #submitted = 0
  #flushed = 0
  /** Sub-call numbers of the unsettled calls, by the program's call number: kept across a park, so a resumed call keeps its id. */
  readonly #numbers = new Map<number, number>()
  /** The run's span (telemetry), and when the run last parked (its next settled call resumes it). */
  readonly span: CallSpan | undefined
  #parkedAt: number | undefined

  constructor(registry: CodeModeRegistry, exec: ToolRunContext) {
    this.#registry = registry
    this.#exec = exec
    this.span = registry.runSpan?.(exec.token)
    const pool = createCallPool({ maxParallel: registry.maxParallelSubCalls })
    this.#pool = pool
    const run = this.#abort
    // An outer abort abandons the queue at once, not only when the code runtime reports back.
    // Stryker disable next-line ObjectLiteral,BooleanLiteral: an AbortSignal fires 'abort' at most once
    run.signal.addEventListener('abort', () => pool.abandon(run.signal.reason), { once: true })
    this.#followOuter = () => run.abort(exec.signal.reason)
    if (exec.signal.aborted) {
      this.#followOuter()
    } else {
      // Stryker disable next-line ObjectLiteral,BooleanLiteral: an AbortSignal fires 'abort' at most once
      exec.signal.addEventListener('abort', this.#followOuter, { once: true })
    }
  }

  /** The run parked (its VM left its thread to wait for a person): an event on its span. */
  parked(state: ParkedRunState): void {
    this.#parkedAt = Date.now()
    this.span?.event('toolyard.run.parked', { 'toolyard.run.waiting_calls': state.calls.length, 'toolyard.run.compute_ms': Math.round(state.busyMs), 'toolyard.run.wall_ms': Math.round(state.wallMs) })
  }

  /** A call of a parked run settled: its answer wakes the VM (replayed on a thread). */
  #wake(): void {
    if (this.#parkedAt === undefined) return
    this.span?.event('toolyard.run.resumed', { 'toolyard.run.resumed_from': 'memory', 'toolyard.run.parked_ms': Date.now() - this.#parkedAt })
    this.#parkedAt = undefined
  }

  /** How sub-calls are numbered so far: what a parked run keeps (`DurableRunNumbering`). */
  numbering(): DurableRunNumbering {
    return { submitted: this.#submitted, calls: [...this.#numbers] }
  }

  /** Continues the numbering of a run that parked (its waiting calls keep their numbers). */
  restoreNumbering(numbering: DurableRunNumbering): void {
    this.#submitted = numbering.submitted
    for (const [callNumber, n] of numbering.calls) this.#numbers.set(callNumber, n)
  }

  get signal(): AbortSignal {
    return this.#abort.signal
  }

  get #closed(): boolean {
    return this.#settled || this.#abort.signal.aborted
  }

  /** The binding namespace: one function per visible tool, on a null-prototype frozen object. */
  bindings(names: readonly string[]): Readonly<Record<string, CodeBindingFunction>> {
    // Null prototype + defineProperty: `__proto__`, `constructor`, `toString` are plain names.
    const functions = Object.create(null) as Record<string, CodeBindingFunction>
    for (const name of names) {
      // defineProperty's defaults make it read-only and non-configurable (Object.freeze below would too).
      Object.defineProperty(functions, name, { value: this.#binding(name), enumerable: true })
    }
    return Object.freeze(functions)
  }

  /** Settlement: abort what still runs, abandon the queue, drain, hand on every context. */
  async settle(): Promise<void> {
    // Stryker disable next-line BooleanLiteral: #closed also reads the run signal
    this.#settled = true
    this.#exec.signal.removeEventListener('abort', this.#followOuter)
    const reason = settlementReason()
    this.#abort.abort(reason)
    this.#pool.abandon(reason)
    await this.#pool.drain()
    for (const slot of this.#slots) slot.settled = true
    this.#flushContexts()
  }

  // Contexts cross in dispatch order: a sub-call's contexts wait for every earlier one.
  #flushContexts(): void {
    for (;;) {
      const slot = this.#slots[this.#flushed]
      if (slot === undefined || !slot.settled) break
      for (const context of slot.contexts) {
        try {
          this.#exec.deferContext(context)
        } catch {
          // A refused context must not cost the program its result; the registry owns the channel.
        }
      }
      // Stryker disable next-line ArrayDeclaration: a flushed slot is never read again
      slot.contexts = []
      this.#flushed++
    }
    // Flushed slots are dropped (in bulk, so dropping stays linear): a run of a million
    // sequential calls keeps the slots of its unsettled calls, not one per call it made.
    // Stryker disable next-line ConditionalExpression,EqualityOperator,LogicalOperator,ArithmeticOperator,BlockStatement: dropping flushed slots is always safe and keeping them only costs memory
    if (this.#flushed >= SLOT_COMPACTION && this.#flushed * 2 >= this.#slots.length) {
      this.#slots.splice(0, this.#flushed)
      this.#flushed = 0
    }
  }

  #eventBase(subCallId: string, name: string, args: JsonValue) {
    const exec = this.#exec
    return { parentCallId: exec.callId, subCallId, name, arguments: args, ...(exec.agent === undefined ? {} : { agent: exec.agent }) }
  }

  #binding(name: string): CodeBindingFunction {
    return (args: unknown, options?: CodeBindingCallOptions) => {
      if (this.#closed) return Promise.reject(new ToolCallError(name, 'the run has settled or was aborted; the call was not dispatched', 'ABORTED_BEFORE_DISPATCH'))
      let snapshot: JsonValue
      try {
        snapshot = snapshotLosslessJson(args === undefined ? {} : args)
      } catch (error) {
        return Promise.reject(new ToolCallError(name, `arguments are not lossless JSON: ${messageOf(error)}`, 'INVALID_ARGS'))
      }
      const exec = this.#exec
      // Numbered by submission; a call a parked run waited on keeps its number when it is made again after a resume.
      const callNumber = options?.callNumber
      const kept = callNumber === undefined ? undefined : this.#numbers.get(callNumber)
      const n = kept ?? ++this.#submitted
      if (callNumber !== undefined) this.#numbers.set(callNumber, n)
      const subCallId = `${exec.callId}:code:${n}`
      const slot: SubCallSlot = { settled: false, contexts: [] }
      this.#slots.push(slot)
      let mode: ToolExecutionMode
      try {
        mode = this.#registry.executionMode({ name, arguments: snapshot, ...(exec.agent === undefined ? {} : { agent: exec.agent }) })
      } catch {
        // An unclassifiable call fails closed: it runs alone.
        mode = 'exclusive'
      }
      const submitted = this.#pool.submit(mode, () => this.#dispatch(name, subCallId, snapshot, slot, options))
      if (callNumber !== undefined) void submitted.then(() => this.#numbers.delete(callNumber), () => this.#numbers.delete(callNumber))
      return submitted.catch((error: unknown) => {
        if (!slot.settled) {
          // Abandoned before it started (or refused at start): nothing was logged or dispatched.
          slot.settled = true
          this.#flushContexts()
        }
        if (error instanceof ToolCallError) throw error
        throw this.#closed ? new ToolCallError(name, 'the run ended before the call started; it was not dispatched', 'ABORTED_BEFORE_DISPATCH') : new ToolCallError(name, messageOf(error))
      })
    }
  }

  async #dispatch(name: string, subCallId: string, args: JsonValue, slot: SubCallSlot, clock: CodeBindingCallOptions | undefined): Promise<JsonValue> {
    // A queue of calls started one after another through promises never yields the host's
    // event loop on its own: past a few ms of this turn, the next call waits for the next one.
    const turn = hostTurn()
    if (turn !== undefined) await turn
    // Abandoned between dequeue and start: a call that never started logs nothing.
    if (this.#closed) throw settlementReason()
    const registry = this.#registry
    const exec = this.#exec
    const startedAt = Date.now()
    const startedClock = performance.now()
    const start: CodeDispatchStartEvent = { type: 'tool/code-dispatch-start', ...this.#eventBase(subCallId, name, args), startedAt }
    try {
      registry.logDispatchStart(start)
    } catch {
      // Logging is observation; it never changes the sub-call's outcome.
    }
    let result: ToolExecutionResult | undefined
    let thrown: unknown
    try {
      result = await registry.execute({
        callId: subCallId,
        name,
        arguments: args,
        signal: this.#abort.signal,
        ...(exec.agent === undefined ? {} : { agent: exec.agent }),
        parent: exec.token,
        // The run's wall clock: the sub-call's deadline, and the hold a person's decision takes.
        ...subCallClock(clock),
      })
    } catch (error) {
      // `execute` never rejects by contract; a registry that does still gets a settle event.
      thrown = error
    }
    this.#wake()
    const settledAt = Date.now()
    const durationMs = Math.max(0, performance.now() - startedClock)
    slot.contexts = result?.additionalContexts ?? []
    slot.settled = true
    this.#flushContexts()
    try {
      await registry.logDispatch({
        type: 'tool/code-dispatch',
        ...this.#eventBase(subCallId, name, args),
        ...dispatchOutcome(result, thrown),
        startedAt,
        settledAt,
        durationMs,
      })
    } catch {
      // `logDispatch` never throws by contract; an observer's failure never changes the outcome.
    }
    if (result === undefined) throw new ToolCallError(name, messageOf(thrown))
    if (result.isError) throw toolCallErrorOf(name, result.error)
    return result.value
  }
}

/**
 * Runs one `run_code` call: builds the bindings, runs the program, reaches quiescence (run-scoped
 * abort, queue abandoned, started sub-calls drained, contexts deferred), then returns the canonical
 * `{ logs, result? }` or throws `CodeRunFailedError`.
 */
export async function runCodeBridge(registry: CodeModeRegistry, args: RunCodeArgs, exec: ToolRunContext): Promise<RunCodeOutput> {
  const codeRuntime = registry.codeRuntime(args.language)
  if (codeRuntime === undefined) {
    const missing = args.language === undefined ? 'no code runtime is configured (ToolRuntimeOptions.codeRuntime)' : `no code runtime runs ${JSON.stringify(args.language)} here`
    throw new ToolError('CODE_RUN_FAILED', `run_code is unavailable: ${missing}`)
  }
  const run = new CodeRun(registry, exec)
  // Taken with the binding names: `catalog` finds exactly what `tools` can call in this run.
  const catalog = registry.catalog?.(exec.agent)
  const durable = durableRequest(registry, run, exec, args)
  let outcome: CodeRunResult
  try {
    outcome = await codeRuntime.run({
      program: args.code,
      bindings: [
        { global: CODE_BINDINGS_GLOBAL, functions: run.bindings(registry.bindingNames(exec.agent)) },
        ...(catalog === undefined ? [] : [catalogNamespace(catalog)]),
      ],
      signal: run.signal,
      ...(registry.logOutput === undefined ? {} : { onLog: forwardLog(registry, exec.callId) }),
      ...(durable === undefined ? {} : { durable }),
      ...laneOf(exec),
    })
  } catch (error) {
    // `run()` never rejects by contract; a code runtime that does still ends as a failed run.
    outcome = { logs: [], error: { kind: 'exception', message: `the code runtime failed: ${messageOf(error)}` } }
  } finally {
    await run.settle()
    await registry.durable?.ended(exec.callId)
  }
  if (outcome.stats !== undefined) run.span?.span?.setAttribute('toolyard.run.compute_ms', Math.round(outcome.stats.computeMs))
  return completeRun(outcome, registry.maxOutputBytes, codeRuntime.language)
}

/**
 * The run's queue lane: who asked, as far as a client cannot multiply it freely: the HTTP
 * principal (the token's), else the call's agent (cut to the lane's bound), else the shared lane.
 */
function laneOf(exec: ToolRunContext): { lane?: string } {
  if (exec.principal !== undefined) return { lane: `principal:${exec.principal}` }
  return exec.agent === undefined || exec.agent === '' ? {} : { lane: `agent:${exec.agent}`.slice(0, MAX_LANE_CHARS) }
}

/** The `durable` part of a run's request (a registry with a store): parked states keep the sub-call numbering too. */
function durableRequest(registry: CodeModeRegistry, run: CodeRun, exec: ToolRunContext, args: RunCodeArgs): CodeRunRequest['durable'] {
  const trace = run.span?.traceCarrier()
  const durable = registry.durable?.forRun(exec.callId, exec.agent, { code: args.code, description: args.description, ...(args.language === undefined ? {} : { language: args.language }) }, exec.principal, trace)
  // The run's identity no client can choose: its sub-calls' approvals (and records) are bound to it through the run's token.
  bindRunSecret(exec.token, durable?.secret ?? newRunSecret())
  // Without a store a recorded run still reports its parks (the state is read for its figures only).
  if (durable === undefined) return run.span?.span?.isRecording() === true ? { onPark: (state) => run.parked(state) } : undefined
  if (durable.resume !== undefined) {
    run.restoreNumbering(durable.resume.numbering)
    run.span?.event('toolyard.run.resumed', { 'toolyard.run.resumed_from': 'store', 'toolyard.run.waiting_calls': durable.resume.state.calls.length })
  }
  return {
    onPark: (state) => {
      run.parked(state)
      durable.onPark(state, run.numbering())
    },
    ...(durable.resume === undefined ? {} : { resume: durable.resume.state }),
  }
}

const LANGUAGE_NAMES: Readonly<Record<string, string>> = Object.freeze({ typescript: 'TypeScript/JavaScript', javascript: 'JavaScript', python: 'Python' })

/** `(run_code runs TypeScript/JavaScript programs)` for the code runtime's `language`. */
export function languageNote(language: string): string {
  const name = Object.hasOwn(LANGUAGE_NAMES, language) ? LANGUAGE_NAMES[language] : JSON.stringify(String(language))
  return `(run_code runs ${name} programs)`
}

function jsonBytes(value: JsonValue): number {
  // Stryker disable next-line ObjectLiteral: without maxIndent the cap is NaN
  return utf8ByteLength(prettyJson(value, { maxIndent: 0 }))
}

/**
 * Turns a settled run into the canonical output or a `CodeRunFailedError`, enforcing lossless JSON
 * on the completion value and `maxOutputBytes` on the payload.
 */
function completeRun(outcome: CodeRunResult, maxOutputBytes: number, language: string): RunCodeOutput {
  // Lines stay exactly as printed (no level or source prefix): the model reads what it wrote.
  const logs = outcome.logs.map((entry) => String(entry.text))
  const logBytes = jsonBytes(logs)

  if (outcome.error !== undefined) {
    const kind: CodeRunFailureKind = outcome.error.kind
    const message = String(outcome.error.message)
    // A program that throws may simply be in the wrong language (Python sent to a TypeScript
    // runtime fails as `print is not defined`): say which language runs here.
    const note = kind === 'exception' && !message.startsWith('ToolCallError: ') ? ` ${languageNote(language)}` : ''
    const total = logBytes + utf8ByteLength(message)
    if (total <= maxOutputBytes) throw new CodeRunFailedError(kind, `${message}${note}`, logs)
    throw new CodeRunFailedError(
      kind,
      `${truncateToBytes(message, maxOutputBytes)}${note} [failure output of ${total} bytes exceeds maxOutputBytes (${maxOutputBytes}); captured output dropped]`,
    )
  }

  if (outcome.value === undefined) {
    if (logBytes > maxOutputBytes) throw overLimit(logBytes, maxOutputBytes)
    return { logs }
  }
  let result: JsonValue
  try {
    result = snapshotLosslessJson(outcome.value)
  } catch (error) {
    throw new CodeRunFailedError(
      'exception',
      `the program's return value is not lossless JSON: ${messageOf(error)} (return plain JSON: objects, arrays, strings, finite numbers, booleans, null)`,
      logs,
    )
  }
  const total = logBytes + jsonBytes(result)
  if (total > maxOutputBytes) throw overLimit(total, maxOutputBytes)
  return { logs, result }
}

function overLimit(total: number, max: number): CodeRunFailedError {
  return new CodeRunFailedError(
    'exception',
    `the run's output (${total} bytes of logs and return value) exceeds maxOutputBytes (${max}); print or return less`,
  )
}

function forwardLog(registry: CodeModeRegistry, parentCallId: string): (entry: CodeLogEntry) => void {
  return (entry) => {
    try {
      // Stryker disable next-line OptionalChaining: forwardLog is installed only when logOutput is defined
      registry.logOutput?.({ type: 'tool/code-log', parentCallId, entry })
    } catch {
      // Live streaming is best-effort; the run's result carries every line anyway.
    }
  }
}
