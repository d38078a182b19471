/**
 * TypeScript stripping for Code Mode programs, platform-neutral (sucrase is pure JavaScript: it
 * runs in Node, browsers and workerd).
 * @module
 */
import { transform } from 'sucrase/dist/index.js'
import { parse } from 'sucrase/dist/parser/index.js'
import type { SucraseToken } from 'sucrase/dist/parser/index.js'
import { ContextualKeyword } from 'sucrase/dist/parser/tokenizer/keywords.js'
import { TokenType } from 'sucrase/dist/parser/tokenizer/types.js'
import { programTooLong } from './sandbox-protocol.js'

export { MAX_PROGRAM_CHARS } from './sandbox-protocol.js'

/** The outcome of {@link stripTypeScript}: JavaScript, or a message for the model. */
export type StripResult = { readonly ok: true; readonly code: string } | { readonly ok: false; readonly message: string }

/** The deepest bracket nesting (`(`, `[`, `{`, `${`) a program may have. */
export const MAX_NESTING_DEPTH = 256

/**
 * Work units (discarded tokens + discarded characters + 1 per backtrack) allowed per
 * program character. Real code wastes at most 0.21 a character (measured over this
 * repository's 320 TypeScript files), a file of nothing but `(a = 1, b = (c = 2) => c) => a`
 * 2.1; a unit costs sucrase about 0.6 to 1.5 µs, so a program at the size cap is
 * refused within 1 to 2 s of work (a loaded 2-core machine) whatever it holds.
 */
export const STRIP_WORK_PER_CHAR = 4

/**
 * Work units every program may waste on top of {@link STRIP_WORK_PER_CHAR}: room for
 * short programs with real ambiguity (eight nested `<T>(` waste ~6 000), and about 10 to
 * 100 ms of work (warm to cold JIT) for the 158-byte program that once froze a server.
 */
export const STRIP_WORK_BASE = 20_000

/** The program is parsed as the body of this function so `return` and `await` are legal at its top level. */
const WRAP_OPEN = 'async function __toolyard__() {'
const WRAP_CLOSE = '\n}'

const suspicious = /\b(?:enum|namespace|module|constructor|import|export)\b/

const tt = TokenType
const ck = ContextualKeyword

function lineOf(text: string, offset: number): number {
  let line = 1
  // Stryker disable next-line EqualityOperator,ConditionalExpression: every offset passed is a bracket's
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++
  return line
}

const modifiers = () => new Set([tt._public, tt._private, tt._protected, tt._readonly, tt._override])

/** The first non-erasable construct in the token stream, as a message, or `undefined`. */
function findNonErasable(tokens: readonly SucraseToken[], text: string): string | undefined {
  const paramModifiers = modifiers()
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!
    const at = () => `(line ${lineOf(text, token.start)})`
    if (token.type === tt._enum && !token.isType) {
      return `enum declarations are not supported: only erasable TypeScript is accepted ${at()}; use a union of string literals or a plain object instead`
    }
    if (
      token.type === tt.name &&
      token.isType &&
      (token.contextualKeyword === ck._namespace || token.contextualKeyword === ck._module) &&
      // Stryker disable next-line OptionalChaining: tokens[0] is the wrapper's `async`
      tokens[i - 1]?.type !== tt._declare
    ) {
      return `namespace declarations are not supported: only erasable TypeScript is accepted ${at()}; use a plain object instead`
    }
    if (token.type === tt._import && !token.isType) {
      // Stryker disable next-line OptionalChaining: the token stream of a parsed program ends with the wrapper's `}` and eof
      const next = tokens[i + 1]?.type
      if (next !== tt.parenL && next !== tt.dot) {
        return `import declarations are not supported in a program ${at()}; the program is the body of an async function: use \`await import(…)\` or the provided globals`
      }
    }
    if (token.type === tt._export && !token.isType) {
      return `export declarations are not supported in a program ${at()}; return the value instead`
    }
    // Stryker disable next-line OptionalChaining: the token stream of a parsed program ends with the wrapper's `}` and eof (neither a `constructor`)
    if (token.contextualKeyword === ck._constructor && tokens[i + 1]?.type === tt.parenL) {
      let depth = 0
      for (let j = i + 1; j < tokens.length; j++) {
        const t = tokens[j]!
        if (t.type === tt.parenL || t.type === tt.bracketL || t.type === tt.braceL || t.type === tt.dollarBraceL) depth++
        else if (t.type === tt.parenR || t.type === tt.bracketR || t.type === tt.braceR) depth--
        if (depth === 0) break
        if (depth === 1 && paramModifiers.has(t.type) && !t.isType) {
          return `parameter properties are not supported: only erasable TypeScript is accepted (line ${lineOf(text, t.start)}); assign the field in the constructor body instead`
        }
      }
    }
  }
  return undefined
}

