/**
 * Context accounting for a recorded loop run: what each request puts in front of the
 * model, measured with any counter (characters here, a real tokenizer in the bench).
 *
 * The accounting, precisely:
 * - every request carries the wire tool schemas and the system message (the *prefix*:
 *   in code mode the system message holds the generated SDK), then the history so far;
 * - a message contributes {@link messageText}: a role line, its content, and for an
 *   assistant turn each tool call as `name` + JSON arguments (so the `run_code` program
 *   counts as model output, and as input in every later request);
 * - (a) `inputTotal` = prefix once + Σ over requests of that request's history (as if
 *   the prefix were cached); `inputTotalUncached` = Σ over requests of prefix + history;
 * - (b) `toolResults` = every tool message counted once, when it enters the context;
 *   `toolResultsReread` = tool messages summed over every request that carries them.
 *
 * @module
 */
import type { ToolSchema } from '../../src/index.js'
import type { ChatMessage, ModelRequest } from './loop.js'

/** Measures a text (characters, bytes or tokens). */
export type SizeCounter = (text: string) => number

/** The text a message contributes to a request. */
export function messageText(message: ChatMessage): string {
  switch (message.role) {
    case 'system':
    case 'user':
      return `${message.role}:\n${message.content}`
    case 'assistant':
      return [`assistant:`, message.content, ...message.toolCalls.map((call) => `${call.name} ${JSON.stringify(call.arguments)}`)]
        .filter((part) => part.length > 0)
        .join('\n')
    case 'tool':
      return `tool ${message.name}:\n${message.content}`
  }
}

/** The wire tool schemas as sent (the `tools` parameter, JSON). */
export function toolSchemasText(tools: readonly ToolSchema[]): string {
  return JSON.stringify(tools)
}

/** Per-request figures. */
export interface RequestAccounting {
  readonly index: number
  /** Messages in the request, system message included. */
  readonly messages: number
  /** Size of the history after the system message. */
  readonly history: number
  /** Size of the tool messages in the request. */
  readonly toolResults: number
}

/** Figures of one run (units are whatever the counter measures). */
export interface RunAccounting {
  readonly requests: number
  /** The wire tool schemas, sent with every request. */
  readonly toolSchemas: number
  /** The system message (instructions + prompt sections), sent with every request. */
  readonly system: number
  /** (a) prefix counted once + every request's accumulated history. */
  readonly inputTotal: number
  /** (a, uncached) every request's prefix + accumulated history. */
  readonly inputTotalUncached: number
  /** (b) tool results, each counted once. */
  readonly toolResults: number
  /** (b, re-read) tool results summed over every request that carries them. */
  readonly toolResultsReread: number
  /** What the model generated: every assistant message (calls and program included). */
  readonly output: number
  readonly perRequest: readonly RequestAccounting[]
}

/** Measures a run's requests and final history with `count`. */
export function accountRun(requests: readonly ModelRequest[], messages: readonly ChatMessage[], count: SizeCounter): RunAccounting {
  const cache = new Map<ChatMessage, number>()
  const size = (message: ChatMessage): number => {
    let n = cache.get(message)
    if (n === undefined) cache.set(message, (n = count(messageText(message))))
    return n
  }
  const first = requests[0]
  const toolSchemas = first === undefined ? 0 : count(toolSchemasText(first.tools))
  const systemMessage = messages.find((m) => m.role === 'system')
  const system = systemMessage === undefined ? 0 : size(systemMessage)
  const perRequest = requests.map((request): RequestAccounting => {
    let history = 0
    let toolResults = 0
    for (const message of request.messages) {
      if (message.role === 'system') continue
      history += size(message)
      if (message.role === 'tool') toolResults += size(message)
    }
    return { index: request.index, messages: request.messages.length, history, toolResults }
  })
  const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0)
  const historyTotal = sum(perRequest.map((r) => r.history))
  return {
    requests: requests.length,
    toolSchemas,
    system,
    inputTotal: toolSchemas + system + historyTotal,
    inputTotalUncached: requests.length * (toolSchemas + system) + historyTotal,
    toolResults: sum(messages.filter((m) => m.role === 'tool').map(size)),
    toolResultsReread: sum(perRequest.map((r) => r.toolResults)),
    output: sum(messages.filter((m) => m.role === 'assistant').map(size)),
    perRequest,
  }
}
