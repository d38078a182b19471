import { describe, expect, it } from 'vitest'
import { SchemaError, ToolArgsError, ToolError } from '../../../src/errors.js'
import { defineTool, validateArgs } from '../../../src/schema/define-tool.js'
import { snapshotLosslessJson } from '../../../src/json/lossless.js'
import type { ToolRunContext } from '../../../src/types.js'

const exec = { signal: new AbortController().signal } as ToolRunContext

function makeTool() {
  const seen: unknown[] = []
  const tool = defineTool({
    name: 'search',
    description: 'Search files.',
    parameters: {
      query: { type: 'string', required: true, description: 'What to find' },
      mode: { type: 'string', enum: ['literal', 'regex'] },
      limit: { type: 'integer' },
      filter: {
        type: 'object',
        additionalProperties: false,
        properties: { ext: { type: 'array', items: { type: 'string' } }, hidden: { type: 'boolean', required: true } },
      },
    },
    output: {
      schema: { type: 'array', items: { type: 'string' } },
      render: (_args, value) => [{ type: 'text', text: value.join('\n') }],
      presentationMeta: (args, value) => ({ query: args.query, count: value.length }),
    },
    execute(args) {
      seen.push(args)
      return [args.query]
    },
    presentCall: (args) => (args === undefined ? undefined : { card: 'generic', title: `search ${args.query}` }),
    isConcurrencySafe: (args) => args.mode !== 'regex',
  })
  return { tool, seen }
}

function argsError(fn: () => unknown): ToolArgsError {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(ToolArgsError)
    expect((error as ToolArgsError).code).toBe('INVALID_ARGS')
    return error as ToolArgsError
  }
  throw new Error('expected a ToolArgsError')
}

