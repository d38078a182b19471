/**
 * A value that is not lossless JSON, refused at each of the three doors (a JSON Schema, a
 * DSL spec, a tool's arguments): the class, the path, and the message exactly once with
 * its location (the inner "at …" is stripped before the outer error names the place).
 */
import { describe, expect, it } from 'vitest'
import { LosslessJsonError, SchemaError, ToolArgsError } from '../../../src/errors.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { valueSchemaSpecToJsonSchema } from '../../../src/schema/dsl.js'
import { assertSupportedJsonSchema } from '../../../src/schema/json-schema.js'

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
