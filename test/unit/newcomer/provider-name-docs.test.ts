/**
 * The provider converters refuse a tool name their provider does not accept
 * (`UNSUPPORTED_TOOL`), but no page said what the rules are (brief s55 polish, item 6).
 * docs/providers.md now states them and quotes the refusals; this test holds the quotes to
 * what the converters throw, and the rule table to the patterns in those messages.
 */
import { readFileSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { toAnthropicTools, toOpenAIChatTools, toOpenAIResponsesTools } from '../../../src/providers/index.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { thrownToolError } from '../../support/refusal.js'

const page = readFileSync(new URL('../../../docs/providers.md', import.meta.url), 'utf8')
const runtime = createToolRuntime({})
runtime.register(defineTool({ name: 'my tool', description: 'd', parameters: {}, output: { schema: { type: 'number' }, render: (_a, v) => [{ type: 'text', text: String(v) }] }, execute: () => 1 }))
afterAll(() => runtime.dispose())

describe('docs/providers.md states the tool-name rules the converters enforce', () => {
  it('quotes each refusal exactly as the converter throws it (UNSUPPORTED_TOOL)', () => {
    const block = /<!-- provider-name-refusals -->\n```\n([\s\S]*?)\n```/.exec(page)?.[1]
    const quoted = block?.split('\n') ?? []
    const thrown = [thrownToolError(() => toOpenAIChatTools(runtime.view())), thrownToolError(() => toAnthropicTools(runtime.view()))]
    expect(thrown.map((error) => error?.code)).toEqual(['UNSUPPORTED_TOOL', 'UNSUPPORTED_TOOL'])
    expect(quoted).toEqual(thrown.map((error) => error?.message))
    expect(thrownToolError(() => toOpenAIResponsesTools(runtime.view()))?.message).toBe(quoted[0]!.replace('toOpenAIChatTools', 'toOpenAIResponsesTools'))
  })

  it("the table's patterns are the ones in the messages (64 for OpenAI, 128 for Anthropic)", () => {
    expect(page).toContain('| `toOpenAIChatTools`, `toOpenAIResponsesTools` | OpenAI (Chat Completions and Responses) | `^[a-zA-Z0-9_-]{1,64}$` |')
    expect(page).toContain('| `toAnthropicTools` | Anthropic (Messages API `tools[].name`) | `^[a-zA-Z0-9_-]{1,128}$` |')
  })
})
