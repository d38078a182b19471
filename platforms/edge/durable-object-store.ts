/**
 * `createDurableObjectStore(storage)`: the `DurableStore` seam over a Durable Object's storage
 * (`ctx.storage`), for state one object owns (at the edge: one object per run).
 * @module
 */
import { ToolError } from '../../src/errors.js'
import {
  assertStoreKey,
  assertStorePrefix,
  assertStoreValue,
  readIfVersion,
  readListOptions,
  resolveMaxValueBytes,
  STORE_OPTION_KEYS,
  storeError,
  versionMatches,
  type DurableStore,
  type StoreOptions,
  type StorePutResult,
} from '../../src/durable/store.js'
import { refuseUnknownOptions } from '../../src/util/unknown-field.js'

/**
 * The part of Cloudflare's `DurableObjectStorage` this driver uses, typed locally so the
 * package needs no runtime typings (`ctx.storage` satisfies it).
 */
export interface DurableObjectStorageLike {
  get(keys: string[]): Promise<Map<string, unknown>>
  put(entries: Record<string, unknown>): Promise<void>
  delete(keys: string[]): Promise<number>
  list(options: { prefix?: string; startAfter?: string; limit?: number }): Promise<Map<string, unknown>>
}

/** Options of {@link createDurableObjectStore}. */
export type DurableObjectStoreOptions = StoreOptions

/**
 * The default value cap at the edge: 128 KiB, the per-value limit of key-value-backed
 * Durable Object storage (SQLite-backed objects accept 2 MB; raise `maxValueBytes` there).
 */
export const DEFAULT_DURABLE_OBJECT_MAX_VALUE_BYTES = 128 * 1024

// The driver's own keys, so an object's other state can share its storage: a value and its
// version live under two keys written together, and `list` reads only the version keys.
const VALUE = 'toolyard-store:v:'
const VERSION = 'toolyard-store:m:'
const COUNTER = 'toolyard-store:seq'

// One queue per storage object, shared by every store created over it in this isolate.
const queues = new WeakMap<object, Promise<unknown>>()

function serialized<T>(storage: object, body: () => Promise<T>): Promise<T> {
  const run = (queues.get(storage) ?? Promise.resolve()).then(body)
  queues.set(
    storage,
    run.then(
      () => {},
      () => {},
    ),
  )
  return run
}

function failed(what: string) {
  return (error: unknown): never => {
    if (error instanceof ToolError) throw error
    throw storeError('STORE_FAILED', `Durable Object storage could not ${what}: ${error instanceof Error ? error.message : String(error)}`, error)
  }
}

function assertStorage(storage: unknown): asserts storage is DurableObjectStorageLike {
  const s = storage as Record<string, unknown> | null
  if (typeof s !== 'object' || s === null || !['get', 'put', 'delete', 'list'].every((name) => typeof s[name] === 'function')) {
    throw storeError('INVALID_OPTIONS', 'createDurableObjectStore needs a Durable Object storage (ctx.storage) with get, put, delete and list')
  }
}

/**
 * A `DurableStore` over one Durable Object's storage. Compare-and-set is exact within the
 * object (every write passes one queue per storage, see above), and an object is the only
 * writer of its storage, so it holds for every request the object serves. Versions come
 * from one counter per object, written with the value in the same atomic multi-key `put`:
 * they never repeat, even after a delete. A write or delete is one atomic storage call.
 *
 * @example
 * ```ts
 * // In a Worker module bundled with toolyard's edge sources (not a package export yet).
 * import { createDurableObjectStore } from './durable-object-store.js'
 * export class RunObject {
 *   constructor(ctx) { this.store = createDurableObjectStore(ctx.storage) }
 *   async fetch() { return Response.json(await this.store.get('journal')) }
 * }
 * ```
 */
export function createDurableObjectStore(storage: DurableObjectStorageLike, options?: DurableObjectStoreOptions): DurableStore {
  assertStorage(storage)
  refuseUnknownOptions(options, STORE_OPTION_KEYS, (message) => {
    throw storeError('INVALID_OPTIONS', `createDurableObjectStore: ${message}`)
  })
  const maxValueBytes = resolveMaxValueBytes(options, DEFAULT_DURABLE_OBJECT_MAX_VALUE_BYTES)
  const currentVersion = async (key: string) => (await storage.get([VERSION + key])).get(VERSION + key) as string | undefined

  return {
    async get(key) {
      assertStoreKey(key)
      const found = await storage.get([VERSION + key, VALUE + key]).catch(failed('read'))
      const version = found.get(VERSION + key)
      const value = found.get(VALUE + key)
      if (version === undefined) return undefined
      if (typeof version !== 'string' || typeof value !== 'string') throw storeError('STORE_FAILED', `the stored record of ${JSON.stringify(key)} is corrupt`)
      return { value, version }
    },
    async put(key, value, writeOptions) {
      assertStoreKey(key)
      assertStoreValue(value, maxValueBytes)
      const ifVersion = readIfVersion(writeOptions)
      return serialized(storage, async (): Promise<StorePutResult> => {
        const found = await storage.get([VERSION + key, COUNTER])
        const current = found.get(VERSION + key) as string | undefined
        if (!versionMatches(ifVersion, current)) return { ok: false, version: current }
        const counter = Number(found.get(COUNTER) ?? 0) + 1
        const version = String(counter)
        await storage.put({ [VALUE + key]: value, [VERSION + key]: version, [COUNTER]: counter })
        return { ok: true, version }
      }).catch(failed('write'))
    },
    async delete(key, writeOptions) {
      assertStoreKey(key)
      const ifVersion = readIfVersion(writeOptions)
      return serialized(storage, async () => {
        const current = await currentVersion(key)
        if (!versionMatches(ifVersion, current)) return { ok: false as const, version: current }
        if (current !== undefined) await storage.delete([VALUE + key, VERSION + key])
        return { ok: true as const }
      }).catch(failed('delete'))
    },
    async list(prefix, listOptions) {
      assertStorePrefix(prefix)
      const { limit, after } = readListOptions(listOptions)
      const found = await storage
        .list({ prefix: VERSION + prefix, ...(after === undefined ? {} : { startAfter: VERSION + after }), limit: limit + 1 })
        .catch(failed('list'))
      const entries = [...found].slice(0, limit).map(([name, version]) => ({ key: name.slice(VERSION.length), version: String(version) }))
      return found.size > limit ? { entries, cursor: entries[entries.length - 1]!.key } : { entries }
    },
  }
}
