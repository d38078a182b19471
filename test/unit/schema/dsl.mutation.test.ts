/**
 * The schema DSL's conversion as a unit: the exact raw schema each spec becomes (key
 * order included), and each refusal with its message and JSON-pointer path.
 */
import { describe, expect, it } from 'vitest'
import { SchemaError } from '../../../src/errors.js'
import { parameterSchemaSpecToJsonSchema, valueSchemaSpecToJsonSchema } from '../../../src/schema/dsl.js'

function refusal(fn: () => unknown): { path: string; message: string } | undefined {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(SchemaError)
    const e = error as SchemaError
    return { path: e.path, message: e.message }
  }
  return undefined
}

const value = (spec: unknown) => refusal(() => valueSchemaSpecToJsonSchema(spec as never))
const params = (spec: unknown) => refusal(() => parameterSchemaSpecToJsonSchema(spec as never))
const at = (path: string) => (path === '' ? 'the schema root' : path)
const expectRefusal = (got: { path: string; message: string } | undefined, path: string, message: string) => {
  expect(got).toEqual({ path, message: `${message} at ${at(path)}` })
}

describe('conversion', () => {
  it('scalars with annotations, in a fixed key order', () => {
    const out = valueSchemaSpecToJsonSchema({
      examples: ['x'],
      default: 'a',
      deprecated: true,
      $comment: 'c',
      enum: ['a', 'b'],
      description: 'd',
      title: 't',
      type: 'string',
    } as never)
    expect(JSON.stringify(out)).toBe('{"type":"string","title":"t","description":"d","$comment":"c","enum":["a","b"],"deprecated":true,"default":"a","examples":["x"]}')
    expect(valueSchemaSpecToJsonSchema({ type: 'integer', const: 3 })).toEqual({ type: 'integer', const: 3 })
    expect(valueSchemaSpecToJsonSchema({ type: 'number', enum: [1.5, -2] })).toEqual({ type: 'number', enum: [1.5, -2] })
    expect(valueSchemaSpecToJsonSchema({ type: 'boolean', const: false })).toEqual({ type: 'boolean', const: false })
    expect(valueSchemaSpecToJsonSchema({ type: 'null', description: 'n' })).toEqual({ type: 'null', description: 'n' })
    expect(valueSchemaSpecToJsonSchema({ type: 'json', title: 'any' })).toEqual({ title: 'any' })
    expect(valueSchemaSpecToJsonSchema({ type: 'boolean', deprecated: false })).toEqual({ type: 'boolean', deprecated: false })
  })

  it('objects, arrays and oneOf, with required properties listed in order', () => {
    const out = valueSchemaSpecToJsonSchema({
      type: 'object',
      additionalProperties: false,
      properties: { b: { type: 'string', required: true }, a: { type: 'array', items: { type: 'number' } }, c: { type: 'null', required: true }, d: { type: 'json', required: false } },
    })
    expect(out).toEqual({
      type: 'object',
      properties: { b: { type: 'string' }, a: { type: 'array', items: { type: 'number' } }, c: { type: 'null' }, d: {} },
      required: ['b', 'c'],
      additionalProperties: false,
    })
    expect(JSON.stringify(out)).toBe('{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"array","items":{"type":"number"}},"c":{"type":"null"},"d":{}},"required":["b","c"],"additionalProperties":false}')
    expect(valueSchemaSpecToJsonSchema({ type: 'object', additionalProperties: true })).toEqual({ type: 'object', additionalProperties: true })
    expect(valueSchemaSpecToJsonSchema({ type: 'object', additionalProperties: true, properties: { x: { type: 'string' } } })).toEqual({ type: 'object', properties: { x: { type: 'string' } }, additionalProperties: true })
    expect(valueSchemaSpecToJsonSchema({ type: 'array' })).toEqual({ type: 'array' })
    expect(valueSchemaSpecToJsonSchema({ oneOf: [{ type: 'string' }, { type: 'null' }], description: 'either' })).toEqual({ description: 'either', oneOf: [{ type: 'string' }, { type: 'null' }] })
  })

  it('parameters: an open object root, required only when some property says so', () => {
    expect(parameterSchemaSpecToJsonSchema({ p: { type: 'string', required: true }, q: { type: 'number' } })).toEqual({
      type: 'object',
      properties: { p: { type: 'string' }, q: { type: 'number' } },
      required: ['p'],
    })
    const none = parameterSchemaSpecToJsonSchema({ q: { type: 'number', required: false } })
    expect(none).toEqual({ type: 'object', properties: { q: { type: 'number' } } })
    expect(Object.hasOwn(none, 'required')).toBe(false)
    expect(parameterSchemaSpecToJsonSchema({})).toEqual({ type: 'object', properties: {} })
    expect(Object.isFrozen(parameterSchemaSpecToJsonSchema({}))).toBe(true)
    const odd = JSON.parse('{"__proto__":{"type":"string","required":true}}') as never
    expect(Object.keys(parameterSchemaSpecToJsonSchema(odd).properties!)).toEqual(['__proto__'])
  })

  it('integer accepts integral numbers only; number accepts finite ones', () => {
    expect(value({ type: 'integer', enum: [1, 2] })).toBeUndefined()
    expectRefusal(value({ type: 'integer', enum: [1, 1.5] }), '/enum/1', 'enum member 1.5 is not a integer')
    expectRefusal(value({ type: 'number', const: '1' }), '/const', 'const "1" is not a number')
    expectRefusal(value({ type: 'boolean', enum: [true, 0] }), '/enum/1', 'enum member 0 is not a boolean')
    expectRefusal(value({ type: 'string', enum: ['a', 1] }), '/enum/1', 'enum member 1 is not a string')
    expectRefusal(value({ type: 'null', enum: [null] }), '/enum', 'unsupported DSL keyword "enum" for type "null"')
  })
})

