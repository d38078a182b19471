/**
 * TypeScript stripping and the code-run limit validators as units: exact messages with
 * the model's line and column, and every bound of every option.
 */
import { describe, expect, it } from 'vitest'
import { CODE_RUN_LIMIT_KEYS, DEFAULT_CODE_RUN_LIMITS, MAX_TIMER_MS, checkOptionsObject, integerOption, readCodeRunLimits } from '../../../src/code-runtime/limits.js'
import { stripTypeScript } from '../../../src/code-runtime/strip.js'
import { refusalMessage } from '../../support/refusal.js'

const message = (program: string) => {
  const out = stripTypeScript(program)
  return out.ok ? undefined : out.message
}

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
  })

  it('allows dynamic import, import.meta and declare forms; refuses a type-only import like any import', () => {
    expect(message("const m = await import('x')\nreturn import.meta")).toBeUndefined()
    expect(message("import type { X } from 'y'\nreturn 1")).toMatch(/^SyntaxError: import declarations are not supported in a program \(line 1\)/)
    expect(message('declare namespace N { const a: number }\ndeclare module M {}\nreturn 1')).toBeUndefined()
    expect(message('type enumLike = "a" | "b"\nconst module = 1, namespace = 2, exports = 3\nreturn module + namespace + exports')).toBeUndefined()
    expect(message('const e = { enum: 1, export: 2, import: 3 }\nreturn e.enum')).toBeUndefined()
  })

  it('reports syntax errors at the model’s line and column, or at the end of the program', () => {
    expect(message('let x = )')).toMatch(/^SyntaxError: .* \(line 1, column 9\)$/)
    expect(message('let a = 1\nlet x = )')).toMatch(/^SyntaxError: .* \(line 2, column 9\)$/)
    expect(message('return (')).toMatch(/^SyntaxError: .* \(line 1, column 9: at the end of the program\)$/)
    expect(message('let a = 1\nreturn (\n  ')).toMatch(/^SyntaxError: .* \(line 3, column 3: at the end of the program\)$/)
    expect(message(')')).toMatch(/\(line 1, column 1\)$/)
  })
})

