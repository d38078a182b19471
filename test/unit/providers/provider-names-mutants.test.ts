/**
 * The provider name rule at its edges (mutation testing, stop 55): a name of exactly the
 * provider's maximum passes, and a schema list read from JSON (`GET /v1/tools`) whose tool
 * `name` is no string is refused, named as it is (not quoted as if it were a string).
 */
import { describe, expect, it } from 'vitest'
import { toAnthropicTools, toOpenAIChatTools, toOpenAIResponsesTools } from '../../../src/providers/index.js'
import type { ToolSchema } from '../../../src/types.js'
import { thrownToolError as refusal } from '../../support/refusal.js'

const schema = (name: unknown): ToolSchema => ({ name, description: 'd', parameters: { type: 'object', properties: {} } }) as unknown as ToolSchema

describe('provider tool names at the bound', () => {
  it('a name of exactly 64 characters is offered to OpenAI, of 128 to Anthropic; one more is refused', () => {
    expect(toOpenAIChatTools([schema('a'.repeat(64))]).map((t) => t.function.name)).toEqual(['a'.repeat(64)])
    expect(toOpenAIResponsesTools([schema('b'.repeat(64))]).map((t) => t.name)).toEqual(['b'.repeat(64)])
    expect(toAnthropicTools([schema('c'.repeat(128))]).map((t) => t.name)).toEqual(['c'.repeat(128)])
    expect(refusal(() => toOpenAIChatTools([schema('a'.repeat(65))]))?.code).toBe('UNSUPPORTED_TOOL')
    expect(refusal(() => toAnthropicTools([schema('c'.repeat(129))]))?.code).toBe('UNSUPPORTED_TOOL')
  })

  it('a name that is no string is refused, even one whose text would pass (["get_weather"])', () => {
    const listed = refusal(() => toOpenAIChatTools([schema(['get_weather'])]))
    expect(listed?.code).toBe('UNSUPPORTED_TOOL')
    expect(listed?.message).toMatch(/^toOpenAIChatTools: tool get_weather cannot be offered to OpenAI: /)
    expect(refusal(() => toAnthropicTools([schema(['get_weather'])]))?.code).toBe('UNSUPPORTED_TOOL')
  })

  it('a number name is written as the number, not as a quoted string', () => {
    expect(refusal(() => toOpenAIChatTools([schema(42)]))?.message).toMatch(/^toOpenAIChatTools: tool 42 cannot be offered to OpenAI: its tool names must match \^\[a-zA-Z0-9_-\]\{1,64\}\$/)
  })
})
