/**
 * The one definition validator.
 * @module
 */
import { LosslessJsonError, SchemaError, ToolError, type SchemaViolation } from '../errors.js'
import type { JsonValue } from '../json/json-value.js'
import { snapshotLosslessJson } from '../json/lossless.js'
import type { AnyToolDefinition, ToolCaller } from '../types.js'
import { closestNames } from '../code-runtime/closest-names.js'
import { quoteName } from '../util/unknown-field.js'
import type { JsonSchemaNode } from './json-schema-node.js'
import { compileJsonSchema, detachJsonSchema } from './json-schema.js'

const OPTIONAL_FUNCTIONS = [
  'validateArgs',
  'softValidateArgs',
  'finalizeContent',
  'presentCall',
  'presentResult',
  'isConcurrencySafe',
  'preview',
] as const

type OptionalFunctionName = (typeof OPTIONAL_FUNCTIONS)[number]
type AnyFunction = (...args: never[]) => unknown

/** Every member the registry reads from a definition, and from its output declaration. */
const DEFINITION_MEMBERS: readonly string[] = ['name', 'description', 'parameters', 'output', 'execute', 'timeoutMs', 'idempotent', 'callers', ...OPTIONAL_FUNCTIONS]
const OUTPUT_MEMBERS: readonly string[] = ['schema', 'render', 'presentationMeta']

/** Members other tool formats use for what a definition calls otherwise (MCP's `inputSchema`, …). */
const FOREIGN_MEMBERS: Readonly<Record<string, string>> = {
  inputSchema: 'parameters',
  input_schema: 'parameters',
  params: 'parameters',
  args: 'parameters',
  arguments: 'parameters',
  outputSchema: 'output.schema',
  output_schema: 'output.schema',
}

/** A definition's members, read once and checked (schemas still as authored). */
export interface DefinitionMembers {
  readonly name: string
  readonly description: string
  /** As authored: a DSL parameter spec (`defineTool`) or a JSON Schema (`register`). */
  readonly parameters: unknown
  /** The output declaration object (the `this` of `render` and `presentationMeta`). */
  readonly output: object
  /** As authored: a DSL value spec or a JSON Schema. Never undefined. */
  readonly outputSchema: unknown
  readonly render: AnyFunction
  readonly presentationMeta: AnyFunction | undefined
  readonly execute: AnyFunction
  readonly timeoutMs: number | undefined
  /** `idempotent: true` as declared (anything else is `false`). */
  readonly idempotent: boolean
  /** Who may call the tool, as declared (checked, frozen); `undefined` = both. */
  readonly callers: readonly ToolCaller[] | undefined
  /** The optional function members that are present. */
  readonly functions: Readonly<Partial<Record<OptionalFunctionName, AnyFunction>>>
}

/** A registered definition and what the pipeline needs precomputed for it. */
export interface RegisteredTool {
  /** The frozen, detached definition (what `get()` returns). */
  readonly definition: AnyToolDefinition
  /** Validates a canonical value against `output.schema`. */
  readonly validateOutput: (value: unknown) => readonly SchemaViolation[]
}

function invalid(message: string): never {
  throw new ToolError('INVALID_DEFINITION', message)
}

/**
 * Reads `key` of `source` as a data property, walking the prototype chain (definitions may be class
 * instances with methods on the prototype).
 */
function readMember(source: object, key: string, where: string): unknown {
  try {
    let target: object | null = source
    while (target !== null && target !== Object.prototype) {
      const descriptor = Object.getOwnPropertyDescriptor(target, key)
      if (descriptor !== undefined) {
        if (!('value' in descriptor)) invalid(`${where}${key} must be a data property, not an accessor`)
        return descriptor.value as unknown
      }
      target = Object.getPrototypeOf(target) as object | null
    }
    return undefined
  } catch (error) {
    if (error instanceof ToolError) throw error
    invalid(`${where}${key} could not be read (${error instanceof Error ? error.message : String(error)})`)
  }
}

