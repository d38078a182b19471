/**
 * The typed schema DSL: what `defineTool()` authors write.
 * @module
 */
import { LosslessJsonError, SchemaError } from '../errors.js'
import type { JsonValue } from '../json/json-value.js'
import { escapePointerToken, setOwnData, snapshotLosslessJson } from '../json/lossless.js'
import { detachJsonSchema } from './json-schema.js'
import type { JsonSchemaNode, ObjectJsonSchema } from './json-schema-node.js'

/** Annotations every DSL node may carry; they never change what validates. */
export interface SpecAnnotations {
  /** Shown to the model (and in the generated SDK). */
  readonly description?: string
  readonly title?: string
  /** Documentation only: defaults are never applied. */
  readonly default?: JsonValue
  readonly examples?: readonly JsonValue[]
  readonly deprecated?: boolean
  readonly $comment?: string
}

/** A string node; `enum` / `const` members must be strings. */
export interface StringSpec extends SpecAnnotations {
  readonly type: 'string'
  readonly enum?: readonly string[]
  readonly const?: string
}

/** A finite number node; `enum` / `const` members must be finite numbers. */
export interface NumberSpec extends SpecAnnotations {
  readonly type: 'number'
  readonly enum?: readonly number[]
  readonly const?: number
}

/** An integer node (`Number.isInteger`); `enum` / `const` members must be integers. */
export interface IntegerSpec extends SpecAnnotations {
  readonly type: 'integer'
  readonly enum?: readonly number[]
  readonly const?: number
}

/** A boolean node. */
export interface BooleanSpec extends SpecAnnotations {
  readonly type: 'boolean'
  readonly enum?: readonly boolean[]
  readonly const?: boolean
}

/** The `null` node. */
export interface NullSpec extends SpecAnnotations {
  readonly type: 'null'
}

/** An array; without `items` only the container type is checked. */
export interface ArraySpec extends SpecAnnotations {
  readonly type: 'array'
  readonly items?: ValueSchemaSpec
}

/** An explicit object. */
export interface ObjectSpec extends SpecAnnotations {
  readonly type: 'object'
  readonly properties?: ParameterSchemaSpec
  readonly additionalProperties: boolean
}

/** Author-only "any JSON value" (converts to an annotation-only raw node). */
export interface JsonSpec extends SpecAnnotations {
  readonly type: 'json'
}

/** Exactly one of the branches must match. */
export interface OneOfSpec extends SpecAnnotations {
  readonly oneOf: readonly ValueSchemaSpec[]
}

/** A DSL node for any JSON root. */
export type ValueSchemaSpec =
  | StringSpec
  | NumberSpec
  | IntegerSpec
  | BooleanSpec
  | NullSpec
  | ArraySpec
  | ObjectSpec
  | JsonSpec
  | OneOfSpec

/** A property of an object or of the parameter root: a value spec plus `required`. */
export type PropertySpec = ValueSchemaSpec & {
  /** Exactly `true` makes the property required; absent or `false` leaves it optional. */
  readonly required?: boolean
}

/** The properties of the implicit open parameter object, by name. */
export type ParameterSchemaSpec = { readonly [name: string]: PropertySpec }

const annotationKeys = ['title', 'description', 'default', 'examples', 'deprecated', '$comment'] as const
const dslTypes = new Set(['string', 'number', 'integer', 'boolean', 'null', 'array', 'object', 'json'])
const allowedByType: { readonly [type: string]: ReadonlySet<string> } = {
  string: new Set(['type', 'enum', 'const', ...annotationKeys]),
  number: new Set(['type', 'enum', 'const', ...annotationKeys]),
  integer: new Set(['type', 'enum', 'const', ...annotationKeys]),
  boolean: new Set(['type', 'enum', 'const', ...annotationKeys]),
  null: new Set(['type', ...annotationKeys]),
  array: new Set(['type', 'items', ...annotationKeys]),
  object: new Set(['type', 'properties', 'additionalProperties', ...annotationKeys]),
  json: new Set(['type', ...annotationKeys]),
  oneOf: new Set(['oneOf', ...annotationKeys]),
}
const hasOwn = Object.prototype.hasOwnProperty

function at(base: string, ...tokens: string[]): string {
  let out = base
  for (const t of tokens) out += '/' + escapePointerToken(t)
  return out
}

