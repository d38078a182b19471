import { afterAll, describe, expect, it } from 'vitest'
import { runToolCalls } from '../../../src/index.js'
import { parseAnthropicToolUses, toAnthropicToolResultMessage, toAnthropicTools } from '../../../src/providers/index.js'
import { createProviderRuntime, PNG, signal } from './fixtures.js'

const runtime = createProviderRuntime()
afterAll(() => runtime.dispose())

describe('Anthropic', () => {
  it('converts the assembly wire tools', () => {
    const tools = toAnthropicTools(runtime.assemble().tools)
    expect(tools.find((t) => t.name === 'add')).toEqual({ name: 'add', description: 'Adds two numbers.', input_schema: runtime.get('add')!.parameters })
  })

  it('round-trips tool_use blocks → tool_result blocks with is_error and images', async () => {
    const content = [
      { type: 'text', text: 'Let me check.' },
      { type: 'tool_use', id: 'toolu_1', name: 'add', input: { a: 4, b: 5 } },
      { type: 'tool_use', id: 'toolu_2', name: 'fail', input: {} },
      { type: 'tool_use', id: 'toolu_3', name: 'picture', input: {} },
      { type: 'tool_use', id: 'toolu_4', name: 'picture', input: { mime: 'image/bmp' } },
      { type: 'tool_use', id: 'toolu_5', name: 'add', input: { a: 'x' } },
    ]
    const calls = parseAnthropicToolUses(content, { signal })
    expect(calls.map((c) => c.callId)).toEqual(['toolu_1', 'toolu_2', 'toolu_3', 'toolu_4', 'toolu_5'])
    const results = await runToolCalls(runtime, calls)
    const message = toAnthropicToolResultMessage(calls, results)
    expect(message.role).toBe('user')
    expect(message.content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: '9' }] },
      { type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: 'Error: kaput' }], is_error: true },
      {
        type: 'tool_result',
        tool_use_id: 'toolu_3',
        content: [
          { type: 'text', text: 'here:' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        ],
      },
      {
        type: 'tool_result',
        tool_use_id: 'toolu_4',
        content: [
          { type: 'text', text: 'here:' },
          { type: 'text', text: '[image image/bmp omitted: this tool-result format carries text only]' },
        ],
      },
      { type: 'tool_result', tool_use_id: 'toolu_5', content: [{ type: 'text', text: expect.stringMatching(/^Error: Invalid arguments/) }], is_error: true },
    ])
  })

  it('ignores non-tool blocks and string content; rejects blocks nothing could answer', () => {
    expect(parseAnthropicToolUses('just text', { signal })).toEqual([])
    expect(parseAnthropicToolUses([{ type: 'text', text: 'x' }], { signal })).toEqual([])
    expect(() => parseAnthropicToolUses([{ type: 'tool_use', name: 'add', input: {} }], { signal })).toThrow(/no id/)
    expect(() => parseAnthropicToolUses([{ type: 'tool_use', id: 'x', input: {} }], { signal })).toThrow(/no name/)
  })
})
