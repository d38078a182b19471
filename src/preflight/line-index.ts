/**
 * Offsets → 1-based line and column in a program, by binary search over its line starts
 * (built once, linear), so positioning every call and diagnostic stays linear overall.
 *
 * @module
 */

/** The line starts of one text. */
export class LineIndex {
  readonly #starts: number[] = [0]
  readonly #length: number

  constructor(text: string) {
    this.#length = text.length
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) this.#starts.push(i + 1)
  }

  /** The 1-based line and column of `offset` (clamped to the text). */
  position(offset: number): { readonly line: number; readonly column: number } {
    const at = Math.max(0, Math.min(this.#length, Math.floor(offset)))
    let lo = 0
    let hi = this.#starts.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (this.#starts[mid]! <= at) lo = mid
      else hi = mid - 1
    }
    return { line: lo + 1, column: at - this.#starts[lo]! + 1 }
  }
}
