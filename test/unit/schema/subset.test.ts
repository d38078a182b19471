import { describe, expect, it } from 'vitest'
import { assertSupportedJsonSchema } from '../../../src/schema/json-schema.js'
import {
  ANNOTATION_KEYWORDS,
  NARROWING_KEYWORDS,
  SUPPORTED_JSON_SCHEMA_KEYWORDS,
  VALIDATION_KEYWORDS,
  classifySchemaNode,
  readSchemaNode,
  JSON_SCHEMA_TYPE_NAMES,
  hasOnlyOptionalProperties,
  isJsonScalar,
  isSchemaRecord,
} from '../../../src/schema/subset.js'

describe('the schema-subset module: one reader, two modes', () => {
  it('the keyword tables partition: supported = validation + annotations; narrowing keywords are outside it', () => {
    expect(SUPPORTED_JSON_SCHEMA_KEYWORDS).toEqual([...VALIDATION_KEYWORDS, ...ANNOTATION_KEYWORDS])
    for (const keyword of NARROWING_KEYWORDS) expect(SUPPORTED_JSON_SCHEMA_KEYWORDS).not.toContain(keyword)
  })

  it.each([
    ['a narrowing keyword', { type: 'string', minLength: 1 }, 'unsupported keyword "minLength"', 'primitive'],
    ['a non-string description', { type: 'string', description: 5 }, '"description" must be a string', 'primitive'],
    ['an empty enum', { enum: [] }, '"enum" must be a non-empty array', 'never'],
    ['an empty oneOf', { oneOf: [] }, '"oneOf" must be a non-empty array of schemas', 'never'],
    ['a duplicate required name', { type: 'object', required: ['a', 'a'] }, 'duplicate required name "a"', 'object'],
  ])('%s: the validator refuses it, the renderers tolerate it', (_label, schema, problem, kind) => {
    expect(readSchemaNode(schema, 'enforce').problem?.message).toBe(problem)
    expect(readSchemaNode(schema, 'render').problem).toBeUndefined()
    expect(classifySchemaNode(schema).kind).toBe(kind)
    expect(() => assertSupportedJsonSchema(schema)).toThrow(problem)
  })

  it.each([
    ['a foreign keyword', { $ref: '#' }],
    ['a type array', { type: ['string', 'null'] }],
    ['a tuple', { type: 'array', items: [{}] }],
    ['a schema-valued additionalProperties', { type: 'object', additionalProperties: {} }],
    ['a non-scalar enum member', { enum: [{}] }],
    ['not an object', 42],
  ])('%s is a problem in both modes (unknown to the renderers, an error to the validator)', (_label, schema) => {
    expect(readSchemaNode(schema, 'enforce').problem).toBeDefined()
    expect(readSchemaNode(schema, 'render').problem).toBeDefined()
    expect(classifySchemaNode(schema).kind).toBe('unsupported')
    expect(() => assertSupportedJsonSchema(schema)).toThrow()
  })

  it('names where a problem sits, below the node', () => {
    expect(readSchemaNode({ enum: ['a', {}] }, 'enforce').problem).toEqual({ at: ['enum', '1'], message: 'unsupported non-scalar "enum" member' })
    expect(() => assertSupportedJsonSchema({ type: 'object', properties: { a: { enum: ['a', {}] } } })).toThrow(
      'unsupported non-scalar "enum" member at /properties/a/enum/1',
    )
  })

  it('reads own data only: an inherited keyword is not a keyword', () => {
    const inherited = Object.create({ type: 'string' }) as object
    expect(readSchemaNode(inherited, 'render').type).toBeUndefined()
    expect(classifySchemaNode(inherited).kind).toBe('any')
  })

  it('the classifier is total: a throwing getter or trap makes the node unsupported', () => {
    const getter = Object.defineProperty({}, 'type', { enumerable: true, get: () => { throw new Error('x') } })
    const proxy = new Proxy({}, { ownKeys: () => { throw new Error('y') } })
    expect(classifySchemaNode(getter)).toEqual({ kind: 'unsupported' })
    expect(classifySchemaNode(proxy)).toEqual({ kind: 'unsupported' })
  })
})

