/**
 * `toolyard/mcp`: {@link importMcpTools} registers an MCP server's tools; {@link createMcpApp}
 * serves a runtime as a stateless Streamable HTTP MCP server. No MCP SDK import.
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
