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
