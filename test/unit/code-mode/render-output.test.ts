import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { RUN_CODE_NO_OUTPUT, prettyJson, renderRunCodeOutput, utf8ByteLength, truncateToBytes } from '../../../src/code-mode/render-output.js'
import type { JsonValue } from '../../../src/json/json-value.js'

function nested(depth: number): JsonValue {
  let value: JsonValue = 0
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { k: value }
  return value
}

function maxIndentation(text: string): number {
  return Math.max(...text.split('\n').map((line) => line.length - line.trimStart().length))
}

describe('renderRunCodeOutput', () => {
  it('renders a string result raw, without quotes or escaping', () => {
    expect(renderRunCodeOutput({ logs: [], result: 'a "quoted"\nline' })).toBe('a "quoted"\nline')
  })

  it('renders null explicitly', () => {
    expect(renderRunCodeOutput({ logs: [], result: null })).toBe('null')
    expect(renderRunCodeOutput({ logs: ['x'], result: null })).toBe('x\nnull')
  })

  it('renders numbers, booleans and empty containers as JSON', () => {
    expect(renderRunCodeOutput({ logs: [], result: 0 })).toBe('0')
    expect(renderRunCodeOutput({ logs: [], result: false })).toBe('false')
    expect(renderRunCodeOutput({ logs: [], result: [] })).toBe('[]')
    expect(renderRunCodeOutput({ logs: [], result: {} })).toBe('{}')
  })

  it('puts logs first, joined with newlines, then the pretty-printed result', () => {
    expect(renderRunCodeOutput({ logs: ['one', 'two'], result: { a: [1, 'x'] } })).toBe(
      'one\ntwo\n{\n  "a": [\n    1,\n    "x"\n  ]\n}',
    )
  })

  it('renders logs alone when the result is absent', () => {
    expect(renderRunCodeOutput({ logs: ['only'] })).toBe('only')
  })

  it('says so when there is no output at all', () => {
    expect(renderRunCodeOutput({ logs: [] })).toBe(RUN_CODE_NO_OUTPUT)
    expect(RUN_CODE_NO_OUTPUT).toBe('(run_code completed with no output)')
    // An empty returned string and no logs: both parts are empty.
    expect(renderRunCodeOutput({ logs: [], result: '' })).toBe(RUN_CODE_NO_OUTPUT)
  })

  it('keeps empty printed lines as lines', () => {
    expect(renderRunCodeOutput({ logs: ['', 'b'] })).toBe('\nb')
  })

  it("appends preflight's mistakes after a blank line, also to the no-output marker", () => {
    expect(renderRunCodeOutput({ logs: ['a'], result: 1, preflight: 'Preflight found 1 problem' })).toBe('a\n1\n\nPreflight found 1 problem')
    expect(renderRunCodeOutput({ logs: [], preflight: 'P' })).toBe(`${RUN_CODE_NO_OUTPUT}\n\nP`)
    expect(renderRunCodeOutput({ logs: ['a'], preflight: 5 as never })).toBe('a')
  })
})

