/**
 * MCP import: one raw tool per tool a server lists, kept in sync with `list_changed`, undone
 * by one disposer. The server validates input; toolyard owns output (docs/mcp.md).
 *
 * @module
 */
import { ToolArgsError, ToolError, toErrorData } from '../errors.js'
import type { JsonObject, JsonValue } from '../json/json-value.js'
import { snapshotLosslessJson } from '../json/lossless.js'
import type { ToolScope } from '../runtime-types.js'
import type { JsonSchemaNode } from '../schema/json-schema-node.js'
import { assertSupportedJsonSchema } from '../schema/json-schema.js'
import type { AnyToolDefinition, ContentBlock, Disposer, ToolRunContext } from '../types.js'
import { isJsonObject, mcpContentText, mcpContentToBlocks } from './content.js'
import type { McpClientLike, McpNotificationLike } from './mcp-types.js'
import { isRecord } from '../util/guards.js'

/** Options of {@link importMcpTools}. */
export interface McpImportOptions {
  /** Prepended to every MCP tool name (`github_` → `github_create_issue`). Default none. */
  readonly prefix?: string
  /**
   * Cancels the initial listing; once the import has resolved, aborting it disposes the
   * import (the signal is the import's lifetime).
   */
  readonly signal?: AbortSignal
  /** When `true`, `dispose()` also closes the client. Default `false`: the caller keeps it. */
  readonly ownsClient?: boolean
  /** Receives failures of background re-syncs (after `tools/list_changed`). Never throws into the import. */
  readonly onError?: (error: ToolError) => void
}

/** An MCP tool the import could not register, and why. */
export interface McpImportSkip {
  /** The tool's name on the server (without the prefix). */
  readonly name: string
  /** A stable toolyard error code (`INVALID_SCHEMA`, `DUPLICATE_TOOL`, `INVALID_JSON`, `UNSUPPORTED_TOOL`…). */
  readonly code: string
  readonly message: string
}

/** A live import of an MCP server's tools. */
export interface McpImport {
  /** The registered (prefixed) names, in the server's listing order. */
  tools(): string[]
  /** Tools the server listed that are not registered, with the reason. */
  skipped(): McpImportSkip[]
  /**
   * Lists the server's tools again (every page) and reconciles: registers new tools,
   * unregisters removed ones, replaces changed ones. Concurrent calls coalesce.
   */
  refresh(): Promise<void>
  /** Unregisters everything this import registered; closes the client only when `ownsClient`. Idempotent. */
  dispose(): Promise<void>
}

/** The output declaration of a tool that declares no `outputSchema`: its MCP content, verbatim. */
export const MCP_CONTENT_OUTPUT_SCHEMA: JsonSchemaNode = Object.freeze({
  type: 'object',
  description: 'The MCP content blocks the tool returned.',
  properties: Object.freeze({
    content: Object.freeze({
      type: 'array',
      items: Object.freeze({
        type: 'object',
        description: 'One MCP content block: text, image, audio, resource_link or resource.',
        properties: Object.freeze({
          type: Object.freeze({ type: 'string' }),
          text: Object.freeze({ type: 'string' }),
          data: Object.freeze({ type: 'string' }),
          mimeType: Object.freeze({ type: 'string' }),
          uri: Object.freeze({ type: 'string' }),
        }),
        required: Object.freeze(['type']),
      }),
    }),
  }),
  required: Object.freeze(['content']),
}) as JsonSchemaNode

const LIST_CHANGED = 'notifications/tools/list_changed'
const MAX_PAGES = 1000

interface ListedTool {
  readonly name: string
  readonly description: string
  readonly inputSchema: JsonObject
  readonly outputSchema: JsonValue | undefined
  readonly readOnly: boolean
  /** What decides "changed": the whole listed tool as canonical JSON. */
  readonly fingerprint: string
  readonly skip?: McpImportSkip
}

interface Registration {
  readonly registeredName: string
  readonly fingerprint: string
  readonly dispose: Disposer
}

function protocolError(message: string, cause?: unknown): ToolError {
  return new ToolError('MCP_PROTOCOL_ERROR', message, cause === undefined ? undefined : { cause })
}

