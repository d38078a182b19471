/**
 * The enforced raw JSON Schema subset: support checks, detachment, compilation and validation.
 * @module
 */
import { LosslessJsonError, SchemaError, type SchemaViolation } from '../errors.js'
import type { JsonPrimitive } from '../json/json-value.js'
import { escapePointerToken, isJsonSnapshot, snapshotLosslessJson } from '../json/lossless.js'
import type { JsonSchemaNode, JsonSchemaTypeName, ObjectJsonSchema } from './json-schema-node.js'
import { readSchemaNode, type SchemaNodeReading } from './subset.js'

export { SUPPORTED_JSON_SCHEMA_KEYWORDS } from './subset.js'

// ───────────────────────── value kinds ─────────────────────────

const K_NULL = 1
const K_BOOLEAN = 2
const K_STRING = 4
/** A finite number that is not an integer. */
const K_FRACTION = 8
const K_INTEGER = 16
const K_ARRAY = 32
const K_OBJECT = 64
const K_ANY = 127

const typeMasks: { readonly [name in JsonSchemaTypeName]: number } = {
  null: K_NULL,
  boolean: K_BOOLEAN,
  string: K_STRING,
  number: K_FRACTION | K_INTEGER,
  integer: K_INTEGER,
  array: K_ARRAY,
  object: K_OBJECT,
}

function kindOf(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return K_STRING
    case 'number':
      return Number.isInteger(value) ? K_INTEGER : Number.isFinite(value) ? K_FRACTION : 0
    case 'boolean':
      return K_BOOLEAN
    case 'object':
      return value === null ? K_NULL : Array.isArray(value) ? K_ARRAY : K_OBJECT
    default:
      return 0
  }
}

function kindName(kind: number): string {
  switch (kind) {
    case K_NULL:
      return 'null'
    case K_BOOLEAN:
      return 'boolean'
    case K_STRING:
      return 'string'
    case K_FRACTION:
      return 'number'
    case K_INTEGER:
      return 'integer'
    case K_ARRAY:
      return 'array'
    case K_OBJECT:
      return 'object'
    // Stryker disable next-line ConditionalExpression: unreachable, as the return below
    default:
      // Stryker disable next-line StringLiteral: unreachable; a value that is not JSON
      return 'a non-JSON value'
  }
}

// ───────────────────────── compiled form ─────────────────────────

interface CNode {
  /** Accepted kinds (K_ANY for no `type`). */
  mask: number
  typeName: JsonSchemaTypeName | undefined
  /** Allowed scalars (enum ∩ const), or null when unconstrained. */
  allowed: Set<JsonPrimitive> | null
  enumValues: readonly JsonPrimitive[] | null
  hasConst: boolean
  constValue: JsonPrimitive
  propNames: string[]
  propNodes: CNode[]
  propRequired: boolean[]
  propInherited: boolean[]
  propSet: Set<string> | null
  propIndex: Map<string, number>
  requiredDeclared: number
  /** Required names that are not declared in `properties`. */
  extraRequired: string[]
  extraRequiredInherited: boolean[]
  closed: boolean
  items: CNode | null
  oneOf: CNode[] | null
  leaf: boolean
  /** True when object keywords exist (properties, required, closed). */
  objectWork: boolean
  /** Specialised kind test for the fast path (one of the C_* constants). */
  check: number
  /** `allowed` as an array: a short linear scan beats a Set lookup for typical enums. */
  allowedList: JsonPrimitive[] | null
  /** An object node whose children are all leaves and that has no oneOf: checked without a stack. */
  flat: boolean
  /** A node with only type/enum/const and a oneOf whose branches are leaves or flat objects. */
  shallowOneOf: boolean
}

const C_MASK = 0
const C_STRING = 1
const C_INTEGER = 2
const C_NUMBER = 3
const C_BOOLEAN = 4
const C_NULL = 5
const C_ANY = 6