describe('prettyJson', () => {
  it('matches JSON.stringify(value, null, 2) while indentation stays within the cap', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), (value) => {
        const json = JSON.parse(JSON.stringify(value)) as JsonValue
        expect(prettyJson(json, { maxIndent: 10 })).toBe(JSON.stringify(json, null, 2))
      }),
      { numRuns: 300 },
    )
  })

  it('prints compact JSON with maxIndent 0, identical to JSON.stringify', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), (value) => {
        const json = JSON.parse(JSON.stringify(value)) as JsonValue
        expect(prettyJson(json, { maxIndent: 0 })).toBe(JSON.stringify(json))
      }),
      { numRuns: 300 },
    )
  })

  it('caps total indentation at ten characters; deeper subtrees stay compact on one line', () => {
    const value = { a: { b: { c: { d: { e: { f: [1, { g: 2 }] } } } } } }
    const text = prettyJson(value, { maxIndent: 10 })
    expect(text).toBe(
      [
        '{',
        '  "a": {',
        '    "b": {',
        '      "c": {',
        '        "d": {',
        '          "e": {"f":[1,{"g":2}]}',
        '        }',
        '      }',
        '    }',
        '  }',
        '}',
      ].join('\n'),
    )
    expect(JSON.parse(text)).toEqual(value)
  })

  it('keeps the cap and the meaning for any value (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 12 }), (value) => {
        const json = JSON.parse(JSON.stringify(value)) as JsonValue
        const text = prettyJson(json, { maxIndent: 10 })
        expect(maxIndentation(text)).toBeLessThanOrEqual(10)
        expect(JSON.parse(text)).toEqual(json)
      }),
      { numRuns: 300 },
    )
  })

  it('renders a value 100,000 levels deep without RangeError', () => {
    const deep = nested(100_000)
    const text = renderRunCodeOutput({ logs: [], result: deep })
    expect(maxIndentation(text)).toBeLessThanOrEqual(10)
    // Five expanded levels, then one compact line holding the rest.
    expect(text.split('\n')).toHaveLength(11)
    expect(text.length).toBeGreaterThan(100_000)
    expect(prettyJson(deep, { maxIndent: 0 }).length).toBe(text.replace(/\n\s*/g, '').replace(/": /g, '":').length)
  })

  it('escapes keys and strings exactly as JSON does', () => {
    const value = { 'a"b': 'c\\d', '\u2028': '\ud800', __proto__: null } as unknown as JsonValue
    const withProto = JSON.parse('{"a\\"b":"c\\\\d","\\u2028":"\\ud800","__proto__":1}') as JsonValue
    expect(prettyJson(withProto, { maxIndent: 10 })).toBe(JSON.stringify(withProto, null, 2))
    expect(prettyJson(value, { maxIndent: 0 })).toBe(JSON.stringify(value))
  })

  it('is total on values outside JSON', () => {
    expect(prettyJson([undefined, Number.NaN, () => 1], { maxIndent: 0 })).toBe('[null,null,null]')
  })
})

describe('utf8ByteLength', () => {
  it('agrees with TextEncoder on any string', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        expect(utf8ByteLength(text)).toBe(new TextEncoder().encode(text).length)
      }),
      { numRuns: 500 },
    )
    expect(utf8ByteLength('\ud800x\udc00')).toBe(new TextEncoder().encode('\ud800x\udc00').length)
  })
})

/*
 * `prettyJson` against `JSON.stringify` (what it must equal when the cap does not bite)
 * and the exact text of `renderRunCodeOutput` for each combination of logs and value.
 */
describe('prettyJson', () => {
  it('equals JSON.stringify with the same indent when the cap is deep enough', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), fc.integer({ min: 1, max: 4 }), (value, indent) => {
        expect(prettyJson(value, { maxIndent: 1_000, indent })).toBe(JSON.stringify(value, null, indent))
      }),
      { numRuns: 300 },
    )
  })

  it('is compact JSON with a zero cap or a zero indent', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), (value) => {
        expect(prettyJson(value, { maxIndent: 0 })).toBe(JSON.stringify(value))
        expect(prettyJson(value, { maxIndent: 100, indent: 0 })).toBe(JSON.stringify(value))
      }),
      { numRuns: 200 },
    )
  })

  it('defaults to two spaces and keeps deeper containers on one line', () => {
    expect(prettyJson({ a: [1, 2] }, { maxIndent: 10 })).toBe('{\n  "a": [\n    1,\n    2\n  ]\n}')
    expect(prettyJson({ a: [1, { b: 2 }] }, { maxIndent: 2 })).toBe('{\n  "a": [1,{"b":2}]\n}')
    expect(prettyJson({ a: [1, { b: 2 }] }, { maxIndent: 3 })).toBe('{\n  "a": [1,{"b":2}]\n}')
    expect(prettyJson({ a: [1, { b: 2 }] }, { maxIndent: 4 })).toBe('{\n  "a": [\n    1,\n    {"b":2}\n  ]\n}')
    expect(prettyJson([[]], { maxIndent: 1 })).toBe('[[]]')
    expect(prettyJson([{}], { maxIndent: 2 })).toBe('[\n  {}\n]')
    expect(prettyJson({ a: 1 }, { maxIndent: 2.9, indent: 2.5 })).toBe('{\n  "a": 1\n}')
    expect(prettyJson({ a: 1 }, { maxIndent: -5 })).toBe('{"a":1}')
    expect(prettyJson({ a: 1 }, { maxIndent: 5, indent: -1 })).toBe('{"a":1}')
  })

  it('prints what JSON cannot hold as null, and is stack-safe', () => {
    expect(prettyJson([Number.NaN, Number.POSITIVE_INFINITY, undefined, () => 1, 1n, true, false], { maxIndent: 0 })).toBe('[null,null,null,null,null,true,false]')
    let deep: unknown = 0
    for (let i = 0; i < 50_000; i++) deep = [deep]
    const text = prettyJson(deep, { maxIndent: 10 })
    // Levels 0–4 expand (their members sit at most 10 spaces in), the rest is compact.
    let expected = ''
    for (let d = 0; d < 5; d++) expected += `[\n${' '.repeat(2 * (d + 1))}`
    expected += `${'['.repeat(50_000 - 5)}0${']'.repeat(50_000 - 5)}`
    for (let d = 4; d >= 0; d--) expected += `\n${' '.repeat(2 * d)}]`
    expect(text).toBe(expected)
  })
})

