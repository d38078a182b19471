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
 * DELIVERY_SLICE_MESSAGES} messages and {@link DELIVERY_SLICE_MS} ms of the host's turn: a message
 * that arrives while the current slice has room is handled at once (no added latency for a lone
 * call); past that it is queued and handled after a macrotask (`nextTurn`), so timers, input and
 * rendering run in between. The slice's clock is the host's turn ({@link hostTurn}): the calls a
 * slice starts run their pipelines in the same task, after it, and they yield once the slice and
 * they together have taken the turn's time. Each clock of its own let a task of the page run a
 * 4 ms slice and then 4 ms and more of its calls' promise work (10 to 17 ms of CPU in a
 * 10,000-call flood, the longest tasks the page ran).
 */
export function slicedDelivery(listener: (data: unknown) => void, nextTurn: NextTurn = timerTurn): SlicedListener {
  let queue: unknown[] = []
  let drained: Array<() => void> = []
  let head = 0
  /** Whether a slice is open (the next message opens one when none is). */
  let sliceOpen = false
  /** The host turn the open slice began: its `close` ends it. */
  let sliceTurn = 0
  let handled = 0

  const room = (): boolean => {
    if (handled >= DELIVERY_SLICE_MESSAGES) return false
    const now = performance.now()
    return now - turnBegun(now) < DELIVERY_SLICE_MS
  }
  /**
   * Opens a slice, always at the start of a task (a message's event, or `close`): it begins a turn
   * of the host's (whatever turn an earlier task began is over), which its `close` ends.
   */
  const open = (): void => {
    sliceOpen = true
    handled = 0
    sliceTurn = beginTurn(performance.now(), false)
    // The slice ends with the current burst of events: the next macrotask closes it.
    nextTurn(close)
  }
  const deliver = (data: unknown): void => {
    handled++
    listener(data)
  }
  function close(): void {
    sliceOpen = false
    endTurnNumber(sliceTurn)
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
    if (!sliceOpen) open()
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

/** The current turn's number: a turn's end, queued for a later task, ends that turn only. */
let turnNumber = 0

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

/** Ends turn `number` if it is still the current one (a later turn begun meanwhile runs on). */
const endTurnNumber = (number: number): void => {
  if (turnNumber === number) endTurn()
}

/**
 * Begins a turn of the host's at `now` (ending the current one) and returns its number; with
 * `queueEnd`, its end is queued for the next macrotask (else the caller ends it). One clock for a
 * turn's delivery slices and its cooperative steps ({@link slicedDelivery}, {@link hostTurn}).
 */
function beginTurn(now: number, queueEnd: boolean): number {
  turnStart = now
  turnSteps = 0
  const number = ++turnNumber
  if (queueEnd) hostNextTurn(() => endTurnNumber(number))
  return number
}

/** The start of the host's current turn, which begins `now` when none is open (or the open one is stale). */
function turnBegun(now: number): number {
  if (turnStart < 0 || now - turnStart > STALE_TURN_MS) beginTurn(now, true)
  return turnStart
}

/**
 * Resolves at once while the current turn of the host's event loop has taken fewer than {@link
 * STEPS_BEFORE_YIELD} steps or spent less than {@link DELIVERY_SLICE_MS} ms on cooperative work
 * (delivery slices included), else after a macrotask ({@link yieldHostTurnsWith}).
 */
export function hostTurn(): Promise<void> | undefined {
  const now = performance.now()
  const start = turnBegun(now)
  if (++turnSteps <= STEPS_BEFORE_YIELD || now - start < DELIVERY_SLICE_MS) return undefined
  const number = turnNumber
  return new Promise((resolve) =>
    hostNextTurn(() => {
      // A slice that ran earlier in this task began a turn of its own: the resumed step shares it.
      endTurnNumber(number)
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
