/**
 * Registration-time checks and detachment of tool definitions. A registered definition
 * is a frozen copy: its schemas are detached (checked, deep-frozen copies) and its
 * functions captured, so mutating the author's object afterwards changes nothing.
 *
 * @module
 */
import { LosslessJsonError, SchemaError, ToolError } from '../errors.js'
import type { SchemaViolation } from '../errors.js'
import { assertSupportedJsonSchema, compileJsonSchema, detachJsonSchema } from '../schema/json-schema.js'
import { snapshotLosslessJson } from '../json/lossless.js'
import type { JsonValue } from '../json/json-value.js'
import type { JsonSchemaNode } from '../schema/json-schema-node.js'
import type { AnyToolDefinition } from '../types.js'

/** A registered definition and what the pipeline needs precomputed for it. */
export interface RegisteredTool {
  /** The frozen, detached definition (what `get()` returns). */
  readonly definition: AnyToolDefinition
  /** Validates a canonical value against `output.schema`. */
  readonly validateOutput: (value: unknown) => readonly SchemaViolation[]
}

const OPTIONAL_FUNCTIONS = [
  'validateArgs',
  'softValidateArgs',
  'finalizeContent',
  'presentCall',
  'presentResult',
  'isConcurrencySafe',
] as const

function invalid(name: string, message: string): never {
  throw new ToolError('INVALID_DEFINITION', `tool ${JSON.stringify(name)}: ${message}`)
}

/** Reads an own data property without running a getter (a getter is a definition error). */
function read(source: object, key: string, name: string): unknown {
  let descriptor: PropertyDescriptor | undefined
  let target: object | null = source
  // Definitions may be class instances (methods on the prototype), so walk the chain.
  while (target !== null && target !== Object.prototype) {
    descriptor = Object.getOwnPropertyDescriptor(target, key)
    if (descriptor !== undefined) break
    target = Object.getPrototypeOf(target) as object | null
  }
  if (descriptor === undefined) return undefined
  if (!('value' in descriptor)) invalid(name, `${key} must be a data property, not an accessor`)
  return descriptor.value as unknown
}

function reschema(name: string, where: string, error: unknown): never {
  if (error instanceof SchemaError) {
    // SchemaError appends " at <path>" itself: re-wrap the bare message, not the full one.
    const suffix = ` at ${error.path === '' ? 'the schema root' : error.path}`
    const bare = error.message.endsWith(suffix) ? error.message.slice(0, -suffix.length) : error.message
    throw new SchemaError(error.path, `tool ${JSON.stringify(name)} ${where}: ${bare}`, { cause: error })
  }
  if (error instanceof ToolError) throw error
  throw new ToolError('INVALID_SCHEMA', `tool ${JSON.stringify(name)} ${where}: ${String(error)}`, { cause: error })
}

/**
 * Checks `input` and returns its detached, frozen registration. Throws
 * `INVALID_DEFINITION` for a malformed definition (no output declaration, bad
 * `timeoutMs`, non-function members…) and `INVALID_SCHEMA` (a `SchemaError`) for an
 * unsupported parameter or output schema.
 */
export function detachDefinition(input: unknown): RegisteredTool {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ToolError('INVALID_DEFINITION', 'a tool definition must be an object')
  }
  const rawName = read(input, 'name', '?')
  if (typeof rawName !== 'string' || rawName === '') {
    throw new ToolError('INVALID_DEFINITION', 'a tool definition needs a non-empty string name')
  }
  const name = rawName
  const description = read(input, 'description', name)
  if (typeof description !== 'string') invalid(name, 'description must be a string')

  // A typed tool (one with `validateArgs`) validates against its parameters, so they
  // must be in the enforced subset. A raw tool owns its input validation (an MCP server,
  // say): its parameters are presented to models as is — any lossless-JSON object
  // schema — and the SDK degrades what it cannot type to `unknown`.
  let parameters
  const rawParameters = read(input, 'parameters', name)
  try {
    parameters =
      read(input, 'validateArgs', name) === undefined && !isSupportedJsonSchema(rawParameters)
        ? detachRawObjectSchema(rawParameters)
        : detachJsonSchema(rawParameters)
  } catch (error) {
    reschema(name, 'parameters', error)
  }
  if (parameters.type !== 'object') {
    throw new SchemaError('', `tool ${JSON.stringify(name)} parameters: the root must be { type: 'object' }`)
  }

  const output = read(input, 'output', name)
  if (typeof output !== 'object' || output === null) {
    invalid(name, 'the output declaration { schema, render } is missing')
  }
  const render = read(output, 'render', name)
  if (typeof render !== 'function') invalid(name, 'output.render must be a function')
  const presentationMeta = read(output, 'presentationMeta', name)
  if (presentationMeta !== undefined && typeof presentationMeta !== 'function') {
    invalid(name, 'output.presentationMeta must be a function when present')
  }
  const rawOutputSchema = read(output, 'schema', name)
  if (rawOutputSchema === undefined) invalid(name, 'output.schema is missing')
  let outputSchema
  let validator
  try {
    outputSchema = detachJsonSchema(rawOutputSchema)
    validator = compileJsonSchema(outputSchema)
  } catch (error) {
    reschema(name, 'output.schema', error)
  }

  const execute = read(input, 'execute', name)
  if (typeof execute !== 'function') invalid(name, 'execute must be a function')

  const timeoutMs = read(input, 'timeoutMs', name)
  if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0)) {
    invalid(name, `timeoutMs must be a positive finite number (got ${String(timeoutMs)})`)
  }

  const definition: Record<string, unknown> = {
    name,
    description,
    parameters,
    output: Object.freeze({
      schema: outputSchema,
      render,
      ...(presentationMeta !== undefined ? { presentationMeta } : {}),
    }),
    execute,
  }
  for (const key of OPTIONAL_FUNCTIONS) {
    const value = read(input, key, name)
    if (value === undefined) continue
    if (typeof value !== 'function') invalid(name, `${key} must be a function when present`)
    definition[key] = value
  }
  if (timeoutMs !== undefined) definition.timeoutMs = timeoutMs

  const frozen = Object.freeze(definition) as unknown as AnyToolDefinition
  const compiled = validator
  return Object.freeze({ definition: frozen, validateOutput: (value: unknown) => compiled.validate(value) })
}

function isSupportedJsonSchema(schema: unknown): boolean {
  try {
    assertSupportedJsonSchema(schema)
    return true
  } catch {
    return false
  }
}

/**
 * A raw tool's parameters outside the enforced subset: a frozen lossless-JSON copy whose
 * root is an object schema. Nothing validates against it here (the tool owns that).
 */
function detachRawObjectSchema(schema: unknown): JsonSchemaNode {
  let copy: JsonValue
  try {
    copy = snapshotLosslessJson(schema)
  } catch (error) {
    if (error instanceof LosslessJsonError) throw new SchemaError(error.path, 'a raw parameter schema must be lossless JSON', { cause: error })
    throw error
  }
  if (typeof copy !== 'object' || copy === null || Array.isArray(copy)) {
    throw new SchemaError('', 'a parameter schema must be an object')
  }
  return copy as JsonSchemaNode
}
