/**
 * Delivers a thread's messages to the host in time slices, so a burst of ten thousand unawaited
 * binding calls does not hold the host's event loop.
 * @module
 */

/**
 * Runs `then` in a later turn of the event loop (a macrotask), after every `then` given before it.
 * A platform passes its own (a page: a MessageChannel, whose turns a hidden tab does not throttle).
 */
export type NextTurn = (then: () => void) => void

/** The default {@link NextTurn}: a 0 ms timer. */
export const timerTurn: NextTurn = (then) => {
  setTimeout(then, 0)
}

/** How long one slice may handle messages before the rest wait for the next turn of the event loop. */
export const DELIVERY_SLICE_MS = 4

/** Messages one slice handles at most: their handlers' promise work runs after the slice, unmeasured by its clock. */
export const DELIVERY_SLICE_MESSAGES = 64

/** A listener wrapped by {@link slicedDelivery}. */
export interface SlicedListener {
  /** Takes one message: handled now while the slice has room, else queued in order. */
  (data: unknown): void
  /**
   * Runs `then` once every message taken so far has been handled (at once when none
   * waits): a thread's exit is told after the messages it sent before it, as without slices.
   */
  whenDrained(then: () => void): void
}

/**
 * Wraps `listener` so that messages reach it in order, in slices of at most {@link
 * DELIVERY_SLICE_MS} ms and {@link DELIVERY_SLICE_MESSAGES} messages: a message that arrives while
 * the current slice has room is handled at once (no added latency for a lone call); past that it is
 * queued and handled after a macrotask (`nextTurn`), so timers, input and rendering run in between.
 */
export function slicedDelivery(listener: (data: unknown) => void, nextTurn: NextTurn = timerTurn): SlicedListener {
  let queue: unknown[] = []
  let drained: Array<() => void> = []
  let head = 0
  /** When the open slice began, or -1 when none is open (the next message opens one). */
  let sliceStart = -1
  let handled = 0

  const room = (): boolean => handled < DELIVERY_SLICE_MESSAGES && performance.now() - sliceStart < DELIVERY_SLICE_MS
  const open = (): void => {
    sliceStart = performance.now()
    handled = 0
    // The slice ends with the current burst of events: the next macrotask closes it.
    nextTurn(close)
  }
  const deliver = (data: unknown): void => {
    handled++
    listener(data)
  }
  function close(): void {
    sliceStart = -1
    if (head === queue.length) return
    open()
    try {
      while (head < queue.length && room()) {
        const data = queue[head]
        queue[head++] = undefined
        deliver(data)
      }
    } finally {
      if (head === queue.length) {
        queue = []
        head = 0
        const waiting = drained
        drained = []
        for (const then of waiting) then()
      }
    }
  }

  const take = (data: unknown): void => {
    // Behind queued messages, a message waits its turn: order is kept.
    if (head < queue.length) {
      queue.push(data)
      return
    }
    if (sliceStart < 0) open()
    if (room()) deliver(data)
    else queue.push(data)
  }
  return Object.assign(take, {
    whenDrained(then: () => void): void {
      if (head === queue.length) then()
      else drained.push(then)
    },
  })
}

/** When the current turn of the event loop began host work that yields cooperatively, or -1. */
let turnStart = -1

/**
 * A turn start older than this is stale: the timer that ends a turn did not fire (an edge runtime
 * drops a finished request's timers, so a module-level mark outlives its turn).
 */
const STALE_TURN_MS = 250

/** Steps that never yield in one turn, however slow: a small `Promise.all` of tools stays concurrent. */
const STEPS_BEFORE_YIELD = 16

let turnSteps = 0

/** How the host's cooperative work waits for the next turn: {@link yieldHostTurnsWith}. */
let hostNextTurn: NextTurn = timerTurn

/**
 * Makes {@link hostTurn} end its turns with `nextTurn` from now on, in this realm: a platform
 * whose timers can be throttled (a page) passes a turn that is not.
 */
export function yieldHostTurnsWith(nextTurn: NextTurn): void {
  hostNextTurn = nextTurn
}

/**
 * Runs `task` on the host's next turn, the way {@link hostTurn} waits for it: a 0 ms timer, or the
 * turn a platform passed to {@link yieldHostTurnsWith} (a page's, which a hidden tab does not throttle).
 */
export function afterHostTurn(task: () => void): void {
  hostNextTurn(task)
}

const endTurn = (): void => {
  turnStart = -1
  turnSteps = 0
}

/**
 * Resolves at once while the current turn of the host's event loop has taken fewer than {@link
 * STEPS_BEFORE_YIELD} steps or spent less than {@link DELIVERY_SLICE_MS} ms on cooperative work,
 * else after a macrotask ({@link yieldHostTurnsWith}).
 */
export function hostTurn(): Promise<void> | undefined {
  const now = performance.now()
  if (turnStart < 0 || now - turnStart > STALE_TURN_MS) {
    turnStart = now
    turnSteps = 1
    hostNextTurn(endTurn)
    return undefined
  }
  if (++turnSteps <= STEPS_BEFORE_YIELD || now - turnStart < DELIVERY_SLICE_MS) return undefined
  return new Promise((resolve) =>
    hostNextTurn(() => {
      endTurn()
      resolve()
    }),
  )
}

/** Runs `then` once every one of `listeners` has handled what it has taken so far. */
export function whenAllDrained(listeners: readonly SlicedListener[], then: () => void): void {
  let waiting = listeners.length + 1
  const one = (): void => {
    if (--waiting === 0) then()
  }
  for (const listener of listeners) listener.whenDrained(one)
  one()
}
