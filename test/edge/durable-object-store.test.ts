/**
 * The DurableStore contract on Durable Object storage, in real workerd (Miniflare): a
 * test-only Worker (test/fixtures/durable/do-store-worker.ts, bundled by the product's edge
 * build) runs `createDurableObjectStore(ctx.storage)` inside a Durable Object, one object
 * per store; the suite drives it over fetch, each call one request to the object.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ToolError, type ToolErrorCode } from '../../src/errors.js'
import type { DurableStore } from '../../src/durable/store.js'
import { createDurableObjectStore } from '../../platforms/edge/durable-object-store.js'
import { describeDurableStoreContract } from '../contract/durable-store-contract.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'toolyard-do-store-'))
let mf: Miniflare

beforeAll(async () => {
  execFileSync(process.execPath, ['scripts/build-edge.mjs', '--entry', 'test/fixtures/durable/do-store-worker.ts', '--outdir', dir], { cwd: root, stdio: 'pipe' })
  mf = new Miniflare({
    modules: true,
    scriptPath: join(dir, 'worker.js'),
    modulesRoot: dir,
    compatibilityDate: '2026-04-20',
    durableObjects: { STORE: 'StoreObject' },
  })
  await mf.ready
}, 120_000)
afterAll(async () => {
  await mf?.dispose()
  rmSync(dir, { recursive: true, force: true })
})

let objects = 0

async function call(object: string, op: string, args: unknown[], maxValueBytes?: number): Promise<unknown> {
  const response = await mf.dispatchFetch(`http://store.test/${object}`, { method: 'POST', body: JSON.stringify({ op, args, maxValueBytes }) })
  const body = (await response.json()) as { result?: unknown; error?: { code: ToolErrorCode; message: string } }
  if (body.error !== undefined) throw new ToolError(body.error.code, body.error.message)
  return body.result === null ? undefined : body.result
}

/** A DurableStore whose every call is one request to a fresh Durable Object. */
function remoteStore(maxValueBytes?: number): DurableStore {
  const object = `store-${objects++}`
  const op = (name: string) => (...args: unknown[]) => call(object, name, args, maxValueBytes)
  return { get: op('get'), put: op('put'), delete: op('delete'), list: op('list') } as DurableStore
}

describeDurableStoreContract('Durable Object storage (workerd, Miniflare)', (options) => remoteStore(options.maxValueBytes), {
  concurrentIncrements: {
    count: 30,
    why: 'each attempt is two requests from Node into the object (100 cost ~5,000 round trips, ~25 s here); 100 at once inside one object is the next test',
  },
})

describe('createDurableObjectStore inside one object', () => {
  it('100 concurrent compare-and-set increments from one request (a Promise.all in the object) all land', async () => {
    expect(await call('increments-0', 'increments', [100])).toBe('100')
  })

  it('refuses a binding that is not a Durable Object storage', () => {
    for (const storage of [undefined, {}, { get() {}, put() {}, delete() {} }]) {
      expect(() => createDurableObjectStore(storage as never)).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
    }
  })

  it('defaults to a 128 KiB value cap', async () => {
    const store = remoteStore()
    expect(await store.put('k', 'x'.repeat(128 * 1024))).toMatchObject({ ok: true })
    await expect(store.put('k', 'x'.repeat(128 * 1024 + 1))).rejects.toMatchObject({ code: 'STORE_VALUE_TOO_LARGE' })
  })
})