function newNode(): CNode {
  return {
    mask: K_ANY,
    typeName: undefined,
    allowed: null,
    enumValues: null,
    hasConst: false,
    constValue: null,
    propNames: [],
    propNodes: [],
    propRequired: [],
    propInherited: [],
    propSet: null,
    propIndex: new Map(),
    requiredDeclared: 0,
    extraRequired: [],
    extraRequiredInherited: [],
    closed: false,
    items: null,
    oneOf: null,
    leaf: true,
    objectWork: false,
    check: C_ANY,
    allowedList: null,
    flat: false,
    shallowOneOf: false,
  }
}

const hasOwn = Object.prototype.hasOwnProperty

function pointer(base: string, ...tokens: readonly string[]): string {
  let out = base
  for (const t of tokens) out += '/' + escapePointerToken(t)
  return out
}

function snapshotSchema(schema: unknown): JsonSchemaNode {
  try {
    return snapshotLosslessJson(schema) as JsonSchemaNode
  } catch (error) {
    if (error instanceof LosslessJsonError) {
      throw new SchemaError(error.path, `schema is not lossless JSON: ${error.message.replace(/ at [^ ]*$|at the root$/, '').trim()}`, { cause: error })
    }
    throw error
  }
}

type BuildTask = { readonly schema: unknown; readonly node: CNode; readonly path: string }

function compileNode(reading: SchemaNodeReading, node: CNode, path: string): BuildTask[] {
  if (reading.type !== undefined) {
    node.typeName = reading.type
    node.mask = typeMasks[reading.type]
  }
  if (reading.enumValues !== undefined) {
    node.enumValues = reading.enumValues
    node.allowed = new Set(reading.enumValues)
  }
  if (reading.hasConst) {
    const value = reading.constValue
    node.hasConst = true
    node.constValue = value
    node.allowed = node.allowed === null ? new Set([value]) : new Set(node.allowed.has(value) ? [value] : [])
  }
  node.closed = reading.additionalProperties === false
  const required = new Set(reading.required)
  const children: BuildTask[] = []
  if (reading.properties !== undefined) {
    const propSet = new Set<string>()
    for (const [name, schema] of reading.properties) {
      const child = newNode()
      node.propNames.push(name)
      node.propNodes.push(child)
      node.propIndex.set(name, node.propNames.length - 1)
      node.propRequired.push(required.has(name))
      if (required.has(name)) node.requiredDeclared++
      node.propInherited.push(name in Object.prototype)
      propSet.add(name)
      children.push({ schema, node: child, path: pointer(path, 'properties', name) })
    }
    node.propSet = propSet
  }
  for (const name of required) {
    if (node.propSet === null || !node.propSet.has(name)) {
      node.extraRequired.push(name)
      node.extraRequiredInherited.push(name in Object.prototype)
    }
  }
  if (node.closed && node.propSet === null) node.propSet = new Set()
  if (reading.hasItems) {
    node.items = newNode()
    children.push({ schema: reading.items, node: node.items, path: pointer(path, 'items') })
  }
  if (reading.oneOf !== undefined) {
    node.oneOf = []
    for (let i = 0; i < reading.oneOf.length; i++) {
      const branch = newNode()
      node.oneOf.push(branch)
      children.push({ schema: reading.oneOf[i], node: branch, path: pointer(path, 'oneOf', String(i)) })
    }
  }
  node.objectWork = node.propNames.length > 0 || required.size > 0 || node.closed
  node.leaf = !node.objectWork && node.items === null && node.oneOf === null
  node.check =
    node.typeName === undefined ? C_ANY
    : node.typeName === 'string' ? C_STRING
    : node.typeName === 'integer' ? C_INTEGER
    : node.typeName === 'number' ? C_NUMBER
    : node.typeName === 'boolean' ? C_BOOLEAN
    : node.typeName === 'null' ? C_NULL
    : C_MASK
  node.allowedList = node.allowed === null ? null : [...node.allowed]
  return children
}

