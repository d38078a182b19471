/**
 * What every provider adapter shares: the options a parsed call needs, the marker for
 * arguments that are not JSON, and the projection of a result to text.
 *
 * @module
 */
import { ToolError } from '../errors.js'
import { offeredNatively } from '../registry/view.js'
import type { AgentToolView } from '../runtime-types.js'
import type { ContentBlock, ScopeKey, ToolExecutionInput, ToolExecutionResult, ToolSchema } from '../types.js'
import { quoteName } from '../util/unknown-field.js'

/** What the parsers cannot know from a provider's message: the caller's signal and scope. */
export interface ProviderCallOptions {
  /** The cancellation signal every parsed call carries. Required. */
  readonly signal: AbortSignal
  /** The agent layer the calls run in; absent means the global layer. */
  readonly agent?: ScopeKey
}

/** A parsed provider tool call: a `ToolExecutionInput`, plus why its arguments did not parse. */
export interface ProviderToolCall extends ToolExecutionInput {
  /** Set when the provider's argument text was not valid JSON (the call then fails `INVALID_ARGS`). */
  readonly parseError?: string
}

/** Stands in for arguments whose JSON text did not parse. */
export class InvalidJsonArguments {
  /** The text the provider sent. */
  readonly text: string
  /** The parser's complaint. */
  readonly reason: string

  constructor(text: string, reason: string) {
    this.text = text
    this.reason = reason
    Object.freeze(this)
  }
}

/** Parses a provider's JSON argument string. Empty text means no arguments (`{}`). Never throws. */
export function parseJsonArguments(text: unknown): { readonly value: unknown; readonly parseError?: string } {
  if (typeof text !== 'string') {
    const reason = `the arguments are a ${text === null ? 'null' : typeof text}, not a JSON string`
    return { value: new InvalidJsonArguments(String(text), reason), parseError: reason }
  }
  if (text.trim() === '') return { value: {} }
  try {
    return { value: JSON.parse(text) as unknown }
  } catch (error) {
    const reason = error instanceof Error ? error.message : 'invalid JSON'
    return { value: new InvalidJsonArguments(text, reason), parseError: reason }
  }
}

/** Checks the options the parsers take. */
export function checkCallOptions(options: ProviderCallOptions, where: string): void {
  if (typeof options !== 'object' || options === null || !(options.signal instanceof AbortSignal)) {
    throw new ToolError('INVALID_OPTIONS', `${where}: options.signal must be an AbortSignal`)
  }
  if (options.agent !== undefined && (typeof options.agent !== 'string' || options.agent === '')) {
    throw new ToolError('INVALID_OPTIONS', `${where}: options.agent must be a non-empty string`)
  }
}

/** Builds one parsed call. */
export function makeCall(callId: string, name: string, args: unknown, options: ProviderCallOptions, parseError?: string): ProviderToolCall {
  return Object.freeze({
    callId,
    name,
    arguments: args,
    signal: options.signal,
    ...(options.agent === undefined ? {} : { agent: options.agent }),
    ...(parseError === undefined ? {} : { parseError }),
  })
}

/** A provider's tool call that cannot be answered (no id or no name). */
export function malformedCall(where: string, index: number, what: string): never {
  throw new ToolError('INVALID_EXECUTION', `${where}: tool call ${index} ${what}`)
}

/** Pairs calls with their results (same order, same length), as `runToolCalls` returns them. */
export function pair(calls: readonly ToolExecutionInput[], results: readonly ToolExecutionResult[], where: string): [ToolExecutionInput, ToolExecutionResult][] {
  if (!Array.isArray(calls) || !Array.isArray(results) || calls.length !== results.length) {
    throw new ToolError('INVALID_OPTIONS', `${where}: calls and results must be arrays of the same length (one result per call, in order)`)
  }
  return calls.map((call, i) => [call, results[i]!])
}

/** A placeholder for an image a provider's tool-result format cannot carry. */
export function imagePlaceholder(block: Extract<ContentBlock, { type: 'image' }>): string {
  return `[image ${block.mimeType} omitted: this tool-result format carries text only]`
}

/** The result's content as one text (images become placeholders). */
export function resultText(result: ToolExecutionResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : imagePlaceholder(block))).join('\n')
}


/**
 * What the `to…Tools` adapters take: an agent's view (`runtime.view(agent)`: its
 * `wireTools` are offered), or a schema list (`runtime.assemble().tools`, a list fetched
 * from `GET /v1/tools`…).
 */
export type ProviderToolsInput = readonly ToolSchema[] | Pick<AgentToolView, 'wireTools'>

/** The tools a model may call directly. */
export function nativeTools(tools: ProviderToolsInput): readonly ToolSchema[] {
  if (isToolList(tools)) return tools.filter(offeredNatively)
  if (typeof tools !== 'object' || tools === null || !Array.isArray(tools.wireTools)) {
    throw new ToolError('INVALID_OPTIONS', 'tools must be a schema list or an agent view (runtime.view(agent))')
  }
  return tools.wireTools
}

function isToolList(tools: ProviderToolsInput): tools is readonly ToolSchema[] {
  return Array.isArray(tools)
}

/** The tool names a provider documents that it accepts. */
export interface ProviderNameRule {
  /** The provider, as its message names it (`OpenAI`). */
  readonly provider: string
  /** The most characters a name may have. */
  readonly maxLength: number
}

/** The characters OpenAI and Anthropic both accept in a tool name: ASCII letters, digits, `_` and `-`. */
const NAME_CHARACTERS = /^[a-zA-Z0-9_-]+$/

/**
 * `tools`, after refusing any whose name the provider does not accept
 * (`^[a-zA-Z0-9_-]{1,maxLength}$`): the registry takes any non-empty name (`my tool`), and the
 * provider would otherwise answer the whole request with a 400 of its own, far from the tool.
 * Throws `UNSUPPORTED_TOOL` naming the tool and the rule.
 */
export function checkProviderNames(tools: readonly ToolSchema[], rule: ProviderNameRule, where: string): readonly ToolSchema[] {
  for (const tool of tools) {
    const name = tool.name
    if (typeof name === 'string' && name.length <= rule.maxLength && NAME_CHARACTERS.test(name)) continue
    const pattern = `^[a-zA-Z0-9_-]{1,${rule.maxLength}}$`
    throw new ToolError(
      'UNSUPPORTED_TOOL',
      `${where}: tool ${typeof name === 'string' ? quoteName(name) : String(name)} cannot be offered to ${rule.provider}: its tool names must match ${pattern} (ASCII letters, digits, _ and -, at most ${rule.maxLength} characters); register the tool under such a name`,
    )
  }
  return tools
}
