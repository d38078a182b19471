/**
 * The MCP export: the registry as a stateless MCP server over Streamable HTTP (a Hono app,
 * web standards only): `initialize`, `ping`, `tools/list`, `tools/call`, and elicitation for
 * approvals (`_elicitation.ts`). docs/mcp.md documents the mapping.
 * @module
 */
import { Hono } from 'hono'
import type { Context } from 'hono'
import { methodNotAllowed } from 'hono/method-not-allowed'
import { DEFAULT_APPROVAL_TIMEOUT_MS } from '../approvals/broker.js'
import { RUN_CODE_TOOL_NAME } from '../code-mode/registry-seam.js'
import { SDK_SECTION, CODE_ONLY_SECTION } from '../registry/assembly.js'
import { ToolError, toErrorData } from '../errors.js'
import type { ToolRuntime } from '../runtime-types.js'
import type { ApprovalHandler, ScopeKey, ToolSchema } from '../types.js'
import type { ObjectJsonSchema } from '../schema/json-schema-node.js'
import { hasRole } from '../http/auth.js'
import type { Principal } from '../http/auth.js'
import { agentFor, requestPrincipal, requireRole } from '../http/_principals.js'
import { HttpError, httpErrorHandler, httpNotFound } from '../http/http-errors.js'
import type { InternalErrorReporter } from '../http/http-errors.js'
import { readJsonBody, unknownFieldMessage } from '../http/request-body.js'
import { SERVER_OPTION_KEYS, checkRuntime, optionsError, resolveServerOptions, serverGate, type ResolvedServerOptions, type ServerOptions } from '../http/_server-options.js'
import { wantsEventStream } from '../http/_routes.js'
import { sseResponse } from '../http/_sse-sender.js'
import { ElicitationChannel, cannotAsk, elicitingSession, elicitingSessionOf, type SendToClient } from './_elicitation.js'
import { blocksToMcpContent, isJsonObject } from './content.js'
import type { McpCallToolResultOut, McpToolDescriptor } from './mcp-types.js'
import { traceCarrierOf } from '../telemetry/trace-context.js'
import { isRecord, positiveInteger } from '../util/guards.js'
import { utf8Length } from '../util/utf8.js'

/** The MCP protocol revisions this server speaks, newest first. */
export const MCP_PROTOCOL_VERSIONS: readonly string[] = Object.freeze(['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'])

/**
 * What only the MCP endpoint takes (`createToolsApp(runtime, { mcp })`, or besides the
 * shared options in {@link McpAppOptions}). An `ask` is put to a client whose token has
 * `approve` (`elicitation/create`), under the runtime's `approvals.timeoutMs` and `plans`.
 */
export interface McpOptions {
  /**
   * The agent layer served: a fixed id, or a function of the request (e.g. a header or a
   * path parameter). Absent → the global layer. A token pinned to an agent is served its
   * agent; asking for another answers 403 `FORBIDDEN`.
   */
  readonly agent?: ScopeKey | ((request: Request) => ScopeKey | undefined)
  /** The most messages one JSON-RPC batch may carry (a longer one is one `-32600` error, nothing run). Default 32. */
  readonly maxBatchLength?: number
  /**
   * The most bytes the responses to one batch may total. A response that would pass it is
   * replaced by a `-32000` error, and the batch's later requests are not run. A single
   * message is bounded by the runtime's `maxOutputBytes` instead. Default 4 MiB.
   */
  readonly maxBatchResponseBytes?: number
  /** What `initialize` reports as `serverInfo`. Default `{ name: 'toolyard', version: '0.1.0' }`. */
  readonly serverInfo?: { readonly name: string; readonly version: string }
  /** Optional `instructions` returned by `initialize`. */
  readonly instructions?: string
}

/**
 * Options of {@link createMcpApp}: the HTTP API's {@link ServerOptions} (same names, same
 * rules: tokens, `cors.origins`, `signal`, bounds, `onError`) and the {@link McpOptions}.
 * Every request needs the `run` role.
 */
export interface McpAppOptions extends ServerOptions, McpOptions {}

/** JSON-RPC error codes the server answers with. */
export const JSON_RPC_ERRORS = Object.freeze({
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  /** (server-defined) A batch's responses reached `maxBatchResponseBytes`. */
  RESPONSE_TOO_LARGE: -32000,
})

/** Default {@link McpAppOptions.maxBatchLength}. */
export const DEFAULT_MCP_MAX_BATCH_LENGTH = 32
/** Default {@link McpAppOptions.maxBatchResponseBytes}: 4 MiB. */
export const DEFAULT_MCP_MAX_BATCH_RESPONSE_BYTES = 4 * 1024 * 1024