describe('renderRunCodeOutput', () => {
  it('logs, then the value: strings raw, null explicit, other values pretty-printed', () => {
    expect(renderRunCodeOutput({ logs: ['a', 'b'], result: 'text' })).toBe('a\nb\ntext')
    expect(renderRunCodeOutput({ logs: [], result: 'text' })).toBe('text')
    expect(renderRunCodeOutput({ logs: ['only'] })).toBe('only')
    expect(renderRunCodeOutput({ logs: [], result: null })).toBe('null')
    expect(renderRunCodeOutput({ logs: ['x'], result: { n: [1] } })).toBe('x\n{\n  "n": [\n    1\n  ]\n}')
    expect(renderRunCodeOutput({ logs: [], result: 0 })).toBe('0')
    expect(renderRunCodeOutput({ logs: [], result: false })).toBe('false')
  })

  it('the no-output marker when both parts are empty', () => {
    expect(RUN_CODE_NO_OUTPUT).toBe('(run_code completed with no output)')
    expect(renderRunCodeOutput({ logs: [] })).toBe(RUN_CODE_NO_OUTPUT)
    expect(renderRunCodeOutput({ logs: [], result: '' })).toBe(RUN_CODE_NO_OUTPUT)
    expect(renderRunCodeOutput({ logs: [''] })).toBe(RUN_CODE_NO_OUTPUT)
    expect(renderRunCodeOutput({ logs: 'x' } as never)).toBe(RUN_CODE_NO_OUTPUT)
    expect(renderRunCodeOutput({ logs: ['', ''] })).toBe('\n')
  })

  it('caps the value’s indentation at ten characters', () => {
    const value = { a: { b: { c: { d: { e: { f: 1 } } } } } }
    expect(renderRunCodeOutput({ logs: [], result: value })).toBe(prettyJson(value, { maxIndent: 10 }))
    expect(renderRunCodeOutput({ logs: [], result: value })).toContain('{"f":1}')
    expect(renderRunCodeOutput({ logs: [], result: value })).toContain('        "e": ')
  })

  it('re-exports the UTF-8 length', () => {
    expect(utf8ByteLength('é😀')).toBe(6)
  })
})

describe('truncateToBytes', () => {
  // The walk itself is utf8Prefix's (code-runtime/render.test.ts has its boundaries).
  it('returns the text itself when it fits, to the byte', () => {
    expect(truncateToBytes('abc', 3)).toBe('abc')
    expect(truncateToBytes('', 0)).toBe('')
    expect(truncateToBytes('aé€😀', 10)).toBe('aé€😀')
  })

  it('otherwise keeps the longest prefix that fits and marks the cut', () => {
    expect(truncateToBytes('abcd', 3)).toBe('abc…')
    expect(truncateToBytes('abcd', 0)).toBe('…')
    expect(truncateToBytes('a😀z', 4)).toBe('a…')
    expect(truncateToBytes('a😀z', 5)).toBe('a😀…')
  })
})
