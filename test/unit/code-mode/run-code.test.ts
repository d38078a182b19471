import { describe, expect, it } from 'vitest'
import { RUN_CODE_TOOL_NAME, createRunCodeTool } from '../../../src/code-mode/run-code.js'
import { ToolArgsError } from '../../../src/errors.js'
import type { JsonValue } from '../../../src/json/json-value.js'
import { createInProcessRuntime } from './support/in-process-runtime.js'
import { createTestHost } from './support/test-host.js'
import type { CodeModeRegistry } from '../../../src/code-mode/registry-seam.js'
import type { ToolResultRecord } from '../../../src/types.js'

const tool = createRunCodeTool(createTestHost({}, { runtime: createInProcessRuntime() }))

describe('run_code definition', () => {
  it('is named run_code with the { code, description } closed schema, exactly as documented', () => {
    expect(RUN_CODE_TOOL_NAME).toBe('run_code')
    expect(tool.name).toBe('run_code')
    expect(tool.description).toBe('Run a program that calls the available tools through the `tools` SDK. Only what the program prints or returns comes back.')
    expect(tool.parameters).toEqual({
      type: 'object',
      properties: {
        code: {
          type: 'string',
          description: 'The program: the body of an async function. Call tools as `await tools.name(args)`; emit results with `return` and/or `console.log(...)`.',
        },
        description: { type: 'string', description: 'A short summary of what the program does.' },
      },
      required: ['code', 'description'],
      additionalProperties: false,
    })
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
    expect(tool.softValidateArgs!(args)).toBe(args)
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

/*
 * The `run_code` definition's own members as units: its schemas, its argument checks
 * with exact violations, its presenters and its output projections.
 */
const bareRunCode = createRunCodeTool({} as CodeModeRegistry)

function violations(args: unknown) {
  try {
    bareRunCode.validateArgs!(args as never)
  } catch (error) {
    expect(error).toBeInstanceOf(ToolArgsError)
    return (error as ToolArgsError).violations
  }
  return undefined
}

describe('run_code: arguments', () => {
  it('reports every violation, each at its pointer', () => {
    expect(violations({})).toEqual([
      { path: '/code', message: 'is required' },
      { path: '/description', message: 'is required' },
    ])
    expect(violations({ code: 1, description: null })).toEqual([
      { path: '/code', message: 'must be a string' },
      { path: '/description', message: 'must be a string' },
    ])
    expect(violations({ code: '', description: '', 'a/b': 1, 'c~d': 2 })).toEqual([
      { path: '/a~1b', message: 'is not allowed (additionalProperties: false)' },
      { path: '/c~0d', message: 'is not allowed (additionalProperties: false)' },
    ])
    for (const args of [null, [], 'code', 3]) expect(violations(args)).toEqual([{ path: '', message: 'expected an object with `code` and `description`' }])
  })

  it('soft validation answers undefined instead of throwing', () => {
    expect(bareRunCode.softValidateArgs!({ code: 'x' } as never)).toBeUndefined()
    expect(bareRunCode.softValidateArgs!(null as never)).toBeUndefined()
  })
})

describe('run_code: presentation', () => {
  it('presents the call with the program, and the description when there is one', () => {
    expect(bareRunCode.presentCall!({ code: 'return 1', description: 'sum' }, {})).toEqual({ card: 'generic', kind: 'execute', title: 'Run code', rawInput: 'return 1', content: 'sum' })
    const noDescription = bareRunCode.presentCall!({ code: 'return 1', description: '' }, {})
    expect(noDescription).toEqual({ card: 'generic', kind: 'execute', title: 'Run code', rawInput: 'return 1' })
    expect(Object.hasOwn(noDescription!, 'content')).toBe(false)
    const raw = { code: 5 }
    expect(bareRunCode.presentCall!(undefined, raw)).toEqual({ card: 'generic', kind: 'execute', title: 'Run code', rawInput: raw })
  })

  it('presents the result under the description, its content as text', () => {
    const record = { content: [{ type: 'text', text: 'line 1' }, { type: 'image', data: 'x', mimeType: 'image/png' }, { type: 'text', text: 'line 2' }] } as unknown as ToolResultRecord
    expect(bareRunCode.presentResult!({ code: 'x', description: 'sum' }, record, {})).toEqual({ card: 'generic', title: 'sum', content: 'line 1\n[image]\nline 2' })
    expect(bareRunCode.presentResult!({ code: 'x', description: '' }, record, {})?.title).toBe('Run code')
    expect(bareRunCode.presentResult!(undefined, record, {})?.title).toBe('Run code')
  })

  it('counts log lines and says whether there is a result', () => {
    const meta = bareRunCode.output.presentationMeta!
    expect(meta({} as never, { logs: ['a', 'b'], result: 0 } as never)).toEqual({ logLines: 2, hasResult: true })
    expect(meta({} as never, { logs: [] } as never)).toEqual({ logLines: 0, hasResult: false })
    expect(meta({} as never, { logs: 'x' } as never)).toEqual({ logLines: 0, hasResult: false })
    expect(meta({} as never, { logs: [], result: null } as never)).toEqual({ logLines: 0, hasResult: true })
  })

  it('renders the output as one text block', () => {
    const blocks = bareRunCode.output.render({} as never, { logs: ['hello'], result: { n: 1 } } as never)
    expect(blocks).toHaveLength(1)
    expect(blocks[0]!.type).toBe('text')
    expect((blocks[0] as { text: string }).text).toContain('hello')
  })
})
