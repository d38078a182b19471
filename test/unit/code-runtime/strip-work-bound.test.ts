/**
 * Stripping is bounded by work (issue 19): sucrase's TypeScript parser backtracks
 * exponentially on nested type syntax, so `stripTypeScript` checks the program's length
 * and bracket nesting first, then counts the parser work every backtrack throws away and
 * refuses the program once it exceeds a budget linear in its length. Each pathological
 * shape here took seconds to hours before (20 levels of `<T>(` ≈ 5 s, each level
 * doubling); each now answers within a bound no real program comes near.
 *
 * Times are asserted only against generous ceilings (seconds, where the old code took
 * minutes or hours); the figures themselves are `npm run bench:sandbox`'s business.
 */
import fc from 'fast-check'
import { transform } from 'sucrase'
import { describe, expect, it } from 'vitest'
import { MAX_NESTING_DEPTH, MAX_PROGRAM_CHARS, stripTypeScript } from '../../../src/code-runtime/strip.js'

const AMBIGUOUS = /^SyntaxError: the program's syntax is too ambiguous to strip within the work budget \(line \d+\): /
/** Far above what a bounded strip takes on a loaded 2-core machine, far below what the old code took. */
const GENEROUS_MS = 15_000

const castChain = (levels: number, inner = 'x') => '<T>('.repeat(levels) + inner + ')'.repeat(levels)
function defaultArrows(levels: number): string {
  let source = '0'
  for (let i = 0; i < levels; i++) source = `(a${i} = ${source}) => 0`
  return source
}
const fill = (line: string, chars: number) => line.repeat(Math.floor(chars / line.length))

function timed(program: string): { readonly out: ReturnType<typeof stripTypeScript>; readonly ms: number } {
  const started = performance.now()
  const out = stripTypeScript(program)
  return { out, ms: performance.now() - started }
}

describe('stripTypeScript: the work bound', () => {
  it('refuses 30 nested type assertions `<T>(…)` (the 158-byte program that froze the server) with a clear message', () => {
    const program = `return ${castChain(30)}`
    expect(program.length).toBeLessThan(160)
    const { out, ms } = timed(program)
    expect(out.ok).toBe(false)
    if (!out.ok) expect(out.message).toMatch(AMBIGUOUS)
    if (!out.ok) expect(out.message).toContain('use `x as T`')
    expect(ms).toBeLessThan(GENEROUS_MS)
  }, 60_000)

  it('refuses 30 nested arrow functions with default parameters', () => {
    const { out, ms } = timed(`const f = 1\nreturn ${defaultArrows(30)}`)
    expect(out).toEqual({ ok: false, message: expect.stringMatching(AMBIGUOUS) })
    if (!out.ok) expect(out.message).toMatch(/\(line 2\)/)
    expect(ms).toBeLessThan(GENEROUS_MS)
  }, 60_000)

  it('bounds a program at the size cap made of nothing but ambiguity, and one hiding a long string inside it', () => {
    for (const program of [fill(`y = ${castChain(14)}\n`, MAX_PROGRAM_CHARS), `return ${castChain(25, `"${'a'.repeat(MAX_PROGRAM_CHARS - 200)}"`)}`]) {
      expect(program.length).toBeLessThanOrEqual(MAX_PROGRAM_CHARS)
      const { out, ms } = timed(program)
      expect(out).toEqual({ ok: false, message: expect.stringMatching(AMBIGUOUS) })
      expect(ms).toBeLessThan(GENEROUS_MS)
    }
  }, 60_000)

  it('never refuses dense but real code, even at the size cap (the budget has a wide margin)', () => {
    // Each line is legitimate TypeScript that makes sucrase backtrack; real files waste ten times less per character.
    const lines = [
      'const h = (a = 1, b = (c = 2) => c) => a\n',
      'y = <T>(x)\n',
      'const i = <T,>(x: T): T => x\n',
      'const f = async (a: number, b: { c: string[] }): Promise<void> => { await g(a) }\n',
      'if (a < b && c > d) y = f<A, B<C>>(x, (z) => z)\n',
    ]
    for (const line of lines) {
      const program = fill(line, MAX_PROGRAM_CHARS)
      const out = stripTypeScript(program)
      expect(out.ok, line).toBe(true)
    }
    expect(stripTypeScript(`return ${castChain(8)}`)).toEqual({ ok: true, code: `return ${'('.repeat(8)}x${')'.repeat(8)}` })
    expect(stripTypeScript(`return ${defaultArrows(6)}`).ok).toBe(true)
  }, 120_000)

  it('counts only its own calls: sucrase used directly afterwards is neither metered nor broken', () => {
    expect(stripTypeScript(`return ${castChain(30)}`).ok).toBe(false)
    // 12 levels waste ~45 000 tokens: more than a 60-character program's budget allows, yet a direct call completes.
    const direct = transform(`return ${castChain(12)}`, { transforms: ['typescript'] }).code
    expect(direct).toContain('x')
    expect(stripTypeScript('const a: number = 1\nreturn a')).toEqual({ ok: true, code: 'const a = 1\nreturn a' })
  }, 60_000)
})

