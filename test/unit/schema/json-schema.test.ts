import { describe, expect, it } from 'vitest'
import { SchemaError } from '../../../src/errors.js'
import {
  assertObjectJsonSchema,
  assertSupportedJsonSchema,
  compileJsonSchema,
  detachJsonSchema,
  validateJsonSchemaValue,
} from '../../../src/schema/json-schema.js'
import type { JsonSchemaNode } from '../../../src/schema/json-schema-node.js'

function schemaError(schema: unknown): SchemaError {
  try {
    assertSupportedJsonSchema(schema)
  } catch (error) {
    expect(error).toBeInstanceOf(SchemaError)
    expect((error as SchemaError).code).toBe('INVALID_SCHEMA')
    return error as SchemaError
  }
  throw new Error('expected a SchemaError')
}

describe('assertSupportedJsonSchema', () => {
  it('accepts every construct of the subset', () => {
    const schema = {
      type: 'object',
      title: 'T',
      description: 'D',
      $comment: 'c',
      deprecated: false,
      readOnly: true,
      writeOnly: false,
      default: { a: [1, { b: null }] },
      examples: [{ a: 'x' }, 1],
      properties: {
        a: { type: 'string', enum: ['x', 'y'] },
        b: { type: 'integer', const: 3 },
        c: { type: 'array', items: { type: 'number' } },
        d: { oneOf: [{ type: 'null' }, { type: 'boolean' }] },
        e: {},
        f: { description: 'any JSON' },
      },
      required: ['a', 'z'],
      additionalProperties: false,
    }
    expect(() => assertSupportedJsonSchema(schema)).not.toThrow()
  })

  it.each([
    [{ $ref: '#/x' }, '', /unsupported keyword "\$ref"/],
    [{ type: 'object', properties: { a: { $ref: '#' } } }, '/properties/a', /"\$ref"/],
    [{ anyOf: [{}] }, '', /"anyOf"/],
    [{ allOf: [{}] }, '', /"allOf"/],
    [{ type: 'string', minLength: 1 }, '', /"minLength"/],
    [{ type: 'string', format: 'uri' }, '', /"format"/],
    [{ patternProperties: {} }, '', /"patternProperties"/],
    [{ type: ['string', 'null'] }, '/type', /"type" array/],
    [{ type: 'date' }, '/type', /unsupported type "date"/],
    [{ enum: [] }, '/enum', /non-empty/],
    [{ enum: [{ a: 1 }] }, '/enum/0', /non-scalar/],
    [{ const: [1] }, '/const', /non-scalar/],
    [{ required: 'a' }, '/required', /array/],
    [{ required: [1] }, '/required/0', /strings/],
    [{ required: ['a', 'a'] }, '/required/1', /duplicate/],
    [{ additionalProperties: { type: 'string' } }, '/additionalProperties', /only true or false/],
    [{ items: [{ type: 'string' }] }, '/items', /tuple/],
    [{ items: true }, '/items', /boolean schema/],
    [{ oneOf: [] }, '/oneOf', /non-empty/],
    [{ oneOf: {} }, '/oneOf', /non-empty/],
    [{ properties: [] }, '/properties', /object of schemas/],
    [{ properties: { a: 'string' } }, '/properties/a', /expected an object/],
    [{ title: 1 }, '/title', /string/],
    [{ deprecated: 'yes' }, '/deprecated', /boolean/],
    [{ examples: 'x' }, '/examples', /array/],
    [{ default: -0 }, '/default', /-0/],
    [{ default: { d: new Date() } }, '/default/d', /Date/],
    [true, '', /boolean schema/],
    [null, '', /expected an object/],
    [[], '', /expected an object/],
  ])('rejects %j at its path', (schema, path, message) => {
    const error = schemaError(schema)
    expect(error.path).toBe(path)
    expect(error.message).toMatch(message)
  })

  it('rejects sparse arrays, symbol keys, accessors and non-plain objects without invoking getters', () => {
    // eslint-disable-next-line no-sparse-arrays
    expect(schemaError({ enum: ['a', , 'b'] }).path).toBe('/enum/1')
    expect(schemaError({ [Symbol('s')]: 1 }).message).toMatch(/symbol/)
    let called = false
    const hostile = {
      get type(): string {
        called = true
        return 'string'
      },
    }
    expect(schemaError({ properties: { a: hostile } }).path).toBe('/properties/a/type')
    expect(called).toBe(false)
    expect(schemaError({ properties: new Map() }).message).toMatch(/Map/)
    expect(schemaError(Object.defineProperty({}, 'type', { value: 'string', enumerable: false })).message).toMatch(/non-enumerable/)
  })

  it('keeps "__proto__" property names as data', () => {
    const schema = JSON.parse('{"type":"object","properties":{"__proto__":{"type":"string"}},"required":["__proto__"]}') as JsonSchemaNode
    const compiled = compileJsonSchema(schema)
    expect(compiled.isValid(JSON.parse('{"__proto__":"x"}'))).toBe(true)
    expect(compiled.isValid({})).toBe(false)
    expect(compiled.isValid(JSON.parse('{"__proto__":1}'))).toBe(false)
  })
})

