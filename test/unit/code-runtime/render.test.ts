/**
 * Rendering and measuring program values (src/code-runtime/render.ts) as units: the exact
 * text for each kind of value and each bound, and the size estimate's counts.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { deepValueText, measureValueBytes, renderedWithin, renderValue, utf8Length, utf8Prefix } from '../../../src/code-runtime/render.js'

describe('utf8Length and utf8Prefix', () => {
  it('count like TextEncoder, lone surrogates as three bytes', () => {
    const unit = fc.oneof(fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), fc.constantFrom('\ud83d\ude00', '\ud800', '\udfff', '\u007f', '\u0080', '\u07ff', '\u0800', '\ud800x'))
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 20 }), (text) => {
        expect(utf8Length(text)).toBe(new TextEncoder().encode(text).length)
      }),
      { numRuns: 300 },
    )
    expect(utf8Length('\ud83d')).toBe(3)
    expect(utf8Length('\ud83d\ud83d')).toBe(6)
    expect(utf8Length('\ud83d\udc00')).toBe(4)
    expect(utf8Length('\udbff\udfff')).toBe(4)
  })

  it('cut at a byte budget without splitting a character', () => {
    expect(utf8Prefix('abc', 0)).toBe('')
    expect(utf8Prefix('abc', 2)).toBe('ab')
    expect(utf8Prefix('aé', 2)).toBe('a')
    expect(utf8Prefix('aé', 3)).toBe('aé')
    expect(utf8Prefix('a€', 3)).toBe('a')
    expect(utf8Prefix('a€', 4)).toBe('a€')
    expect(utf8Prefix('😀x', 3)).toBe('')
    expect(utf8Prefix('😀x', 4)).toBe('😀')
    expect(utf8Prefix('\ud83dx', 3)).toBe('\ud83d')
    expect(utf8Prefix('\ud83d', 3)).toBe('\ud83d')
    expect(utf8Prefix('x\u07ff', 2)).toBe('x')
    expect(utf8Prefix('x\u07ff', 3)).toBe('x\u07ff')
    expect(utf8Prefix('x\u0800', 3)).toBe('x')
    expect(utf8Prefix('x\u007f', 2)).toBe('x\u007f')
    expect(utf8Prefix('a\u0080z', 2)).toBe('a')
    expect(utf8Prefix('a\u0080z', 3)).toBe('a\u0080')
    // A pair is 4 bytes at both ends of the high-surrogate range; a high surrogate before
    // anything but a low one, and a lone low surrogate, are 3 (U+FFFD).
    for (const astral of ['\ud800\udc00', '\udbff\udfff']) {
      expect(utf8Prefix(`a${astral}z`, 4)).toBe('a')
      expect(utf8Prefix(`a${astral}z`, 5)).toBe(`a${astral}`)
    }
    expect(utf8Prefix('a\ud83dxy', 4)).toBe('a\ud83d')
    expect(utf8Prefix('a\ud83dxy', 3)).toBe('a')
    expect(utf8Prefix('a\ude00z', 4)).toBe('a\ude00')
    // Only a high surrogate followed by a low one is a pair.
    expect(utf8Prefix('a\udc00', 1)).toBe('a')
    expect(utf8Prefix('\ue000\udc00', 3)).toBe('\ue000')
    expect(utf8Prefix('\ud800\ue000', 3)).toBe('\ud800')
    expect(utf8Prefix('\ud7ff\udc00', 3)).toBe('\ud7ff')
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 10 }), fc.integer({ min: 0, max: 40 }), (text, budget) => {
        const prefix = utf8Prefix(text, budget)
        expect(text.startsWith(prefix)).toBe(true)
        expect(utf8Length(prefix)).toBeLessThanOrEqual(budget)
        const next = text.slice(prefix.length, prefix.length + (text.codePointAt(prefix.length)! > 0xffff ? 2 : 1))
        if (next !== '') expect(utf8Length(prefix + next)).toBeGreaterThan(budget)
      }),
      { numRuns: 300 },
    )
  })
})

describe('renderValue: primitives', () => {
  it('renders each primitive type', () => {
    expect(renderValue('top')).toBe('top')
    expect(renderValue('top', { rawTopLevelString: false })).toBe('"top"')
    expect(renderValue(['in'])).toBe('["in"]')
    expect(renderValue(1.5)).toBe('1.5')
    expect(renderValue(-0)).toBe('-0')
    expect(renderValue(0)).toBe('0')
    expect(renderValue(12n)).toBe('12n')
    expect(renderValue(false)).toBe('false')
    expect(renderValue(undefined)).toBe('undefined')
    expect(renderValue(null)).toBe('null')
    expect(renderValue(Symbol('s'))).toBe('Symbol(s)')
    expect(renderValue(function named() {})).toBe('[Function: named]')
    expect(renderValue((() => () => 1)())).toBe('[Function (anonymous)]')
    const nameless = () => 1
    Object.defineProperty(nameless, 'name', { value: 7 })
    expect(renderValue(nameless)).toBe('[Function (anonymous)]')
  })

  it('cuts a long top-level primitive at maxLength with an ellipsis', () => {
    expect(renderValue('abcdef', { maxLength: 3 })).toBe('abc…')
    expect(renderValue('abc', { maxLength: 3 })).toBe('abc')
    expect(renderValue(123456, { maxLength: 2 })).toBe('12…')
  })
})

describe('renderValue: objects', () => {
  it('renders dates, regexps, errors and binary data', () => {
    expect(renderValue(new Date(0))).toBe('1970-01-01T00:00:00.000Z')
    expect(renderValue(new Date(Number.NaN))).toBe('Invalid Date')
    expect(renderValue(/a+b/gi)).toBe('/a+b/gi')
    const error = new RangeError('bad')
    expect(renderValue(error)).toBe(error.stack)
    const noStack = new TypeError('m')
    Object.defineProperty(noStack, 'stack', { value: '' })
    expect(renderValue(noStack)).toBe('TypeError: m')
    const bare = Object.create(Error.prototype) as Error
    expect(renderValue(bare)).toBe('Error: ')
    const odd = new Error('x')
    Object.defineProperty(odd, 'stack', { value: undefined })
    Object.defineProperty(odd, 'name', { value: 5 })
    Object.defineProperty(odd, 'message', { value: 6 })
    expect(renderValue(odd)).toBe('Error: ')
    const renamed = new Error('m')
    Object.defineProperty(renamed, 'stack', { value: '' })
    renamed.name = 'Custom'
    expect(renderValue(renamed)).toBe('Custom: m')
    // Neither the error nor its prototype has a name: Error.
    expect(renderValue(Object.create(Object.create(Error.prototype) as object) as object)).toBe('Error: ')
    expect(renderValue(new ArrayBuffer(3))).toBe('ArrayBuffer { byteLength: 3 }')
    expect(renderValue(new DataView(new ArrayBuffer(4)))).toBe('DataView { byteLength: 4 }')
    expect(renderValue(new Uint8Array([1, 2]))).toBe('Uint8Array(2) [ 1, 2 ]')
    expect(renderValue(new Float64Array(0))).toBe('Float64Array(0) []')
    expect(renderValue(new BigInt64Array([3n]))).toBe('BigInt64Array(1) [ 3n ]')
    expect(renderValue(new Int16Array(5), { maxItems: 2 })).toBe('Int16Array(5) [ 0, 0, … 3 more items ]')
    expect(renderValue(new Int16Array(2), { maxItems: 2 })).toBe('Int16Array(2) [ 0, 0 ]')
  })

  it('renders arrays, objects, maps and sets with their spacing', () => {
    expect(renderValue([])).toBe('[]')
    expect(renderValue({})).toBe('{}')
    expect(renderValue([1, [2, 3]])).toBe('[1, [2, 3]]')
    expect(renderValue({ a: 1, 'b c': { d: [] } })).toBe('{ a: 1, "b c": { d: [] } }')
    expect(renderValue(new Map())).toBe('Map(0) {}')
    expect(renderValue(new Set())).toBe('Set(0) {}')
    expect(renderValue(new Map<unknown, unknown>([['k', 1], [{ o: 1 }, [2]]]))).toBe('Map(2) { "k" => 1, { o: 1 } => [2] }')
    expect(renderValue(new Set(['a', 1]))).toBe('Set(2) { "a", 1 }')
    expect(renderValue(Object.assign(Object.create(null) as object, { x: 1 }))).toBe('[Object: null prototype] { x: 1 }')
    class Point {
      x = 1
    }
    expect(renderValue(new Point())).toBe('Point { x: 1 }')
    expect(renderValue(Object.create(Object.create(null) as object) as object)).toBe('{}')
    const anonymous = new (class {})()
    expect(renderValue(anonymous)).toBe('{}')
    // A constructor whose name is not a string names nothing.
    const Numbered = function () {} as unknown as { prototype: object }
    Object.defineProperty(Numbered, 'name', { value: 7 })
    expect(renderValue(Object.create(Numbered.prototype) as object)).toBe('{}')
  })

  it('shows getters and setters without calling them, and skips non-enumerables and symbols', () => {
    let calls = 0
    const obj = Object.defineProperties({} as object, {
      g: { get: () => ++calls, enumerable: true },
      s: { set: () => void ++calls, enumerable: true },
      gs: { get: () => ++calls, set: () => void ++calls, enumerable: true },
      'q-k': { get: () => ++calls, enumerable: true },
      hidden: { value: 1, enumerable: false },
      [Symbol('sym')]: { value: 1, enumerable: true },
    })
    expect(renderValue(obj)).toBe('{ g: [Getter], s: [Setter], gs: [Getter/Setter], "q-k": [Getter] }')
    expect(calls).toBe(0)
    const arr = Object.defineProperty([1], '0', { get: () => 5, enumerable: true })
    expect(renderValue(arr)).toBe('[[Getter]]')
  })

  it('shows an array’s extra keys only when it is not cut', () => {
    const a = Object.assign([1, 2, 3], { tag: 't' })
    expect(renderValue(a)).toBe('[1, 2, 3, tag: "t"]')
    expect(renderValue(a, { maxItems: 2 })).toBe('[1, 2, … 1 more items]')
    // As long as maxItems: every index shows, and the extra key is counted, not lost.
    expect(renderValue(Object.assign([1, 2], { tag: 't' }), { maxItems: 2 })).toBe('[1, 2, … 1 more items]')
    expect(renderValue(Object.assign([1, 2], { tag: 't', more: 'm' }), { maxItems: 3 })).toBe('[1, 2, tag: "t", … 1 more items]')
    // Only canonical indices are indices: other keys with digits are shown with their name.
    expect(renderValue(Object.assign([1], { x1: 2, '1x': 3, '01': 4 }))).toBe('[1, x1: 2, "1x": 3, "01": 4]')
    // A non-enumerable index is skipped like a hole.
    expect(renderValue(Object.defineProperty([1, 2], '0', { value: 5, enumerable: false }))).toBe('[2]')
    // eslint-disable-next-line no-sparse-arrays
    expect(renderValue([1, , 3])).toBe('[1, 3]')
  })

  it('bounds items, depth and length', () => {
    expect(renderValue({ a: 1, b: 2, c: 3 }, { maxItems: 2 })).toBe('{ a: 1, b: 2, … 1 more items }')
    expect(renderValue({ a: 1, b: 2 }, { maxItems: 2 })).toBe('{ a: 1, b: 2 }')
    expect(renderValue(new Map([[1, 1], [2, 2], [3, 3]]), { maxItems: 1 })).toBe('Map(3) { 1 => 1, … 2 more items }')
    expect(renderValue(new Set([1, 2, 3]), { maxItems: 2 })).toBe('Set(3) { 1, 2, … 1 more items }')
    expect(renderValue(new Set([1, 2]), { maxItems: 2 })).toBe('Set(2) { 1, 2 }')
    expect(renderValue({ a: { b: { c: 1 } } }, { maxDepth: 2 })).toBe('{ a: { b: [Object] } }')
    expect(renderValue({ a: [[1]] }, { maxDepth: 2 })).toBe('{ a: [[Array]] }')
    expect(renderValue({ a: new Map() }, { maxDepth: 1 })).toBe('{ a: [Map] }')
    expect(renderValue({ a: Object.create(null) as object }, { maxDepth: 1 })).toBe('{ a: [[Object: null prototype]] }')
    expect(renderValue([1, 2, 3], { maxDepth: 0 })).toBe('[Array]')
    const deep = { a: { b: { c: { d: { e: { f: { g: 1 } } } } } } }
    expect(renderValue(deep)).toBe('{ a: { b: { c: { d: { e: { f: [Object] } } } } } }')
    expect(renderValue({ long: 'x'.repeat(50) }, { maxLength: 10 })).toBe('{ long: "x…')
    expect(renderValue([1, 2, 3], { maxLength: 4 })).toBe('[1, …')
    expect(renderValue([1, 2], { maxLength: 6 })).toBe('[1, 2]')
    // The closing text itself crosses the bound: cut after it.
    expect(renderValue({ a: 1 }, { maxLength: 7 })).toBe('{ a: 1 …')
    expect(renderValue({ a: 1 }, { maxLength: 8 })).toBe('{ a: 1 }')
    // Map keys and values and set members are one level down.
    expect(renderValue(new Map<unknown, unknown>([[{ k: 1 }, { v: 1 }]]), { maxDepth: 1 })).toBe('Map(1) { [Object] => [Object] }')
    expect(renderValue(new Set([{ s: 1 }]), { maxDepth: 1 })).toBe('Set(1) { [Object] }')
    expect(renderValue(Array.from({ length: 150 }, () => 0))).toBe(`[${Array.from({ length: 100 }, () => '0').join(', ')}, … 50 more items]`)
  })

  it('marks cycles and renders a shared (acyclic) object each time', () => {
    const shared = { s: 1 }
    const self: Record<string, unknown> = { shared, again: shared }
    self.me = self
    expect(renderValue(self)).toBe('{ shared: { s: 1 }, again: [Circular], me: [Circular] }')
  })

  it('renders an object it cannot inspect as [Unrenderable]', () => {
    const hostile = new Proxy({}, {
      getPrototypeOf() {
        throw new Error('trap')
      },
      ownKeys() {
        throw new Error('trap')
      },
    })
    expect(renderValue([hostile, 1])).toBe('[[Unrenderable], 1]')
    const revocable = Proxy.revocable({}, {})
    revocable.revoke()
    expect(renderValue({ r: revocable.proxy })).toBe('{ r: [Unrenderable] }')
  })
})

describe('measureValueBytes', () => {
  it('counts primitives close to their JSON', () => {
    expect(measureValueBytes('abc', 100)).toBe(5)
    expect(measureValueBytes('é', 100)).toBe(4)
    expect(measureValueBytes(12345, 100)).toBe(5)
    expect(measureValueBytes(10n, 100)).toBe(2)
    expect(measureValueBytes(12345n, 100)).toBe(5)
    expect(measureValueBytes(true, 100)).toBe(4)
    expect(measureValueBytes(undefined, 100)).toBe(4)
    expect(measureValueBytes(Symbol('x'), 100)).toBe(4)
    expect(measureValueBytes(() => 1, 100)).toBe(4)
    expect(measureValueBytes(null, 100)).toBe(4)
  })

  it('counts a string longer than the limit by its length, without encoding it', () => {
    expect(measureValueBytes('x'.repeat(11), 10)).toBe(11)
    expect(measureValueBytes('é'.repeat(11), 10)).toBe(11)
    expect(measureValueBytes('é'.repeat(10), 10)).toBe(11)
    expect(measureValueBytes('é'.repeat(4), 10)).toBe(10)
  })

  it('counts containers, binary data, dates and errors', () => {
    expect(measureValueBytes({ ab: 1 }, 100)).toBe(2 + 2 + 4 + 1)
    expect(measureValueBytes([1, 22], 100)).toBe(2 + 1 + 1 + 1 + 2)
    expect(measureValueBytes(new Uint8Array(7), 100)).toBe(7)
    expect(measureValueBytes(new ArrayBuffer(9), 100)).toBe(9)
    expect(measureValueBytes(new DataView(new ArrayBuffer(6)), 100)).toBe(6)
    expect(measureValueBytes(new Date(), 100)).toBe(26)
    expect(measureValueBytes(/x/, 100)).toBe(26)
    const error = new Error('ab')
    expect(measureValueBytes(error, 10_000)).toBe(4 + utf8Length(error.stack!) + 2)
    const longer = new Error('abcdef')
    expect(measureValueBytes(longer, 10_000)).toBe(8 + utf8Length(longer.stack!) + 2)
    // No own message or stack: two absent values.
    expect(measureValueBytes(Object.create(Error.prototype) as object, 100)).toBe(8)
    expect(measureValueBytes(new Map([['k', 1]]), 100)).toBe(2 + 2 + 3 + 1)
    expect(measureValueBytes(new Set([1, 2]), 100)).toBe(2 + 1 + 1 + 1 + 1)
    const shared = { a: 1 }
    expect(measureValueBytes([shared, shared], 100)).toBe(2 + 1 + (2 + 1 + 4 + 1) + 1 + 12)
    const getter = Object.defineProperty({}, 'g', { get: () => 'x'.repeat(1000), enumerable: true })
    expect(measureValueBytes(getter, 100)).toBe(2)
  })

  it('stops as soon as the count passes the limit and answers limit + 1', () => {
    expect(measureValueBytes('abcdefgh', 10)).toBe(10)
    expect(measureValueBytes('abcdefghi', 10)).toBe(11)
    expect(measureValueBytes(new Uint8Array(11), 10)).toBe(11)
    expect(measureValueBytes(new Array(11).fill(0), 10)).toBe(11)
    expect(measureValueBytes(new Array(10).fill(0), 100)).toBe(2 + 20)
    let reads = 0
    const many = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, { get v() {
      reads++
      return 1
    } }]))
    expect(measureValueBytes(many, 50)).toBe(51)
    expect(reads).toBe(0)
    const bigMap = new Map(Array.from({ length: 1000 }, (_, i) => [i, i]))
    expect(measureValueBytes(bigMap, 50)).toBe(51)
    const bigSet = new Set(Array.from({ length: 1000 }, (_, i) => i))
    expect(measureValueBytes(bigSet, 50)).toBe(51)
  })

  it('counts what it cannot inspect as 16 bytes', () => {
    const revocable = Proxy.revocable({}, {})
    revocable.revoke()
    expect(measureValueBytes([revocable.proxy], 100)).toBe(2 + 1 + 16)
  })
})

describe('deepValueText', () => {
  const mark = '… [value rendered as text: nested deeper than 100 levels]'
  it('renders 32 levels, then cuts so that the text and its mark fit the byte cap', () => {
    let deep: unknown = 1
    for (let i = 0; i < 150; i++) deep = [deep]
    expect(deepValueText(deep, 1_000)).toBe(`${'['.repeat(32)}[Array]${']'.repeat(32)}${mark}`)
    expect(deepValueText(deep, Number.POSITIVE_INFINITY)).toBe(`${'['.repeat(32)}[Array]${']'.repeat(32)}${mark}`)
    const cut = deepValueText(deep, utf8Length(mark) + 5)
    expect(cut).toBe(`[[[[[${mark}`)
    expect(deepValueText(deep, 3)).toBe(mark)
  })
})

describe('renderedWithin', () => {
  it('renders 32 levels deep and cuts at the byte cap, never inside a character', () => {
    let deep: unknown = 1
    for (let i = 0; i < 40; i++) deep = [deep]
    expect(renderedWithin(deep, 1_000)).toBe(`${'['.repeat(32)}[Array]${']'.repeat(32)}`)
    expect(renderedWithin({ a: 'é'.repeat(10) }, 9)).toBe('{ a: "é')
    expect(utf8Length(renderedWithin({ a: 'é'.repeat(10) }, 10))).toBe(10)
    expect(renderedWithin('x'.repeat(50), 0)).toBe('')
  })

  it('cuts a wide value at the cap', () => {
    const wide = Array.from({ length: 1_000_000 }, (_, i) => i)
    expect(renderedWithin(wide, 20)).toBe('[0, 1, 2, 3, 4, 5, 6')
  })
})
