import { describe, expect, it } from 'vitest'
import { SchemaError, ToolArgsError, ToolError } from '../../../src/errors.js'
import { defineTool, validateArgs } from '../../../src/schema/define-tool.js'
import { snapshotLosslessJson } from '../../../src/json/lossless.js'
import type { ToolRunContext, ToolExecution, ToolExecutionResult, ToolResultRecord } from '../../../src/types.js'

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

/*
 * `defineTool()` and `validateArgs()` as units: what each member of a defined tool does
 * with valid, invalid and non-JSON arguments, its `this`, and its fail-safe presenters.
 */
const emptyExec = {} as ToolRunContext

function argsErrorOrNone(fn: () => unknown): ToolArgsError | undefined {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(ToolArgsError)
    return error as ToolArgsError
  }
  return undefined
}

describe('validateArgs', () => {
  it('returns a lossless snapshot of valid arguments', () => {
    const args = { n: 1, tags: ['a'] }
    const out = validateArgs({ n: { type: 'integer', required: true }, tags: { type: 'array', items: { type: 'string' } } }, args)
    expect(out).toEqual(args)
    expect(out).not.toBe(args)
  })

  it('reports schema violations and non-JSON values as ToolArgsError violations', () => {
    const missing = argsErrorOrNone(() => validateArgs({ n: { type: 'integer', required: true } }, {}))
    expect(missing?.violations.length).toBeGreaterThan(0)
    const lossy = argsErrorOrNone(() => validateArgs({ n: { type: 'number' } }, { n: Number.NaN }))
    expect(lossy?.violations).toHaveLength(1)
    expect(lossy?.violations[0]!.path).toBe('/n')
    expect(lossy?.violations[0]!.message).not.toMatch(/ at /)
    expect(lossy?.violations[0]!.message.length).toBeGreaterThan(0)
    const root = argsErrorOrNone(() => validateArgs({}, undefined))
    expect(root?.violations[0]!.path).toBe('')
    expect(root?.violations[0]!.message).not.toMatch(/at the root$/)
  })
})

