/**
 * The small guards many modules share: a plain-object check and the positive-integer option
 * reader, one copy each.
 *
 * @module
 */

/** True for a non-null object that is not an array (a JSON object, an options bag). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * `value` when it is a positive safe integer, `fallback` when it is `undefined`; otherwise
 * calls `fail` with `<name> must be a positive integer` (`null` is not absent: it fails).
 */
export function positiveInteger(name: string, value: unknown, fallback: number, fail: (message: string) => never): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) fail(`${name} must be a positive integer`)
  return value
}
