/**
 * The in-memory `DurableStore`: one `Map` in this process. For tests, single-process hosts
 * and as the reference every other driver's contract is checked against.
 *
 * @module
 */
import {
  assertStoreKey,
  assertStorePrefix,
  assertStoreValue,
  readIfVersion,
  readListOptions,
  resolveMaxValueBytes,
  versionMatches,
  type DurableStore,
  type StoreEntry,
  type StoreOptions,
} from './store.js'

/** Options of {@link createMemoryStore}. */
export type MemoryStoreOptions = StoreOptions

/**
 * A `DurableStore` held in memory (lost with the process). Each operation runs to completion
 * without yielding between its read and its write, so compare-and-set is atomic. Versions
 * come from one counter per store: they never repeat, even after a key is deleted and
 * written again, so a stale `ifVersion` can never match a new incarnation of its key.
 *
 * @example
 * ```ts
 * import { createMemoryStore } from 'toolyard'
 * const store = createMemoryStore({ maxValueBytes: 64 * 1024 })
 * await store.put('approval/1', JSON.stringify({ tool: 'write_file' }), { ifVersion: null })
 * ```
 */
export function createMemoryStore(options?: MemoryStoreOptions): DurableStore {
  const maxValueBytes = resolveMaxValueBytes(options)
  const entries = new Map<string, StoreEntry>()
  let counter = 0
  return {
    async get(key) {
      assertStoreKey(key)
      return entries.get(key)
    },
    async put(key, value, writeOptions) {
      assertStoreKey(key)
      assertStoreValue(value, maxValueBytes)
      const ifVersion = readIfVersion(writeOptions)
      const current = entries.get(key)?.version
      if (!versionMatches(ifVersion, current)) return { ok: false, version: current }
      const version = String(++counter)
      entries.set(key, Object.freeze({ value, version }))
      return { ok: true, version }
    },
    async delete(key, writeOptions) {
      assertStoreKey(key)
      const ifVersion = readIfVersion(writeOptions)
      const current = entries.get(key)?.version
      if (!versionMatches(ifVersion, current)) return { ok: false, version: current }
      entries.delete(key)
      return { ok: true }
    },
    async list(prefix, listOptions) {
      assertStorePrefix(prefix)
      const { limit, after } = readListOptions(listOptions)
      const keys = [...entries.keys()].filter((key) => key.startsWith(prefix) && (after === undefined || key > after)).sort()
      const page = keys.slice(0, limit).map((key) => ({ key, version: entries.get(key)!.version }))
      return keys.length > limit ? { entries: page, cursor: page[page.length - 1]!.key } : { entries: page }
    },
  }
}