function build(root: JsonSchemaNode): CNode {
  const rootNode = newNode()
  const built: CNode[] = []
  const work: BuildTask[] = [{ schema: root, node: rootNode, path: '' }]
  while (work.length > 0) {
    const { schema, node, path } = work.pop()!
    const reading = readSchemaNode(schema, 'enforce')
    if (reading.problem !== undefined) throw new SchemaError(pointer(path, ...reading.problem.at), reading.problem.message)
    const children = compileNode(reading, node, path)
    // Reverse, so the first child is checked first and errors name the earliest problem.
    for (let i = children.length - 1; i >= 0; i--) work.push(children[i]!)
    built.push(node)
  }
  // Children are finished only now, so flatness is decided in a second pass.
  for (const node of built) {
    node.flat = node.typeName === 'object' && node.oneOf === null && node.items === null && node.propNodes.every((c) => c.leaf)
  }
  for (const node of built) {
    node.shallowOneOf = node.oneOf !== null && !node.objectWork && node.items === null && node.oneOf.every((b) => b.leaf || b.flat)
  }
  return rootNode
}

// ───────────────────────── fast path (isValid) ─────────────────────────

/** An in-progress `oneOf`: counts the branches that matched so far. */
interface Join {
  readonly node: CNode
  readonly value: unknown
  slot: number
  branch: number
  matches: number
}

function isJoin(entry: CNode | Join): entry is Join {
  return (entry as Join).branch !== undefined
}

/** The complete check of a leaf node (type, enum, const), specialised by kind. */
function leafOk(node: CNode, value: unknown): boolean {
  switch (node.check) {
    case C_STRING:
      if (typeof value !== 'string') return false
      break
    case C_INTEGER:
      if (!Number.isInteger(value)) return false
      break
    case C_NUMBER:
      if (typeof value !== 'number' || !Number.isFinite(value)) return false
      break
    case C_BOOLEAN:
      if (typeof value !== 'boolean') return false
      break
    case C_NULL:
      if (value !== null) return false
      break
    case C_ANY:
      if (kindOf(value) === 0) return false
      break
    default:
      if ((node.mask & kindOf(value)) === 0) return false
  }
  const allowed = node.allowedList
  if (allowed === null) return true
  for (let i = 0; i < allowed.length; i++) if (allowed[i] === value) return true
  return false
}

/**
 * An object node whose properties are all leaves (the shape of most tool arguments):
 * checked in one pass, with no work stack.
 */
function flatOk(node: CNode, v: unknown): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false
  const obj = v as Record<string, unknown>
  const names = node.propNames
  const children = node.propNodes
  let guess = 0
  let required = 0
  // for-in reads each value through V8's enum cache, much faster than keyed loads by declared name.
  for (const key in obj) {
    if (!hasOwn.call(obj, key)) continue
    const child = obj[key]
    const i = guess < names.length && names[guess] === key ? guess : node.propIndex.get(key)
    if (i === undefined) {
      if (node.closed && child !== undefined) return false
      continue
    }
    guess = i + 1
    if (child === undefined) continue
    if (node.propRequired[i]) required++
    if (!leafOk(children[i]!, child)) return false
  }
  if (required !== node.requiredDeclared) return false
  const extra = node.extraRequired
  for (let i = 0; i < extra.length; i++) {
    const name = extra[i]!
    if (obj[name] === undefined || (node.extraRequiredInherited[i] && !hasOwn.call(obj, name))) return false
  }
  return node.allowedList === null
}

/** A node that can be checked without the work stack (no recursion beyond two fixed levels). */
function isShallow(node: CNode): boolean {
  return node.leaf || node.flat || node.shallowOneOf
}

