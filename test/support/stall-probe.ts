/**
 * A responsiveness probe for tests, in every runtime (Node, Chromium): while `during`
 * runs, a 2 ms interval on the calling thread measures the longest gap between its ticks
 * (`stall`, in ms) and, with a {@link TickCounter}, the most events counted between two
 * ticks (`burst`). A count does not grow with the machine's load as a time does, so
 * tests that must fail on old code assert the burst and keep only a wide time bound.
 */

/** Events the code under test counts (`counter.count++`); the probe reads and resets it each tick. */
export interface TickCounter {
  count: number
}

/** What {@link maxStall} measured, and what `during` returned. */
export interface StallFigures<T> {
  readonly stall: number
  readonly burst: number
  readonly value: T
}

/** Runs `during` under the probe (see the module comment). */
export async function maxStall<T>(during: () => Promise<T>, counter: TickCounter = { count: 0 }): Promise<StallFigures<T>> {
  let last = performance.now()
  let stall = 0
  let burst = 0
  counter.count = 0
  const timer = setInterval(() => {
    const now = performance.now()
    stall = Math.max(stall, now - last)
    last = now
    burst = Math.max(burst, counter.count)
    counter.count = 0
  }, 2)
  try {
    const value = await during()
    return { stall, burst: Math.max(burst, counter.count), value }
  } finally {
    clearInterval(timer)
  }
}