/** The parts of sucrase's parser state (`State`, `StateSnapshot`) the work meter reads. */
interface SucraseSnapshot {
  readonly tokensLength: number
  readonly pos: number
  readonly start: number
  readonly error: unknown
}
interface SucraseState {
  readonly tokens: readonly unknown[]
  readonly pos: number
  readonly error: { readonly pos?: unknown } | null
}
type Restore = (this: SucraseState, snapshot: SucraseSnapshot) => void

interface WorkMeter {
  remaining: number
  /** Offset (in the wrapped text) of the construct being retried when the budget ran out. */
  exceededAt: number | undefined
}

class StripWorkExceeded extends Error {}

const METER_SLOT = Symbol.for('toolyard.strip.work-meter')
interface MeterSlot {
  current: WorkMeter | undefined
}

/** A field only sucrase's parser state (and its snapshots) assign: the trap below recognises its constructor by it. */
const STATE_FIELD = 'inDisallowConditionalTypesContext'

function parserStatePrototypes(calls: ReadonlyArray<() => unknown>): Set<Record<PropertyKey, unknown>> {
  const found = new Set<Record<PropertyKey, unknown>>()
  const previous = Object.getOwnPropertyDescriptor(Object.prototype, STATE_FIELD)
  Object.defineProperty(Object.prototype, STATE_FIELD, {
    configurable: true,
    set(this: object, value: unknown) {
      const proto = Object.getPrototypeOf(this) as Record<PropertyKey, unknown> | null
      if (proto !== null && typeof proto.restoreFromSnapshot === 'function') found.add(proto)
      Object.defineProperty(this, STATE_FIELD, { value, writable: true, enumerable: true, configurable: true })
    },
  })
  try {
    for (const call of calls) call()
  } finally {
    if (previous === undefined) delete (Object.prototype as Record<string, unknown>)[STATE_FIELD]
    else Object.defineProperty(Object.prototype, STATE_FIELD, previous)
  }
  return found
}

function wrapRestore(proto: Record<PropertyKey, unknown>, slot: MeterSlot): void {
  const original = proto.restoreFromSnapshot as Restore
  const restore: Restore = function (snapshot) {
    const meter = slot.current
    if (meter !== undefined) {
      // A parse error moves `pos` to the end of the input: what was really scanned ends at the error.
      const errorPos = this.error !== null && snapshot.error === null ? this.error.pos : undefined
      const scannedTo = typeof errorPos === 'number' ? errorPos : this.pos
      meter.remaining -= this.tokens.length - snapshot.tokensLength + Math.max(0, scannedTo - snapshot.pos) + 1
      if (meter.remaining < 0) {
        meter.exceededAt ??= snapshot.start
        throw new StripWorkExceeded('strip work budget exceeded')
      }
    }
    original.call(this, snapshot)
  }
  proto.restoreFromSnapshot = restore
  Object.defineProperty(proto, METER_SLOT, { value: slot })
}

const parseWrapped = (wrapped: string) => parse(wrapped, false, true, false).tokens
const transformWrapped = (wrapped: string) => transform(wrapped, { transforms: ['typescript'], disableESTransforms: true, keepUnusedImports: true }).code

let installed: MeterSlot | null | undefined