describe('assertObjectJsonSchema', () => {
  it('accepts an object root and rejects any other root', () => {
    expect(() => assertObjectJsonSchema({ type: 'object' })).not.toThrow()
    expect(() => assertObjectJsonSchema({ type: 'string' })).toThrow(SchemaError)
    expect(() => assertObjectJsonSchema({})).toThrow(/expected an object schema/)
    expect(() => assertObjectJsonSchema({ type: 'object', items: 1 })).toThrow(SchemaError)
  })
})

describe('detachJsonSchema', () => {
  it('returns a deep-frozen copy the caller can no longer change', () => {
    const source = { type: 'object' as const, properties: { a: { type: 'string' as const } }, required: ['a'] }
    const detached = detachJsonSchema(source)
    expect(detached).toEqual(source)
    expect(Object.isFrozen(detached.properties!.a)).toBe(true)
    ;(source.properties.a as { type: string }).type = 'number'
    expect(validateJsonSchemaValue(detached, { a: 'x' })).toEqual([])
    expect(detachJsonSchema(detached)).toBe(detached)
  })

  it('compiles once per detached schema', () => {
    const detached = detachJsonSchema({ type: 'string' })
    expect(compileJsonSchema(detached)).toBe(compileJsonSchema(detached))
  })
})

describe('validateJsonSchemaValue', () => {
  const v = (schema: unknown, value: unknown) => validateJsonSchemaValue(schema as JsonSchemaNode, value)

  it('checks each type', () => {
    expect(v({ type: 'string' }, 'x')).toEqual([])
    expect(v({ type: 'string' }, 1)).toEqual([{ path: '', message: 'expected string, got integer' }])
    expect(v({ type: 'integer' }, 2)).toEqual([])
    expect(v({ type: 'integer' }, 2.5)).toEqual([{ path: '', message: 'expected integer, got number' }])
    expect(v({ type: 'number' }, 2)).toEqual([])
    expect(v({ type: 'number' }, Number.NaN)).toHaveLength(1)
    expect(v({ type: 'number' }, Infinity)).toHaveLength(1)
    expect(v({ type: 'boolean' }, false)).toEqual([])
    expect(v({ type: 'null' }, null)).toEqual([])
    expect(v({ type: 'null' }, 0)).toHaveLength(1)
    expect(v({ type: 'array' }, [])).toEqual([])
    expect(v({ type: 'array' }, {})).toHaveLength(1)
    expect(v({ type: 'object' }, [])).toEqual([{ path: '', message: 'expected object, got array' }])
  })

  it('treats an annotation-only node as any JSON value, but not non-JSON', () => {
    for (const value of [null, 1, 'x', [1], { a: {} }, true]) expect(v({ description: 'any' }, value)).toEqual([])
    expect(v({}, undefined)).toEqual([{ path: '', message: 'is not a JSON value' }])
    expect(v({}, () => 1)).toHaveLength(1)
  })

  it('compares enum and const by ===', () => {
    expect(v({ enum: ['a', 1, null, true] }, 1)).toEqual([])
    expect(v({ enum: ['a', 1] }, '1')).toEqual([{ path: '', message: 'must be one of "a", 1, got "1"' }])
    expect(v({ const: 'x' }, 'x')).toEqual([])
    expect(v({ const: 'x' }, 'y')).toEqual([{ path: '', message: 'must be "x", got "y"' }])
    expect(v({ enum: [1, 2], const: 3 }, 3)).toHaveLength(1)
    expect(v({ enum: [1] }, [1])).toHaveLength(1)
  })

  it('reports missing required properties with their path', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } }, required: ['a', 'b'] }
    expect(v(schema, {})).toEqual([
      { path: '/a', message: 'missing required property "a"' },
      { path: '/b', message: 'missing required property "b"' },
    ])
  })

  it('counts only own properties as present (inherited names are not)', () => {
    const schema = { type: 'object', required: ['toString', 'constructor'] }
    expect(v(schema, {})).toHaveLength(2)
    expect(v(schema, { toString: 1, constructor: 2 })).toEqual([])
    expect(v({ type: 'object', properties: { toString: { type: 'string' } }, required: ['toString'] }, {})).toHaveLength(1)
  })

  it('keeps raw objects open unless additionalProperties is false', () => {
    const open = { type: 'object', properties: { a: { type: 'string' } } }
    expect(v(open, { a: 'x', extra: 1 })).toEqual([])
    const closed = { ...open, additionalProperties: false }
    expect(v(closed, { a: 'x', extra: 1 })).toEqual([{ path: '/extra', message: 'unexpected property "extra" (additionalProperties is false)' }])
    expect(v({ type: 'object', additionalProperties: false }, {})).toEqual([])
    expect(v({ type: 'object', additionalProperties: false }, { a: 1 })).toHaveLength(1)
  })

  it('applies object and array keywords only to their kind', () => {
    expect(v({ properties: { a: { type: 'string' } }, required: ['a'] }, 'not an object')).toEqual([])
    expect(v({ items: { type: 'string' } }, 5)).toEqual([])
    expect(v({ items: { type: 'string' } }, [1])).toEqual([{ path: '/0', message: 'expected string, got integer' }])
  })

  it('reports nested violations with JSON Pointer paths', () => {
    const schema = {
      type: 'object',
      properties: { 'a/b': { type: 'array', items: { type: 'object', properties: { 'c~': { type: 'integer' } } } } },
    }
    expect(v(schema, { 'a/b': [{ 'c~': 1 }, { 'c~': 'x' }] })).toEqual([{ path: '/a~1b/1/c~0', message: 'expected integer, got string' }])
  })

  it('requires exactly one oneOf branch', () => {
    const schema = { oneOf: [{ type: 'integer' }, { type: 'number' }, { type: 'string' }] }
    expect(v(schema, 1.5)).toEqual([])
    expect(v(schema, 'x')).toEqual([])
    expect(v(schema, 1)).toEqual([{ path: '', message: 'must match exactly one oneOf branch, matched 2 (branches 0, 1)' }])
    const none = v(schema, null)
    expect(none).toHaveLength(1)
    expect(none[0]!.message).toMatch(/^matches no oneOf branch \(branch 0: \(root\): expected integer, got null; branch 1/)
  })

  it('handles nested oneOf and sibling keywords together', () => {
    const schema = {
      type: 'object',
      properties: {
        shape: {
          oneOf: [
            { type: 'object', properties: { kind: { const: 'circle' }, r: { type: 'number' } }, required: ['kind', 'r'], additionalProperties: false },
            { type: 'object', properties: { kind: { const: 'square' }, side: { oneOf: [{ type: 'integer' }, { type: 'string' }] } }, required: ['kind'] },
          ],
        },
      },
      required: ['shape'],
    }
    const c = compileJsonSchema(schema)
    expect(c.validate({ shape: { kind: 'circle', r: 1 } })).toEqual([])
    expect(c.validate({ shape: { kind: 'square', side: 2 } })).toEqual([])
    expect(c.isValid({ shape: { kind: 'square', side: 2.5 } })).toBe(false)
    const errors = c.validate({ shape: { kind: 'square', side: 2.5 } })
    expect(errors).toHaveLength(1)
    expect(errors[0]!.path).toBe('/shape')
    expect(errors[0]!.message).toMatch(/branch 1: \/shape\/side: matches no oneOf branch/)
  })

  it('caps the number of violations', () => {
    const many = Array.from({ length: 500 }, () => 'x')
    expect(compileJsonSchema({ items: { type: 'integer' } }).validate(many)).toHaveLength(100)
    expect(compileJsonSchema({ items: { type: 'integer' } }).validate(many, { maxViolations: 3 })).toHaveLength(3)
  })

  it('agrees between isValid and validate', () => {
    const c = compileJsonSchema({ type: 'array', items: { oneOf: [{ type: 'string' }, { type: 'object', additionalProperties: false }] } })
    for (const value of [[], ['a'], [{}], [{ a: 1 }], [1], 'x', [['x']]]) {
      expect(c.isValid(value)).toBe(c.validate(value).length === 0)
    }
  })

  it('throws SchemaError for an unsupported schema', () => {
    expect(() => v({ not: {} }, 1)).toThrow(SchemaError)
  })
})