describe('stripTypeScript: the linear pre-checks', () => {
  it('accepts a program of exactly MAX_PROGRAM_CHARS characters and refuses one more, before parsing it', () => {
    expect(MAX_PROGRAM_CHARS).toBe(256 * 1024)
    const filler = `//${'x'.repeat(MAX_PROGRAM_CHARS - 2)}`
    expect(stripTypeScript(filler).ok).toBe(true)
    // One character more, and a body that would otherwise take sucrase hours: refused on its length alone.
    const over = `return ${castChain(40)}${' '.repeat(MAX_PROGRAM_CHARS)}`
    const { out, ms } = timed(over)
    expect(out).toEqual({
      ok: false,
      message: `SyntaxError: the program is ${over.length} characters long; at most ${MAX_PROGRAM_CHARS} are accepted: pass data through tool calls instead of embedding it, or split the work into several runs`,
    })
    expect(ms).toBeLessThan(GENEROUS_MS)
  })

  it('refuses brackets of every kind nested deeper than MAX_NESTING_DEPTH, naming the line', () => {
    expect(MAX_NESTING_DEPTH).toBe(256)
    const kinds: ReadonlyArray<readonly [string, string]> = [
      ['(', ')'],
      ['[', ']'],
      ['({a:', '})'],
      ['`${', '}`'],
    ]
    for (const [open, close] of kinds) {
      const perLevel = open === '({a:' ? 2 : 1
      const levels = Math.floor(MAX_NESTING_DEPTH / perLevel)
      const within = `let y = 0\nreturn ${open.repeat(levels)}1${close.repeat(levels)}`
      expect(stripTypeScript(within).ok, open).toBe(true)
      const deeper = `let y = 0\nreturn ${open.repeat(levels + 1)}1${close.repeat(levels + 1)}`
      expect(stripTypeScript(deeper), open).toEqual({
        ok: false,
        message: `SyntaxError: the program nests brackets deeper than ${MAX_NESTING_DEPTH} levels (line 2); flatten it: name intermediate values or build data in steps`,
      })
    }
  })

  it('does not count brackets inside strings, comments, regular expressions or template text', () => {
    const noise = '"((((" + \'[[[[\' + `{{{{ ((( ${"x"}` + String(/[(]\\(/.test("(")) // ((((\n/* [[[[ */\n'
    const program = `let s = ''\n${noise.repeat(MAX_NESTING_DEPTH)}return s`
    expect(stripTypeScript(program).ok).toBe(true)
    expect(stripTypeScript('return 1 / 2 / (3)').ok).toBe(true)
  })

  it('turns a recursion sucrase cannot finish (an operator chain without brackets) into a clear message', () => {
    const out = stripTypeScript(`return ${'!'.repeat(100_000)}x`)
    expect(out).toEqual({
      ok: false,
      message: 'SyntaxError: the program nests too deeply to strip (a chain of operators or arrow functions sucrase parses recursively); split it into named intermediate values',
    })
  })
})

describe('stripTypeScript: syntax errors carry line and column', () => {
  it('at the end of the program: its last line and one column past its last character', () => {
    expect(stripTypeScript('const a = 1\nreturn (')).toEqual({ ok: false, message: 'SyntaxError: Unexpected token (line 2, column 9: at the end of the program)' })
    expect(stripTypeScript('return [1,')).toEqual({ ok: false, message: 'SyntaxError: Unexpected token (line 1, column 11: at the end of the program)' })
    expect(stripTypeScript('if (a) {\n  f()\n')).toEqual({ ok: false, message: 'SyntaxError: Unexpected token (line 3, column 1: at the end of the program)' })
  })
})

/** Builders of pathological nesting: each wraps an inner expression once. */
const wrappers: ReadonlyArray<(inner: string) => string> = [
  (inner) => `(${inner})`,
  (inner) => `[${inner}]`,
  (inner) => `({ a: ${inner} })`,
  (inner) => `\`\${${inner}}\``,
  (inner) => `<T>(${inner})`,
  (inner) => `f<T>(${inner})`,
  (inner) => `a < (${inner})`,
  (inner) => `(a = ${inner}) => 0`,
  (inner) => `(a) => (${inner})`,
  (inner) => `async (${inner})`,
  (inner) => `<T,>(x: T) => (${inner})`,
  (inner) => `(${inner}) as T`,
  (inner) => `x ? ${inner} : y`,
]

describe('stripTypeScript: generated pathological programs', () => {
  it('always answers (stripped, or a SyntaxError the model can act on) within a generous bound', () => {
    const nesting = fc.array(fc.integer({ min: 0, max: wrappers.length - 1 }), { minLength: 1, maxLength: 400 })
    const program = fc.tuple(nesting, fc.integer({ min: 1, max: 40 })).map(([kinds, repeat]) => {
      const expression = kinds.reduce((inner, kind) => wrappers[kind]!(inner), 'x')
      return `let y: unknown\n${`y = ${expression}\n`.repeat(repeat)}return y`
    })
    fc.assert(
      fc.property(program, (source) => {
        const { out, ms } = timed(source)
        if (!out.ok) expect(out.message).toMatch(/^SyntaxError: /)
        expect(ms).toBeLessThan(GENEROUS_MS)
      }),
      { numRuns: 40, seed: 19 },
    )
  }, 300_000)
})