/** Checks a shallow node (see {@link isShallow}). */
function shallowOk(node: CNode, v: unknown): boolean {
  if (node.leaf) return leafOk(node, v)
  if (node.flat) return flatOk(node, v)
  if ((node.mask & kindOf(v)) === 0 || (node.allowedList !== null && !leafOk(node, v))) return false
  const branches = node.oneOf!
  let matches = 0
  for (let i = 0; i < branches.length; i++) {
    const b = branches[i]!
    if (b.leaf ? leafOk(b, v) : flatOk(b, v)) {
      matches++
      if (matches > 1) return false
    }
  }
  return matches === 1
}

/** Whether `value` satisfies the compiled `root`: no paths, no messages, early exit. */
function fastValid(root: CNode, value: unknown): boolean {
  if (isShallow(root)) return shallowOk(root, value)
  const nodes: (CNode | Join)[] = [root]
  const values: unknown[] = [value]
  let top = 1
  const joins: Join[] = []
  let failed = false
  for (;;) {
    if (failed) {
      failed = false
      const j = joins[joins.length - 1]
      if (j === undefined) return false
      // The current branch failed: drop its remaining tasks and try the next one.
      top = j.slot
      j.branch++
      if (j.branch < j.node.oneOf!.length) {
        nodes[top] = j
        values[top++] = undefined
        nodes[top] = j.node.oneOf![j.branch]!
        values[top++] = j.value
      } else {
        joins.pop()
        if (j.matches !== 1) failed = true
      }
      continue
    }
    if (top === 0) return true
    const entry = nodes[--top]!
    const v = values[top]
    if (isJoin(entry)) {
      const j = entry
      if (j.branch >= 0) {
        j.matches++
        if (j.matches > 1) {
          joins.pop()
          failed = true
          continue
        }
      } else {
        joins.push(j)
      }
      j.branch++
      if (j.branch < j.node.oneOf!.length) {
        j.slot = top
        nodes[top] = j
        values[top++] = undefined
        nodes[top] = j.node.oneOf![j.branch]!
        values[top++] = j.value
      } else {
        joins.pop()
        if (j.matches !== 1) failed = true
      }
      continue
    }
    const node = entry
    const kind = kindOf(v)
    if ((node.mask & kind) === 0 || (node.allowedList !== null && !leafOk(node, v))) {
      failed = true
      continue
    }
    if (node.leaf) continue
    if (node.oneOf !== null) {
      nodes[top] = { node, value: v, slot: top, branch: -1, matches: 0 }
      values[top++] = undefined
    }
    if (kind === K_OBJECT && node.objectWork) {
      const obj = v as Record<string, unknown>
      const names = node.propNames
      let guess = 0
      let required = 0
      for (const key in obj) {
        if (!hasOwn.call(obj, key)) continue
        const child = obj[key]
        const i = guess < names.length && names[guess] === key ? guess : node.propIndex.get(key)
        if (i === undefined) {
          if (node.closed && child !== undefined) {
            failed = true
            break
          }
          continue
        }
        guess = i + 1
        if (child === undefined) continue
        if (node.propRequired[i]) required++
        const cn = node.propNodes[i]!
        if (cn.leaf) {
          if (!leafOk(cn, child)) {
            failed = true
            break
          }
        } else if (cn.flat || cn.shallowOneOf) {
          if (!shallowOk(cn, child)) {
            failed = true
            break
          }
        } else {
          nodes[top] = cn
          values[top++] = child
        }
      }
      if (failed || required !== node.requiredDeclared) {
        failed = true
        continue
      }
      const extra = node.extraRequired
      for (let i = 0; i < extra.length; i++) {
        const name = extra[i]!
        if (obj[name] === undefined || (node.extraRequiredInherited[i] && !hasOwn.call(obj, name))) {
          failed = true
          break
        }
      }
      if (failed) continue
    } else if (kind === K_ARRAY && node.items !== null) {
      const arr = v as unknown[]
      const cn = node.items
      if (cn.leaf) {
        for (let i = 0; i < arr.length; i++) {
          if (!leafOk(cn, arr[i])) {
            failed = true
            break
          }
        }
      } else if (cn.flat || cn.shallowOneOf) {
        for (let i = 0; i < arr.length; i++) {
          if (!shallowOk(cn, arr[i])) {
            failed = true
            break
          }
        }
      } else {
        for (let i = arr.length - 1; i >= 0; i--) {
          nodes[top] = cn
          values[top++] = arr[i]
        }
      }
    }
  }
}

