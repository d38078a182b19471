import { describe, expect, it } from 'vitest'
import { LosslessJsonError, SchemaError, ToolArgsError } from '../../../src/errors.js'
import { isJsonSnapshot, snapshotLosslessJson } from '../../../src/json/lossless.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { valueSchemaSpecToJsonSchema } from '../../../src/schema/dsl.js'
import { assertSupportedJsonSchema } from '../../../src/schema/json-schema.js'

function rejection(value: unknown): LosslessJsonError {
  try {
    snapshotLosslessJson(value)
  } catch (error) {
    expect(error).toBeInstanceOf(LosslessJsonError)
    return error as LosslessJsonError
  }
  throw new Error('expected a LosslessJsonError')
}

describe('snapshotLosslessJson', () => {
  it('copies plain JSON and deep-freezes the copy', () => {
    const source = { a: [1, 'x', true, null, { b: 2.5 }], c: {} }
    const copy = snapshotLosslessJson(source) as typeof source
    expect(copy).toEqual(source)
    expect(copy).not.toBe(source)
    expect(copy.a).not.toBe(source.a)
    expect(Object.isFrozen(copy)).toBe(true)
    expect(Object.isFrozen(copy.a)).toBe(true)
    expect(Object.isFrozen(copy.a[4])).toBe(true)
    source.a.push(9)
    expect(copy.a).toHaveLength(5)
  })

  it('returns scalars as they are', () => {
    for (const v of ['s', 0, 1.5, -3, true, false, null]) expect(snapshotLosslessJson(v)).toBe(v)
  })

  it('returns an existing snapshot unchanged', () => {
    const copy = snapshotLosslessJson({ a: 1 })
    expect(isJsonSnapshot(copy)).toBe(true)
    expect(snapshotLosslessJson(copy)).toBe(copy)
    expect(isJsonSnapshot({ a: 1 })).toBe(false)
  })

  it.each([
    ['undefined', { a: undefined }, '/a', /undefined/],
    ['BigInt', { a: [1n] }, '/a/0', /BigInt/],
    ['a function', { f: () => 1 }, '/f', /function/],
    ['a symbol value', [Symbol('s')], '/0', /symbol/],
    ['-0', { n: -0 }, '/n', /-0/],
    ['NaN', { n: Number.NaN }, '/n', /non-finite/],
    ['Infinity', [Infinity], '/0', /non-finite/],
    ['a Date', { d: new Date(0) }, '/d', /Date/],
    ['a Map', { m: new Map() }, '/m', /Map/],
    ['a Set', { s: new Set() }, '/s', /Set/],
    ['a RegExp', { r: /x/ }, '/r', /RegExp/],
    ['a class instance', { c: new (class Point {})() }, '/c', /Point/],
    ['a boxed primitive', { b: Object('x') }, '/b', /String/],
    ['an Array subclass', { a: new (class Arr extends Array {})() }, '/a', /non-plain array/],
    ['a typed array', { t: new Uint8Array(2) }, '/t', /Uint8Array/],
  ])('rejects %s with its path', (_name, value, path, message) => {
    const error = rejection(value)
    expect(error.code).toBe('INVALID_JSON')
    expect(error.path).toBe(path)
    expect(error.message).toMatch(message)
  })

  it('rejects undefined at the root', () => {
    expect(rejection(undefined).path).toBe('')
    expect(rejection(undefined).message).toMatch(/at the root/)
  })

  it('rejects cycles but copies DAG sharing', () => {
    const cyclic: { a: { b?: unknown } } = { a: {} }
    cyclic.a.b = cyclic
    const error = rejection(cyclic)
    expect(error.message).toMatch(/cycle/)
    expect(error.path).toBe('/a/b')

    const shared = { x: 1 }
    const copy = snapshotLosslessJson({ a: shared, b: [shared, shared] }) as { a: unknown; b: unknown[] }
    expect(copy).toEqual({ a: { x: 1 }, b: [{ x: 1 }, { x: 1 }] })
    expect(copy.a).not.toBe(shared)
  })

  it('copies exponential DAG sharing in linear time', () => {
    let dag: unknown = 1
    for (let i = 0; i < 64; i++) dag = [dag, dag]
    const copy = snapshotLosslessJson(dag) as unknown[]
    expect(copy).toHaveLength(2)
  })

  it('rejects sparse arrays naming the hole', () => {
    // eslint-disable-next-line no-sparse-arrays
    const error = rejection({ list: [1, , 3] })
    expect(error.path).toBe('/list/1')
    expect(error.message).toMatch(/sparse/)
    expect(rejection({ list: new Array(3) }).path).toBe('/list/0')
  })

  it('rejects arrays with extra properties', () => {
    const arr = Object.assign([1, 2], { extra: true })
    expect(rejection({ arr }).message).toMatch(/extra property \("extra"\)/)
    const withSymbol = Object.assign([1], { [Symbol('s')]: 1 })
    expect(rejection(withSymbol).message).toMatch(/symbol-keyed/)
  })

  it('rejects symbol keys, accessors and non-enumerable properties without invoking getters', () => {
    expect(rejection({ [Symbol('k')]: 1 }).message).toMatch(/symbol-keyed/)
    let called = false
    const withGetter = {
      get secret(): number {
        called = true
        return 1
      },
    }
    const error = rejection({ nested: withGetter })
    expect(error.path).toBe('/nested/secret')
    expect(error.message).toMatch(/accessor/)
    expect(called).toBe(false)
    const arr = [1, 2]
    Object.defineProperty(arr, 1, {
      get() {
        called = true
        return 2
      },
      enumerable: true,
    })
    expect(rejection(arr).path).toBe('/1')
    expect(called).toBe(false)
    const hidden = Object.defineProperty({}, 'h', { value: 1, enumerable: false })
    expect(rejection(hidden).message).toMatch(/non-enumerable/)
  })

  it('accepts null-prototype objects and returns ordinary objects', () => {
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { a: 1 })
    const copy = snapshotLosslessJson(bare) as Record<string, unknown>
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype)
    expect(copy).toEqual({ a: 1 })
  })

  it('keeps an own "__proto__" key as data, never as a prototype', () => {
    const parsed = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as Record<string, unknown>
    const copy = snapshotLosslessJson(parsed) as Record<string, unknown>
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype)
    expect(Object.keys(copy)).toEqual(['__proto__', 'a'])
    expect((copy as { polluted?: unknown }).polluted).toBeUndefined()
    expect(Object.getOwnPropertyDescriptor(copy, '__proto__')?.value).toEqual({ polluted: true })
    expect(JSON.stringify(copy)).toBe('{"__proto__":{"polluted":true},"a":1}')
  })

  it('escapes JSON Pointer tokens in paths', () => {
    expect(rejection({ 'a/b': { 'c~d': [undefined] } }).path).toBe('/a~1b/c~0d/0')
  })

  it('handles a value 100,000 levels deep without RangeError', () => {
    let deep: unknown = 'leaf'
    for (let i = 0; i < 100_000; i++) deep = i % 2 === 0 ? [deep] : { k: deep }
    const copy = snapshotLosslessJson(deep)
    let cursor: unknown = copy
    let depth = 0
    let unfrozen = 0
    while (typeof cursor === 'object' && cursor !== null) {
      if (!Object.isFrozen(cursor)) unfrozen++
      cursor = Array.isArray(cursor) ? cursor[0] : (cursor as { k: unknown }).k
      depth++
    }
    expect(depth).toBe(100_000)
    expect(unfrozen).toBe(0)
    expect(cursor).toBe('leaf')
  })

  it('reports the full path of a failure 100,000 levels deep', () => {
    let deep: unknown = undefined
    for (let i = 0; i < 100_000; i++) deep = [deep]
    const error = rejection(deep)
    expect(error.path.length).toBe(200_000)
  })
})

