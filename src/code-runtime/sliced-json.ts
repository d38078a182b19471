/**
 * `JSON.parse` in bounded steps, for untrusted text too large to parse in one turn of the host's
 * event loop: the same value (own data properties, `__proto__` included; the last duplicate key wins).
 * @module
 */
import { setOwnData } from '../json/lossless.js'

/** Characters of text read per unit of a step's budget (a value, a key or a punctuation mark is one unit). */
export const CHARS_PER_UNIT = 32

/** The longest run of a string's plain characters read at once: a large string is read over several steps. */
const RUN = 65_536
const PLAIN = new RegExp(`[^"\\\\\\u0000-\\u001f]{0,${RUN}}`, 'y')
const HEX4 = /[0-9a-fA-F]{4}/y
const ESCAPES: Readonly<Record<string, string>> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' }

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57
}

/** Where the run of digits starting at `from` ends. */
function digitsEnd(text: string, from: number): number {
  let i = from
  while (isDigit(text.charCodeAt(i))) i++
  return i
}

const enum Mode {
  /** A value is due (the root, after `:`, after `,` in an array). */
  Value,
  /** Just after `[`: `]` or a value. */
  ArrayFirst,
  /** Just after `{`: `}` or a key. */
  ObjectFirst,
  /** After `,` in an object: a key. */
  Key,
  /** After a key: `:`. */
  Colon,
  /** After a value: `,`, the container's end, or the text's end at the root. */
  After,
  /** Inside a string (a key or a value), read over as many steps as it takes. */
  InString,
}

/** One parse of one text, advanced by {@link SlicedJsonParse.step} until {@link SlicedJsonParse.done}. */
export class SlicedJsonParse {
  readonly #text: string
  #at = 0
  /**
   * The open containers, outermost first, as parallel arrays (no object per container for the
   * garbage collector): the object being filled, or undefined for an array (whose elements wait in
   * `elements` until its `]`)...
   */
  readonly #containers: (Record<string, unknown> | undefined)[] = []
  /** ...its current key... */
  readonly #keys: string[] = []
  /** ...and where its elements begin in `elements`. */
  readonly #starts: number[] = []
  /**
   * The elements of the arrays being read, innermost last: an array is made at its `]`, of its exact
   * length (one grown by `push` keeps room for 16 more: 184 bytes for `[0]`, not 56).
   */
  #elements: unknown[] = []
  #mode = Mode.Value
  /** The string being read: its parts so far, and whether it is a key. */
  #parts: string[] = []
  #isKey = false
  #root: unknown = undefined
  #outcome: 'pending' | 'parsed' | 'invalid' = 'pending'
  #used = 0
  #emptyObject: object | undefined
  #emptyArray: object | undefined

  /** @param text - the whole JSON text (untrusted). */
  constructor(text: string) {
    this.#text = text
  }

  /** True once the text is parsed or found not to be JSON. */
  get done(): boolean {
    return this.#outcome !== 'pending'
  }

  /** True once the text was found not to be JSON (`JSON.parse` would have thrown). */
  get invalid(): boolean {
    return this.#outcome === 'invalid'
  }

  /** Units of work done so far (each step does about its budget of them, or less when the text ends). */
  get used(): number {
    return this.#used
  }

  /** The parsed value; only meaningful once {@link done} and not {@link invalid}. */
  get value(): unknown {
    return this.#root
  }

