/**
 * The broker's subscriber list, drained by one loop so every subscriber hears events in one
 * order (an auto-approver's `decided` waits until all heard `requested`). Private.
 *
 * @module
 */

/** A fan-out whose listeners can never break the emitter. */
export interface EventFanOut<E> {
  /** Queues `event`, and delivers the queue unless a delivery is already running. */
  emit(event: E): void
  /** Adds a listener (none after `close()`); the same function twice is two subscriptions. Returns an idempotent remover. */
  add(listener: (event: E) => void): () => void
  /**
   * Removes every listener and refuses new ones. Called while a delivery runs (a listener
   * disposed the broker), it waits until the queue is drained, so the events that
   * disposal queued still reach everyone who was subscribed.
   */
  close(): void
  /** How many listeners are registered. */
  readonly size: number
}

const ignore = (): void => {}

function call<E>(listener: (event: E) => void, event: E): void {
  try {
    const returned: unknown = listener(event)
    // An async listener's rejection is its own too; never an unhandled rejection.
    if (typeof returned === 'object' && returned !== null) Promise.resolve(returned).then(ignore, ignore)
  } catch {
    // A subscriber's failure is its own; the broker and the other subscribers go on.
  }
}

/** Creates an {@link EventFanOut}. */
export function createEventFanOut<E>(): EventFanOut<E> {
  const listeners = new Set<{ readonly listener: (event: E) => void }>()
  const queue: E[] = []
  let delivering = false
  let closed = false

  return {
    emit(event) {
      queue.push(event)
      if (delivering) return
      delivering = true
      try {
        for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
          // Snapshot: a listener may unsubscribe itself or another one while we iterate.
          for (const entry of [...listeners]) if (listeners.has(entry)) call(entry.listener, next)
        }
      } finally {
        delivering = false
        if (closed) listeners.clear()
      }
    },
    add(listener) {
      if (closed) return () => {}
      const entry = { listener }
      listeners.add(entry)
      return () => {
        listeners.delete(entry)
      }
    },
    close() {
      closed = true
      if (!delivering) listeners.clear()
    },
    get size() {
      return listeners.size
    },
  }
}
