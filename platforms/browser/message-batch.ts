/**
 * Batches the messages between the page and a sandbox Web Worker under a burst (issue 34 item 6).
 * @module
 */

/** Messages of one turn sent one by one before a burst is batched (the worker's default). */
export const AT_ONCE_MESSAGES = 16

/**
 * The page's: its first reply of a turn goes at once, the rest of the turn's in batches. A page
 * turn ends with a macrotask, and a flood's replies come a slice at a time, each slice a turn:
 * sixteen one by one per turn were 2,536 of the 2,734 posts a 10,000-call flood cost the page
 * (a post wakes the worker's thread: 301 ms of the page's CPU in one profile, more than the
 * registry's dispatch).
 */
export const PAGE_AT_ONCE_MESSAGES = 1

/** Messages in one batch at most. */
export const BATCH_MESSAGES = 64

/**
 * Wraps `send` (one `postMessage`) so that a burst of text messages is sent as arrays of at
 * most {@link BATCH_MESSAGES}. Each message is one task of the receiver's event loop, run
 * oldest first: a flood of 10,000 calls queued 10,000 tasks on the page, and its timers,
 * input and frames waited behind them (0.3 to 0.65 s in the playground). A lone message and
 * the first `atOnce` of a turn go at once (no added latency; {@link AT_ONCE_MESSAGES} by
 * default, the page passes {@link PAGE_AT_ONCE_MESSAGES}); past them a
 * text message waits for a full batch or for `later` to end the turn (a microtask in the
 * worker, whose burst is one synchronous job; a macrotask on the page, whose replies come
 * from many microtasks). A message that is not text flushes the batch, then goes alone, so
 * a failed structured clone throws where it was sent. Order is kept; the other side reads
 * batches with {@link eachMessage} (neither side's own messages are arrays).
 */
export function batchedSender(send: (message: unknown) => void, later: (then: () => void) => void = queueMicrotask, atOnce: number = AT_ONCE_MESSAGES): (message: unknown) => void {
  /** Messages sent one by one this turn. */
  let sent = 0
  let batch: string[] = []
  let turnOpen = false
  const flush = (): void => {
    if (batch.length === 0) return
    const full = batch
    batch = []
    send(full)
  }
  const endTurn = (): void => {
    turnOpen = false
    sent = 0
    flush()
  }
  return (message: unknown): void => {
    if (!turnOpen) {
      turnOpen = true
      later(endTurn)
    }
    if (typeof message !== 'string') {
      flush()
      send(message)
      return
    }
    // Batched only past the first of the turn, so nothing sent one by one overtakes a batch.
    if (sent < atOnce && batch.length === 0) {
      sent++
      send(message)
      return
    }
    batch.push(message)
    if (batch.length >= BATCH_MESSAGES) flush()
  }
}

/** Hands `data` to `each`: every message of a batch in order, or the one message it is. */
export function eachMessage(data: unknown, each: (message: unknown) => void): void {
  if (!Array.isArray(data)) {
    each(data)
    return
  }
  for (const message of data) each(message)
}
