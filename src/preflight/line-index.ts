/**
 * The one line splitter for program text: JavaScript's line terminators (`\r\n`, `\r`, `\n`,
 * U+2028, U+2029), so a plan's line numbers, a diagnostic's and a plan card's numbered code always
 * agree.
 * @module
 */

/** JavaScript's line terminators, `\r\n` first so it counts as one. */
const LINE_TERMINATOR = /\r\n|[\n\r\u2028\u2029]/g

/** Splits `text` into lines at every JavaScript line terminator (a lone `\r`, U+2028 and U+2029 included). */
export function splitLines(text: string): string[] {
  return text.split(LINE_TERMINATOR)
}

/** The line starts of one text. */
export class LineIndex {
  readonly #starts: number[] = [0]
  readonly #length: number

  constructor(text: string) {
    this.#length = text.length
    for (const m of text.matchAll(LINE_TERMINATOR)) this.#starts.push(m.index + m[0].length)
  }

  /** How many lines the text has (a text ending in a terminator has an empty last line). */
  get lines(): number {
    return this.#starts.length
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