describe('stack safety', () => {
  it('compiles and validates a schema and a value 100,000 levels deep', () => {
    let schema: JsonSchemaNode = { type: 'integer' }
    let value: unknown = 1
    for (let i = 0; i < 100_000; i++) {
      schema = i % 2 === 0 ? { type: 'array', items: schema } : { type: 'object', properties: { a: schema }, required: ['a'] }
      value = i % 2 === 0 ? [value] : { a: value }
    }
    const compiled = compileJsonSchema(schema)
    expect(compiled.isValid(value)).toBe(true)
    expect(compiled.validate(value)).toEqual([])
    // Break the innermost leaf.
    let cursor = value as { a?: unknown }[] | { a: unknown }
    for (let i = 0; i < 99_999; i++) cursor = (Array.isArray(cursor) ? cursor[0] : cursor.a) as typeof cursor
    ;(cursor as unknown[])[0] = 'x'
    expect(compiled.isValid(value)).toBe(false)
    const errors = compiled.validate(value)
    expect(errors).toHaveLength(1)
    expect(errors[0]!.message).toBe('expected integer, got string')
    expect(errors[0]!.path.split('/')).toHaveLength(100_001)
  })

  it('validates 100,000 nested oneOf levels', () => {
    let schema: JsonSchemaNode = { type: 'integer' }
    let value: unknown = 1
    for (let i = 0; i < 100_000; i++) {
      schema = { oneOf: [{ type: 'array', items: schema }, { type: 'string' }] }
      value = [value]
    }
    const compiled = compileJsonSchema(schema)
    expect(compiled.isValid(value)).toBe(true)
    let cursor = value as unknown[]
    for (let i = 0; i < 99_999; i++) cursor = cursor[0] as unknown[]
    cursor[0] = null
    expect(compiled.isValid(value)).toBe(false)
    const errors = compiled.validate(value)
    expect(errors).toHaveLength(1)
    expect(errors[0]!.message).toMatch(/matches no oneOf branch/)
  })
})
