/**
 * Time-sliced delivery of a thread's messages and the host's cooperative turns
 * (src/code-runtime/sliced-delivery.ts) as units, on a clock the test moves: how many
 * messages one slice handles (DELIVERY_SLICE_MESSAGES and DELIVERY_SLICE_MS, each at its
 * boundary), that order is kept across slices, when a drain is told, and when `hostTurn`
 * yields. sandbox/call-flood.test.ts checks the same on real threads, end to end.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { DELIVERY_SLICE_MESSAGES, DELIVERY_SLICE_MS, afterHostTurn, hostTurn, slicedDelivery, timerTurn, whenAllDrained, yieldHostTurnsWith } from '../../../src/code-runtime/sliced-delivery.js'

/**
 * The clock `performance.now` reads during a test, in ms. It starts at 0, a time like any
 * other: the modules mark "no slice open" and "no turn begun" with -1, not with 0.
 */
let clock = 0

beforeEach(async () => {
  // A turn mark left by an earlier test file (one module graph) ends at its real timer.
  await new Promise((resolve) => setTimeout(resolve, 0))
  clock = 0
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
  vi.spyOn(performance, 'now').mockImplementation(() => clock)
})

afterEach(() => {
  vi.runOnlyPendingTimers()
  vi.useRealTimers()
  vi.restoreAllMocks()
})

/** A listener recording what it was given, and the wrapped one. */
function recorder(onMessage: (data: number) => void = () => {}) {
  const seen: number[] = []
  const deliver = slicedDelivery((data) => {
    seen.push(data as number)
    onMessage(data as number)
  })
  return { seen, deliver }
}

/** One turn of the event loop: the timers pending now run, the ones they set wait for the next turn. */
const macrotask = () => vi.runOnlyPendingTimers()

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i)