/** Reads one listed tool; a tool we cannot use becomes a skip instead of failing the page. */
function readTool(raw: unknown, index: number): ListedTool | McpImportSkip {
  if (!isRecord(raw) || typeof raw.name !== 'string' || raw.name === '') {
    return { name: `#${index}`, code: 'MCP_PROTOCOL_ERROR', message: `tools/list entry ${index} has no name` }
  }
  const name = raw.name
  let tool: JsonValue
  try {
    tool = snapshotLosslessJson(raw)
  } catch (error) {
    return { name, code: 'INVALID_JSON', message: toErrorData(error).message }
  }
  const listed = tool as JsonObject
  const inputSchema = listed.inputSchema
  if (!isJsonObject(inputSchema) || inputSchema.type !== 'object') {
    return { name, code: 'INVALID_SCHEMA', message: 'inputSchema must be a JSON Schema object with type "object"' }
  }
  const execution = listed.execution
  if (isJsonObject(execution) && execution.taskSupport === 'required') {
    return { name, code: 'UNSUPPORTED_TOOL', message: 'the tool requires task-based execution, which the import does not offer' }
  }
  const annotations = listed.annotations
  const description = typeof listed.description === 'string' ? listed.description : typeof listed.title === 'string' ? listed.title : ''
  return {
    name,
    description,
    inputSchema,
    outputSchema: listed.outputSchema,
    readOnly: isJsonObject(annotations) && annotations.readOnlyHint === true,
    fingerprint: JSON.stringify(listed),
  }
}

/**
 * The output declaration for a declared `outputSchema`. `$schema` at the root is an
 * identifier, not a constraint, so it is dropped; anything else outside the supported
 * subset degrades to the annotation-only node (any JSON), keeping the description.
 */
function structuredOutputSchema(outputSchema: JsonObject): JsonSchemaNode {
  const { $schema: _identifier, ...rest } = outputSchema
  try {
    assertSupportedJsonSchema(rest)
    return rest
  } catch {
    return typeof rest.description === 'string' ? { description: rest.description } : {}
  }
}

function renderStructured(_args: unknown, value: JsonValue): readonly ContentBlock[] {
  return [{ type: 'text', text: JSON.stringify(value) }]
}

function renderContent(_args: unknown, value: JsonValue): readonly ContentBlock[] {
  const content = isJsonObject(value) && Array.isArray(value.content) ? value.content : []
  return mcpContentToBlocks(content)
}

function toDefinition(client: McpClientLike, listed: ListedTool, registeredName: string): AnyToolDefinition {
  const structured = isJsonObject(listed.outputSchema)
  const mcpName = listed.name
  const execute = async (args: JsonValue, exec: ToolRunContext): Promise<JsonValue> => {
    if (!isJsonObject(args)) throw new ToolArgsError([{ path: '', message: 'MCP tool arguments must be a JSON object' }])
    let raw: unknown
    try {
      raw = await client.callTool({ name: mcpName, arguments: args }, undefined, { signal: exec.signal })
    } catch (error) {
      // The SDK wraps the abort reason in its own error; hand the pipeline the reason itself,
      // which is how a body acknowledges the cancellation (→ ABORTED).
      if (exec.signal.aborted) throw exec.signal.reason
      throw new ToolError('TOOL_FAILED', `MCP tools/call ${JSON.stringify(mcpName)} failed: ${toErrorData(error).message}`, { cause: error })
    }
    if (!isRecord(raw)) throw new ToolError('TOOL_FAILED', `MCP tool ${JSON.stringify(mcpName)} returned a malformed result`)
    let content: JsonValue[]
    let structuredContent: JsonValue | undefined
    try {
      const c = snapshotLosslessJson(raw.content ?? [])
      if (!Array.isArray(c)) throw new TypeError('content is not an array')
      content = c
      structuredContent = raw.structuredContent === undefined ? undefined : snapshotLosslessJson(raw.structuredContent)
    } catch (error) {
      throw new ToolError('TOOL_FAILED', `MCP tool ${JSON.stringify(mcpName)} returned a malformed result: ${toErrorData(error).message}`, { cause: error })
    }
    if (raw.isError === true) {
      const text = mcpContentText(content)
      throw new ToolError('TOOL_FAILED', text === '' ? `MCP tool ${JSON.stringify(mcpName)} reported an error` : text)
    }
    if (!structured) return { content }
    if (structuredContent === undefined) {
      throw new ToolError('TOOL_FAILED', `MCP tool ${JSON.stringify(mcpName)} declares an outputSchema but returned no structuredContent`)
    }
    return structuredContent
  }
  return {
    name: registeredName,
    description: listed.description,
    parameters: listed.inputSchema as unknown as AnyToolDefinition['parameters'],
    output: structured
      ? { schema: structuredOutputSchema(listed.outputSchema as JsonObject), render: renderStructured }
      : { schema: MCP_CONTENT_OUTPUT_SCHEMA, render: renderContent },
    execute,
    // A read-only tool may overlap other safe calls; everything else runs exclusively.
    ...(listed.readOnly ? { isConcurrencySafe: () => true } : {}),
  }
}

