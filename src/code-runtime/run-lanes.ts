/**
 * Runs waiting for a slot, one queue per lane, lanes served in turn (issue 34 item 5): a short run
 * is stuck neither behind thousands queued in another lane nor behind a burst in its own.
 * @module
 */

/** The longest `CodeRunRequest.lane`, in UTF-16 units (a principal or agent label, prefixed). */
export const MAX_LANE_CHARS = 256

/**
 * Runs a lane holds before it counts as congested and its turns alternate between its oldest and
 * its newest run (adaptive LIFO, as servers under a backlog serve fresh requests first). 64 waiting
 * runs is a backlog whatever the slot count; a lane at or below it stays strictly first in, first out.
 */
export const CONGESTED_LANE_RUNS = 64

/** Why `lane` is not a valid `CodeRunRequest.lane` (a `TypeError:` message), or `undefined` when it is (or is absent). */
export function invalidLane(lane: unknown): string | undefined {
  if (lane === undefined || (typeof lane === 'string' && lane.length > 0 && lane.length <= MAX_LANE_CHARS)) return undefined
  return `TypeError: request.lane must be a string of 1–${MAX_LANE_CHARS} characters`
}

interface Entry<T> {
  readonly item: T
  readonly lane: Lane<T>
  readonly detach: (() => void) | undefined
  prev: Entry<T> | undefined
  next: Entry<T> | undefined
}

interface Lane<T> {
  readonly name: string
  head: Entry<T> | undefined
  tail: Entry<T> | undefined
  /** Runs waiting in this lane. */
  size: number
  /** A congested lane's next turn takes its newest run (turns alternate: oldest, newest, oldest…). */
  newestNext: boolean
}

/**
 * Lanes served in turn, each first in, first out until it holds more than {@link
 * CONGESTED_LANE_RUNS} runs; then its turns alternate between its oldest and its newest run. Every
 * run still waits at most twice the turns of its lane it would first in, first out (every other
 * turn takes the oldest), while a run that arrives behind a burst of thousands (runs that will
 * each wait for a person, say) starts within two turns instead of after all of them. Every
 * operation is O(1): 2,000 aborts of queued runs cost 2,000 steps, not 2,000².
 */
export class LaneQueue<T extends object> {
  /** Lanes with a run waiting, in the order they are served (the next is the first). */
  readonly #lanes = new Map<string, Lane<T>>()
  readonly #entries = new Map<T, Entry<T>>()
  /**
   * The lane that started a run last goes to the back at the next {@link LaneQueue.shift}, not at
   * once: a lane that gets its first run meanwhile (while that run runs) is then served before it.
   */
  #served: string | undefined

  /** Runs waiting, in every lane. */
  get size(): number {
    return this.#entries.size
  }

  /** Runs waiting in `lane`. */
  sizeOf(lane: string): number {
    return this.#lanes.get(lane)?.size ?? 0
  }

  /** Queues `item` at the back of `lane`; `detach` is called when it leaves (served or removed). */
  push(lane: string, item: T, detach?: () => void): void {
    let queue = this.#lanes.get(lane)
    if (queue === undefined) {
      queue = { name: lane, head: undefined, tail: undefined, size: 0, newestNext: false }
      this.#lanes.set(lane, queue)
    }
    const entry: Entry<T> = { item, lane: queue, detach, prev: queue.tail, next: undefined }
    if (queue.tail === undefined) queue.head = entry
    else queue.tail.next = entry
    queue.tail = entry
    queue.size++
    this.#entries.set(item, entry)
  }

  /** `lane` started a run (from this queue or straight on a free thread): its turn is taken. */
  started(lane: string): void {
    this.#served = lane
  }

  /** The next run: the oldest of the lane whose turn it is (every other turn its newest, while the lane is congested). */
  shift(): T | undefined {
    const served = this.#served === undefined ? undefined : this.#lanes.get(this.#served)
    if (served !== undefined) {
      // Its turn is over: to the back of the turns.
      this.#lanes.delete(served.name)
      this.#lanes.set(served.name, served)
    }
    const lane = this.#lanes.values().next().value
    if (lane === undefined) return undefined
    this.#served = lane.name
    let entry = lane.head!
    if (lane.size > CONGESTED_LANE_RUNS) {
      if (lane.newestNext) entry = lane.tail!
      lane.newestNext = !lane.newestNext
    } else lane.newestNext = false
    this.#unlink(entry)
    return entry.item
  }

  /** Takes `item` out wherever it waits; `false` when it is not queued. */
  remove(item: T): boolean {
    const entry = this.#entries.get(item)
    if (entry === undefined) return false
    this.#unlink(entry)
    return true
  }

  #unlink(entry: Entry<T>): void {
    const lane = entry.lane
    if (entry.prev === undefined) lane.head = entry.next
    else entry.prev.next = entry.next
    if (entry.next === undefined) lane.tail = entry.prev
    else entry.next.prev = entry.prev
    lane.size--
    if (lane.head === undefined) this.#lanes.delete(lane.name)
    this.#entries.delete(entry.item)
    entry.detach?.()
  }
}