describe('slicedDelivery', () => {
  it('handles a lone message at once, before returning', () => {
    const { seen, deliver } = recorder()
    deliver(7)
    expect(seen).toEqual([7])
  })

  it('handles exactly DELIVERY_SLICE_MESSAGES messages in one slice and queues the next, in order', () => {
    expect(DELIVERY_SLICE_MESSAGES).toBe(64)
    const { seen, deliver } = recorder()
    for (let i = 0; i < 64; i++) deliver(i)
    expect(seen).toEqual(range(0, 64))
    deliver(64)
    deliver(65)
    expect(seen).toHaveLength(64)
    macrotask()
    expect(seen).toEqual(range(0, 66))
  })

  it('ends a slice once DELIVERY_SLICE_MS have passed since it opened, not before', () => {
    expect(DELIVERY_SLICE_MS).toBe(4)
    const { seen, deliver } = recorder()
    deliver(0)
    clock += 3.9
    deliver(1)
    expect(seen).toEqual([0, 1])
    clock += 0.1
    deliver(2)
    expect(seen).toEqual([0, 1])
    macrotask()
    expect(seen).toEqual([0, 1, 2])
  })

  it('keeps a message behind queued ones even when the open slice has room (a handler threw mid-slice)', () => {
    const { seen, deliver } = recorder((data) => {
      if (data === 65) throw new Error('handler')
    })
    for (let i = 0; i < 70; i++) deliver(i)
    expect(seen).toHaveLength(64)
    // The next slice opens, handles 64 and 65, and stops at the throw: 66 to 69 still wait
    // while the slice has room for 62 more. A new message must not overtake them.
    expect(() => macrotask()).toThrow('handler')
    expect(seen).toEqual(range(0, 66))
    deliver(70)
    expect(seen).toEqual(range(0, 66))
    macrotask()
    expect(seen).toEqual(range(0, 71))
  })

  it('works through a long queue one slice per macrotask, each of at most DELIVERY_SLICE_MESSAGES', () => {
    const { seen, deliver } = recorder()
    for (let i = 0; i < 200; i++) deliver(i)
    expect(seen).toHaveLength(64)
    macrotask()
    expect(seen).toHaveLength(128)
    macrotask()
    expect(seen).toHaveLength(192)
    macrotask()
    expect(seen).toEqual(range(0, 200))
    expect(vi.getTimerCount()).toBe(1)
    macrotask()
    expect(vi.getTimerCount()).toBe(0)
  })

  it('cuts a queued slice by its clock too: a slow handler leaves the rest to the next macrotask', () => {
    const { seen, deliver } = recorder((data) => {
      if (data >= 64) clock += 2
    })
    for (let i = 0; i < 70; i++) deliver(i)
    expect(seen).toHaveLength(64)
    // 64 and 65 take 2 ms each: 66 finds the slice 4 ms old.
    macrotask()
    expect(seen).toEqual(range(0, 66))
    macrotask()
    expect(seen).toEqual(range(0, 68))
  })

  it('opens a fresh slice after the event loop turns: its count starts again', () => {
    const { seen, deliver } = recorder()
    for (let i = 0; i < 64; i++) deliver(i)
    macrotask()
    clock += 100
    for (let i = 64; i < 128; i++) deliver(i)
    expect(seen).toEqual(range(0, 128))
    deliver(128)
    expect(seen).toHaveLength(128)
  })

  it('goes on with the queue after a handler throws', () => {
    const { seen, deliver } = recorder((data) => {
      if (data === 66) throw new Error('handler')
    })
    for (let i = 0; i < 70; i++) deliver(i)
    expect(() => macrotask()).toThrow('handler')
    expect(seen).toEqual(range(0, 67))
    macrotask()
    expect(seen).toEqual(range(0, 70))
  })

  it('a handler that throws on a message handled at once throws to the sender; the next message is handled', () => {
    const { seen, deliver } = recorder((data) => {
      if (data === 0) throw new Error('first')
    })
    expect(() => deliver(0)).toThrow('first')
    deliver(1)
    expect(seen).toEqual([0, 1])
  })

  it('tells whenDrained at once when nothing waits, else after the last queued message, each waiter once and in order', () => {
    const { seen, deliver } = recorder()
    const told: string[] = []
    deliver(0)
    deliver.whenDrained(() => told.push(`idle:${seen.length}`))
    expect(told).toEqual(['idle:1'])
    for (let i = 1; i < 100; i++) deliver(i)
    deliver.whenDrained(() => told.push(`a:${seen.length}`))
    deliver.whenDrained(() => told.push(`b:${seen.length}`))
    expect(told).toEqual(['idle:1'])
    macrotask()
    expect(told).toEqual(['idle:1', 'a:100', 'b:100'])
    // A later backlog does not tell the earlier waiters again.
    for (let i = 100; i < 300; i++) deliver(i)
    vi.runAllTimers()
    expect(seen).toEqual(range(0, 300))
    expect(told).toEqual(['idle:1', 'a:100', 'b:100'])
  })

  it('tells a drain waiter even when the last slice ends in a throwing handler', () => {
    const { deliver } = recorder((data) => {
      if (data === 69) throw new Error('last')
    })
    for (let i = 0; i < 70; i++) deliver(i)
    let told = 0
    deliver.whenDrained(() => told++)
    expect(() => macrotask()).toThrow('last')
    expect(told).toBe(1)
  })
})

describe('whenAllDrained', () => {
  it('runs at once, once, with no listeners or none waiting', () => {
    let told = 0
    whenAllDrained([], () => told++)
    expect(told).toBe(1)
    const { deliver } = recorder()
    deliver(1)
    whenAllDrained([deliver, recorder().deliver], () => told++)
    expect(told).toBe(2)
  })

  it('waits for every listener, then runs once', () => {
    const a = recorder()
    const b = recorder()
    for (let i = 0; i < 70; i++) a.deliver(i)
    for (let i = 0; i < 200; i++) b.deliver(i)
    const told: number[] = []
    whenAllDrained([a.deliver, b.deliver], () => told.push(b.seen.length))
    macrotask()
    expect(a.seen).toHaveLength(70)
    expect(told).toEqual([])
    vi.runAllTimers()
    expect(told).toEqual([200])
  })
})

