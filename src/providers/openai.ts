/**
 * OpenAI adapters for both APIs: Chat Completions (`tools` / `message.tool_calls` / `role: 'tool'`
 * messages) and Responses (`tools` / `function_call` items / `function_call_output` items).
 * @module
 */
import type { ToolExecutionInput, ToolExecutionResult } from '../types.js'
import type { ProviderCallOptions, ProviderToolCall, ProviderToolsInput } from './_shared.js'
import { checkCallOptions, checkProviderNames, makeCall, malformedCall, pair, parseJsonArguments, resultText, nativeTools } from './_shared.js'

/** OpenAI's function names (Chat Completions and Responses): `^[a-zA-Z0-9_-]{1,64}$`. */
const OPENAI_NAMES = { provider: 'OpenAI', maxLength: 64 } as const
import { isRecord } from '../util/guards.js'

/** A Chat Completions function tool (`ChatCompletionFunctionTool`). */
export interface OpenAIChatTool {
  readonly type: 'function'
  readonly function: {
    readonly name: string
    readonly description: string
    readonly parameters: Record<string, unknown>
    readonly strict?: boolean
  }
}

/** A Chat Completions tool message (`ChatCompletionToolMessageParam`). */
export interface OpenAIChatToolMessage {
  readonly role: 'tool'
  readonly tool_call_id: string
  readonly content: string
}

/** A Responses function tool (`FunctionTool`). */
export interface OpenAIResponsesTool {
  readonly type: 'function'
  readonly name: string
  readonly description: string
  readonly parameters: Record<string, unknown>
  readonly strict: boolean
}

/** One part of a Responses function output that carries an image. */
export type OpenAIResponsesOutputPart =
  | { readonly type: 'input_text'; readonly text: string }
  | { readonly type: 'input_image'; readonly image_url: string; readonly detail: 'auto' }

/** A Responses `function_call_output` input item. */
export interface OpenAIResponsesToolOutput {
  readonly type: 'function_call_output'
  readonly call_id: string
  /** Text, or text and image parts when the result carries images. */
  readonly output: string | OpenAIResponsesOutputPart[]
}

/**
 * An agent's wire tools as Chat Completions `tools`: a view's `wireTools` (`runtime.view(agent)`),
 * or a schema list such as an assembly's tools (a code-only tool, `callers: ['code']`, is left
 * out).
 * @example
 * ```ts
 * const assembly = runtime.assemble('assistant')
 * await openai.chat.completions.create({ model, messages, tools: toOpenAIChatTools(assembly.tools) })
 * ```
 */
export function toOpenAIChatTools(tools: ProviderToolsInput): OpenAIChatTool[] {
  return checkProviderNames(nativeTools(tools), OPENAI_NAMES, 'toOpenAIChatTools').map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters as unknown as Record<string, unknown> },
  }))
}

/**
 * A Chat Completions assistant message's `tool_calls` as execution inputs. Argument text that is
 * not JSON does not throw: the call carries an `InvalidJsonArguments` marker and `parseError`, and
 * the pipeline answers it with `INVALID_ARGS`. A call without an id or name throws
 * `INVALID_EXECUTION` (nothing could answer it).
 * @example
 * ```ts
 * const calls = parseOpenAIChatToolCalls(completion.choices[0].message.tool_calls, { signal })
 * const results = await runToolCalls(runtime, calls)
 * messages.push(completion.choices[0].message, ...toOpenAIChatToolMessages(calls, results))
 * ```
 */
