/**
 * A Durable Object's storage as a Map (the whole interface the edge's store driver uses), so the
 * edge's driver runs in Node tests.
 * @module
 */
import type { DurableObjectStorageLike } from '../../platforms/edge/durable-object-store.js'

/** An empty storage over one Map. */
export function mapStorage(): DurableObjectStorageLike {
  const data = new Map<string, unknown>()
  return {
    async get(keys) {
      return new Map(keys.filter((k) => data.has(k)).map((k) => [k, data.get(k)]))
    },
    async put(entries) {
      for (const [k, v] of Object.entries(entries)) data.set(k, v)
    },
    async delete(keys) {
      let n = 0
      for (const k of keys) n += data.delete(k) ? 1 : 0
      return n
    },
    async list({ prefix = '', startAfter, limit = Infinity }) {
      const names = [...data.keys()].filter((k) => k.startsWith(prefix) && (startAfter === undefined || k > startAfter)).sort()
      return new Map(names.slice(0, limit).map((k) => [k, data.get(k)]))
    },
  }
}
