import { generateText, jsonSchema } from 'ai'
import type { ModelMessage } from 'ai'
import { MockLanguageModelV4 } from 'ai/test'
import { afterAll, describe, expect, it } from 'vitest'
import { runToolCalls } from '../../src/index.js'
import { InvalidJsonArguments, parseVercelToolCalls, toVercelToolMessage, toVercelTools } from '../../src/providers/index.js'
import { createProviderRuntime, PNG, signal } from '../unit/providers/fixtures.js'

const runtime = createProviderRuntime()
afterAll(() => runtime.dispose())

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
}

describe('Vercel AI SDK', () => {
  it('converts the assembly wire tools through the SDK jsonSchema', () => {
    const tools = toVercelTools(runtime.assemble().tools, { jsonSchema })
    expect(Object.keys(tools).sort()).toEqual(['add', 'fail', 'picture', 'raw'])
    expect(tools.add!.description).toBe('Adds two numbers.')
    expect(tools.add!.inputSchema.jsonSchema).toEqual(runtime.get('add')!.parameters)
    expect(() => toVercelTools([], {} as never)).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
  })

  it('round-trips through generateText with a scripted model: tool calls out, tool results back in', async () => {
    const prompts: unknown[] = []
    const model = new MockLanguageModelV4({
      doGenerate: async (options) => {
        prompts.push(options.prompt)
        if (prompts.length === 1) {
          return {
            content: [
              { type: 'tool-call', toolCallId: 'tc1', toolName: 'add', input: '{"a":20,"b":22}' },
              { type: 'tool-call', toolCallId: 'tc2', toolName: 'picture', input: '{}' },
              { type: 'tool-call', toolCallId: 'tc3', toolName: 'fail', input: '{}' },
            ],
            finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
            usage,
            warnings: [],
          }
        }
        return { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] }
      },
    })
    const tools = toVercelTools(runtime.assemble().tools, { jsonSchema })
    const messages: ModelMessage[] = [{ role: 'user', content: 'add 20 and 22' }]
    const step = await generateText({ model, messages, tools })
    // The SDK's own wire tool definitions carry our schemas.
    expect(step.toolCalls.map((c) => c.toolName)).toEqual(['add', 'picture', 'fail'])

    const calls = parseVercelToolCalls(step.toolCalls, { signal })
    expect(calls[0]).toMatchObject({ callId: 'tc1', name: 'add', arguments: { a: 20, b: 22 } })
    const results = await runToolCalls(runtime, calls)
    const toolMessage = toVercelToolMessage(calls, results)
    expect(toolMessage).toEqual({
      role: 'tool',
      content: [
        { type: 'tool-result', toolCallId: 'tc1', toolName: 'add', output: { type: 'text', value: '42' } },
        {
          type: 'tool-result',
          toolCallId: 'tc2',
          toolName: 'picture',
          output: { type: 'content', value: [{ type: 'text', text: 'here:' }, { type: 'file', data: { type: 'data', data: PNG }, mediaType: 'image/png' }] },
        },
        { type: 'tool-result', toolCallId: 'tc3', toolName: 'fail', output: { type: 'error-text', value: 'Error: kaput' } },
      ],
    })

    // The SDK accepts our tool message and hands it to the model as tool results.
    const final = await generateText({ model, messages: [...messages, ...step.response.messages, toolMessage], tools })
    expect(final.text).toBe('done')
    const second = JSON.stringify(prompts[1])
    expect(second).toContain('"toolCallId":"tc1"')
    expect(second).toContain('42')
    expect(second).toContain('Error: kaput')
  })

  it('turns calls the SDK flagged invalid into INVALID_ARGS results; rejects calls nothing could answer', async () => {
    const calls = parseVercelToolCalls(
      [{ type: 'tool-call', toolCallId: 'x', toolName: 'add', input: '{"a":', invalid: true, error: { message: 'JSON parse failed' } }],
      { signal },
    )
    expect(calls[0]!.arguments).toBeInstanceOf(InvalidJsonArguments)
    expect(calls[0]!.parseError).toBe('JSON parse failed')
    const [result] = await runToolCalls(runtime, calls)
    expect(result!.isError && result!.error.info?.code).toBe('INVALID_ARGS')
    expect(() => parseVercelToolCalls([{ type: 'tool-call', toolName: 'add', input: {} }], { signal })).toThrow(/toolCallId/)
    expect(parseVercelToolCalls([{ type: 'text', text: 'x' }], { signal })).toEqual([])
  })
})