/** Lists every page of the server's tools. */
async function listAll(client: McpClientLike, signal: AbortSignal): Promise<(ListedTool | McpImportSkip)[]> {
  const tools: (ListedTool | McpImportSkip)[] = []
  const seenCursors = new Set<string>()
  let cursor: string | undefined
  for (let page = 0; ; page++) {
    if (page >= MAX_PAGES) throw protocolError(`tools/list did not end within ${MAX_PAGES} pages`)
    let result: unknown
    try {
      result = await client.listTools(cursor === undefined ? undefined : { cursor }, { signal })
    } catch (error) {
      if (signal.aborted) throw error
      throw protocolError(`MCP tools/list failed: ${toErrorData(error).message}`, error)
    }
    if (!isRecord(result) || !Array.isArray(result.tools)) throw protocolError('MCP tools/list answered without a tools array')
    for (const raw of result.tools as unknown[]) tools.push(readTool(raw, tools.length))
    const next = result.nextCursor
    if (next === undefined || next === null) return tools
    if (typeof next !== 'string') throw protocolError('MCP tools/list answered with a non-string nextCursor')
    if (seenCursors.has(next)) throw protocolError(`MCP tools/list repeated the cursor ${JSON.stringify(next)}`)
    seenCursors.add(next)
    cursor = next
  }
}

/** Read through a call so the compiler does not narrow `aborted` across awaits. */
function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true
}

function isSkip(entry: ListedTool | McpImportSkip): entry is McpImportSkip {
  return 'code' in entry
}

/**
 * Registers every tool an MCP server lists in `scope` (the runtime, or `runtime.agent(id)`)
 * as a raw tool that calls `client.callTool` with the execution's signal, and keeps the
 * set in sync with the server's `notifications/tools/list_changed`.
 *
 * - `parameters` is the server's `inputSchema`, presented as is; the server validates.
 * - The output is the tool's `outputSchema` (value = `structuredContent`) when it declares
 *   one — degraded to "any JSON" when outside the supported subset — otherwise
 *   `{ content: McpContent[] }`, rendered to text / image blocks.
 * - A result with `isError: true` fails the call with `TOOL_FAILED` and the server's text.
 * - Tools that cannot be registered are listed by `skipped()` (the import still resolves).
 *
 * Rejects with `MCP_PROTOCOL_ERROR` when the listing fails or is malformed (everything
 * registered so far is undone, and an owned client is closed).
 *
 * @example
 * ```ts
 * import { Client } from '@modelcontextprotocol/sdk/client/index.js'
 * import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
 *
 * const client = new Client({ name: 'my-agent', version: '1.0.0' })
 * await client.connect(new StdioClientTransport({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'] }))
 * const everything = await importMcpTools(runtime, client, { prefix: 'everything_', ownsClient: true })
 * // … later
 * await everything.dispose()
 * ```
 * @see docs/mcp.md
 */
