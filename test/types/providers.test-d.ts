/**
 * The provider converters type-check against the official SDKs' own types (dev
 * dependencies only: src/providers imports none of them). Also pins that the MCP SDK's
 * Client satisfies McpClientLike. The Vercel AI SDK's checks live in test/vercel-sdk/
 * (its own small package: see the README there).
 */
import type Anthropic from '@anthropic-ai/sdk'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type {
  ChatCompletionMessageParam,
  ChatCompletionMessageToolCall,
  ChatCompletionTool,
  ChatCompletionToolMessageParam,
} from 'openai/resources/chat/completions'
import type { FunctionTool, ResponseInputItem, ResponseOutputItem } from 'openai/resources/responses/responses'
import { describe, expectTypeOf, it } from 'vitest'
import type { McpClientLike } from '../../src/mcp/index.js'
import {
  parseAnthropicToolUses,
  parseOpenAIChatToolCalls,
  parseOpenAIResponsesToolCalls,
  toAnthropicToolResultMessage,
  toAnthropicToolResults,
  toAnthropicTools,
  toOpenAIChatToolMessages,
  toOpenAIChatTools,
  toOpenAIResponsesToolOutputs,
  toOpenAIResponsesTools,
} from '../../src/providers/index.js'
import type { ProviderToolCall } from '../../src/providers/index.js'
import type { PromptAssembly } from '../../src/runtime-types.js'
import type { ToolExecutionInput, ToolExecutionResult } from '../../src/types.js'

declare const assembly: PromptAssembly
declare const results: ToolExecutionResult[]
const options = { signal: new AbortController().signal }

describe('OpenAI', () => {
  it('chat completions: tools, tool_calls in, tool messages out', () => {
    const tools: ChatCompletionTool[] = toOpenAIChatTools(assembly.tools)
    expectTypeOf(tools).toExtend<ChatCompletionTool[]>()
    const toolCalls = [] as ChatCompletionMessageToolCall[]
    const calls = parseOpenAIChatToolCalls(toolCalls, options)
    expectTypeOf(calls).toEqualTypeOf<ProviderToolCall[]>()
    expectTypeOf(calls).toExtend<readonly ToolExecutionInput[]>()
    const messages: ChatCompletionToolMessageParam[] = toOpenAIChatToolMessages(calls, results)
    const history: ChatCompletionMessageParam[] = [...messages]
    expectTypeOf(history).toExtend<ChatCompletionMessageParam[]>()
  })

  it('responses: tools, function_call items in, function_call_output items out', () => {
    const tools: FunctionTool[] = toOpenAIResponsesTools(assembly.tools)
    expectTypeOf(tools).toExtend<FunctionTool[]>()
    const output = [] as ResponseOutputItem[]
    const calls = parseOpenAIResponsesToolCalls(output, options)
    const input: ResponseInputItem[] = toOpenAIResponsesToolOutputs(calls, results)
    expectTypeOf(input).toExtend<ResponseInputItem[]>()
  })
})

describe('Anthropic', () => {
  it('tools, tool_use in, tool_result out', () => {
    const tools: Anthropic.Tool[] = toAnthropicTools(assembly.tools)
    expectTypeOf(tools).toExtend<Anthropic.Tool[]>()
    const message = {} as Anthropic.Message
    const calls = parseAnthropicToolUses(message.content, options)
    const blocks: Anthropic.ToolResultBlockParam[] = toAnthropicToolResults(calls, results)
    const reply: Anthropic.MessageParam = toAnthropicToolResultMessage(calls, results)
    expectTypeOf(blocks).toExtend<Anthropic.ToolResultBlockParam[]>()
    expectTypeOf(reply).toExtend<Anthropic.MessageParam>()
  })
})

describe('MCP', () => {
  it("the SDK's Client is an McpClientLike", () => {
    expectTypeOf<Client>().toExtend<McpClientLike>()
  })
})