  /** Reads at most about `budget` units more (see {@link CHARS_PER_UNIT}); returns {@link done}. */
  step(budget: number): boolean {
    const text = this.#text
    let units = 0
    while (this.#outcome === 'pending' && units < budget) {
      units++
      if (this.#mode === Mode.InString) {
        units += this.#readString()
        continue
      }
      // Whitespace (space, tab, line feed, carriage return), at most a run's length an iteration.
      const start = this.#at
      let code = text.charCodeAt(start)
      while ((code === 32 || code === 9 || code === 10 || code === 13) && this.#at - start < RUN) code = text.charCodeAt(++this.#at)
      if (this.#at - start === RUN) {
        units += RUN / CHARS_PER_UNIT
        continue
      }
      switch (this.#mode) {
        case Mode.ArrayFirst:
          if (code === 93) {
            this.#at++
            this.#close()
            break
          }
          this.#value(code)
          break
        case Mode.Value:
          this.#value(code)
          break
        case Mode.ObjectFirst:
          if (code === 125) {
            this.#at++
            this.#close()
            break
          }
          this.#key(code)
          break
        case Mode.Key:
          this.#key(code)
          break
        case Mode.Colon:
          if (code !== 58) return this.#fail()
          this.#at++
          this.#mode = Mode.Value
          break
        case Mode.After:
          this.#after(code)
          break
      }
    }
    this.#used += units
    return this.#outcome !== 'pending'
  }

  #fail(): true {
    this.#outcome = 'invalid'
    this.#root = undefined
    this.#containers.length = 0
    this.#keys.length = 0
    this.#starts.length = 0
    this.#elements = []
    this.#parts = []
    return true
  }

