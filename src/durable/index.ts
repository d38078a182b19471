/**
 * The durable store: the seam (`DurableStore`, its validation helpers and error factory)
 * and the in-memory driver. docs/durability.md.
 *
 * @module
 */
export * from './store.js'
export { createMemoryStore, type MemoryStoreOptions } from './memory-store.js'
