/**
 * `timeoutPolicy()`: the shipped `tools/execute` wrapper that enforces a definition's cooperative
 * `timeoutMs` (the registry itself never enforces deadlines).
 * @module
 */
import { ToolError } from './errors.js'
import type { JsonValue } from './json/json-value.js'
import { refuseUnknownOptions } from './util/unknown-field.js'
import { dispatchDefinition } from './registry/dispatch.js'
import type { ExecuteWrapper } from './runtime-types.js'
import type { ToolDispatchExecution } from './types.js'

/** Options of {@link timeoutPolicy}. */
export interface TimeoutPolicyOptions {
  /**
   * Deadline for tools that declare no `timeoutMs` (positive, finite). Absent: such
   * tools run without a deadline.
   */
  readonly defaultTimeoutMs?: number
}

/**
 * The longest delay a timer takes as is: Node, browsers and workerd store it as a signed
 * 32-bit integer and turn anything longer into an (almost) immediate timer.
 */
const MAX_TIMER_MS = 2_147_483_647

/**
 * Calls `fire` after `ms` milliseconds, however large `ms` is (longer delays are chained through
 * timers of at most {@link MAX_TIMER_MS}).
 */
function scheduleAfter(ms: number, fire: () => void): () => void {
  let handle: ReturnType<typeof setTimeout> | undefined
  const due = Date.now() + ms
  const arm = (remaining: number): void => {
    handle = setTimeout(() => {
      const left = due - Date.now()
      if (left > 0 && remaining > MAX_TIMER_MS) arm(left)
      else fire()
    }, Math.min(remaining, MAX_TIMER_MS))
  }
  arm(ms)
  return () => clearTimeout(handle)
}

function checkMs(value: unknown, what: string): number | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new ToolError('INVALID_OPTIONS', `${what} must be a positive finite number of milliseconds (got ${String(value)})`)
  }
  return value
}

/**
 * Creates the timeout wrapper. Register it like any wrapper; registered first, it is the
 * outermost, so its deadline covers every inner wrapper and retry.
 *
 * @example
 * ```ts
 * runtime.on('tools/execute', timeoutPolicy())
 * runtime.register(defineTool({ name: 'slow', timeoutMs: 5_000, … }))
 * // a call still running after 5 s has its signal aborted; the result is TOOL_TIMEOUT
 * ```
 */
export function timeoutPolicy(options: TimeoutPolicyOptions = {}): ExecuteWrapper {
  if (typeof options !== 'object' || options === null) throw new ToolError('INVALID_OPTIONS', 'timeoutPolicy options must be an object')
  // A misspelt deadline (`defaultTimeout: 5`) would leave every undeclared tool without one, silently.
  refuseUnknownOptions(options, ['defaultTimeoutMs'], (message) => {
    throw new ToolError('INVALID_OPTIONS', `timeoutPolicy: ${message}`)
  })
  const fallback = checkMs(options.defaultTimeoutMs, 'timeoutPolicy defaultTimeoutMs')

  return async (execution: ToolDispatchExecution, next: () => Promise<JsonValue>): Promise<JsonValue> => {
    const declared = dispatchDefinition(execution)?.timeoutMs
    const ms = declared ?? fallback
    if (ms === undefined) return next()

    const deadline = new AbortController()
    const timeout = new ToolError('TOOL_TIMEOUT', `${execution.name} timed out after ${ms} ms`)
    const cancelTimer = scheduleAfter(ms, () => deadline.abort(timeout))
    const previous = execution.signal
    execution.signal = AbortSignal.any([previous, deadline.signal])
    try {
      const value = await next()
      // A body that finished after the deadline still missed it.
      if (deadline.signal.aborted) throw timeout
      return value
    } catch (error) {
      if (deadline.signal.aborted) throw timeout
      throw error
    } finally {
      cancelTimer()
      execution.signal = previous
    }
  }
}
