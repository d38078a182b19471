import { describe, expect, it } from 'vitest'
import { SchemaError } from '../../../src/errors.js'
import { parameterSchemaSpecToJsonSchema, valueSchemaSpecToJsonSchema, type ValueSchemaSpec } from '../../../src/schema/dsl.js'
import { compileJsonSchema } from '../../../src/schema/json-schema.js'

function specError(spec: unknown, parameters = false): SchemaError {
  try {
    if (parameters) parameterSchemaSpecToJsonSchema(spec as never)
    else valueSchemaSpecToJsonSchema(spec as ValueSchemaSpec)
  } catch (error) {
    expect(error).toBeInstanceOf(SchemaError)
    return error as SchemaError
  }
  throw new Error('expected a SchemaError')
}

describe('parameterSchemaSpecToJsonSchema', () => {
  it('converts the seed read_file parameters into an open object schema', () => {
    const schema = parameterSchemaSpecToJsonSchema({
      path: { type: 'string', required: true, description: 'Absolute file path' },
      offset: { type: 'number' },
      limit: { type: 'number' },
    })
    expect(schema).toEqual({
      type: 'object',
      properties: {
        path: { type: 'string', description: 'Absolute file path' },
        offset: { type: 'number' },
        limit: { type: 'number' },
      },
      required: ['path'],
    })
    expect(JSON.stringify(schema)).toBe(
      '{"type":"object","properties":{"path":{"type":"string","description":"Absolute file path"},"offset":{"type":"number"},"limit":{"type":"number"}},"required":["path"]}',
    )
    expect(Object.isFrozen(schema.properties)).toBe(true)
    expect(compileJsonSchema(schema).isValid({ path: '/x', extra: 1 })).toBe(true)
  })

  it('accepts an empty parameter record', () => {
    expect(parameterSchemaSpecToJsonSchema({})).toEqual({ type: 'object', properties: {} })
  })

  it('rejects a non-record', () => {
    expect(specError([], true).message).toMatch(/record/)
    expect(specError({ a: 'string' }, true).path).toBe('/a')
  })
})

