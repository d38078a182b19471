/**
 * Linear-time pattern matching for the demo tools (`grep`, `glob`): a Thompson NFA
 * simulated over a set of states (no backtracking), so the time to match is at most
 * (text length) × (pattern states), whatever the pattern. JavaScript's own `RegExp`
 * backtracks: `(a+)+$` or a glob of thirty `{*,*}` turned into one takes seconds to
 * hours on one line, on the server's main thread. Platform-neutral (Node, browser,
 * workerd).
 *
 * - Globs: `*` (within a segment), `**` (any depth; `**∕` also matches no directory),
 *   `?`, `{a,b}` (nested), everything else literal; matched against the whole path.
 * - Regular expressions (grep's `regex: true`): a safe subset of JavaScript's syntax:
 *   literals and escapes, `.`, classes `[…]` (ranges, negation, `\d\w\s`), `\d \D \w \W
 *   \s \S`, groups `(…)`, `(?:…)`, `(?<name>…)`, alternation `|`, quantifiers `* + ?`,
 *   `{n}`, `{n,}`, `{n,m}` (lazy forms too: for a yes/no match they are the same),
 *   anchors `^ $` and `\b \B`. Backreferences, lookaround and `\p{…}` need
 *   backtracking or more; they are refused with `INVALID_ARGS` naming the construct.
 *
 * Bounds: patterns of at most {@link MAX_PATTERN_LENGTH} characters, at most
 * {@link MAX_STATES} NFA states (counted repetition expands), and a matcher's work
 * budget (state visits) that the caller sets per call.
 *
 * @module
 */
import { ToolArgsError, ToolError } from '../../src/errors.js'

/** The longest pattern (glob or regex) accepted, in characters. */
export const MAX_PATTERN_LENGTH = 1_000
/** The most NFA states one pattern may compile to. */
export const MAX_STATES = 4_000

const CHAR = 0
const SPLIT = 1
const ASSERT = 2
const MATCH = 3

type CharTest = (code: number) => boolean
type Assertion = (text: string, at: number) => boolean

/** A compiled NFA: parallel arrays indexed by state. */
interface Nfa {
  readonly kind: number[]
  readonly test: (CharTest | Assertion | undefined)[]
  readonly out1: number[]
  readonly out2: number[]
  start: number
}

/** A fragment under construction: its start state and the dangling exits to patch. */
interface Fragment {
  readonly start: number
  /** State indexes whose `out1` (positive) or `out2` (encoded as -(i+1)) still point nowhere. */
  readonly exits: number[]
}

class Builder {
  readonly nfa: Nfa = { kind: [], test: [], out1: [], out2: [], start: -1 }
  constructor(private readonly where: string) {}

  state(kind: number, test?: CharTest | Assertion): number {
    if (this.nfa.kind.length >= MAX_STATES) {
      throw new ToolArgsError([{ path: this.where, message: `the pattern is too complex (more than ${MAX_STATES} states once compiled); simplify it` }])
    }
    this.nfa.kind.push(kind)
    this.nfa.test.push(test)
    this.nfa.out1.push(-1)
    this.nfa.out2.push(-1)
    return this.nfa.kind.length - 1
  }

  patch(exits: readonly number[], to: number): void {
    for (const exit of exits) {
      if (exit >= 0) this.nfa.out1[exit] = to
      else this.nfa.out2[-exit - 1] = to
    }
  }

  char(test: CharTest): Fragment {
    const s = this.state(CHAR, test)
    return { start: s, exits: [s] }
  }

  assert(test: Assertion): Fragment {
    const s = this.state(ASSERT, test)
    return { start: s, exits: [s] }
  }

  /** Matches the empty string. */
  empty(): Fragment {
    const s = this.state(SPLIT)
    // Both exits of an epsilon state lead on: patched together.
    return { start: s, exits: [s, -s - 1] }
  }

  concat(parts: readonly Fragment[]): Fragment {
    if (parts.length === 0) return this.empty()
    let first = parts[0] as Fragment
    for (let i = 1; i < parts.length; i++) {
      const next = parts[i] as Fragment
      this.patch(first.exits, next.start)
      first = { start: first.start, exits: next.exits }
    }
    return first
  }

