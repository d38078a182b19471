/**
 * `toolyard/mcp`: MCP in and out. {@link importMcpTools} registers an MCP server's tools
 * (any client shaped like the SDK's `Client`); {@link createMcpApp} serves a runtime as a
 * stateless Streamable HTTP MCP server (a Hono sub-app). Neither imports the MCP SDK.
 *
 * @module
 */
export { importMcpTools, MCP_CONTENT_OUTPUT_SCHEMA } from './import.js'
export type { McpImport, McpImportOptions, McpImportSkip } from './import.js'
export {
  createMcpApp,
  listMcpTools,
  callMcpTool,
  MCP_PROTOCOL_VERSIONS,
  JSON_RPC_ERRORS,
  DEFAULT_MCP_MAX_BATCH_LENGTH,
  DEFAULT_MCP_MAX_BATCH_RESPONSE_BYTES,
} from './server.js'
export type { McpAppOptions } from './server.js'
export { mcpContentToBlocks, blocksToMcpContent, mcpContentText } from './content.js'
export type {
  McpCallToolParams,
  McpCallToolResultOut,
  McpClientLike,
  McpContentLike,
  McpNotificationLike,
  McpRequestOptionsLike,
  McpToolDescriptor,
} from './mcp-types.js'