describe('valueSchemaSpecToJsonSchema', () => {
  it('converts every node kind', () => {
    const schema = valueSchemaSpecToJsonSchema({
      type: 'object',
      description: 'root',
      additionalProperties: false,
      properties: {
        s: { type: 'string', enum: ['a', 'b'], required: true },
        n: { type: 'number', const: 1.5 },
        i: { type: 'integer', enum: [1, 2] },
        b: { type: 'boolean' },
        z: { type: 'null' },
        list: { type: 'array', items: { type: 'json', description: 'anything' } },
        any: { type: 'json' },
        either: { oneOf: [{ type: 'string' }, { type: 'object', additionalProperties: true }], description: 'one' },
      },
    })
    expect(schema).toEqual({
      type: 'object',
      description: 'root',
      properties: {
        s: { type: 'string', enum: ['a', 'b'] },
        n: { type: 'number', const: 1.5 },
        i: { type: 'integer', enum: [1, 2] },
        b: { type: 'boolean' },
        z: { type: 'null' },
        list: { type: 'array', items: { description: 'anything' } },
        any: {},
        either: { description: 'one', oneOf: [{ type: 'string' }, { type: 'object', additionalProperties: true }] },
      },
      required: ['s'],
      additionalProperties: false,
    })
  })

  it('accepts any JSON root', () => {
    expect(valueSchemaSpecToJsonSchema({ type: 'string' })).toEqual({ type: 'string' })
    expect(valueSchemaSpecToJsonSchema({ type: 'null' })).toEqual({ type: 'null' })
    expect(valueSchemaSpecToJsonSchema({ type: 'json' })).toEqual({})
    expect(valueSchemaSpecToJsonSchema({ type: 'array' })).toEqual({ type: 'array' })
  })

  it('requires explicit objects to declare additionalProperties', () => {
    expect(specError({ type: 'object' }).message).toMatch(/must declare "additionalProperties"/)
    expect(specError({ type: 'object', additionalProperties: 'no' }).path).toBe('/additionalProperties')
    expect(specError({ a: { type: 'object', properties: {} } }, true).path).toBe('/a')
  })

  it('makes a closed object without properties accept only {}', () => {
    const c = compileJsonSchema(valueSchemaSpecToJsonSchema({ type: 'object', additionalProperties: false }))
    expect(c.isValid({})).toBe(true)
    expect(c.isValid({ a: 1 })).toBe(false)
  })

  it.each([
    [{ type: 'string', enum: ['a', 1] }, '/enum/1', /not a string/],
    [{ type: 'integer', enum: [1.5] }, '/enum/0', /not a integer/],
    [{ type: 'number', const: 'x' }, '/const', /not a number/],
    [{ type: 'boolean', enum: [0] }, '/enum/0', /not a boolean/],
    [{ type: 'string', enum: [] }, '/enum', /non-empty/],
    [{ type: 'string', enum: ['a', 'a'] }, '/enum/1', /duplicate/],
    [{ type: 'null', enum: [null] }, '/enum', /unsupported DSL keyword "enum"/],
    [{ type: 'string', minLength: 1 }, '/minLength', /unsupported DSL keyword/],
    [{ type: 'string', items: { type: 'string' } }, '/items', /unsupported DSL keyword/],
    [{ type: 'any' }, '/type', /unsupported DSL type/],
    [{ description: 'x' }, '', /needs a "type"/],
    [{ type: 'string', required: true }, '/required', /only allowed on a property/],
    [{ type: 'array', items: { type: 'string', required: true } }, '/items/required', /only allowed on a property/],
    [{ oneOf: [] }, '/oneOf', /non-empty/],
    [{ oneOf: [{ type: 'string', required: true }] }, '/oneOf/0/required', /only allowed/],
    [{ type: 'object', additionalProperties: true, properties: { a: { type: 'string', required: 'yes' } } }, '/properties/a/required', /boolean/],
    [{ type: 'string', description: 3 }, '/description', /string/],
    [{ type: 'string', default: undefined }, '/default', /undefined/],
    [{ type: 'array', items: [{ type: 'string' }] }, '/items', /must be an object/],
  ])('rejects %j at its path', (spec, path, message) => {
    const error = specError(spec)
    expect(error.code).toBe('INVALID_SCHEMA')
    expect(error.path).toBe(path)
    expect(error.message).toMatch(message)
  })

  it('accepts only own enumerable string keys and dense arrays, never invoking getters', () => {
    let called = false
    const hostile = {
      get type(): string {
        called = true
        return 'string'
      },
    }
    expect(specError({ a: hostile }, true).path).toBe('/a/type')
    expect(called).toBe(false)
    const inherited = Object.create({ type: 'string' }) as ValueSchemaSpec
    expect(specError(inherited).message).toMatch(/non-plain/)
    expect(specError({ a: { type: 'string', [Symbol('x')]: 1 } }, true).message).toMatch(/symbol/)
    expect(specError(Object.defineProperty({ type: 'string' }, 'enum', { value: ['a'], enumerable: false })).message).toMatch(/non-enumerable/)
    // eslint-disable-next-line no-sparse-arrays
    expect(specError({ type: 'string', enum: ['a', , 'b'] }).path).toBe('/enum/1')
  })

  it('keeps "__proto__" property names as data', () => {
    const spec = JSON.parse('{"__proto__":{"type":"string","required":true}}') as never
    const schema = parameterSchemaSpecToJsonSchema(spec)
    expect(Object.keys(schema.properties!)).toEqual(['__proto__'])
    expect(schema.required).toEqual(['__proto__'])
    expect(compileJsonSchema(schema).isValid({})).toBe(false)
  })

  it('converts a spec 100,000 levels deep without RangeError', () => {
    let spec: ValueSchemaSpec = { type: 'integer' }
    for (let i = 0; i < 100_000; i++) {
      spec = i % 2 === 0 ? { type: 'array', items: spec } : { type: 'object', additionalProperties: false, properties: { a: { ...spec, required: true } as never } }
    }
    const schema = valueSchemaSpecToJsonSchema(spec)
    expect(schema.type).toBe('object')
  })
})

/*
 * The schema DSL's conversion as a unit: the exact raw schema each spec becomes (key
 * order included), and each refusal with its message and JSON-pointer path.
 */
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
