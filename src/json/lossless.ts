/**
 * Lossless JSON snapshots: the single gate every value passes before it becomes tool arguments, a
 * canonical tool output, a schema annotation or a worker message.
 * @module
 */
import { LosslessJsonError } from '../errors.js'
import type { JsonValue } from './json-value.js'

/** Roots this module produced: deep-frozen, lossless by construction. */
const snapshots = new WeakSet<object>()

const objectProto = Object.prototype
const arrayProto = Array.prototype
const getProto = Object.getPrototypeOf
const ownKeys = Reflect.ownKeys
const describe = Object.getOwnPropertyDescriptor
const defineProperty = Object.defineProperty
const freeze = Object.freeze
const isFrozen = Object.isFrozen

/**
 * True when `value` is a container returned by {@link snapshotLosslessJson}: deep-frozen lossless
 * JSON that needs no second copy.
 */
export function isJsonSnapshot(value: unknown): boolean {
  return typeof value === 'object' && value !== null && snapshots.has(value)
}

/** Escapes one JSON Pointer reference token (`~` → `~0`, `/` → `~1`). */
export function escapePointerToken(token: string): string {
  return token.includes('~') || token.includes('/') ? token.replace(/~/g, '~0').replace(/\//g, '~1') : token
}

/**
 * Joins reference tokens into a JSON Pointer (`` for the root, `/a/0/b` below it).
 */
export function toJsonPointer(tokens: readonly (string | number)[]): string {
  let out = ''
  for (const token of tokens) out += '/' + escapePointerToken(String(token))
  return out
}

/**
 * Writes `value` under `key` as an own enumerable data property, even for `__proto__`
 * (a plain assignment would change the prototype instead of storing data).
 */
export function setOwnData(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true })
  } else {
    target[key] = value
  }
}

function isIndexBelow(key: string, length: number): boolean {
  const n = Number(key)
  return Number.isInteger(n) && n >= 0 && n < length && String(n) === key
}

interface Frame {
  readonly source: object
  readonly target: Record<string, unknown> | unknown[]
  /** Own keys still to copy (string keys for objects; undefined for arrays). */
  readonly keys: readonly string[] | undefined
  /** Next index into `keys` (objects) or into the array. */
  index: number
  readonly length: number
  /** This frame's key in its parent (for error paths only). */
  readonly key: string
}

function describeObject(value: object, proto: object | null): string {
  if (typeof value === 'function') return 'a function'
  if (proto !== null) {
    const ctor = describe(proto, 'constructor')
    if (ctor !== undefined && 'value' in ctor && typeof ctor.value === 'function') {
      const name = describe(ctor.value, 'name')
      if (name !== undefined && 'value' in name && typeof name.value === 'string' && name.value !== '') {
        return `a non-plain object (${name.value})`
      }
    }
  }
  return 'a non-plain object'
}

/**
 * Deep-copies `value` as lossless JSON and returns a deep-frozen copy.
 * @throws {LosslessJsonError} (code `INVALID_JSON`) naming the first offending
 * location as a JSON Pointer (`/a/0/b`).
 *
 * @example
 * ```ts
 * const args = snapshotLosslessJson({ path: '/tmp/x', offset: 1 }) // frozen copy
 * snapshotLosslessJson({ when: new Date() }) // throws: … at /when
 * ```
 */
