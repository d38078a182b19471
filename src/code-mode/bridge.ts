/**
 * The dispatch bridge: `run_code`'s body. It hands the program to the code runtime
 * with one `tools` binding namespace and routes every binding call back into the
 * registry's pipeline — lossless-JSON snapshot, the per-run pool (native scheduling
 * contract), the outer token as `parent`, start/settle session events, deferred
 * sub-call contexts in dispatch order — and owns the run's settlement: a run-scoped
 * abort fired when the run settles for any reason, and a drain of every started
 * sub-call before returning.
 *
 * @module
 */
import { CodeRunFailedError, ToolCallError, ToolError } from '../errors.js'
import type { CodeRunFailureKind } from '../errors.js'
import type { CodeBindingFunction, CodeLogEntry, CodeRunResult } from '../code-runtime/contract.js'
import type { JsonValue } from '../json/json-value.js'
import { snapshotLosslessJson } from '../json/lossless.js'
import { createCallPool } from '../scheduler.js'
import type { CodeDispatchEvent, CodeDispatchStartEvent } from '../runtime-types.js'
import type { AdditionalContext, ToolExecutionMode, ToolExecutionResult, ToolRunContext } from '../types.js'
import type { CodeModeHost, RunCodeArgs } from './run-code.js'
import { prettyJson, utf8ByteLength } from './render-output.js'
import type { RunCodeOutput } from './render-output.js'

/** The global name the binding namespace is exposed as inside a program. */
export const CODE_BINDINGS_GLOBAL = 'tools'

/** Per-sub-call bookkeeping for context ordering. */
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

/**
 * Runs one `run_code` call: builds the bindings, runs the program, reaches quiescence
 * (run-scoped abort, queue abandoned, started sub-calls drained, contexts deferred),
 * then returns the canonical `{ logs, result? }` or throws `CodeRunFailedError`.
 *
 * Throws `ToolError('CODE_RUN_FAILED')` when no code runtime is configured.
 */
export async function runCodeBridge(host: CodeModeHost, args: RunCodeArgs, exec: ToolRunContext): Promise<RunCodeOutput> {
  const runtime = host.codeRuntime()
  if (runtime === undefined) {
    throw new ToolError(
      'CODE_RUN_FAILED',
      'run_code is unavailable: no code runtime is configured (ToolRuntimeOptions.codeRuntime)',
    )
  }

  // The run-scoped abort: follows the outer signal in, fires when the run settles.
  const run = new AbortController()
  const pool = createCallPool({ maxParallel: host.maxParallelSubCalls })
  // An outer abort abandons the queue at once, not only when the runtime reports back.
  run.signal.addEventListener('abort', () => pool.abandon(run.signal.reason), { once: true })
  const followOuter = (): void => run.abort(exec.signal.reason)
  if (exec.signal.aborted) followOuter()
  else exec.signal.addEventListener('abort', followOuter, { once: true })

  let settled = false
  let submitted = 0
  const slots: SubCallSlot[] = []
  let flushed = 0

  // Contexts cross in dispatch order: a sub-call's contexts wait for every earlier one.
  const flushContexts = (): void => {
    for (;;) {
      const slot = slots[flushed]
      if (slot === undefined || !slot.settled) return
      for (const context of slot.contexts) {
        try {
          exec.deferContext(context)
        } catch {
          // A refused context must not cost the program its result; the registry owns the channel.
        }
      }
      slot.contexts = []
      flushed++
    }
  }

  const eventBase = (subCallId: string, name: string, args: JsonValue) => ({
    parentCallId: exec.callId,
    subCallId,
    name,
    arguments: args,
    ...(exec.agent === undefined ? {} : { agent: exec.agent }),
  })

  const dispatch = async (name: string, subCallId: string, args: JsonValue, slot: SubCallSlot): Promise<JsonValue> => {
    // Abandoned between dequeue and start: a call that never started logs nothing.
    if (settled || run.signal.aborted) throw settlementReason()
    const startedAt = Date.now()
    const startedClock = performance.now()
    const start: CodeDispatchStartEvent = { type: 'tool/code-dispatch-start', ...eventBase(subCallId, name, args), startedAt }
    try {
      host.logDispatchStart(start)
    } catch {
      // Logging is observation; it never changes the sub-call's outcome.
    }
    let result: ToolExecutionResult | undefined
    let thrown: unknown
    try {
      result = await host.execute({
        callId: subCallId,
        name,
        arguments: args,
        signal: run.signal,
        ...(exec.agent === undefined ? {} : { agent: exec.agent }),
        parent: exec.token,
      })
    } catch (error) {
      // `execute` never rejects by contract; a host that does still gets a settle event.
      thrown = error
    }
    const settledAt = Date.now()
    const durationMs = Math.max(0, performance.now() - startedClock)
    const outcome: Pick<CodeDispatchEvent, 'isError' | 'content' | 'error'> =
      result === undefined
        ? {
            isError: true,
            content: [{ type: 'text', text: `Error: ${messageOf(thrown)}` }],
            error: { message: messageOf(thrown) },
          }
        : result.isError
          ? {
              isError: true,
              content: result.content,
              error: {
                message: result.error.message,
                ...(result.error.info === undefined ? {} : { code: String(result.error.info.code) }),
              },
            }
          : { isError: false, content: result.content }
    slot.contexts = result?.additionalContexts ?? []
    slot.settled = true
    flushContexts()
    try {
      await host.logDispatch({
        type: 'tool/code-dispatch',
        ...eventBase(subCallId, name, args),
        ...outcome,
        startedAt,
        settledAt,
        durationMs,
      })
    } catch {
      // `logDispatch` never throws by contract; an observer's failure never changes the outcome.
    }
    if (result === undefined) throw new ToolCallError(name, messageOf(thrown))
    if (result.isError) throw new ToolCallError(name, result.error.message)
    return result.value
  }

  const binding =
    (name: string): CodeBindingFunction =>
    (args: unknown) => {
      if (settled || run.signal.aborted) {
        return Promise.reject(new ToolCallError(name, 'the run has settled or was aborted; the call was not dispatched'))
      }
      let snapshot: JsonValue
      try {
        snapshot = snapshotLosslessJson(args === undefined ? {} : args)
      } catch (error) {
        return Promise.reject(new ToolCallError(name, `arguments are not lossless JSON: ${messageOf(error)}`))
      }
      const subCallId = `${exec.callId}:code:${++submitted}`
      const slot: SubCallSlot = { settled: false, contexts: [] }
      slots.push(slot)
      let mode: ToolExecutionMode
      try {
        mode = host.executionMode({ name, arguments: snapshot, ...(exec.agent === undefined ? {} : { agent: exec.agent }) })
      } catch {
        mode = 'exclusive'
      }
      return pool.submit(mode, () => dispatch(name, subCallId, snapshot, slot)).catch((error: unknown) => {
        if (!slot.settled) {
          // Abandoned before it started (or refused at start): nothing was logged or dispatched.
          slot.settled = true
          flushContexts()
        }
        if (error instanceof ToolCallError) throw error
        throw new ToolCallError(
          name,
          settled || run.signal.aborted ? 'the run ended before the call started; it was not dispatched' : messageOf(error),
        )
      })
    }

  // Null prototype + defineProperty: `__proto__`, `constructor`, `toString` are plain names.
  const functions = Object.create(null) as Record<string, CodeBindingFunction>
  for (const name of host.bindingNames(exec.agent)) {
    Object.defineProperty(functions, name, { value: binding(name), enumerable: true, writable: false, configurable: false })
  }
  Object.freeze(functions)

  let outcome: CodeRunResult
  try {
    outcome = await runtime.run({
      program: args.code,
      bindings: [{ global: CODE_BINDINGS_GLOBAL, functions }],
      signal: run.signal,
      ...(host.logOutput === undefined ? {} : { onLog: forwardLog(host, exec.callId) }),
    })
  } catch (error) {
    // `run()` never rejects by contract; a runtime that does still ends as a failed run.
    outcome = { logs: [], error: { kind: 'exception', message: `the code runtime failed: ${messageOf(error)}` } }
  } finally {
    settled = true
    exec.signal.removeEventListener('abort', followOuter)
    const reason = settlementReason()
    run.abort(reason)
    pool.abandon(reason)
    try {
      await pool.drain()
    } catch {
      // Each task's outcome already reached its binding promise; drain only waits.
    }
    for (const slot of slots) slot.settled = true
    flushContexts()
  }

  return completeRun(outcome, host.maxOutputBytes)
}