// ───────────────────────── collecting path (validate) ─────────────────────────

/** A path as a linked list, stringified only when a violation is reported. */
interface PathNode {
  readonly parent: PathNode | null
  readonly key: string
}

function pathString(path: PathNode | null): string {
  const keys: string[] = []
  for (let p = path; p !== null; p = p.parent) keys.push(p.key)
  let out = ''
  for (let i = keys.length - 1; i >= 0; i--) out += '/' + escapePointerToken(keys[i]!)
  return out
}

interface FirstError {
  readonly path: PathNode | null
  readonly message: string
}

interface CollectJoin {
  readonly node: CNode
  readonly value: unknown
  readonly path: PathNode | null
  slot: number
  branch: number
  matches: number[]
  readonly errors: (FirstError | undefined)[]
}

interface Task {
  readonly node: CNode | null
  readonly join: CollectJoin | null
  readonly value: unknown
  readonly path: PathNode | null
}

function describeType(node: CNode): string {
  // Stryker disable next-line StringLiteral: unreachable; a node without a type accepts every JSON kind
  return node.typeName ?? 'JSON'
}

function formatScalar(value: JsonPrimitive): string {
  return JSON.stringify(value)
}

function summarize(value: unknown): string {
  const kind = kindOf(value)
  if (kind === K_STRING || kind === K_INTEGER || kind === K_FRACTION || kind === K_BOOLEAN || kind === K_NULL) {
    const text = JSON.stringify(value)
    return text.length > 40 ? `${text.slice(0, 37)}…` : text
  }
  return kindName(kind)
}

/** Options for {@link CompiledJsonSchema.validate}. */
export interface ValidateOptions {
  /** Stop after this many violations (default 100). The message formatter shows the first ten. */
  readonly maxViolations?: number
}

