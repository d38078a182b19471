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

/*
 * The validator's violations, exactly: path, message and order for each kind of
 * mismatch (type, enum, const, required, additionalProperties, items, oneOf at the top
 * level and nested), the violation cap, and the fast path agreeing with them.
 */
const CASES: ReadonlyArray<[unknown, unknown, { maxViolations: number } | undefined, ReadonlyArray<{ path: string; message: string }>]> = [
    [{ type: 'string' }, 1, undefined, [{"path":"","message":"expected string, got integer"}]],
    [{ type: 'string' }, 1.5, undefined, [{"path":"","message":"expected string, got number"}]],
    [{ type: 'integer' }, 1.5, undefined, [{"path":"","message":"expected integer, got number"}]],
    [{ type: 'number' }, 'x', undefined, [{"path":"","message":"expected number, got string"}]],
    [{ type: 'boolean' }, null, undefined, [{"path":"","message":"expected boolean, got null"}]],
    [{ type: 'null' }, [], undefined, [{"path":"","message":"expected null, got array"}]],
    [{ type: 'array' }, {}, undefined, [{"path":"","message":"expected array, got object"}]],
    [{ type: 'object' }, [1], undefined, [{"path":"","message":"expected object, got array"}]],
    [{}, undefined, undefined, [{"path":"","message":"is not a JSON value"}]],
    [{ type: 'string' }, undefined, undefined, [{"path":"","message":"is not a JSON value"}]],
    [{ enum: ['a', 1, null, true] }, 'b', undefined, [{"path":"","message":"must be one of \"a\", 1, null, true, got \"b\""}]],
    [{ enum: ['a'] }, 'x'.repeat(60), undefined, [{"path":"","message":"must be one of \"a\", got \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…"}]],
    [{ enum: ['a'] }, { o: 1 }, undefined, [{"path":"","message":"must be one of \"a\", got object"}]],
    [{ const: 3 }, 4, undefined, [{"path":"","message":"must be 3, got 4"}]],
    [{ const: 'a' }, [1], undefined, [{"path":"","message":"must be \"a\", got array"}]],
    [{ type: 'object', properties: { a: { type: 'string' }, b: { type: 'number' } }, required: ['a', 'b', 'c'], additionalProperties: false }, { x: 1, y: undefined, b: 'no' }, undefined, [{"path":"/a","message":"missing required property \"a\""},{"path":"/c","message":"missing required property \"c\""},{"path":"/x","message":"unexpected property \"x\" (additionalProperties is false)"},{"path":"/b","message":"expected number, got string"}]],
    [{ type: 'array', items: { type: 'integer' } }, [1, 'a', 2.5], undefined, [{"path":"/1","message":"expected integer, got string"},{"path":"/2","message":"expected integer, got number"}]],
    [{ oneOf: [{ type: 'string' }, { type: 'number' }] }, true, undefined, [{"path":"","message":"matches no oneOf branch (branch 0: (root): expected string, got boolean; branch 1: (root): expected number, got boolean)"}]],
    [{ oneOf: [{ type: 'number' }, { type: 'integer' }] }, 1, undefined, [{"path":"","message":"must match exactly one oneOf branch, matched 2 (branches 0, 1)"}]],
    [{ oneOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { type: 'array' }] }, { a: 1 }, undefined, [{"path":"","message":"matches no oneOf branch (branch 0: /a: expected string, got integer; branch 1: (root): expected array, got object)"}]],
    [{ type: 'object', properties: { p: { oneOf: [{ oneOf: [{ type: 'string' }] }, { type: 'null' }] } } }, { p: 1 }, undefined, [{"path":"/p","message":"matches no oneOf branch (branch 0: /p: matches no oneOf branch; branch 1: /p: expected null, got integer)"}]],
    [{ type: 'array', items: { type: 'string' } }, [1, 2, 3, 4], { maxViolations: 2 }, [{"path":"/0","message":"expected string, got integer"},{"path":"/1","message":"expected string, got integer"}]],
    [{ type: 'array', items: { type: 'string' } }, [1, 2], { maxViolations: 0 }, [{"path":"/0","message":"expected string, got integer"}]],
    [{ type: 'object', properties: { 'a/b~c': { type: 'string' } } }, { 'a/b~c': 1 }, undefined, [{"path":"/a~1b~0c","message":"expected string, got integer"}]],
    // 40 characters of JSON are shown whole; 41 are cut to 37 and an ellipsis.
    [{ enum: ['a'] }, 'x'.repeat(38), undefined, [{"path":"","message":"must be one of \"a\", got \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\""}]],
    [{ enum: ['a'] }, 'x'.repeat(39), undefined, [{"path":"","message":"must be one of \"a\", got \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…"}]],
    // A node with both properties and oneOf: the oneOf verdict first, then every property's own violations, the first one included.
    [{ type: 'object', properties: { a: { type: 'string' }, b: { type: 'array', items: { type: 'integer' } } }, oneOf: [{ type: 'object', required: ['x'] }, { type: 'object', required: ['y'] }] }, { a: 1, b: [1, 'two', 3.5] }, undefined, [{"path":"","message":"matches no oneOf branch (branch 0: /x: missing required property \"x\"; branch 1: /y: missing required property \"y\")"},{"path":"/a","message":"expected string, got integer"},{"path":"/b/1","message":"expected integer, got string"},{"path":"/b/2","message":"expected integer, got number"}]],
    // A oneOf that matched exactly one branch is no violation, even while a sibling is reported.
    [{ type: 'object', properties: { a: { oneOf: [{ type: 'string' }, { type: 'null' }] }, b: { type: 'integer' } } }, { a: 'x', b: 'no' }, undefined, [{"path":"/b","message":"expected integer, got string"}]],
]

