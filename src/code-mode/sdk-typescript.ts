/**
 * The TypeScript flavour of the Code Mode SDK: `jsonSchemaToTs` (one schema → one type
 * expression) and the SDK block a model reads (`JsonValue`, `ToolArgsMap`,
 * `ToolOutputMap`, `ToolName`, `ToolCallError`, `declare const tools`).
 *
 * Both are total and stack-safe: any input, however malformed, deep, cyclic or hostile
 * (throwing getters, proxies), renders without throwing. Constructs outside the
 * supported subset degrade to `unknown`; typing in the SDK is advisory (programs run
 * type-stripped), so a wider type is always an honest answer.
 *
 * @module
 */
import type { JsonPrimitive } from '../json/json-value.js'
import type { SdkToolInput } from './sdk.js'
import { TYPESCRIPT_SDK_INSTRUCTIONS } from './sdk-instructions.js'

// ───────────────────────── shared schema reading (internal) ─────────────────────────

/**
 * Keywords that never change which JSON *type* a value has: annotations and narrowing
 * constraints. A node may carry them and still render exactly; any other keyword
 * outside the supported structural set makes the node unsupported.
 */
const IGNORABLE_KEYWORDS: ReadonlySet<string> = new Set([
  'title',
  'description',
  'default',
  'examples',
  'deprecated',
  'readOnly',
  'writeOnly',
  '$comment',
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

const STRUCTURAL_KEYWORDS: ReadonlySet<string> = new Set([
  'type',
  'enum',
  'const',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'oneOf',
])

/** One property of an object node as the renderers see it. @internal */
export interface SchemaPropertyShape {
  readonly name: string
  readonly schema: unknown
  readonly required: boolean
  /** The property's description, when it is a string. */
  readonly description?: string
  readonly deprecated: boolean
}

/**
 * A schema node classified for rendering. `unsupported` renders as `unknown` / `Any`;
 * `any` (an annotation-only node) as `JsonValue` / `Any`.
 *
 * @internal
 */
export type SchemaShape =
  | { readonly kind: 'unsupported' }
  | { readonly kind: 'any' }
  | { readonly kind: 'never' }
  | { readonly kind: 'primitive'; readonly type: 'string' | 'number' | 'integer' | 'boolean' | 'null' }
  | { readonly kind: 'literals'; readonly values: readonly JsonPrimitive[] }
  | { readonly kind: 'array'; readonly items: unknown; readonly hasItems: boolean }
  | { readonly kind: 'object'; readonly properties: readonly SchemaPropertyShape[]; readonly open: boolean }
  | { readonly kind: 'oneOf'; readonly branches: readonly unknown[] }

const UNSUPPORTED: SchemaShape = Object.freeze({ kind: 'unsupported' })

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function ownValue(record: Record<string, unknown>, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined
}

function isJsonPrimitive(value: unknown): value is JsonPrimitive {
  return (
    value === null ||
    typeof value === 'string' ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value))
  )
}

