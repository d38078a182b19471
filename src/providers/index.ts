/**
 * Provider formats: an agent's wire tools (its view, or an assembly's tools) as OpenAI (Chat
 * Completions and Responses), Anthropic and Vercel AI SDK tool definitions.
 * @module
 */
export { InvalidJsonArguments, parseJsonArguments } from './_shared.js'
export type { ProviderCallOptions, ProviderToolCall, ProviderToolsInput } from './_shared.js'
export {
  parseOpenAIChatToolCalls,
  parseOpenAIResponsesToolCalls,
  toOpenAIChatToolMessages,
  toOpenAIChatTools,
  toOpenAIResponsesToolOutputs,
  toOpenAIResponsesTools,
} from './openai.js'
export type { OpenAIChatTool, OpenAIChatToolMessage, OpenAIResponsesOutputPart, OpenAIResponsesTool, OpenAIResponsesToolOutput } from './openai.js'
export { parseAnthropicToolUses, toAnthropicToolResultMessage, toAnthropicToolResults, toAnthropicTools } from './anthropic.js'
export type { AnthropicImageMediaType, AnthropicTool, AnthropicToolResult, AnthropicToolResultContent, AnthropicToolResultMessage } from './anthropic.js'
export { parseVercelToolCalls, toVercelToolMessage, toVercelToolResultParts, toVercelTools, vercelJsonOutput } from './vercel.js'
export type {
  VercelToolContentPart,
  VercelToolDefinition,
  VercelToolMessage,
  VercelToolResultOutput,
  VercelToolResultPart,
  VercelToolsOptions,
} from './vercel.js'
