import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { jsonSchemaToTs, renderTypeScriptSdkBlock } from '../../../src/code-mode/sdk-typescript.js'
import { compareCodePoints } from '../../../src/code-mode/sdk-common.js'
import type { SdkToolInput } from '../../../src/code-mode/sdk.js'

const obj = (properties: Record<string, unknown>, required: string[] = [], extra: Record<string, unknown> = {}) => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
  ...extra,
})

describe('jsonSchemaToTs: the codegen table', () => {
  const table: [string, unknown, string][] = [
    ['string', { type: 'string' }, 'string'],
    ['number', { type: 'number' }, 'number'],
    ['integer → number', { type: 'integer' }, 'number'],
    ['boolean', { type: 'boolean' }, 'boolean'],
    ['null', { type: 'null' }, 'null'],
    ['narrowing keywords keep the type', { type: 'string', minLength: 1, pattern: '^a', format: 'uri' }, 'string'],
    ['string enum → literal union', { enum: ['a', 'b'] }, '"a" | "b"'],
    ['mixed enum', { enum: ['x', 1, true, null] }, '"x" | 1 | true | null'],
    ['enum escapes with JSON.stringify', { enum: ['say "hi"\n'] }, '"say \\"hi\\"\\n"'],
    ['enum filtered by type', { type: 'string', enum: ['a', 1] }, '"a"'],
    ['integer enum drops fractions', { type: 'integer', enum: [1, 1.5] }, '1'],
    ['enum duplicates collapse', { enum: ['a', 'a'] }, '"a"'],
    ['empty enum → never', { enum: [] }, 'never'],
    ['const', { const: 'fixed' }, '"fixed"'],
    ['const outside enum → never', { const: 'x', enum: ['y'] }, 'never'],
    ['const inside enum', { const: 'y', enum: ['y', 'z'] }, '"y"'],
    ['array without items → JsonValue[]', { type: 'array' }, 'JsonValue[]'],
    ['array of strings', { type: 'array', items: { type: 'string' } }, 'string[]'],
    ['array of arrays', { type: 'array', items: { type: 'array', items: { type: 'null' } } }, 'null[][]'],
    ['array of a union gets parentheses', { type: 'array', items: { enum: ['a', 'b'] } }, '("a" | "b")[]'],
    ['array of a oneOf gets parentheses', { type: 'array', items: { oneOf: [{ type: 'string' }, { type: 'number' }] } }, '(string | number)[]'],
    ['oneOf → union', { oneOf: [{ type: 'string' }, { type: 'null' }] }, 'string | null'],
    ['empty oneOf → never', { oneOf: [] }, 'never'],
    ['annotation-only node → JsonValue', { description: 'anything', title: 't' }, 'JsonValue'],
    ['empty schema → JsonValue', {}, 'JsonValue'],
    ['open object without properties', { type: 'object' }, '{ [key: string]: JsonValue }'],
    ['closed object without properties', { type: 'object', additionalProperties: false }, '{ [key: string]: never }'],
    ['closed object', obj({ a: { type: 'string' }, b: { type: 'number' } }, ['a']), '{\n  a: string;\n  b?: number;\n}'],
    [
      'an object open by default (no additionalProperties) is exact: an undeclared key is a typo the check reports',
      { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
      '{\n  a: string;\n}',
    ],
    [
      'an object opened on purpose (additionalProperties: true) gets an index signature',
      { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: true },
      '{\n  a: string;\n  [key: string]: unknown;\n}',
    ],
    ['required name without a property schema', { type: 'object', required: ['x'], additionalProperties: false }, '{\n  x: JsonValue;\n}'],
    [
      'nested objects indent',
      obj({ inner: obj({ x: { type: 'boolean' } }, ['x']) }, ['inner']),
      '{\n  inner: {\n    x: boolean;\n  };\n}',
    ],
    ['description → JSDoc', obj({ a: { type: 'string', description: 'The a.' } }), '{\n  /** The a. */\n  a?: string;\n}'],
    [
      'multi-line description → block JSDoc',
      obj({ a: { type: 'string', description: 'One.\n\nTwo.' } }),
      '{\n  /**\n   * One.\n   *\n   * Two.\n   */\n  a?: string;\n}',
    ],
    ['`*/` in a description is escaped', obj({ a: { type: 'string', description: 'ends */ here' } }), '{\n  /** ends *\\/ here */\n  a?: string;\n}'],
    ['deprecated → @deprecated', obj({ a: { type: 'string', deprecated: true } }), '{\n  /** @deprecated */\n  a?: string;\n}'],
  ]
  it.each(table)('%s', (_name, schema, expected) => {
    expect(jsonSchemaToTs(schema)).toBe(expected)
  })

  it('quotes keys that are not identifiers', () => {
    const text = jsonSchemaToTs(obj({ 'my-key': { type: 'string' }, '0lead': { type: 'string' }, 'a b': { type: 'string' }, 'é': { type: 'string' }, $ok: { type: 'string' }, _ok: { type: 'string' } }))
    expect(text).toContain('"my-key"?: string;')
    expect(text).toContain('"0lead"?: string;')
    expect(text).toContain('"a b"?: string;')
    expect(text).toContain('"é"?: string;')
    expect(text).toContain('\n  $ok?: string;')
    expect(text).toContain('\n  _ok?: string;')
  })

  it('respects baseIndent for continuation lines', () => {
    expect(jsonSchemaToTs(obj({ a: { type: 'string' } }, ['a']), { baseIndent: '    ' })).toBe('{\n      a: string;\n    }')
  })
})

describe('jsonSchemaToTs: degradation to unknown', () => {
  const unsupported: [string, unknown][] = [
    ['$ref', { $ref: '#/definitions/x' }],
    ['anyOf', { anyOf: [{ type: 'string' }] }],
    ['allOf', { allOf: [{ type: 'string' }] }],
    ['not', { not: { type: 'string' } }],
    ['type array', { type: ['string', 'null'] }],
    ['unknown type name', { type: 'date' }],
    ['tuple items', { type: 'array', items: [{ type: 'string' }] }],
    ['schema-valued additionalProperties', { type: 'object', additionalProperties: { type: 'string' } }],
    ['patternProperties', { type: 'object', patternProperties: { '^a': {} } }],
    ['if/then', { if: {}, then: {} }],
    ['oneOf mixed with type', { type: 'string', oneOf: [{ type: 'string' }] }],
    ['object keywords without a type', { properties: { a: { type: 'string' } } }],
    ['enum with an object member', { enum: [{ a: 1 }] }],
    ['required not an array', { type: 'object', required: 'a' }],
    ['vendor extension', { type: 'string', 'x-kind': 'path' }],
    ['boolean schema', true],
    ['null', null],
    ['a number', 42],
    ['an array', [{ type: 'string' }]],
    ['undefined', undefined],
  ]
  it.each(unsupported)('%s → unknown', (_name, schema) => {
    expect(jsonSchemaToTs(schema)).toBe('unknown')
  })

  it('degrades one bad property without losing the object', () => {
    expect(jsonSchemaToTs(obj({ a: { $ref: '#' }, b: { type: 'string' } }, ['a']))).toBe('{\n  a: unknown;\n  b?: string;\n}')
  })

  it('never runs inherited members: keys are read as own properties only', () => {
    const schema = Object.create({ type: 'string' }) as object
    expect(jsonSchemaToTs(schema)).toBe('JsonValue')
  })
})

describe('jsonSchemaToTs: totality and stack safety', () => {
  it('never throws for arbitrary JSON used as a schema', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(typeof jsonSchemaToTs(value)).toBe('string')
      }),
      { numRuns: 2000 },
    )
  })

  it('never throws for arbitrary schema-shaped values', () => {
    const scalar: fc.Arbitrary<unknown> = fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null), fc.double())
    const typeName: fc.Arbitrary<unknown> = fc.constantFrom('string', 'number', 'integer', 'boolean', 'null', 'array', 'object', 'bogus')
    const node: fc.Arbitrary<unknown> = fc.letrec<{ node: unknown }>((tie) => {
      const child: fc.Arbitrary<unknown> = tie('node')
      const keyword: fc.Arbitrary<[string, unknown]> = fc.oneof(
        fc.tuple(fc.constant('type'), typeName),
        fc.tuple(fc.constant('enum'), fc.array(scalar)),
        fc.tuple(fc.constant('const'), fc.jsonValue()),
        fc.tuple(fc.constant('properties'), fc.dictionary(fc.string(), child, { maxKeys: 3 })),
        fc.tuple(fc.constant('required'), fc.array(fc.string())),
        fc.tuple(fc.constant('additionalProperties'), fc.oneof(fc.boolean(), child)),
        fc.tuple(fc.constant('items'), child),
        fc.tuple(fc.constant('oneOf'), fc.array(child, { maxLength: 3 })),
        fc.tuple(fc.constant('description'), fc.string()),
      )
      const record: fc.Arbitrary<unknown> = fc.array(keyword, { maxLength: 5 }).map((entries) => Object.fromEntries(entries))
      return { node: fc.oneof({ depthSize: 'small' }, record, fc.jsonValue()) }
    }).node
    fc.assert(
      fc.property(node, (schema) => {
        expect(typeof jsonSchemaToTs(schema)).toBe('string')
      }),
      { numRuns: 2000 },
    )
  })

  it('survives hostile objects: throwing getters and proxies', () => {
    const getter = { get type(): string { throw new Error('boom') } }
    const proxy = new Proxy({}, { ownKeys() { throw new Error('trap') } })
    expect(jsonSchemaToTs(getter)).toBe('unknown')
    expect(jsonSchemaToTs(proxy)).toBe('unknown')
    expect(jsonSchemaToTs(obj({ a: getter, b: proxy }))).toBe('{\n  a?: unknown;\n  b?: unknown;\n}')
  })

  it('renders cyclic graphs with their back edges as unknown', () => {
    const node: Record<string, unknown> = { type: 'object', additionalProperties: false, required: ['self'] }
    node['properties'] = { self: node }
    expect(jsonSchemaToTs(node)).toBe('{\n  self: unknown;\n}')
    const list: Record<string, unknown> = { type: 'array' }
    list['items'] = list
    expect(jsonSchemaToTs(list)).toBe('unknown[]')
    const union: Record<string, unknown> = {}
    union['oneOf'] = [union, { type: 'string' }]
    expect(jsonSchemaToTs(union)).toBe('unknown | string')
  })

  it('caps exponential expansion of shared sub-schemas', () => {
    let node: unknown = { type: 'string' }
    for (let i = 0; i < 40; i++) node = { oneOf: [node, node] }
    const text = jsonSchemaToTs(node, { maxNodes: 1000 })
    expect(text.split(' | ').length).toBeLessThanOrEqual(1000)
    expect(text).toContain('unknown')
  })

  const DEPTH = 100_000
  it('renders a 100,000-deep object schema without RangeError, linearly', () => {
    let node: unknown = { type: 'string' }
    for (let i = 0; i < DEPTH; i++) node = { type: 'object', properties: { a: node }, required: ['a'], additionalProperties: false }
    const text = jsonSchemaToTs(node)
    expect(text.startsWith('{\n  a: {\n')).toBe(true)
    expect(text.split('a: ').length - 1).toBe(DEPTH)
    expect(text).toContain('string')
    // Deep levels render inline, so text stays linear in depth (no quadratic indentation).
    expect(text.length).toBeLessThan(DEPTH * 20)
  })

  it('renders 100,000-deep arrays and unions', () => {
    let array: unknown = { type: 'null' }
    for (let i = 0; i < DEPTH; i++) array = { type: 'array', items: array }
    expect(jsonSchemaToTs(array)).toBe(`null${'[]'.repeat(DEPTH)}`)
    let union: unknown = { type: 'null' }
    for (let i = 0; i < DEPTH; i++) union = { oneOf: [{ const: i }, union] }
    const text = jsonSchemaToTs(union)
    expect(text.split(' | ').length).toBe(DEPTH + 1)
  })
})

