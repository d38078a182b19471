/**
 * Bounded, stack-safe text rendering and size measuring of program values, shared by the in-worker
 * console shim (program objects: getters are shown, never invoked) and the host (received copies:
 * sizes checked against `maxValueBytes`).
 * @module
 */
import { utf8Length, utf8Prefix } from '../util/utf8.js'

export { utf8Length, utf8Prefix }

/** Options of {@link renderValue}. */
export interface RenderValueOptions {
  /** Stop rendering once the text reaches this many UTF-16 code units (the tail is cut with `…`). */
  readonly maxLength?: number
  /** Nested containers deeper than this render as `[Object]` / `[Array]`. Default 6. */
  readonly maxDepth?: number
  /** Items shown per array, map, set or object before `… N more`. Default 100. */
  readonly maxItems?: number
  /** Render a top-level string raw (console style) instead of quoted. Default true. */
  readonly rawTopLevelString?: boolean
}

const mapSize = Object.getOwnPropertyDescriptor(Map.prototype, 'size')!.get!
const setSize = Object.getOwnPropertyDescriptor(Set.prototype, 'size')!.get!

type Frame = { readonly text: string } | { readonly value: unknown; readonly depth: number; readonly key?: string }

const identifier = /^[A-Za-z_$][\w$]*$/

function describeOwn(value: object, key: string): PropertyDescriptor | undefined {
  try {
    return Object.getOwnPropertyDescriptor(value, key)
  } catch {
    // A throwing getter or proxy trap: rendered as absent, never run again.
    return undefined
  }
}

function className(value: object): string | undefined {
  try {
    const proto: unknown = Object.getPrototypeOf(value)
    if (proto === null) return '[Object: null prototype]'
    if (proto === Object.prototype || proto === Array.prototype) return undefined
    const ctor = describeOwn(proto as object, 'constructor')?.value as unknown
    if (typeof ctor !== 'function') return undefined
    const name = describeOwn(ctor, 'name')?.value as unknown
    return typeof name === 'string' && name !== '' ? name : undefined
  } catch {
    // A throwing getter or proxy trap: rendered as absent, never run again.
    return undefined
  }
}

function primitive(value: unknown, quote: boolean): string | undefined {
  switch (typeof value) {
    case 'string':
      return quote ? JSON.stringify(value) : value
    case 'number':
      return Object.is(value, -0) ? '-0' : String(value)
    case 'bigint':
      return `${String(value)}n`
    case 'boolean':
      return String(value)
    case 'undefined':
      return 'undefined'
    case 'symbol':
      try {
        return (value as symbol).toString()
      } catch {
        // A symbol whose description cannot be read still renders.
        return 'Symbol()'
      }
    case 'function': {
      const name = describeOwn(value as object, 'name')?.value as unknown
      return typeof name === 'string' && name !== '' ? `[Function: ${name}]` : '[Function (anonymous)]'
    }
    default:
      return value === null ? 'null' : undefined
  }
}

function errorText(value: Error): string {
  const stack = describeOwn(value, 'stack')?.value as unknown
  if (typeof stack === 'string' && stack !== '') return stack
  const name = describeOwn(value, 'name')?.value ?? describeOwn(Object.getPrototypeOf(value) as object, 'name')?.value
  const message = describeOwn(value, 'message')?.value
  return `${typeof name === 'string' ? name : 'Error'}: ${typeof message === 'string' ? message : ''}`
}

function renderKeys(obj: object, isArray: boolean, maxItems: number): string[] {
  if (!isArray) return Object.keys(obj)
  const length = (obj as unknown[]).length
  const keys: string[] = []
  for (let i = 0; i < length && i <= maxItems; i++) keys.push(String(i))
  if (length <= maxItems) for (const key of Object.keys(obj)) if (!isIndex(key)) keys.push(key)
  return keys
}

function isIndex(key: string): boolean {
  return /^(0|[1-9]\d*)$/.test(key)
}

/**
 * Renders any value as readable text, `util.inspect`-like, without recursion (an
 * explicit work stack), without invoking getters, `toString`, `toJSON` or proxies'
 * `get` traps, bounded in depth, item count and total length. Never throws.
 */
