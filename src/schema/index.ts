/**
 * The schema layer's public API: the typed DSL and `defineTool()`, the enforced raw
 * JSON Schema subset and its validator, and lossless JSON snapshots.
 *
 * @module
 */
export type { JsonSchemaAnnotations, JsonSchemaNode, JsonSchemaTypeName, ObjectJsonSchema } from './json-schema-node.js'
export {
  SUPPORTED_JSON_SCHEMA_KEYWORDS,
  assertObjectJsonSchema,
  assertSupportedJsonSchema,
  compileJsonSchema,
  detachJsonSchema,
  validateJsonSchemaValue,
  type CompiledJsonSchema,
  type ValidateOptions,
} from './json-schema.js'
export {
  parameterSchemaSpecToJsonSchema,
  valueSchemaSpecToJsonSchema,
  type ArraySpec,
  type BooleanSpec,
  type IntegerSpec,
  type JsonSpec,
  type NullSpec,
  type NumberSpec,
  type ObjectSpec,
  type OneOfSpec,
  type ParameterSchemaSpec,
  type PropertySpec,
  type SpecAnnotations,
  type StringSpec,
  type ValueSchemaSpec,
} from './dsl.js'
export type { InferArgs, InferDepth, InferValue } from './infer.js'
export { allowsCaller } from './tool-definition.js'
export { defineTool, validateArgs, type DefinedTool, type ToolOutputSpec, type ToolSpec } from './define-tool.js'
export { isJsonSnapshot, snapshotLosslessJson, toJsonPointer } from '../json/lossless.js'
