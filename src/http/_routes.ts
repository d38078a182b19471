/**
 * The HTTP API's routes, declared once in {@link apiRoutes}; the 405 answers derive from the
 * same table. Handlers throw {@link HttpError}.
 *
 * @module
 */
import type { Context, Handler, MiddlewareHandler } from 'hono'
import type { ApprovalBroker } from '../approvals/types.js'
import { RETAINED_304_HEADERS, etag } from 'hono/etag'
import { RUN_CODE_TOOL_NAME } from '../code-mode/registry-seam.js'
import { hasSdkRenderer, renderToolsSdk } from '../code-mode/sdk.js'
import type { SdkToolInput } from '../code-mode/sdk.js'
import type { CodeRuntime } from '../code-runtime/contract.js'
import type { ToolRuntime } from '../runtime-types.js'
import type { ScopeKey, ToolExecutionResult } from '../types.js'
import { sha256 } from './auth.js'
import { HttpError, OVERLOADED_RETRY_AFTER_SECONDS } from './http-errors.js'
import type { InternalErrorReporter } from './http-errors.js'
import { readJsonBody, unknownFieldMessage } from './request-body.js'
import type { Role } from './auth.js'
import { decideApproval, listApprovals } from './_approvals.js'
import { ANY_ROLE, agentFor, clientCallId, requestPrincipal } from './_principals.js'
import { streamRun } from './_run-stream.js'
import type { SessionLogHub } from './session-log-hub.js'
import { traceFieldOf } from '../telemetry/trace-context.js'
import { quoteName } from '../util/unknown-field.js'
import { closestNames } from '../code-runtime/closest-names.js'

/** The validated configuration the routes read. */
export interface ApiConfig {
  readonly maxBodyBytes: number
  readonly notConfigured: string | undefined
  readonly hub: SessionLogHub | undefined
  /** The approval broker behind `/v1/approvals` and the run stream's approval events; absent → no such routes. */
  readonly approvals: ApprovalBroker | undefined
  readonly shutdown: AbortSignal | undefined
  readonly heartbeatMs: number
  readonly maxStreamBacklogBytes: number
  readonly streamWriteTimeoutMs: number
  readonly report: InternalErrorReporter
}

/** One route of the table. */
export interface ApiRoute {
  readonly method: 'GET' | 'POST' | 'DELETE'
  readonly path: string
  /** Served without a token, while unconfigured and while shutting down. */
  readonly open?: true
  /** The roles that may use it (any one; `admin` holds all), checked before anything is read. Required unless `open`. */
  readonly roles?: readonly Role[]
  /**
   * The query parameters it reads; any other is refused (400 `INVALID_REQUEST`, naming it and
   * the closest one) by {@link refuseUnknownQuery}, as unknown body fields are. Absent: `agent`
   * alone; a route that reads no agent declares {@link NO_QUERY}.
   */
  readonly query?: readonly string[]
  /** Route middleware, then the handler. */
  readonly handlers: [RouteHandler, ...RouteHandler[]]
}

/** The query parameters of a route that declares none: `agent`, which selects the agent layer (docs/http-api.md). */
const AGENT_QUERY: readonly string[] = ['agent']
/** The query of a route that reads no agent (health, a run or a request named by id). */
export const NO_QUERY: readonly string[] = []

/**
 * The middleware refusing a query parameter `route` does not read, before its handler runs: a
 * misspelt `?lang=python` would otherwise answer 200 with the default (TypeScript) SDK, and
 * `?agnt=x` the global layer's tools, without a word.
 * @example
 * ```ts
 * // GET /v1/sdk?lang=python → 400 'unknown field "lang" in the query string (did you mean "language"? expected: language, agent)'
 * ```
 */
export function refuseUnknownQuery(route: ApiRoute): MiddlewareHandler {
  const allowed = route.query ?? AGENT_QUERY
  return async (c, next) => {
    const [first] = Object.keys(c.req.queries())
    if (allowed.length === 0 && first !== undefined) throw invalidRequest(`unknown field ${quoteName(first)} in the query string (${c.req.method} ${c.req.routePath} reads no query parameters)`)
    const unknown = unknownFieldMessage(c.req.queries(), allowed, 'the query string')
    if (unknown !== undefined) throw invalidRequest(unknown)
    await next()
  }
}

