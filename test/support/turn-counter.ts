/**
 * Counts the host's turns: a chained `setTimeout(0)` that ticks once a turn while the code under
 * test runs, so a test can see whether that code let the host turn (a yield) or held it.
 * @module
 */

/** Starts counting; `turns()` reads the count, `reset()` zeroes it, `stop()` ends the chain. */
export function countTurns(): { turns: () => number; reset: () => void; stop: () => void } {
  let turns = 0
  let ticking = true
  const tick = (): void => {
    turns++
    if (ticking) setTimeout(tick, 0)
  }
  setTimeout(tick, 0)
  return { turns: () => turns, reset: () => void (turns = 0), stop: () => void (ticking = false) }
}
