/**
 * An open record whose expiry (or count) key cannot be written is removed again: unordered
 * it would be listed late, uncounted nothing would bound its principal (brief s54 mutation2:
 * the no-coverage rollback of src/approvals/_store-wait.ts, 7b3c93e).
 */
import { describe, expect, it } from 'vitest'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import { BY_EXPIRY_PREFIX, BY_PRINCIPAL_PREFIX, OPEN_PREFIX } from '../../../src/approvals/_store-record.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import type { DurableStore } from '../../../src/durable/store.js'

/** A memory store that refuses writes under `refused`. */
function refusing(refused: string): { store: DurableStore; inner: DurableStore } {
  const inner = createMemoryStore()
  const store: DurableStore = Object.assign(Object.create(inner) as DurableStore, {
    put: async (key: string, value: string, options?: never) => {
      if (key.startsWith(refused)) throw new Error('disk full')
      return inner.put(key, value, options)
    },
  })
  return { store, inner }
}

describe('opening a request whose keys cannot be written', () => {
  for (const [what, refused, principal] of [
    ['its expiry key', BY_EXPIRY_PREFIX, undefined],
    ['its count key', BY_PRINCIPAL_PREFIX, 'alice'],
  ] as const) {
    it(`${what}: the call is not run, and no open record is left`, async () => {
      const { store, inner } = refusing(refused)
      const broker = createApprovalBroker({ store })
      const requested: unknown[] = []
      broker.subscribe((event) => {
        if (event.type === 'requested') requested.push(event)
      })
      const execution = { callId: 'rollback', name: 'pay', arguments: { n: 1 }, signal: new AbortController().signal, ...(principal === undefined ? {} : { principal }) }
      const answer = await Promise.resolve(broker.handler({ execution } as never)).then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      )
      // Not allowed: either refused or a denial.
      expect('error' in answer || (answer as { value: unknown }).value !== true).toBe(true)
      expect(requested).toEqual([])
      expect((await inner.list(OPEN_PREFIX)).entries).toEqual([])
      expect((await inner.list(BY_EXPIRY_PREFIX)).entries).toEqual([])
      expect(await broker.pending()).toEqual([])
      await broker.dispose()
    })
  }
})