/**
 * Refuses an own member of `source` that reads as a misspelling of one the registry reads
 * (`caller` for `callers`, `timeout` for `timeoutMs`) or as another format's name for one
 * (`inputSchema`): it would be ignored, so `caller: ['code']` would leave the tool callable
 * by the model directly. Other members stay allowed: `execute` and the presenters are called
 * with the definition as `this`, whose own state they may read.
 */
function refuseMisspeltMembers(source: object, known: readonly string[], where: string, prefix: string, foreign: Readonly<Record<string, string>>): void {
  let keys: string[]
  try {
    keys = Object.keys(source)
  } catch (error) {
    invalid(`${where}the members could not be listed (${error instanceof Error ? error.message : String(error)})`)
  }
  for (const key of keys) {
    if (known.includes(key)) continue
    const meant = Object.hasOwn(foreign, key) ? foreign[key] : closestNames(key, known).map((name) => prefix + name)[0]
    if (meant === undefined) continue
    invalid(`${where}unknown member ${quoteName(key, prefix)} (did you mean ${JSON.stringify(meant)}? the members read are ${known.map((name) => prefix + name).join(', ')}); refused, not ignored`)
  }
}

function isFunction(value: unknown): value is AnyFunction {
  return typeof value === 'function'
}

const CALLERS: ReadonlySet<string> = new Set<ToolCaller>(['native', 'code'])

/** `callers` as declared: absent, or a non-empty array of distinct `'native'` / `'code'` (a frozen copy). */
function readCallers(value: unknown, where: string): readonly ToolCaller[] | undefined {
  if (value === undefined) return undefined
  const expected = `${where}callers must be a non-empty array of distinct 'native' / 'code'`
  if (!Array.isArray(value) || value.length === 0 || value.length > CALLERS.size) invalid(`${expected} (got ${JSON.stringify(value) ?? String(value)})`)
  const out: ToolCaller[] = []
  for (let i = 0; i < value.length; i++) {
    // Read as data: an accessor or a hole is refused like a bad entry.
    const descriptor = Object.getOwnPropertyDescriptor(value, i)
    const entry: unknown = descriptor !== undefined && 'value' in descriptor ? descriptor.value : undefined
    if (typeof entry !== 'string' || !CALLERS.has(entry) || out.includes(entry as ToolCaller)) invalid(`${expected} (entry ${i} is ${JSON.stringify(entry) ?? 'not a string'})`)
    out.push(entry as ToolCaller)
  }
  return Object.freeze(out)
}

/**
 * Whether `tool` may be called by `caller`: `native` (the model, directly) or `code` (a Code Mode
 * program).
 * @example
 * ```ts
 * allowsCaller({ callers: ['code'] }, 'native') // false
 * allowsCaller({}, 'code') // true
 * ```
 */
export function allowsCaller(tool: { readonly callers?: readonly ToolCaller[] }, caller: ToolCaller): boolean {
  return tool.callers === undefined || tool.callers.includes(caller)
}