export function parseOpenAIChatToolCalls(toolCalls: readonly unknown[] | null | undefined, options: ProviderCallOptions): ProviderToolCall[] {
  checkCallOptions(options, 'parseOpenAIChatToolCalls')
  if (toolCalls === null || toolCalls === undefined) return []
  if (!Array.isArray(toolCalls)) malformedCall('parseOpenAIChatToolCalls', 0, 'list is not an array')
  return toolCalls.map((raw, i) => {
    if (!isRecord(raw) || typeof raw.id !== 'string' || raw.id === '') malformedCall('parseOpenAIChatToolCalls', i, 'has no id')
    if (raw.type !== undefined && raw.type !== 'function') malformedCall('parseOpenAIChatToolCalls', i, `is of type ${JSON.stringify(raw.type)}, not "function"`)
    const fn = raw.function
    if (!isRecord(fn) || typeof fn.name !== 'string' || fn.name === '') malformedCall('parseOpenAIChatToolCalls', i, 'has no function name')
    const parsed = parseJsonArguments(fn.arguments)
    return makeCall(raw.id, fn.name, parsed.value, options, parsed.parseError)
  })
}

/** Results as Chat Completions tool messages, one per call, in order. */
export function toOpenAIChatToolMessages(calls: readonly ToolExecutionInput[], results: readonly ToolExecutionResult[]): OpenAIChatToolMessage[] {
  return pair(calls, results, 'toOpenAIChatToolMessages').map(([call, result]) => ({
    role: 'tool',
    tool_call_id: call.callId,
    content: resultText(result),
  }))
}

/**
 * An agent's wire tools (a view, or a schema list) as Responses `tools` (`strict: false`; code-only tools left out, see
 * {@link toOpenAIChatTools}).
 *
 * @example
 * ```ts
 * await openai.responses.create({ model, input, tools: toOpenAIResponsesTools(runtime.assemble().tools) })
 * ```
 */
export function toOpenAIResponsesTools(tools: ProviderToolsInput): OpenAIResponsesTool[] {
  return checkProviderNames(nativeTools(tools), OPENAI_NAMES, 'toOpenAIResponsesTools').map((tool) => ({
    type: 'function',
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters as unknown as Record<string, unknown>,
    strict: false,
  }))
}

/**
 * The `function_call` items of a Responses `output` as execution inputs (other items are ignored).
 * @example
 * ```ts
 * const calls = parseOpenAIResponsesToolCalls(response.output, { signal })
 * const outputs = toOpenAIResponsesToolOutputs(calls, await runToolCalls(runtime, calls))
 * await openai.responses.create({ model, previous_response_id: response.id, input: outputs, tools })
 * ```
 */
export function parseOpenAIResponsesToolCalls(output: readonly unknown[] | null | undefined, options: ProviderCallOptions): ProviderToolCall[] {
  checkCallOptions(options, 'parseOpenAIResponsesToolCalls')
  if (output === null || output === undefined) return []
  if (!Array.isArray(output)) malformedCall('parseOpenAIResponsesToolCalls', 0, 'list is not an array')
  const calls: ProviderToolCall[] = []
  output.forEach((item, i) => {
    if (!isRecord(item) || item.type !== 'function_call') return
    if (typeof item.call_id !== 'string' || item.call_id === '') malformedCall('parseOpenAIResponsesToolCalls', i, 'has no call_id')
    if (typeof item.name !== 'string' || item.name === '') malformedCall('parseOpenAIResponsesToolCalls', i, 'has no name')
    const parsed = parseJsonArguments(item.arguments)
    calls.push(makeCall(item.call_id, item.name, parsed.value, options, parsed.parseError))
  })
  return calls
}

/** Results as Responses `function_call_output` items; images travel as `input_image` data URLs. */
export function toOpenAIResponsesToolOutputs(calls: readonly ToolExecutionInput[], results: readonly ToolExecutionResult[]): OpenAIResponsesToolOutput[] {
  return pair(calls, results, 'toOpenAIResponsesToolOutputs').map(([call, result]) => {
    const hasImage = result.content.some((block) => block.type === 'image')
    const output: string | OpenAIResponsesOutputPart[] = hasImage
      ? result.content.map((block) =>
          block.type === 'text'
            ? { type: 'input_text', text: block.text }
            : { type: 'input_image', image_url: `data:${block.mimeType};base64,${block.data}`, detail: 'auto' },
        )
      : resultText(result)
    return { type: 'function_call_output', call_id: call.callId, output }
  })
}