/** The members of a JSON-RPC 2.0 request or notification (anything else is refused, named). */
const REQUEST_MEMBERS: readonly string[] = ['jsonrpc', 'id', 'method', 'params']
/** The members of `tools/call` params (MCP's `CallToolRequestParams`). */
const CALL_PARAMS: readonly string[] = ['name', 'arguments', '_meta']

type JsonRpcId = string | number

interface JsonRpcResponse {
  readonly jsonrpc: '2.0'
  readonly id: JsonRpcId | null
  readonly result?: unknown
  readonly error?: { readonly code: number; readonly message: string }
}

class RpcError extends Error {
  constructor(
    readonly rpcCode: number,
    message: string,
  ) {
    super(message)
  }
}

/**
 * The wire tools `agent` sees under its presentation mode, as MCP tools. Under `code` and
 * `both`, `run_code`'s description carries the prompt's code-only rule and SDK sections,
 * since an MCP client has no other channel for them. An object-rooted output schema is
 * declared as `outputSchema` (each success then carries it as `structuredContent`).
 */
export function listMcpTools(runtime: ToolRuntime, agent?: ScopeKey): McpToolDescriptor[] {
  return mcpToolsOf(runtime, agent, (tool, description, output) => ({
    name: tool.name,
    description,
    inputSchema: tool.parameters,
    ...(output !== undefined && output.type === 'object' ? { outputSchema: output as ObjectJsonSchema } : {}),
  }))
}

/** Maps each wire tool of `agent`, with its MCP description and output schema, through `each`. */
function mcpToolsOf<T>(runtime: ToolRuntime, agent: ScopeKey | undefined, each: (tool: ToolSchema, description: string, output: JsonSchemaLike | undefined) => T): T[] {
  // The assembly's tools are the agent's view's wire tools (after `toolOrder` and the
  // assemble listeners, which are authoritative); the view answers each one's output.
  const assembly = runtime.assemble(agent)
  const view = runtime.view(agent)
  const extra = assembly.sections
    .filter((section) => (section.id === SDK_SECTION.id || section.id === CODE_ONLY_SECTION.id) && section.text !== '')
    .map((section) => section.text)
  return assembly.tools.map((tool: ToolSchema) => {
    const description = tool.name === RUN_CODE_TOOL_NAME && extra.length > 0 ? [tool.description, ...extra].join('\n\n') : tool.description
    return each(tool, description, view.get(tool.name)?.output.schema)
  })
}

type JsonSchemaLike = { readonly type?: unknown }

/** One tool's serialized MCP descriptor, valid while its description and output schema are the same. */
interface SerializedTool extends SerializedResult {
  readonly description: string
  readonly output: unknown
}

/**
 * Serialized descriptors of deep-frozen tools (the registry's own never change; a listener's
 * may be new objects each time, then nothing is reused): a repeated `tools/list` costs a
 * join, not a JSON.stringify of every schema in one turn.
 */
const serializedTools = new WeakMap<ToolSchema, SerializedTool>()

function deepFrozen(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true
  if (!Object.isFrozen(value)) return false
  for (const child of Object.values(value)) if (!deepFrozen(child)) return false
  return true
}

/** A result already serialized (`tools/list`): BatchResponses sends its text as is. */
class SerializedAnswer implements SerializedResult {
  constructor(
    readonly text: string,
    readonly bytes: number,
  ) {}
}

/** One wire tool as `tools/list` describes it: the answer is unchanged while every one of these is. */
interface ListedTool {
  readonly tool: ToolSchema
  readonly description: string
  readonly output: JsonSchemaLike | undefined
}

/** A runtime's last `tools/list` answers, per agent (a few: a miss costs a join of cached descriptors). */
const listedAnswers = new WeakMap<ToolRuntime, Map<ScopeKey | undefined, { readonly tools: readonly ListedTool[]; readonly answer: SerializedAnswer }>>()
const MAX_LISTED_AGENTS = 8
/** The longest stretch of descriptor serialization in one host turn. */
const LIST_SLICE_MS = 2

function sameTools(a: readonly ListedTool[], b: readonly ListedTool[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i]!.tool !== b[i]!.tool || a[i]!.output !== b[i]!.output || a[i]!.description !== b[i]!.description) return false
  return true
}

/**
 * `listMcpTools` as the JSON text of `{ tools }`: the last answer while no tool changed, else each
 * unchanged tool's serialized descriptor, the others serialized in slices of {@link LIST_SLICE_MS}
 * with a host turn between (300 new descriptors took ~10 ms in one turn).
 */
