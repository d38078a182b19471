/**
 * The durable store seam: a small string key/value store with compare-and-set, and the key
 * and value checks every driver shares (docs/durability.md).
 *
 * @module
 */
import { ToolError, type ToolErrorCode } from '../errors.js'
import { utf8Length } from '../util/utf8.js'

/** What `get` answers for a present key. */
export interface StoreEntry {
  /** The stored text. */
  readonly value: string
  /** The key's current version: opaque, compare only for equality; it changes on every write. */
  readonly version: string
}

/**
 * A compare-and-set condition. `ifVersion: '<v>'` writes only if the key's current version
 * is exactly `<v>`; `ifVersion: null` writes only if the key is absent; omitted writes
 * unconditionally.
 */
export interface StoreWriteOptions {
  readonly ifVersion?: string | null
}

/**
 * A write's answer. A conflict is a normal answer, never an exception: `version` is the
 * key's current version (`undefined`: the key is absent), so a caller can re-read and retry.
 */
export type StorePutResult =
  | { readonly ok: true; readonly version: string }
  | { readonly ok: false; readonly version: string | undefined }

/** A delete's answer: `ok: true` once the key is absent (deleting an absent key unconditionally is ok), else the conflict. */
export type StoreDeleteResult = { readonly ok: true } | { readonly ok: false; readonly version: string | undefined }

/** Paging of `list`. */
export interface StoreListOptions {
  /** At most this many entries (default {@link DEFAULT_STORE_LIST_LIMIT}, at most {@link MAX_STORE_LIST_LIMIT}). */
  readonly limit?: number
  /** Only keys strictly after this one (the previous page's `cursor`). */
  readonly after?: string
}

/** One page of `list`: keys in ascending code-unit order, with their versions (values are not read). */
export interface StoreListPage {
  readonly entries: readonly { readonly key: string; readonly version: string }[]
  /** Present when more keys may follow: pass it as `after` for the next page. */
  readonly cursor?: string
}

/**
 * The store seam every durable part of toolyard is written against. Two processes sharing
 * one store see each other's writes; compare-and-set (`ifVersion`) is what lets exactly one
 * of them win a race (for example, to resume a parked run).
 */
export interface DurableStore {
  /** The value and version of `key`, or `undefined` when absent. */
  get(key: string): Promise<StoreEntry | undefined>
  /** Writes `value` under `key`, conditionally when `ifVersion` is given. */
  put(key: string, value: string, options?: StoreWriteOptions): Promise<StorePutResult>
  /** Removes `key`, conditionally when `ifVersion` is given. */
  delete(key: string, options?: StoreWriteOptions): Promise<StoreDeleteResult>
  /** The keys starting with `prefix` (`''`: every key), in key order, one page at a time. */
  list(prefix: string, options?: StoreListOptions): Promise<StoreListPage>
}

/** Options every driver accepts. */
export interface StoreOptions {
  /** The largest value accepted, in UTF-8 bytes (default {@link DEFAULT_MAX_STORE_VALUE_BYTES}). */
  readonly maxValueBytes?: number
}

/** The option names of {@link StoreOptions}: a store that takes no others refuses the rest (a misspelt cap stays no default). */
export const STORE_OPTION_KEYS: readonly string[] = ['maxValueBytes']

/** The longest key, in characters (a key becomes a file name of twice its length on Node: 255 bytes is the usual limit). */
export const MAX_STORE_KEY_LENGTH = 120
/** The default value cap: 1 MiB (a parked run's journal is expected to stay under 64 KiB). */
export const DEFAULT_MAX_STORE_VALUE_BYTES = 1024 * 1024
/** `list`'s default page size. */
export const DEFAULT_STORE_LIST_LIMIT = 100
/** `list`'s largest page size. */
export const MAX_STORE_LIST_LIMIT = 1000

/** The codes a store throws with (programming errors and backend failures; conflicts are answers). */
export type StoreErrorCode = Extract<
  ToolErrorCode,
  'INVALID_STORE_KEY' | 'INVALID_STORE_VALUE' | 'STORE_VALUE_TOO_LARGE' | 'STORE_FAILED' | 'STORE_BUSY' | 'INVALID_OPTIONS'
>

/** The one factory of store errors: a `ToolError` with a stable code. */
export function storeError(code: StoreErrorCode, message: string, cause?: unknown): ToolError {
  return new ToolError(code, message, cause === undefined ? undefined : { cause })
}

// One segment: letters, digits and a few punctuation marks; no '/', '\', NUL, space or '%'.
const SEGMENT = /^[A-Za-z0-9._~:@=+-]+$/
const PREFIX_CHARS = /^[A-Za-z0-9._~:@=+/-]*$/

/**
 * Throws `INVALID_STORE_KEY` unless `key` is 1..{@link MAX_STORE_KEY_LENGTH} characters of
 * `/`-separated segments, each made of `[A-Za-z0-9._~:@=+-]` and neither `.` nor `..`. No
 * empty segment (so no leading `/`, i.e. no absolute path), no NUL or backslash: a key
 * can never name a path outside a driver's directory, whatever the driver does with it.
 */