/** A route's middleware or handler. */
export type RouteHandler = MiddlewareHandler | Handler

/** The response header carrying the call id of an execution. */
export const CALL_ID_HEADER = 'X-Toolyard-Call-Id'
/** The response header naming the language `GET /v1/sdk` rendered. */
export const SDK_LANGUAGE_HEADER = 'X-Toolyard-Sdk-Language'

const MAX_ID_LENGTH = 256
const RUN_CODE = RUN_CODE_TOOL_NAME

/**
 * The message of every `UNKNOWN_TOOL` answer the app writes itself. It is the pipeline's
 * wording for a name that resolves to nothing (a test pins the two together), so
 * `GET /v1/tools/:name`, `POST …/execute` and `POST /v1/run` say the same thing, followed
 * by the closest of `names` (the agent's listed tools), chosen as the sandbox chooses them for
 * a program's `tools.read_fil()` (`closestNames`).
 * @example
 * ```ts
 * unknownToolMessage('read_fil', ['read_file', 'write_file']) // 'unknown tool "read_fil"; did you mean "read_file"?'
 * ```
 */
export function unknownToolMessage(name: string, names: readonly string[] = []): string {
  const head = `unknown tool ${quoteName(name)}`
  const close = closestNames(name, names).filter((candidate) => candidate !== name).map((candidate) => JSON.stringify(candidate))
  if (close.length === 0) return head
  const listed = close.length === 1 ? close[0] : `${close.slice(0, -1).join(', ')} or ${close[close.length - 1]}`
  return `${head}; did you mean ${listed}?`
}

