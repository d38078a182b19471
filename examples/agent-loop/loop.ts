/**
 * A minimal provider-neutral agent loop: ask the model, run the tool calls it emits with
 * {@link runToolCalls} (so concurrency-safe calls overlap), append every result to the
 * history, then every result's `additionalContexts` (the seed's post-result FIFO: call
 * order, then each result's own order, so every call stays adjacent to its result),
 * repeat until the model answers. The model is anything implementing
 * {@link LoopModel}; here it is always a scripted one (no network), so every request the
 * loop would send can be recorded and measured.
 *
 * @module
 */
import { ToolError, runToolCalls } from '../../src/index.js'
import type { JsonObject, ToolRuntime, ToolSchema } from '../../src/index.js'

/** One tool call as a model emits it. */
export interface ModelToolCall {
  /** Provider-style call id, unique within a run. */
  readonly id: string
  readonly name: string
  readonly arguments: JsonObject
}

/** The system message: task instructions plus the runtime's assembled prompt sections. */
export interface SystemMessage {
  readonly role: 'system'
  readonly content: string
}

/** The user's question, or an additional context a step deferred (then `source` names who deferred it). */
export interface UserMessage {
  readonly role: 'user'
  readonly content: string
  /** Set on a deferred context: the plugin or tool that produced it. */
  readonly source?: string
}

/** A model turn: text, and the tool calls it asked for (none on the final answer). */
export interface AssistantMessage {
  readonly role: 'assistant'
  readonly content: string
  readonly toolCalls: readonly ModelToolCall[]
}

/** One tool result, exactly the text that re-enters the model's context. */
export interface ToolMessage {
  readonly role: 'tool'
  readonly toolCallId: string
  readonly name: string
  readonly content: string
  readonly isError: boolean
}

/** Any message of the conversation. */
export type ChatMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage

/** What a model may answer with. */
export type ModelTurn =
  | { readonly type: 'tool-calls'; readonly text: string; readonly calls: readonly ModelToolCall[] }
  | { readonly type: 'answer'; readonly text: string }

/** One request the loop sends to the model: the wire tools and the whole history so far. */
export interface ModelRequest {
  /** 0-based position in the run. */
  readonly index: number
  /** The wire tool schemas sent with the request (`tools` parameter of a provider API). */
  readonly tools: readonly ToolSchema[]
  /** A snapshot of the history at the time of the request (system message first). */
  readonly messages: readonly ChatMessage[]
}

/** The model side of the loop. */
export interface LoopModel {
  respond(request: ModelRequest): ModelTurn | Promise<ModelTurn>
}

/** Options of {@link runAgentLoop}. */
export interface AgentLoopOptions {
  /** The runtime whose assembly (wire tools + prompt sections) is offered and which executes calls. */
  readonly runtime: ToolRuntime
  readonly model: LoopModel
  /** Task instructions placed before the runtime's prompt sections in the system message. */
  readonly instructions: string
  /** The user's question. */
  readonly question: string
  /** Requests allowed before the loop gives up (default 16). */
  readonly maxRequests?: number
  /** Cancels in-flight tool calls (default: a 60 s timeout). */
  readonly signal?: AbortSignal
}

/** Everything one loop run produced. */
export interface AgentLoopRun {
  /** The full history, final assistant answer included. */
  readonly messages: readonly ChatMessage[]
  /** Every request sent to the model, in order. */
  readonly requests: readonly ModelRequest[]
  /** The model's final answer text. */
  readonly answer: string
  /** How many tool calls the model emitted (sub-calls inside a `run_code` program not included). */
  readonly toolCalls: number
}

/**
 * Runs the loop to the model's answer.
 *
 * Throws `ToolError('INVALID_OPTIONS')` when the model has not answered after
 * `maxRequests` requests or emits a turn without calls that is not an answer.
 */
export async function runAgentLoop(options: AgentLoopOptions): Promise<AgentLoopRun> {
  const { runtime, model } = options
  const maxRequests = options.maxRequests ?? 16
  if (!Number.isSafeInteger(maxRequests) || maxRequests < 1) {
    throw new ToolError('INVALID_OPTIONS', `maxRequests must be a positive integer (got ${String(maxRequests)})`)
  }
  const signal = options.signal ?? AbortSignal.timeout(60_000)
  const assembly = runtime.assemble()
  const system = [options.instructions, ...assembly.sections.map((section) => section.text)].filter((text) => text.length > 0).join('\n\n')
  const messages: ChatMessage[] = [
    { role: 'system', content: system },
    { role: 'user', content: options.question },
  ]
  const requests: ModelRequest[] = []
  let toolCalls = 0

  for (let index = 0; index < maxRequests; index++) {
    const request: ModelRequest = { index, tools: assembly.tools, messages: [...messages] }
    requests.push(request)
    const turn = await model.respond(request)
    if (turn.type === 'answer') {
      messages.push({ role: 'assistant', content: turn.text, toolCalls: [] })
      return { messages, requests, answer: turn.text, toolCalls }
    }
    if (turn.calls.length === 0) {
      throw new ToolError('INVALID_OPTIONS', `model turn ${index} asked for no tool calls and gave no answer`)
    }
    messages.push({ role: 'assistant', content: turn.text, toolCalls: turn.calls })
    toolCalls += turn.calls.length
    const results = await runToolCalls(
      runtime,
      turn.calls.map((call) => ({ callId: call.id, name: call.name, arguments: call.arguments, signal })),
    )
    turn.calls.forEach((call, i) => {
      const result = results[i]!
      const content = result.content.map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join('\n')
      messages.push({ role: 'tool', toolCallId: call.id, name: call.name, content, isError: result.isError })
    })
    // Deferred contexts only after every result of the step: a provider needs each call's result right after it.
    for (const result of results) {
      for (const context of result.additionalContexts ?? []) messages.push({ role: 'user', content: context.content, source: context.source })
    }
  }
  throw new ToolError('INVALID_OPTIONS', `the model did not answer within ${maxRequests} requests`)
}

/** A script: yields turns, receives the tool messages answering the previous turn's calls (deferred contexts left out). */
export type ModelScript = Generator<ModelTurn, void, readonly ToolMessage[]>

/**
 * Wraps a script as a {@link LoopModel}. On each request the script resumes with the tool
 * messages that follow the last assistant turn: exactly what a real model would read
 * next. Throws `ToolError('INVALID_OPTIONS')` if the script ends without answering.
 */
export function scriptedModel(script: () => ModelScript): LoopModel {
  const generator = script()
  let started = false
  return {
    respond(request) {
      let latest: ToolMessage[] = []
      if (started) {
        let i = request.messages.length - 1
        while (i >= 0 && request.messages[i]!.role !== 'assistant') i--
        latest = request.messages.slice(i + 1).filter((m): m is ToolMessage => m.role === 'tool')
      }
      // The first next() argument is dropped by generators: nothing has been called yet.
      const step = generator.next(latest)
      started = true
      if (step.done === true) throw new ToolError('INVALID_OPTIONS', 'the scripted model ran out of turns without answering')
      return step.value
    },
  }
}
