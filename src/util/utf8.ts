/**
 * UTF-8 sizes of JavaScript strings without encoding them, with one rule for a lone surrogate:
 * it counts 3 bytes, as `TextEncoder` writes it (U+FFFD). Pure; shared by both realms.
 *
 * @module
 */

/** UTF-8 bytes of the code point at `text[i]`: 4 only for a surrogate pair (two units). */
function bytesAt(text: string, i: number): number {
  const c = text.charCodeAt(i)
  if (c < 0x80) return 1
  if (c < 0x800) return 2
  if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
    const next = text.charCodeAt(i + 1)
    if (next >= 0xdc00 && next <= 0xdfff) return 4
  }
  return 3
}

/**
 * Number of UTF-8 bytes `text` encodes to (`new TextEncoder().encode(text).length`). Stops
 * counting once past `stopAbove` (the result is then some number above it), so a cap check
 * on a huge string costs no more than the cap.
 */
export function utf8Length(text: string, stopAbove = Number.POSITIVE_INFINITY): number {
  let bytes = 0
  for (let i = 0; i < text.length && bytes <= stopAbove; ) {
    const size = bytesAt(text, i)
    bytes += size
    i += size === 4 ? 2 : 1
  }
  return bytes
}

/** The longest prefix of `text` that fits in `maxBytes` UTF-8 bytes, never splitting a surrogate pair. */
export function utf8Prefix(text: string, maxBytes: number): string {
  let bytes = 0
  let i = 0
  while (i < text.length) {
    const size = bytesAt(text, i)
    if (bytes + size > maxBytes) break
    bytes += size
    i += size === 4 ? 2 : 1
  }
  return text.slice(0, i)
}

/**
 * `text` cut into pieces of at most `maxBytes` UTF-8 bytes each, never between the halves of
 * a surrogate pair (a piece holds at least one code point, so a pair is 4 bytes whatever the cap).
 */
export function utf8Pieces(text: string, maxBytes: number): string[] {
  const pieces: string[] = []
  let start = 0
  let bytes = 0
  for (let i = 0; i < text.length; ) {
    const size = bytesAt(text, i)
    if (bytes + size > maxBytes && i > start) {
      pieces.push(text.slice(start, i))
      start = i
      bytes = 0
    }
    bytes += size
    i += size === 4 ? 2 : 1
  }
  if (start < text.length) pieces.push(text.slice(start))
  return pieces
}