describe('hostTurn', () => {
  it('never yields within the first 16 steps of a turn, however long they take', () => {
    for (let step = 1; step <= 16; step++) {
      expect(hostTurn(), `step ${step}`).toBeUndefined()
      clock += 10
    }
    // Still within 250 ms of the turn's start (160 ms), and past 16 steps and 4 ms: it yields.
    expect(hostTurn()).toBeInstanceOf(Promise)
  })

  it('past 16 steps, yields once DELIVERY_SLICE_MS have passed since the turn began, not before', () => {
    for (let step = 1; step <= 16; step++) expect(hostTurn()).toBeUndefined()
    clock += 3.9
    expect(hostTurn()).toBeUndefined()
    expect(hostTurn()).toBeUndefined()
    clock += 0.1
    expect(hostTurn()).toBeInstanceOf(Promise)
  })

  it('resolves its yield after a macrotask, and the next step starts a new turn', async () => {
    for (let step = 1; step <= 16; step++) hostTurn()
    clock += 5
    let resolved = false
    const wait = hostTurn()!.then(() => {
      resolved = true
    })
    await Promise.resolve()
    expect(resolved).toBe(false)
    await vi.runOnlyPendingTimersAsync()
    await wait
    expect(resolved).toBe(true)
    // A new turn: sixteen more steps run at once, the clock moved or not.
    for (let step = 1; step <= 16; step++) {
      expect(hostTurn(), `step ${step}`).toBeUndefined()
      clock += 5
    }
    expect(hostTurn()).toBeInstanceOf(Promise)
  })

  it('ends a turn at the next macrotask: its steps are counted again from one', () => {
    for (let step = 1; step <= 16; step++) hostTurn()
    clock += 5
    macrotask()
    for (let step = 1; step <= 16; step++) expect(hostTurn(), `step ${step}`).toBeUndefined()
    // The new turn began 0 ms ago: the 17th step does not yield yet.
    expect(hostTurn()).toBeUndefined()
  })

  it('treats a turn mark older than 250 ms as stale (its timer never fired) and starts a new turn', () => {
    for (let step = 1; step <= 16; step++) hostTurn()
    clock += 250
    // 250 ms old: still the same turn, which has taken 16 steps and more than 4 ms.
    expect(hostTurn()).toBeInstanceOf(Promise)
    // The turn-ending timers are dropped, as an edge runtime drops a finished request's.
    vi.clearAllTimers()
    clock += 0.5
    expect(hostTurn()).toBeUndefined()
    for (let step = 2; step <= 16; step++) expect(hostTurn(), `step ${step}`).toBeUndefined()
    clock += 4
    expect(hostTurn()).toBeInstanceOf(Promise)
  })
})

describe('yieldHostTurnsWith: the turn a platform passes (a page: a MessageChannel a hidden tab does not throttle)', () => {
  /** A turn source the test runs by hand: `flush()` runs the turns asked so far, in order. */
  function manualTurns() {
    const queued: Array<() => void> = []
    return {
      nextTurn: (then: () => void) => void queued.push(then),
      get size() {
        return queued.length
      },
      flush() {
        for (const then of queued.splice(0)) then()
      },
    }
  }

  it('afterHostTurn and hostTurn wait for that turn, not a timer; timerTurn puts the timer back', async () => {
    const turns = manualTurns()
    yieldHostTurnsWith(turns.nextTurn)
    try {
      const ran: string[] = []
      afterHostTurn(() => ran.push('task'))
      macrotask()
      expect(ran).toEqual([])
      expect(turns.size).toBe(1)
      turns.flush()
      expect(ran).toEqual(['task'])

      // A turn's end mark and its yield both come from the platform's turn.
      for (let step = 1; step <= 16; step++) expect(hostTurn(), `step ${step}`).toBeUndefined()
      expect(turns.size).toBe(1)
      clock += 5
      let resolved = false
      const wait = hostTurn()!.then(() => {
        resolved = true
      })
      await vi.runOnlyPendingTimersAsync()
      expect(resolved).toBe(false)
      turns.flush()
      await wait
      expect(resolved).toBe(true)
      // The turn ended with it: sixteen steps run at once again.
      for (let step = 1; step <= 16; step++) expect(hostTurn(), `step ${step}`).toBeUndefined()
      turns.flush()
    } finally {
      yieldHostTurnsWith(timerTurn)
    }
    const ran: string[] = []
    afterHostTurn(() => ran.push('timer'))
    expect(turns.size).toBe(0)
    macrotask()
    expect(ran).toEqual(['timer'])
  })
})