describe('refusals, with where', () => {
  it('what is not a spec', () => {
    expectRefusal(value('string'), '', 'a schema spec must be an object')
    expectRefusal(value([{ type: 'string' }]), '', 'a schema spec must be an object')
    expectRefusal(value({ type: 'array', items: null }), '/items', 'a schema spec must be an object')
    expectRefusal(params({ a: 'string' }), '/a', 'a schema spec must be an object')
    expectRefusal(params(['x']), '', 'properties must be a record of property specs')
    for (const properties of [[], 'ab', null, 3]) {
      expectRefusal(value({ type: 'object', additionalProperties: true, properties }), '/properties', 'properties must be a record of property specs')
    }
  })

  it('missing or unknown types, naming the raw keywords found', () => {
    expectRefusal(value({ type: 'map' }), '/type', 'unsupported DSL type "map"')
    expectRefusal(value({ type: 5 }), '/type', 'unsupported DSL type 5')
    expectRefusal(value({ type: 'oneOf', oneOf: [] }), '/type', 'unsupported DSL keyword "type" for a oneOf node')
    expectRefusal(value({}), '', 'a schema spec needs a "type" (or "oneOf")')
    expectRefusal(value({ description: 'd', title: 't', default: 1, examples: [], deprecated: true, $comment: 'c' }), '', 'a schema spec needs a "type" (or "oneOf")')
    expectRefusal(value({ $ref: '#/x' }), '', 'a schema spec needs a "type" (or "oneOf") (found "$ref"; raw JSON Schema keywords are not DSL)')
    expectRefusal(
      value({ anyOf: [], allOf: [], not: {}, if: {} }),
      '',
      'a schema spec needs a "type" (or "oneOf") (found "anyOf", "allOf", "not", …; raw JSON Schema keywords are not DSL)',
    )
    expectRefusal(value({ anyOf: [], allOf: [], not: {} }), '', 'a schema spec needs a "type" (or "oneOf") (found "anyOf", "allOf", "not"; raw JSON Schema keywords are not DSL)')
    expectRefusal(params({ a: { required: true } }), '/a', 'a schema spec needs a "type" (or "oneOf")')
  })

  it('keywords that do not belong, and required outside a property', () => {
    expectRefusal(value({ type: 'string', minLength: 1 }), '/minLength', 'unsupported DSL keyword "minLength" for type "string"')
    expectRefusal(value({ oneOf: [{ type: 'null' }], type2: 1 }), '/type2', 'unsupported DSL keyword "type2" for a oneOf node')
    expectRefusal(value({ type: 'json', items: {} }), '/items', 'unsupported DSL keyword "items" for type "json"')
    expectRefusal(value({ type: 'string', required: true }), '/required', '"required" is only allowed on a property')
    expectRefusal(value({ type: 'array', items: { type: 'string', required: true } }), '/items/required', '"required" is only allowed on a property')
    expectRefusal(params({ a: { type: 'string', required: 'yes' } }), '/a/required', '"required" must be a boolean')
    expectRefusal(value({ type: 'object', additionalProperties: false, properties: { 'a/b~c': { type: 'string', required: 1 } } }), '/properties/a~1b~0c/required', '"required" must be a boolean')
  })

  it('annotations of the wrong type', () => {
    for (const key of ['title', 'description', '$comment']) expectRefusal(value({ type: 'string', [key]: 1 }), `/${key}`, `"${key}" must be a string`)
    expectRefusal(value({ type: 'string', deprecated: 'yes' }), '/deprecated', '"deprecated" must be a boolean')
    expectRefusal(value({ type: 'string', examples: 'x' }), '/examples', '"examples" must be an array')
  })

  it('enum: a non-empty list of distinct members of the type', () => {
    expectRefusal(value({ type: 'string', enum: [] }), '/enum', '"enum" must be a non-empty array')
    expectRefusal(value({ type: 'string', enum: 'a' }), '/enum', '"enum" must be a non-empty array')
    expectRefusal(value({ type: 'string', enum: ['a', 'b', 'a'] }), '/enum/2', 'duplicate enum member "a"')
  })

  it('objects must say whether they are open', () => {
    expectRefusal(value({ type: 'object' }), '', 'an explicit object must declare "additionalProperties": true or false')
    expectRefusal(value({ type: 'object', additionalProperties: 'no' }), '/additionalProperties', '"additionalProperties" must be true or false')
    expectRefusal(params({ a: { type: 'object', properties: {} } }), '/a', 'an explicit object must declare "additionalProperties": true or false')
  })

  it('oneOf needs branches, each checked at its index', () => {
    expectRefusal(value({ oneOf: [] }), '/oneOf', '"oneOf" must be a non-empty array of specs')
    expectRefusal(value({ oneOf: 'x' }), '/oneOf', '"oneOf" must be a non-empty array of specs')
    expectRefusal(value({ oneOf: [{ type: 'string' }, { type: 'nope' }] }), '/oneOf/1/type', 'unsupported DSL type "nope"')
  })

  it('reports the first problem in document order (breadth first)', () => {
    expectRefusal(params({ a: { type: 'array', items: { type: 'bad1' } }, b: { type: 'bad2' } }), '/b/type', 'unsupported DSL type "bad2"')
    expectRefusal(params({ a: { type: 'bad1' }, b: { type: 'bad2' } }), '/a/type', 'unsupported DSL type "bad1"')
  })

  it('a spec that is not lossless JSON, naming where', () => {
    const got = params({ a: { type: 'string', default: undefined } })
    expect(got?.path).toBe('/a/default')
    expect(got?.message).toMatch(/^schema spec is not lossless JSON: .+ at \/a\/default$/)
    expect(got?.message).not.toMatch(/JSON: .* at \/a\/default at /)
    const root = refusal(() => valueSchemaSpecToJsonSchema(undefined as never))
    expect(root?.message).toMatch(/^schema spec is not lossless JSON: \S.* at the schema root$/)
  })
})