/*
 * The schema-subset reader and classifier as units: each problem with where it sits,
 * what each mode tolerates, what a reading holds, and the shape each node classifies to.
 */
const problem = (schema: unknown, mode: 'enforce' | 'render' = 'enforce') => readSchemaNode(schema, mode).problem

describe('the keyword tables', () => {
  it('list the subset', () => {
    expect(JSON_SCHEMA_TYPE_NAMES).toEqual(['string', 'number', 'integer', 'boolean', 'null', 'array', 'object'])
    expect(VALIDATION_KEYWORDS).toEqual(['type', 'enum', 'const', 'properties', 'required', 'additionalProperties', 'items', 'oneOf'])
    expect(ANNOTATION_KEYWORDS).toEqual(['title', 'description', '$comment', 'deprecated', 'readOnly', 'writeOnly', 'default', 'examples'])
    expect(NARROWING_KEYWORDS).toEqual([
      '$schema', '$id', 'minLength', 'maxLength', 'pattern', 'format', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum',
      'multipleOf', 'minItems', 'maxItems', 'uniqueItems', 'minProperties', 'maxProperties', 'contentMediaType', 'contentEncoding',
    ])
  })
})

describe('readSchemaNode: problems', () => {
  it('names what a non-object schema is', () => {
    expect(problem(true)).toEqual({ at: [], message: 'unsupported schema: expected an object, got boolean schema (true)' })
    expect(problem(false)).toEqual({ at: [], message: 'unsupported schema: expected an object, got boolean schema (false)' })
    expect(problem([])).toEqual({ at: [], message: 'unsupported schema: expected an object, got an array' })
    expect(problem(null)).toEqual({ at: [], message: 'unsupported schema: expected an object, got a null' })
    expect(problem('x')).toEqual({ at: [], message: 'unsupported schema: expected an object, got a string' })
  })

  it('annotation types are checked when enforcing only', () => {
    for (const [key, value, message] of [
      ['title', 1, '"title" must be a string'],
      ['description', null, '"description" must be a string'],
      ['$comment', [], '"$comment" must be a string'],
      ['deprecated', 'yes', '"deprecated" must be a boolean'],
      ['readOnly', 1, '"readOnly" must be a boolean'],
      ['writeOnly', 'no', '"writeOnly" must be a boolean'],
      ['examples', 'x', '"examples" must be an array'],
    ] as const) {
      expect(problem({ [key]: value })).toEqual({ at: [key], message })
      expect(problem({ [key]: value }, 'render')).toBeUndefined()
    }
    expect(problem({ default: () => 1 })).toBeUndefined()
  })

  it('narrowing keywords are refused when enforcing and tolerated when rendering; foreign ones always refused', () => {
    expect(problem({ type: 'string', maxLength: 3 })).toEqual({ at: [], message: 'unsupported keyword "maxLength"' })
    expect(problem({ type: 'string', maxLength: 3 }, 'render')).toBeUndefined()
    expect(problem({ anyOf: [] }, 'render')).toEqual({ at: [], message: 'unsupported keyword "anyOf"' })
  })

  it('each validation keyword’s form, first problem in the fixed order', () => {
    expect(problem({ type: 'float' })).toEqual({ at: ['type'], message: 'unsupported type "float"' })
    expect(problem({ type: ['string'] })).toEqual({ at: ['type'], message: 'unsupported "type" array (use oneOf)' })
    expect(problem({ enum: 'a' })).toEqual({ at: ['enum'], message: '"enum" must be a non-empty array' })
    expect(problem({ enum: [] }, 'render')).toBeUndefined()
    expect(problem({ enum: ['a', Number.NaN] })).toEqual({ at: ['enum', '1'], message: 'unsupported non-scalar "enum" member' })
    expect(problem({ const: {} })).toEqual({ at: ['const'], message: 'unsupported non-scalar "const"' })
    expect(problem({ const: Number.POSITIVE_INFINITY })).toEqual({ at: ['const'], message: 'unsupported non-scalar "const"' })
    expect(problem({ additionalProperties: {} })).toEqual({ at: ['additionalProperties'], message: 'unsupported "additionalProperties" schema (only true or false)' })
    expect(problem({ required: 'a' })).toEqual({ at: ['required'], message: '"required" must be an array of property names' })
    expect(problem({ required: ['a', 1] })).toEqual({ at: ['required', '1'], message: '"required" entries must be strings' })
    expect(problem({ required: ['a', 'b', 'a'] })).toEqual({ at: ['required', '2'], message: 'duplicate required name "a"' })
    expect(problem({ properties: [] })).toEqual({ at: ['properties'], message: '"properties" must be an object of schemas' })
    expect(problem({ properties: null })).toEqual({ at: ['properties'], message: '"properties" must be an object of schemas' })
    expect(problem({ items: [{}] })).toEqual({ at: ['items'], message: 'unsupported tuple "items" (use one schema)' })
    expect(problem({ oneOf: {} })).toEqual({ at: ['oneOf'], message: '"oneOf" must be a non-empty array of schemas' })
    expect(problem({ oneOf: [] }, 'render')).toBeUndefined()
    expect(problem({ type: 'float', enum: 'a' })).toEqual({ at: ['type'], message: 'unsupported type "float"' })
    expect(problem({ enum: [{}], const: {} })).toEqual({ at: ['enum', '0'], message: 'unsupported non-scalar "enum" member' })
  })
})

