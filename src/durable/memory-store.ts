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
  STORE_OPTION_KEYS,
  storeError,
  versionMatches,
  type DurableStore,
  type StoreEntry,
  type StoreOptions,
} from './store.js'
import { firstAtOrAfter } from './_sorted-keys.js'
import { refuseUnknownOptions } from '../util/unknown-field.js'

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
  refuseUnknownOptions(options, STORE_OPTION_KEYS, (message) => {
    throw storeError('INVALID_OPTIONS', `createMemoryStore: ${message}`)
  })
  const maxValueBytes = resolveMaxValueBytes(options)
  const entries = new Map<string, StoreEntry>()
  // Every key, in UTF-16 code unit order (the order `list` pages in): a page is a binary search
  // and `limit` steps, not a scan and sort of every key (10,000 parked runs listed 100 at a time
  // cost 100 sorts of 10,000 keys).
  const sortedKeys: string[] = []
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
      if (current === undefined) sortedKeys.splice(firstAtOrAfter(sortedKeys, key), 0, key)
      entries.set(key, Object.freeze({ value, version }))
      return { ok: true, version }
    },
    async delete(key, writeOptions) {
      assertStoreKey(key)
      const ifVersion = readIfVersion(writeOptions)
      const current = entries.get(key)?.version
      if (!versionMatches(ifVersion, current)) return { ok: false, version: current }
      if (entries.delete(key)) sortedKeys.splice(firstAtOrAfter(sortedKeys, key), 1)
      return { ok: true }
    },
    async list(prefix, listOptions) {
      assertStorePrefix(prefix)
      const { limit, after } = readListOptions(listOptions)
      let at = firstAtOrAfter(sortedKeys, prefix)
      if (after !== undefined && after >= prefix) {
        at = firstAtOrAfter(sortedKeys, after)
        if (sortedKeys[at] === after) at++
      }
      const page: { key: string; version: string }[] = []
      for (; at < sortedKeys.length && page.length < limit && sortedKeys[at]!.startsWith(prefix); at++) {
        const key = sortedKeys[at]!
        page.push({ key, version: entries.get(key)!.version })
      }
      const more = at < sortedKeys.length && sortedKeys[at]!.startsWith(prefix)
      return more ? { entries: page, cursor: page[page.length - 1]!.key } : { entries: page }
    },
  }
}