async function listMcpToolsSerialized(runtime: ToolRuntime, agent: ScopeKey | undefined): Promise<SerializedAnswer> {
  const tools = mcpToolsOf(runtime, agent, (tool, description, output): ListedTool => ({ tool, description, output }))
  const answers = listedAnswers.get(runtime) ?? new Map()
  listedAnswers.set(runtime, answers)
  const last = answers.get(agent)
  if (last !== undefined && sameTools(last.tools, tools)) return last.answer
  let bytes = '{"tools":[]}'.length
  const texts: string[] = []
  // Only an answer made of cached descriptors is kept: a tool that is not deep-frozen may change in place.
  let keep = true
  let sliceStart = performance.now()
  for (const { tool, description, output } of tools) {
    let cached = serializedTools.get(tool)
    if (cached === undefined || cached.description !== description || cached.output !== output) {
      if (performance.now() - sliceStart > LIST_SLICE_MS) {
        await yieldToHost()
        sliceStart = performance.now()
      }
      const text = JSON.stringify({
        name: tool.name,
        description,
        inputSchema: tool.parameters,
        ...(output !== undefined && output.type === 'object' ? { outputSchema: output } : {}),
      })
      cached = { text, bytes: utf8Length(text), description, output }
      if (deepFrozen(tool) && deepFrozen(output)) serializedTools.set(tool, cached)
      else keep = false
    }
    bytes += cached.bytes
    texts.push(cached.text)
  }
  if (texts.length > 1) bytes += texts.length - 1
  const answer = new SerializedAnswer(`{"tools":[${texts.join(',')}]}`, bytes)
  if (keep) {
    answers.delete(agent)
    if (answers.size >= MAX_LISTED_AGENTS) answers.delete(answers.keys().next().value)
    answers.set(agent, { tools, answer })
  }
  return answer
}

/**
 * Runs one `tools/call` through the whole pipeline and maps the result to MCP: content
 * (text / image), `structuredContent` = the canonical value when it is an object, and
 * `isError` for every failure. A name no visible tool answers to is a JSON-RPC
 * `-32602` error (the MCP spec's "unknown tool"), carrying the pipeline's message.
 * `approval`, when given, decides the call's `ask`s (and those of a `run_code` program's
 * sub-calls) instead of the registry's handler. `principal` (a non-secret label) is
 * recorded on the call's approval requests.
 */
export async function callMcpTool(
  runtime: ToolRuntime,
  params: unknown,
  signal: AbortSignal,
  agent?: ScopeKey,
  approval?: ApprovalHandler,
  principal?: string,
): Promise<McpCallToolResultOut> {
  if (!isRecord(params) || typeof params.name !== 'string') throw new RpcError(JSON_RPC_ERRORS.INVALID_PARAMS, 'tools/call needs params.name (a string)')
  // A misspelt `arguments` would otherwise run the tool with none.
  const unknown = unknownFieldMessage(params, CALL_PARAMS, 'tools/call params')
  if (unknown !== undefined) throw new RpcError(JSON_RPC_ERRORS.INVALID_PARAMS, unknown)
  const args = params.arguments === undefined ? {} : params.arguments
  // The client's W3C trace context (`_meta.traceparent`): the call's span joins its trace.
  const trace = traceCarrierOf(params._meta)
  const result = await runtime.execute({
    callId: `mcp-${crypto.randomUUID()}`,
    name: params.name,
    arguments: args,
    signal,
    ...(agent === undefined ? {} : { agent }),
    ...(approval === undefined ? {} : { approval }),
    ...(trace === undefined ? {} : { trace }),
    ...(principal === undefined ? {} : { principal }),
  })
  if (result.isError) {
    if (result.error.info?.code === 'UNKNOWN_TOOL') throw new RpcError(JSON_RPC_ERRORS.INVALID_PARAMS, result.error.message)
    return { content: blocksToMcpContent(result.content), isError: true }
  }
  return {
    content: blocksToMcpContent(result.content),
    ...(isJsonObject(result.value) ? { structuredContent: result.value } : {}),
  }
}

interface McpConfig {
  readonly runtime: ToolRuntime
  readonly report: InternalErrorReporter
  readonly agent: McpAppOptions['agent']
  readonly shutdown: AbortSignal | undefined
  readonly serverInfo: { readonly name: string; readonly version: string }
  readonly instructions: string | undefined
  /** The questions put to clients (`elicitation/create`) that wait for an answer. */
  readonly elicitation: ElicitationChannel
}

/** What one POST knows about its client, for the messages it carries. */
interface Exchange {
  /** Who sent it (the gate's answer). */
  readonly principal: Principal
  /** The session of a client that declared elicitation (from `Mcp-Session-Id`). */
  readonly session: string | undefined
  /** Sends to the client on this POST's event stream; absent when the answer is plain JSON. */
  readonly send: SendToClient | undefined
  /** Cancels this POST's calls when its event stream is cancelled. */
  readonly cancelled: AbortSignal | undefined
  /** The agent served (the one asked for, as its token may act), or why the resolver's answer is refused. */
  readonly served: ServedAgent
  /** Set by `initialize` for a client that declared elicitation: the session id to answer with. */
  issued: string | undefined
  /** `tools/list` answered once per POST: a batch repeating it costs one assembly. */
  listed?: { readonly agent: ScopeKey | undefined; readonly result: SerializedAnswer }
}

