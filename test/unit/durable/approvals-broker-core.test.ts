/**
 * The approval broker over a store (src/approvals/_store-broker.ts) in process, on a store
 * that fails or announces changes on cue: its refusals, its dispose, a failed store, a
 * watchable store waking the poll, and a request decided after its expiry (issue 38 item 4).
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { ApprovalBroker, ApprovalBrokerOptions } from '../../../src/approvals/index.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { ToolError } from '../../../src/errors.js'
import { until } from '../../support/poll.js'

afterEach(() => {
  vi.useRealTimers()
})

const brokers: ApprovalBroker[] = []
afterEach(async () => {
  for (const b of brokers.splice(0)) await b.dispose()
})

function broker(store: DurableStore, options: Omit<ApprovalBrokerOptions, 'store'> = {}): ApprovalBroker {
  const b = createApprovalBroker({ store, pollIntervalMs: 20, ...options })
  brokers.push(b)
  return b
}

let seq = 0
/** Asks `b`'s handler as the registry does; the outcome settled, never an unhandled rejection. */
function ask(b: ApprovalBroker, options: { callId?: string; parentCallId?: string; signal?: AbortSignal } = {}) {
  const controller = new AbortController()
  const signal = options.signal ?? controller.signal
  const execution = { callId: options.callId ?? `call-${++seq}`, name: 'pay', arguments: { cents: 5 }, signal, ...(options.parentCallId === undefined ? {} : { parentCallId: options.parentCallId }) }
  const settled = (async () => b.handler({ execution, reason: 'moves money' } as never))().then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, code: (error as { code?: string }).code, message: (error as Error).message }),
  )
  return { settled, controller }
}

async function listedOne(b: ApprovalBroker) {
  const list = await until(async () => {
    const pending = await b.pending()
    return pending.length === 1 && pending
  }, 'one pending request')
  return list[0]!
}