/** Installs the work meter once, lazily (importing this module changes nothing), and proves it engaged. */
function meterSlot(): MeterSlot | undefined {
  if (installed !== undefined) return installed ?? undefined
  installed = null
  const probe = `${WRAP_OPEN}y = <T>(x)${WRAP_CLOSE}`
  let protos: Set<Record<PropertyKey, unknown>>
  try {
    protos = parserStatePrototypes([() => parseWrapped(probe), () => transformWrapped(probe)])
  } catch {
    return undefined
  }
  let slot: MeterSlot | undefined
  for (const proto of protos) slot ??= proto[METER_SLOT] as MeterSlot | undefined
  slot ??= { current: undefined }
  for (const proto of protos) if (proto[METER_SLOT] === undefined) wrapRestore(proto, slot)
  for (const call of [parseWrapped, transformWrapped]) {
    const meter: WorkMeter = { remaining: Number.MAX_SAFE_INTEGER, exceededAt: undefined }
    slot.current = meter
    try {
      call(probe)
    } finally {
      slot.current = undefined
    }
    if (meter.remaining === Number.MAX_SAFE_INTEGER) return undefined
  }
  installed = slot
  return slot
}

/**
 * Runs one synchronous sucrase call with a work budget armed (and disarmed in `finally`, so sucrase
 * used elsewhere in the process is unaffected).
 */
function metered<T>(slot: MeterSlot, budget: number, call: () => T): { readonly value: T } | { readonly exceededAt: number } {
  const meter: WorkMeter = { remaining: budget, exceededAt: undefined }
  slot.current = meter
  try {
    const value = call()
    return meter.exceededAt === undefined ? { value } : { exceededAt: meter.exceededAt }
  } catch (error) {
    if (meter.exceededAt !== undefined) return { exceededAt: meter.exceededAt }
    throw error
  } finally {
    slot.current = undefined
  }
}

/** Keywords after which a `/` starts a regular expression, not a division. */
const REGEX_AFTER_WORD = new Set(['return', 'typeof', 'instanceof', 'in', 'of', 'new', 'delete', 'void', 'throw', 'case', 'do', 'else', 'yield', 'await'])