export function snapshotLosslessJson(value: unknown): JsonValue {
  if (typeof value === 'object' && value !== null && snapshots.has(value)) return value as JsonValue
  const stack: Frame[] = []
  const seen = new Map<object, unknown[] | Record<string, unknown>>()

  const pathTo = (key: string | undefined): string => {
    let out = ''
    for (let i = 1; i < stack.length; i++) out += '/' + escapePointerToken(stack[i]!.key)
    if (key !== undefined) out += '/' + escapePointerToken(key)
    return out
  }
  const fail = (key: string | undefined, message: string): never => {
    throw new LosslessJsonError(pathTo(key), message)
  }

  /**
   * Converts one value: scalars are returned as-is, containers get an empty target
   * and a frame (their children are filled in by the main loop).
   */
  const enter = (child: unknown, key: string | undefined, childKey: string): JsonValue => {
    switch (typeof child) {
      case 'string':
      case 'boolean':
        return child
      case 'number':
        if (!Number.isFinite(child)) return fail(key, `non-finite number (${String(child)}) is not JSON`)
        if (child === 0 && 1 / child < 0) return fail(key, '-0 is not lossless JSON')
        return child
      case 'undefined':
        return fail(key, 'undefined is not JSON')
      case 'bigint':
        return fail(key, 'a BigInt is not JSON')
      case 'symbol':
        return fail(key, 'a symbol is not JSON')
      case 'function':
        return fail(key, 'a function is not JSON')
      default:
        break
    }
    if (child === null) return null
    const object = child as object
    const prior = seen.get(object)
    if (prior !== undefined) {
      if (isFrozen(prior)) return prior as JsonValue
      return fail(key, 'a cycle is not JSON')
    }
    const proto = getProto(object) as object | null
    const keys = ownKeys(object)
    if (Array.isArray(object)) {
      if (proto !== arrayProto) return fail(key, describeObject(object, proto).replace('object', 'array'))
      const length = object.length
      // Own keys are the indices plus `length`: anything more is an extra property,
      // anything less a hole (found index by index below, with its exact path).
      if (keys.length > length + 1) {
        for (const k of keys) {
          if (typeof k === 'symbol') return fail(key, 'a symbol-keyed property is not JSON')
          if (k !== 'length' && !isIndexBelow(k, length)) {
            return fail(key, `an array with an extra property ("${k}") is not JSON`)
          }
        }
      }
      const target: unknown[] = []
      stack.push({ source: object, target, keys: undefined, index: 0, length, key: childKey })
      seen.set(object, target)
      return target as JsonValue
    }
    if (proto !== objectProto && proto !== null) return fail(key, `${describeObject(object, proto)} is not JSON`)
    const names: string[] = []
    for (const k of keys) {
      if (typeof k === 'symbol') return fail(key, 'a symbol-keyed property is not JSON')
      names.push(k)
    }
    const target: Record<string, unknown> = {}
    stack.push({ source: object, target, keys: names, index: 0, length: names.length, key: childKey })
    seen.set(object, target)
    return target as JsonValue
  }

  const root = enter(value, undefined, '')
  if (stack.length === 0) return root

  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!
    if (frame.index >= frame.length) {
      stack.pop()
      freeze(frame.target)
      continue
    }
    const i = frame.index++
    const key = frame.keys === undefined ? String(i) : frame.keys[i]!
    const descriptor = describe(frame.source, key)
    if (descriptor === undefined) {
      fail(key, frame.keys === undefined ? 'a sparse array (hole) is not JSON' : 'a property vanished while copying')
    } else if (!('value' in descriptor)) {
      fail(key, 'an accessor property is not JSON (getters are never invoked)')
    } else if (descriptor.enumerable !== true) {
      fail(key, 'a non-enumerable property is not JSON')
    } else {
      const copy = enter(descriptor.value, key, key)
      if (frame.keys === undefined) (frame.target as unknown[]).push(copy)
      else setOwnData(frame.target as Record<string, unknown>, key, copy)
    }
  }
  snapshots.add(root as object)
  return root
}

/** What {@link adoptParsedJson} measured of the value it adopted. */
export interface AdoptedJson {
  /** JSON values in it: containers, strings, numbers, booleans, nulls; object keys count one each. */
  readonly nodes: number
  /** Its container nesting: `1` is 0, `[1]` 1, `[[1]]` 2. */
  readonly depth: number
}

/** True for a number lossless JSON refuses (`-0`, a non-finite one such as `1e400` parses to). */
function lossyNumber(n: number): boolean {
  return n === 0 ? 1 / n < 0 : !Number.isFinite(n)
}

/**
 * An adoption of fresh `JSON.parse` output done in bounded steps ({@link JsonAdoption.step}), so a
 * large value does not hold the host's event loop in one turn: the same walk as {@link
 * adoptParsedJson}, resumable after any child.
 */