function memberOk(type: string, value: unknown): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string'
    case 'number':
      return typeof value === 'number' && Number.isFinite(value)
    case 'integer':
      return Number.isInteger(value)
    case 'boolean':
      return typeof value === 'boolean'
    default:
      return false
  }
}

function snapshotSpec(spec: unknown): JsonValue {
  try {
    return snapshotLosslessJson(spec)
  } catch (error) {
    if (error instanceof LosslessJsonError) {
      throw new SchemaError(error.path, `schema spec is not lossless JSON: ${error.message.replace(/ at [^ ]*$|at the root$/, '').trim()}`, { cause: error })
    }
    throw error
  }
}

interface Work {
  readonly spec: JsonValue | undefined
  readonly path: string
  readonly target: Record<string, unknown>
  /** Whether `required` may appear (property position). */
  readonly property: boolean
}

/** Converts one DSL node (without its children) into `target` and queues the children. */
/** Names what a typeless spec carries instead (`$ref`, `anyOf`…), so the author sees why. */
function missingTypeMessage(spec: { readonly [key: string]: JsonValue }): string {
  const keys = Object.keys(spec).filter((key) => !['description', 'title', 'default', 'examples', 'deprecated', '$comment', 'required'].includes(key))
  const found = keys.length === 0 ? '' : ` (found ${keys.slice(0, 3).map((key) => JSON.stringify(key)).join(', ')}${keys.length > 3 ? ', …' : ''}; raw JSON Schema keywords are not DSL)`
  return `a schema spec needs a "type" (or "oneOf")${found}`
}

function convertNode(work: Work, queue: Work[]): void {
  const { spec, path, target, property } = work
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    throw new SchemaError(path, 'a schema spec must be an object')
  }
  const s = spec as { readonly [key: string]: JsonValue }
  const isOneOf = !hasOwn.call(s, 'type') && hasOwn.call(s, 'oneOf')
  const type = isOneOf ? 'oneOf' : s.type
  if (typeof type !== 'string' || !(dslTypes.has(type) || type === 'oneOf')) {
    throw new SchemaError(hasOwn.call(s, 'type') ? at(path, 'type') : path, hasOwn.call(s, 'type') ? `unsupported DSL type ${JSON.stringify(type)}` : missingTypeMessage(s))
  }
  const allowed = allowedByType[type]!
  for (const key of Object.keys(s)) {
    if (key === 'required') {
      if (!property) throw new SchemaError(at(path, key), '"required" is only allowed on a property')
      if (typeof s.required !== 'boolean') throw new SchemaError(at(path, key), '"required" must be a boolean')
      continue
    }
    if (!allowed.has(key)) throw new SchemaError(at(path, key), `unsupported DSL keyword "${key}" for ${type === 'oneOf' ? 'a oneOf node' : `type "${type}"`}`)
  }
  if (type !== 'json' && type !== 'oneOf') target.type = type
  for (const key of ['title', 'description', '$comment'] as const) {
    if (hasOwn.call(s, key)) {
      // Stryker disable next-line ConditionalExpression: the subset reader
      if (typeof s[key] !== 'string') throw new SchemaError(at(path, key), `"${key}" must be a string`)
      target[key] = s[key]
    }
  }
  if (hasOwn.call(s, 'enum')) {
    const values = s.enum
    // Stryker disable next-line ConditionalExpression,LogicalOperator: the subset reader
    if (!Array.isArray(values) || values.length === 0) throw new SchemaError(at(path, 'enum'), '"enum" must be a non-empty array')
    const seen = new Set<unknown>()
    for (let i = 0; i < values.length; i++) {
      if (!memberOk(type, values[i])) throw new SchemaError(at(path, 'enum', String(i)), `enum member ${JSON.stringify(values[i])} is not a ${type}`)
      if (seen.has(values[i])) throw new SchemaError(at(path, 'enum', String(i)), `duplicate enum member ${JSON.stringify(values[i])}`)
      seen.add(values[i])
    }
    target.enum = values
  }
  if (hasOwn.call(s, 'const')) {
    if (!memberOk(type, s.const)) throw new SchemaError(at(path, 'const'), `const ${JSON.stringify(s.const)} is not a ${type}`)
    target.const = s.const
  }
  if (type === 'object') {
    if (!hasOwn.call(s, 'additionalProperties')) {
      throw new SchemaError(path, 'an explicit object must declare "additionalProperties": true or false')
    }
    if (typeof s.additionalProperties !== 'boolean') throw new SchemaError(at(path, 'additionalProperties'), '"additionalProperties" must be true or false')
    if (hasOwn.call(s, 'properties')) convertProperties(s.properties, at(path, 'properties'), target, queue)
    target.additionalProperties = s.additionalProperties
  }
  if (type === 'array' && hasOwn.call(s, 'items')) {
    const items: Record<string, unknown> = {}
    target.items = items
    queue.push({ spec: s.items, path: at(path, 'items'), target: items, property: false })
  }
  if (type === 'oneOf') {
    const branches = s.oneOf
    if (!Array.isArray(branches) || branches.length === 0) throw new SchemaError(at(path, 'oneOf'), '"oneOf" must be a non-empty array of specs')
    const out: Record<string, unknown>[] = []
    for (let i = 0; i < branches.length; i++) {
      const branch: Record<string, unknown> = {}
      out.push(branch)
      queue.push({ spec: branches[i], path: at(path, 'oneOf', String(i)), target: branch, property: false })
    }
    target.oneOf = out
  }
  if (hasOwn.call(s, 'deprecated')) {
    // Stryker disable next-line ConditionalExpression: the subset reader
    if (typeof s.deprecated !== 'boolean') throw new SchemaError(at(path, 'deprecated'), '"deprecated" must be a boolean')
    target.deprecated = s.deprecated
  }
  if (hasOwn.call(s, 'default')) target.default = s.default
  if (hasOwn.call(s, 'examples')) {
    // Stryker disable next-line ConditionalExpression: the subset reader
    if (!Array.isArray(s.examples)) throw new SchemaError(at(path, 'examples'), '"examples" must be an array')
    target.examples = s.examples
  }
}

