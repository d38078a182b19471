/**
 * A memory store that fails or races on cue: a hook may run before or after any operation
 * (throw to fail it, write through `base` to race it), and every operation is logged.
 * @module
 */
import { createMemoryStore } from '../../src/durable/memory-store.js'
import type { DurableStore, StoreDeleteResult, StoreEntry, StoreListPage, StorePutResult, StoreWriteOptions } from '../../src/durable/store.js'

/** One logged operation: `get|put|delete|list <key or prefix>`, plus the ifVersion of a conditional write. */
export type CueOp = { readonly op: 'get' | 'put' | 'delete' | 'list'; readonly key: string; readonly ifVersion?: string | null | undefined }

/** A hook: runs around one operation; throwing fails that operation. */
export type Cue = (op: CueOp, value?: string) => void | Promise<void>

/** A {@link DurableStore} over a memory store, with cues and a log of operations. */
export interface CueStore {
  readonly store: DurableStore
  /** The memory store under it: writes through it bypass the cues and the log (another process). */
  readonly base: DurableStore
  /** Every operation asked of `store`, in order. */
  readonly ops: CueOp[]
  /** Runs before each operation (before it reaches `base`). */
  before: Cue | undefined
  /** Runs after each operation landed in `base` (before its caller sees the answer). */
  after: Cue | undefined
}

/** Creates a {@link CueStore}. */
export function cueStore(): CueStore {
  const base = createMemoryStore()
  const around = async <T>(op: CueOp, value: string | undefined, run: () => Promise<T>): Promise<T> => {
    cues.ops.push(op)
    await cues.before?.(op, value)
    const answer = await run()
    await cues.after?.(op, value)
    return answer
  }
  const store: DurableStore = {
    get: (key): Promise<StoreEntry | undefined> => around({ op: 'get', key }, undefined, () => base.get(key)),
    put: (key, value, options?: StoreWriteOptions): Promise<StorePutResult> => around({ op: 'put', key, ifVersion: options?.ifVersion }, value, () => base.put(key, value, options)),
    delete: (key, options?: StoreWriteOptions): Promise<StoreDeleteResult> => around({ op: 'delete', key, ifVersion: options?.ifVersion }, undefined, () => base.delete(key, options)),
    list: (prefix, options): Promise<StoreListPage> => around({ op: 'list', key: prefix }, undefined, () => base.list(prefix, options)),
  }
  const cues: CueStore = { store, base, ops: [], before: undefined, after: undefined }
  return cues
}

/** The value at `key` parsed, or `undefined` when absent. */
export async function readJson(store: DurableStore, key: string): Promise<unknown> {
  const entry = await store.get(key)
  return entry === undefined ? undefined : JSON.parse(entry.value)
}
