import { describe, expect, it } from 'vitest'
import { RUN_CODE_TOOL_NAME, createRunCodeTool } from '../../../src/code-mode/run-code.js'
import { ToolArgsError } from '../../../src/errors.js'
import type { JsonValue } from '../../../src/json/json-value.js'
import { createInProcessRuntime } from './support/in-process-runtime.js'
import { createTestHost } from './support/test-host.js'

const tool = createRunCodeTool(createTestHost({}, { runtime: createInProcessRuntime() }))

describe('run_code definition', () => {
  it('is named run_code with the { code, description } closed schema', () => {
    expect(RUN_CODE_TOOL_NAME).toBe('run_code')
    expect(tool.name).toBe('run_code')
    expect(tool.parameters).toMatchObject({
      type: 'object',
      properties: { code: { type: 'string' }, description: { type: 'string' } },
      required: ['code', 'description'],
      additionalProperties: false,
    })
    expect(typeof (tool.parameters.properties?.code as { description?: unknown }).description).toBe('string')
    expect(typeof (tool.parameters.properties?.description as { description?: unknown }).description).toBe('string')
    expect(tool.output.schema).toEqual({
      type: 'object',
      properties: { logs: { type: 'array', items: { type: 'string' } }, result: {}, preflight: { type: 'string' } },
      required: ['logs'],
      additionalProperties: false,
    })
    // Not concurrency-safe: a run is exclusive.
    expect(tool.isConcurrencySafe).toBeUndefined()
  })

  it('validates arguments strictly with ToolArgsError (INVALID_ARGS)', () => {
    const args = { code: 'return 1', description: 'one' }
    expect(tool.validateArgs!(args)).toBe(args)
    const cases: Array<[JsonValue, string]> = [
      [null, '(root)'],
      [[], '(root)'],
      ['return 1', '(root)'],
      [{ description: 'd' }, '/code: is required'],
      [{ code: 'x' }, '/description: is required'],
      [{ code: 1, description: 'd' }, '/code: must be a string'],
      [{ code: 'x', description: null }, '/description: must be a string'],
      [{ code: 'x', description: 'd', extra: 1 }, '/extra: is not allowed'],
      [{ code: 'x', description: 'd', 'a/b': 1 }, '/a~1b: is not allowed'],
    ]
    for (const [input, fragment] of cases) {
      let thrown: unknown
      try {
        tool.validateArgs!(input)
      } catch (error) {
        thrown = error
      }
      expect(thrown, JSON.stringify(input)).toBeInstanceOf(ToolArgsError)
      expect((thrown as ToolArgsError).code).toBe('INVALID_ARGS')
      expect((thrown as ToolArgsError).message).toContain(fragment)
    }
  })

  it('soft-validates without throwing', () => {
    expect(tool.softValidateArgs!({ code: 'x', description: 'd' })).toEqual({ code: 'x', description: 'd' })
    expect(tool.softValidateArgs!({ code: 1 })).toBeUndefined()
    expect(tool.softValidateArgs!(null)).toBeUndefined()
  })

  it('renders the canonical value as one text block per the seed rules', () => {
    const args = { code: '', description: '' }
    expect(tool.output.render(args, { logs: ['a', 'b'], result: 'raw' })).toEqual([{ type: 'text', text: 'a\nb\nraw' }])
    expect(tool.output.render(args, { logs: [] })).toEqual([{ type: 'text', text: '(run_code completed with no output)' }])
    expect(tool.output.render(args, { logs: [], result: { a: 1 } })).toEqual([{ type: 'text', text: '{\n  "a": 1\n}' }])
  })

  it('derives presentation metadata from the value alone', () => {
    const args = { code: '', description: '' }
    expect(tool.output.presentationMeta!(args, { logs: ['a', 'b'], result: null })).toEqual({ logLines: 2, hasResult: true })
    expect(tool.output.presentationMeta!(args, { logs: [] })).toEqual({ logLines: 0, hasResult: false })
  })

  it('presents the call as a generic execute card with the program as raw input', () => {
    const args = { code: 'return 1', description: 'Return one' }
    expect(tool.presentCall!(args, args)).toEqual({
      card: 'generic',
      kind: 'execute',
      title: 'Run code',
      rawInput: 'return 1',
      content: 'Return one',
    })
    // Replay of an older, invalid call falls back to the raw arguments.
    expect(tool.presentCall!(undefined, { code: 5 })).toEqual({
      card: 'generic',
      kind: 'execute',
      title: 'Run code',
      rawInput: { code: 5 },
    })
  })

  it('presents the result as a generic card with the captured output', () => {
    const args = { code: 'return 1', description: 'Return one' }
    expect(
      tool.presentResult!(args, { isError: false, content: [{ type: 'text', text: 'hello\n1' }] }, args),
    ).toEqual({ card: 'generic', title: 'Return one', content: 'hello\n1' })
    expect(
      tool.presentResult!(
        undefined,
        { isError: true, content: [{ type: 'text', text: 'Error: code run failed (timeout): x' }] },
        {},
      ),
    ).toEqual({ card: 'generic', title: 'Run code', content: 'Error: code run failed (timeout): x' })
  })
})