  alternate(options: readonly Fragment[]): Fragment {
    let result = options[0] as Fragment
    for (let i = 1; i < options.length; i++) {
      const option = options[i] as Fragment
      const s = this.state(SPLIT)
      this.nfa.out1[s] = result.start
      this.nfa.out2[s] = option.start
      result = { start: s, exits: [...result.exits, ...option.exits] }
    }
    return result
  }

  star(inner: Fragment): Fragment {
    const s = this.state(SPLIT)
    this.nfa.out1[s] = inner.start
    this.patch(inner.exits, s)
    return { start: s, exits: [-s - 1] }
  }

  optional(inner: Fragment): Fragment {
    const s = this.state(SPLIT)
    this.nfa.out1[s] = inner.start
    return { start: s, exits: [...inner.exits, -s - 1] }
  }

  finish(fragment: Fragment): Nfa {
    const match = this.state(MATCH)
    this.patch(fragment.exits, match)
    this.nfa.start = fragment.start
    return this.nfa
  }
}

/** A compiled pattern. */
export interface Matcher {
  /**
   * Whether `text` matches: the whole text for a glob, anywhere in it for a regex.
   * Spends the budget it was given; throws `ToolError('TOOL_FAILED')` once it is spent.
   */
  test(text: string): boolean
}

/** How much work a matcher may do across all its `test()` calls (state visits). */
export interface WorkBudget {
  /** State visits left; `test()` throws once this reaches zero. */
  remaining: number
  /** What the error says ran out of budget (e.g. "grep"). */
  readonly what: string
}

/** A budget of `steps` state visits. */
export function workBudget(steps: number, what: string): WorkBudget {
  return { remaining: steps, what }
}

function overBudget(budget: WorkBudget, initial: number): ToolError {
  return new ToolError(
    'TOOL_FAILED',
    `${budget.what} stopped: the search needed more than its work budget of ${initial} steps (narrow it with a glob, or simplify the pattern)`,
  )
}

/**
 * Runs an NFA over texts: a set of live states per position (Pike's simulation without
 * captures), each state entered at most once per position. Its arrays are allocated
 * once per pattern and reused by every `test()`.
 */
class Simulation implements Matcher {
  readonly #kind: Uint8Array
  readonly #out1: Int32Array
  readonly #out2: Int32Array
  readonly #tests: readonly (CharTest | Assertion | undefined)[]
  readonly #start: number
  readonly #seen: Int32Array
  #current: Int32Array
  #next: Int32Array
  readonly #stack: Int32Array
  #generation = 0
  readonly #initial: number
  /** What the start state can consume first, when it can only consume (no anchor, no empty match): lets a search skip ahead. */
  readonly #first: CharTest | undefined

  constructor(
    nfa: Nfa,
    private readonly whole: boolean,
    private readonly budget: WorkBudget,
  ) {
    const n = nfa.kind.length
    this.#kind = Uint8Array.from(nfa.kind)
    this.#out1 = Int32Array.from(nfa.out1)
    this.#out2 = Int32Array.from(nfa.out2)
    this.#tests = nfa.test
    this.#start = nfa.start
    this.#seen = new Int32Array(n)
    this.#current = new Int32Array(n)
    this.#next = new Int32Array(n)
    this.#stack = new Int32Array(2 * n + 2)
    this.#initial = budget.remaining
    this.#first = firstChars(nfa)
  }

