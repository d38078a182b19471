/**
 * The approval broker over a store (`createApprovalBroker({ store })`), with two or more
 * brokers sharing one memory store standing for processes sharing a store: a request
 * opened in one is listed and decided in another, the first decision wins, a call asked
 * again under its `callId` re-attaches, expiry comes from the record, and a store full of
 * garbage lists only what it can read. Web standards only: this suite also runs in Chromium.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { ApprovalEvent, PendingApproval, ApprovalBroker, ApprovalBrokerOptions } from '../../../src/approvals/index.js'
import { callHash, MAX_APPROVAL_RECORD_BYTES } from '../../../src/approvals/_store-record.js'
import { argumentsHash } from '../../../src/durable/call-key.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import type { DurableStore } from '../../../src/durable/index.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { codeOf, until } from './helpers.js'

const FAST = { pollIntervalMs: 20 } as const

function broker(store: DurableStore, options: Omit<ApprovalBrokerOptions, 'store'> = {}): ApprovalBroker {
  return createApprovalBroker({ store, ...FAST, ...options })
}

let seq = 0
/** Asks `b`'s handler directly, as the registry does. */
function ask(b: ApprovalBroker, callId = `call-${++seq}`, args: unknown = { amount: 5 }, controller = new AbortController()) {
  const outcome = Promise.resolve(b.handler({ execution: { callId, name: 'pay', arguments: args, signal: controller.signal } as never, reason: 'moves money' } as never))
  // Settled outcome, without an unhandled rejection while the test looks elsewhere.
  const settled = outcome.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, code: (error as { code?: string }).code, message: (error as Error).message }),
  )
  return { callId, settled, controller }
}

async function listed(b: ApprovalBroker, count = 1): Promise<readonly PendingApproval[]> {
  let list: readonly PendingApproval[] = []
  await until(async () => (list = await b.pending()).length >= count, () => `${count} pending (saw ${list.length})`)
  expect(list).toHaveLength(count)
  return list
}