function matchesType(value: JsonPrimitive, type: string | undefined): boolean {
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

/**
 * Classifies one schema node without recursion. Total: a throwing getter or proxy trap
 * makes the node unsupported instead of escaping.
 *
 * @internal
 */
export function classifySchemaNode(node: unknown): SchemaShape {
  try {
    return classifyUnsafe(node)
  } catch {
    return UNSUPPORTED
  }
}

function classifyUnsafe(node: unknown): SchemaShape {
  if (!isRecord(node)) return UNSUPPORTED
  const keys = Object.keys(node)
  const present = new Set<string>()
  for (const key of keys) {
    if (STRUCTURAL_KEYWORDS.has(key)) present.add(key)
    else if (!IGNORABLE_KEYWORDS.has(key)) return UNSUPPORTED
  }

  if (present.has('oneOf')) {
    if (present.size !== 1) return UNSUPPORTED
    const branches = ownValue(node, 'oneOf')
    if (!Array.isArray(branches)) return UNSUPPORTED
    if (branches.length === 0) return { kind: 'never' }
    return { kind: 'oneOf', branches: Array.from(branches) }
  }

  let type: string | undefined
  if (present.has('type')) {
    const raw = ownValue(node, 'type')
    if (
      raw !== 'string' &&
      raw !== 'number' &&
      raw !== 'integer' &&
      raw !== 'boolean' &&
      raw !== 'null' &&
      raw !== 'array' &&
      raw !== 'object'
    ) {
      return UNSUPPORTED
    }
    type = raw
  }

  if (present.has('const') || present.has('enum')) {
    let values: JsonPrimitive[] | undefined
    if (present.has('enum')) {
      const raw = ownValue(node, 'enum')
      if (!Array.isArray(raw)) return UNSUPPORTED
      values = []
      for (const entry of raw) {
        if (!isJsonPrimitive(entry)) return UNSUPPORTED
        values.push(entry)
      }
    }
    if (present.has('const')) {
      const constant = ownValue(node, 'const')
      if (!isJsonPrimitive(constant)) return UNSUPPORTED
      values = values === undefined || values.some((v) => v === constant) ? [constant] : []
    }
    const kept: JsonPrimitive[] = []
    const seen = new Set<string>()
    for (const value of values ?? []) {
      if (!matchesType(value, type)) continue
      const key = JSON.stringify(value)
      if (seen.has(key)) continue
      seen.add(key)
      kept.push(value)
    }
    return kept.length === 0 ? { kind: 'never' } : { kind: 'literals', values: kept }
  }

  if (type === undefined) {
    // Object and array keywords without a type constrain only values of that type and
    // let every other value through; we do not guess which the author meant.
    if (present.size > 0) return UNSUPPORTED
    return { kind: 'any' }
  }

  if (type === 'array') {
    if (!present.has('items')) return { kind: 'array', items: undefined, hasItems: false }
    const items = ownValue(node, 'items')
    if (!isRecord(items)) return UNSUPPORTED
    return { kind: 'array', items, hasItems: true }
  }

  if (type === 'object') {
    const open = ownValue(node, 'additionalProperties')
    if (open !== undefined && typeof open !== 'boolean') return UNSUPPORTED
    const rawRequired = ownValue(node, 'required')
    const required = new Set<string>()
    if (rawRequired !== undefined) {
      if (!Array.isArray(rawRequired)) return UNSUPPORTED
      for (const name of rawRequired) {
        if (typeof name !== 'string') return UNSUPPORTED
        required.add(name)
      }
    }
    const rawProperties = ownValue(node, 'properties')
    if (rawProperties !== undefined && !isRecord(rawProperties)) return UNSUPPORTED
    const properties: SchemaPropertyShape[] = []
    const declared = new Set<string>()
    if (rawProperties !== undefined) {
      for (const name of Object.keys(rawProperties)) {
        const schema = ownValue(rawProperties, name)
        declared.add(name)
        let description: string | undefined
        let deprecated = false
        if (isRecord(schema)) {
          const d = ownValue(schema, 'description')
          if (typeof d === 'string') description = d
          deprecated = ownValue(schema, 'deprecated') === true
        }
        properties.push({
          name,
          schema,
          required: required.has(name),
          deprecated,
          ...(description === undefined ? {} : { description }),
        })
      }
    }
    // A required name with no declared schema still has to be present: any JSON value.
    for (const name of required) {
      if (!declared.has(name)) properties.push({ name, schema: {}, required: true, deprecated: false })
    }
    return { kind: 'object', properties, open: open !== false }
  }

  return { kind: 'primitive', type: type as 'string' | 'number' | 'integer' | 'boolean' | 'null' }
}

/** Whether `node` is an object schema with no required property (its call may omit the argument). @internal */
export function hasOnlyOptionalProperties(node: unknown): boolean {
  const shape = classifySchemaNode(node)
  return shape.kind === 'object' && shape.properties.every((p) => !p.required)
}

/** Compares strings by Unicode code point (not UTF-16 code unit), for a runtime-independent order. @internal */
export function compareCodePoints(a: string, b: string): number {
  let i = 0
  let j = 0
  while (i < a.length && j < b.length) {
    const ca = a.codePointAt(i) as number
    const cb = b.codePointAt(j) as number
    if (ca !== cb) return ca < cb ? -1 : 1
    i += ca > 0xffff ? 2 : 1
    j += cb > 0xffff ? 2 : 1
  }
  const restA = a.length - i
  const restB = b.length - j
  return restA === restB ? 0 : restA < restB ? -1 : 1
}

/**
 * Sorts tools by name (code point order) and drops malformed entries and repeated names
 * (the first occurrence wins), so rendering is deterministic and total. @internal
 */
export function normalizeSdkTools(tools: readonly SdkToolInput[]): SdkToolInput[] {
  const byName = new Map<string, SdkToolInput>()
  let list: readonly unknown[]
  try {
    list = Array.isArray(tools) ? Array.from(tools as readonly unknown[]) : []
  } catch {
    list = []
  }
  for (const entry of list) {
    try {
      if (!isRecord(entry)) continue
      const name = entry['name']
      if (typeof name !== 'string' || byName.has(name)) continue
      const description = entry['description']
      byName.set(name, {
        name,
        description: typeof description === 'string' ? description : '',
        parameters: entry['parameters'] as SdkToolInput['parameters'],
        output: entry['output'] as SdkToolInput['output'],
      })
    } catch {
      // A hostile entry is left out rather than failing the whole assembly.
    }
  }
  return [...byName.values()].sort((a, b) => compareCodePoints(a.name, b.name))
}

/** Splits text into lines on every line terminator a reader would see. @internal */
export function splitLines(text: string): string[] {
  return text.split(/\r\n|[\r\n\u2028\u2029]/)
}

// ───────────────────────── TypeScript rendering ─────────────────────────

/** Options for {@link jsonSchemaToTs}. */
export interface JsonSchemaToTsOptions {
  /**
   * Indentation already in front of the line the type starts on; continuation lines of
   * multi-line object types are prefixed with it. Default `''`.
   */
  readonly baseIndent?: string
  /**
   * Maximum number of schema nodes visited; nodes beyond it render as `unknown`. Guards
   * against shared sub-schemas that would expand exponentially. Default 1,000,000.
   */
  readonly maxNodes?: number
}

const INDENT = '  '
/** Object types nested deeper than this render on one line, so text stays linear in depth. */
const MAX_PRETTY_DEPTH = 16
const DEFAULT_MAX_NODES = 1_000_000
const TS_IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/** A property key as TypeScript source: bare when it is an identifier, quoted otherwise. */
function tsKey(name: string): string {
  return TS_IDENTIFIER.test(name) ? name : JSON.stringify(name)
}

/** A JSDoc block for a description, or `[]`. `*\/` is escaped so text cannot end the comment. */
function jsDoc(description: string | undefined, deprecated: boolean, indent: string): string[] {
  const lines: string[] = []
  if (description !== undefined) {
    for (const line of splitLines(description.replaceAll('*/', '*\\/'))) lines.push(line.trimEnd())
    while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop()
    while (lines.length > 0 && lines[0] === '') lines.shift()
  }
  if (deprecated) lines.push('@deprecated')
  if (lines.length === 0) return []
  if (lines.length === 1) return [`${indent}/** ${lines[0]} */`]
  return [`${indent}/**`, ...lines.map((l) => (l === '' ? `${indent} *` : `${indent} * ${l}`)), `${indent} */`]
}

type TsTask =
  | { readonly t: 'node'; readonly node: unknown; readonly level: number }
  | { readonly t: 'text'; readonly text: string }
  | { readonly t: 'exit'; readonly owner: object }

/** Whether a node renders as a top-level union, so an array of it needs parentheses. */
function rendersAsUnion(node: unknown): boolean {
  const shape = classifySchemaNode(node)
  return (shape.kind === 'literals' && shape.values.length > 1) || shape.kind === 'oneOf'
}

function tsLiteral(value: JsonPrimitive): string {
  return JSON.stringify(value)
}

/**
 * Renders a JSON Schema node as a TypeScript type expression.
 *
 * Total and stack-safe: it never throws, whatever `schema` is (a 100,000-level schema
 * renders without `RangeError`, in time and text linear in its size; a cyclic object
 * graph renders its back edges as `unknown`). `string`/`number`/`integer`/`boolean`/
 * `null` map to their TS types (`integer` → `number`), `enum`/`const` to literal unions,
 * arrays to `T[]` (`JsonValue[]` without `items`), objects to type literals (`?` for
 * optional properties, quoted non-identifier keys, JSDoc from descriptions; a closed
 * object is exact, an open one gains an index signature), `oneOf` to a union and an
 * annotation-only node to `JsonValue`. Anything outside the supported subset (`$ref`,
 * `anyOf`, `allOf`, type arrays, schema-valued `additionalProperties`, …) becomes
 * `unknown`.
 *
 * The result may mention `JsonValue`, which the SDK block declares.
 *
 * @example
 * ```ts
 * jsonSchemaToTs({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'], additionalProperties: false })
 * // '{\n  path: string;\n}'
 * ```
 */
export function jsonSchemaToTs(schema: unknown, options?: JsonSchemaToTsOptions): string {
  try {
    return renderTs(schema, options)
  } catch {
    // Only reachable on resource exhaustion (e.g. a string too long to build); still total.
    return 'unknown'
  }
}

function renderTs(schema: unknown, options: JsonSchemaToTsOptions | undefined): string {
  const base = typeof options?.baseIndent === 'string' ? options.baseIndent : ''
  const rawMax = options?.maxNodes
  const maxNodes = typeof rawMax === 'number' && rawMax >= 1 ? rawMax : DEFAULT_MAX_NODES
  let visited = 0
  const active = new Set<object>()
  // Fragments are emitted in order and joined once: composing child strings into parent
  // strings would copy deep schemas quadratically.
  const out: string[] = []
  const tasks: TsTask[] = [{ t: 'node', node: schema, level: 0 }]
  // Tasks run LIFO, so a sequence is pushed back to front.
  const schedule = (sequence: TsTask[]): void => {
    for (let i = sequence.length - 1; i >= 0; i--) tasks.push(sequence[i] as TsTask)
  }

  while (tasks.length > 0) {
    const task = tasks.pop() as TsTask
    if (task.t === 'text') {
      out.push(task.text)
      continue
    }
    if (task.t === 'exit') {
      active.delete(task.owner)
      continue
    }
    const { node, level } = task
    visited++
    if (visited > maxNodes || (typeof node === 'object' && node !== null && active.has(node))) {
      out.push('unknown')
      continue
    }
    const shape = classifySchemaNode(node)
    switch (shape.kind) {
      case 'unsupported':
        out.push('unknown')
        break
      case 'any':
        out.push('JsonValue')
        break
      case 'never':
        out.push('never')
        break
      case 'primitive':
        out.push(shape.type === 'integer' ? 'number' : shape.type)
        break
      case 'literals':
        out.push(shape.values.map(tsLiteral).join(' | '))
        break
      case 'array': {
        if (!shape.hasItems) {
          out.push('JsonValue[]')
          break
        }
        const owner = node as object
        active.add(owner)
        const paren = rendersAsUnion(shape.items)
        if (paren) out.push('(')
        schedule([{ t: 'node', node: shape.items, level }, { t: 'text', text: paren ? ')[]' : '[]' }, { t: 'exit', owner }])
        break
      }
      case 'oneOf': {
        const owner = node as object
        active.add(owner)
        const sequence: TsTask[] = []
        shape.branches.forEach((branch, i) => {
          if (i > 0) sequence.push({ t: 'text', text: ' | ' })
          sequence.push({ t: 'node', node: branch, level })
        })
        sequence.push({ t: 'exit', owner })
        schedule(sequence)
        break
      }
      case 'object': {
        const { properties, open } = shape
        if (properties.length === 0) {
          out.push(open ? '{ [key: string]: JsonValue }' : '{ [key: string]: never }')
          break
        }
        const owner = node as object
        active.add(owner)
        // Declared property types need not be JSON (optional ones include undefined,
        // degraded ones are unknown), so an open object's index signature must be
        // `unknown` to compile.
        const index = '[key: string]: unknown'
        const sequence: TsTask[] = []
        if (level >= MAX_PRETTY_DEPTH) {
          // Deep levels go on one line, so text stays linear in depth.
          out.push('{ ')
          properties.forEach((p, i) => {
            sequence.push({ t: 'text', text: `${i > 0 ? '; ' : ''}${tsKey(p.name)}${p.required ? '' : '?'}: ` })
            sequence.push({ t: 'node', node: p.schema, level: level + 1 })
          })
          sequence.push({ t: 'text', text: open ? `; ${index} }` : ' }' })
        } else {
          const inner = base + INDENT.repeat(level + 1)
          out.push('{\n')
          for (const p of properties) {
            const doc = jsDoc(p.description, p.deprecated, inner)
            const head = doc.length > 0 ? `${doc.join('\n')}\n` : ''
            sequence.push({ t: 'text', text: `${head}${inner}${tsKey(p.name)}${p.required ? '' : '?'}: ` })
            sequence.push({ t: 'node', node: p.schema, level: level + 1 })
            sequence.push({ t: 'text', text: ';\n' })
          }
          sequence.push({ t: 'text', text: `${open ? `${inner}${index};\n` : ''}${base}${INDENT.repeat(level)}}` })
        }
        sequence.push({ t: 'exit', owner })
        schedule(sequence)
        break
      }
    }
  }
  return out.join('')
}

// ───────────────────────── the SDK block ─────────────────────────

const JSON_VALUE_DECLARATION =
  'type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };'

/**
 * Renders the TypeScript SDK block (declarations only) for `tools`, already in any
 * order: tools are sorted by code point and rendered deterministically.
 */
export function renderTypeScriptSdkBlock(tools: readonly SdkToolInput[]): string {
  const sorted = normalizeSdkTools(tools)
  const out: string[] = [JSON_VALUE_DECLARATION, '']

  out.push('interface ToolArgsMap {')
  for (const tool of sorted) out.push(`  ${JSON.stringify(tool.name)}: ${jsonSchemaToTs(tool.parameters, { baseIndent: '  ' })};`)
  out.push('}', '')

  out.push('interface ToolOutputMap {')
  for (const tool of sorted) out.push(`  ${JSON.stringify(tool.name)}: ${jsonSchemaToTs(tool.output, { baseIndent: '  ' })};`)
  out.push('}', '')

  out.push('type ToolName = keyof ToolArgsMap;', '')
  out.push('/** The error a failed tool call rejects with. */')
  out.push('declare class ToolCallError extends Error {')
  out.push('  /** The tool whose call failed. */')
  out.push('  readonly toolName: ToolName | string;')
  out.push('}', '')

  out.push('declare const tools: {')
  for (const tool of sorted) {
    const key = JSON.stringify(tool.name)
    const optional = hasOnlyOptionalProperties(tool.parameters) ? '?' : ''
    out.push(...jsDoc(tool.description, false, '  '))
    out.push(`  ${tsKey(tool.name)}(args${optional}: ToolArgsMap[${key}]): Promise<ToolOutputMap[${key}]>;`)
  }
  out.push('};')
  return out.join('\n')
}

/** Renders the whole TypeScript SDK text: usage instructions, then the fenced SDK block. */
export function renderTypeScriptSdk(tools: readonly SdkToolInput[]): string {
  return `${TYPESCRIPT_SDK_INSTRUCTIONS}\n\n\`\`\`ts\n${renderTypeScriptSdkBlock(tools)}\n\`\`\`\n`
}
