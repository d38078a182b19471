/**
 * toolyard: a typed tool registry, execution pipeline and Code Mode bridge for LLM agents.
 * @module
 */

// The registry and pipeline
export { createToolRuntime, routeBackMessage, CODE_ONLY_SECTION, SDK_SECTION } from './registry/index.js'
export { DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_PARALLEL_SUB_CALLS, DEFAULT_SDK_BUDGET_CHARS } from './registry/index.js'
export { runToolCalls, type RunToolCallsOptions } from './registry/index.js'
export { createCallPool, type CallPool, type CallPoolOptions } from './scheduler.js'
export { timeoutPolicy, type TimeoutPolicyOptions } from './timeout-policy.js'
export { createMemorySessionLog, type MemorySessionLog, type MemorySessionLogOptions } from './session-log.js'

// Human approval of `ask` decisions
export {
  createApprovalBroker,
  DEFAULT_APPROVAL_POLL_INTERVAL_MS,
  DEFAULT_APPROVAL_RETAIN_SETTLED_MS,
  DEFAULT_APPROVAL_TIMEOUT_MS,
  MAX_APPROVAL_REASON_LENGTH,
  MAX_LISTED_APPROVALS,
} from './approvals/index.js'
export {
  DEFAULT_APPROVAL_RENDER_BYTES,
  DEFAULT_PREVIEW_RENDER_BYTES,
  PREVIEW_TIMEOUT_MS,
  renderApprovalArguments,
  renderApprovalPreview,
  type ApprovalRenderOptions,
  type ApprovalRenderTool,
  type RenderedApprovalArguments,
} from './approvals/index.js'
export type * from './approvals/types.js'

// Schemas, validation and lossless JSON
export * from './schema/index.js'

// Code Mode
export {
  RUN_CODE_TOOL_NAME,
  createRunCodeTool,
  type CodeModeHost,
  type CodeModeRegistry,
  type RunCodeArgs,
  type RunCodeOutput,
} from './code-mode/run-code.js'
export { prettyJson, renderRunCodeOutput, RUN_CODE_NO_OUTPUT, type PrettyJsonOptions } from './code-mode/render-output.js'
export {
  hasSdkRenderer,
  renderToolDeclaration,
  renderToolsSdk,
  renderToolsSdkWithinBudget,
  type RenderToolsSdkOptions,
  type SdkForm,
  type SdkToolInput,
  type SdkWithinBudget,
} from './code-mode/sdk.js'
export { CATALOG_BINDINGS_GLOBAL } from './code-mode/catalog-bindings.js'
export { jsonSchemaToTs, type JsonSchemaToTsOptions } from './code-mode/sdk-typescript.js'
export { jsonSchemaToPy, type JsonSchemaToPyOptions } from './code-mode/sdk-python.js'
export { TYPESCRIPT_SDK_INSTRUCTIONS, PYTHON_SDK_INSTRUCTIONS } from './code-mode/sdk-instructions.js'

// Tool discovery: the lexical catalog and the compact index
export * from './catalog/index.js'

// Preflight: a program's type errors and call plan before it runs
export * from './preflight/index.js'

// The durable store seam and its in-memory driver (docs/durability.md)
export * from './durable/index.js'
// OpenTelemetry (objects of the API's shape, passed in `ToolRuntimeOptions.telemetry`)
export * from './telemetry/index.js'

// Errors
export {
  CodeRunFailedError,
  LosslessJsonError,
  SchemaError,
  ToolArgsError,
  ToolCallError,
  ToolError,
  toErrorData,
  type CodeRunFailureKind,
  type ErrorData,
  type SchemaViolation,
  type ToolErrorCode,
  type ToolErrorOptions,
} from './errors.js'

// Seam types
export type * from './types.js'
export type * from './runtime-types.js'
export type * from './presentation.js'
export type * from './json/json-value.js'
export type * from './code-runtime/contract.js'
