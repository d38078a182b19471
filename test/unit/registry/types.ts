export type {
  AnyToolDefinition,
  ToolExecutionInput,
  ToolExecutionResult,
  ToolRunContext,
  ToolExecution,
  ToolFailure,
} from '../../../src/types.js'
export type { JsonValue } from '../../../src/json/json-value.js'