/**
 * The key of an exchange's questions and tracked calls: its session *and* its principal.
 * A session id is only a header, so a client of another token that learned it (a log, a
 * proxy) must never answer, or cancel, the questions put to this principal.
 */
function channelKey(exchange: Exchange): string | undefined {
  return exchange.session === undefined ? undefined : `${exchange.principal.id}\n${exchange.session}`
}

/**
 * Who decides a `tools/call`'s `ask`: the client through `elicitation/create`, nobody
 * (denied, saying why), or — for a client whose token lacks `approve` — the runtime's own
 * handler (`undefined`): a `run` token never answers its own calls' questions.
 */
function approvalFor(config: McpConfig, exchange: Exchange): ApprovalHandler | undefined {
  if (!hasRole(exchange.principal, 'approve')) return undefined
  if (exchange.session === undefined) {
    return cannotAsk('this MCP client cannot be asked: it did not declare the elicitation capability')
  }
  if (exchange.send === undefined) {
    return cannotAsk('this MCP client could not be asked: the request does not accept text/event-stream')
  }
  return config.elicitation.asker(channelKey(exchange)!, exchange.send)
}

/** The agent asked for `request`: the fixed id, or the resolver's answer (checked). */
function askedAgent(config: McpConfig, request: Request): ScopeKey | undefined {
  const option = config.agent
  if (option === undefined || typeof option === 'string') return option
  const agent = option(request)
  if (agent !== undefined && (typeof agent !== 'string' || agent === '')) throw new RpcError(JSON_RPC_ERRORS.INVALID_REQUEST, 'the agent resolver returned an invalid id')
  return agent
}

/** The agent of one POST, or the resolver's refusal (answered per message, as JSON-RPC). */
interface ServedAgent {
  readonly agent?: ScopeKey
  readonly error?: RpcError
}

/**
 * The agent served to this POST's principal: what the option asks, unless the token is
 * pinned to an agent (then that one; another answers 403 `FORBIDDEN` before the body is read).
 */
function servedAgent(config: McpConfig, c: Context): ServedAgent {
  let asked: ScopeKey | undefined
  try {
    asked = askedAgent(config, c.req.raw)
  } catch (error) {
    if (error instanceof RpcError) return { error }
    throw error
  }
  const agent = agentFor(c, asked)
  return agent === undefined ? {} : { agent }
}

function agentOf(exchange: Exchange): ScopeKey | undefined {
  if (exchange.served.error !== undefined) throw exchange.served.error
  return exchange.served.agent
}

async function dispatch(config: McpConfig, message: Record<string, unknown>, request: Request, exchange: Exchange): Promise<unknown> {
  const { method, params } = message
  switch (method) {
    case 'initialize': {
      const requested = isRecord(params) ? params.protocolVersion : undefined
      const protocolVersion = typeof requested === 'string' && MCP_PROTOCOL_VERSIONS.includes(requested) ? requested : MCP_PROTOCOL_VERSIONS[0]!
      exchange.issued = elicitingSession(params, protocolVersion) ?? exchange.issued
      return {
        protocolVersion,
        capabilities: { tools: { listChanged: false } },
        serverInfo: { name: config.serverInfo.name, version: config.serverInfo.version },
        ...(config.instructions === undefined ? {} : { instructions: config.instructions }),
      }
    }
    case 'ping':
      return {}
    case 'tools/list': {
      const agent = agentOf(exchange)
      if (exchange.listed === undefined || exchange.listed.agent !== agent) exchange.listed = { agent, result: await listMcpToolsSerialized(config.runtime, agent) }
      // The same object each time: the batch serializes it once (BatchResponses).
      return exchange.listed.result
    }
    case 'tools/call': {
      const tracked = exchange.session === undefined ? undefined : config.elicitation.track(channelKey(exchange)!, message.id as string | number)
      const signals = [request.signal, config.shutdown, exchange.cancelled, tracked?.signal].filter((s): s is AbortSignal => s !== undefined)
      const signal = signals.length === 1 ? request.signal : AbortSignal.any(signals)
      try {
        return await callMcpTool(config.runtime, params, signal, agentOf(exchange), approvalFor(config, exchange), exchange.principal.id)
      } finally {
        tracked?.done()
      }
    }
    default:
      throw new RpcError(JSON_RPC_ERRORS.METHOD_NOT_FOUND, `method not found: ${typeof method === 'string' ? method : '?'}`)
  }
}