/** Every violation (up to the cap), path-qualified, in document order. */
function collect(root: CNode, value: unknown, maxViolations: number): SchemaViolation[] {
  const out: SchemaViolation[] = []
  const stack: Task[] = [{ node: root, join: null, value, path: null }]
  const joins: CollectJoin[] = []
  /** Reports a failure: a violation at the top level, or the end of the current branch. */
  let pending: FirstError | null = null

  const startBranch = (j: CollectJoin): void => {
    j.slot = stack.length
    stack.push({ node: null, join: j, value: undefined, path: j.path })
    stack.push({ node: j.node.oneOf![j.branch]!, join: null, value: j.value, path: j.path })
  }
  const finishJoin = (j: CollectJoin): FirstError | null => {
    joins.pop()
    if (j.matches.length === 1) return null
    if (j.matches.length > 1) {
      return { path: j.path, message: `must match exactly one oneOf branch, matched ${j.matches.length} (branches ${j.matches.join(', ')})` }
    }
    if (joins.length > 0) return { path: j.path, message: 'matches no oneOf branch' }
    const details = j.errors
      .map((e, i) => (e === undefined ? undefined : `branch ${i}: ${pathString(e.path) || '(root)'}: ${e.message}`))
      .filter((d) => d !== undefined)
      .join('; ')
    return { path: j.path, message: `matches no oneOf branch (${details})` }
  }

  while (out.length < maxViolations) {
    if (pending !== null) {
      const failure: FirstError = pending
      pending = null
      const j = joins[joins.length - 1]
      if (j === undefined) {
        out.push({ path: pathString(failure.path), message: failure.message })
        continue
      }
      stack.length = j.slot
      if (j.errors[j.branch] === undefined) j.errors[j.branch] = failure
      j.branch++
      if (j.branch < j.node.oneOf!.length) startBranch(j)
      else pending = finishJoin(j)
      continue
    }
    const task = stack.pop()
    if (task === undefined) break
    if (task.join !== null) {
      const j = task.join
      if (j.branch >= 0) {
        j.matches.push(j.branch)
      } else {
        joins.push(j)
      }
      j.branch++
      if (j.branch < j.node.oneOf!.length) startBranch(j)
      else pending = finishJoin(j)
      continue
    }
    const node = task.node!
    const v = task.value
    const path = task.path
    const kind = kindOf(v)
    if ((node.mask & kind) === 0) {
      pending = {
        path,
        message: kind === 0 ? 'is not a JSON value' : `expected ${describeType(node)}, got ${kindName(kind)}`,
      }
      continue
    }
    if (node.enumValues !== null && !node.enumValues.includes(v as JsonPrimitive)) {
      pending = { path, message: `must be one of ${node.enumValues.map(formatScalar).join(', ')}, got ${summarize(v)}` }
      continue
    }
    if (node.hasConst && node.constValue !== v) {
      pending = { path, message: `must be ${formatScalar(node.constValue)}, got ${summarize(v)}` }
      continue
    }
    if (node.leaf) continue
    const pushed: Task[] = []
    const failures: FirstError[] = []
    if (kind === K_OBJECT && node.objectWork) {
      const obj = v as Record<string, unknown>
      for (let i = 0; i < node.propNames.length; i++) {
        const name = node.propNames[i]!
        const child = obj[name]
        if (child === undefined || (node.propInherited[i] && !hasOwn.call(obj, name))) {
          if (node.propRequired[i]) failures.push({ path: { parent: path, key: name }, message: `missing required property "${name}"` })
          continue
        }
        pushed.push({ node: node.propNodes[i]!, join: null, value: child, path: { parent: path, key: name } })
      }
      for (let i = 0; i < node.extraRequired.length; i++) {
        const name = node.extraRequired[i]!
        if (obj[name] === undefined || (node.extraRequiredInherited[i] && !hasOwn.call(obj, name))) {
          failures.push({ path: { parent: path, key: name }, message: `missing required property "${name}"` })
        }
      }
      if (node.closed) {
        for (const key of Object.keys(obj)) {
          if (!node.propSet!.has(key) && obj[key] !== undefined) failures.push({ path: { parent: path, key }, message: `unexpected property "${key}" (additionalProperties is false)` })
        }
      }
    } else if (kind === K_ARRAY && node.items !== null) {
      const arr = v as unknown[]
      for (let i = 0; i < arr.length; i++) pushed.push({ node: node.items, join: null, value: arr[i], path: { parent: path, key: String(i) } })
    }
    if (failures.length > 0) {
      // Inside a oneOf branch the first failure settles the branch.
      if (joins.length > 0) {
        pending = failures[0]!
        continue
      }
      for (const f of failures) {
        if (out.length >= maxViolations) break
        out.push({ path: pathString(f.path), message: f.message })
      }
    }
    if (node.oneOf !== null) {
      // The join goes on top of the children so its branches settle first.
      for (let i = pushed.length - 1; i >= 0; i--) stack.push(pushed[i]!)
      stack.push({ node: null, join: { node, value: v, path, slot: 0, branch: -1, matches: [], errors: [] }, value: undefined, path })
    } else {
      for (let i = pushed.length - 1; i >= 0; i--) stack.push(pushed[i]!)
    }
  }
  return out
}

/** The collecting pass runs only after the fast pass said "invalid". */
function collectOrGeneric(root: CNode, value: unknown, maxViolations: number): SchemaViolation[] {
  const violations = collect(root, value, maxViolations)
  // Stryker disable next-line all: the defensive fallback for the fast and collecting passes disagreeing
  return violations.length > 0 ? violations : [{ path: '', message: 'does not match the schema' }]
}

// ───────────────────────── public API ─────────────────────────

