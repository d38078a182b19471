/**
 * TypeScript stripping (src/code-runtime/strip.ts) as a unit: exactly what it erases, each
 * construct it refuses with the model's line and column, and its bounds.
 *
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
import { describe, expect, it, vi } from 'vitest'
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

/** The refusal message of `program`, or undefined when it strips. */
const message = (program: string) => {
  const out = stripTypeScript(program)
  return out.ok ? undefined : out.message
}

const PARAMETER_PROPERTY = (line: number) =>
  `SyntaxError: parameter properties are not supported: only erasable TypeScript is accepted (line ${line}); assign the field in the constructor body instead`

describe('stripTypeScript', () => {
  it('returns exactly the program with its types erased', () => {
    expect(stripTypeScript('const a: number = 1\nreturn a')).toEqual({ ok: true, code: 'const a = 1\nreturn a' })
    expect(stripTypeScript('')).toEqual({ ok: true, code: '' })
    expect(stripTypeScript('return (x as any) satisfies unknown')).toEqual({ ok: true, code: 'return (x ) ' })
  })

  it('names the non-erasable construct and its line', () => {
    expect(message('const x = 1\nenum E { A }')).toBe(
      'SyntaxError: enum declarations are not supported: only erasable TypeScript is accepted (line 2); use a union of string literals or a plain object instead',
    )
    expect(message('\n\nnamespace N {}')).toBe('SyntaxError: namespace declarations are not supported: only erasable TypeScript is accepted (line 3); use a plain object instead')
    expect(message('module M {}')).toBe('SyntaxError: namespace declarations are not supported: only erasable TypeScript is accepted (line 1); use a plain object instead')
    expect(message("\nimport x from 'y'")).toBe(
      'SyntaxError: import declarations are not supported in a program (line 2); the program is the body of an async function: use `await import(…)` or the provided globals',
    )
    expect(message('export const a = 1')).toBe('SyntaxError: export declarations are not supported in a program (line 1); return the value instead')
    expect(message('class A {\n  constructor(\n    private x: number) {}\n}')).toBe(
      'SyntaxError: parameter properties are not supported: only erasable TypeScript is accepted (line 3); assign the field in the constructor body instead',
    )
  })

  it('finds every parameter modifier, at any position, but not inside nested parentheses or types', () => {
    for (const modifier of ['public', 'private', 'protected', 'readonly', 'override']) {
      expect(message(`class A extends B { constructor(a: number, ${modifier} b: number) { super() } }`)).toMatch(/^SyntaxError: parameter properties/)
    }
    expect(message('class A { constructor(a = (readonly) => 1, b = [1], c = { d: 1 }, e = `${1}`) {} }\nreturn 1')).toBeUndefined()
    expect(message('class A { constructor(x: { readonly y: number }) {} }\nreturn new A({ y: 1 })')).toBeUndefined()
    expect(message('class A { constructor() {} method(private_: number) { return private_ } }')).toBeUndefined()
    expect(message('const constructor = (f: (x: number) => number) => f\nreturn constructor((public_) => public_)')).toBeUndefined()
    expect(message('const f = (x: unknown) => x\nconst readonly = 1, declare = 2\nreturn f(readonly) ?? f(declare) ?? import.meta')).toBeUndefined()
  })

  it('allows dynamic import, import.meta and declare forms; refuses a type-only import like any import', () => {
    expect(message("const m = await import('x')\nreturn import.meta")).toBeUndefined()
    expect(message("import type { X } from 'y'\nreturn 1")).toMatch(/^SyntaxError: import declarations are not supported in a program \(line 1\)/)
    expect(message('declare namespace N { const a: number }\ndeclare module M {}\nreturn 1')).toBeUndefined()
    expect(message('type enumLike = "a" | "b"\nconst module = 1, namespace = 2, exports = 3\nreturn module + namespace + exports')).toBeUndefined()
    expect(message('const e = { enum: 1, export: 2, import: 3 }\nreturn e.enum')).toBeUndefined()
  })
})