describe('createApprovalBroker({ store }): one store, several brokers', () => {
  it('a request opened in A is listed and decided in B, and the call waiting in A gets the verdict', async () => {
    const store = createMemoryStore()
    const a = broker(store)
    const b = broker(store)
    const runtime = createToolRuntime({ approvals: a })
    const ran: string[] = []
    runtime.register(
      defineTool({
        name: 'pay',
        description: 'pays',
        parameters: { amount: { type: 'number' } },
        output: { schema: { type: 'string' }, render: (_args, value) => [{ type: 'text', text: value }] },
        execute: (args) => (ran.push(`pay ${args.amount}`), 'paid'),
      }),
    )
    runtime.on('tools/pre-execute', (d, exec) => (exec.name === 'pay' ? { kind: 'ask', reason: 'moves money' } : d))
    const result = runtime.execute({ callId: 'direct-1', name: 'pay', arguments: { amount: 7 }, signal: new AbortController().signal })
    const [request] = await listed(b)
    expect(request).toMatchObject({ callId: 'direct-1', name: 'pay', kind: 'call', arguments: { amount: 7 }, reason: 'moves money' })
    expect(request!.summary).toContain('amount: 7')
    expect(request!.expiresAt - request!.requestedAt).toBe(a.timeoutMs)
    expect(await a.pending()).toEqual([request])
    expect(ran).toEqual([])
    const answer = await b.decide(request!.id, { decision: 'allow', reason: 'fine' })
    expect(answer).toMatchObject({ ok: true, decision: 'allow', reason: 'fine', approval: { id: request!.id } })
    expect(codeOf(await result)).toBe('OK')
    expect(ran).toEqual(['pay 7'])
    expect(await a.pending()).toEqual([])
    expect(await b.pending()).toEqual([])
    await runtime.dispose()
  })

  it('a denial from another broker reaches the call with the person\'s words; a decision through the same broker needs no polling', async () => {
    const store = createMemoryStore()
    // Polling once a minute: only the in-process notification can settle the call in time.
    const a = broker(store, { pollIntervalMs: 60_000 })
    const b = broker(store)
    const first = ask(a)
    const [request] = await listed(b)
    expect(await a.decide(request!.id, { decision: 'deny', reason: 'over budget' })).toMatchObject({ ok: true })
    expect(await first.settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'pay was denied by a person: over budget' })

    const second = ask(a)
    const [next] = await listed(b)
    await b.decide(next!.id, { decision: 'deny' })
    // A polls every 60 s: this one is reached only by polling, so it is still waiting.
    await new Promise((resolve) => setTimeout(resolve, 100))
    let done = false
    void second.settled.then(() => (done = true))
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect(done).toBe(false)
    a.dispose()
    expect(await second.settled).toMatchObject({ ok: false, code: 'DENIED_BY_APPROVAL' })
  })

  it('the first decision wins; every later one, from any broker, is APPROVAL_ALREADY_DECIDED with the first verdict', async () => {
    const store = createMemoryStore()
    const brokers = [broker(store), broker(store), broker(store)]
    for (let round = 0; round < 10; round++) {
      const call = ask(brokers[round % 3]!)
      const [request] = await listed(brokers[(round + 1) % 3]!)
      const answers = await Promise.all(brokers.map((b, i) => b.decide(request!.id, { decision: i % 2 === 0 ? 'allow' : 'deny' })))
      const winners = answers.filter((answer) => answer.ok)
      expect(winners).toHaveLength(1)
      const verdict = winners[0]!.ok ? winners[0]!.decision : undefined
      for (const answer of answers.filter((answer) => !answer.ok)) {
        expect(answer).toEqual({ ok: false, code: 'APPROVAL_ALREADY_DECIDED', message: `approval "${request!.id}" was already decided (${verdict})` })
      }
      const outcome = await call.settled
      expect(outcome.ok).toBe(verdict === 'allow')
      expect(await brokers[2]!.decide(request!.id, { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_ALREADY_DECIDED' })
    }
  })

  it('re-attach: a call asked again under its callId (a resumed run) gets the same request, id and expiry', async () => {
    const store = createMemoryStore()
    const first = broker(store)
    const call = ask(first, 'run-1:code:2')
    const [request] = await listed(first)
    // The process goes away: its broker is disposed, the request stays in the store.
    first.dispose()
    expect(await call.settled).toMatchObject({ ok: false, code: 'DENIED_BY_APPROVAL' })
    await new Promise((resolve) => setTimeout(resolve, 20))
    const restarted = broker(store, { timeoutMs: 600_000 })
    const events: ApprovalEvent[] = []
    restarted.subscribe((event) => events.push(event))
    const again = ask(restarted, 'run-1:code:2')
    await until(() => events.length === 1)
    expect(events[0]).toEqual({ type: 'requested', approval: request })
    expect(await restarted.pending()).toEqual([request])
    expect(await restarted.decide(request!.id, { decision: 'allow' })).toMatchObject({ ok: true })
    expect(await again.settled).toEqual({ ok: true, value: true })
    expect(events.map((event) => event.type)).toEqual(['requested', 'decided'])
  })

  it('re-attach: a decision taken while the asking process was down answers the re-asked call at once', async () => {
    const store = createMemoryStore()
    for (const decision of ['allow', 'deny'] as const) {
      const first = broker(store)
      const callId = `run-${decision}:code:1`
      void ask(first, callId)
      const [request] = await listed(first)
      first.dispose()
      const other = broker(store)
      expect(await other.decide(request!.id, { decision, reason: 'while you were out' })).toMatchObject({ ok: true })
      // Polling once a minute and a timeout of 10 minutes: only the recorded decision can answer in time.
      const resumed = broker(store, { pollIntervalMs: 60_000, timeoutMs: 600_000 })
      const events: ApprovalEvent[] = []
      resumed.subscribe((event) => events.push(event))
      const outcome = await ask(resumed, callId).settled
      if (decision === 'allow') expect(outcome).toEqual({ ok: true, value: true })
      else expect(outcome).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'pay was denied by a person: while you were out' })
      expect(events.map((event) => event.type)).toEqual(['requested', 'decided'])
      expect(events[0]!.approval.id).toBe(request!.id)
      // Asked once more (the run resumed twice): the same answer; nothing is listed.
      expect((await ask(resumed, callId).settled).ok).toBe(decision === 'allow')
      expect(await resumed.pending()).toEqual([])
      resumed.dispose()
    }
  })

  it('expiry comes from the record: a restarted broker with a longer timeout still expires the request at its original expiresAt', async () => {
    const store = createMemoryStore()
    const first = broker(store, { timeoutMs: 400 })
    void ask(first, 'run-x:code:1')
    const [request] = await listed(first)
    first.dispose()
    const restarted = broker(store, { timeoutMs: 600_000 })
    const outcome = await ask(restarted, 'run-x:code:1').settled
    expect(outcome).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'pay was denied by timeout: nobody decided within 400 ms' })
    // Well before the 600 s the restarted broker would have given it.
    expect(Date.now()).toBeLessThan(request!.expiresAt + 60_000)
    expect(await restarted.decide(request!.id, { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_EXPIRED' })
    // Asked once more after expiry: denied at once by the same timeout, not asked anew.
    expect(await ask(restarted, 'run-x:code:1').settled).toMatchObject({ ok: false, message: 'pay was denied by timeout: nobody decided within 400 ms' })
    expect(await restarted.pending()).toEqual([])
  })

  it('a request nobody watches any more expires for every broker at its expiresAt: not listed, decide() answers APPROVAL_EXPIRED', async () => {
    const store = createMemoryStore()
    const first = broker(store, { timeoutMs: 300 })
    void ask(first)
    const [request] = await listed(first)
    first.dispose()
    const other = broker(store)
    await until(() => Date.now() >= request!.expiresAt + 10)
    expect(await other.pending()).toEqual([])
    expect(await other.decide(request!.id, { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_EXPIRED' })
  })

  it('a cancelled call withdraws its request everywhere; asked again, it asks anew', async () => {
    const store = createMemoryStore()
    const a = broker(store)
    const b = broker(store)
    const call = ask(a, 'run-w:code:1')
    const [request] = await listed(b)
    call.controller.abort()
    expect(await call.settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'the approval request for pay was withdrawn: the call was cancelled' })
    // The withdrawal is written after the caller is told: wait until it landed.
    await until(async () => (await b.pending()).length === 0, 'the withdrawal to land')
    expect(await b.pending()).toEqual([])
    expect(await b.decide(request!.id, { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_WITHDRAWN' })
    const again = ask(a, 'run-w:code:1')
    const [fresh] = await listed(b)
    expect(fresh!.id).not.toBe(request!.id)
    await b.decide(fresh!.id, { decision: 'allow' })
    expect(await again.settled).toEqual({ ok: true, value: true })
  })

  it('dispose() resolves only once the withdrawals it started have landed in a slow store (a server can exit after awaiting it)', async () => {
    const inner = createMemoryStore()
    const slow: DurableStore = { ...inner, put: async (...args) => (await new Promise((resolve) => setTimeout(resolve, 150)), inner.put(...args)) }
    const a = broker(slow)
    const call = ask(a, 'slow')
    const [request] = await listed(a)
    call.controller.abort()
    await a.dispose()
    expect((await inner.list('approvals/open/')).entries).toEqual([])
    expect(await broker(inner).decide(request!.id, { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_WITHDRAWN' })
  })

  it('the same call asked twice in one process shares one request, and both callers get its decision', async () => {
    const store = createMemoryStore()
    const a = broker(store)
    const one = ask(a, 'twice')
    const two = ask(a, 'twice')
    const [request] = await listed(a)
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(await a.pending()).toEqual([request])
    await a.decide(request!.id, { decision: 'allow' })
    expect(await one.settled).toEqual({ ok: true, value: true })
    expect(await two.settled).toEqual({ ok: true, value: true })
  })

  it('plan requests are kept, listed and decided the same way', async () => {
    const store = createMemoryStore()
    const a = createApprovalBroker({ store, plans: true, ...FAST })
    const b = createApprovalBroker({ store, plans: true, ...FAST })
    expect(a.handler.acceptsPlans).toBe(true)
    const plan = { code: 'await tools.pay({ amount: 1 })', description: 'pay once', calls: [{ name: 'pay', line: 1, column: 7 }], asking: [{ name: 'pay', reason: 'moves money' }], dynamic: false }
    const outcome = Promise.resolve(
      a.handler({ kind: 'plan', plan, reason: 'the program calls a tool that asks', execution: { callId: 'run-p', name: 'run_code', arguments: { code: plan.code, description: plan.description }, signal: new AbortController().signal } } as never),
    )
    const [request] = await listed(b)
    expect(request).toMatchObject({ kind: 'plan', callId: 'run-p', name: 'run_code', plan: { codeLength: plan.code.length, calls: [{ name: 'pay', line: 1 }], moreCalls: 0, asking: [{ name: 'pay', reason: 'moves money' }], dynamic: false } })
    await b.decide(request!.id, { decision: 'deny', reason: 'no' })
    await expect(outcome).rejects.toThrow('the program was denied by a person: no')
  })

  it('arguments too large to keep are left out of the record (argumentsOmitted); the summary still shows them', async () => {
    const store = createMemoryStore()
    const a = broker(store)
    const call = ask(a, undefined, { amount: 5, memo: 'x'.repeat(100_000) })
    const [request] = await listed(a)
    expect(request).toMatchObject({ arguments: null, argumentsOmitted: true })
    expect(request!.summary).toContain('string of 100000 characters')
    await a.decide(request!.id, { decision: 'allow' })
    expect((await call.settled).ok).toBe(true)
  })
})

describe('createApprovalBroker({ store }): a hostile store', () => {
  it('malformed records are skipped and counted; the readable request is listed and decidable', async () => {
    const store = createMemoryStore({ maxValueBytes: 4 * 1024 * 1024 })
    const a = broker(store)
    const call = ask(a, 'good')
    const [good] = await listed(a)
    const hash = (n: number) => n.toString(16).padStart(32, '0')
    const record = (approval: unknown) => JSON.stringify({ format: 'toolyard-approval/1', approval })
    const garbage = [
      'not json',
      '{"format":"toolyard-approval/1"}',
      record({ ...good, id: `${hash(1)}.${crypto.randomUUID()}` }), // an id naming another key
      record({ ...good, extra: 1 }),
      record({ ...good, kind: 'other' }),
      record({ ...good, expiresAt: -1 }),
      record({ ...good, arguments: { x: 12345 } }).replace('12345', '1e400'),
      JSON.stringify({ format: 'toolyard-approval/1', approval: good, __proto__: { polluted: true } }).replace('"approval"', '"__proto__":{},"approval"'),
      // Well-formed and within the size cap, but 20,000 levels deep: code that recurses over it would overflow.
      record({ ...good, arguments: 12345 }).replace('12345', '['.repeat(20_000) + ']'.repeat(20_000)),
      `"${'x'.repeat(MAX_APPROVAL_RECORD_BYTES + 10 * 1024)}"`,
      JSON.stringify({ format: 'toolyard-approval/1', approval: { ...good, arguments: Array.from({ length: 50_000 }, () => 0) } }),
    ]
    for (const [i, value] of garbage.entries()) {
      const key = `approvals/open/${hash(i + 2)}`
      const good2 = value.replaceAll(good!.id.slice(0, 32), hash(i + 2))
      await store.put(key, good2)
    }
    await store.put('approvals/open/not-a-hash', record(good))
    const list = await a.pending()
    expect(list).toEqual([good])
    expect(a.lastListing).toEqual({ examined: garbage.length + 2, malformed: garbage.length + 1, truncated: false })
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    // Garbage where a decision would be: decide() and the waiting call are not confused.
    await store.put(`approvals/done/${good!.id.slice(0, 32)}`, '{"format":"toolyard-approval/1","approval":1}')
    expect(await a.decide(good!.id, { decision: 'allow' })).toMatchObject({ ok: true })
    expect((await call.settled).ok).toBe(true)
    expect(await a.decide(`${hash(2)}.${crypto.randomUUID()}`, { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_NOT_FOUND' })
    expect(await a.decide('../../etc/passwd', { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_NOT_FOUND' })
  })

  it('garbage at a call\'s own key is replaced when the call asks', async () => {
    const store = createMemoryStore()
    const a = broker(store)
    const hash = await callHash({ kind: 'call', callId: 'mine', name: 'pay', argumentsHash: await argumentsHash({ amount: 5 }) }, undefined)
    await store.put(`approvals/open/${hash}`, '{"garbage":true}')
    const call = ask(a, 'mine')
    const [request] = await listed(a)
    expect(request!.callId).toBe('mine')
    await a.decide(request!.id, { decision: 'allow' })
    expect((await call.settled).ok).toBe(true)
  })

  it('a listing of a store with more records than it reads stops at its bounds and says so', async () => {
    const store = createMemoryStore()
    const a = broker(store)
    for (let i = 0; i < 1100; i++) await store.put(`approvals/open/${i.toString(16).padStart(32, '0')}`, 'x')
    expect(await a.pending()).toEqual([])
    expect(a.lastListing).toEqual({ examined: 1000, malformed: 1000, truncated: true })
  })

  it('a long listing yields to the event loop: a timer due meanwhile runs before pending() answers, even over a store that answers in microtasks', async () => {
    const store = createMemoryStore()
    const a = broker(store)
    void ask(a, 'template')
    const [template] = await listed(a)
    for (let i = 0; i < 40; i++) {
      const hash = i.toString(16).padStart(32, '0')
      await store.put(`approvals/open/${hash}`, JSON.stringify({ format: 'toolyard-approval/1', approval: { ...template, id: `${hash}.${crypto.randomUUID()}`, arguments: 'x'.repeat(30_000) } }))
    }
    const order: string[] = []
    setTimeout(() => order.push('timer'), 0)
    await a.pending().then((list) => order.push(`listed ${list.length}`))
    expect(order).toEqual(['timer', 'listed 41'])
    a.dispose()
  })

  it('a store that fails: the call is denied (nobody could be asked), never left waiting', async () => {
    const failing: DurableStore = {
      get: () => Promise.reject(new Error('disk gone')),
      put: () => Promise.reject(new Error('disk gone')),
      delete: () => Promise.reject(new Error('disk gone')),
      list: () => Promise.reject(new Error('disk gone')),
    }
    const a = broker(failing)
    expect(await ask(a).settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'the approval store failed, so nobody could be asked: disk gone' })
    await expect(a.pending()).rejects.toThrow('disk gone')
  })

  it('options: a store must be a DurableStore; without one the broker keeps its own memory store', () => {
    expect(() => createApprovalBroker({ store: {} as DurableStore })).toThrow(/store must be a DurableStore/)
    expect(createApprovalBroker({ pollIntervalMs: 100 }).pollIntervalMs).toBe(100)
    expect(() => createApprovalBroker({ store: createMemoryStore(), pollIntervalMs: 1 })).toThrow(/pollIntervalMs must be/)
    expect(() => createApprovalBroker({ store: createMemoryStore(), retainSettledMs: -1 })).toThrow(/retainSettledMs must be/)
    const b = createApprovalBroker({ store: createMemoryStore() })
    expect([b.pollIntervalMs, b.retainSettledMs]).toEqual([250, 86_400_000])
  })
})

describe('createApprovalBroker({ store }): nothing leaks', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  /** The next request `b` opens or re-attaches. */
  const opened = (b: ApprovalBroker) =>
    new Promise<PendingApproval>((resolve) => {
      const stop = b.subscribe((event) => {
        if (event.type !== 'requested') return
        stop()
        resolve(event.approval)
      })
    })

  it('a waiting call holds exactly its expiry timer and the poll timer; each way out (allow, deny, expiry, withdrawal, dispose) leaves no timer', async () => {
    vi.useFakeTimers()
    const store = createMemoryStore()
    const ways: Record<string, (b: ApprovalBroker, request: PendingApproval, call: ReturnType<typeof ask>) => Promise<unknown>> = {
      allow: (b, request) => b.decide(request.id, { decision: 'allow' }),
      deny: (b, request) => b.decide(request.id, { decision: 'deny' }),
      expiry: () => vi.advanceTimersByTimeAsync(1_000),
      withdrawal: async (_b, _request, call) => call.controller.abort(),
      dispose: (b) => b.dispose(),
    }
    for (const [way, end] of Object.entries(ways)) {
      const b = createApprovalBroker({ store, timeoutMs: 1_000 })
      const next = opened(b)
      const call = ask(b)
      const request = await next
      expect(vi.getTimerCount(), way).toBe(2)
      await end(b, request, call)
      await call.settled
      // Let the store writes of an expiry or a withdrawal land.
      await vi.advanceTimersByTimeAsync(0)
      expect(vi.getTimerCount(), way).toBe(0)
    }
  })
})
