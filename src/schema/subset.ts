/**
 * The raw JSON Schema subset as data, in one place: its keyword tables, the one reader of a schema
 * node, and the node classifier the SDK renderers draw from.
 * @module
 */
import type { JsonPrimitive } from '../json/json-value.js'
import type { JsonSchemaTypeName } from './json-schema-node.js'

/** The `type` names of the subset. */
export const JSON_SCHEMA_TYPE_NAMES: readonly JsonSchemaTypeName[] = Object.freeze([
  'string',
  'number',
  'integer',
  'boolean',
  'null',
  'array',
  'object',
])

/** The keywords that change what validates. */
export const VALIDATION_KEYWORDS: readonly string[] = Object.freeze([
  'type',
  'enum',
  'const',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'oneOf',
])

/** Annotation keyword → the JSON type its value must have (`json`: any lossless JSON). */
const ANNOTATION_TYPES: Readonly<Record<string, 'string' | 'boolean' | 'array' | 'json'>> = Object.freeze({
  title: 'string',
  description: 'string',
  $comment: 'string',
  deprecated: 'boolean',
  readOnly: 'boolean',
  writeOnly: 'boolean',
  default: 'json',
  examples: 'array',
})

/** The keywords that only annotate; they never change what validates. */
export const ANNOTATION_KEYWORDS: readonly string[] = Object.freeze(Object.keys(ANNOTATION_TYPES))

/** Every keyword the subset accepts (validation keywords + annotations). */
export const SUPPORTED_JSON_SCHEMA_KEYWORDS: readonly string[] = Object.freeze([...VALIDATION_KEYWORDS, ...ANNOTATION_KEYWORDS])

/**
 * Keywords outside the subset that never change which JSON *type* a value has: identifiers and
 * constraints that only narrow within a type.
 */
export const NARROWING_KEYWORDS: readonly string[] = Object.freeze([
  '$schema',
  '$id',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
  'contentMediaType',
  'contentEncoding',
])

const TYPE_NAMES: ReadonlySet<string> = new Set(JSON_SCHEMA_TYPE_NAMES)
const VALIDATION: ReadonlySet<string> = new Set(VALIDATION_KEYWORDS)
const NARROWING: ReadonlySet<string> = new Set(NARROWING_KEYWORDS)
const hasOwn = Object.prototype.hasOwnProperty

/** How a node is read: for the validator (everything outside the subset is a problem) or for rendering. */
export type SchemaReadMode = 'enforce' | 'render'

/** What is wrong with a node: where (JSON Pointer tokens below the node) and why. */
export interface SchemaNodeProblem {
  readonly at: readonly string[]
  readonly message: string
}

/** One schema node read against the subset. Fields are meaningful only when `problem` is undefined. */
export interface SchemaNodeReading {
  readonly problem: SchemaNodeProblem | undefined
  readonly type: JsonSchemaTypeName | undefined
  readonly enumValues: readonly JsonPrimitive[] | undefined
  readonly hasConst: boolean
  readonly constValue: JsonPrimitive
  /** Declared properties in key order: [name, schema]. */
  readonly properties: readonly (readonly [string, unknown])[] | undefined
  readonly required: readonly string[] | undefined
  readonly additionalProperties: boolean | undefined
  readonly hasItems: boolean
  readonly items: unknown
  readonly oneOf: readonly unknown[] | undefined
  /** How many validation keywords the node carries. */
  readonly validationKeywords: number
}

/** A record in the JSON sense: an object that is not an array. */
export function isSchemaRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** A JSON scalar as `enum` / `const` admit it (finite numbers only). */
export function isJsonScalar(value: unknown): value is JsonPrimitive {
  return value === null || typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))
}

function describeNonObject(schema: unknown): string {
  if (typeof schema === 'boolean') return `boolean schema (${String(schema)})`
  if (Array.isArray(schema)) return 'an array'
  return `a ${schema === null ? 'null' : typeof schema}`
}

/** A reading that carries only a problem. */
function problemAt(at: readonly string[], message: string): SchemaNodeReading {
  return {
    problem: { at, message },
    type: undefined,
    enumValues: undefined,
    hasConst: false,
    constValue: null,
    properties: undefined,
    required: undefined,
    additionalProperties: undefined,
    hasItems: false,
    items: undefined,
    oneOf: undefined,
    validationKeywords: 0,
  }
}

/** The first keyword the mode does not accept, or a malformed annotation (enforce only). */
function checkKeywords(node: Record<string, unknown>, mode: SchemaReadMode): SchemaNodeProblem | undefined {
  for (const key of Object.keys(node)) {
    if (VALIDATION.has(key)) continue
    if (hasOwn.call(ANNOTATION_TYPES, key)) {
      if (mode === 'render') continue
      const expected = ANNOTATION_TYPES[key]
      const value = node[key]
      if (expected === 'string' && typeof value !== 'string') return { at: [key], message: `"${key}" must be a string` }
      if (expected === 'boolean' && typeof value !== 'boolean') return { at: [key], message: `"${key}" must be a boolean` }
      if (expected === 'array' && !Array.isArray(value)) return { at: [key], message: `"${key}" must be an array` }
    } else if (mode === 'enforce' || !NARROWING.has(key)) {
      return { at: [], message: `unsupported keyword "${key}"` }
    }
  }
  return undefined
}

