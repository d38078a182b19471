/**
 * A setup file of vitest.stryker.config.ts only: ends, at the end of each test file, the
 * timers that file's code left pending, as the end of a file does under `npm test`.
 *
 * Why: under Stryker all files of a run share one thread and module graph
 * (`isolate: false`), so work a file leaves behind keeps running into the files after it:
 * an approval broker polling for a decision no test will take re-arms its timer forever.
 * When a later file installs fake timers, such a chain re-arms into the fake clock, and
 * that file's assertions about its own timers see a stranger's: `vi.getTimerCount()` read
 * 5 instead of 2, and `vi.runAllTimersAsync()` gave up after 10,000 timers ("assuming an
 * infinite loop"), failing full dry runs in one order of the files and not in another.
 * Under `npm test` every file runs in its own realm, whose timers end with it.
 *
 * How: the global `setTimeout`, `setInterval` and `setImmediate` are wrapped once, to keep
 * the timers still pending. After each file's own `afterAll` hooks the timers already due
 * get their turn (2 ms: a module's "end of this turn" mark, like sliced-delivery.ts's, is
 * shared by every file and must still be reset by its timer), then the ones left are
 * cleared. vitest's own timers are untouched (it keeps the functions it found at start);
 * timers made while a test's fake timers are installed live in the fake clock, which ends
 * with them.
 */
import { afterAll } from 'vitest'

type Clear = (handle: unknown) => void

interface TimerTracking {
  /** Pending timers and how to clear each. */
  readonly pending: Map<unknown, Clear>
  /** The real `setTimeout`, for the harness's own wait. */
  readonly wait: (ms: number) => Promise<void>
}

const KEY = Symbol.for('toolyard.mutation-timers')
const scope = globalThis as typeof globalThis & { [KEY]?: TimerTracking }

function install(): TimerTracking {
  const { setTimeout: timeout, clearTimeout: clearOne, setInterval: interval, clearInterval: clearEvery, setImmediate: immediate, clearImmediate: clearSoon } = globalThis
  const tracking: TimerTracking = { pending: new Map(), wait: (ms) => new Promise((resolve) => void timeout(resolve, ms)) }
  const clearTimer: Clear = (handle) => clearOne(handle as Parameters<typeof clearOne>[0])
  const clearRepeating: Clear = (handle) => clearEvery(handle as Parameters<typeof clearEvery>[0])
  const clearImmediateOne: Clear = (handle) => clearSoon(handle as Parameters<typeof clearSoon>[0])
  // A one-shot timer is pending until it fires or is cleared; a repeating one until cleared.
  const once = <A extends unknown[]>(start: (run: (...args: A) => void) => unknown, callback: (...args: A) => void, clear: Clear) => {
    const handle = start((...args: A) => {
      tracking.pending.delete(handle)
      callback(...args)
    })
    tracking.pending.set(handle, clear)
    return handle
  }
  Object.assign(globalThis, {
    setTimeout: (callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => once((run) => timeout(run, ms, ...args), callback, clearTimer),
    setImmediate: (callback: (...args: unknown[]) => void, ...args: unknown[]) => once((run) => immediate(run, ...args), callback, clearImmediateOne),
    setInterval: (callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
      const handle = interval(callback, ms, ...args)
      tracking.pending.set(handle, clearRepeating)
      return handle
    },
    clearTimeout: (handle: Parameters<typeof clearOne>[0]) => (tracking.pending.delete(handle), clearOne(handle)),
    clearInterval: (handle: Parameters<typeof clearEvery>[0]) => (tracking.pending.delete(handle), clearEvery(handle)),
    clearImmediate: (handle: Parameters<typeof clearSoon>[0]) => (tracking.pending.delete(handle), clearSoon(handle)),
  })
  return tracking
}

// Setup files run again before every file; the wrapping happens once per thread.
const tracking = (scope[KEY] ??= install())

afterAll(async () => {
  await tracking.wait(2)
  for (const [handle, clear] of tracking.pending) clear(handle)
  tracking.pending.clear()
})