describe('stripTypeScript: parameter properties', () => {
  it('are found after a default holding parentheses, brackets, braces or a template substitution', () => {
    for (const value of ['(1)', '[1]', '{}', '`${1}`', '[(1), { a: [2] }]']) {
      expect(stripTypeScript(`class A {\n  constructor(a = ${value},\n    private b: number) {}\n}`)).toEqual({ ok: false, message: PARAMETER_PROPERTY(3) })
    }
  })

  it('are only the constructor’s own parameters: modifiers of a class in a default or after the constructor are erased', () => {
    expect(stripTypeScript('class A { constructor(a = class { private x = 1 }) {} }\nreturn new A()')).toEqual({
      ok: true,
      code: 'class A { constructor(a = class {  x = 1 }) {} }\nreturn new A()',
    })
    expect(stripTypeScript('class A { constructor() {} }\nreturn (class { private x = 1 })')).toEqual({
      ok: true,
      code: 'class A { constructor() {} }\nreturn (class {  x = 1 })',
    })
  })

  it('need a constructor followed by its parameter list: a value named constructor before a class body is no constructor', () => {
    expect(stripTypeScript('const constructor = class {}\nclass B extends constructor { private x = 1 }\nreturn new B()')).toEqual({
      ok: true,
      code: 'const constructor = class {}\nclass B extends constructor {  x = 1 }\nreturn new B()',
    })
  })
})