export function assertStoreKey(key: unknown): asserts key is string {
  if (typeof key !== 'string') throw storeError('INVALID_STORE_KEY', `a store key must be a string, not ${key === null ? 'null' : typeof key}`)
  if (key.length === 0 || key.length > MAX_STORE_KEY_LENGTH) {
    throw storeError('INVALID_STORE_KEY', `a store key must be 1 to ${MAX_STORE_KEY_LENGTH} characters long (got ${key.length})`)
  }
  for (const segment of key.split('/')) {
    if (!SEGMENT.test(segment) || segment === '.' || segment === '..') {
      throw storeError('INVALID_STORE_KEY', `invalid store key ${JSON.stringify(key)}: segments separated by '/' must be non-empty, made of [A-Za-z0-9._~:@=+-], and not '.' or '..'`)
    }
  }
}

/**
 * Throws `INVALID_STORE_KEY` unless `prefix` is a possible start of a key (`''` included):
 * key characters only, and every complete segment (each one followed by `/`) a valid one.
 */
export function assertStorePrefix(prefix: unknown, what = 'prefix'): asserts prefix is string {
  const complete = typeof prefix === 'string' ? prefix.split('/').slice(0, -1) : []
  if (
    typeof prefix !== 'string' ||
    prefix.length > MAX_STORE_KEY_LENGTH ||
    !PREFIX_CHARS.test(prefix) ||
    complete.some((segment) => segment === '' || segment === '.' || segment === '..')
  ) {
    throw storeError('INVALID_STORE_KEY', `a store list ${what} must be the start of a key: at most ${MAX_STORE_KEY_LENGTH} characters of [A-Za-z0-9._~:@=+/-], no empty, '.' or '..' segment`)
  }
}

/** Reads and checks a driver's `maxValueBytes` option (`INVALID_OPTIONS` when malformed). */
export function resolveMaxValueBytes(options: StoreOptions | undefined, fallback = DEFAULT_MAX_STORE_VALUE_BYTES): number {
  const max = options?.maxValueBytes ?? fallback
  if (!Number.isSafeInteger(max) || max < 1) throw storeError('INVALID_OPTIONS', `maxValueBytes must be a positive integer (got ${String(max)})`)
  return max
}

// Matches only an unpaired surrogate: with the `u` flag a valid pair is one code point.
const LONE_SURROGATE = /\p{Cs}/u

/**
 * Throws unless `value` is a well-formed string of at most `maxBytes` UTF-8 bytes:
 * `INVALID_STORE_VALUE` for a non-string or a lone surrogate (UTF-8 cannot carry it, so a
 * file would hold a different text), `STORE_VALUE_TOO_LARGE` past the cap. Counts without
 * encoding and stops at the cap (a huge value costs no copy), and only when the cap could
 * be reached at all (a UTF-16 unit is at most 3 UTF-8 bytes).
 */
export function assertStoreValue(value: unknown, maxBytes: number): asserts value is string {
  if (typeof value !== 'string') throw storeError('INVALID_STORE_VALUE', `a store value must be a string (JSON text), not ${value === null ? 'null' : typeof value}`)
  const tooLarge = () => storeError('STORE_VALUE_TOO_LARGE', `the store value exceeds maxValueBytes (${maxBytes} UTF-8 bytes)`)
  if (value.length > maxBytes) throw tooLarge()
  if (LONE_SURROGATE.test(value)) throw storeError('INVALID_STORE_VALUE', 'a store value must be well-formed text (it holds a lone surrogate)')
  if (value.length * 3 > maxBytes && utf8Length(value, maxBytes) > maxBytes) throw tooLarge()
}

/** Throws `INVALID_OPTIONS` unless `options.ifVersion` is absent, `null` or a non-empty string. */
export function readIfVersion(options: StoreWriteOptions | undefined): string | null | undefined {
  if (options === undefined) return undefined
  if (typeof options !== 'object' || options === null) throw storeError('INVALID_OPTIONS', 'store write options must be an object')
  const ifVersion = options.ifVersion
  if (ifVersion === undefined || ifVersion === null) return ifVersion
  if (typeof ifVersion !== 'string' || ifVersion === '') throw storeError('INVALID_OPTIONS', 'ifVersion must be a version string, null (only if absent) or omitted')
  return ifVersion
}

/** Whether a write conditioned on `ifVersion` may proceed over a key whose current version is `current`. */
export function versionMatches(ifVersion: string | null | undefined, current: string | undefined): boolean {
  if (ifVersion === undefined) return true
  if (ifVersion === null) return current === undefined
  return current === ifVersion
}

/** Reads and checks `list` options: the page size and the exclusive start key. */
export function readListOptions(options: StoreListOptions | undefined): { limit: number; after: string | undefined } {
  const limit = options?.limit ?? DEFAULT_STORE_LIST_LIMIT
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_STORE_LIST_LIMIT) {
    throw storeError('INVALID_OPTIONS', `list limit must be an integer from 1 to ${MAX_STORE_LIST_LIMIT} (got ${String(limit)})`)
  }
  const after = options?.after
  if (after !== undefined) assertStorePrefix(after, 'cursor')
  return { limit, after }
}