describe('store broker: what it refuses', () => {
  it('exposes its options; subscribe() takes a function only', () => {
    const b = broker(createMemoryStore(), { timeoutMs: 1234, pollIntervalMs: 77, retainSettledMs: 999 })
    expect([b.timeoutMs, b.pollIntervalMs, b.retainSettledMs]).toEqual([1234, 77, 999])
    expect(b.handler.withdrawsOnAbort).toBe(true)
    expect(() => b.subscribe('x' as never)).toThrow(new ToolError('INVALID_OPTIONS', 'subscribe(listener): listener must be a function'))
    const off = b.subscribe(() => {})
    expect(b.subscriberCount).toBe(1)
    off()
    expect(b.subscriberCount).toBe(0)
    expect(b.lastListing).toEqual({ examined: 0, malformed: 0, truncated: false })
  })

  it('decide(): a non-string id, a malformed decision, an id it never made', async () => {
    const b = broker(createMemoryStore())
    expect(await b.decide(null as never, { decision: 'allow' })).toEqual({ ok: false, code: 'INVALID_DECISION', message: 'the approval id must be a string (got null)' })
    expect(await b.decide(7 as never, { decision: 'allow' })).toMatchObject({ ok: false, code: 'INVALID_DECISION', message: 'the approval id must be a string (got number)' })
    expect(await b.decide('x', { decision: 'maybe' } as never)).toMatchObject({ ok: false, code: 'INVALID_DECISION' })
    expect(await b.decide('x', { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_NOT_FOUND' })
    expect(await b.decide(`${'0'.repeat(32)}.00000000-0000-4000-8000-000000000000`, { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_NOT_FOUND' })
  })

  it('the handler: a malformed request, a call already cancelled, a disposed broker', async () => {
    const b = broker(createMemoryStore())
    await expect(async () => b.handler({ execution: null, reason: 'r' } as never)).rejects.toThrow(/^malformed approval request \(/)
    const cancelled = new AbortController()
    cancelled.abort()
    expect(await ask(b, { signal: cancelled.signal }).settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'the call was cancelled before approval was requested' })
    await b.dispose()
    expect(await ask(b).settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'the approval broker is disposed; nobody can approve this call' })
    expect(await b.decide('x', { decision: 'allow' })).toEqual({ ok: false, code: 'BROKER_DISPOSED', message: 'the approval broker is disposed; every request it held was denied' })
    expect(await b.pending()).toEqual([])
    expect(Object.isFrozen(await b.pending())).toBe(true)
    await b.dispose()
  })

  it('a store that fails: the call is denied saying so, nobody is asked', async () => {
    const base = createMemoryStore()
    const store: DurableStore = { ...base, put: async () => Promise.reject(new Error('disk on fire')), get: base.get, list: base.list, delete: base.delete }
    const b = broker(store)
    expect(await ask(b).settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'the approval store failed, so nobody could be asked: disk on fire' })
  })
})

describe('store broker: decisions, expiry, dispose', () => {
  it('allow and deny reach the waiting call; a second decision is refused as already decided', async () => {
    const store = createMemoryStore()
    const b = broker(store)
    const events: string[] = []
    b.subscribe((event) => void events.push(event.type))
    const allowed = ask(b)
    const request = await listedOne(b)
    const answer = await b.decide(request.id, { decision: 'allow', reason: 'fine' })
    expect(answer).toMatchObject({ ok: true, decision: 'allow', reason: 'fine', approval: { id: request.id } })
    expect(await allowed.settled).toEqual({ ok: true, value: true })
    expect(await b.decide(request.id, { decision: 'deny' })).toMatchObject({ ok: false, code: 'APPROVAL_ALREADY_DECIDED' })
    const denied = ask(b)
    const second = await listedOne(b)
    expect(await b.decide(second.id, { decision: 'deny' })).toMatchObject({ ok: true, decision: 'deny' })
    expect('reason' in (await b.decide(second.id, { decision: 'deny' }))).toBe(false)
    expect(await denied.settled).toMatchObject({ ok: false, code: 'DENIED_BY_APPROVAL' })
    expect(events).toEqual(['requested', 'decided', 'requested', 'decided'])
  })

  it('a decision that comes after the request expired is refused as expired, and the call is denied', async () => {
    const b = broker(createMemoryStore(), { timeoutMs: 1000 })
    const waiting = ask(b)
    const request = await listedOne(b)
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(request.expiresAt)
    expect(await b.decide(request.id, { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_EXPIRED' })
    vi.useRealTimers()
    expect(await waiting.settled).toMatchObject({ ok: false, code: 'DENIED_BY_APPROVAL' })
  })

  it('expiry from the record: the waiting call is denied, the request leaves the listing, decide says expired', async () => {
    const b = broker(createMemoryStore(), { timeoutMs: 50 })
    const waiting = ask(b)
    const request = await listedOne(b)
    expect(await waiting.settled).toMatchObject({ ok: false, code: 'DENIED_BY_APPROVAL' })
    expect(await b.pending()).toEqual([])
    expect(await b.decide(request.id, { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_EXPIRED' })
  })

  it('dispose(): waiting calls are denied, their requests stay open in the store for another process', async () => {
    const store = createMemoryStore()
    const a = broker(store)
    const waiting = ask(a)
    const request = await listedOne(a)
    await a.dispose()
    expect(await waiting.settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: expect.stringContaining('the approval broker was disposed; the request stays open in the store for another process') })
    const b = broker(store)
    expect((await b.pending()).map((p) => p.id)).toEqual([request.id])
  })

  it('a cancelled call withdraws its request once its last caller is gone', async () => {
    const b = broker(createMemoryStore())
    const first = ask(b, { callId: 'same' })
    const request = await listedOne(b)
    first.controller.abort()
    expect(await first.settled).toMatchObject({ ok: false, code: 'DENIED_BY_APPROVAL' })
    expect(await b.pending()).toEqual([])
    expect(await b.decide(request.id, { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_WITHDRAWN' })
  })
})

describe('store broker over a store that announces changes', () => {
  it("another process's decision wakes the poll at once (no wait for the interval); dispose stops watching", async () => {
    const base = createMemoryStore()
    const watchers = new Set<(key: string) => void>()
    let unwatched = 0
    const store = {
      ...base,
      put: async (key: string, value: string, options?: Parameters<DurableStore['put']>[2]) => {
        const result = await base.put(key, value, options)
        for (const onChange of watchers) onChange(key)
        return result
      },
      watch: (prefix: string, onChange: (key: string) => void) => {
        expect(prefix).toBe('approvals/done/')
        watchers.add(onChange)
        return () => (watchers.delete(onChange), unwatched++)
      },
    }
    const a = broker(store, { pollIntervalMs: 600_000 })
    const b = broker(store, { pollIntervalMs: 600_000 })
    const waiting = ask(a)
    const request = await listedOne(b)
    expect(await b.decide(request.id, { decision: 'allow' })).toMatchObject({ ok: true })
    expect(await waiting.settled).toEqual({ ok: true, value: true })
    await a.dispose()
    expect(unwatched).toBe(1)
  })
})
