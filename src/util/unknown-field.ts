/**
 * Naming a field or option the receiver does not read, the closest expected one and all of
 * them: one wording for request bodies, JSON-RPC messages and the factories' options.
 * @module
 */
import { boundedDistance } from '../code-runtime/closest-names.js'

/** Longer names are not compared for a suggestion (the distance costs their length times the field's). */
const MAX_SUGGESTED_NAME = 64

/** Whether `short` abbreviates `long`: same first letter, then its letters in order (`args` → `arguments`). */
function abbreviates(short: string, long: string): boolean {
  if (short.length < 3 || short.length >= long.length || short[0] !== long[0]) return false
  let at = 0
  for (const ch of long) if (ch === short[at]) at++
  return at >= short.length
}

/** The allowed field `name` most likely meant: one it abbreviates, or one at most two edits away. */
function closestField(name: string, allowed: readonly string[]): string | undefined {
  if (name.length === 0 || name.length > MAX_SUGGESTED_NAME) return undefined
  const lower = name.toLowerCase()
  const abbreviated = allowed.find((field) => abbreviates(lower, field.toLowerCase()))
  if (abbreviated !== undefined) return abbreviated
  let best: string | undefined
  let bestDistance = 3
  for (const field of allowed) {
    // The sandbox's own "did you mean" distance (adjacent transpositions cost one edit), stopped past two edits.
    const distance = boundedDistance(lower, field.toLowerCase(), 2)
    if (distance < bestDistance) [best, bestDistance] = [field, distance]
  }
  return best
}

/**
 * `name` quoted for a message: JSON-quoted, at most {@link MAX_SUGGESTED_NAME} characters of it and
 * its length past that, so a name a client or a program chose (a tool name in a URL, an unknown
 * field) is never echoed back whole (a 16 KB path segment, say).
 * @example
 * ```ts
 * quoteName('nope') // '"nope"'
 * quoteName('a'.repeat(5000)) // '"aaaa…aaaa"… (5000 characters)', 64 a's quoted
 * ```
 */
export function quoteName(name: string, prefix = ''): string {
  return name.length > MAX_SUGGESTED_NAME ? `${JSON.stringify(prefix + name.slice(0, MAX_SUGGESTED_NAME))}… (${name.length} characters)` : JSON.stringify(prefix + name)
}

/**
 * Why a JSON object carries a field the receiver does not read, or `undefined` when every own key
 * is in `allowed`.
 * @example
 * ```ts
 * unknownFieldMessage({ args: {} }, ['arguments', 'callId', 'agent'], 'the request body')
 * // 'unknown field "args" in the request body (did you mean "arguments"? expected: arguments, callId, agent)'
 * ```
 */
export function unknownFieldMessage(value: Record<string, unknown>, allowed: readonly string[], where: string): string | undefined {
  for (const key of Object.keys(value)) {
    if (allowed.includes(key)) continue
    const shown = quoteName(key)
    const closest = closestField(key, allowed)
    const hint = closest === undefined ? '' : `did you mean ${JSON.stringify(closest)}? `
    return `unknown field ${shown} in ${where} (${hint}expected: ${allowed.join(', ')})`
  }
  return undefined
}

/**
 * Refuses an options object holding an own key outside `known`: calls `fail` with
 * `unknown option "<name>" (did you mean "<closest>"? known: …)`, the wording of
 * `createToolRuntime` and `createSandboxRuntime`, with `prefix` before the name for a
 * nested object (`runs.`). A bound given under a misspelt name would otherwise stay at its
 * default without a word. `undefined` and non-objects pass: the caller's own checks say
 * what the value must be.
 */
export function refuseUnknownOptions(options: unknown, known: readonly string[], fail: (message: string) => never, prefix = ''): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) return
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue
    const name = quoteName(key, prefix)
    const closest = closestField(key, known)
    const hint = closest === undefined ? '' : `did you mean ${JSON.stringify(prefix + closest)}? `
    fail(`unknown option ${name} (${hint}known: ${known.map((k) => prefix + k).join(', ')})`)
  }
}
