/**
 * Anthropic Messages adapters: `tools` definitions, `tool_use` content blocks in, and `tool_result`
 * blocks (with `is_error`) out.
 * @module
 */
import type { ToolExecutionInput, ToolExecutionResult } from '../types.js'
import type { ProviderCallOptions, ProviderToolCall, ProviderToolsInput } from './_shared.js'
import { checkCallOptions, checkProviderNames, imagePlaceholder, makeCall, malformedCall, pair, nativeTools } from './_shared.js'

/** Anthropic's tool names (the Messages API's `tools[].name`): `^[a-zA-Z0-9_-]{1,128}$`. */
const ANTHROPIC_NAMES = { provider: 'Anthropic', maxLength: 128 } as const
import { isRecord } from '../util/guards.js'

/** An Anthropic custom tool definition (`Tool`). */
export interface AnthropicTool {
  readonly name: string
  readonly description: string
  readonly input_schema: { readonly type: 'object'; readonly [key: string]: unknown }
}

/** The image media types Anthropic accepts in a base64 image block. */
export type AnthropicImageMediaType = 'image/jpeg' | 'image/png' | 'image/gif' | 'image/webp'

/** A block inside a `tool_result`. */
export type AnthropicToolResultContent =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'image'; readonly source: { readonly type: 'base64'; readonly media_type: AnthropicImageMediaType; readonly data: string } }

/** A `tool_result` content block (`ToolResultBlockParam`). */
export interface AnthropicToolResult {
  readonly type: 'tool_result'
  readonly tool_use_id: string
  readonly content: AnthropicToolResultContent[]
  readonly is_error?: true
}

/** The user message that answers an assistant turn's `tool_use` blocks. */
export interface AnthropicToolResultMessage {
  readonly role: 'user'
  readonly content: AnthropicToolResult[]
}

const IMAGE_TYPES: ReadonlySet<string> = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp'])

/**
 * An agent's wire tools as Anthropic `tools`: a view's `wireTools`, or a schema list (a
 * code-only tool, `callers: ['code']`, is left out).
 *
 * @example
 * ```ts
 * await anthropic.messages.create({ model, max_tokens, messages, tools: toAnthropicTools(runtime.assemble().tools) })
 * ```
 */
export function toAnthropicTools(tools: ProviderToolsInput): AnthropicTool[] {
  return checkProviderNames(nativeTools(tools), ANTHROPIC_NAMES, 'toAnthropicTools').map((tool) => ({
    name: tool.name,
    description: tool.description,
    input_schema: tool.parameters as unknown as AnthropicTool['input_schema'],
  }))
}

/**
 * The `tool_use` blocks of an assistant message's `content` as execution inputs (other
 * blocks are ignored). Anthropic sends `input` already parsed; a block without an id or
 * a name throws `INVALID_EXECUTION`.
 *
 * @example
 * ```ts
 * const calls = parseAnthropicToolUses(message.content, { signal })
 * const results = await runToolCalls(runtime, calls)
 * messages.push({ role: 'assistant', content: message.content }, toAnthropicToolResultMessage(calls, results))
 * ```
 */
export function parseAnthropicToolUses(content: readonly unknown[] | string | null | undefined, options: ProviderCallOptions): ProviderToolCall[] {
  checkCallOptions(options, 'parseAnthropicToolUses')
  if (content === null || content === undefined || typeof content === 'string') return []
  if (!Array.isArray(content)) malformedCall('parseAnthropicToolUses', 0, 'list is not an array')
  const calls: ProviderToolCall[] = []
  content.forEach((block, i) => {
    if (!isRecord(block) || block.type !== 'tool_use') return
    if (typeof block.id !== 'string' || block.id === '') malformedCall('parseAnthropicToolUses', i, 'has no id')
    if (typeof block.name !== 'string' || block.name === '') malformedCall('parseAnthropicToolUses', i, 'has no name')
    calls.push(makeCall(block.id, block.name, block.input === undefined ? {} : block.input, options))
  })
  return calls
}

/** Results as `tool_result` blocks, in order; failures carry `is_error: true`. Unsupported image types become text. */
export function toAnthropicToolResults(calls: readonly ToolExecutionInput[], results: readonly ToolExecutionResult[]): AnthropicToolResult[] {
  return pair(calls, results, 'toAnthropicToolResults').map(([call, result]) => {
    const content: AnthropicToolResultContent[] = result.content.map((block) => {
      if (block.type === 'text') return { type: 'text', text: block.text }
      if (!IMAGE_TYPES.has(block.mimeType)) return { type: 'text', text: imagePlaceholder(block) }
      return { type: 'image', source: { type: 'base64', media_type: block.mimeType as AnthropicImageMediaType, data: block.data } }
    })
    return {
      type: 'tool_result',
      tool_use_id: call.callId,
      // Anthropic rejects an empty text block; an empty list is allowed.
      content: content.filter((block) => block.type !== 'text' || block.text !== ''),
      ...(result.isError ? { is_error: true as const } : {}),
    }
  })
}

/** The user message carrying every `tool_result` of one assistant turn. */
export function toAnthropicToolResultMessage(calls: readonly ToolExecutionInput[], results: readonly ToolExecutionResult[]): AnthropicToolResultMessage {
  return { role: 'user', content: toAnthropicToolResults(calls, results) }
}
