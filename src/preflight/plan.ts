/**
 * The call plan of a program, read from its tokens without running it: every static tool reference
 * and whether the program can reach tools the list cannot name (`dynamic`).
 * @module
 */
import { parse } from 'sucrase/dist/parser/index.js'
import type { SucraseToken } from 'sucrase/dist/parser/index.js'
import { TokenType } from 'sucrase/dist/parser/tokenizer/types.js'
import { stripTypeScript } from '../code-runtime/strip.js'
import { programTooLong } from '../code-runtime/sandbox-protocol.js'
import type { PlannedCall, PreflightDiagnostic, PreflightPlan, ToolSpan } from './types.js'
import { LineIndex } from './line-index.js'

const TOOLS = 'tools'
/** The wrapper `strip.ts` parses a program in (same text → same parse, same bounded work). */
const WRAP_OPEN = 'async function __toolyard__() {'
const WRAP_CLOSE = '\n}'

const tt = TokenType

/** Names of the global object: as an identifier (not a member or a key) each reaches every global. */
const GLOBAL_NAMES = new Set(['globalThis', 'self', 'window', 'global', 'frames'])

/**
 * Names that reach code from strings, the global object or properties by a computed spelling,
 * wherever they appear (an identifier, a member, a key, a string used as a key).
 */
const REACHING_NAMES = new Set([
  'eval', 'Function', 'constructor', 'Reflect', 'Proxy', 'arguments', 'callee', 'caller',
  'getOwnPropertyDescriptor', 'getOwnPropertyDescriptors', 'getPrototypeOf', 'setPrototypeOf', '__proto__',
  // A getter installed on Object.prototype (`{ get: Object.prototype.valueOf }`) hands a bare name the global object.
  'defineProperty', 'defineProperties',
  '__defineGetter__', '__defineSetter__', '__lookupGetter__', '__lookupSetter__', 'prepareStackTrace', 'ShadowRealm',
])

/** Tokens after which a `[` reads a member of the value before it (`x[k]`, `f()[k]`, `` `a`[k] ``). */
const ENDS_VALUE = new Set([tt.name, tt._this, tt._super, tt.parenR, tt.bracketR, tt.braceR, tt.string, tt.num, tt.bigint, tt.decimal, tt.regexp, tt.backQuote, tt.questionDot, tt._null, tt._true, tt._false, tt.nonNullAssertion] as number[])

/** Tokens whose text may hold a backslash or any character (literals). */
const LITERAL_TEXT = new Set([tt.string, tt.template, tt.regexp, tt.jsxText, tt.eof] as number[])

/** The plan, the spans that reference tools, or the reason the text was refused. */
export interface PlanResult {
  readonly plan: PreflightPlan
  readonly spans: readonly ToolSpan[]
  /** Set when the program was refused (too long, too deep, too ambiguous, a syntax error): the plan is then empty and `dynamic`. */
  readonly refusal?: PreflightDiagnostic
  /** The deepest bracket nesting of the program's tokens (0 when it was not parsed). */
  readonly depth?: number
}

const UNKNOWN_PLAN: PreflightPlan = Object.freeze({ calls: Object.freeze([]), dynamic: true })