export class JsonAdoption {
  readonly #root: object
  /**
   * The path from the root to the container being walked (depth-first, so it holds the nesting,
   * never a level's breadth), as parallel arrays: no object per container for the garbage collector.
   * A container's depth is its place on the path plus one.
   */
  readonly #containers: object[] = []
  /** Its keys (undefined for an array, or until entered). */
  readonly #keys: (readonly string[] | undefined)[] = []
  /** Its next child. */
  readonly #next: number[] = []
  /** Its child count, -1 until entered. */
  readonly #lengths: number[] = []
  #nodes = 1
  #deepest = 1
  #visited = 0
  #outcome: AdoptedJson | undefined | null = null
  /** Frozen empty containers the parse shared (taken as they are: a value each time, never entered). */
  readonly #shared: readonly object[]

  /**
   * @param root - a container `JSON.parse` (or the host's sliced parse) has just returned, that nothing else holds yet.
   * @param shared - frozen empty containers that parse placed wherever `{}` or `[]` occurred.
   */
  constructor(root: object, shared: readonly object[] = []) {
    this.#root = root
    this.#shared = shared
    this.#push(root)
  }

  #push(container: object): void {
    this.#containers.push(container)
    this.#keys.push(undefined)
    this.#next.push(0)
    this.#lengths.push(-1)
  }

  #pop(): void {
    this.#containers.pop()
    this.#keys.pop()
    this.#next.pop()
    this.#lengths.pop()
  }

  /** Children walked and containers entered so far (the work done: each step does at most its budget of it). */
  get visited(): number {
    return this.#visited
  }

  /** True once the walk has ended (adopted, or refused for a lossy number). */
  get done(): boolean {
    return this.#outcome !== null
  }

  /** What was adopted (`undefined` for a lossy number); only meaningful once {@link done}. */
  get result(): AdoptedJson | undefined {
    return this.#outcome ?? undefined
  }

  /**
   * Walks at most `budget` more children and containers (a container is frozen once everything in
   * it is); returns {@link done}. The root is recorded as a snapshot only when the whole value is frozen.
   */
  step(budget: number): boolean {
    if (this.#outcome !== null) return true
    const stop = this.#visited + budget
    const containers = this.#containers
    for (;;) {
      const top = containers.length - 1
      if (top < 0) {
        snapshots.add(this.#root)
        this.#outcome = { nodes: this.#nodes, depth: this.#deepest }
        return true
      }
      if (this.#visited >= stop) return false
      this.#visited++
      const container = containers[top]!
      const depth = top + 1
      let length = this.#lengths[top]!
      if (length < 0) {
        // Entering it (its keys, later its freeze) is work too: 100,000 empty objects were once frozen in one step.
        const keys = Array.isArray(container) ? undefined : Object.keys(container)
        this.#keys[top] = keys
        length = keys === undefined ? (container as unknown[]).length : keys.length
        this.#lengths[top] = length
        if (keys !== undefined) this.#nodes += keys.length
        if (depth > this.#deepest) this.#deepest = depth
        continue
      }
      const i = this.#next[top]!
      if (i >= length) {
        freeze(container)
        this.#pop()
        continue
      }
      this.#next[top] = i + 1
      const keys = this.#keys[top]
      const child: unknown = keys === undefined ? (container as unknown[])[i] : (container as Record<string, unknown>)[keys[i]!]
      this.#nodes++
      if (typeof child === 'object' && child !== null) {
        if (this.#shared.includes(child)) {
          if (depth + 1 > this.#deepest) this.#deepest = depth + 1
        } else this.#push(child)
      } else if (typeof child === 'number' && lossyNumber(child)) {
        this.#outcome = undefined
        containers.length = 0
        this.#keys.length = 0
        this.#next.length = 0
        this.#lengths.length = 0
        return true
      }
    }
  }
}

/**
 * Makes a value that `JSON.parse` has just returned (and that nothing else holds yet) a snapshot in
 * place: deep-frozen and recorded, so {@link snapshotLosslessJson} returns it as it is instead of
 * copying it. {@link JsonAdoption} does the same in bounded steps.
 */
export function adoptParsedJson(value: unknown): AdoptedJson | undefined {
  if (typeof value !== 'object' || value === null) {
    return typeof value === 'number' && lossyNumber(value) ? undefined : { nodes: 1, depth: 0 }
  }
  const adoption = new JsonAdoption(value)
  adoption.step(Infinity)
  return adoption.result
}
