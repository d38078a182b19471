import { describe, expect, it } from 'vitest'
import { assertSupportedJsonSchema } from '../../../src/schema/json-schema.js'
import {
  ANNOTATION_KEYWORDS,
  NARROWING_KEYWORDS,
  SUPPORTED_JSON_SCHEMA_KEYWORDS,
  VALIDATION_KEYWORDS,
  classifySchemaNode,
  readSchemaNode,
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
