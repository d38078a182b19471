/**
 * Only a request with a principal is counted before it opens (one listing of its principal's
 * keys); a host call without one reads no count (brief s54 mutation2, src/approvals/_store-wait.ts:147).
 */
import { describe, expect, it } from 'vitest'
import { createApprovalBroker, type PendingApproval } from '../../../src/approvals/index.js'
import { BY_PRINCIPAL_PREFIX } from '../../../src/approvals/_store-record.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import type { DurableStore } from '../../../src/durable/store.js'

describe('counting a principal before opening its request', () => {
  it('one listing of the principal count keys for a call with a principal, none for a host call', async () => {
    const inner = createMemoryStore()
    const counted: string[] = []
    const store: DurableStore = Object.assign(Object.create(inner) as DurableStore, {
      list: async (prefix: string, options?: never) => {
        if (prefix.startsWith(BY_PRINCIPAL_PREFIX)) counted.push(prefix)
        return inner.list(prefix, options)
      },
    })
    const broker = createApprovalBroker({ store })
    const controller = new AbortController()
    const opened: PendingApproval[] = []
    broker.subscribe((event) => {
      if (event.type === 'requested') opened.push(event.approval)
    })
    Promise.resolve(broker.handler({ execution: { callId: 'host', name: 'pay', arguments: { n: 1 }, signal: controller.signal } } as never)).catch(() => undefined)
    while (opened.length < 1) await new Promise((resolve) => setTimeout(resolve, 0))
    expect(counted).toEqual([])
    Promise.resolve(broker.handler({ execution: { callId: 'client', name: 'pay', arguments: { n: 2 }, principal: 'alice', signal: controller.signal } } as never)).catch(() => undefined)
    while (opened.length < 2) await new Promise((resolve) => setTimeout(resolve, 0))
    expect(counted).toEqual([`${BY_PRINCIPAL_PREFIX}alice/`])
    controller.abort()
    await broker.dispose()
  })
})
