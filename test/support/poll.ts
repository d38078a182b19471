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