export function renderValue(value: unknown, options: RenderValueOptions = {}): string {
  const maxLength = options.maxLength ?? Number.POSITIVE_INFINITY
  const maxDepth = options.maxDepth ?? 6
  const maxItems = options.maxItems ?? 100
  const top = primitive(value, options.rawTopLevelString === false)
  if (top !== undefined) return top.length > maxLength ? `${top.slice(0, maxLength)}…` : top

  let out = ''
  const seen = new Set<object>()
  const stack: Frame[] = [{ value, depth: 0 }]
  while (stack.length > 0) {
    if (out.length >= maxLength) return `${out.slice(0, maxLength)}…`
    const frame = stack.pop()!
    if ('text' in frame) {
      out += frame.text
      continue
    }
    if (frame.key !== undefined) out += identifier.test(frame.key) ? `${frame.key}: ` : `${JSON.stringify(frame.key)}: `
    const v = frame.value
    const simple = primitive(v, true)
    if (simple !== undefined) {
      out += simple
      continue
    }
    const obj = v as object
    if (seen.has(obj)) {
      out += '[Circular]'
      continue
    }
    try {
      out += renderObject(obj, frame.depth, maxDepth, maxItems, stack, seen)
    } catch {
      // The mark is the report: the reader sees where a value could not be rendered.
      out += '[Unrenderable]'
    }
  }
  return out.length > maxLength ? `${out.slice(0, maxLength)}…` : out
}

/** Renders one object: returns its opening text and pushes its children (reversed) onto the stack. */
function renderObject(obj: object, depth: number, maxDepth: number, maxItems: number, stack: Frame[], seen: Set<object>): string {
  if (obj instanceof Date) {
    const time = Date.prototype.getTime.call(obj)
    return Number.isNaN(time) ? 'Invalid Date' : Date.prototype.toISOString.call(obj)
  }
  if (obj instanceof RegExp) return RegExp.prototype.toString.call(obj)
  if (obj instanceof Error) return errorText(obj)
  if (obj instanceof ArrayBuffer) return `ArrayBuffer { byteLength: ${obj.byteLength} }`
  if (ArrayBuffer.isView(obj)) {
    const name = className(obj) ?? 'TypedArray'
    if (obj instanceof DataView) return `DataView { byteLength: ${obj.byteLength} }`
    const view = obj as unknown as ArrayLike<number | bigint>
    const shown = Math.min(view.length, maxItems)
    const parts: string[] = []
    for (let i = 0; i < shown; i++) parts.push(primitive(view[i], true) ?? '?')
    if (view.length > shown) parts.push(`… ${view.length - shown} more items`)
    return `${name}(${view.length}) [${parts.length > 0 ? ` ${parts.join(', ')} ` : ''}]`
  }
  const isArray = Array.isArray(obj)
  const isMap = obj instanceof Map
  const isSet = obj instanceof Set
  const name = className(obj)
  if (depth >= maxDepth) return isArray ? '[Array]' : `[${name ?? 'Object'}]`
  seen.add(obj)

  const children: Frame[] = []
  let prefix: string
  let open: string
  let close: string
  if (isMap || isSet) {
    const size = (isMap ? mapSize : setSize).call(obj) as number
    prefix = `${isMap ? 'Map' : 'Set'}(${size}) `
    open = '{'
    close = '}'
    let count = 0
    const entries = isMap ? Map.prototype.entries.call(obj) : Set.prototype.values.call(obj)
    for (const entry of entries as Iterable<unknown>) {
      if (count === maxItems) {
        children.push({ text: `… ${size - count} more items` })
        break
      }
      if (isMap) {
        const [k, val] = entry as [unknown, unknown]
        children.push({ value: k, depth: depth + 1 }, { text: ' => ' }, { value: val, depth: depth + 1 })
      } else children.push({ value: entry, depth: depth + 1 })
      children.push({ text: ', ' })
      count++
    }
  } else {
    prefix = isArray ? '' : name !== undefined ? `${name} ` : ''
    open = isArray ? '[' : '{'
    close = isArray ? ']' : '}'
    const keys = renderKeys(obj, isArray, maxItems)
    let count = 0
    // An array cut at maxItems counts its length (its other keys are not listed).
    const total = isArray && (obj as unknown[]).length > maxItems ? (obj as unknown[]).length : keys.length
    for (const key of keys) {
      const desc = describeOwn(obj, key)
      if (desc === undefined || desc.enumerable !== true) continue
      if (count === maxItems) {
        children.push({ text: `… ${total - count} more items` })
        break
      }
      const showKey = isArray && isIndex(key) ? undefined : key
      if ('value' in desc) children.push(showKey === undefined ? { value: desc.value, depth: depth + 1 } : { value: desc.value, depth: depth + 1, key: showKey })
      else {
        const kind = desc.get && desc.set ? '[Getter/Setter]' : desc.get ? '[Getter]' : '[Setter]'
        if (showKey !== undefined) children.push({ text: identifier.test(showKey) ? `${showKey}: ` : `${JSON.stringify(showKey)}: ` })
        children.push({ text: kind })
      }
      children.push({ text: ', ' })
      count++
    }
  }
  if (children.length > 0 && 'text' in children[children.length - 1]! && (children[children.length - 1] as { text: string }).text === ', ') children.pop()
  const spacing = isArray ? '' : ' '
  if (children.length === 0) return `${prefix}${open}${close}`
  stack.push({ text: `${spacing}${close}` })
  for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!)
  return `${prefix}${open}${spacing}`
}

