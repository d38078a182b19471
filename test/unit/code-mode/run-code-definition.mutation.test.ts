/**
 * The `run_code` definition's own members as units: its schemas, its argument checks
 * with exact violations, its presenters and its output projections.
 */
import { describe, expect, it } from 'vitest'
import { ToolArgsError } from '../../../src/errors.js'
import { RUN_CODE_TOOL_NAME, createRunCodeTool } from '../../../src/code-mode/run-code.js'
import type { CodeModeRegistry } from '../../../src/code-mode/registry-seam.js'
import type { ToolResultRecord } from '../../../src/types.js'

const tool = createRunCodeTool({} as CodeModeRegistry)

function violations(args: unknown) {
  try {
    tool.validateArgs!(args as never)
  } catch (error) {
    expect(error).toBeInstanceOf(ToolArgsError)
    return (error as ToolArgsError).violations
  }
  return undefined
}

describe('run_code: declaration', () => {
  it('is the reserved name with its documented schemas', () => {
    expect(tool.name).toBe(RUN_CODE_TOOL_NAME)
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
  })
})

describe('run_code: arguments', () => {
  it('accepts code and description, returning them as is', () => {
    const args = { code: 'return 1', description: 'one' }
    expect(tool.validateArgs!(args)).toBe(args)
    expect(tool.softValidateArgs!(args)).toBe(args)
  })

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
    expect(tool.softValidateArgs!({ code: 'x' } as never)).toBeUndefined()
    expect(tool.softValidateArgs!(null as never)).toBeUndefined()
  })
})

describe('run_code: presentation', () => {
  it('presents the call with the program, and the description when there is one', () => {
    expect(tool.presentCall!({ code: 'return 1', description: 'sum' }, {})).toEqual({ card: 'generic', kind: 'execute', title: 'Run code', rawInput: 'return 1', content: 'sum' })
    const noDescription = tool.presentCall!({ code: 'return 1', description: '' }, {})
    expect(noDescription).toEqual({ card: 'generic', kind: 'execute', title: 'Run code', rawInput: 'return 1' })
    expect(Object.hasOwn(noDescription!, 'content')).toBe(false)
    const raw = { code: 5 }
    expect(tool.presentCall!(undefined, raw)).toEqual({ card: 'generic', kind: 'execute', title: 'Run code', rawInput: raw })
  })

  it('presents the result under the description, its content as text', () => {
    const record = { content: [{ type: 'text', text: 'line 1' }, { type: 'image', data: 'x', mimeType: 'image/png' }, { type: 'text', text: 'line 2' }] } as unknown as ToolResultRecord
    expect(tool.presentResult!({ code: 'x', description: 'sum' }, record, {})).toEqual({ card: 'generic', title: 'sum', content: 'line 1\n[image]\nline 2' })
    expect(tool.presentResult!({ code: 'x', description: '' }, record, {})?.title).toBe('Run code')
    expect(tool.presentResult!(undefined, record, {})?.title).toBe('Run code')
  })

  it('counts log lines and says whether there is a result', () => {
    const meta = tool.output.presentationMeta!
    expect(meta({} as never, { logs: ['a', 'b'], result: 0 } as never)).toEqual({ logLines: 2, hasResult: true })
    expect(meta({} as never, { logs: [] } as never)).toEqual({ logLines: 0, hasResult: false })
    expect(meta({} as never, { logs: 'x' } as never)).toEqual({ logLines: 0, hasResult: false })
    expect(meta({} as never, { logs: [], result: null } as never)).toEqual({ logLines: 0, hasResult: true })
  })

  it('renders the output as one text block', () => {
    const blocks = tool.output.render({} as never, { logs: ['hello'], result: { n: 1 } } as never)
    expect(blocks).toHaveLength(1)
    expect(blocks[0]!.type).toBe('text')
    expect((blocks[0] as { text: string }).text).toContain('hello')
  })
})
