/**
 * Timers the test fires: an expiry or a budget happens when the test says so, never because a
 * loaded machine was slow between two awaits.
 *
 * @module
 */
import { vi } from 'vitest'

/**
 * Spies on `setTimeout`/`clearTimeout` (undo with `vi.restoreAllMocks()`): each timer armed for
 * more than `delay / 2` and at most `delay` ms (code arms its expiry with what is left of it, a ms
 * or more less under load) is tracked in `live` until it fires or is cleared; `fireAll()` clears
 * and runs the live ones at once. Other timers pass through untouched.
 */
export function heldTimers(delay: number): { readonly live: ReadonlyMap<unknown, () => void>; fireAll(): void } {
  const live = new Map<unknown, () => void>()
  const realSet = globalThis.setTimeout
  const realClear = globalThis.clearTimeout
  vi.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: () => void, ms?: number) => {
    if (ms === undefined || ms > delay || ms <= delay / 2) return realSet(fn, ms)
    const handle: unknown = realSet(() => {
      live.delete(handle)
      fn()
    }, ms)
    live.set(handle, fn)
    return handle
  }) as typeof setTimeout)
  vi.spyOn(globalThis, 'clearTimeout').mockImplementation(((handle: Parameters<typeof clearTimeout>[0]) => {
    live.delete(handle)
    realClear(handle)
  }) as typeof clearTimeout)
  const fireAll = () => {
    for (const [handle, fn] of [...live]) {
      live.delete(handle)
      realClear(handle as Parameters<typeof clearTimeout>[0])
      fn()
    }
  }
  return { live, fireAll }
}
