/**
 * What binds a decision or an exactly-once record to one call: a canonical SHA-256 of its
 * arguments (streamed in slices) and the run secret.
 *
 * @module
 */
import type { JsonValue } from '../json/json-value.js'

/** Characters of canonical JSON encoded and hashed per slice: what bounds the largest string built. */
const SLICE_CHARS = 32 * 1024

const encoder = new TextEncoder()

async function digest(bytes: Uint8Array<ArrayBuffer>): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))
}

function hex(bytes: Uint8Array, length = bytes.length): string {
  let out = ''
  for (let i = 0; i < length; i++) out += bytes[i]!.toString(16).padStart(2, '0')
  return out
}

/** A container being written: its items (an array's values, or an object's sorted keys) and the next one. */
type Frame = { readonly array: readonly JsonValue[]; i: number } | { readonly object: { readonly [key: string]: JsonValue }; readonly keys: readonly string[]; i: number }

/** The JSON text of `text` without its quotes, escaped slice by slice (a slice never ends inside a surrogate pair). */
function* quotedSlices(text: string): Generator<string> {
  for (let at = 0; at < text.length; ) {
    let end = Math.min(text.length, at + SLICE_CHARS)
    const last = text.charCodeAt(end - 1)
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--
    yield JSON.stringify(text.slice(at, end)).slice(1, -1)
    at = end
  }
}

/**
 * Canonical JSON of `value` (object keys sorted by code unit, no spaces), yielded in pieces
 * of about {@link SLICE_CHARS}: a long string is escaped slice by slice, so no piece (and no
 * copy of a value) is much longer than a slice. Iterative, one frame per open container:
 * nesting costs no call stack, and a container's items are visited in place.
 */
function* canonicalPieces(value: JsonValue): Generator<string> {
  const stack: Frame[] = []
  let out = ''
  let next: JsonValue | undefined = value
  for (;;) {
    if (next !== undefined) {
      const item: JsonValue = next
      next = undefined
      if (typeof item === 'string') {
        out += '"'
        for (const slice of quotedSlices(item)) {
          out += slice
          if (out.length >= SLICE_CHARS) {
            yield out
            out = ''
          }
        }
        out += '"'
      } else if (item === null || typeof item !== 'object') out += JSON.stringify(item)
      else if (Array.isArray(item)) {
        out += '['
        stack.push({ array: item, i: 0 })
      } else {
        out += '{'
        stack.push({ object: item, keys: Object.keys(item).sort(), i: 0 })
      }
    }
    const top = stack.at(-1)
    if (top === undefined) break
    if ('array' in top) {
      if (top.i === top.array.length) {
        out += ']'
        stack.pop()
      } else {
        if (top.i > 0) out += ','
        next = top.array[top.i++]!
      }
    } else if (top.i === top.keys.length) {
      out += '}'
      stack.pop()
    } else {
      const key = top.keys[top.i++]!
      out += `${top.i > 1 ? ',' : ''}${JSON.stringify(key)}:`
      next = top.object[key]!
    }
    if (out.length >= SLICE_CHARS) {
      yield out
      out = ''
    }
  }
  if (out !== '') yield out
}

/**
 * The canonical hash of a call's arguments: 64 hex digits. The canonical JSON (sorted keys)
 * is hashed slice by slice, each slice's digest chained into the next
 * (`h₀ = SHA-256(slice₀)`, `hᵢ = SHA-256(hᵢ₋₁ ‖ sliceᵢ)`), so equal arguments give equal
 * hashes whatever their key order, and no string longer than a slice is built.
 */
export async function argumentsHash(value: JsonValue): Promise<string> {
  let state: Uint8Array | undefined
  for (const piece of canonicalPieces(value)) {
    const bytes = encoder.encode(piece)
    if (state === undefined) state = await digest(bytes)
    else {
      const joined = new Uint8Array(state.length + bytes.length)
      joined.set(state)
      joined.set(bytes, state.length)
      state = await digest(joined)
    }
  }
  return hex(state ?? (await digest(new Uint8Array(0))))
}

/** SHA-256 of `parts` as a JSON array, as `hexDigits` hex digits (a key segment or a binding). */
export async function hashParts(parts: readonly (string | null)[], hexDigits = 64): Promise<string> {
  return hex(await digest(encoder.encode(JSON.stringify(parts))), hexDigits / 2)
}

/** A fresh run secret: minted when a run starts, kept in its parked state, never shown to a client. */
export function newRunSecret(): string {
  return crypto.randomUUID()
}

/** Whether `value` is an arguments hash as {@link argumentsHash} makes it. */
export function isArgumentsHash(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9a-f]{64}$/.test(value)
}

/**
 * Run secrets by the token of the run's `run_code` call. The bridge binds one when a run
 * starts (a durable run's is kept in its parked state, so a resumed run has the same);
 * the approval stage and the exactly-once records read it through a sub-call's `parent`
 * token, which only the run's own sub-calls carry.
 */
const runSecrets = new WeakMap<symbol, string>()

/** Binds `secret` to the run whose `run_code` call holds `token`. */
export function bindRunSecret(token: symbol, secret: string): void {
  runSecrets.set(token, secret)
}

/** The secret of the run whose `run_code` call holds `token`; `undefined` for any other token. */
export function runSecretOf(token: symbol): string | undefined {
  return runSecrets.get(token)
}