describe('readSchemaNode: the reading', () => {
  it('holds every keyword read, and counts the validation keywords', () => {
    const items = { type: 'string' }
    const reading = readSchemaNode(
      { type: 'object', enum: ['a'], const: 'a', properties: { p: items }, required: ['p', 'p'], additionalProperties: false, items, oneOf: [items], title: 't' },
      'render',
    )
    expect(reading).toEqual({
      problem: undefined,
      type: 'object',
      enumValues: ['a'],
      hasConst: true,
      constValue: 'a',
      properties: [['p', items]],
      required: ['p'],
      additionalProperties: false,
      hasItems: true,
      items,
      oneOf: [items],
      validationKeywords: 8,
    })
    expect(readSchemaNode({ title: 'only' }, 'enforce')).toMatchObject({ validationKeywords: 0, hasItems: false, hasConst: false, constValue: null })
    expect(readSchemaNode({ const: null }, 'enforce')).toMatchObject({ hasConst: true, constValue: null })
  })
})

describe('classifySchemaNode', () => {
  it('shapes', () => {
    expect(classifySchemaNode({})).toEqual({ kind: 'any' })
    expect(classifySchemaNode({ description: 'x' })).toEqual({ kind: 'any' })
    expect(classifySchemaNode({ properties: {} })).toEqual({ kind: 'unsupported' })
    expect(classifySchemaNode({ type: 'integer' })).toEqual({ kind: 'primitive', type: 'integer' })
    expect(classifySchemaNode({ type: 'array' })).toEqual({ kind: 'array', items: undefined, hasItems: false })
    expect(classifySchemaNode({ type: 'array', items: { type: 'null' } })).toEqual({ kind: 'array', items: { type: 'null' }, hasItems: true })
    expect(classifySchemaNode({ type: 'array', items: true })).toEqual({ kind: 'unsupported' })
    expect(classifySchemaNode({ oneOf: [{ type: 'null' }] })).toEqual({ kind: 'oneOf', branches: [{ type: 'null' }] })
    expect(classifySchemaNode({ oneOf: [] })).toEqual({ kind: 'never' })
    expect(classifySchemaNode({ oneOf: [{}], type: 'string' })).toEqual({ kind: 'unsupported' })
    expect(classifySchemaNode({ oneOf: [{}], title: 'annotations are fine' })).toEqual({ kind: 'oneOf', branches: [{}] })
  })

  it('literals: enum ∩ const, filtered by type, deduplicated', () => {
    expect(classifySchemaNode({ enum: ['a', 'a', 1, null] })).toEqual({ kind: 'literals', values: ['a', 1, null] })
    expect(classifySchemaNode({ type: 'string', enum: ['a', 1] })).toEqual({ kind: 'literals', values: ['a'] })
    expect(classifySchemaNode({ type: 'integer', enum: [1, 1.5] })).toEqual({ kind: 'literals', values: [1] })
    expect(classifySchemaNode({ type: 'number', enum: [1, 1.5, '1'] })).toEqual({ kind: 'literals', values: [1, 1.5] })
    expect(classifySchemaNode({ type: 'boolean', enum: [true, 0] })).toEqual({ kind: 'literals', values: [true] })
    expect(classifySchemaNode({ type: 'null', enum: [null, 'null'] })).toEqual({ kind: 'literals', values: [null] })
    expect(classifySchemaNode({ type: 'array', enum: [1] })).toEqual({ kind: 'never' })
    expect(classifySchemaNode({ const: 'x' })).toEqual({ kind: 'literals', values: ['x'] })
    expect(classifySchemaNode({ const: 'x', enum: ['x', 'y'] })).toEqual({ kind: 'literals', values: ['x'] })
    expect(classifySchemaNode({ const: 'z', enum: ['x', 'y'] })).toEqual({ kind: 'never' })
    expect(classifySchemaNode({ type: 'string', const: 1 })).toEqual({ kind: 'never' })
    expect(classifySchemaNode({ enum: [] })).toEqual({ kind: 'never' })
  })

  it('objects: properties with descriptions and deprecation, required-only names as any, open unless closed', () => {
    expect(
      classifySchemaNode({
        type: 'object',
        properties: { a: { type: 'string', description: 'd', deprecated: true }, b: { description: 5, deprecated: 'yes' }, c: true },
        required: ['b', 'x'],
      }),
    ).toEqual({
      kind: 'object',
      open: true,
      explicitlyOpen: false,
      properties: [
        { name: 'a', schema: { type: 'string', description: 'd', deprecated: true }, required: false, deprecated: true, description: 'd' },
        { name: 'b', schema: { description: 5, deprecated: 'yes' }, required: true, deprecated: false },
        { name: 'c', schema: true, required: false, deprecated: false },
        { name: 'x', schema: {}, required: true, deprecated: false },
      ],
    })
    expect(classifySchemaNode({ type: 'object', additionalProperties: false })).toEqual({ kind: 'object', properties: [], open: false, explicitlyOpen: false })
    expect(classifySchemaNode({ type: 'object', additionalProperties: true })).toEqual({ kind: 'object', properties: [], open: true, explicitlyOpen: true })
    const inherited = Object.create({ description: 'inherited' }) as object
    const shape = classifySchemaNode({ type: 'object', properties: { p: inherited } })
    expect(shape.kind === 'object' && Object.hasOwn(shape.properties[0]!, 'description')).toBe(false)
  })

  it('hasOnlyOptionalProperties', () => {
    expect(hasOnlyOptionalProperties({ type: 'object', properties: { a: {} } })).toBe(true)
    expect(hasOnlyOptionalProperties({ type: 'object' })).toBe(true)
    expect(hasOnlyOptionalProperties({ type: 'object', properties: { a: {} }, required: ['a'] })).toBe(false)
    expect(hasOnlyOptionalProperties({ type: 'object', required: ['z'] })).toBe(false)
    expect(hasOnlyOptionalProperties({ type: 'string' })).toBe(false)
  })

  it('isSchemaRecord and isJsonScalar', () => {
    expect([{}, [], null, 'x'].map(isSchemaRecord)).toEqual([true, false, false, false])
    expect([null, 'a', true, 0, -1.5, Number.NaN, Number.POSITIVE_INFINITY, undefined, {}, 1n].map(isJsonScalar)).toEqual([true, true, true, true, true, false, false, false, false, false])
  })
})