/*
 * A value that is not lossless JSON, refused at each of the three doors (a JSON Schema, a
 * DSL spec, a tool's arguments): the class, the path, and the message exactly once with
 * its location (the inner "at …" is stripped before the outer error names the place).
 */
function schemaError(fn: () => unknown): [string, string] | undefined {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(SchemaError)
    expect((error as Error).cause).toBeInstanceOf(LosslessJsonError)
    return [(error as SchemaError).path, (error as Error).message]
  }
  return undefined
}

describe('not lossless JSON', () => {
  it('in a JSON Schema', () => {
    expect(schemaError(() => assertSupportedJsonSchema({ type: 'object', properties: { a: { description: undefined } } }))).toEqual([
      '/properties/a/description',
      'schema is not lossless JSON: undefined is not JSON at /properties/a/description',
    ])
    expect(schemaError(() => assertSupportedJsonSchema({ type: 'string', default: -0 }))).toEqual(['/default', 'schema is not lossless JSON: -0 is not lossless JSON at /default'])
    expect(schemaError(() => assertSupportedJsonSchema(new Map()))).toEqual(['', 'schema is not lossless JSON: a non-plain object (Map) is not JSON at the schema root'])
  })

  it('in a DSL spec', () => {
    expect(schemaError(() => valueSchemaSpecToJsonSchema({ type: 'string', description: undefined } as never))).toEqual([
      '/description',
      'schema spec is not lossless JSON: undefined is not JSON at /description',
    ])
    expect(schemaError(() => valueSchemaSpecToJsonSchema(-0 as never))).toEqual(['', 'schema spec is not lossless JSON: -0 is not lossless JSON at the schema root'])
  })

  it('in a tool’s arguments', () => {
    const tool = defineTool({ name: 'x', description: 'd', parameters: { a: { type: 'number' } }, output: { schema: { type: 'null' }, render: () => [] }, execute: () => null })
    const violations = (args: unknown) => {
      try {
        tool.validateArgs!(args as never)
      } catch (error) {
        expect(error).toBeInstanceOf(ToolArgsError)
        expect((error as Error).cause).toBeInstanceOf(LosslessJsonError)
        return [(error as ToolArgsError).violations, (error as Error).message]
      }
      return undefined
    }
    expect(violations({ a: -0 })).toEqual([[{ path: '/a', message: '-0 is not lossless JSON' }], 'Invalid arguments: /a: -0 is not lossless JSON'])
    expect(violations({ a: { b: undefined } })).toEqual([[{ path: '/a/b', message: 'undefined is not JSON' }], 'Invalid arguments: /a/b: undefined is not JSON'])
    expect(violations(-0)).toEqual([[{ path: '', message: '-0 is not lossless JSON' }], 'Invalid arguments: (root): -0 is not lossless JSON'])
  })
})