describe('compileJsonSchema: violations', () => {
  it.each(CASES.map((c, i) => [i, ...c] as const))('case %i', (_i, schema, value, options, violations) => {
    const compiled = compileJsonSchema(schema as never)
    expect(compiled.validate(value, options)).toEqual(violations)
    expect(compiled.isValid(value)).toBe(false)
  })

  it('valid values have no violations, on both paths', () => {
    const compiled = compileJsonSchema({ type: 'object', properties: { a: { oneOf: [{ type: 'string' }, { type: 'null' }] }, n: { type: 'integer', enum: [1, 2] } }, required: ['n'], additionalProperties: false })
    for (const value of [{ n: 1 }, { n: 2, a: 'x' }, { n: 1, a: null }, { n: 1, a: undefined }]) {
      expect(compiled.validate(value)).toEqual([])
      expect(compiled.isValid(value)).toBe(true)
    }
  })

  it('a name Object.prototype has is missing unless the object owns it', () => {
    const compiled = compileJsonSchema({ type: 'object', properties: { constructor: { type: 'string' } }, required: ['constructor', 'toString'] })
    expect(compiled.validate({})).toEqual([
      { path: '/constructor', message: 'missing required property "constructor"' },
      { path: '/toString', message: 'missing required property "toString"' },
    ])
    expect(compiled.isValid({})).toBe(false)
    expect(compiled.validate({ constructor: 'x', toString: 1 })).toEqual([])
    expect(compiled.validate({ constructor: 1, toString: 1 })).toEqual([{ path: '/constructor', message: 'expected string, got integer' }])
  })

  it('caches one compilation per detached schema', () => {
    const compiled = compileJsonSchema({ type: 'string' })
    expect(compileJsonSchema(compiled.schema)).toBe(compiled)
    expect(Object.isFrozen(compiled)).toBe(true)
  })

  it('assertObjectJsonSchema names /type when the root is not an object schema', () => {
    expect(() => assertObjectJsonSchema({ type: 'object' })).not.toThrow()
    try {
      assertObjectJsonSchema({ type: 'string' })
      expect.unreachable()
    } catch (error) {
      expect(error).toBeInstanceOf(SchemaError)
      expect([(error as SchemaError).path, (error as Error).message]).toEqual(['/type', 'expected an object schema (type: "object") at /type'])
    }
  })

  it('refuses a schema that is not lossless JSON, naming where', () => {
    try {
      assertSupportedJsonSchema({ type: 'object', properties: { a: { description: undefined } } })
      expect.unreachable()
    } catch (error) {
      expect(error).toBeInstanceOf(SchemaError)
      expect((error as SchemaError).path).toBe('/properties/a/description')
      expect((error as Error).message).toMatch(/^schema is not lossless JSON: \S.* at \/properties\/a\/description$/)
    }
  })
})