/** A refused program's diagnostic, positioned at the `(line N…)` its message names when it names one. */
function refusal(message: string): PreflightDiagnostic {
  const at = /\(line (\d+)(?:, column (\d+))?/.exec(message)
  const bound = /characters long|nests brackets|too ambiguous|nests too deeply/.test(message)
  return Object.freeze({
    line: at === null ? 1 : Number(at[1]),
    column: at === null || at[2] === undefined ? 1 : Number(at[2]),
    code: bound ? 'PROGRAM_BOUND' : 'SYNTAX',
    message,
    severity: 'error' as const,
  })
}

/** The literal value of a string or template token sequence starting at `i`, or `undefined` when it is not a plain literal. */
function literalAt(tokens: readonly SucraseToken[], i: number, text: string): { readonly value: string; readonly next: number } | undefined {
  const token = tokens[i]
  if (token === undefined) return undefined
  if (token.type === tt.string) {
    const raw = text.slice(token.start + 1, token.end - 1)
    // Escapes could spell any name; a name with one is treated as computed.
    return raw.includes('\\') ? undefined : { value: raw, next: i + 1 }
  }
  if (token.type === tt.backQuote) {
    const body = tokens[i + 1]
    const close = tokens[i + 2]
    if (body !== undefined && body.type === tt.template && close?.type === tt.backQuote) {
      const raw = text.slice(body.start, body.end)
      return raw.includes('\\') ? undefined : { value: raw, next: i + 3 }
    }
  }
  return undefined
}

/** Printable ASCII without a backslash: how a name, a keyword or a key is spelled when it hides nothing. */
const PLAIN_TEXT = /^[\x20-\x5b\x5d-\x7e]*$/

const isOpener = (type: number | undefined): boolean => type === tt.parenL || type === tt.bracketL || type === tt.braceL || type === tt.dollarBraceL

/**
 * For each bracket token, the index of its partner (opener → closer and closer → opener), and for
 * each opener the index of the opener around it, in one stack pass.
 */
function matchBrackets(tokens: readonly SucraseToken[]): { readonly match: Int32Array; readonly outer: Int32Array; readonly depth: number } {
  const match = new Int32Array(tokens.length).fill(-1)
  const outer = new Int32Array(tokens.length).fill(-1)
  const open: number[] = []
  let depth = 0
  for (let i = 0; i < tokens.length; i++) {
    const type = tokens[i]!.type
    if (isOpener(type)) {
      outer[i] = open.length === 0 ? -1 : open[open.length - 1]!
      open.push(i)
      depth = Math.max(depth, open.length)
    }
    else if (type === tt.parenR || type === tt.bracketR || type === tt.braceR) {
      const at = open.pop()
      if (at !== undefined) {
        match[at] = i
        match[i] = at
      }
    }
  }
  return { match, outer, depth }
}

/** What one pass learned about aliases, carried into the next (a use may come before its declaration). */
interface Aliases {
  /** Names that hold the whole namespace (`tools` and its aliases). */
  readonly namespaces: Set<string>
  /** Destructured bindings: local name → tool name. */
  readonly bound: Map<string, string>
  /** Offsets of the name tokens inside destructuring patterns (declarations, not uses). */
  readonly declaredAt: Set<number>
}

class PlanWalk {
  readonly calls: { name: string; offset: number }[] = []
  readonly spans: ToolSpan[] = []
  dynamic = false
  readonly namespaces: Set<string>
  readonly bound: Map<string, string>
  /** Destructured tools referenced after their declaration (the others are listed at their declaration). */
  readonly used = new Set<string>()
  readonly destructured: { name: string; local: string; offset: number; end: number }[] = []
  readonly declaredAt: Set<number>

  constructor(
    readonly tokens: readonly SucraseToken[],
    readonly text: string,
    readonly match: Int32Array,
    known: Aliases,
  ) {
    this.namespaces = new Set(known.namespaces)
    this.bound = new Map(known.bound)
    this.declaredAt = new Set(known.declaredAt)
  }

  nameAt(i: number): string | undefined {
    const token = this.tokens[i]
    return token !== undefined && token.type === tt.name && !token.isType ? this.text.slice(token.start, token.end) : undefined
  }

  typeAt(i: number): number | undefined {
    return this.tokens[i]?.type
  }

  /** The end offset of the call whose callee ends at token `i - 1` and whose `(` is token `i` (optionally after `?.`), else the end of token `i - 1`. */
  callEnd(i: number): number {
    let at = i
    if (this.typeAt(at) === tt.questionDot) at++
    if (this.typeAt(at) === tt.parenL) {
      const close = this.match[at]!
      if (close >= 0) return this.tokens[close]!.end
    }
    return this.tokens[i - 1]!.end
  }

  record(name: string, startToken: number, afterCallee: number): void {
    const start = this.tokens[startToken]!.start
    this.calls.push({ name, offset: start })
    this.spans.push({ start, end: this.callEnd(afterCallee) })
  }
}

/** `const { a, b: c, ...rest } = <namespace>` with `}` at `close`: registers the bindings. */
function destructure(walk: PlanWalk, close: number): boolean {
  const open = walk.match[close]!
  if (open < 0) return false
  let j = open + 1
  while (j < close) {
    if (walk.typeAt(j) === tt.ellipsis) {
      const rest = walk.nameAt(j + 1)
      if (rest === undefined) return false
      walk.namespaces.add(rest)
      j += 2
    } else {
      let key = walk.nameAt(j)
      let keyEnd = j + 1
      if (key === undefined) {
        const literal = literalAt(walk.tokens, j, walk.text)
        if (literal === undefined) return false
        key = literal.value
        keyEnd = literal.next
      }
      let local = key
      let next = keyEnd
      if (walk.typeAt(next) === tt.colon) {
        const renamed = walk.nameAt(next + 1)
        if (renamed === undefined) return false
        local = renamed
        next += 2
      }
      if (walk.typeAt(next) === tt.eq) {
        // A default value: skip to the next top-level comma.
        while (next < close && walk.typeAt(next) !== tt.comma) next = isOpener(walk.typeAt(next)) && walk.match[next]! > next ? walk.match[next]! + 1 : next + 1
      }
      walk.bound.set(local, key)
      walk.destructured.push({ name: key, local, offset: walk.tokens[j]!.start, end: walk.tokens[next - 1]!.end })
      walk.declaredAt.add(walk.tokens[j]!.start)
      walk.declaredAt.add(walk.tokens[next - 1]!.start)
      j = next
    }
    if (walk.typeAt(j) === tt.comma) j++
    else if (j !== close) return false
  }
  return true
}

/** A JavaScript line terminator (ASI ends a statement at any of them). */
const LINE_BREAK = /[\n\r\u2028\u2029]/

/** Whether the expression ends with token `i` (a `;`, `}`, `,`, the end, a type annotation, or a line break before a token that cannot continue it). */
function statementEndsAfter(walk: PlanWalk, i: number): boolean {
  const after = walk.tokens[i + 1]
  if (after === undefined || after.isType) return true
  const type = after.type
  if (type === tt.semi || type === tt.braceR || type === tt.comma || type === tt.eof) return true
  const continues = type === tt.dot || type === tt.questionDot || type === tt.bracketL || type === tt.parenL || type === tt.backQuote
  return !continues && LINE_BREAK.test(walk.text.slice(walk.tokens[i]!.end, after.start))
}

/** How one occurrence of a namespace name (`tools` or an alias) at token `i` is used. */
function namespaceUse(walk: PlanWalk, i: number): void {
  const next = walk.typeAt(i + 1)
  if (next === tt.dot || next === tt.questionDot) {
    const member = walk.tokens[i + 2]
    if (member !== undefined && member.type === tt.name) {
      walk.record(walk.text.slice(member.start, member.end), i, i + 3)
      return
    }
    if (next === tt.questionDot && walk.typeAt(i + 2) === tt.bracketL) return indexedUse(walk, i, i + 2)
    walk.dynamic = true
    return
  }
  if (next === tt.bracketL) return indexedUse(walk, i, i + 1)
  const prev = walk.typeAt(i - 1)
  // `typeof tools` reads nothing callable.
  if (prev === tt._typeof) return
  if (prev === tt.eq) {
    const before = walk.typeAt(i - 2)
    // `o.t = tools` stores the namespace where a member read cannot be followed.
    const alias = walk.typeAt(i - 3) === tt.dot || walk.typeAt(i - 3) === tt.questionDot ? undefined : walk.nameAt(i - 2)
    const ends = statementEndsAfter(walk, i)
    if (ends && alias !== undefined) {
      walk.namespaces.add(alias)
      return
    }
    if (ends && before === tt.braceR && destructure(walk, i - 2)) return
  }
  walk.dynamic = true
}

/** `tools[…]` (or `tools?.[…]`) with `[` at token `bracket`: a static name when the index is a plain literal, else `dynamic`. */
function indexedUse(walk: PlanWalk, i: number, bracket: number): void {
  const literal = literalAt(walk.tokens, bracket + 1, walk.text)
  if (literal !== undefined && walk.typeAt(literal.next) === tt.bracketR) walk.record(literal.value, i, literal.next + 1)
  else walk.dynamic = true
}

function walkTokens(walk: PlanWalk): void {
  const { tokens } = walk
  for (let i = 0; i < tokens.length; i++) {
    const name = walk.nameAt(i)
    if (name === undefined) continue
    const prev = walk.typeAt(i - 1)
    if (prev === tt.dot || prev === tt.questionDot) {
      // `globalThis.tools`, `this.tools`: the namespace read off the global object.
      if (name === TOOLS) walk.dynamic = true
      // Any other member name (`x.read_file`) is not a binding.
      continue
    }
    if (walk.typeAt(i + 1) === tt.colon && (prev === tt.braceL || prev === tt.comma)) continue
    if (walk.namespaces.has(name)) {
      const declared = prev === tt._const || prev === tt._let || prev === tt._var || prev === tt._function
      // A program that declares its own `tools` (or re-declares an alias) is read conservatively.
      if (declared && walk.typeAt(i + 1) !== tt.eq) walk.dynamic = true
      else if (!declared) namespaceUse(walk, i)
      continue
    }
    const tool = walk.bound.get(name)
    if (tool !== undefined && !walk.declaredAt.has(tokens[i]!.start)) {
      walk.used.add(name)
      walk.record(tool, i, i + 1)
    }
  }
}

/** Names a `[` can follow without reading a member: `await [a]`, `of [a]`, `yield [a]` open arrays. */
const OPENS_ARRAY_AFTER = new Set(['await', 'of', 'yield'])

/**
 * Whether the `[` at token `i` reads a property: a member (`x[k]`, `x?.[k]`) or a key of a brace
 * (`{ [k]: v }`, which reads in a destructuring pattern).
 */
function computedRead(walk: PlanWalk, outer: Int32Array, i: number): { readonly member: boolean } | undefined {
  const prev = walk.tokens[i - 1]
  if (prev === undefined) return undefined
  // After an erased type (`x!`, a cast) a `[` reads whatever value was before it.
  if (prev.isType || ENDS_VALUE.has(prev.type)) {
    const word = prev.type === tt.name && !prev.isType ? walk.text.slice(prev.start, prev.end) : ''
    return OPENS_ARRAY_AFTER.has(word) ? undefined : { member: true }
  }
  const around = outer[i]!
  if ((prev.type === tt.braceL || prev.type === tt.comma) && around >= 0 && walk.typeAt(around) === tt.braceL) return { member: false }
  return undefined
}

/** Whether the brackets `[` at `i` … `]` at `close` hold one number, or one plain string naming nothing that reaches. */
function harmlessKey(walk: PlanWalk, i: number, close: number): boolean {
  if (close === i + 2 && walk.typeAt(i + 1) === tt.num) return true
  const literal = literalAt(walk.tokens, i + 1, walk.text)
  return literal !== undefined && literal.next === close && PLAIN_TEXT.test(literal.value) && !REACHING_NAMES.has(literal.value) && literal.value !== TOOLS
}

/** `constructor(…)` right after `{`, `}` or `;`: a method being defined (in a class or an object), not read. */
function definesMethod(walk: PlanWalk, i: number): boolean {
  const prev = walk.typeAt(i - 1)
  return walk.typeAt(i + 1) === tt.parenL && (prev === tt.braceL || prev === tt.braceR || prev === tt.semi)
}

/** One token that can reach what the plan cannot name: `true` makes the plan `dynamic`. */
function reaches(walk: PlanWalk, outer: Int32Array, i: number): boolean {
  const token = walk.tokens[i]!
  const type = token.type
  // An escape or a non-ASCII character in a name or a keyword can spell anything (`\u0074ools`).
  if (!LITERAL_TEXT.has(type) && !PLAIN_TEXT.test(walk.text.slice(token.start, token.end))) return true
  if (token.isType) return false
  // `this` can be the global object; `with`, `import()` reach names no token spells.
  if (type === tt._this || type === tt._with || type === tt._import) return true
  if (type === tt.name) {
    const name = walk.text.slice(token.start, token.end)
    if (REACHING_NAMES.has(name)) return !(name === 'constructor' && definesMethod(walk, i))
    const prev = walk.typeAt(i - 1)
    const member = prev === tt.dot || prev === tt.questionDot
    const key = walk.typeAt(i + 1) === tt.colon && (prev === tt.braceL || prev === tt.comma)
    // `{ tools: t } = g` reads the namespace off `g` (the global object, by a getter): a key named tools is read as one.
    if (key && name === TOOLS) return true
    return GLOBAL_NAMES.has(name) && !member && !key
  }
  if (type === tt.string && walk.typeAt(i + 1) === tt.colon && (walk.typeAt(i - 1) === tt.braceL || walk.typeAt(i - 1) === tt.comma)) {
    // A quoted key (`{ 'constr\u0075ctor': C } = f` reads in a pattern).
    const literal = literalAt(walk.tokens, i, walk.text)
    return literal === undefined || !PLAIN_TEXT.test(literal.value) || REACHING_NAMES.has(literal.value) || literal.value === TOOLS
  }
  if (type === tt.bracketL) {
    const read = computedRead(walk, outer, i)
    const close = walk.match[i]!
    if (read === undefined || close < 0 || harmlessKey(walk, i, close)) return false
    // `x[k] = v` only writes; any other computed read may read `'constructor'`.
    return !(read.member && walk.typeAt(close + 1) === tt.eq)
  }
  return false
}

function reachesUnnamed(walk: PlanWalk, outer: Int32Array): boolean {
  for (let i = 0; i < walk.tokens.length; i++) if (reaches(walk, outer, i)) return true
  return false
}

/** Alias passes before the plan is `dynamic` (each resolves one more step of a chain declared after its use). */
const MAX_ALIAS_PASSES = 8

/** Walks until no pass finds a new alias (a use may precede its `var` or a function that runs later). */
function walkToFixpoint(tokens: readonly SucraseToken[], text: string, match: Int32Array): PlanWalk {
  let known: Aliases = { namespaces: new Set([TOOLS]), bound: new Map(), declaredAt: new Set() }
  for (let pass = 1; ; pass++) {
    const walk = new PlanWalk(tokens, text, match, known)
    walkTokens(walk)
    const settled = walk.namespaces.size === known.namespaces.size && walk.bound.size === known.bound.size
    if (settled || pass === MAX_ALIAS_PASSES) {
      if (!settled) walk.dynamic = true
      return walk
    }
    known = walk
  }
}

/**
 * The plan of a TypeScript/JavaScript program: its static tool references, the spans that reference
 * tools, and `dynamic`.
 */
export function extractPlan(program: string): PlanResult {
  const stripped = stripTypeScript(program)
  if (!stripped.ok) return { plan: UNKNOWN_PLAN, spans: [], refusal: refusal(stripped.message) }
  let tokens: readonly SucraseToken[]
  try {
    tokens = parse(WRAP_OPEN + program + WRAP_CLOSE, false, true, false).tokens
  } catch (error) {
    return { plan: UNKNOWN_PLAN, spans: [], refusal: refusal(`SyntaxError: ${error instanceof Error ? error.message : String(error)}`) }
  }
  const text = WRAP_OPEN + program + WRAP_CLOSE
  const brackets = matchBrackets(tokens)
  const walk = walkToFixpoint(tokens, text, brackets.match)
  if (reachesUnnamed(walk, brackets.outer)) walk.dynamic = true
  for (const d of walk.destructured) {
    walk.spans.push({ start: d.offset, end: d.end })
    if (!walk.used.has(d.local)) walk.calls.push({ name: d.name, offset: d.offset })
  }
  walk.calls.sort((a, b) => a.offset - b.offset)
  const lines = new LineIndex(program)
  const calls: PlannedCall[] = walk.calls.map((c) => Object.freeze({ name: c.name, ...lines.position(c.offset - WRAP_OPEN.length) }))
  const spans = walk.spans.map((s) => ({ start: s.start - WRAP_OPEN.length, end: s.end - WRAP_OPEN.length }))
  // The wrapper's own braces count one level.
  return { plan: Object.freeze({ calls: Object.freeze(calls), dynamic: walk.dynamic }), spans, depth: brackets.depth - 1 }
}

/** A `tools.name` reference in Python source (strings and comments are not excluded, so the list can be wider than the program). */
const PY_CALL = /\btools\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)/g
/** Every occurrence of the namespace's name, and whether it is read as `tools.name` (not `x.tools`, not passed on). */
const PY_TOOLS = /(\.\s*)?\btools\b(\s*\.\s*[A-Za-z_])?/g
const PY_REACHING = /\b(?:getattr|setattr|delattr|vars|globals|locals|exec|eval|compile|__import__|__builtins__|builtins|importlib|attrgetter|methodcaller|sys|gc|inspect)\b|\.\s*__\w+__/
/** A non-ASCII character: CPython folds identifiers to NFKC (`ｔools` is `tools`), so one that folds to ASCII is read as dynamic. */
const NON_ASCII = /[^\x00-\x7f]/gu