  /** Adds `state`'s epsilon closure at position `at` to `list` (of `size`); returns the new size, or -1 on a match. */
  #add(list: Int32Array, size: number, state: number, text: string, at: number): number {
    const stack = this.#stack
    const seen = this.#seen
    const generation = this.#generation
    let top = 0
    stack[top++] = state
    while (top > 0) {
      const s = stack[--top] as number
      if (s < 0 || seen[s] === generation) continue
      seen[s] = generation
      if (--this.budget.remaining < 0) throw overBudget(this.budget, this.#initial)
      const kind = this.#kind[s]
      if (kind === SPLIT) {
        stack[top++] = this.#out2[s] as number
        stack[top++] = this.#out1[s] as number
      } else if (kind === ASSERT) {
        if ((this.#tests[s] as Assertion)(text, at)) stack[top++] = this.#out1[s] as number
      } else if (kind === MATCH) {
        if (!this.whole || at === text.length) return -1
      } else list[size++] = s
    }
    return size
  }

  test(text: string): boolean {
    // Generations only grow; wrapping around would need 2³¹ positions.
    if (this.#generation > 0x3fffffff) {
      this.#seen.fill(0)
      this.#generation = 0
    }
    this.#generation++
    let size = this.#add(this.#current, 0, this.#start, text, 0)
    if (size < 0) return true
    for (let at = 0; at < text.length; at++) {
      this.#generation++
      const current = this.#current
      const next = this.#next
      let nextSize = 0
      const code = text.charCodeAt(at)
      for (let i = 0; i < size; i++) {
        const s = current[i] as number
        if (!(this.#tests[s] as CharTest)(code)) continue
        nextSize = this.#add(next, nextSize, this.#out1[s] as number, text, at + 1)
        if (nextSize < 0) return true
      }
      // An unanchored search may also start at the next position; with no thread alive it
      // skips to the next character the pattern can start with.
      if (!this.whole) {
        let from = at + 1
        if (nextSize === 0 && this.#first !== undefined) {
          while (from < text.length && !this.#first(text.charCodeAt(from))) from++
          // Each skipped character is a step too: the budget bounds the whole scan.
          this.budget.remaining -= from - at - 1
          if (this.budget.remaining < 0) throw overBudget(this.budget, this.#initial)
          if (from >= text.length) return false
          if (from > at + 1) this.#generation++
        }
        nextSize = this.#add(next, nextSize, this.#start, text, from)
        if (nextSize < 0) return true
        at = from - 1
      }
      this.#current = next
      this.#next = current
      size = nextSize
      if (size === 0 && this.whole) return false
    }
    return false
  }
}

/** The tests of the states the start reaches through splits alone, or `undefined` if it reaches an anchor or the match. */
function firstChars(nfa: Nfa): CharTest | undefined {
  const tests: CharTest[] = []
  const seen = new Set<number>()
  const stack = [nfa.start]
  while (stack.length > 0) {
    const s = stack.pop() as number
    if (s < 0 || seen.has(s)) continue
    seen.add(s)
    const kind = nfa.kind[s]
    if (kind === SPLIT) stack.push(nfa.out1[s] as number, nfa.out2[s] as number)
    else if (kind === CHAR) tests.push(nfa.test[s] as CharTest)
    else return undefined
  }
  return (c) => tests.some((test) => test(c))
}

function matcher(nfa: Nfa, whole: boolean, budget: WorkBudget): Matcher {
  return new Simulation(nfa, whole, budget)
}

function checkLength(pattern: string, where: string): void {
  if (pattern.length > MAX_PATTERN_LENGTH) {
    throw new ToolArgsError([{ path: where, message: `the pattern is too long (${pattern.length} characters; at most ${MAX_PATTERN_LENGTH})` }])
  }
}

// ───────────────────────── globs ─────────────────────────

const SLASH = 47
const notSlash: CharTest = (c) => c !== SLASH
const anyChar: CharTest = () => true

/**
 * Compiles a glob (`*`, `**`, `?`, `{a,b}`) into a matcher of whole paths. Same language
 * as the demo's former RegExp translation (an unclosed `{` is closed at the end, a stray
 * `}` or `,` outside braces is literal), in linear time.
 */
export function compileGlob(pattern: string, budget: WorkBudget, where = '/pattern'): Matcher {
  checkLength(pattern, where)
  const b = new Builder(where)
  // A stack of open braces: each holds its finished alternatives and the sequence being built.
  const stack: { options: Fragment[]; seq: Fragment[] }[] = [{ options: [], seq: [] }]
  const top = (): { options: Fragment[]; seq: Fragment[] } => stack[stack.length - 1] as { options: Fragment[]; seq: Fragment[] }
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i] as string
    if (ch === '*') {
      if (pattern[i + 1] === '*') {
        if (pattern[i + 2] === '/') {
          // `**/`: any directories, or none.
          top().seq.push(b.optional(b.concat([b.star(b.char(anyChar)), b.char((c) => c === SLASH)])))
          i += 2
        } else {
          top().seq.push(b.star(b.char(anyChar)))
          i += 1
        }
      } else top().seq.push(b.star(b.char(notSlash)))
    } else if (ch === '?') top().seq.push(b.char(notSlash))
    else if (ch === '{') stack.push({ options: [], seq: [] })
    else if (ch === '}' && stack.length > 1) closeBrace(b, stack)
    else if (ch === ',' && stack.length > 1) {
      const open = top()
      open.options.push(b.concat(open.seq))
      open.seq = []
    } else {
      const code = ch.charCodeAt(0)
      top().seq.push(b.char((c) => c === code))
    }
  }
  while (stack.length > 1) closeBrace(b, stack)
  return matcher(b.finish(b.concat(top().seq)), true, budget)
}

function closeBrace(b: Builder, stack: { options: Fragment[]; seq: Fragment[] }[]): void {
  const open = stack.pop() as { options: Fragment[]; seq: Fragment[] }
  open.options.push(b.concat(open.seq))
  ;(stack[stack.length - 1] as { seq: Fragment[] }).seq.push(b.alternate(open.options))
}

// ───────────────────────── regular expressions ─────────────────────────

type Range = readonly [number, number]

const DIGIT: readonly Range[] = [[48, 57]]
const WORD: readonly Range[] = [
  [48, 57],
  [65, 90],
  [95, 95],
  [97, 122],
]
const SPACE: readonly Range[] = [
  [9, 13],
  [32, 32],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
]
const LINE_TERMINATORS: readonly Range[] = [
  [10, 10],
  [13, 13],
  [0x2028, 0x2029],
]

function inRanges(ranges: readonly Range[], c: number): boolean {
  for (const [lo, hi] of ranges) if (c >= lo && c <= hi) return true
  return false
}

function rangesTest(ranges: readonly Range[], negate: boolean): CharTest {
  const copy = ranges.slice()
  return (c) => inRanges(copy, c) !== negate
}

/** JavaScript's `Canonicalize` for the `i` flag without `u`: upper case, unless that is not one unit or leaves non-ASCII for ASCII. */
function canonicalize(code: number): number {
  const upper = String.fromCharCode(code).toUpperCase()
  if (upper.length !== 1) return code
  const mapped = upper.charCodeAt(0)
  return code >= 128 && mapped < 128 ? code : mapped
}

/** `code` and the other units with the same canonical form that a set may list. */
function caseVariants(code: number): number[] {
  const canonical = canonicalize(code)
  const variants = [code]
  if (canonical !== code) variants.push(canonical)
  for (const other of [String.fromCharCode(code).toLowerCase(), String.fromCharCode(canonical).toLowerCase()]) {
    if (other.length !== 1) continue
    const unit = other.charCodeAt(0)
    if (!variants.includes(unit) && canonicalize(unit) === canonical) variants.push(unit)
  }
  return variants
}

function isWordAt(text: string, at: number): boolean {
  return at >= 0 && at < text.length && inRanges(WORD, text.charCodeAt(at))
}

const SIMPLE_ESCAPES: Readonly<Record<string, number>> = { n: 10, r: 13, t: 9, v: 11, f: 12, '0': 0 }

/** A recursive-descent parser of the supported subset into NFA fragments. */
class RegexParser {
  private at = 0
  private depth = 0
  constructor(
    private readonly source: string,
    private readonly b: Builder,
    private readonly ignoreCase: boolean,
  ) {}

  /** A set's test as the `i` flag reads it: membership of any case variant, then negation. */
  private setTest(member: CharTest, negate: boolean): CharTest {
    if (!this.ignoreCase) return negate ? (c) => !member(c) : member
    return (c) => caseVariants(c).some(member) !== negate
  }

  private literal(code: number): Fragment {
    if (!this.ignoreCase) return this.b.char((c) => c === code)
    const canonical = canonicalize(code)
    return this.b.char((c) => canonicalize(c) === canonical)
  }

  fail(message: string): never {
    throw new ToolArgsError([{ path: '/pattern', message: `${message} (at character ${this.at + 1}); grep's regex mode is linear-time: see the tool's docs for the supported syntax` }])
  }

  parse(): Fragment {
    const fragment = this.alternation()
    if (this.at < this.source.length) this.fail(`unmatched ")"`)
    return fragment
  }

  private alternation(): Fragment {
    const options = [this.sequence()]
    while (this.source[this.at] === '|') {
      this.at++
      options.push(this.sequence())
    }
    return this.b.alternate(options)
  }

  private sequence(): Fragment {
    const parts: Fragment[] = []
    while (this.at < this.source.length && this.source[this.at] !== '|' && this.source[this.at] !== ')') parts.push(this.quantified())
    return this.b.concat(parts)
  }

  private quantified(): Fragment {
    const atomStart = this.at
    const atom = this.atom()
    const atomEnd = this.at
    const ch = this.source[this.at]
    let min: number
    let max: number
    if (ch === '*' || ch === '+' || ch === '?') {
      this.at++
      ;[min, max] = ch === '*' ? [0, Infinity] : ch === '+' ? [1, Infinity] : [0, 1]
    } else if (ch === '{' && /^\{\d+(,\d*)?\}/.test(this.source.slice(this.at, this.at + 24))) {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.source.slice(this.at)) as RegExpExecArray
      this.at += m[0].length
      min = Number(m[1])
      max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3])
      if (max < min) this.fail('numbers out of order in {} quantifier')
      if (min > MAX_STATES || (max !== Infinity && max > MAX_STATES)) this.fail('the repeat count is too large')
    } else return atom
    if (this.source[this.at] === '?') this.at++ // lazy: the same set of matching lines
    if (/^[*+?{]/.test(this.source[this.at] ?? '') && !/^\{(?!\d)/.test(this.source.slice(this.at))) this.fail('nothing to repeat')
    return this.repeat(atom, atomStart, atomEnd, min, max)
  }

  /** `atom{min,max}`: the atom's text is parsed again for each copy (a fragment is used once). */
  private repeat(first: Fragment, from: number, to: number, min: number, max: number): Fragment {
    const copy = (): Fragment => {
      const saved = this.at
      this.at = from
      const fragment = this.atom()
      if (this.at !== to) this.fail('internal: a repeated atom parsed differently')
      this.at = saved
      return fragment
    }
    const parts: Fragment[] = []
    let pending: Fragment | undefined = first
    const take = (): Fragment => {
      const fragment = pending ?? copy()
      pending = undefined
      return fragment
    }
    for (let i = 0; i < min; i++) parts.push(take())
    if (max === Infinity) parts.push(this.b.star(take()))
    else for (let i = min; i < max; i++) parts.push(this.b.optional(take()))
    return this.b.concat(parts)
  }

  private atom(): Fragment {
    const ch = this.source[this.at] as string
    this.at++
    switch (ch) {
      case '.':
        return this.b.char(rangesTest(LINE_TERMINATORS, true))
      case '^':
        return this.b.assert((_text, at) => at === 0)
      case '$':
        return this.b.assert((text, at) => at === text.length)
      case '(':
        return this.group()
      case '[':
        return this.b.char(this.charClass())
      case '\\':
        return this.escape()
      case '*':
      case '+':
      case '?':
        return this.fail('nothing to repeat')
      case ')':
        return this.fail('unmatched ")"')
      default: {
        if (ch === '{' && /^\d+(,\d*)?\}/.test(this.source.slice(this.at, this.at + 24))) this.fail('nothing to repeat')
        return this.literal(ch.charCodeAt(0))
      }
    }
  }

  private group(): Fragment {
    if (++this.depth > 200) this.fail('groups nested too deeply')
    if (this.source[this.at] === '?') {
      const kind = this.source.slice(this.at, this.at + 3)
      if (kind.startsWith('?:')) this.at += 2
      else if (/^\?<[A-Za-z_$]/.test(kind)) {
        const close = this.source.indexOf('>', this.at)
        if (close < 0) this.fail('unterminated group name')
        this.at = close + 1
      } else if (kind.startsWith('?=') || kind.startsWith('?!') || kind.startsWith('?<=') || kind.startsWith('?<!')) {
        this.fail('lookahead and lookbehind are not supported')
      } else this.fail('invalid group')
    }
    const inner = this.alternation()
    if (this.source[this.at] !== ')') this.fail('unterminated group')
    this.at++
    this.depth--
    return inner
  }

  private escape(): Fragment {
    const ch = this.source[this.at]
    if (ch === undefined) this.fail('\\ at end of pattern')
    if (ch === 'b' || ch === 'B') {
      this.at++
      const negate = ch === 'B'
      return this.b.assert((text, at) => (isWordAt(text, at - 1) !== isWordAt(text, at)) !== negate)
    }
    const ranges = this.classEscape()
    if (ranges !== undefined) return this.b.char(this.setTest(rangesTest(ranges.ranges, false), ranges.negate))
    return this.literal(this.literalEscape())
  }

  /** `\d \D \w \W \s \S`, or `undefined`. */
  private classEscape(): { readonly ranges: readonly Range[]; readonly negate: boolean } | undefined {
    const ch = this.source[this.at] as string
    const table: Readonly<Record<string, readonly Range[]>> = { d: DIGIT, w: WORD, s: SPACE }
    const lower = ch.toLowerCase()
    if (!Object.hasOwn(table, lower)) return undefined
    this.at++
    return { ranges: table[lower] as readonly Range[], negate: ch !== lower }
  }

  /** One escaped character's code; refuses what needs more than a linear matcher. */
  private literalEscape(): number {
    const ch = this.source[this.at] as string
    this.at++
    if (/[1-9]/.test(ch) || (ch === 'k' && this.source[this.at] === '<')) this.fail('backreferences are not supported')
    if (ch === 'p' || ch === 'P') this.fail('Unicode property escapes are not supported')
    if (Object.hasOwn(SIMPLE_ESCAPES, ch)) return SIMPLE_ESCAPES[ch] as number
    if (ch === 'x' || ch === 'u') {
      const digits = ch === 'x' ? 2 : 4
      const hex = this.source.slice(this.at, this.at + digits)
      if (!new RegExp(`^[0-9A-Fa-f]{${digits}}$`).test(hex)) this.fail(`invalid \\${ch} escape`)
      this.at += digits
      return parseInt(hex, 16)
    }
    if (ch === 'c') {
      const letter = this.source[this.at] ?? ''
      if (!/[A-Za-z]/.test(letter)) this.fail('invalid \\c escape')
      this.at++
      return letter.charCodeAt(0) % 32
    }
    if (/[A-Za-z]/.test(ch)) this.fail(`unknown escape \\${ch}`)
    return ch.charCodeAt(0)
  }

  private charClass(): CharTest {
    const negate = this.source[this.at] === '^'
    if (negate) this.at++
    const ranges: Range[] = []
    const tests: CharTest[] = []
    while (this.source[this.at] !== ']') {
      if (this.at >= this.source.length) this.fail('unterminated character class')
      const lo = this.classAtom(tests)
      if (lo === undefined) continue
      if (this.source[this.at] === '-' && this.source[this.at + 1] !== ']' && this.at + 1 < this.source.length) {
        this.at++
        const hi = this.classAtom(tests)
        if (hi === undefined) this.fail('a range cannot end with a class escape')
        if (hi < lo) this.fail('range out of order in character class')
        ranges.push([lo, hi])
      } else ranges.push([lo, lo])
    }
    this.at++
    const inRange = rangesTest(ranges, false)
    return this.setTest((c) => inRange(c) || tests.some((t) => t(c)), negate)
  }

  /** One class member's code, or `undefined` after adding a class escape (`\d` …) to `tests`. */
  private classAtom(tests: CharTest[]): number | undefined {
    const ch = this.source[this.at] as string
    this.at++
    if (ch !== '\\') return ch.charCodeAt(0)
    if (this.source[this.at] === 'b') {
      this.at++
      return 8
    }
    const escape = this.classEscape()
    if (escape !== undefined) {
      tests.push(rangesTest(escape.ranges, escape.negate))
      return undefined
    }
    if (this.source[this.at] === '-') {
      this.at++
      return 45
    }
    return this.literalEscape()
  }
}

/**
 * Compiles a regular expression of the supported subset (see the module comment) into a
 * matcher that finds it anywhere in a line, in time linear in the line's length.
 * Throws `ToolArgsError` at `/pattern` for a syntax error or an unsupported construct.
 */
export function compileRegex(source: string, options: { readonly ignoreCase?: boolean }, budget: WorkBudget): Matcher {
  checkLength(source, '/pattern')
  const b = new Builder('/pattern')
  const nfa = b.finish(new RegexParser(source, b, options.ignoreCase === true).parse())
  return matcher(nfa, false, budget)
}