/**
 * An upper-bound estimate of a structured-clone value's serialized size in bytes, close to its JSON
 * length (binary data counts its byte length).
 */
export function measureValueBytes(value: unknown, limit: number): number {
  let total = 0
  const seen = new Set<object>()
  const stack: unknown[] = [value]
  while (stack.length > 0) {
    if (total > limit) return limit + 1
    const v = stack.pop()
    switch (typeof v) {
      case 'string':
        total += v.length > limit ? v.length : utf8Length(v) + 2
        continue
      case 'number':
      case 'bigint':
      case 'boolean':
        total += String(v).length
        continue
      case 'undefined':
      case 'symbol':
      case 'function':
        total += 4
        continue
    }
    if (v === null) {
      total += 4
      continue
    }
    const obj = v as object
    if (seen.has(obj)) {
      total += 12
      continue
    }
    seen.add(obj)
    try {
      if (obj instanceof ArrayBuffer) total += obj.byteLength
      else if (ArrayBuffer.isView(obj)) total += obj.byteLength
      else if (obj instanceof Date || obj instanceof RegExp) total += 26
      else if (obj instanceof Error) stack.push(describeOwn(obj, 'message')?.value, describeOwn(obj, 'stack')?.value)
      else if (obj instanceof Map) {
        total += 2
        for (const [k, val] of Map.prototype.entries.call(obj) as Iterable<[unknown, unknown]>) {
          stack.push(k, val)
          total += 2
          if (total > limit) break
        }
      } else if (obj instanceof Set) {
        total += 2
        for (const item of Set.prototype.values.call(obj) as Iterable<unknown>) {
          stack.push(item)
          total += 1
          if (total > limit) break
        }
      } else {
        total += 2
        const isArray = Array.isArray(obj)
        // Every element costs at least one byte: a longer array is over the limit without
        // enumerating its indices (a host-side O(n) walk a program could aim at the host).
        if (isArray && (obj as unknown[]).length > limit) return limit + 1
        for (const key of Object.keys(obj)) {
          const desc = describeOwn(obj, key)
          if (desc === undefined || !('value' in desc)) continue
          total += isArray ? 1 : utf8Length(key) + 4
          stack.push(desc.value)
          if (total > limit) break
        }
      }
    } catch {
      // An unmeasurable entry counts as a small one; the cap still bounds the total.
      total += 16
    }
  }
  return total > limit ? limit + 1 : total
}

/**
 * The deepest nesting a program's value may have when it enters the host (a binding call's
 * arguments, the run's value).
 */
export const MAX_VALUE_DEPTH = 100

/**
 * What a value nested deeper than {@link MAX_VALUE_DEPTH} becomes: its text rendering,
 * cut so that it and its mark fit in `maxBytes` UTF-8 bytes.
 */
export function deepValueText(value: unknown, maxBytes: number): string {
  const mark = `… [value rendered as text: nested deeper than ${MAX_VALUE_DEPTH} levels]`
  return renderedWithin(value, Math.max(0, maxBytes - utf8Length(mark))) + mark
}

/**
 * A value's text rendering (32 levels deep at most) cut to `maxBytes` UTF-8 bytes: what a
 * completion value becomes when it cannot cross as itself (too large, too deep).
 */
export function renderedWithin(value: unknown, maxBytes: number): string {
  return utf8Prefix(renderValue(value, { maxLength: maxBytes + 1, maxDepth: 32 }), maxBytes)
}