const isWordChar = (code: number): boolean =>
  (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 36 || code === 95 || code > 127

/** Whether a `/` at `at` (in code) starts a regular expression, judged by the code before it. */
function regexCanStart(text: string, at: number): boolean {
  let i = at - 1
  while (i >= 0 && /\s/.test(text[i]!)) i--
  if (i < 0) return true
  const code = text.charCodeAt(i)
  if (code === 41 || code === 93 || code === 125) return false // ) ] }
  if (!isWordChar(code)) return true
  let start = i
  while (start > 0 && isWordChar(text.charCodeAt(start - 1))) start--
  return REGEX_AFTER_WORD.has(text.slice(start, i + 1))
}

/** The index just past a quoted string, regex or comment body starting at `from`, ending at `close` (or a line end when `oneLine`). */
function skipUntil(text: string, from: number, close: string, oneLine: boolean): number {
  let inClass = false
  for (let i = from; i < text.length; i++) {
    const ch = text[i]!
    if (ch === '\\' && close !== '*/') {
      i++
      continue
    }
    if (oneLine && ch === '\n') return i
    if (close === '/') {
      if (ch === '[') inClass = true
      else if (ch === ']') inClass = false
      else if (ch === '/' && !inClass) return i + 1
      continue
    }
    if (text.startsWith(close, i)) return i + close.length
  }
  return text.length
}

/** Template text from `from`: the index past its closing backtick, or of the `{` of a `${` (then `opensSubstitution`). */
function skipTemplate(text: string, from: number): { readonly next: number; readonly opensSubstitution: boolean } {
  for (let i = from; i < text.length; i++) {
    const ch = text[i]!
    if (ch === '\\') i++
    else if (ch === '`') return { next: i + 1, opensSubstitution: false }
    else if (ch === '$' && text[i + 1] === '{') return { next: i + 2, opensSubstitution: true }
  }
  return { next: text.length, opensSubstitution: false }
}

/** One linear scan: the offset of the first bracket nested deeper than `limit`, or `undefined`. */
function tooDeepAt(text: string, limit: number): number | undefined {
  const open: boolean[] = []
  let i = 0
  while (i < text.length) {
    const ch = text[i]!
    if (ch === '"' || ch === "'") i = skipUntil(text, i + 1, ch, true)
    else if (ch === '/' && text[i + 1] === '/') i = skipUntil(text, i + 2, '\n', true)
    else if (ch === '/' && text[i + 1] === '*') i = skipUntil(text, i + 2, '*/', false)
    else if (ch === '/' && regexCanStart(text, i)) i = skipUntil(text, i + 1, '/', true)
    else if (ch === '\\') i += 2
    else if (ch === '`' || (ch === '}' && open[open.length - 1] === true)) {
      if (ch === '}') open.pop()
      const template = skipTemplate(text, i + 1)
      if (template.opensSubstitution) {
        open.push(true)
        if (open.length > limit) return i
      }
      i = template.next
    } else {
      if (ch === '(' || ch === '[' || ch === '{') {
        open.push(false)
        if (open.length > limit) return i
      } else if (ch === ')' || ch === ']' || ch === '}') open.pop()
      i++
    }
  }
  return undefined
}

/** Sucrase reports `(line:column)`, both 1-based. */
function syntaxMessage(error: unknown, program: string): string {
  if (error instanceof RangeError) {
    return 'SyntaxError: the program nests too deeply to strip (a chain of operators or arrow functions sucrase parses recursively); split it into named intermediate values'
  }
  const raw = error instanceof Error ? error.message : String(error)
  const programLines = lineOf(program, program.length)
  const message = raw.replace(/\((\d+):(\d+)\)\s*$/, (_all, line: string, column: string) => {
    if (Number(line) > programLines) {
      const lastColumn = program.length - (program.lastIndexOf('\n') + 1) + 1
      return `(line ${programLines}, column ${lastColumn}: at the end of the program)`
    }
    const col = line === '1' ? Math.max(1, Number(column) - WRAP_OPEN.length) : Number(column)
    return `(line ${line}, column ${col})`
  })
  return `SyntaxError: ${message}`
}

function tooAmbiguous(wrapped: string, exceededAt: number): string {
  return `SyntaxError: the program's syntax is too ambiguous to strip within the work budget (line ${lineOf(wrapped, exceededAt)}): nested type assertions (\`<T>(…)\`) or arrow functions with default parameters make the TypeScript parser retry; use \`x as T\`, add parentheses or name intermediate values`
}

/**
 * Strips TypeScript types from a program (the body of an async function), keeping line numbers.
 * Never throws; its time is linear in the program's length.
 */
export function stripTypeScript(program: string): StripResult {
  const tooLong = programTooLong(program)
  if (tooLong !== undefined) return { ok: false, message: tooLong }
  const deepAt = tooDeepAt(program, MAX_NESTING_DEPTH)
  if (deepAt !== undefined) {
    return {
      ok: false,
      message: `SyntaxError: the program nests brackets deeper than ${MAX_NESTING_DEPTH} levels (line ${lineOf(program, deepAt)}); flatten it: name intermediate values or build data in steps`,
    }
  }
  const slot = meterSlot()
  if (slot === undefined) return { ok: false, message: 'SyntaxError: the TypeScript stripper is unavailable (its work meter could not be installed)' }
  const wrapped = WRAP_OPEN + program + WRAP_CLOSE
  const budget = STRIP_WORK_PER_CHAR * program.length + STRIP_WORK_BASE
  try {
    if (suspicious.test(program)) {
      const parsed = metered(slot, budget, () => parseWrapped(wrapped))
      if (!('value' in parsed)) return { ok: false, message: tooAmbiguous(wrapped, parsed.exceededAt) }
      const problem = findNonErasable(parsed.value, wrapped)
      if (problem !== undefined) return { ok: false, message: `SyntaxError: ${problem}` }
    }
    const stripped = metered(slot, budget, () => transformWrapped(wrapped))
    if (!('value' in stripped)) return { ok: false, message: tooAmbiguous(wrapped, stripped.exceededAt) }
    const out = stripped.value
    if (!out.startsWith(WRAP_OPEN) || !out.endsWith(WRAP_CLOSE)) {
      return { ok: false, message: 'SyntaxError: the program could not be stripped of its types' }
    }
    return { ok: true, code: out.slice(WRAP_OPEN.length, out.length - WRAP_CLOSE.length) }
  } catch (error) {
    return { ok: false, message: syntaxMessage(error, program) }
  }
}