const tool = (name: string, parameters: unknown = obj({}), output: unknown = { type: 'string' }, description = `The ${name} tool.`): SdkToolInput =>
  ({ name, description, parameters, output }) as SdkToolInput

describe('renderTypeScriptSdkBlock', () => {
  const tools = [
    tool('read_file', obj({ path: { type: 'string' } }, ['path']), obj({ text: { type: 'string' } }, ['text'])),
    tool('my-tool', { type: 'object' }),
    tool('Zeta'),
    tool('alpha'),
  ]

  it('emits the declarations in order', () => {
    const text = renderTypeScriptSdkBlock(tools)
    const at = (s: string) => text.indexOf(s)
    expect(text.startsWith('type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };')).toBe(true)
    expect(at('interface ToolArgsMap {')).toBeGreaterThan(0)
    expect(at('interface ToolOutputMap {')).toBeGreaterThan(at('interface ToolArgsMap {'))
    expect(at('type ToolName = keyof ToolArgsMap;')).toBeGreaterThan(at('interface ToolOutputMap {'))
    expect(text).toContain(
      'declare class ToolCallError extends Error {\n  /** The tool whose call failed. */\n  readonly toolName: ToolName | string;\n' +
        '  /** Why: DENIED_BY_GATE, INVALID_ARGS, TOOL_FAILED, … */\n  readonly code: string;\n}',
    )
    expect(at('declare const tools: {')).toBeGreaterThan(at('declare class ToolCallError'))
  })

  it('keys identifiers bare and exotic names quoted; JSDoc from descriptions', () => {
    const text = renderTypeScriptSdkBlock(tools)
    expect(text).toContain('  /** The read_file tool. */\n  read_file(args: ToolArgsMap["read_file"]): Promise<ToolOutputMap["read_file"]>;')
    expect(text).toContain('  "my-tool"(args?: ToolArgsMap["my-tool"]): Promise<ToolOutputMap["my-tool"]>;')
    expect(text).toContain('  "read_file": {\n    path: string;\n  };')
  })

  it('makes the argument optional only when no property is required', () => {
    const text = renderTypeScriptSdkBlock(tools)
    expect(text).toContain('alpha(args?: ToolArgsMap["alpha"])')
    expect(text).toContain('read_file(args: ToolArgsMap["read_file"])')
    expect(renderTypeScriptSdkBlock([tool('odd', { $ref: '#' })])).toContain('odd(args: ToolArgsMap["odd"])')
  })

  it('sorts tools by code point, whatever the input order', () => {
    const text = renderTypeScriptSdkBlock(tools)
    const order = ['"Zeta"(', 'Zeta(', 'alpha(', '"my-tool"(', 'read_file(']
      .map((s) => text.indexOf(`  ${s}`))
      .filter((i) => i >= 0)
    expect(order).toEqual([...order].sort((a, b) => a - b))
    expect(order).toHaveLength(4)
  })

  it('is byte-identical for an unchanged tool set in any input order', () => {
    const a = renderTypeScriptSdkBlock(tools)
    const b = renderTypeScriptSdkBlock([...tools].reverse())
    const c = renderTypeScriptSdkBlock(structuredClone(tools.map(({ name, description, parameters, output }) => ({ name, description, parameters, output }))))
    expect(b).toBe(a)
    expect(c).toBe(a)
  })

  it('orders by code point, not UTF-16 code unit', () => {
    const bmp = '\uFFFF'
    const astral = '\u{10000}'
    expect(compareCodePoints(bmp, astral)).toBe(-1)
    expect([astral, bmp].sort()).toEqual([astral, bmp]) // the default sort gets this wrong
    const text = renderTypeScriptSdkBlock([tool(astral), tool(bmp)])
    expect(text.indexOf(JSON.stringify(bmp))).toBeLessThan(text.indexOf(JSON.stringify(astral)))
    expect(compareCodePoints('a', 'ab')).toBe(-1)
    expect(compareCodePoints('ab', 'ab')).toBe(0)
  })

  it('declares exotic names reachably: quotes, backslashes, line breaks, prototype names', () => {
    const names = ['__proto__', 'constructor', 'toString', 'has space', 'quote"d', 'back\\slash', 'line\nbreak', 'ünï', '']
    const text = renderTypeScriptSdkBlock(names.map((n) => tool(n)))
    for (const name of names) {
      expect(text).toContain(`(args?: ToolArgsMap[${JSON.stringify(name)}]): Promise<ToolOutputMap[${JSON.stringify(name)}]>;`)
    }
    expect(text).toContain('  __proto__(args?')
    expect(text).toContain('  "line\\nbreak"(args?')
  })

  it('escapes comment terminators in tool descriptions', () => {
    const text = renderTypeScriptSdkBlock([tool('x', obj({}), { type: 'string' }, 'Ends */ early')])
    expect(text).toContain('/** Ends *\\/ early */')
  })

  it('drops malformed entries and repeated names (first wins) instead of throwing', () => {
    const hostile = [
      tool('b'),
      null,
      { name: 42 },
      { get name(): string { throw new Error('boom') } },
      tool('b', { type: 'object', required: ['x'], properties: { x: { type: 'string' } } }),
      tool('a'),
    ] as unknown as SdkToolInput[]
    const text = renderTypeScriptSdkBlock(hostile)
    expect(text).toContain('  a(args?')
    expect(text).toContain('  b(args?')
    expect(text.match(/ {2}b\(/g)).toHaveLength(1)
    expect(renderTypeScriptSdkBlock(null as unknown as SdkToolInput[])).toContain('declare const tools: {\n};')
  })
})
