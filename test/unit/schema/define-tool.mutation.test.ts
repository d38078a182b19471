/**
 * `defineTool()` and `validateArgs()` as units: what each member of a defined tool does
 * with valid, invalid and non-JSON arguments, its `this`, and its fail-safe presenters.
 */
import { describe, expect, it } from 'vitest'
import { ToolArgsError } from '../../../src/errors.js'
import { defineTool, validateArgs } from '../../../src/schema/define-tool.js'
import type { ToolExecution, ToolExecutionResult, ToolResultRecord, ToolRunContext } from '../../../src/types.js'

const exec = {} as ToolRunContext

function argsError(fn: () => unknown): ToolArgsError | undefined {
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
    const missing = argsError(() => validateArgs({ n: { type: 'integer', required: true } }, {}))
    expect(missing?.violations.length).toBeGreaterThan(0)
    const lossy = argsError(() => validateArgs({ n: { type: 'number' } }, { n: Number.NaN }))
    expect(lossy?.violations).toHaveLength(1)
    expect(lossy?.violations[0]!.path).toBe('/n')
    expect(lossy?.violations[0]!.message).not.toMatch(/ at /)
    expect(lossy?.violations[0]!.message.length).toBeGreaterThan(0)
    const root = argsError(() => validateArgs({}, undefined))
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
    expect(tool.execute!({ a: 1, b: 2 }, exec)).toBe(3)
    expect(calls).toEqual([['execute', 'spec', { a: 1, b: 2 }]])
    expect(argsError(() => tool.execute!({ b: 2 }, exec))).toBeDefined()
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
    expect(argsError(() => tool.validateArgs!({ a: 'x' }))).toBeDefined()
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
