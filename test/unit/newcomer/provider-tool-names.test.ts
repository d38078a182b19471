/**
 * A tool named `my tool` registers (the registry takes any non-empty name), and
 * `toOpenAIChatTools` passed it through, so OpenAI answered the whole request with a 400 of its
 * own (`^[a-zA-Z0-9_-]{1,64}$`). Each converter for a provider that documents a name rule now
 * refuses such a tool itself: `UNSUPPORTED_TOOL`, naming the tool and the rule.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { toAnthropicTools, toOpenAIChatTools, toOpenAIResponsesTools } from '../../../src/providers/index.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { thrownToolError as refusal } from '../../support/refusal.js'

const output = { schema: { type: 'number' }, render: (_a: unknown, v: number) => [{ type: 'text' as const, text: String(v) }] } as const
const tool = (name: string) => defineTool({ name, description: 'd', parameters: {}, output, execute: () => 1 })

const runtime = createToolRuntime({})
runtime.register(tool('my tool'))
runtime.register(tool('ok_name-1'))
afterAll(() => runtime.dispose())

describe('provider converters refuse a tool name the provider does not accept', () => {
  it('toOpenAIChatTools: "my tool" → UNSUPPORTED_TOOL naming it and the rule', () => {
    expect(refusal(() => toOpenAIChatTools(runtime.view()))).toEqual({
      code: 'UNSUPPORTED_TOOL',
      message:
        'toOpenAIChatTools: tool "my tool" cannot be offered to OpenAI: its tool names must match ^[a-zA-Z0-9_-]{1,64}$ (ASCII letters, digits, _ and -, at most 64 characters); register the tool under such a name',
    })
  })

  it('toOpenAIResponsesTools and toAnthropicTools too (Anthropic allows 128 characters)', () => {
    expect(refusal(() => toOpenAIResponsesTools(runtime.assemble().tools))?.message).toMatch(/^toOpenAIResponsesTools: tool "my tool" cannot be offered to OpenAI/)
    expect(refusal(() => toAnthropicTools(runtime.view()))?.message).toMatch(/^toAnthropicTools: tool "my tool" cannot be offered to Anthropic: .*\^\[a-zA-Z0-9_-\]\{1,128\}\$/)
  })

  it('the length bound is each provider’s: 65 characters pass Anthropic, not OpenAI', () => {
    const long = createToolRuntime({})
    long.register(tool('a'.repeat(65)))
    expect(refusal(() => toOpenAIChatTools(long.view()))?.code).toBe('UNSUPPORTED_TOOL')
    expect(toAnthropicTools(long.view()).map((t) => t.name)).toEqual(['a'.repeat(65)])
    const longer = createToolRuntime({})
    longer.register(tool('a'.repeat(129)))
    expect(refusal(() => toAnthropicTools(longer.view()))?.message).toContain('"' + 'a'.repeat(64) + '"… (129 characters)')
  })

  it('names the rule allows pass through unchanged', () => {
    const fine = createToolRuntime({})
    fine.register(tool('ok_name-1'))
    expect(toOpenAIChatTools(fine.view()).map((t) => t.function.name)).toEqual(['ok_name-1'])
  })
})
