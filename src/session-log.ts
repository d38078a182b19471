/**
 * An in-memory {@link SessionLogSink}: keeps every `tool/code-dispatch-start` and
 * `tool/code-dispatch` event in arrival order. For tests, demos and single-process hosts
 * that forward events elsewhere later; a durable host supplies its own sink.
 *
 * @module
 */
import type { SessionLogEvent, SessionLogSink } from './runtime-types.js'

/** A session log sink that keeps its events in memory. */
export interface MemorySessionLog extends SessionLogSink {
  /** Every appended event, oldest first (each stored as a frozen shallow copy). */
  readonly events: readonly SessionLogEvent[]
  /** Forgets every stored event. */
  clear(): void
}

/**
 * Creates an in-memory session log.
 *
 * @example
 * ```ts
 * const sessionLog = createMemorySessionLog()
 * const runtime = createToolRuntime({ mode: 'code', codeRuntime, sessionLog })
 * // … after a run_code call:
 * sessionLog.events.filter((e) => e.type === 'tool/code-dispatch')
 * ```
 */
export function createMemorySessionLog(): MemorySessionLog {
  const events: SessionLogEvent[] = []
  return Object.freeze({
    get events(): readonly SessionLogEvent[] {
      return events
    },
    append(event: SessionLogEvent): void {
      // A copy, so a producer mutating its event object later cannot rewrite history.
      events.push(Object.freeze({ ...event }) as SessionLogEvent)
    },
    clear(): void {
      events.length = 0
    },
  })
}