/** Whether the Python text reaches tools in a way {@link PY_CALL} cannot list. */
function pythonReaches(program: string): boolean {
  if (PY_REACHING.test(program)) return true
  for (const m of program.matchAll(PY_TOOLS)) if (m[1] !== undefined || m[2] === undefined) return true
  for (const m of program.matchAll(NON_ASCII)) if (/^[\x00-\x7f]+$/.test(m[0].normalize('NFKC'))) return true
  return false
}

/**
 * The plan of a Python program, by a regular-expression scan (linear: no nested
 * quantifiers): `tools.name` references; `dynamic` (failing closed) for any other
 * occurrence of `tools` (indexed, aliased, passed on, in a comment), any lookup by string
 * or reflection (`getattr`, `globals()`, `__dict__`, `exec`, `eval`, `__import__`,
 * `vars`…) and any character that folds to ASCII. No type-check runs for Python.
 */
export function extractPythonPlan(program: string): PlanResult {
  const tooLong = programTooLong(program)
  if (tooLong !== undefined) return { plan: UNKNOWN_PLAN, spans: [], refusal: refusal(tooLong) }
  const lines = new LineIndex(program)
  const calls: PlannedCall[] = []
  for (const m of program.matchAll(PY_CALL)) calls.push(Object.freeze({ name: m[1]!, ...lines.position(m.index + m[0].length - m[1]!.length) }))
  return { plan: Object.freeze({ calls: Object.freeze(calls), dynamic: pythonReaches(program) }), spans: [] }
}
