/**
 * The page's turns through a MessageChannel: a hidden tab throttles its timers (a wake-up a
 * second, then a minute), and a chain of 0 ms timers is clamped to 4 ms; a message is neither.
 * @module
 */
import type { NextTurn } from '../../src/code-runtime/sliced-delivery.js'

let waiting: Array<() => void> = []
let channel: MessageChannel | undefined

function runWaiting(): void {
  const due = waiting
  waiting = []
  for (const then of due) {
    try {
      then()
    } catch (error) {
      // Reported as a timer's exception would be, and the others still run.
      queueMicrotask(() => {
        throw error
      })
    }
  }
}

/**
 * Runs `then` in a later task of the page's event loop, after every `then` queued before it;
 * one message for all that wait, and what they queue waits for the task after. The channel
 * is made on first use (an import costs nothing).
 */
export const channelTurn: NextTurn = (then) => {
  waiting.push(then)
  if (waiting.length > 1) return
  if (channel === undefined) {
    channel = new MessageChannel()
    channel.port1.onmessage = runWaiting
  }
  channel.port2.postMessage(undefined)
}
