/**
 * TypeScript stripping for Code Mode programs, host-side and platform-neutral (sucrase
 * is pure JavaScript: it runs in Node, browsers and workerd). Types are erased in place,
 * so line numbers of the output match the model's source; non-erasable syntax (`enum`,
 * namespaces, parameter properties) and module syntax are rejected with a message
 * naming the line, before any sandbox is started.
 *
 * @module
 */
import { transform } from 'sucrase'
import { parse } from 'sucrase/dist/parser/index.js'
import type { SucraseToken } from 'sucrase/dist/parser/index.js'
import { ContextualKeyword } from 'sucrase/dist/parser/tokenizer/keywords.js'
import { TokenType } from 'sucrase/dist/parser/tokenizer/types.js'

/** The outcome of {@link stripTypeScript}: JavaScript, or a message for the model. */
export type StripResult = { readonly ok: true; readonly code: string } | { readonly ok: false; readonly message: string }

/**
 * The program is parsed as the body of this function so `return` and `await` are legal
 * at its top level. It sits on the program's first line, keeping every line number.
 */
const WRAP_OPEN = 'async function __toolyard__() {'
const WRAP_CLOSE = '\n}'

/** Only programs mentioning one of these words can hold syntax sucrase accepts but we reject. */
const suspicious = /\b(?:enum|namespace|module|constructor|import|export)\b/

const tt = TokenType
const ck = ContextualKeyword

function lineOf(text: string, offset: number): number {
  let line = 1
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
      // Stryker disable next-line OptionalChaining: tokens[0] is the wrapper's `async`, never a construct found here, so tokens[i - 1] always exists; the `?.` only satisfies noUncheckedIndexedAccess
      tokens[i - 1]?.type !== tt._declare
    ) {
      return `namespace declarations are not supported: only erasable TypeScript is accepted ${at()}; use a plain object instead`
    }
    if (token.type === tt._import && !token.isType) {
      // Stryker disable next-line OptionalChaining: the token stream of a parsed program ends with the wrapper's `}` and eof, so an `import` is never last; the `?.` only satisfies noUncheckedIndexedAccess
      const next = tokens[i + 1]?.type
      if (next !== tt.parenL && next !== tt.dot) {
        return `import declarations are not supported in a program ${at()}; the program is the body of an async function: use \`await import(…)\` or the provided globals`
      }
    }
    if (token.type === tt._export && !token.isType) {
      return `export declarations are not supported in a program ${at()}; return the value instead`
    }
    // Stryker disable next-line OptionalChaining: the token stream of a parsed program ends with the wrapper's `}` and eof (neither a `constructor`), so tokens[i + 1] always exists; the `?.` only satisfies noUncheckedIndexedAccess
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

/** Sucrase reports `(line:column)`, both 1-based; on line 1 the column includes the wrapper, so shift it back. */
function syntaxMessage(error: unknown, programLines: number): string {
  const raw = error instanceof Error ? error.message : String(error)
  const message = raw.replace(/\((\d+):(\d+)\)\s*$/, (_all, line: string, column: string) => {
    if (Number(line) > programLines) return '(at the end of the program)'
    const col = line === '1' ? Math.max(1, Number(column) - WRAP_OPEN.length) : Number(column)
    return `(line ${line}, column ${col})`
  })
  return `SyntaxError: ${message}`
}

/**
 * Strips TypeScript types from a program (the body of an async function), keeping line
 * numbers. Returns `{ ok: false, message }` for syntax errors and for non-erasable or
 * module syntax. Never throws.
 */
export function stripTypeScript(program: string): StripResult {
  const wrapped = WRAP_OPEN + program + WRAP_CLOSE
  try {
    if (suspicious.test(program)) {
      const problem = findNonErasable(parse(wrapped, false, true, false).tokens, wrapped)
      if (problem !== undefined) return { ok: false, message: `SyntaxError: ${problem}` }
    }
    const out = transform(wrapped, { transforms: ['typescript'], disableESTransforms: true, keepUnusedImports: true }).code
    if (!out.startsWith(WRAP_OPEN) || !out.endsWith(WRAP_CLOSE)) {
      return { ok: false, message: 'SyntaxError: the program could not be stripped of its types' }
    }
    return { ok: true, code: out.slice(WRAP_OPEN.length, out.length - WRAP_CLOSE.length) }
  } catch (error) {
    return { ok: false, message: syntaxMessage(error, lineOf(program, program.length)) }
  }
}