/**
 * Reads one schema node against the subset without descending into its children (the callers walk
 * with their own explicit stacks, so reading stays stack-safe). A getter or Proxy trap may still
 * throw: callers reading untrusted objects catch (the validator reads frozen lossless snapshots,
 * which have none).
 */
export function readSchemaNode(schema: unknown, mode: SchemaReadMode): SchemaNodeReading {
  if (!isSchemaRecord(schema)) return problemAt([], `unsupported schema: expected an object, got ${describeNonObject(schema)}`)
  const keywordProblem = checkKeywords(schema, mode)
  if (keywordProblem !== undefined) return problemAt(keywordProblem.at, keywordProblem.message)
  const enforce = mode === 'enforce'
  let validationKeywords = 0

  let type: JsonSchemaTypeName | undefined
  if (hasOwn.call(schema, 'type')) {
    validationKeywords++
    const raw = schema.type
    if (typeof raw !== 'string' || !TYPE_NAMES.has(raw)) {
      return problemAt(['type'], Array.isArray(raw) ? 'unsupported "type" array (use oneOf)' : `unsupported type ${JSON.stringify(raw)}`)
    }
    type = raw as JsonSchemaTypeName
  }

  let enumValues: JsonPrimitive[] | undefined
  if (hasOwn.call(schema, 'enum')) {
    validationKeywords++
    const values = schema.enum
    if (!Array.isArray(values) || (enforce && values.length === 0)) return problemAt(['enum'], '"enum" must be a non-empty array')
    for (let i = 0; i < values.length; i++) {
      if (!isJsonScalar(values[i])) return problemAt(['enum', String(i)], 'unsupported non-scalar "enum" member')
    }
    enumValues = values as JsonPrimitive[]
  }

  let hasConst = false
  let constValue: JsonPrimitive = null
  if (hasOwn.call(schema, 'const')) {
    validationKeywords++
    const value = schema.const
    if (!isJsonScalar(value)) return problemAt(['const'], 'unsupported non-scalar "const"')
    hasConst = true
    constValue = value
  }

  let additionalProperties: boolean | undefined
  if (hasOwn.call(schema, 'additionalProperties')) {
    validationKeywords++
    const value = schema.additionalProperties
    if (typeof value !== 'boolean') return problemAt(['additionalProperties'], 'unsupported "additionalProperties" schema (only true or false)')
    additionalProperties = value
  }

  let required: string[] | undefined
  if (hasOwn.call(schema, 'required')) {
    validationKeywords++
    const names = schema.required
    if (!Array.isArray(names)) return problemAt(['required'], '"required" must be an array of property names')
    const seen = new Set<string>()
    for (let i = 0; i < names.length; i++) {
      const name: unknown = names[i]
      if (typeof name !== 'string') return problemAt(['required', String(i)], '"required" entries must be strings')
      if (seen.has(name)) {
        if (enforce) return problemAt(['required', String(i)], `duplicate required name "${name}"`)
        continue
      }
      seen.add(name)
    }
    required = [...seen]
  }

  let properties: (readonly [string, unknown])[] | undefined
  if (hasOwn.call(schema, 'properties')) {
    validationKeywords++
    const props = schema.properties
    if (!isSchemaRecord(props)) return problemAt(['properties'], '"properties" must be an object of schemas')
    properties = Object.keys(props).map((name) => [name, hasOwn.call(props, name) ? props[name] : undefined] as const)
  }

  let hasItems = false
  let items: unknown
  if (hasOwn.call(schema, 'items')) {
    validationKeywords++
    items = schema.items
    if (Array.isArray(items)) return problemAt(['items'], 'unsupported tuple "items" (use one schema)')
    hasItems = true
  }

  let oneOf: unknown[] | undefined
  if (hasOwn.call(schema, 'oneOf')) {
    validationKeywords++
    const branches = schema.oneOf
    if (!Array.isArray(branches) || (enforce && branches.length === 0)) return problemAt(['oneOf'], '"oneOf" must be a non-empty array of schemas')
    oneOf = Array.from(branches)
  }

  return { problem: undefined, type, enumValues, hasConst, constValue, properties, required, additionalProperties, hasItems, items, oneOf, validationKeywords }
}

// ───────────────────────── the classifier (for rendering) ─────────────────────────

/** One property of an object node as the renderers see it. */
export interface SchemaPropertyShape {
  readonly name: string
  readonly schema: unknown
  readonly required: boolean
  /** The property's description, when it is a string. */
  readonly description?: string
  readonly deprecated: boolean
}

