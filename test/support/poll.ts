/**
 * The one polling helper of the tests: waits for a probe to hold, by deadline (never by a count
 * of tries, which a loaded machine turns into a flaky test).
 *
 * @module
 */

/**
 * Polls `probe` every `everyMs` until it returns something other than `undefined` or `false`
 * (`true` for a boolean check), and resolves with that; rejects with `timed out waiting for
 * <what>` after `ms` (`what` may be a function, read then: it can say what the probe last saw).
 * The probe may be async; a probe that throws rejects at once.
 */
export async function until<T>(
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  what: string | (() => string) = 'condition',
  ms = 20_000,
  everyMs = 5,
): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await probe()
    if (value !== undefined && value !== false) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === 'function' ? what() : what}`)
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}

/**
 * Waits until `check` stops throwing (an `expect(...)` that holds), by the same deadline as
 * {@link until}; the timeout's message is the check's last failure. For assertions that read
 * better than a boolean probe; vi.waitFor's 1 s default was a race on a loaded machine.
 */
export async function eventually(check: () => unknown, ms = 20_000): Promise<void> {
  let last: unknown
  await until(
    async () => {
      try {
        await check()
        return true
      } catch (error) {
        last = error
        return false
      }
    },
    () => `a check to hold: ${last instanceof Error ? last.message : String(last)}`,
    ms,
  )
}
