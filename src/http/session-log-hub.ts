/**
 * A session-log sink that fans events out to live subscribers, so the HTTP app can
 * stream each Code Mode sub-call of a run as it starts and settles.
 *
 * @module
 */
import type { CodeLogEvent, SessionLogEvent, SessionLogSink } from '../runtime-types.js'
import type { Disposer } from '../types.js'

export type { CodeLogEvent } from '../runtime-types.js'

/** What a hub delivers to subscribers. */
export type SessionLogHubEvent = SessionLogEvent | CodeLogEvent

/** A subscriber; a throw is contained and never reaches the appender or other subscribers. */
export type SessionLogHubListener = (event: SessionLogHubEvent) => void

/** Narrows a subscription. */
export interface SessionLogSubscribeOptions {
  /** Only events whose `parentCallId` equals this (one run's sub-calls). */
  readonly parentCallId?: string
}

/** Options of {@link createSessionLogHub}. */
export interface SessionLogHubOptions {
  /** A durable sink that receives every session-log event first (e.g. the in-memory log). */
  readonly forward?: SessionLogSink
}

/** A {@link SessionLogSink} with live subscriptions. */
export interface SessionLogHub extends SessionLogSink {
  /** Appends a session-log event: forwards it, then delivers it to matching subscribers. */
  append(event: SessionLogEvent): void
  /** Delivers a console line of a run to that run's subscribers (never forwarded). */
  appendLog(event: CodeLogEvent): void
  /** Subscribes; the disposer is idempotent. */
  subscribe(listener: SessionLogHubListener, options?: SessionLogSubscribeOptions): Disposer
  /** How many subscriptions are live (a leak check for servers and tests). */
  readonly subscriberCount: number
  /** How many runs have live subscriptions (each run's entry is released with its last subscription). */
  readonly runCount: number
}

/**
 * Creates a fan-out session-log sink. Pass it as `sessionLog` to `createToolRuntime`
 * and as `sessionLog` to `createToolsApp`; the app subscribes per streamed run,
 * filtered by the run's call id.
 *
 * @example
 * ```ts
 * const hub = createSessionLogHub({ forward: createMemorySessionLog() })
 * const runtime = createToolRuntime({ mode: 'both', codeRuntime, sessionLog: hub })
 * const app = createToolsApp(runtime, { token, sessionLog: hub })
 * ```
 */
export function createSessionLogHub(options: SessionLogHubOptions = {}): SessionLogHub {
  const forward = options.forward
  const everyEvent = new Set<SessionLogHubListener>()
  const byParent = new Map<string, Set<SessionLogHubListener>>()
  let count = 0

  const deliver = (event: SessionLogHubEvent): void => {
    const targeted = byParent.get(event.parentCallId)
    // Snapshot: a listener may unsubscribe (itself or another) while we iterate.
    // Stryker disable next-line ArrayDeclaration: a non-function in the list throws inside the per-listener try below and is ignored, as a throwing listener is
    const listeners = [...everyEvent, ...(targeted ?? [])]
    for (const listener of listeners) {
      try {
        listener(event)
      } catch {
        // A subscriber's failure is its own; the run and the other subscribers go on.
      }
    }
  }

  return {
    append(event) {
      try {
        forward?.append(event)
      } finally {
        deliver(event)
      }
    },
    appendLog(event) {
      deliver(event)
    },
    subscribe(listener, subscribeOptions) {
      const parent = subscribeOptions?.parentCallId
      let set: Set<SessionLogHubListener>
      if (parent === undefined) set = everyEvent
      else {
        set = byParent.get(parent) ?? new Set()
        byParent.set(parent, set)
      }
      // Wrap so the same function subscribed twice is two subscriptions.
      const entry: SessionLogHubListener = (event) => listener(event)
      set.add(entry)
      count++
      let live = true
      return () => {
        if (!live) return
        live = false
        set.delete(entry)
        count--
        if (
          set.size === 0 &&
          // Stryker disable next-line ConditionalExpression: byParent never holds the every-event set, so for it the check below is false anyway
          parent !== undefined &&
          // Stryker disable next-line ConditionalExpression: a run's set empties only when its last live entry leaves, while it is still the map's value
          byParent.get(parent) === set
        )
          byParent.delete(parent)
      }
    },
    get subscriberCount() {
      return count
    },
    get runCount() {
      return byParent.size
    },
  }
}