describe('code-run limits', () => {
  const invalid = (fn: () => unknown): string | undefined => refusalMessage('INVALID_OPTIONS', fn)

  it('the defaults and the timer ceiling', () => {
    expect(DEFAULT_CODE_RUN_LIMITS).toEqual({ computeMs: 60_000, maxWallMs: 600_000, maxLogBytes: 65_536, maxValueBytes: 32_768 })
    expect(Object.isFrozen(DEFAULT_CODE_RUN_LIMITS)).toBe(true)
    expect(MAX_TIMER_MS).toBe(2 ** 31 - 1)
    expect(CODE_RUN_LIMIT_KEYS).toEqual(['computeMs', 'maxWallMs', 'maxLogBytes', 'maxValueBytes', 'maxPendingArgBytes'])
  })

  it('integerOption: absent → fallback; an integer within [min, max] kept; anything else refused with what it was', () => {
    expect(integerOption({}, 'n', 7, 1, 10, 'f')).toBe(7)
    expect(integerOption({ n: 1 }, 'n', 7, 1, 10, 'f')).toBe(1)
    expect(integerOption({ n: 10 }, 'n', 7, 1, 10, 'f')).toBe(10)
    expect(invalid(() => integerOption({ n: 0 }, 'n', 7, 1, 10, 'f'))).toBe('f: options.n must be an integer from 1 to 10 (got 0)')
    expect(invalid(() => integerOption({ n: 11 }, 'n', 7, 1, 10, 'f'))).toBe('f: options.n must be an integer from 1 to 10 (got 11)')
    expect(invalid(() => integerOption({ n: 2.5 }, 'n', 7, 1, 10, 'f'))).toBe('f: options.n must be an integer from 1 to 10 (got 2.5)')
    expect(invalid(() => integerOption({ n: true }, 'n', 7, 1, 10, 'f'))).toBe('f: options.n must be an integer from 1 to 10 (got true)')
    expect(invalid(() => integerOption({ n: '5' }, 'n', 7, 1, 10, 'f'))).toBe('f: options.n must be an integer from 1 to 10 (got "5")')
    expect(invalid(() => integerOption({ n: 'x'.repeat(41) }, 'n', 7, 1, 10, 'f'))).toBe(`f: options.n must be an integer from 1 to 10 (got "${'x'.repeat(40)}…")`)
    expect(invalid(() => integerOption({ n: 'x'.repeat(40) }, 'n', 7, 1, 10, 'f'))).toBe(`f: options.n must be an integer from 1 to 10 (got "${'x'.repeat(40)}")`)
    expect(invalid(() => integerOption({ n: null }, 'n', 7, 1, 10, 'f'))).toBe('f: options.n must be an integer from 1 to 10 (got null)')
    expect(invalid(() => integerOption({ n: {} }, 'n', 7, 1, 10, 'f'))).toBe('f: options.n must be an integer from 1 to 10 (got object)')
  })

  it('checkOptionsObject: absent → {}, a plain object of known keys, anything else refused', () => {
    expect(checkOptionsObject(undefined, ['a'], 'f')).toEqual({})
    const given = { a: 1 }
    expect(checkOptionsObject(given, ['a', 'b'], 'f')).toBe(given)
    expect(invalid(() => checkOptionsObject(null, ['a'], 'f'))).toBe('f: options must be an object (got null)')
    expect(invalid(() => checkOptionsObject([], ['a'], 'f'))).toBe('f: options must be an object (got object)')
    expect(invalid(() => checkOptionsObject(5, ['a'], 'f'))).toBe('f: options must be an object (got 5)')
    expect(invalid(() => checkOptionsObject({ a: 1, c: 2 }, ['a', 'b'], 'f'))).toBe('f: unknown option "c" (known: a, b)')
  })

  it('readCodeRunLimits: each limit with its own bounds', () => {
    expect(readCodeRunLimits({}, 'f')).toEqual({ ...DEFAULT_CODE_RUN_LIMITS, maxPendingArgBytes: 32 * 1024 * 1024 })
    expect(Object.isFrozen(readCodeRunLimits({}, 'f'))).toBe(true)
    const max = readCodeRunLimits({ computeMs: MAX_TIMER_MS, maxWallMs: MAX_TIMER_MS, maxLogBytes: 2 ** 30, maxValueBytes: 2 ** 30, maxPendingArgBytes: 2 ** 30 }, 'f')
    expect(max).toEqual({ computeMs: MAX_TIMER_MS, maxWallMs: MAX_TIMER_MS, maxLogBytes: 2 ** 30, maxValueBytes: 2 ** 30, maxPendingArgBytes: 2 ** 30 })
    const min = { computeMs: 1, maxWallMs: 1, maxLogBytes: 1, maxValueBytes: 1, maxPendingArgBytes: 1024 }
    expect(readCodeRunLimits(min, 'f')).toEqual(min)
    expect(invalid(() => readCodeRunLimits({ maxPendingArgBytes: 1023 }, 'f'))).toBe(`f: options.maxPendingArgBytes must be an integer from 1024 to ${2 ** 30} (got 1023)`)
    expect(invalid(() => readCodeRunLimits({ computeMs: MAX_TIMER_MS + 1 }, 'f'))).toBe(`f: options.computeMs must be an integer from 1 to ${MAX_TIMER_MS} (got ${MAX_TIMER_MS + 1})`)
    expect(invalid(() => readCodeRunLimits({ maxWallMs: 0 }, 'f'))).toBe(`f: options.maxWallMs must be an integer from 1 to ${MAX_TIMER_MS} (got 0)`)
    expect(invalid(() => readCodeRunLimits({ maxLogBytes: 2 ** 30 + 1 }, 'f'))).toBe(`f: options.maxLogBytes must be an integer from 1 to ${2 ** 30} (got ${2 ** 30 + 1})`)
    expect(invalid(() => readCodeRunLimits({ maxValueBytes: 0 }, 'f'))).toBe(`f: options.maxValueBytes must be an integer from 1 to ${2 ** 30} (got 0)`)
  })
})
