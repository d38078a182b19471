/**
 * The call plan of a program, read from its tokens without running it: every static
 * tool reference (`tools.x(…)`, `tools?.x(…)`, `tools['x'](…)`, `` tools[`x`](…) ``,
 * `const { a, b: c } = tools` then `a(…)`, `const t = tools; t.x(…)`) and whether the
 * program can reach tools the list cannot name (`dynamic`).
 *
 * The text is hostile, so it is first put through {@link stripTypeScript}, which bounds
 * its length, its bracket nesting and the parser's backtracking work and answers a
 * syntax error as a message. Only a program it accepted is parsed again here, with the
 * very same parser call on the very same text, so this parse does the same bounded work.
 * Everything after the parse is one pass over the tokens (plus one for bracket matching):
 * linear in the program's length.
 *
 * Names are resolved by spelling, not by scope: a shadowing declaration of an alias makes
 * the plan wider or `dynamic`, never narrower. Python programs get a lighter scan
 * ({@link extractPythonPlan}).
 *
 * @module
 */
import { parse } from 'sucrase/dist/parser/index.js'
import type { SucraseToken } from 'sucrase/dist/parser/index.js'
import { TokenType } from 'sucrase/dist/parser/tokenizer/types.js'
import { stripTypeScript } from '../code-runtime/strip.js'
import { programTooLong } from '../code-runtime/sandbox-protocol.js'
import type { PlannedCall, PreflightDiagnostic, PreflightPlan, ToolSpan } from './types.js'
import { LineIndex } from './line-index.js'

/** The global a program reaches tools through. */
const TOOLS = 'tools'
/** The wrapper `strip.ts` parses a program in (same text → same parse, same bounded work). */
const WRAP_OPEN = 'async function __toolyard__() {'
const WRAP_CLOSE = '\n}'

const tt = TokenType

/** Names through which a program reaches globals by a computed spelling. */
const GLOBAL_REACH = new Set(['globalThis', 'eval', 'Function'])

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

const isOpener = (type: number | undefined): boolean => type === tt.parenL || type === tt.bracketL || type === tt.braceL || type === tt.dollarBraceL

/** For each bracket token, the index of its partner (opener → closer and closer → opener), in one stack pass; `-1` elsewhere. */
function matchBrackets(tokens: readonly SucraseToken[]): { readonly match: Int32Array; readonly depth: number } {
  const match = new Int32Array(tokens.length).fill(-1)
  const open: number[] = []
  let depth = 0
  for (let i = 0; i < tokens.length; i++) {
    const type = tokens[i]!.type
    if (isOpener(type)) {
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
  return { match, depth }
}

/** One pass's mutable state. */
class PlanWalk {
  readonly calls: { name: string; offset: number }[] = []
  readonly spans: ToolSpan[] = []
  dynamic = false
  /** Names that hold the whole namespace (`tools` and its aliases). */
  readonly namespaces = new Set([TOOLS])
  /** Destructured bindings: local name → tool name. */
  readonly bound = new Map<string, string>()
  /** Destructured tools referenced after their declaration (the others are listed at their declaration). */
  readonly used = new Set<string>()
  readonly destructured: { name: string; local: string; offset: number; end: number }[] = []
  /** Offsets of the name tokens inside destructuring patterns (declarations, not uses). */
  readonly declaredAt = new Set<number>()

  constructor(
    readonly tokens: readonly SucraseToken[],
    readonly text: string,
    readonly match: Int32Array,
  ) {}

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

/** `const { a, b: c, ...rest } = <namespace>` with `}` at `close`: registers the bindings; `false` when the pattern is not a flat one. */
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

/** Whether the expression ends with token `i` (a `;`, `}`, `,`, the end, a type annotation, or a line break before a token that cannot continue it). */
function statementEndsAfter(walk: PlanWalk, i: number): boolean {
  const after = walk.tokens[i + 1]
  if (after === undefined || after.isType) return true
  const type = after.type
  if (type === tt.semi || type === tt.braceR || type === tt.comma || type === tt.eof) return true
  const continues = type === tt.dot || type === tt.questionDot || type === tt.bracketL || type === tt.parenL || type === tt.backQuote
  return !continues && walk.text.slice(walk.tokens[i]!.end, after.start).includes('\n')
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
    const alias = walk.nameAt(i - 2)
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

/** Walks the tokens once, in order: an alias or a destructuring is known before its uses. */
function walkTokens(walk: PlanWalk): void {
  const { tokens } = walk
  for (let i = 0; i < tokens.length; i++) {
    // `this[…]`: at a sloppy function's top level `this` is the global object.
    if (tokens[i]!.type === tt._this && walk.typeAt(i + 1) === tt.bracketL) walk.dynamic = true
    const name = walk.nameAt(i)
    if (name === undefined) continue
    const prev = walk.typeAt(i - 1)
    if (prev === tt.dot || prev === tt.questionDot) {
      // `globalThis.tools`, `this.tools`: the namespace read off the global object.
      if (name === TOOLS) walk.dynamic = true
      // Any other member name (`x.read_file`) is not a binding.
      continue
    }
    // The global object and code from strings can reach `tools` by any spelling.
    if (GLOBAL_REACH.has(name) && walk.typeAt(i + 1) !== tt.colon) walk.dynamic = true
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

/**
 * The plan of a TypeScript/JavaScript program: its static tool references, the spans
 * that reference tools, and `dynamic`. A program {@link stripTypeScript} refuses (over a
 * bound, or a syntax error) gets an empty, `dynamic` plan and the refusal as a diagnostic.
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
  const walk = new PlanWalk(tokens, text, brackets.match)
  walkTokens(walk)
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

/** A `tools.name(` call in Python source (a line scan: strings and comments are not excluded, so the list can be wider than the program). */
const PY_CALL = /\btools\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)/g
/** `getattr(tools, …)`, `tools[…]` or `tools` passed on: names the scan cannot see. */
const PY_DYNAMIC = /\bgetattr\s*\(\s*tools\b|\btools\s*\[|\btools\s*[,)]|=\s*tools\s*$/m

/**
 * The plan of a Python program, by a regular-expression scan (linear: no nested
 * quantifiers): `tools.name` references, `dynamic` for `getattr(tools, …)`, indexing or
 * passing `tools` on. No type-check runs for Python.
 */
export function extractPythonPlan(program: string): PlanResult {
  const tooLong = programTooLong(program)
  if (tooLong !== undefined) return { plan: UNKNOWN_PLAN, spans: [], refusal: refusal(tooLong) }
  const lines = new LineIndex(program)
  const calls: PlannedCall[] = []
  for (const m of program.matchAll(PY_CALL)) calls.push(Object.freeze({ name: m[1]!, ...lines.position(m.index + m[0].length - m[1]!.length) }))
  return { plan: Object.freeze({ calls: Object.freeze(calls), dynamic: PY_DYNAMIC.test(program) }), spans: [] }
}