/**
 * The JSON-RPC answer to one message; `undefined` for notifications and the client's
 * responses (an answer to one of our `elicitation/create` questions settles it).
 */
async function answer(config: McpConfig, message: unknown, request: Request, exchange: Exchange): Promise<JsonRpcResponse | undefined> {
  if (!isRecord(message) || message.jsonrpc !== '2.0') {
    return { jsonrpc: '2.0', id: null, error: { code: JSON_RPC_ERRORS.INVALID_REQUEST, message: 'not a JSON-RPC 2.0 message' } }
  }
  if (!Object.hasOwn(message, 'method')) {
    config.elicitation.receive(message, channelKey(exchange))
    return undefined
  }
  if (message.method === 'notifications/cancelled') config.elicitation.cancel(channelKey(exchange), message.params)
  if (!Object.hasOwn(message, 'id') || typeof message.method !== 'string') return undefined
  const id = message.id
  if (typeof id !== 'string' && (typeof id !== 'number' || !Number.isFinite(id))) {
    return { jsonrpc: '2.0', id: null, error: { code: JSON_RPC_ERRORS.INVALID_REQUEST, message: 'the id must be a string or a number' } }
  }
  const unknown = unknownFieldMessage(message, REQUEST_MEMBERS, 'the JSON-RPC request')
  if (unknown !== undefined) return { jsonrpc: '2.0', id, error: { code: JSON_RPC_ERRORS.INVALID_REQUEST, message: unknown } }
  try {
    return { jsonrpc: '2.0', id, result: await dispatch(config, message, request, exchange) }
  } catch (error) {
    // A failure of one call is that call's JSON-RPC error; the other messages of a batch go on.
    if (error instanceof RpcError) return { jsonrpc: '2.0', id, error: { code: error.rpcCode, message: error.message } }
    if (error instanceof ToolError && (error.code === 'ASSEMBLY_FAILED' || error.code === 'DISPOSED')) {
      return { jsonrpc: '2.0', id, error: { code: JSON_RPC_ERRORS.INTERNAL_ERROR, message: `${error.code}: ${error.message}` } }
    }
    // Unexpected: the client learns only the error's name; the operator gets the error.
    config.report(error, request)
    return { jsonrpc: '2.0', id, error: { code: JSON_RPC_ERRORS.INTERNAL_ERROR, message: `internal error (${toErrorData(error).name})` } }
  }
}

interface McpAppConfig extends McpConfig, ResolvedServerOptions {
  readonly maxBatchLength: number
  readonly maxBatchResponseBytes: number
}

const MCP_FIELDS: readonly string[] = ['agent', 'maxBatchLength', 'maxBatchResponseBytes', 'serverInfo', 'instructions']

/** The runtime's approval settings, which a client's elicitation follows. */
function askingOf(runtime: ToolRuntime): { readonly timeoutMs: number; readonly plans: boolean } {
  const handler = runtime.options.approval as { readonly acceptsPlans?: unknown } | undefined
  return { timeoutMs: runtime.approvals?.timeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS, plans: handler?.acceptsPlans === true }
}

function validateMcpOptions(runtime: ToolRuntime, server: ResolvedServerOptions, options: McpOptions, fail: (message: string) => never): McpAppConfig {
  if (typeof runtime.assemble !== 'function') fail('runtime must be a ToolRuntime (from createToolRuntime)')
  const agent = options.agent
  if (agent !== undefined && typeof agent !== 'function' && (typeof agent !== 'string' || agent === '')) {
    fail('agent must be a non-empty string or a function of the request')
  }
  const serverInfo = options.serverInfo ?? { name: 'toolyard', version: '0.1.0' }
  if (!isRecord(serverInfo) || typeof serverInfo.name !== 'string' || typeof serverInfo.version !== 'string') fail('serverInfo must be { name, version } strings')
  if (options.instructions !== undefined && typeof options.instructions !== 'string') fail('instructions must be a string')
  const asking = askingOf(runtime)
  return {
    ...server,
    runtime,
    agent,
    serverInfo,
    instructions: options.instructions,
    maxBatchLength: positiveInteger('maxBatchLength', options.maxBatchLength, DEFAULT_MCP_MAX_BATCH_LENGTH, fail),
    maxBatchResponseBytes: positiveInteger('maxBatchResponseBytes', options.maxBatchResponseBytes, DEFAULT_MCP_MAX_BATCH_RESPONSE_BYTES, fail),
    elicitation: new ElicitationChannel(asking.timeoutMs, asking.plans),
  }
}

/** Lets the host's other requests in between a batch's messages (`/v1/health` must not wait for a whole batch). */
function yieldToHost(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0))
}