  /** A value starts at the cursor (after whitespace). */
  #value(code: number): void {
    const text = this.#text
    switch (code) {
      case 123: // {
        if (text.charCodeAt(this.#at + 1) === 125 && this.#inArgs()) return this.#empty(false)
        this.#at++
        this.#open({})
        this.#mode = Mode.ObjectFirst
        return
      case 91: // [
        if (text.charCodeAt(this.#at + 1) === 93 && this.#inArgs()) return this.#empty(true)
        this.#at++
        this.#open(undefined)
        this.#mode = Mode.ArrayFirst
        return
      case 34: // "
        this.#at++
        this.#isKey = false
        this.#parts = []
        this.#mode = Mode.InString
        return
      case 116: // t
        if (text.startsWith('true', this.#at)) return this.#literal(4, true)
        break
      case 102: // f
        if (text.startsWith('false', this.#at)) return this.#literal(5, false)
        break
      case 110: // n
        if (text.startsWith('null', this.#at)) return this.#literal(4, null)
        break
      default:
        if (this.#number()) return
    }
    this.#fail()
  }

  /** True inside the root object's `args`: a call's arguments, which the host adopts as a frozen snapshot. */
  #inArgs(): boolean {
    return this.#containers[0] !== undefined && this.#keys[0] === 'args'
  }

  /**
   * `{}` or `[]` in a call's arguments: one frozen empty container of each kind per text, however
   * often it occurs, so that 100,000 of them are not 100,000 objects for the garbage collector to
   * copy. Nothing can tell them apart but identity, which JSON does not carry; the rest of the
   * arguments is frozen by their adoption.
   */
  #empty(array: boolean): void {
    this.#at += 2
    this.#place(array ? (this.#emptyArray ??= Object.freeze([])) : (this.#emptyObject ??= Object.freeze({})))
  }

  /** The shared empty containers this parse placed (frozen): an adoption of its value takes them as they are. */
  get shared(): readonly object[] {
    return [this.#emptyObject, this.#emptyArray].filter((v): v is object => v !== undefined)
  }

  /**
   * A number at the cursor (the longest prefix JSON's grammar allows, as `JSON.parse` reads it): true
   * once placed. Read by hand, not by a regular expression, whose match array was garbage per number.
   */
  #number(): boolean {
    const text = this.#text
    const start = this.#at
    const negative = text.charCodeAt(start) === 45
    let i = negative ? start + 1 : start
    if (text.charCodeAt(i) === 48) i++
    else if (isDigit(text.charCodeAt(i))) i = digitsEnd(text, i)
    else return false
    const integerEnd = i
    if (text.charCodeAt(i) === 46 && isDigit(text.charCodeAt(i + 1))) i = digitsEnd(text, i + 1)
    const e = text.charCodeAt(i)
    if (e === 101 || e === 69) {
      const sign = text.charCodeAt(i + 1)
      const digits = sign === 43 || sign === 45 ? i + 2 : i + 1
      if (isDigit(text.charCodeAt(digits))) i = digitsEnd(text, digits)
    }
    this.#at = i
    // Up to 15 digits an integer is exact in a double: no substring to make.
    if (i === integerEnd && integerEnd - start <= 15) {
      let value = 0
      for (let at = negative ? start + 1 : start; at < i; at++) value = value * 10 + (text.charCodeAt(at) - 48)
      this.#place(negative ? -value : value)
    } else this.#place(Number(text.slice(start, i)))
    return true
  }


  #literal(length: number, value: boolean | null): void {
    this.#at += length
    this.#place(value)
  }

  #key(code: number): void {
    if (code !== 34) {
      this.#fail()
      return
    }
    this.#at++
    this.#isKey = true
    this.#parts = []
    this.#mode = Mode.InString
  }

  /** Reads one run of the current string (or one escape); returns the extra units it cost. */
  #readString(): number {
    const text = this.#text
    PLAIN.lastIndex = this.#at
    const run = PLAIN.exec(text)![0]
    this.#at += run.length
    if (run.length > 0) this.#parts.push(run)
    const code = text.charCodeAt(this.#at)
    if (code === 34) {
      this.#at++
      const parts = this.#parts
      const value = parts.length === 1 ? parts[0]! : parts.join('')
      this.#parts = []
      if (this.#isKey) {
        this.#keys[this.#keys.length - 1] = value
        this.#mode = Mode.Colon
      } else {
        this.#place(value)
      }
    } else if (code === 92) {
      const next = text.charAt(this.#at + 1)
      const simple = ESCAPES[next]
      if (simple !== undefined && Object.prototype.hasOwnProperty.call(ESCAPES, next)) {
        this.#parts.push(simple)
        this.#at += 2
      } else if (next === 'u') {
        HEX4.lastIndex = this.#at + 2
        if (HEX4.exec(text) === null) return this.#failed()
        this.#parts.push(String.fromCharCode(parseInt(text.slice(this.#at + 2, this.#at + 6), 16)))
        this.#at += 6
      } else {
        return this.#failed()
      }
    } else if (run.length < RUN) {
      // A control character or the text's end inside a string.
      return this.#failed()
    }
    return run.length / CHARS_PER_UNIT
  }

  #failed(): number {
    this.#fail()
    return 0
  }

  /** Opens an object (placed now) or, given undefined, an array (placed at its `]`). */
  #open(container: Record<string, unknown> | undefined): void {
    if (container !== undefined) this.#place(container)
    this.#containers.push(container)
    this.#keys.push('')
    this.#starts.push(this.#elements.length)
  }

  /** Puts a value where the cursor is: the root, the next element, or the current key's value. */
  #place(value: unknown): void {
    this.#mode = Mode.After
    const depth = this.#containers.length
    if (depth === 0) {
      this.#root = value
      return
    }
    const container = this.#containers[depth - 1]
    if (container === undefined) this.#elements.push(value)
    else setOwnData(container, this.#keys[depth - 1]!, value)
  }

  #close(): void {
    const container = this.#containers.pop()
    this.#keys.pop()
    const start = this.#starts.pop()!
    this.#mode = Mode.After
    if (container !== undefined) return
    const array = this.#elements.slice(start)
    this.#elements.length = start
    this.#place(array)
  }

  /** After a value: the container goes on or ends; at the root only whitespace may follow. */
  #after(code: number): void {
    const depth = this.#containers.length
    if (depth === 0) {
      // At the root only whitespace (already skipped) may follow.
      if (this.#at === this.#text.length) this.#outcome = 'parsed'
      else this.#fail()
      return
    }
    if (code === 44) {
      this.#at++
      this.#mode = this.#containers[depth - 1] === undefined ? Mode.Value : Mode.Key
    } else if (code === (this.#containers[depth - 1] === undefined ? 93 : 125)) {
      this.#at++
      this.#close()
    } else {
      this.#fail()
    }
  }
}