function jsonBytes(value: JsonValue): number {
  return utf8ByteLength(prettyJson(value, { maxIndent: 0 }))
}

/**
 * Turns a settled run into the canonical output or a `CodeRunFailedError`, enforcing
 * lossless JSON on the completion value and `maxOutputBytes` on the payload.
 */
function completeRun(outcome: CodeRunResult, maxOutputBytes: number): RunCodeOutput {
  // Lines stay exactly as printed (no level or source prefix): the model reads what it wrote.
  // Non-lossless completions fail rather than being coerced, so the model learns to return JSON.
  const logs = outcome.logs.map((entry) => (typeof entry.text === 'string' ? entry.text : String(entry.text)))
  const logBytes = jsonBytes(logs)

  if (outcome.error !== undefined) {
    const kind: CodeRunFailureKind = outcome.error.kind
    const message = String(outcome.error.message)
    const total = logBytes + utf8ByteLength(message)
    if (total <= maxOutputBytes) throw new CodeRunFailedError(kind, message, logs)
    throw new CodeRunFailedError(
      kind,
      `${truncateToBytes(message, maxOutputBytes)} [failure output of ${total} bytes exceeds maxOutputBytes (${maxOutputBytes}); captured output dropped]`,
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

/** The longest prefix of `text` whose UTF-8 encoding fits in `maxBytes` (never splits a pair). */
function truncateToBytes(text: string, maxBytes: number): string {
  if (utf8ByteLength(text) <= maxBytes) return text
  let bytes = 0
  let i = 0
  while (i < text.length) {
    const c = text.charCodeAt(i)
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00
    const size = c < 0x80 ? 1 : c < 0x800 ? 2 : pair ? 4 : 3
    if (bytes + size > maxBytes) break
    bytes += size
    i += pair ? 2 : 1
  }
  return `${text.slice(0, i)}…`
}

/** Streams console lines to the host while the run is live; a throwing sink is contained. */
function forwardLog(host: CodeModeHost, parentCallId: string): (entry: CodeLogEntry) => void {
  return (entry) => {
    try {
      host.logOutput?.({ type: 'tool/code-log', parentCallId, entry })
    } catch {
      // Live streaming is best-effort; the run's result carries every line anyway.
    }
  }
}