/** A schema node classified for rendering. */
export type SchemaShape =
  | { readonly kind: 'unsupported' }
  | { readonly kind: 'any' }
  | { readonly kind: 'never' }
  | { readonly kind: 'primitive'; readonly type: 'string' | 'number' | 'integer' | 'boolean' | 'null' }
  | { readonly kind: 'literals'; readonly values: readonly JsonPrimitive[] }
  | { readonly kind: 'array'; readonly items: unknown; readonly hasItems: boolean }
  | { readonly kind: 'object'; readonly properties: readonly SchemaPropertyShape[]; readonly open: boolean; readonly explicitlyOpen: boolean }
  | { readonly kind: 'oneOf'; readonly branches: readonly unknown[] }

const UNSUPPORTED: SchemaShape = Object.freeze({ kind: 'unsupported' })
const NEVER: SchemaShape = Object.freeze({ kind: 'never' })

function matchesType(value: JsonPrimitive, type: JsonSchemaTypeName | undefined): boolean {
  switch (type) {
    case undefined:
      return true
    case 'string':
      return typeof value === 'string'
    case 'number':
      return typeof value === 'number'
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value)
    case 'boolean':
      return typeof value === 'boolean'
    case 'null':
      return value === null
    default:
      return false
  }
}

/** `enum` ∩ `const`, filtered by `type` and deduplicated: the literal union a node admits. */
function literalShape(node: SchemaNodeReading): SchemaShape {
  let values: readonly JsonPrimitive[] = node.enumValues ?? []
  if (node.hasConst) values = node.enumValues === undefined || values.includes(node.constValue) ? [node.constValue] : []
  const kept: JsonPrimitive[] = []
  const seen = new Set<string>()
  for (const value of values) {
    if (!matchesType(value, node.type)) continue
    const key = JSON.stringify(value)
    if (seen.has(key)) continue
    seen.add(key)
    kept.push(value)
  }
  return kept.length === 0 ? NEVER : { kind: 'literals', values: kept }
}

function objectShape(node: SchemaNodeReading): SchemaShape {
  const required = new Set(node.required ?? [])
  const properties: SchemaPropertyShape[] = []
  const declared = new Set<string>()
  for (const [name, schema] of node.properties ?? []) {
    declared.add(name)
    let description: string | undefined
    let deprecated = false
    if (isSchemaRecord(schema)) {
      const d = hasOwn.call(schema, 'description') ? schema.description : undefined
      if (typeof d === 'string') description = d
      deprecated = hasOwn.call(schema, 'deprecated') && schema.deprecated === true
    }
    properties.push({ name, schema, required: required.has(name), deprecated, ...(description === undefined ? {} : { description }) })
  }
  // A required name with no declared schema still has to be present: any JSON value.
  for (const name of required) {
    if (!declared.has(name)) properties.push({ name, schema: {}, required: true, deprecated: false })
  }
  // `explicitlyOpen`: the schema says `additionalProperties: true`, so other keys mean something (the SDK renders them).
  return { kind: 'object', properties, open: node.additionalProperties !== false, explicitlyOpen: node.additionalProperties === true }
}

function shapeOf(node: SchemaNodeReading): SchemaShape {
  if (node.problem !== undefined) return UNSUPPORTED
  if (node.oneOf !== undefined) {
    // Siblings of oneOf constrain every branch; we do not guess how to render that.
    if (node.validationKeywords !== 1) return UNSUPPORTED
    return node.oneOf.length === 0 ? NEVER : { kind: 'oneOf', branches: node.oneOf }
  }
  if (node.hasConst || node.enumValues !== undefined) return literalShape(node)
  switch (node.type) {
    case undefined:
      // Object and array keywords without a type constrain only values of that type and let every
      // other value through.
      return node.validationKeywords > 0 ? UNSUPPORTED : { kind: 'any' }
    case 'array':
      if (!node.hasItems) return { kind: 'array', items: undefined, hasItems: false }
      return isSchemaRecord(node.items) ? { kind: 'array', items: node.items, hasItems: true } : UNSUPPORTED
    case 'object':
      return objectShape(node)
    default:
      return { kind: 'primitive', type: node.type }
  }
}

/**
 * Classifies one schema node for rendering, without recursion. Total: a node outside
 * the subset (or one whose getter or proxy trap throws) is `unsupported`, never an
 * exception.
 */
export function classifySchemaNode(node: unknown): SchemaShape {
  try {
    return shapeOf(readSchemaNode(node, 'render'))
  } catch {
    // A hostile node (throwing getter, proxy trap) renders as `unknown`: rendering is total.
    return UNSUPPORTED
  }
}

/** Whether `node` is an object schema with no required property (a call may omit its argument). */
export function hasOnlyOptionalProperties(node: unknown): boolean {
  const shape = classifySchemaNode(node)
  return shape.kind === 'object' && shape.properties.every((p) => !p.required)
}
