/**
 * `ToolyardRunIndex`: the Durable Object holding every run's pending approvals and which run
 * object owns a call id; a `DurableStore` over `fetch` (docs/deployment.md).
 *
 * @module
 */
import { ToolError, type ToolErrorCode } from '../../src/errors.js'
import type { DurableStore } from '../../src/durable/store.js'
import { createDurableObjectStore, type DurableObjectStorageLike } from './durable-object-store.js'
import type { DurableObjectNamespaceLike } from './_edge-app.js'

/** The name of the one index object. */
export const RUN_INDEX_NAME = 'index'

const OPS = new Set(['get', 'put', 'delete', 'list'])
const URL_OF_INDEX = 'https://toolyard-run-index.internal/store'

interface StoreCall {
  readonly op: string
  readonly args: unknown[]
}

/**
 * The index object: each request is one store operation (`{ op, args }` →
 * `{ result }` | `{ error: { code, message } }`) on `createDurableObjectStore(ctx.storage)`,
 * so compare-and-set is exact across every isolate and object that uses it.
 */
export class ToolyardRunIndex {
  readonly #store: DurableStore

  constructor(ctx: { readonly storage: DurableObjectStorageLike }) {
    this.#store = createDurableObjectStore(ctx.storage)
  }

  /** Serves one store operation. */
  async fetch(request: Request): Promise<Response> {
    let call: StoreCall
    try {
      call = (await request.json()) as StoreCall
    } catch {
      return Response.json({ error: { code: 'INVALID_OPTIONS', message: 'the index takes { op, args }' } })
    }
    if (typeof call !== 'object' || call === null || !OPS.has(call.op) || !Array.isArray(call.args) || call.args.length > 3) {
      return Response.json({ error: { code: 'INVALID_OPTIONS', message: 'the index takes { op: get | put | delete | list, args }' } })
    }
    try {
      const method = this.#store[call.op as keyof DurableStore] as (...args: unknown[]) => Promise<unknown>
      return Response.json({ result: (await method.apply(this.#store, call.args)) ?? null })
    } catch (error) {
      const code = error instanceof ToolError ? error.code : 'STORE_FAILED'
      return Response.json({ error: { code, message: error instanceof Error ? error.message : String(error) } })
    }
  }
}

/**
 * A `DurableStore` whose every operation is one request to the index object: the
 * approval brokers of the Worker and of the run objects share it. A failed request is a
 * `STORE_FAILED` error, as any backend failure.
 */
export function createIndexStore(namespace: DurableObjectNamespaceLike): DurableStore {
  const call = (op: string) => async (...args: unknown[]): Promise<never> => {
    // JSON has no undefined: trailing absent options are left out, not sent as null.
    while (args.length > 0 && args[args.length - 1] === undefined) args.pop()
    let body: { result?: unknown; error?: { code: ToolErrorCode; message: string } }
    try {
      const stub = namespace.get(namespace.idFromName(RUN_INDEX_NAME))
      const response = await stub.fetch(new Request(URL_OF_INDEX, { method: 'POST', body: JSON.stringify({ op, args }) }))
      body = (await response.json()) as typeof body
    } catch (error) {
      throw new ToolError('STORE_FAILED', `the run index could not be reached: ${error instanceof Error ? error.message : String(error)}`)
    }
    if (body.error !== undefined) throw new ToolError(body.error.code, body.error.message)
    return (body.result === null ? undefined : body.result) as never
  }
  return { get: call('get'), put: call('put'), delete: call('delete'), list: call('list') }
}

/** Where a run object notes the index keys its broker wrote (`<prefix><index key>` → the key's version). */
const OWN_KEY_PREFIX = 'toolyard-run:index-key:'

/**
 * The index as one run object's approval broker sees it: reads and writes go to the
 * index, but a listing under `approvals/` answers only the keys this object wrote (noted in
 * its own storage with their versions, forgotten when it deletes them). So `GET
 * /v1/runs/:id`, which lists the broker's pending approvals to keep the run's, costs one
 * local list and a read per approval of this run, not a read of every approval pending
 * account-wide. A key another process removed is still listed until read (and then skipped
 * as settled); the object's storage is deleted with its run. The keys that count each
 * principal's open requests (`approvals/by/`) are the index's alone: counted per object, one
 * token's runs could each hold the bound (red team, stop 54).
 */
export function createRunIndexStore(index: DurableStore, storage: DurableObjectStorageLike): DurableStore {
  const own = (key: string) => key.startsWith('approvals/') && !key.startsWith('approvals/by/')
  return {
    get: (key) => index.get(key),
    async put(key, value, options) {
      const written = await index.put(key, value, options)
      if (written.ok && own(key)) await storage.put({ [OWN_KEY_PREFIX + key]: written.version })
      return written
    },
    async delete(key, options) {
      const deleted = await index.delete(key, options)
      if (deleted.ok && own(key)) await storage.delete([OWN_KEY_PREFIX + key])
      return deleted
    },
    async list(prefix, options) {
      if (!own(prefix)) return index.list(prefix, options)
      const limit = options?.limit ?? 100
      const found = await storage.list({
        prefix: OWN_KEY_PREFIX + prefix,
        ...(options?.after === undefined ? {} : { startAfter: OWN_KEY_PREFIX + options.after }),
        limit: limit + 1,
      })
      const entries = [...found].slice(0, limit).map(([name, version]) => ({ key: name.slice(OWN_KEY_PREFIX.length), version: String(version) }))
      return found.size > limit ? { entries, cursor: entries[entries.length - 1]!.key } : { entries }
    },
  }
}