/** A schema compiled for repeated validation. Reusable and immutable. */
export interface CompiledJsonSchema {
  /** The detached, deep-frozen schema this was compiled from. */
  readonly schema: JsonSchemaNode
  /** Path-qualified violations; `[]` means valid. Never throws on any input value. */
  validate(value: unknown, options?: ValidateOptions): SchemaViolation[]
  /** The fast path: true when `value` is valid. Never throws on JSON input. */
  isValid(value: unknown): boolean
}

/** Detached schema → its compilation (detached schemas are frozen, so this never goes stale). */
const compiledCache = new WeakMap<object, CompiledJsonSchema>()

function compileDetached(schema: JsonSchemaNode): CompiledJsonSchema {
  const cached = compiledCache.get(schema)
  if (cached !== undefined) return cached
  const root = build(schema)
  const compiled: CompiledJsonSchema = Object.freeze({
    schema,
    isValid: (value: unknown) => fastValid(root, value),
    validate: (value: unknown, options?: ValidateOptions) =>
      fastValid(root, value) ? [] : collectOrGeneric(root, value, Math.max(1, options?.maxViolations ?? 100)),
  })
  compiledCache.set(schema, compiled)
  return compiled
}

/**
 * Checks that `schema` is inside the supported subset and returns a deep-frozen lossless copy of
 * it, out of the caller's hands (later mutation of the original has no effect).
 * @throws {SchemaError} (code `INVALID_SCHEMA`) naming the construct and its path.
 */
export function detachJsonSchema(schema: unknown): JsonSchemaNode {
  if (isJsonSnapshot(schema) && compiledCache.has(schema as object)) return schema as JsonSchemaNode
  const copy = snapshotSchema(schema)
  compileDetached(copy)
  return copy
}

/**
 * Asserts that `schema` is inside the supported raw JSON Schema subset: own enumerable
 * string keys only, dense arrays, supported keywords only, scalar `enum`/`const`,
 * unique string `required` names, boolean `additionalProperties`, one-schema `items`,
 * non-empty `oneOf`, and annotations that are lossless JSON. Getters are never invoked.
 *
 * @throws {SchemaError} e.g. `unsupported keyword "$ref" at /properties/a`.
 *
 * @example
 * ```ts
 * assertSupportedJsonSchema({ type: 'object', properties: { a: { $ref: '#' } } })
 * // SchemaError: unsupported keyword "$ref" at /properties/a
 * ```
 */
export function assertSupportedJsonSchema(schema: unknown): asserts schema is JsonSchemaNode {
  detachJsonSchema(schema)
}

/**
 * Asserts a supported schema whose root is `type: "object"` (tool parameters,
 * subagent and workflow outputs).
 *
 * @throws {SchemaError} when the schema is unsupported or its root is not an object schema.
 */
export function assertObjectJsonSchema(schema: unknown): asserts schema is ObjectJsonSchema {
  const detached = detachJsonSchema(schema)
  if (detached.type !== 'object') throw new SchemaError('/type', 'expected an object schema (type: "object")')
}

/**
 * Compiles a schema for repeated validation.
 * @throws {SchemaError} when the schema is outside the supported subset.
 *
 * @example
 * ```ts
 * const v = compileJsonSchema({ type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] })
 * v.isValid({ n: 1 })   // true
 * v.validate({ n: 1.5 }) // [{ path: '/n', message: 'expected integer, got number' }]
 * ```
 */
export function compileJsonSchema(schema: unknown): CompiledJsonSchema {
  return compileDetached(detachJsonSchema(schema))
}

/**
 * Validates `value` against `schema` and returns path-qualified violations (`[]` when valid).
 * @throws {SchemaError} when the schema itself is unsupported.
 */
export function validateJsonSchemaValue(schema: JsonSchemaNode, value: unknown, options?: ValidateOptions): SchemaViolation[] {
  return compileJsonSchema(schema).validate(value, options)
}
