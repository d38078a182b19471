/**
 * The validator's violations, exactly: path, message and order for each kind of
 * mismatch (type, enum, const, required, additionalProperties, items, oneOf at the top
 * level and nested), the violation cap, and the fast path agreeing with them.
 */
import { describe, expect, it } from 'vitest'
import { SchemaError } from '../../../src/errors.js'
import { assertObjectJsonSchema, assertSupportedJsonSchema, compileJsonSchema } from '../../../src/schema/json-schema.js'

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