function isHighSurrogate(unit: number): boolean {
  return (unit & 0xfc00) === 0xd800
}

/** One serialized result and its UTF-8 bytes, counted once however often a batch repeats it. */
interface SerializedResult {
  readonly text: string
  readonly bytes: number
}

/**
 * The byte budget of one batch's responses (issue: a batch of 12,000 `tools/list` once
 * answered 212 MiB). Each response is serialized once, here; past the budget a response
 * becomes a short `-32000` error, and the batch's later requests are not run at all.
 */
class BatchResponses {
  readonly #cap: number | undefined
  #bytes = 0
  /** Set once a response did not fit: the later requests of the batch are answered unrun. */
  spent = false
  /**
   * Each kept response as its pieces, for a JSON answer (a stream sends each at once and
   * keeps none): a repeated result is one shared string, never copied into its envelope.
   */
  readonly kept: string[][] = []
  readonly #keep: boolean
  /** Results already serialized in this batch (a repeated `tools/list` answers the same object). */
  readonly #results = new Map<unknown, SerializedResult>()

  constructor(cap: number | undefined, keep: boolean) {
    this.#cap = cap
    this.#keep = keep
  }

  #tooLarge(id: JsonRpcId | null): JsonRpcResponse {
    const message = `not answered: the responses to this batch reached maxBatchResponseBytes (${this.#cap} bytes); send fewer or smaller requests per batch`
    return { jsonrpc: '2.0', id, error: { code: JSON_RPC_ERRORS.RESPONSE_TOO_LARGE, message } }
  }

  /** The error answering a request that is not run because the budget is spent (`undefined`: not a request). */
  unrun(message: unknown): JsonRpcResponse | undefined {
    if (!isRecord(message) || typeof message.method !== 'string' || !Object.hasOwn(message, 'id')) return undefined
    const id = message.id
    return this.#tooLarge(typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null)
  }

  /** `response` as pieces whose concatenation is `JSON.stringify(response)`, and their UTF-8 bytes once counted. */
  #serialize(response: JsonRpcResponse): { readonly pieces: string[]; readonly bytes: () => number } {
    if (response.error !== undefined || typeof response.result !== 'object' || response.result === null) {
      const text = JSON.stringify(response)
      return { pieces: [text], bytes: () => utf8Length(text) }
    }
    let result = response.result instanceof SerializedAnswer ? response.result : this.#results.get(response.result)
    if (result === undefined) {
      const text = JSON.stringify(response.result)
      result = { text, bytes: utf8Length(text) }
      this.#results.set(response.result, result)
    }
    // The key order of JSON.stringify(response): jsonrpc, id, result.
    const head = `{"jsonrpc":"2.0","id":${JSON.stringify(response.id)},"result":`
    const counted = result.bytes
    return { pieces: [head, result.text, '}'], bytes: () => utf8Length(head) + counted + 1 }
  }

  /** Adds `response` to the batch, or its replacement error when it does not fit; returns the text. */
  add(response: JsonRpcResponse): string {
    const serialized = this.#serialize(response)
    let pieces = serialized.pieces
    if (this.#cap !== undefined) {
      let length = 0
      for (const piece of pieces) length += piece.length
      // A string is never shorter in UTF-8: past the budget by its length alone, it is past it.
      const room = this.#cap - this.#bytes
      if (this.#bytes + (length > room ? length : serialized.bytes()) > this.#cap) {
        this.spent = true
        pieces = [JSON.stringify(this.#tooLarge(response.id))]
        length = pieces[0]!.length
      }
      this.#bytes += length
    }
    if (this.#keep) this.kept.push(pieces)
    // A concatenation, not a copy: the text is only read when it is sent.
    return pieces.length === 1 ? pieces[0]! : pieces[0]! + pieces[1]! + pieces[2]!
  }
}

/** The most UTF-16 units of a JSON answer encoded in one pull (a turn of the host between pulls). */
const ANSWER_CHUNK_CHARS = 64 * 1024

/**
 * A batch's answer (`array` false: one large response) as a stream of pieces, one per pull, never
 * spanning two responses: a socket that takes each write at once pulled a whole 4 MiB answer in
 * one turn, 250 KiB `tools/list` responses each encoded whole (four answers at once stalled the host 29 ms).
 */
function jsonArrayStream(responses: string[][], array = true): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  let response = 0
  let piece = 0
  let offset = 0
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (response > 0 || piece > 0 || offset > 0) await yieldToHost()
      if (response === responses.length) {
        controller.close()
        return
      }
      const pieces = responses[response]!
      let chunk = piece === 0 && offset === 0 && array ? (response === 0 ? '[' : ',') : ''
      while (piece < pieces.length) {
        const text = pieces[piece]!
        let end = Math.min(text.length, offset + ANSWER_CHUNK_CHARS - chunk.length)
        // Never between a surrogate pair's halves: each half alone would be encoded as U+FFFD.
        if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end--
        if (end <= offset) break
        chunk += text.slice(offset, end)
        if (end < text.length) {
          offset = end
          break
        }
        piece++
        offset = 0
      }
      if (piece === pieces.length) {
        // Released as written: the stream holds only what the client has not taken yet.
        responses[response] = []
        response++
        piece = 0
        if (response === responses.length && array) chunk += ']'
      }
      controller.enqueue(encoder.encode(chunk))
    },
  })
}