describe('defineTool', () => {
  it('fills parameters and output.schema from the DSL', () => {
    const { tool } = makeTool()
    expect(tool.parameters.type).toBe('object')
    expect(tool.parameters.required).toEqual(['query'])
    expect(tool.parameters).not.toHaveProperty('additionalProperties')
    expect(tool.output.schema).toEqual({ type: 'array', items: { type: 'string' } })
    expect(Object.isFrozen(tool)).toBe(true)
  })

  it('validates arguments strictly with path-qualified violations', () => {
    const { tool } = makeTool()
    const validate = tool.validateArgs!
    expect(validate({ query: 'x' })).toEqual({ query: 'x' })
    expect(argsError(() => validate({})).violations).toEqual([{ path: '/query', message: 'missing required property "query"' }])
    expect(argsError(() => validate({ query: 1 })).violations[0]!.path).toBe('/query')
    expect(argsError(() => validate({ query: 'x', mode: 'fuzzy' })).message).toMatch(/\/mode: must be one of "literal", "regex"/)
    expect(argsError(() => validate({ query: 'x', limit: 1.5 })).violations).toEqual([{ path: '/limit', message: 'expected integer, got number' }])
    expect(argsError(() => validate({ query: 'x', filter: { ext: ['ts', 3] } })).violations).toEqual([
      { path: '/filter/hidden', message: 'missing required property "hidden"' },
      { path: '/filter/ext/1', message: 'expected string, got integer' },
    ])
    expect(argsError(() => validate({ query: 'x', filter: { hidden: true, deep: 1 } })).violations[0]!.path).toBe('/filter/deep')
    expect(argsError(() => validate('x' as never)).violations).toEqual([{ path: '', message: 'expected object, got string' }])
  })

  it('keeps the implicit parameter root open', () => {
    expect(makeTool().tool.validateArgs!({ query: 'x', unknown: [1] })).toEqual({ query: 'x', unknown: [1] })
  })

  it('never applies defaults', () => {
    const tool = defineTool({
      name: 'd',
      description: 'd',
      parameters: { n: { type: 'integer', default: 5 } },
      output: { schema: { type: 'json' }, render: () => [] },
      execute: (args) => args,
    })
    expect(tool.validateArgs!({})).toEqual({})
  })

  it('rejects non-lossless arguments as INVALID_ARGS', () => {
    const { tool } = makeTool()
    const error = argsError(() => tool.validateArgs!({ query: 'x', limit: Number.NaN } as never))
    expect(error.violations[0]!.path).toBe('/limit')
  })

  it('soft-validates without ever throwing', () => {
    const { tool } = makeTool()
    const soft = tool.softValidateArgs!
    expect(soft({ query: 'x' })).toEqual({ query: 'x' })
    expect(soft({})).toBeUndefined()
    expect(soft(null)).toBeUndefined()
    const hostile = {
      get query(): string {
        throw new Error('boom')
      },
    }
    expect(soft(hostile as never)).toBeUndefined()
    expect(soft(new Proxy({}, { ownKeys: () => { throw new Error('trap') } }) as never)).toBeUndefined()
  })

  it('validates in execute, so the body only sees valid frozen arguments', async () => {
    const { tool, seen } = makeTool()
    expect(() => tool.execute({} as never, exec)).toThrow(ToolArgsError)
    expect(seen).toHaveLength(0)
    const args = tool.validateArgs!(snapshotLosslessJson({ query: 'q' }))
    expect(await tool.execute(args, exec)).toEqual(['q'])
    expect(seen[0]).toBe(args)
    expect(Object.isFrozen(seen[0])).toBe(true)
  })

  it('gives presenters soft-validated arguments (old logs never crash replay)', () => {
    const { tool } = makeTool()
    expect(tool.presentCall!(undefined, { query: 'x' })).toEqual({ card: 'generic', title: 'search x' })
    expect(tool.presentCall!(undefined, { query: 1 })).toBeUndefined()
    expect(tool.presentCall!(undefined, 'garbage')).toBeUndefined()
  })

  it('classifies concurrency only on valid arguments, exact true', () => {
    const { tool } = makeTool()
    expect(tool.isConcurrencySafe!({ query: 'x' })).toBe(true)
    expect(tool.isConcurrencySafe!({ query: 'x', mode: 'regex' })).toBe(false)
    expect(tool.isConcurrencySafe!({} as never)).toBe(false)
  })

  it('forwards output projections', () => {
    const { tool } = makeTool()
    expect(tool.output.render({ query: 'q' }, ['a', 'b'])).toEqual([{ type: 'text', text: 'a\nb' }])
    expect(tool.output.presentationMeta!({ query: 'q' }, ['a'])).toEqual({ query: 'q', count: 1 })
  })

  it('rejects bad schemas at definition time', () => {
    expect(() =>
      defineTool({
        name: 'x',
        description: 'x',
        parameters: { a: { type: 'object' } as never },
        output: { schema: { type: 'string' }, render: () => [] },
        execute: () => '',
      }),
    ).toThrow(SchemaError)
    expect(() =>
      defineTool({
        name: 'x',
        description: 'x',
        parameters: {},
        output: { schema: { type: 'string', enum: [1] as never }, render: () => [] },
        execute: () => '',
      }),
    ).toThrow(/enum member 1 is not a string at \/enum\/0/)
  })

  it.each([
    ['an empty name', { name: '' }],
    ['a missing output', { output: undefined }],
    ['a missing render', { output: { schema: { type: 'string' } } }],
    ['a bad timeoutMs', { timeoutMs: 0 }],
    ['an infinite timeoutMs', { timeoutMs: Infinity }],
    ['a non-function execute', { execute: 1 }],
  ])('rejects %s with INVALID_DEFINITION', (_name, patch) => {
    const base = { name: 'x', description: 'x', parameters: {}, output: { schema: { type: 'string' }, render: () => [] }, execute: () => '' }
    try {
      defineTool({ ...base, ...patch } as never)
      throw new Error('expected a throw')
    } catch (error) {
      expect(error).toBeInstanceOf(ToolError)
      expect((error as ToolError).code).toBe('INVALID_DEFINITION')
    }
  })
})

describe('validateArgs (standalone)', () => {
  it('returns typed frozen arguments or throws ToolArgsError', () => {
    const args = validateArgs({ n: { type: 'integer', required: true } }, { n: 2 })
    expect(args).toEqual({ n: 2 })
    expect(Object.isFrozen(args)).toBe(true)
    expect(argsError(() => validateArgs({ n: { type: 'integer', required: true } }, { n: '2' })).violations[0]!.path).toBe('/n')
  })
})
