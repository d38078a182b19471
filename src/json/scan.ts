/**
 * A linear scan of JSON text that counts its values and measures its nesting without parsing it:
 * the work bound a sandbox thread applies to a binding call's arguments before the host parses them.
 * @module
 */

/** What {@link scanJsonText} found, up to where it stopped. */
export interface JsonTextScan {
  /**
   * JSON values counted: each object, array, string (keys included), number, `true`, `false` and
   * `null`.
   */
  readonly nodes: number
  /** The deepest container nesting reached: `1` is 0, `[1]` 1, `[[1]]` 2. Past `maxDepth` the scan stops. */
  readonly depth: number
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACE = 0x7b
const OPEN_BRACKET = 0x5b
const CLOSE_BRACE = 0x7d
const CLOSE_BRACKET = 0x5d

/** True for the characters a JSON number is made of (`-`, digits, `.`, `e`, `E`, `+`). */
function numberChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45
}

/**
 * Counts the JSON values in `text[start, end)` and measures their nesting, in one pass over the
 * characters (no allocation, no recursion).
 * @example
 * ```ts
 * scanJsonText('{"a":[1,2]}', 0, 11, 100, 10) // { nodes: 4, depth: 2 }
 * ```
 */
export function scanJsonText(text: string, start: number, end: number, maxNodes: number, maxDepth: number): JsonTextScan {
  let nodes = 0
  let depth = 0
  let deepest = 0
  let i = start
  while (i < end) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      nodes++
      i++
      // Skip the string's body: an escape takes the next character with it.
      while (i < end) {
        const d = text.charCodeAt(i)
        if (d === QUOTE) break
        i += d === BACKSLASH ? 2 : 1
      }
      i++
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      nodes++
      depth++
      if (depth > deepest) deepest = depth
      i++
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--
      i++
    } else if (numberChar(c)) {
      nodes++
      i++
      while (i < end && numberChar(text.charCodeAt(i))) i++
    } else if (c === 0x74 || c === 0x6e || c === 0x66) {
      // true, null, false: one value; the letters that follow are not values.
      nodes++
      i++
      while (i < end && text.charCodeAt(i) >= 0x61 && text.charCodeAt(i) <= 0x7a) i++
    } else i++
    if (nodes > maxNodes || deepest > maxDepth) break
  }
  return { nodes, depth: deepest }
}
