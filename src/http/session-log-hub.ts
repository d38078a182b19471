/**
 * A session-log sink that fans events out to live subscribers, so the HTTP app can
 * stream each Code Mode sub-call of a run as it starts and settles.
 *
 * @module
 */
import type { SessionLogHub, SessionLogHubEvent, SessionLogHubListener, SessionLogSink } from '../runtime-types.js'

export type { CodeLogEvent, SessionLogHub, SessionLogHubEvent, SessionLogHubListener, SessionLogSubscribeOptions } from '../runtime-types.js'

/** Options of {@link createSessionLogHub}. */
export interface SessionLogHubOptions {
  /** A durable sink that receives every session-log event first (e.g. the in-memory log). */
  readonly forward?: SessionLogSink
}

/**
 * Creates a fan-out session-log sink. Every runtime has one (`runtime.events`, made by
 * `createToolRuntime`); the HTTP app subscribes to it per streamed run, by the run's call id.
 *
 * @example
 * ```ts
 * const hub = createSessionLogHub({ forward: createMemorySessionLog() })
 * hub.subscribe((event) => console.log(event.type), { parentCallId: 'run-1' })
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