export async function importMcpTools(scope: ToolScope, client: McpClientLike, options: McpImportOptions = {}): Promise<McpImport> {
  if (typeof scope !== 'object' || scope === null || typeof scope.register !== 'function') {
    throw new ToolError('INVALID_OPTIONS', 'importMcpTools: scope must be a ToolRuntime or AgentTools')
  }
  if (typeof client !== 'object' || client === null || typeof client.listTools !== 'function' || typeof client.callTool !== 'function') {
    throw new ToolError('INVALID_OPTIONS', 'importMcpTools: client must be an MCP client (listTools, callTool, close)')
  }
  if (typeof options !== 'object' || options === null) throw new ToolError('INVALID_OPTIONS', 'importMcpTools: options must be an object')
  const prefix = options.prefix ?? ''
  if (typeof prefix !== 'string') throw new ToolError('INVALID_OPTIONS', 'importMcpTools: prefix must be a string')
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw new ToolError('INVALID_OPTIONS', 'importMcpTools: signal must be an AbortSignal')
  }
  if (options.onError !== undefined && typeof options.onError !== 'function') {
    throw new ToolError('INVALID_OPTIONS', 'importMcpTools: onError must be a function')
  }
  const ownsClient = options.ownsClient === true

  const life = new AbortController()
  const registrations = new Map<string, Registration>()
  let skips: McpImportSkip[] = []
  let order: string[] = []
  let disposed = false
  let disposing: Promise<void> | undefined

  const sync = async (signal: AbortSignal): Promise<void> => {
    const listed = await listAll(client, signal)
    if (disposed) return
    const nextSkips: McpImportSkip[] = []
    const wanted = new Map<string, ListedTool>()
    for (const entry of listed) {
      if (isSkip(entry)) nextSkips.push(entry)
      else if (wanted.has(entry.name)) nextSkips.push({ name: entry.name, code: 'DUPLICATE_TOOL', message: 'the server listed this name twice' })
      else wanted.set(entry.name, entry)
    }
    // Unregister removed and changed tools first, so a changed tool re-registers under its name.
    for (const [name, registration] of registrations) {
      if (wanted.get(name)?.fingerprint === registration.fingerprint) continue
      registration.dispose()
      registrations.delete(name)
    }
    for (const [name, tool] of wanted) {
      if (registrations.has(name)) continue
      const registeredName = prefix + name
      try {
        const dispose = scope.register(toDefinition(client, tool, registeredName))
        registrations.set(name, { registeredName, fingerprint: tool.fingerprint, dispose })
      } catch (error) {
        const data = toErrorData(error)
        nextSkips.push({ name, code: data.code ?? 'INVALID_DEFINITION', message: data.message })
      }
    }
    skips = nextSkips
    order = [...wanted.keys()].filter((name) => registrations.has(name))
  }

  // Syncs run one at a time; a refresh asked for while one is queued joins it.
  let queue: Promise<void> = Promise.resolve()
  let queued: Promise<void> | undefined
  const schedule = (signal: AbortSignal): Promise<void> => {
    if (queued !== undefined) return queued
    const run = queue.then(() => {
      queued = undefined
      if (disposed) return undefined
      return sync(signal)
    })
    queued = run
    queue = run.catch(() => {})
    return run
  }

  const report = (error: unknown): void => {
    if (disposed) return
    const failure = error instanceof ToolError ? error : protocolError(`MCP re-sync failed: ${toErrorData(error).message}`, error)
    try {
      options.onError?.(failure)
    } catch {
      // An observer's throw never reaches the import.
    }
  }

  const previousHandler = client.fallbackNotificationHandler
  const onNotification = async (notification: McpNotificationLike): Promise<void> => {
    if (isRecord(notification) && notification.method === LIST_CHANGED) {
      if (!disposed) schedule(life.signal).catch(report)
      return
    }
    await previousHandler?.call(client, notification)
  }
  client.fallbackNotificationHandler = onNotification

  const onLifetimeAbort = (): void => {
    void dispose()
  }

  const dispose = (): Promise<void> => {
    if (disposing !== undefined) return disposing
    disposed = true
    options.signal?.removeEventListener('abort', onLifetimeAbort)
    life.abort(new ToolError('DISPOSED', 'the MCP import was disposed'))
    if (client.fallbackNotificationHandler === onNotification) client.fallbackNotificationHandler = previousHandler
    for (const registration of registrations.values()) registration.dispose()
    registrations.clear()
    order = []
    disposing = (async () => {
      await queue
      if (ownsClient) await client.close()
    })()
    return disposing
  }

  const initialSignal = options.signal === undefined ? life.signal : AbortSignal.any([life.signal, options.signal])
  try {
    if (options.signal?.aborted === true) throw options.signal.reason
    await schedule(initialSignal)
  } catch (error) {
    await dispose().catch(() => {})
    throw error
  }
  if (isAborted(options.signal)) {
    await dispose()
    throw options.signal?.reason
  }
  options.signal?.addEventListener('abort', onLifetimeAbort, { once: true })

  return Object.freeze({
    tools: () => order.map((name) => registrations.get(name)!.registeredName),
    skipped: () => skips.map((skip) => ({ ...skip })),
    refresh: () => (disposed ? Promise.reject(new ToolError('DISPOSED', 'the MCP import was disposed')) : schedule(life.signal)),
    dispose,
  })
}
