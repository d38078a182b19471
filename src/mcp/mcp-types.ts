/**
 * The few MCP wire shapes toolyard reads and writes, declared here so the core never imports
 * the MCP SDK (its `Client` satisfies {@link McpClientLike}; a type test pins it).
 *
 * @module
 */
import type { ObjectJsonSchema } from '../schema/json-schema-node.js'

/** A JSON-RPC notification as an MCP client hands it to its handlers. */
export interface McpNotificationLike {
  readonly method: string
}

/** The arguments of `tools/call` as the SDK's `Client.callTool` takes them. */
export interface McpCallToolParams {
  name: string
  arguments?: Record<string, unknown>
}

/** Per-request options the import passes to the client (only the signal). */
export interface McpRequestOptionsLike {
  signal?: AbortSignal
}

/**
 * The minimal structural subset of the SDK's `Client` that {@link importMcpTools} uses.
 * Results are typed `unknown` on purpose: a server is a peer, and everything it sends is
 * checked before use.
 *
 * `fallbackNotificationHandler` is how the import hears `notifications/tools/list_changed`
 * without importing the SDK's zod schemas: it chains in front of any handler already
 * there and restores it on dispose. A client created with the SDK's own `listChanged`
 * option consumes that notification itself; call `refresh()` from its callback instead.
 *
 * @example
 * ```ts
 * import { Client } from '@modelcontextprotocol/sdk/client/index.js'
 * const client: McpClientLike = new Client({ name: 'my-app', version: '1.0.0' })
 * ```
 */
export interface McpClientLike {
  listTools(params?: { cursor?: string }, options?: McpRequestOptionsLike): Promise<unknown>
  callTool(params: McpCallToolParams, resultSchema?: undefined, options?: McpRequestOptionsLike): Promise<unknown>
  close(): Promise<void>
  fallbackNotificationHandler?: ((notification: McpNotificationLike) => Promise<void>) | undefined
}

/** One MCP content block as a server may send it (text, image, audio, resource link, embedded resource…). */
export interface McpContentLike {
  readonly type: string
  readonly [key: string]: unknown
}

/** An MCP `Tool` as this package emits it from `tools/list`. */
export interface McpToolDescriptor {
  readonly name: string
  readonly description: string
  readonly inputSchema: ObjectJsonSchema
  readonly outputSchema?: ObjectJsonSchema
}

/** An MCP `CallToolResult` as this package emits it from `tools/call`. */
export interface McpCallToolResultOut {
  readonly content: readonly McpContentLike[]
  readonly structuredContent?: { readonly [key: string]: unknown }
  readonly isError?: boolean
}
