/**
 * SlicedJsonParse (issue 34: no untrusted text parsed in one unbounded turn) must return what
 * JSON.parse returns, or refuse what it throws on, whatever the step budget.
 */
import { describe, expect, it } from 'vitest'
import { CHARS_PER_UNIT, SlicedJsonParse } from '../../../src/code-runtime/sliced-json.js'

function sliced(text: string, budget: number): { value: unknown } | 'invalid' {
  const parse = new SlicedJsonParse(text)
  for (let steps = 0; !parse.step(budget); steps++) if (steps > text.length + 10) throw new Error('no progress')
  return parse.invalid ? 'invalid' : { value: parse.value }
}

function reference(text: string): { value: unknown } | 'invalid' {
  try {
    return { value: JSON.parse(text) as unknown }
  } catch {
    return 'invalid'
  }
}

const CASES = [
  '{}', '[]', '0', '-0', '1e400', '[-1.5e-3,0.1,1E+2]', '"a"', 'true', 'false', 'null', ' \t\n\r[1]\r\n ',
  '{"a" : [1, 2, {"b": null}], "__proto__": {"x": true}, "a": 5 }', '{"1":1,"0":2,"b":3,"a":4}',
  '"\\u0041\\n\\/\\"\\\\\\b\\f\\r\\t"', '"\\ud800"', '"\ud800"', '{"constructor":1,"toString":2,"hasOwnProperty":3}',
  `"${'x'.repeat(200_000)}"`, `${' '.repeat(70_000)}[1]${' '.repeat(70_000)}`, `"${'ab\\n'.repeat(30_000)}"`,
  '[1,]', '{,}', '01', '1.', '.5', '-', '+1', '"\u0001"', '"abc', 'tru', 'nul', '[1 2]', '{"a":1,}', '"\\x"', '"\\u12"',
  '{"a"}', '{"a" 1}', '{1:2}', '[', '', ' ', 'truex', '1 2', '{"a":1}}', '[1]]', "'a'", 'NaN', '[Infinity]', '"\\u00g0"',
  // A literal's first letter followed by other letters of its length, and an unknown escape before four hex digits.
  '[trux]', '[falsy]', '[nulx]', '{"a":tRue}', '"\\x1234"', '"\\g0041"',
]

describe('SlicedJsonParse', () => {
  it('agrees with JSON.parse on values and on errors, at budgets from 1 unit up', () => {
    for (const text of CASES) {
      for (const budget of [1, 2, 7, 10_000]) {
        const want = reference(text)
        const got = sliced(text, budget)
        expect(got === 'invalid' ? 'invalid' : 'value', `${JSON.stringify(text.slice(0, 40))} at ${budget}`).toBe(want === 'invalid' ? 'invalid' : 'value')
        if (want !== 'invalid' && got !== 'invalid') {
          expect(got.value).toStrictEqual(want.value)
          // Key order and own `__proto__` data properties as JSON.parse makes them.
          expect(JSON.stringify(got.value)).toBe(JSON.stringify(want.value))
        }
      }
    }
  })

  it('agrees with JSON.parse on 20,000 random token strings', () => {
    const tokens = ['{', '}', '[', ']', ',', ':', '"a"', '"__proto__"', '1', '-2.5', 'true', 'null', ' ', '"\\n"', '0', 'e5', '"']
    let seed = 7
    const next = (n: number) => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31), Math.floor(seed / 65_536) % n)
    let valid = 0
    for (let i = 0; i < 20_000; i++) {
      let text = ''
      for (let k = next(12); k > 0; k--) text += tokens[next(tokens.length)]
      const want = reference(text)
      const got = sliced(text, 1 + next(3))
      if (want !== 'invalid') valid++
      expect(got === 'invalid' ? 'invalid' : JSON.stringify(got.value), JSON.stringify(text)).toBe(want === 'invalid' ? 'invalid' : JSON.stringify(want.value))
    }
    // The corpus must exercise both outcomes.
    expect(valid).toBeGreaterThan(500)
  })

  it('keeps each step to about its budget: a long string and a long run of whitespace are read in pieces', () => {
    for (const text of [`"${'x'.repeat(1_000_000)}"`, `${' '.repeat(1_000_000)}1`, `[${'{},'.repeat(100_000)}{}]`]) {
      const parse = new SlicedJsonParse(text)
      let steps = 0
      let before = 0
      while (!parse.step(10_000)) {
        steps++
        // One iteration may overshoot the budget by a run of 65,536 characters at most.
        expect(parse.used - before).toBeLessThanOrEqual(10_000 + 65_536 / CHARS_PER_UNIT + 1)
        before = parse.used
      }
      expect(steps).toBeGreaterThan(2)
      expect(parse.invalid).toBe(false)
    }
  })

  it('reads numbers by hand as JSON.parse does: every string of number characters up to five long, -0 included', () => {
    const atoms = ['-', '0', '1', '9', '.', 'e', 'E', '+', '00', '123456789012345', '1234567890123456']
    const texts: string[] = ['']
    for (let length = 1; length <= 4; length++) {
      for (const text of texts.filter((t) => t.length >= length - 1)) for (const atom of atoms) if (texts.length < 20_000) texts.push(text + atom)
    }
    let checked = 0
    for (const text of texts) {
      for (const whole of [text, `[${text},1]`]) {
        const want = reference(whole)
        const got = sliced(whole, 3)
        expect(got === 'invalid' ? 'invalid' : 'value', whole).toBe(want === 'invalid' ? 'invalid' : 'value')
        if (want !== 'invalid' && got !== 'invalid') {
          expect(Object.is(got.value, want.value) || JSON.stringify(got.value) === JSON.stringify(want.value), whole).toBe(true)
          if (typeof want.value === 'number') expect(Object.is(got.value, want.value), whole).toBe(true)
          checked++
        }
      }
    }
    expect(checked).toBeGreaterThan(1_000)
  })
})