describe('stripTypeScript: what sucrase is asked to read', () => {
  it('reads a program naming a rejected word as TypeScript, not JSX: a type assertion is erased', () => {
    expect(stripTypeScript('const constructor = 1\nreturn <number>constructor')).toEqual({ ok: true, code: 'const constructor = 1\nreturn constructor' })
  })

  it('refuses a program that closes the wrapper function so that its types swallow the closing brace', () => {
    expect(stripTypeScript('}\ninterface I {')).toEqual({ ok: false, message: 'SyntaxError: the program could not be stripped of its types' })
    expect(stripTypeScript('}\ntype T = {')).toEqual({ ok: false, message: 'SyntaxError: the program could not be stripped of its types' })
  })
})

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
  it('accepts a program of exactly MAX_PROGRAM_CHARS characters', () => {
    expect(MAX_PROGRAM_CHARS).toBe(256 * 1024)
    const filler = `//${'x'.repeat(MAX_PROGRAM_CHARS - 2)}`
    expect(stripTypeScript(filler).ok).toBe(true)
  })

  it('refuses a program longer than MAX_PROGRAM_CHARS before parsing it', () => {
    // A body that would otherwise take sucrase hours: refused on its length alone.
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

/** The refusal of a program nested deeper than MAX_NESTING_DEPTH at `line`. */
const TOO_DEEP = (line: number) =>
  `SyntaxError: the program nests brackets deeper than ${MAX_NESTING_DEPTH} levels (line ${line}); flatten it: name intermediate values or build data in steps`
/** Brackets nested one level deeper than allowed. */
const OVER = `${'('.repeat(MAX_NESTING_DEPTH + 1)}1${')'.repeat(MAX_NESTING_DEPTH + 1)}`
/** More open brackets than allowed: harmless text inside a string, comment, regex or template. */
const NOISE = '('.repeat(MAX_NESTING_DEPTH + 44)

describe('stripTypeScript: its work meter', () => {
  it('is shared by a second copy of the module (a bundle, test isolation), engaged in both, and leaves Object.prototype as it found it', async () => {
    const field = 'inDisallowConditionalTypesContext'
    expect(stripTypeScript(`return ${castChain(30)}`)).toEqual({ ok: false, message: expect.stringMatching(AMBIGUOUS) })
    vi.resetModules()
    const fresh = (await import('../../../src/code-runtime/strip.js')) as typeof import('../../../src/code-runtime/strip.js')
    expect(fresh.stripTypeScript).not.toBe(stripTypeScript)
    expect(Object.getOwnPropertyDescriptor(Object.prototype, field)).toBeUndefined()
    expect(fresh.stripTypeScript(`return ${castChain(30)}`)).toEqual({ ok: false, message: expect.stringMatching(AMBIGUOUS) })
    expect(fresh.stripTypeScript(`return ${castChain(8)}`)).toEqual({ ok: true, code: `return ${'('.repeat(8)}x${')'.repeat(8)}` })
    expect(Object.getOwnPropertyDescriptor(Object.prototype, field)).toBeUndefined()
    // A property of that name already on Object.prototype (a polyfill, say) is put back as it was.
    const own = { value: 'kept', writable: true, enumerable: false, configurable: true }
    Object.defineProperty(Object.prototype, field, own)
    try {
      vi.resetModules()
      const third = (await import('../../../src/code-runtime/strip.js')) as typeof import('../../../src/code-runtime/strip.js')
      expect(third.stripTypeScript(`return ${castChain(30)}`)).toEqual({ ok: false, message: expect.stringMatching(AMBIGUOUS) })
      expect(third.stripTypeScript('const a: number = 1\nreturn a')).toEqual({ ok: true, code: 'const a = 1\nreturn a' })
      expect(Object.getOwnPropertyDescriptor(Object.prototype, field)).toEqual(own)
    } finally {
      delete (Object.prototype as Record<string, unknown>)[field]
    }
    // The first copy still meters.
    expect(stripTypeScript(`return ${castChain(30)}`)).toEqual({ ok: false, message: expect.stringMatching(AMBIGUOUS) })
  })
})

describe('stripTypeScript: where the nesting scan counts brackets', () => {
  it('reads a `/` after a name, a number or a closing bracket as a division: the brackets after it count', () => {
    for (const name of ['x0', 'x9', 'xA', 'xZ', 'xa', 'xz', 'x$', 'x_', 'xé', 'xreturn', 'returns']) {
      expect(stripTypeScript(`let ${name} = 1\nreturn ${name} / ${OVER} / 2\nlet after = 1\n`), name).toEqual({ ok: false, message: TOO_DEEP(2) })
    }
    for (const operand of ['(1)', '[1]', '{ a: 1 }', '1']) {
      expect(stripTypeScript(`let y = 0\ny = ${operand}  / ${OVER} / 2\n\n`), operand).toEqual({ ok: false, message: TOO_DEEP(2) })
    }
  })

  it('reads a `/` at the start, after an operator or punctuation, or after a keyword as a regular expression: the brackets in it do not count', () => {
    const regex = `/[${NOISE}]/`
    expect(stripTypeScript(`${regex}.test('')`)).toEqual({ ok: true, code: `${regex}.test('')` })
    expect(stripTypeScript(`  \n ${regex}.test('')`)).toEqual({ ok: true, code: `  \n ${regex}.test('')` })
    for (const before of ['let r = ', 'let r = 1 ? 2 :', 'let r = [', 'let r = 1 %', 'let r = 1 ^', 'let r = (', 'let r = !', 'let r = 1 +', '`` ', '@', '#', '\u007f']) {
      expect(message(`${before}${regex}`) ?? '', before).not.toMatch(/nests brackets/)
    }
    for (const keyword of ['return', 'typeof', 'instanceof', 'in', 'of', 'new', 'delete', 'void', 'throw', 'case', 'do', 'else', 'yield', 'await']) {
      expect(message(`x = ${keyword} ${regex}`) ?? '', keyword).not.toMatch(/nests brackets/)
      expect(message(`x = ${keyword}${regex}`) ?? '', keyword).not.toMatch(/nests brackets/)
    }
  })

  it('ends a string, regex or line comment at its line end, a block comment at `*/`, and honours escapes only outside comments', () => {
    expect(stripTypeScript(`// ${NOISE}\nreturn ${OVER}\n`)).toEqual({ ok: false, message: TOO_DEEP(2) })
    expect(stripTypeScript(`let s = "${NOISE}\nreturn ${OVER}\n`)).toEqual({ ok: false, message: TOO_DEEP(2) })
    expect(stripTypeScript(`let s = '${NOISE}\nreturn ${OVER}\n`)).toEqual({ ok: false, message: TOO_DEEP(2) })
    expect(stripTypeScript(`let r = /${NOISE}\nreturn ${OVER}\n`)).toEqual({ ok: false, message: TOO_DEEP(2) })
    expect(stripTypeScript(`/*\n${NOISE}\n*/ return ${OVER}\n`)).toEqual({ ok: false, message: TOO_DEEP(3) })
    expect(stripTypeScript(`/* \\*/ return ${OVER}`)).toEqual({ ok: false, message: TOO_DEEP(1) })
    expect(stripTypeScript(`/* ${NOISE} **/ return ${OVER}`)).toEqual({ ok: false, message: TOO_DEEP(1) })
    expect(stripTypeScript(`let s = "\\"" + ${OVER}`)).toEqual({ ok: false, message: TOO_DEEP(1) })
    expect(stripTypeScript(`let s = '\\'' + ${OVER}`)).toEqual({ ok: false, message: TOO_DEEP(1) })
    expect(stripTypeScript(`let r = /\\//.source + ${OVER}`)).toEqual({ ok: false, message: TOO_DEEP(1) })
    expect(stripTypeScript(`let r = /[/]/.source + ${OVER}`)).toEqual({ ok: false, message: TOO_DEEP(1) })
    expect(stripTypeScript(`let r = /[a]/.source + ${OVER}`)).toEqual({ ok: false, message: TOO_DEEP(1) })
    expect(stripTypeScript(`let s = "${NOISE}\\"${NOISE}"\nreturn s`).ok).toBe(true)
    expect(stripTypeScript(`let r = /[/${NOISE}]/\nreturn r`).ok).toBe(true)
  })

  it('skips template text, resumes it after a substitution, and counts only `${` in it', () => {
    expect(stripTypeScript(`return \`$${NOISE}\``)).toEqual({ ok: true, code: `return \`$${NOISE}\`` })
    expect(stripTypeScript(`return \`\${1}${NOISE}\``)).toEqual({ ok: true, code: `return \`\${1}${NOISE}\`` })
    expect(stripTypeScript(`return \`\${{ a: 1 }.a}${NOISE}\``)).toEqual({ ok: true, code: `return \`\${{ a: 1 }.a}${NOISE}\`` })
    expect(stripTypeScript(`return \`\${1}\` + ${OVER}`)).toEqual({ ok: false, message: TOO_DEEP(1) })
    expect(stripTypeScript(`return \`\\\`\` + ${OVER}`)).toEqual({ ok: false, message: TOO_DEEP(1) })
    expect(stripTypeScript(`return \`\\\${${NOISE}\``).ok).toBe(true)
    expect(stripTypeScript(`return \`${NOISE}\n${NOISE}\`\n${OVER}`)).toEqual({ ok: false, message: TOO_DEEP(3) })
    // An unterminated template or comment runs to the end: nothing after it counts.
    expect(message(`return \`${NOISE}`)).not.toMatch(/nests brackets/)
    expect(message(`/* ${OVER}`)).not.toMatch(/nests brackets/)
  })
})

describe('stripTypeScript: syntax errors carry line and column', () => {
  it('reports syntax errors at the model’s line and column, or at the end of the program', () => {
    expect(message('let x = )')).toMatch(/^SyntaxError: .* \(line 1, column 9\)$/)
    expect(message('let a = 1\nlet x = )')).toMatch(/^SyntaxError: .* \(line 2, column 9\)$/)
    expect(message('return (')).toMatch(/^SyntaxError: .* \(line 1, column 9: at the end of the program\)$/)
    expect(message('let a = 1\nreturn (\n  ')).toMatch(/^SyntaxError: .* \(line 3, column 3: at the end of the program\)$/)
    expect(message(')')).toMatch(/\(line 1, column 1\)$/)
  })

  it('names line 10 and beyond with its column', () => {
    expect(stripTypeScript(`${'\n'.repeat(9)}let x = )`)).toEqual({ ok: false, message: 'SyntaxError: Unexpected token (line 10, column 9)' })
    expect(stripTypeScript(`let a = 1${'\n'.repeat(12)}foo(\n  1 2)`)).toEqual({ ok: false, message: 'SyntaxError: Unexpected token, expected "," (line 14, column 5)' })
  })

  it('reports an error past the last of ten or more lines at the end of the program', () => {
    expect(stripTypeScript(`${'\n'.repeat(10)}return (`)).toEqual({ ok: false, message: 'SyntaxError: Unexpected token (line 11, column 9: at the end of the program)' })
  })

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
