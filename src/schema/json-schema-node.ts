/**
 * The raw JSON Schema subset toolyard enforces (the seam type only; checks live in
 * `json-schema.ts`).
 * @module
 */
import type { JsonPrimitive, JsonValue } from '../json/json-value.js'

/** JSON Schema `type` names in the supported subset. */
export type JsonSchemaTypeName = 'string' | 'number' | 'integer' | 'boolean' | 'null' | 'array' | 'object'

/** Keywords that only annotate; they never change what validates. */
export interface JsonSchemaAnnotations {
  readonly title?: string
  readonly description?: string
  readonly default?: JsonValue
  readonly examples?: readonly JsonValue[]
  readonly deprecated?: boolean
  readonly readOnly?: boolean
  readonly writeOnly?: boolean
  readonly $comment?: string
}

/** One node of the supported raw JSON Schema subset. */
export interface JsonSchemaNode extends JsonSchemaAnnotations {
  readonly type?: JsonSchemaTypeName
  readonly enum?: readonly JsonPrimitive[]
  readonly const?: JsonPrimitive
  readonly properties?: { readonly [name: string]: JsonSchemaNode }
  readonly required?: readonly string[]
  readonly additionalProperties?: boolean
  readonly items?: JsonSchemaNode
  readonly oneOf?: readonly JsonSchemaNode[]
}

/** A JSON Schema whose root is an object: tool parameters, subagent/workflow outputs. */
export interface ObjectJsonSchema extends JsonSchemaNode {
  readonly type: 'object'
}