function convertProperties(record: JsonValue | undefined, path: string, target: Record<string, unknown>, queue: Work[]): void {
  if (typeof record !== 'object' || record === null || Array.isArray(record)) {
    throw new SchemaError(path, 'properties must be a record of property specs')
  }
  const properties: Record<string, unknown> = {}
  const required: string[] = []
  for (const name of Object.keys(record)) {
    const spec = (record as { readonly [key: string]: JsonValue })[name]
    const node: Record<string, unknown> = {}
    setOwnData(properties, name, node)
    if (typeof spec === 'object' && spec !== null && !Array.isArray(spec) && (spec as { required?: unknown }).required === true) {
      required.push(name)
    }
    queue.push({ spec, path: at(path, name), target: node, property: true })
  }
  target.properties = properties
  if (required.length > 0) target.required = required
}

function run(queue: Work[]): void {
  // Converted children are queued in order.
  for (let i = 0; i < queue.length; i++) {
    convertNode(queue[i]!, queue)
    queue[i] = undefined as unknown as Work
  }
}

/**
 * Converts a DSL value spec (any JSON root) into a detached, deep-frozen raw schema.
 *
 * @throws {SchemaError} (code `INVALID_SCHEMA`) naming the offending spec location.
 *
 * @example
 * ```ts
 * valueSchemaSpecToJsonSchema({ type: 'array', items: { type: 'string', enum: ['a', 'b'] } })
 * // { type: 'array', items: { type: 'string', enum: ['a', 'b'] } }
 * ```
 */
export function valueSchemaSpecToJsonSchema(spec: ValueSchemaSpec): JsonSchemaNode {
  const snapshot = snapshotSpec(spec)
  const root: Record<string, unknown> = {}
  run([{ spec: snapshot, path: '', target: root, property: false }])
  return detachJsonSchema(root)
}

/**
 * Converts a parameter spec (the properties of the implicit, open parameter object)
 * into a detached, deep-frozen object schema: `{ type: 'object', properties,
 * required? }` with no `additionalProperties`, so the root stays open.
 *
 * @throws {SchemaError} (code `INVALID_SCHEMA`) naming the offending spec location.
 *
 * @example
 * ```ts
 * parameterSchemaSpecToJsonSchema({ path: { type: 'string', required: true }, offset: { type: 'number' } })
 * // { type: 'object', properties: { path: { type: 'string' }, offset: { type: 'number' } }, required: ['path'] }
 * ```
 */
export function parameterSchemaSpecToJsonSchema(spec: ParameterSchemaSpec): ObjectJsonSchema {
  const snapshot = snapshotSpec(spec)
  const root: Record<string, unknown> = { type: 'object' }
  const queue: Work[] = []
  convertProperties(snapshot, '', root, queue)
  run(queue)
  return detachJsonSchema(root) as ObjectJsonSchema
}
