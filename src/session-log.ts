/**
 * An in-memory {@link SessionLogSink}: keeps the most recent `tool/code-dispatch-start`,
 * `tool/code-dispatch` and approval events in arrival order, as a ring bounded by entries
 * and by bytes (the oldest events are forgotten first). For tests, demos and
 * single-process hosts that forward events elsewhere later; a durable host supplies its
 * own sink.
 *
 * Why a ring: every event carries a sub-call's arguments (up to the binding cap, 8 MiB)
 * and content, and programs are model-written: an unbounded log kept by a long-lived
 * server grows with every run, for good.
 *
 * @module
 */
import { ToolError } from './errors.js'
import type { SessionLogEvent, SessionLogSink } from './runtime-types.js'

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

function positiveInteger(name: string, value: unknown, fallback: number): number {
  const resolved = value ?? fallback
  if (!Number.isSafeInteger(resolved) || (resolved as number) <= 0) {
    throw new ToolError('INVALID_OPTIONS', `createMemorySessionLog: ${name} must be a positive integer`)
  }
  return resolved as number
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
  const maxEntries = positiveInteger('maxEntries', options.maxEntries, DEFAULT_SESSION_LOG_MAX_ENTRIES)
  const maxBytes = positiveInteger('maxBytes', options.maxBytes, DEFAULT_SESSION_LOG_MAX_BYTES)
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