/** The names of the tools `GET /v1/tools` lists for `agent`: what an unknown name is compared with. */
function listedNames(runtime: ToolRuntime, agent: ScopeKey | undefined): string[] {
  return runtime.view(agent).schemas.map((schema) => schema.name)
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function invalidRequest(message: string): HttpError {
  return new HttpError('INVALID_REQUEST', message)
}

function validId(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_ID_LENGTH
}

/**
 * A call id travels back in the `X-Toolyard-Call-Id` header, so it must be a valid,
 * unaltered header value: printable ASCII, no surrounding spaces (which a header would
 * trim). Checked before the call runs: a tool must never run for a request whose answer
 * cannot then be written.
 */
function validCallId(value: unknown): value is string {
  return validId(value) && /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(value)
}

const BAD_AGENT = `agent must be a non-empty string of at most ${MAX_ID_LENGTH} characters`

/** `agent` from the query as asked (absent → the global layer). */
function askedQueryAgent(c: Context): ScopeKey | undefined {
  const values = c.req.queries('agent')
  if (values === undefined || values.length === 0) return undefined
  if (values.length > 1) throw invalidRequest('agent must be given at most once')
  if (!validId(values[0])) throw invalidRequest(BAD_AGENT)
  return values[0]
}

/** The agent a request with `agent` in the query acts for (a pinned token's own; 403 for another). */
function queryAgent(c: Context): ScopeKey | undefined {
  return agentFor(c, askedQueryAgent(c))
}

/** `agent` from the body or the query (different values in both are an error), as its token may act. */
function bodyAgent(c: Context, body: Record<string, unknown>): ScopeKey | undefined {
  const fromQuery = askedQueryAgent(c)
  if (!Object.hasOwn(body, 'agent') || body.agent === undefined) return agentFor(c, fromQuery)
  if (!validId(body.agent)) throw invalidRequest(BAD_AGENT)
  if (fromQuery !== undefined && fromQuery !== body.agent) throw invalidRequest('agent differs between the query and the body')
  return agentFor(c, body.agent)
}

/** `{ agent }` when an agent was named, `{}` otherwise (the body's `agent` is absent, not `undefined`). */
function agentField(agent: ScopeKey | undefined): { agent?: ScopeKey } {
  return agent === undefined ? {} : { agent }
}

/** The fields each JSON route reads; any other top-level field is refused, naming it. */
const EXECUTE_FIELDS: readonly string[] = ['arguments', 'callId', 'agent']
const RUN_FIELDS: readonly string[] = ['code', 'description', 'agent', 'language']

async function objectBody(c: Context, config: ApiConfig, fields: readonly string[]): Promise<Record<string, unknown>> {
  const value = await readJsonBody(c.req.raw, config.maxBodyBytes)
  if (!isPlainObject(value)) throw invalidRequest(`the request body must be a JSON object (expected fields: ${fields.join(', ')})`)
  return value
}

function refuseUnknownFields(body: Record<string, unknown>, fields: readonly string[]): void {
  const unknown = unknownFieldMessage(body, fields, 'the request body')
  if (unknown !== undefined) throw invalidRequest(unknown)
}

const RUN_CALL_ID_REFUSED = 'callId is assigned by the server for runs (see the X-Toolyard-Call-Id header)'

/** A run's id: the server's alone, so no client can name (and so join) another client's run. */
function newRunCallId(): string {
  return `http-run-${crypto.randomUUID()}`
}

/** The execution's signal: the client's request (disconnect aborts), the app's shutdown, and `extra`. */
function signalFor(c: Context, config: ApiConfig, extra?: AbortSignal): AbortSignal {
  const signals = [c.req.raw.signal]
  if (config.shutdown !== undefined) signals.push(config.shutdown)
  if (extra !== undefined) signals.push(extra)
  return signals.length === 1 ? c.req.raw.signal : AbortSignal.any(signals)
}

/**
 * The frozen result as JSON, or 404 when the name resolved to no visible tool (the
 * pipeline's words, with the closest of `names()` when the name is simply not there).
 */
function resultResponse(c: Context, callId: string, result: ToolExecutionResult, unknown?: { readonly name: string; readonly names: () => readonly string[] }): Response {
  if (result.isError) {
    const code = result.error.info?.code
    if (code === 'UNKNOWN_TOOL') {
      // Another refusal (the `code` presentation's route-back hint) is passed on as is.
      const plain = unknown !== undefined && result.error.message === unknownToolMessage(unknown.name)
      const message = plain ? unknownToolMessage(unknown.name, unknown.names()) : result.error.message
      throw new HttpError('UNKNOWN_TOOL', message, { [CALL_ID_HEADER]: callId })
    }
    if (code === 'OVERLOADED') throw overloaded(result.error.message, callId)
  }
  return c.json(result, 200, { [CALL_ID_HEADER]: callId })
}

function overloaded(message: string, callId?: string): HttpError {
  return new HttpError('OVERLOADED', message, { 'Retry-After': String(OVERLOADED_RETRY_AFTER_SECONDS), ...(callId === undefined ? {} : { [CALL_ID_HEADER]: callId }) })
}

/**
 * Refuses a run before anything runs or streams when the code runtime reports that its
 * runs and queue are full (a stream's status line, once sent, could no longer say 503).
 * A run refused in the instant between this look and its admission still answers
 * `OVERLOADED`: 503 over JSON, the `result` event's error code over a stream.
 */
function refuseWhenFull(runtime: ToolRuntime, language?: string): void {
  const load = codeRuntimeFor(runtime, language)?.load?.()
  if (load !== undefined && load.running >= load.maxConcurrentRuns && load.queued >= load.maxQueuedRuns) {
    throw overloaded(`the code runtime is at capacity (${load.running} runs running, ${load.queued} waiting); retry later`)
  }
}

function base64Url(bytes: Uint8Array): string {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  // Stryker disable next-line Regex: a SHA-256 digest's base64 has exactly one '=' and only at its end, so /=+$/, /=+/ and /=$/ agree
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

/** Whether an `Accept` header asks for server-sent events (`q=0` means "not acceptable"). */
export function wantsEventStream(accept: string | undefined): boolean {
  if (accept === undefined) return false
  return accept.split(',').some((part) => {
    const [type, ...params] = part.split(';')
    if (type?.trim().toLowerCase() !== 'text/event-stream') return false
    return !params.some((p) => /^\s*q\s*=\s*0(\.0*)?\s*$/i.test(p))
  })
}

function health(config: ApiConfig): Handler {
  return (c) => {
    const status = config.notConfigured !== undefined ? 'not-configured' : config.shutdown?.aborted === true ? 'shutting-down' : 'ok'
    return c.json({ status })
  }
}

// `/v1/tools` and `/v1/sdk` read the agent's view (`runtime.view`), the answer the
// pipeline, the prompt and MCP read too: this file decides nothing about visibility.
function listTools(runtime: ToolRuntime): Handler {
  return (c) => {
    const agent = queryAgent(c)
    const view = runtime.view(agent)
    return c.json({ ...agentField(agent), mode: view.mode, tools: view.schemas })
  }
}

function describeTool(runtime: ToolRuntime): Handler {
  return (c) => {
    const agent = queryAgent(c)
    const name = c.req.param('name') as string
    const view = runtime.view(agent)
    const schema = view.schemas.find((s) => s.name === name)
    if (schema === undefined) throw new HttpError('UNKNOWN_TOOL', unknownToolMessage(name, view.schemas.map((s) => s.name)))
    return c.json({ ...agentField(agent), tool: { ...schema, output: view.get(name)?.output.schema ?? {} } })
  }
}

/**
 * The SDK text with a strong `ETag` of its bytes (`"sha256-<base64url>"`). Conditional
 * requests are Hono's `etag` middleware: it honours `If-None-Match` (`*`, lists, `W/`)
 * with a 304 keeping the headers listed here. Hono strips every other header from a
 * 304, the CORS ones included, so they are listed too.
 */
const sdkConditional = etag({
  retainedHeaders: [...RETAINED_304_HEADERS, SDK_LANGUAGE_HEADER.toLowerCase(), 'access-control-allow-origin', 'access-control-expose-headers'],
})

function sdk(runtime: ToolRuntime): Handler {
  return async (c) => {
    const agent = queryAgent(c)
    const languages = c.req.queries('language') ?? []
    if (languages.length > 1) throw invalidRequest('language must be given at most once')
    const language = languages[0] ?? runtime.options.codeRuntime?.language ?? 'typescript'
    if (!hasSdkRenderer(language)) throw invalidRequest(`no SDK renderer for language ${JSON.stringify(language)} (typescript, python)`)
    // What a program may call (the view's `code`: never `run_code`, never a native-only tool).
    const view = runtime.view(agent)
    const tools: SdkToolInput[] = view.code.map((schema) => ({
      name: schema.name,
      description: schema.description,
      parameters: schema.parameters,
      output: view.get(schema.name)?.output.schema ?? {},
    }))
    const bytes = new TextEncoder().encode(renderToolsSdk(tools, { language, maxChars: runtime.options.sdkBudgetChars }))
    return c.body(bytes, 200, {
      ETag: `"sha256-${base64Url(await sha256(bytes))}"`,
      'Cache-Control': 'private, no-cache',
      Vary: 'Authorization',
      [SDK_LANGUAGE_HEADER]: language,
      'Content-Type': 'text/plain; charset=utf-8',
    })
  }
}

function prompt(runtime: ToolRuntime): Handler {
  return (c) => {
    const agent = queryAgent(c)
    if (c.req.query('mode') !== undefined) {
      throw invalidRequest('mode cannot be chosen per request: the prompt uses the presentation of the agent (pick an agent that declared the mode)')
    }
    const assembly = runtime.assemble(agent)
    return c.json({ ...agentField(agent), mode: assembly.mode, sections: assembly.sections, tools: assembly.tools })
  }
}

/** The most hits one `GET /v1/catalog/search` returns: each carries a declaration. */
const MAX_SEARCH_LIMIT = 100

/** One query parameter given at most once (`required`: exactly once). */
function singleQuery(c: Context, name: string, required: boolean): string | undefined {
  const values = c.req.queries(name) ?? []
  if (values.length > 1 || (required && values.length === 0)) throw invalidRequest(`${name} must be given ${required ? 'exactly' : 'at most'} once`)
  return values[0]
}

function catalogSearch(runtime: ToolRuntime): Handler {
  return (c) => {
    const agent = queryAgent(c)
    const query = singleQuery(c, 'q', true) as string
    const limitText = singleQuery(c, 'limit', false)
    const limit = limitText === undefined ? undefined : Number(limitText)
    if (limit !== undefined && (!/^\d+$/.test(limitText!) || limit < 1 || limit > MAX_SEARCH_LIMIT)) {
      throw invalidRequest(`limit must be an integer from 1 to ${MAX_SEARCH_LIMIT}`)
    }
    const catalog = runtime.catalog(agent)
    const hits = catalog.search(query, limit === undefined ? {} : { limit })
    return c.json({ ...agentField(agent), query, language: catalog.language, size: catalog.size, hits })
  }
}

function executeTool(runtime: ToolRuntime, config: ApiConfig): Handler {
  return async (c) => {
    const body = await objectBody(c, config, EXECUTE_FIELDS)
    refuseUnknownFields(body, EXECUTE_FIELDS)
    const agent = bodyAgent(c, body)
    const name = c.req.param('name') as string
    // A run's sub-calls, approvals and event stream are keyed by its call id: a client that
    // could choose it could reuse a live run's id (GET /v1/approvals shows it) and join that run.
    if (name === RUN_CODE && body.callId !== undefined) throw invalidRequest(RUN_CALL_ID_REFUSED)
    if (body.callId !== undefined && !validCallId(body.callId)) {
      throw invalidRequest(`callId must be 1–${MAX_ID_LENGTH} printable ASCII characters, without leading or trailing spaces`)
    }
    const principal = requestPrincipal(c)
    // A client's id lives in its principal's namespace: it never names a run's sub-call or another client's call.
    const callId = name === RUN_CODE ? newRunCallId() : body.callId === undefined ? `http-${crypto.randomUUID()}` : clientCallId(principal, body.callId)
    const args = Object.hasOwn(body, 'arguments') ? body.arguments : {}
    // The principal travels with the call: its approval requests record it (the broker lists it).
    const result = await runtime.execute({ callId, name, arguments: args, signal: signalFor(c, config), principal: principal.id, ...agentField(agent), ...traceFieldOf((h) => c.req.header(h)) })
    return resultResponse(c, callId, result, { name, names: () => listedNames(runtime, agent) })
  }
}

/** The server's code runtime for `language` (absent: the one its model is shown). */
function codeRuntimeFor(runtime: ToolRuntime, language: string | undefined): CodeRuntime | undefined {
  const { codeRuntime, codeRuntimes } = runtime.options
  return language === undefined || language === codeRuntime?.language ? codeRuntime : codeRuntimes?.find((r) => r.language === language)
}

/** A run request's `language`, checked against the languages the server runs; `undefined` when absent or the model's own. */
function requestedLanguage(runtime: ToolRuntime, body: Record<string, unknown>): string | undefined {
  if (!Object.hasOwn(body, 'language')) return undefined
  const { codeRuntime, codeRuntimes } = runtime.options
  const served = [codeRuntime?.language ?? 'typescript', ...(codeRuntimes ?? []).map((r) => r.language)]
  if (typeof body.language !== 'string' || !served.includes(body.language)) {
    const list = served.length === 1 ? `${served[0]} programs` : `programs in ${served.join(' and ')}`
    throw invalidRequest(`language ${JSON.stringify(body.language)} is not run here: this server runs ${list}`)
  }
  return body.language === served[0] ? undefined : body.language
}

/** A `run_code` request read and admitted: what `POST /v1/run` and `POST /v1/runs` run. */
export interface PreparedRun {
  /** The server's id of the `run_code` call (`http-run-<uuid>`). */
  readonly callId: string
  readonly agent: ScopeKey | undefined
  /** The id of the principal that started it. */
  readonly principal: string
  /** The `start` event's data: `{ callId, agent? }`. */
  readonly start: Readonly<Record<string, unknown>>
  /** Runs `run_code` under `signal`; never rejects (the pipeline's contract). */
  readonly execute: (signal: AbortSignal) => Promise<ToolExecutionResult>
}

/**
 * Reads and checks a run request (body fields, `agent`, `run_code` offered, the code
 * runtime's admission) and assigns its call id; throws the documented `HttpError`s. Shared
 * by `POST /v1/run` and `POST /v1/runs`, so both refuse and run alike.
 */
export async function prepareRun(c: Context, runtime: ToolRuntime, config: ApiConfig): Promise<PreparedRun> {
  const body = await objectBody(c, config, RUN_FIELDS)
  if (Object.hasOwn(body, 'callId')) throw invalidRequest(RUN_CALL_ID_REFUSED)
  refuseUnknownFields(body, RUN_FIELDS)
  const agent = bodyAgent(c, body)
  // `language` names the language the client wrote: one the server's code runtimes run (`codeRuntimes`), or it is refused.
  const language = requestedLanguage(runtime, body)
  // Decided before anything runs or streams, so JSON and SSE answer alike: a stream's
  // status line is sent at once and could no longer say 404. The agent's view is the one
  // answer to whether its model may call `run_code` (presented, and callable natively).
  if (!runtime.view(agent).canCall(RUN_CODE, 'native')) throw new HttpError('UNKNOWN_TOOL', unknownToolMessage(RUN_CODE))
  refuseWhenFull(runtime, language)
  // The id is ours alone, so the stream's filter can never pick up another request's sub-calls.
  const callId = newRunCallId()
  // Only the fields the client sent: an absent `code` is then reported by the schema as
  // missing, not as an `undefined` that is "not lossless JSON".
  const args: Record<string, unknown> = {}
  if (Object.hasOwn(body, 'code')) args.code = body.code
  if (Object.hasOwn(body, 'description')) args.description = body.description
  if (language !== undefined) args.language = language
  const principal = requestPrincipal(c).id
  // The caller's W3C trace context: the run's spans join its trace.
  const trace = traceFieldOf((h) => c.req.header(h))
  // The run's sub-calls and plan carry it into their approval requests (and a parked run's record keeps it).
  const execute = (signal: AbortSignal): Promise<ToolExecutionResult> => runtime.execute({ callId, name: RUN_CODE, arguments: args, signal, principal, ...agentField(agent), ...trace })
  return { callId, agent, principal, start: { callId, ...agentField(agent) }, execute }
}

function run(runtime: ToolRuntime, config: ApiConfig): Handler {
  return async (c) => {
    const { callId, start, execute } = await prepareRun(c, runtime, config)
    if (!wantsEventStream(c.req.header('Accept'))) return resultResponse(c, callId, await execute(signalFor(c, config)))
    // A stream decides itself when its client is gone (the request's signal included): one
    // it closed for falling behind must not take the run down with it.
    const streamed = (cancelled: AbortSignal): Promise<ToolExecutionResult> =>
      execute(config.shutdown === undefined ? cancelled : AbortSignal.any([cancelled, config.shutdown]))
    const stream = streamRun(c, { callId, start, execute: streamed }, config)
    stream.headers.set(CALL_ID_HEADER, callId)
    return stream
  }
}

const APPROVE: readonly Role[] = ['approve']
const RUN: readonly Role[] = ['run']

function approvalRoutes(broker: ApprovalBroker, config: ApiConfig): ApiRoute[] {
  return [
    { method: 'GET', path: '/v1/approvals', roles: APPROVE, handlers: [listApprovals(broker, queryAgent)] },
    { method: 'POST', path: '/v1/approvals/:id', roles: APPROVE, query: NO_QUERY, handlers: [decideApproval(broker, config.maxBodyBytes)] },
  ]
}

/**
 * Every route of the API, in registration order, with the roles it needs. `GET` routes
 * also answer `HEAD` (Hono); a known path with another method answers 405 with `Allow`.
 * The metadata routes (tools, SDK, prompt, catalog) serve any principal: they show what a
 * program may call, which every role needs to see, and nothing of anyone's runs.
 */
export function apiRoutes(runtime: ToolRuntime, config: ApiConfig): readonly ApiRoute[] {
  return [
    { method: 'GET', path: '/v1/health', open: true, query: NO_QUERY, handlers: [health(config)] },
    { method: 'GET', path: '/v1/tools', roles: ANY_ROLE, handlers: [listTools(runtime)] },
    { method: 'GET', path: '/v1/tools/:name', roles: ANY_ROLE, handlers: [describeTool(runtime)] },
    { method: 'POST', path: '/v1/tools/:name/execute', roles: RUN, handlers: [executeTool(runtime, config)] },
    { method: 'GET', path: '/v1/sdk', roles: ANY_ROLE, query: ['language', 'agent'], handlers: [sdkConditional, sdk(runtime)] },
    // `mode` is read to refuse it with its own reason (no per-request mode).
    { method: 'GET', path: '/v1/prompt', roles: ANY_ROLE, query: ['agent', 'mode'], handlers: [prompt(runtime)] },
    { method: 'GET', path: '/v1/catalog/search', roles: ANY_ROLE, query: ['q', 'limit', 'agent'], handlers: [catalogSearch(runtime)] },
    { method: 'POST', path: '/v1/run', roles: RUN, handlers: [run(runtime, config)] },
    ...(config.approvals === undefined ? [] : approvalRoutes(config.approvals, config)),
  ]
}