describe('defineTool', () => {
  const make = (extra: Record<string, unknown> = {}) => {
    const calls: unknown[] = []
    const spec = {
      name: 'calc',
      description: 'adds',
      parameters: { a: { type: 'number', required: true }, b: { type: 'number' } },
      output: {
        schema: { type: 'number' },
        tag: 'out',
        render(this: { tag: string }, args: { a: number }, value: number) {
          calls.push(['render', this.tag, args, value])
          return [{ type: 'text' as const, text: String(value) }]
        },
        presentationMeta(this: { tag: string }, _args: unknown, value: number) {
          return { from: this.tag, value }
        },
      },
      label: 'spec',
      execute(this: { label: string }, args: { a: number; b?: number }) {
        calls.push(['execute', this.label, args])
        return args.a + (args.b ?? 0)
      },
      ...extra,
    }
    return { tool: defineTool(spec as never) as unknown as Record<string, (...args: unknown[]) => unknown> & { output: Record<string, unknown>; parameters: unknown; timeoutMs?: number }, calls }
  }

  it('converts the schemas and keeps name and description; frozen', () => {
    const { tool } = make()
    expect(tool.name).toBe('calc')
    expect(tool.description).toBe('adds')
    expect(tool.parameters).toEqual({ type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a'] })
    expect(tool.output.schema).toEqual({ type: 'number' })
    expect(Object.isFrozen(tool) && Object.isFrozen(tool.output)).toBe(true)
    expect(Object.hasOwn(tool, 'timeoutMs')).toBe(false)
    expect(make({ timeoutMs: 25 }).tool.timeoutMs).toBe(25)
    for (const optional of ['finalizeContent', 'presentCall', 'presentResult', 'isConcurrencySafe']) expect(Object.hasOwn(tool, optional)).toBe(false)
  })

  it('execute validates its arguments and calls the body with the spec as this', () => {
    const { tool, calls } = make()
    expect(tool.execute!({ a: 1, b: 2 }, emptyExec)).toBe(3)
    expect(calls).toEqual([['execute', 'spec', { a: 1, b: 2 }]])
    expect(argsErrorOrNone(() => tool.execute!({ b: 2 }, emptyExec))).toBeDefined()
    expect(calls).toHaveLength(1)
  })

  it('validateArgs snapshots once: a validated snapshot passes through as is', () => {
    const { tool } = make()
    const raw = { a: 1 }
    const checked = tool.validateArgs!(raw) as object
    expect(checked).toEqual(raw)
    expect(checked).not.toBe(raw)
    expect(tool.validateArgs!(checked)).toBe(checked)
    expect(tool.softValidateArgs!(checked)).toBe(checked)
    expect(argsErrorOrNone(() => tool.validateArgs!({ a: 'x' }))).toBeDefined()
    expect(tool.validateArgs!(checked)).toBe(checked)
  })

  it('softValidateArgs answers undefined instead of throwing', () => {
    const { tool } = make()
    expect(tool.softValidateArgs!({ a: 'x' })).toBeUndefined()
    expect(tool.softValidateArgs!({ a: Number.NaN })).toBeUndefined()
    expect(tool.softValidateArgs!(null)).toBeUndefined()
    const soft = tool.softValidateArgs!({ a: 2 })
    expect(soft).toEqual({ a: 2 })
    expect(tool.validateArgs!(soft)).toBe(soft)
  })

  it('render and presentationMeta run with the output declaration as this', () => {
    const { tool, calls } = make()
    expect((tool.output.render as (a: unknown, v: unknown) => unknown)({ a: 1 }, 5)).toEqual([{ type: 'text', text: '5' }])
    expect(calls).toEqual([['render', 'out', { a: 1 }, 5]])
    expect((tool.output.presentationMeta as (a: unknown, v: unknown) => unknown)({ a: 1 }, 5)).toEqual({ from: 'out', value: 5 })
    const plain = defineTool({ name: 'p', description: '', parameters: {}, output: { schema: { type: 'null' }, render: () => [] }, execute: () => null })
    expect(Object.hasOwn(plain.output, 'presentationMeta')).toBe(false)
  })

  it('finalizeContent is passed through with the spec as this', () => {
    const seen: unknown[] = []
    const { tool } = make({
      finalizeContent(this: { label: string }, e: ToolExecution, r: ToolExecutionResult) {
        seen.push([this.label, e, r])
        return [{ type: 'text', text: 'final' }]
      },
    })
    const e = { name: 'calc' } as ToolExecution
    const r = { isError: false } as ToolExecutionResult
    expect(tool.finalizeContent!(e, r)).toEqual([{ type: 'text', text: 'final' }])
    expect(seen).toEqual([['spec', e, r]])
  })

  it('presenters get softly validated arguments (undefined when invalid), and a throw means no custom view', () => {
    const seen: unknown[] = []
    const { tool } = make({
      presentCall(this: { label: string }, args: unknown, raw: unknown) {
        seen.push(['call', this.label, args, raw])
        if (raw === 'boom') throw new Error('presenter bug')
        return { title: 'custom' }
      },
      presentResult(this: { label: string }, args: unknown, result: unknown, raw: unknown) {
        seen.push(['result', this.label, args, result, raw])
        if (raw === 'boom') throw new Error('presenter bug')
        return { summary: 'done' }
      },
    })
    expect(tool.presentCall!(undefined, { a: 1 })).toEqual({ title: 'custom' })
    expect(tool.presentCall!(undefined, { a: 'bad' })).toEqual({ title: 'custom' })
    expect(tool.presentCall!(undefined, 'boom')).toBeUndefined()
    const record = { isError: false } as unknown as ToolResultRecord
    expect(tool.presentResult!(undefined, record, { a: 1 })).toEqual({ summary: 'done' })
    expect(tool.presentResult!(undefined, record, 'boom')).toBeUndefined()
    expect(seen).toEqual([
      ['call', 'spec', { a: 1 }, { a: 1 }],
      ['call', 'spec', undefined, { a: 'bad' }],
      ['call', 'spec', undefined, 'boom'],
      ['result', 'spec', { a: 1 }, record, { a: 1 }],
      ['result', 'spec', undefined, record, 'boom'],
    ])
  })

  it('isConcurrencySafe is exactly true, fails closed on invalid arguments and on a throw', () => {
    const answers: unknown[] = [true, 1, 'yes', false]
    const seen: unknown[] = []
    const { tool } = make({
      isConcurrencySafe(this: { label: string }, args: { a: number }) {
        seen.push([this.label, args])
        if (args.a === 99) throw new Error('classifier bug')
        return answers.shift()
      },
    })
    expect(tool.isConcurrencySafe!({ a: 1 })).toBe(true)
    expect(tool.isConcurrencySafe!({ a: 1 })).toBe(false)
    expect(tool.isConcurrencySafe!({ a: 1 })).toBe(false)
    expect(tool.isConcurrencySafe!({ a: 'x' })).toBe(false)
    expect(tool.isConcurrencySafe!({ a: 99 })).toBe(false)
    expect(seen).toEqual([
      ['spec', { a: 1 }],
      ['spec', { a: 1 }],
      ['spec', { a: 1 }],
      ['spec', { a: 99 }],
    ])
  })
})