/** The one error answering a batch longer than `maxBatchLength` (nothing in it runs). */
function batchTooLong(length: number, max: number): JsonRpcResponse {
  return {
    jsonrpc: '2.0',
    id: null,
    error: { code: JSON_RPC_ERRORS.INVALID_REQUEST, message: `a JSON-RPC batch of ${length} messages exceeds maxBatchLength (${max}); nothing in it was run: send at most ${max} messages per request` },
  }
}

/** Answers `messages` in order into `responses`, yielding to the host between them; `emit` sees each response's text. */
async function answerAll(
  config: McpConfig,
  messages: readonly unknown[],
  request: Request,
  exchange: Exchange,
  responses: BatchResponses,
  emit?: (text: string) => void,
): Promise<void> {
  for (let i = 0; i < messages.length; i++) {
    if (i > 0) await yieldToHost()
    const message = messages[i]
    const answered = responses.spent ? responses.unrun(message) : await answer(config, message, request, exchange)
    if (answered === undefined) continue
    // Not `emit?.(responses.add(…))`: an optional call skips evaluating its argument.
    const text = responses.add(answered)
    if (emit !== undefined) emit(text)
  }
}

function isToolsCall(message: unknown): boolean {
  return isRecord(message) && message.method === 'tools/call' && Object.hasOwn(message, 'id')
}

/**
 * Answers a POST that carries a `tools/call` from an eliciting client as an event stream:
 * the questions a call puts to the client (`elicitation/create`) go out on it while the
 * call waits, then each JSON-RPC response. A cancelled stream cancels the calls.
 */
function streamAnswers(c: Context, config: McpAppConfig, messages: readonly unknown[], session: string, batch: boolean, served: ServedAgent): Response {
  const cancelled = new AbortController()
  const options = {
    maxBacklogBytes: config.maxStreamBacklogBytes,
    writeTimeoutMs: config.streamWriteTimeoutMs,
    finalFrame: (dropped: number) =>
      `event: error\ndata: ${JSON.stringify({ error: { code: 'STREAM_BACKLOG', message: `this stream fell behind: ${dropped} bytes of messages were not read in time (maxStreamBacklogBytes ${config.maxStreamBacklogBytes}) and were dropped; its calls were cancelled` } })}\n\n`,
    // Nobody can answer its questions or read its results any more: as if the client went away.
    onFallBehind: () => cancelled.abort(new DOMException('the MCP client fell behind', 'AbortError')),
    onClientGone: () => cancelled.abort(new DOMException('the MCP client went away', 'AbortError')),
  }
  // The API's one event stream (`_sse-sender.ts`): queued in order, a backlog cap, the same headers.
  return sseResponse(c, options, async (sender) => {
    const write = (json: string): void => sender.send(`event: message\ndata: ${json}\n\n`)
    const send: SendToClient = (message) => write(JSON.stringify(message))
    const exchange: Exchange = { principal: requestPrincipal(c), served, session, send, cancelled: cancelled.signal, issued: undefined }
    await answerAll(config, messages, c.req.raw, exchange, new BatchResponses(batch ? config.maxBatchResponseBytes : undefined, false), write)
  })
}

const channels = new WeakMap<Hono, ElicitationChannel>()

/**
 * What an MCP app holds per call and per question right now (`undefined` for another
 * app): both fall back to 0 once their calls end. For leak checks in tests and health
 * probes; nothing else about the app is reachable through it.
 */
export function mcpAppHeld(app: Hono): { readonly questions: number; readonly calls: number } | undefined {
  return channels.get(app)?.size
}

/**
 * Creates the MCP endpoint as a Hono app whose route is `/`, served alone or mounted
 * (`createToolsApp(runtime, { mcp: true })` mounts it at `/mcp` behind the same options).
 * It runs the HTTP API's gate (origin, availability, bearer token, response headers) and
 * renders errors in the API's shape.
 *
 * - `POST /` — JSON-RPC request(s) → `application/json` response(s); notifications and the
 *   client's responses only → 202. A `tools/call` of a client that declared `elicitation`
 *   is answered as an event stream (the `ask`s it puts to the client, then the response).
 * - any other method → 405 `Allow: POST` (no server-initiated stream, no session to end).
 *
 * @example
 * ```ts
 * const mcp = createMcpApp(runtime, { tokens, agent: 'assistant' })
 * // any MCP client: new StreamableHTTPClientTransport(new URL('http://127.0.0.1:8787/'),
 * //   { requestInit: { headers: { Authorization: `Bearer ${token}` } } })
 * ```
 * @see docs/mcp.md
 */
