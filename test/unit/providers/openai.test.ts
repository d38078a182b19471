import { afterAll, describe, expect, it } from 'vitest'
import { runToolCalls } from '../../../src/index.js'
import {
  InvalidJsonArguments,
  parseOpenAIChatToolCalls,
  parseOpenAIResponsesToolCalls,
  toOpenAIChatToolMessages,
  toOpenAIChatTools,
  toOpenAIResponsesToolOutputs,
  toOpenAIResponsesTools,
} from '../../../src/providers/index.js'
import { createProviderRuntime, PNG, signal } from './fixtures.js'

const runtime = createProviderRuntime()
afterAll(() => runtime.dispose())

describe('OpenAI chat completions', () => {
  it('converts the assembly wire tools', () => {
    const tools = toOpenAIChatTools(runtime.assemble().tools)
    expect(tools.map((t) => t.function.name).sort()).toEqual(['add', 'fail', 'picture', 'raw'])
    const add = tools.find((t) => t.function.name === 'add')!
    expect(add).toEqual({ type: 'function', function: { name: 'add', description: 'Adds two numbers.', parameters: runtime.get('add')!.parameters } })
  })

  it('round-trips tool_calls → runToolCalls → tool messages, malformed JSON included', async () => {
    const toolCalls = [
      { id: 'call_1', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } },
      { id: 'call_2', type: 'function', function: { name: 'add', arguments: '{"a":2,' } },
      { id: 'call_3', type: 'function', function: { name: 'raw', arguments: 'not json' } },
      { id: 'call_4', type: 'function', function: { name: 'fail', arguments: '' } },
      { id: 'call_5', type: 'function', function: { name: 'picture', arguments: '{}' } },
    ]
    const calls = parseOpenAIChatToolCalls(toolCalls, { signal, agent: 'a1' })
    expect(calls.map((c) => [c.callId, c.name, c.agent])).toEqual([
      ['call_1', 'add', 'a1'],
      ['call_2', 'add', 'a1'],
      ['call_3', 'raw', 'a1'],
      ['call_4', 'fail', 'a1'],
      ['call_5', 'picture', 'a1'],
    ])
    expect(calls[0]!.arguments).toEqual({ a: 2, b: 3 })
    expect(calls[1]!.arguments).toBeInstanceOf(InvalidJsonArguments)
    expect(calls[1]!.parseError).toMatch(/JSON/)
    expect(calls[3]!.arguments).toEqual({})
    const results = await runToolCalls(runtime, calls)
    // Malformed JSON is an INVALID_ARGS result through the pipeline, for typed and raw tools alike.
    expect(results.map((r) => (r.isError ? r.error.info?.code : 'ok'))).toEqual(['ok', 'INVALID_ARGS', 'INVALID_ARGS', 'TOOL_FAILED', 'ok'])
    expect(toOpenAIChatToolMessages(calls, results)).toEqual([
      { role: 'tool', tool_call_id: 'call_1', content: '5' },
      { role: 'tool', tool_call_id: 'call_2', content: expect.stringMatching(/^Error: arguments are not lossless JSON/) },
      { role: 'tool', tool_call_id: 'call_3', content: expect.stringMatching(/^Error: /) },
      { role: 'tool', tool_call_id: 'call_4', content: 'Error: kaput' },
      { role: 'tool', tool_call_id: 'call_5', content: 'here:\n[image image/png omitted: this tool-result format carries text only]' },
    ])
  })

  it('handles absent tool_calls and rejects calls nothing could answer', () => {
    expect(parseOpenAIChatToolCalls(undefined, { signal })).toEqual([])
    expect(parseOpenAIChatToolCalls(null, { signal })).toEqual([])
    expect(() => parseOpenAIChatToolCalls([{ type: 'function', function: { name: 'add', arguments: '{}' } }], { signal })).toThrow(expect.objectContaining({ code: 'INVALID_EXECUTION' }))
    expect(() => parseOpenAIChatToolCalls([{ id: 'x', type: 'function', function: { arguments: '{}' } }], { signal })).toThrow(/no function name/)
    expect(() => parseOpenAIChatToolCalls([{ id: 'x', type: 'custom', custom: { name: 'n', input: '' } }], { signal })).toThrow(/custom/)
    expect(() => parseOpenAIChatToolCalls([], {} as never)).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
    // Non-string arguments are malformed too, not a throw.
    const [call] = parseOpenAIChatToolCalls([{ id: 'x', function: { name: 'add', arguments: { a: 1 } } }], { signal })
    expect(call!.arguments).toBeInstanceOf(InvalidJsonArguments)
  })

  it('refuses mismatched calls and results', async () => {
    const calls = parseOpenAIChatToolCalls([{ id: 'c', type: 'function', function: { name: 'add', arguments: '{"a":1,"b":1}' } }], { signal })
    expect(() => toOpenAIChatToolMessages(calls, [])).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
  })
})

describe('OpenAI responses', () => {
  it('converts the assembly wire tools', () => {
    const tools = toOpenAIResponsesTools(runtime.assemble().tools)
    expect(tools.find((t) => t.name === 'add')).toEqual({
      type: 'function',
      name: 'add',
      description: 'Adds two numbers.',
      parameters: runtime.get('add')!.parameters,
      strict: false,
    })
  })

  it('round-trips function_call items → function_call_output items', async () => {
    const output = [
      { type: 'reasoning', id: 'rs_1', summary: [] },
      { type: 'function_call', id: 'fc_1', call_id: 'call_a', name: 'add', arguments: '{"a":1,"b":2}', status: 'completed' },
      { type: 'message', id: 'm', role: 'assistant', content: [] },
      { type: 'function_call', id: 'fc_2', call_id: 'call_b', name: 'picture', arguments: '{"mime":"image/gif"}', status: 'completed' },
      { type: 'function_call', id: 'fc_3', call_id: 'call_c', name: 'add', arguments: '{{', status: 'completed' },
    ]
    const calls = parseOpenAIResponsesToolCalls(output, { signal })
    expect(calls.map((c) => c.callId)).toEqual(['call_a', 'call_b', 'call_c'])
    const results = await runToolCalls(runtime, calls)
    expect(toOpenAIResponsesToolOutputs(calls, results)).toEqual([
      { type: 'function_call_output', call_id: 'call_a', output: '3' },
      {
        type: 'function_call_output',
        call_id: 'call_b',
        output: [
          { type: 'input_text', text: 'here:' },
          { type: 'input_image', image_url: `data:image/gif;base64,${PNG}`, detail: 'auto' },
        ],
      },
      { type: 'function_call_output', call_id: 'call_c', output: expect.stringMatching(/^Error: arguments are not lossless JSON/) },
    ])
    expect(() => parseOpenAIResponsesToolCalls([{ type: 'function_call', name: 'add', arguments: '{}' }], { signal })).toThrow(/call_id/)
  })
})
