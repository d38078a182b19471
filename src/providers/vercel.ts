/**
 * Vercel AI SDK adapters: tool definitions for `generateText` / `streamText`, their `toolCalls` in,
 * and a `role: 'tool'` message of `tool-result` parts out.
 * @module
 */
import { ToolError } from '../errors.js'
import type { JsonValue } from '../json/json-value.js'
import type { ToolExecutionInput, ToolExecutionResult } from '../types.js'
import type { ProviderCallOptions, ProviderToolCall, ProviderToolsInput } from './_shared.js'
import { checkCallOptions, InvalidJsonArguments, makeCall, malformedCall, pair, resultText, nativeTools } from './_shared.js'
import { isRecord } from '../util/guards.js'

/** Options of {@link toVercelTools}. */
export interface VercelToolsOptions<S> {
  /** The AI SDK's `jsonSchema` (`import { jsonSchema } from 'ai'`). */
  readonly jsonSchema: (schema: never) => S
}

/** One AI SDK tool definition without `execute` (toolyard runs the calls). */
export interface VercelToolDefinition<S> {
  readonly description: string
  readonly inputSchema: S
}

/** One part of a `content` tool output. */
export type VercelToolContentPart =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'file'; readonly data: { readonly type: 'data'; readonly data: string }; readonly mediaType: string }

/** The AI SDK's `ToolResultOutput`, the variants toolyard produces. */
export type VercelToolResultOutput =
  | { readonly type: 'text'; readonly value: string }
  | { readonly type: 'error-text'; readonly value: string }
  | { readonly type: 'content'; readonly value: VercelToolContentPart[] }

/** A `tool-result` part (`ToolResultPart`). */
export interface VercelToolResultPart {
  readonly type: 'tool-result'
  readonly toolCallId: string
  readonly toolName: string
  readonly output: VercelToolResultOutput
}

/** A `role: 'tool'` model message (`ToolModelMessage`). */
export interface VercelToolMessage {
  readonly role: 'tool'
  readonly content: VercelToolResultPart[]
}

/**
 * An agent's wire tools (a view's `wireTools`, or a schema list) as an AI SDK `ToolSet`
 * without `execute`, so the SDK returns the calls and toolyard's pipeline runs them (a
 * code-only tool, `callers: ['code']`, is left out).
 *
 * @example
 * ```ts
 * import { generateText, jsonSchema } from 'ai'
 * const tools = toVercelTools(runtime.assemble().tools, { jsonSchema })
 * const step = await generateText({ model, messages, tools })
 * ```
 */
export function toVercelTools<S>(tools: ProviderToolsInput, options: VercelToolsOptions<S>): Record<string, VercelToolDefinition<S>> {
  if (typeof options !== 'object' || options === null || typeof options.jsonSchema !== 'function') {
    throw new ToolError('INVALID_OPTIONS', "toVercelTools: options.jsonSchema must be the AI SDK's jsonSchema function")
  }
  const set: Record<string, VercelToolDefinition<S>> = Object.create(null) as Record<string, VercelToolDefinition<S>>
  for (const tool of nativeTools(tools)) {
    set[tool.name] = { description: tool.description, inputSchema: options.jsonSchema(tool.parameters as never) }
  }
  return set
}

/**
 * The AI SDK's `toolCalls` (or the `tool-call` parts of an assistant message) as execution inputs.
 * @example
 * ```ts
 * const calls = parseVercelToolCalls(step.toolCalls, { signal })
 * const results = await runToolCalls(runtime, calls)
 * messages.push(...step.response.messages, toVercelToolMessage(calls, results))
 * ```
 */
export function parseVercelToolCalls(toolCalls: readonly unknown[] | null | undefined, options: ProviderCallOptions): ProviderToolCall[] {
  checkCallOptions(options, 'parseVercelToolCalls')
  if (toolCalls === null || toolCalls === undefined) return []
  if (!Array.isArray(toolCalls)) malformedCall('parseVercelToolCalls', 0, 'list is not an array')
  const calls: ProviderToolCall[] = []
  toolCalls.forEach((raw, i) => {
    if (!isRecord(raw) || (raw.type !== undefined && raw.type !== 'tool-call')) return
    if (typeof raw.toolCallId !== 'string' || raw.toolCallId === '') malformedCall('parseVercelToolCalls', i, 'has no toolCallId')
    if (typeof raw.toolName !== 'string' || raw.toolName === '') malformedCall('parseVercelToolCalls', i, 'has no toolName')
    if (raw.invalid === true) {
      const reason = isRecord(raw.error) && typeof raw.error.message === 'string' ? raw.error.message : 'the AI SDK marked the input invalid'
      const text = typeof raw.input === 'string' ? raw.input : JSON.stringify(raw.input) ?? ''
      calls.push(makeCall(raw.toolCallId, raw.toolName, new InvalidJsonArguments(text, reason), options, reason))
      return
    }
    calls.push(makeCall(raw.toolCallId, raw.toolName, raw.input === undefined ? {} : raw.input, options))
  })
  return calls
}

/** Results as `tool-result` parts: text, `error-text` for failures, `content` (text + files) when images are present. */
export function toVercelToolResultParts(calls: readonly ToolExecutionInput[], results: readonly ToolExecutionResult[]): VercelToolResultPart[] {
  return pair(calls, results, 'toVercelToolResultParts').map(([call, result]) => {
    const hasImage = result.content.some((block) => block.type === 'image')
    const output: VercelToolResultOutput = result.isError
      ? { type: 'error-text', value: resultText(result) }
      : hasImage
        ? {
            type: 'content',
            value: result.content.map((block) =>
              block.type === 'text' ? { type: 'text', text: block.text } : { type: 'file', data: { type: 'data', data: block.data }, mediaType: block.mimeType },
            ),
          }
        : { type: 'text', value: resultText(result) }
    return { type: 'tool-result', toolCallId: call.callId, toolName: call.name, output }
  })
}

/** The `role: 'tool'` message answering one step's calls. */
export function toVercelToolMessage(calls: readonly ToolExecutionInput[], results: readonly ToolExecutionResult[]): VercelToolMessage {
  return { role: 'tool', content: toVercelToolResultParts(calls, results) }
}

/** The canonical value of a success, for callers who feed the AI SDK `json` outputs themselves. */
export function vercelJsonOutput(result: ToolExecutionResult): { readonly type: 'json'; readonly value: JsonValue } | undefined {
  return result.isError ? undefined : { type: 'json', value: result.value }
}