export function createMcpApp(runtime: ToolRuntime, options: McpAppOptions): Hono {
  const fail = optionsError('createMcpApp')
  checkRuntime(runtime, fail)
  const server = resolveServerOptions(options, fail, [...SERVER_OPTION_KEYS, ...MCP_FIELDS])
  const mcp: Record<string, unknown> = {}
  for (const field of MCP_FIELDS) if (Object.hasOwn(options, field)) mcp[field] = (options as unknown as Record<string, unknown>)[field]
  return mcpApp(validateMcpOptions(runtime, server, mcp as McpOptions, fail))
}

/** The MCP endpoint of `createToolsApp(runtime, { mcp })`: the app's own validated server options, the MCP ones checked here. */
export function mountMcp(runtime: ToolRuntime, server: ResolvedServerOptions, options: McpOptions, fail: (message: string) => never): Hono {
  const unknown = Object.keys(options).find((key) => !MCP_FIELDS.includes(key))
  if (unknown !== undefined) fail(`mcp has an unknown option ${JSON.stringify(unknown)} (expected ${MCP_FIELDS.join(', ')}; the shared ones go beside mcp)`)
  return mcpApp(validateMcpOptions(runtime, server, options, (message) => fail(`mcp.${message}`)))
}

function mcpApp(config: McpAppConfig): Hono {
  const app = new Hono()
  channels.set(app, config.elicitation)
  app.onError(httpErrorHandler(config.report))
  // Served alone; mounted with app.route(), the parent's notFound answers instead.
  app.notFound(httpNotFound)
  app.use(
    '*',
    // DNS-rebinding defence the MCP transport spec asks for: foreign browser origins are refused.
    ...serverGate(config),
    methodNotAllowed({
      app,
      onMethodNotAllowed: (c) => {
        throw new HttpError('METHOD_NOT_ALLOWED', `${c.req.method} is not allowed here: this stateless MCP endpoint takes POST only`, { Allow: 'POST' })
      },
    }),
  )
  // An MCP client calls tools: every message needs `run`, checked before the body is read.
  app.post('/', requireRole(['run']), async (c: Context) => {
    const served = servedAgent(config, c)
    const version = c.req.header('MCP-Protocol-Version')
    if (version !== undefined && !MCP_PROTOCOL_VERSIONS.includes(version)) {
      throw new HttpError('INVALID_REQUEST', `unsupported MCP-Protocol-Version ${JSON.stringify(version)} (supported: ${MCP_PROTOCOL_VERSIONS.join(', ')})`)
    }
    const body = await readJsonBody(c.req.raw, config.maxBodyBytes)
    const batch = Array.isArray(body)
    const messages: unknown[] = batch ? (body as unknown[]) : [body]
    if (messages.length === 0) throw new HttpError('INVALID_REQUEST', 'an empty JSON-RPC batch')
    if (messages.length > config.maxBatchLength) return c.json(batchTooLong(messages.length, config.maxBatchLength))
    const session = elicitingSessionOf(c.req.raw)
    if (session !== undefined && wantsEventStream(c.req.header('Accept')) && messages.some(isToolsCall)) {
      return streamAnswers(c, config, messages, session, batch, served)
    }
    const exchange: Exchange = { principal: requestPrincipal(c), served, session, send: undefined, cancelled: undefined, issued: undefined }
    const responses = new BatchResponses(batch ? config.maxBatchResponseBytes : undefined, true)
    await answerAll(config, messages, c.req.raw, exchange, responses)
    if (exchange.issued !== undefined) c.header('Mcp-Session-Id', exchange.issued)
    if (responses.kept.length === 0) return c.body(null, 202)
    // Serialized once, by the budget that counted them.
    if (!batch) {
      const pieces = responses.kept[0]!
      // A large single answer (a `tools/list`) is streamed in pieces too, not written in one turn.
      if (pieces.reduce((length, piece) => length + piece.length, 0) <= ANSWER_CHUNK_CHARS) return c.body(pieces.join(''), 200, { 'Content-Type': 'application/json' })
      return c.body(jsonArrayStream(responses.kept, false), 200, { 'Content-Type': 'application/json' })
    }
    return c.body(jsonArrayStream(responses.kept), 200, { 'Content-Type': 'application/json' })
  })
  return app
}
