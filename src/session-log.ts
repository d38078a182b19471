/**
 * An in-memory {@link SessionLogSink}: keeps the most recent `tool/code-dispatch-start`,
 * `tool/code-dispatch`, approval and plan-approval events in arrival order, as a ring bounded by
 * entries and by bytes (the oldest events are forgotten first).
 * @module
 */
import { ToolError } from './errors.js'
import type { PlanApprovalRequestEvent, SessionLogEvent, SessionLogSink } from './runtime-types.js'
import type { ApprovalPlan } from './types.js'
import { positiveInteger } from './util/guards.js'

const optionError = (message: string): never => {
  throw new ToolError('INVALID_OPTIONS', `createMemorySessionLog: ${message}`)
}

/** Default {@link MemorySessionLogOptions.maxEntries}. */
export const DEFAULT_SESSION_LOG_MAX_ENTRIES = 1_000
/** Default {@link MemorySessionLogOptions.maxBytes}: 4 MiB. */
export const DEFAULT_SESSION_LOG_MAX_BYTES = 4 * 1024 * 1024

/** Options of {@link createMemorySessionLog}; validated at creation (`INVALID_OPTIONS`). */
export interface MemorySessionLogOptions {
  /** The most events kept; older ones are forgotten first. Default 1,000. */
  readonly maxEntries?: number
  /**
   * The most bytes kept, by each event's estimated size (its JSON length, counting at
   * least 8 bytes per value); older events are forgotten first, and an event larger than
   * this on its own is not kept at all. Default 4 MiB.
   */
  readonly maxBytes?: number
}

/** A session log sink that keeps its most recent events in memory. */
export interface MemorySessionLog extends SessionLogSink {
  /** The kept events, oldest first (each stored as a frozen shallow copy). */
  readonly events: readonly SessionLogEvent[]
  /** The estimated bytes of the kept events (at most `maxBytes`). */
  readonly bytes: number
  /** How many events were forgotten (evicted or too large to keep) since creation or the last `clear()`. */
  readonly dropped: number
  /** Forgets every stored event. */
  clear(): void
}

/** A logged program is whole up to this many characters; a longer one keeps its head and tail. */
export const MAX_LOGGED_CODE_CHARS = 4096
const LOGGED_HEAD_CHARS = 3072
const LOGGED_TAIL_CHARS = 1024
/** Planned calls (and asking tools) a plan event lists; the counts say how many there were. */
export const MAX_LOGGED_PLAN_ITEMS = 100
/** Characters of a description or a gate's reason a plan event keeps. */
const LOGGED_NOTE_CHARS = 300

function cutNote(text: string): string {
  return text.length <= LOGGED_NOTE_CHARS ? text : `${text.slice(0, LOGGED_NOTE_CHARS - 1)}…`
}

/**
 * The part of a `tool/plan-approval-request` event that comes from the plan, bounded: a
 * model-written program of up to 256 KiB, with thousands of planned calls, is logged in
 * at most about 4 KiB of code plus 100 calls and 100 asking tools (every sink receives
 * the event, not only the in-memory ring, which bounds bytes on its own).
 */
export function boundPlanForLog(plan: ApprovalPlan): Pick<PlanApprovalRequestEvent, 'code' | 'codeChars' | 'description' | 'calls' | 'callCount' | 'asking' | 'askingCount' | 'dynamic'> {
  const { code } = plan
  const kept =
    code.length <= MAX_LOGGED_CODE_CHARS
      ? code
      : `${code.slice(0, LOGGED_HEAD_CHARS)}\n… (${code.length - LOGGED_HEAD_CHARS - LOGGED_TAIL_CHARS} characters not logged) …\n${code.slice(code.length - LOGGED_TAIL_CHARS)}`
  const asking = plan.asking.slice(0, MAX_LOGGED_PLAN_ITEMS).map((a) => Object.freeze(a.reason === undefined ? { name: a.name } : { name: a.name, reason: cutNote(a.reason) }))
  return {
    code: kept,
    codeChars: code.length,
    description: cutNote(plan.description),
    calls: Object.freeze(plan.calls.slice(0, MAX_LOGGED_PLAN_ITEMS)),
    callCount: plan.calls.length,
    asking: Object.freeze(asking),
    askingCount: plan.asking.length,
    dynamic: plan.dynamic,
  }
}

/**
 * The estimated size of `value` as kept in memory: its JSON length, at least 8 bytes per
 * value. Iterative (any depth), and it stops as soon as the estimate passes `limit`, so an
 * argument of millions of nodes costs at most `limit / 8` steps.
 */
export function estimateRetainedBytes(value: unknown, limit: number): number {
  let bytes = 0
  const stack: unknown[] = [value]
  while (stack.length > 0 && bytes <= limit) {
    const item = stack.pop()
    bytes += 8
    if (typeof item === 'string') bytes += item.length
    else if (Array.isArray(item)) {
      for (let i = 0; i < item.length; i++) stack.push(item[i])
    } else if (typeof item === 'object' && item !== null) {
      for (const key of Object.keys(item)) {
        bytes += key.length
        stack.push((item as Record<string, unknown>)[key])
      }
    }
  }
  return bytes
}

/**
 * Creates an in-memory session log, a ring of at most `maxEntries` events and `maxBytes`
 * estimated bytes.
 *
 * @example
 * ```ts
 * const sessionLog = createMemorySessionLog({ maxEntries: 500 })
 * const runtime = createToolRuntime({ mode: 'code', codeRuntime, sessionLog })
 * // … after a run_code call:
 * sessionLog.events.filter((e) => e.type === 'tool/code-dispatch')
 * ```
 */
export function createMemorySessionLog(options: MemorySessionLogOptions = {}): MemorySessionLog {
  if (typeof options !== 'object' || options === null) throw new ToolError('INVALID_OPTIONS', 'createMemorySessionLog: options must be an object')
  const maxEntries = positiveInteger('maxEntries', options.maxEntries, DEFAULT_SESSION_LOG_MAX_ENTRIES, optionError)
  const maxBytes = positiveInteger('maxBytes', options.maxBytes, DEFAULT_SESSION_LOG_MAX_BYTES, optionError)
  const events: SessionLogEvent[] = []
  const sizes: number[] = []
  let bytes = 0
  let dropped = 0
  const evictOldest = (): void => {
    events.shift()
    bytes -= sizes.shift() ?? 0
    dropped++
  }
  return Object.freeze({
    get events(): readonly SessionLogEvent[] {
      return events
    },
    get bytes(): number {
      return bytes
    },
    get dropped(): number {
      return dropped
    },
    append(event: SessionLogEvent): void {
      // A copy, so a producer mutating its event object later cannot rewrite history.
      const copy = Object.freeze({ ...event }) as SessionLogEvent
      const size = estimateRetainedBytes(copy, maxBytes)
      if (size > maxBytes) {
        dropped++
        return
      }
      while (events.length > 0 && (events.length >= maxEntries || bytes + size > maxBytes)) evictOldest()
      events.push(copy)
      sizes.push(size)
      bytes += size
    },
    clear(): void {
      events.length = 0
      sizes.length = 0
      bytes = 0
      dropped = 0
    },
  })
}