/** Reads and checks every member of a definition. */
export function readToolDefinition(input: unknown): DefinitionMembers {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) invalid('a tool definition must be an object')
  const name = readMember(input, 'name', '')
  if (typeof name !== 'string' || name === '') invalid('a tool definition needs a non-empty string name')
  const where = `tool ${JSON.stringify(name)}: `
  const read = (key: string): unknown => readMember(input, key, where)

  const description = read('description')
  if (typeof description !== 'string') invalid(`${where}description must be a string`)
  const execute = read('execute')
  if (!isFunction(execute)) invalid(`${where}execute must be a function`)
  const output = read('output')
  if (typeof output !== 'object' || output === null) invalid(`${where}the output declaration { schema, render } is missing`)
  const render = readMember(output, 'render', `${where}output.`)
  if (!isFunction(render)) invalid(`${where}output.render must be a function`)
  const presentationMeta = readMember(output, 'presentationMeta', `${where}output.`)
  if (presentationMeta !== undefined && !isFunction(presentationMeta)) invalid(`${where}output.presentationMeta must be a function when present`)
  const outputSchema = readMember(output, 'schema', `${where}output.`)
  if (outputSchema === undefined) invalid(`${where}output.schema is missing`)
  const timeoutMs = read('timeoutMs')
  if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0)) {
    invalid(`${where}timeoutMs must be a positive finite number (got ${String(timeoutMs)})`)
  }
  const idempotent = read('idempotent')
  if (idempotent !== undefined && typeof idempotent !== 'boolean') invalid(`${where}idempotent must be a boolean (got ${typeof idempotent})`)
  const callers = readCallers(read('callers'), where)
  const parameters = read('parameters')
  const functions: Partial<Record<OptionalFunctionName, AnyFunction>> = {}
  for (const key of OPTIONAL_FUNCTIONS) {
    const value = read(key)
    if (value === undefined) continue
    if (!isFunction(value)) invalid(`${where}${key} must be a function when present`)
    functions[key] = value
  }
  // After the members read: a member that fails to read is named as itself first.
  refuseMisspeltMembers(input, DEFINITION_MEMBERS, where, '', FOREIGN_MEMBERS)
  refuseMisspeltMembers(output, OUTPUT_MEMBERS, where, 'output.', {})
  if (parameters === undefined) invalid(`${where}parameters is missing (defineTool: a record of parameter specs, {} for none; register: an object JSON Schema)`)
  return {
    name,
    description,
    parameters,
    output,
    outputSchema,
    render,
    presentationMeta: presentationMeta as AnyFunction | undefined,
    execute,
    timeoutMs: timeoutMs as number | undefined,
    idempotent: idempotent === true,
    callers,
    functions,
  }
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
 * A raw tool's parameters outside the enforced subset: a frozen lossless-JSON copy whose root is an
 * object schema.
 */
function detachRawObjectSchema(schema: unknown): JsonSchemaNode {
  let copy: JsonValue
  try {
    copy = snapshotLosslessJson(schema)
  } catch (error) {
    if (error instanceof LosslessJsonError) throw new SchemaError(error.path, 'a raw parameter schema must be lossless JSON', { cause: error })
    throw error
  }
  if (typeof copy !== 'object' || copy === null || Array.isArray(copy)) throw new SchemaError('', 'a parameter schema must be an object')
  return copy as JsonSchemaNode
}

function detachParameters(members: DefinitionMembers): JsonSchemaNode {
  let parameters: JsonSchemaNode
  try {
    parameters = detachJsonSchema(members.parameters)
  } catch (error) {
    if (members.functions.validateArgs !== undefined || !(error instanceof SchemaError)) reschema(members.name, 'parameters', error)
    try {
      parameters = detachRawObjectSchema(members.parameters)
    } catch (rawError) {
      reschema(members.name, 'parameters', rawError)
    }
  }
  if (parameters.type !== 'object') throw new SchemaError('', `tool ${JSON.stringify(members.name)} parameters: the root must be { type: 'object' }`)
  return parameters
}

/** Checks `input` and returns its detached, frozen registration. */
export function detachToolDefinition(input: unknown): RegisteredTool {
  const members = readToolDefinition(input)
  const parameters = detachParameters(members)
  let outputSchema: JsonSchemaNode
  let validator: ReturnType<typeof compileJsonSchema>
  try {
    outputSchema = detachJsonSchema(members.outputSchema)
    validator = compileJsonSchema(outputSchema)
  } catch (error) {
    reschema(members.name, 'output.schema', error)
  }
  const definition: Record<string, unknown> = {
    name: members.name,
    description: members.description,
    parameters,
    output: Object.freeze({
      schema: outputSchema,
      render: members.render,
      ...(members.presentationMeta !== undefined ? { presentationMeta: members.presentationMeta } : {}),
    }),
    execute: members.execute,
    ...members.functions,
  }
  if (members.timeoutMs !== undefined) definition.timeoutMs = members.timeoutMs
  if (members.idempotent) definition.idempotent = true
  if (members.callers !== undefined) definition.callers = members.callers
  const frozen = Object.freeze(definition) as unknown as AnyToolDefinition
  return Object.freeze({ definition: frozen, validateOutput: (value: unknown) => validator.validate(value) })
}
