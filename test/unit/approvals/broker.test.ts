import { afterEach, describe, expect, it, vi } from 'vitest'
import { createApprovalBroker, DEFAULT_APPROVAL_TIMEOUT_MS } from '../../../src/approvals/index.js'
import type { ApprovalBroker, ApprovalEvent } from '../../../src/approvals/index.js'
import { ToolError } from '../../../src/errors.js'
import type { ToolExecution } from '../../../src/types.js'
import { heldTimers } from '../../support/held-timers.js'
import { call, codeOf, messageOf, nextRequest, setup, tick, until } from './helpers.js'

afterEach(() => {
  vi.restoreAllMocks()
})

describe('createApprovalBroker: the approval flow through a real registry', () => {
  it('allow → the tool runs once, after the decision; the request leaves pending()', async () => {
    const { broker, runtime, ran } = setup()
    const asked = nextRequest(broker)
    const result = runtime.execute(call('pay', { n: 5 }))
    const request = await asked
    await tick(10)
    expect(ran).toEqual([])
    expect(await broker.pending()).toEqual([request])
    expect(request).toMatchObject({ name: 'pay', arguments: { n: 5 }, reason: 'pay needs a person' })
    expect(request.callId).toMatch(/^call-\d+$/)
    expect(request.agent).toBeUndefined()
    expect(request.parentCallId).toBeUndefined()

    const decided = await broker.decide(request.id, { decision: 'allow' })
    expect(decided).toMatchObject({ ok: true, decision: 'allow', approval: request })
    expect(codeOf(await result)).toBe('OK')
    expect(ran).toEqual(['pay:{"n":5}'])
    expect(await broker.pending()).toEqual([])
  })

  it('deny → DENIED_BY_APPROVAL carrying the person\'s reason; the body never runs', async () => {
    const { broker, runtime, ran } = setup()
    const asked = nextRequest(broker)
    const result = runtime.execute(call('pay', { n: 1000 }))
    const request = await asked
    expect(await broker.decide(request.id, { decision: 'deny', reason: 'too much money' })).toMatchObject({
      ok: true,
      decision: 'deny',
      reason: 'too much money',
    })
    const settled = await result
    expect(codeOf(settled)).toBe('DENIED_BY_APPROVAL')
    expect(messageOf(settled)).toContain('pay was denied by a person: too much money')
    expect(ran).toEqual([])
  })

  it('deny without a reason still says the call was denied', async () => {
    const { broker, runtime } = setup()
    const asked = nextRequest(broker)
    const result = runtime.execute(call('write_file'))
    await broker.decide((await asked).id, { decision: 'deny' })
    expect(messageOf(await result)).toMatch(/write_file was denied by a person \(no reason given\)$/)
  })

  it('records the agent scope and the gate\'s reason; calls the gate allows never reach the broker', async () => {
    const { broker, runtime, events } = setup()
    const asked = nextRequest(broker)
    const agentCall = runtime.agent('agent-7').execute(call('write_file', { n: 1 }))
    expect(codeOf(await runtime.execute(call('read')))).toBe('OK')
    const request = await asked
    expect(request).toMatchObject({ agent: 'agent-7', name: 'write_file', reason: 'write_file needs a person' })
    await broker.decide(request.id, { decision: 'allow' })
    expect(codeOf(await agentCall)).toBe('OK')
    expect(events.map((e) => `${e.type}:${e.approval.name}`)).toEqual(['requested:write_file', 'decided:write_file'])
  })

  it('an unanswered request expires after timeoutMs as a denial that says it expired', async () => {
    const { broker, runtime, ran, events } = setup({ timeoutMs: 40 })
    const asked = nextRequest(broker)
    const started = Date.now()
    const result = runtime.execute(call('pay'))
    const request = await asked
    expect(request.expiresAt - request.requestedAt).toBe(40)
    const settled = await result
    expect(Date.now() - started).toBeGreaterThanOrEqual(35)
    expect(codeOf(settled)).toBe('DENIED_BY_APPROVAL')
    expect(messageOf(settled)).toContain('pay was denied by timeout: nobody decided within 40 ms')
    expect(ran).toEqual([])
    expect(await broker.pending()).toEqual([])
    expect(events.map((e) => e.type)).toEqual(['requested', 'expired'])
    expect(await broker.decide(request.id, { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_EXPIRED' })
  })

  it('the default timeout is 5 minutes', async () => {
    const { broker, runtime } = setup()
    expect(broker.timeoutMs).toBe(DEFAULT_APPROVAL_TIMEOUT_MS)
    expect(DEFAULT_APPROVAL_TIMEOUT_MS).toBe(300_000)
    const asked = nextRequest(broker)
    const result = runtime.execute(call('pay'))
    const request = await asked
    expect(request.expiresAt - request.requestedAt).toBe(300_000)
    await broker.decide(request.id, { decision: 'deny' })
    await result
  })

  it('a cancelled call withdraws its request: it leaves pending(), subscribers hear "withdrawn", decide() says so', async () => {
    const { broker, runtime, ran, events } = setup()
    const controller = new AbortController()
    const asked = nextRequest(broker)
    const result = runtime.execute(call('pay', {}, controller))
    const request = await asked
    controller.abort(new Error('client went away'))
    // The call ends once its withdrawal has landed in the store.
    expect(codeOf(await result)).toBe('ABORTED_BEFORE_DISPATCH')
    expect(await broker.pending()).toEqual([])
    expect(ran).toEqual([])
    expect(events.map((e) => e.type)).toEqual(['requested', 'withdrawn'])
    expect(await broker.decide(request.id, { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_WITHDRAWN' })
  })

  it('disposing the runtime aborts the waiting call, which withdraws its request', async () => {
    const { broker, runtime, events } = setup()
    const asked = nextRequest(broker)
    const result = runtime.execute(call('pay'))
    await asked
    await runtime.dispose()
    expect(codeOf(await result)).toBe('ABORTED_BEFORE_DISPATCH')
    expect(await broker.pending()).toEqual([])
    expect(events.map((e) => e.type)).toEqual(['requested', 'withdrawn'])
  })

  it('after a decision, neither the expiry timer nor a late abort touches the settled request', async () => {
    // The expiry timer fires when the test says so: after the decision, however slow the machine.
    const timers = heldTimers(4321)
    const { broker, runtime, events } = setup({ timeoutMs: 4321 })
    const controller = new AbortController()
    const asked = nextRequest(broker)
    const result = runtime.execute(call('pay', {}, controller))
    const request = await asked
    await until(() => timers.live.size === 1, 'the expiry timer')
    await broker.decide(request.id, { decision: 'allow' })
    expect(codeOf(await result)).toBe('OK')
    controller.abort()
    timers.fireAll()
    await tick(10)
    expect(events.map((e) => e.type)).toEqual(['requested', 'decided'])
  })

  it('many concurrent requests: unique ids, oldest first, each settled by its own decision', async () => {
    const { broker, runtime, ran } = setup()
    const count = 40
    const results = Array.from({ length: count }, (_, n) => runtime.execute(call('pay', { n })))
    await until(async () => (await broker.pending()).length === count)
    const pending = await broker.pending()
    expect(new Set(pending.map((p) => p.id)).size).toBe(count)
    for (const p of pending) expect(p.id).toMatch(/^[0-9a-f]{32}\.[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    // Oldest first by requestedAt; requests of the same millisecond in the store's order.
    expect(pending.map((p) => (p.arguments as { n: number }).n).sort((x, y) => x - y)).toEqual(Array.from({ length: count }, (_, n) => n))
    for (let i = 1; i < count; i++) expect(pending[i]!.requestedAt).toBeGreaterThanOrEqual(pending[i - 1]!.requestedAt)

    // Decide newest first; even n allowed, odd n denied.
    for (const p of [...pending].reverse()) {
      const n = (p.arguments as { n: number }).n
      expect((await broker.decide(p.id, n % 2 === 0 ? { decision: 'allow' } : { decision: 'deny', reason: `no ${n}` })).ok).toBe(true)
    }
    const settled = await Promise.all(results)
    settled.forEach((result, n) => {
      if (n % 2 === 0) expect(codeOf(result)).toBe('OK')
      else expect(messageOf(result)).toContain(`denied by a person: no ${n}`)
    })
    expect(ran.sort()).toEqual(Array.from({ length: count / 2 }, (_, i) => `pay:{"n":${i * 2}}`).sort())
    expect(await broker.pending()).toEqual([])
  })
})

describe('pending(): frozen copies', () => {
  it('returns a fresh frozen array of deep-frozen records that callers cannot change', async () => {
    const { broker, runtime } = setup()
    const asked = nextRequest(broker)
    const result = runtime.execute(call('pay', { n: 1 }))
    await asked
    const first = await broker.pending()
    expect(Object.isFrozen(first)).toBe(true)
    expect(Object.isFrozen(first[0])).toBe(true)
    expect(Object.isFrozen(first[0]!.arguments)).toBe(true)
    expect(() => (first as unknown as unknown[]).pop()).toThrow(TypeError)
    expect(() => {
      ;(first[0] as { name: string }).name = 'read'
    }).toThrow(TypeError)
    expect(await broker.pending()).not.toBe(first)
    expect((await broker.pending())[0]!.name).toBe('pay')
    await broker.decide(first[0]!.id, { decision: 'deny' })
    await result
  })
})

describe('decide(): stable refusal codes for the HTTP layer', () => {
  async function withPending(timeoutMs?: number) {
    const fixture = setup(timeoutMs === undefined ? undefined : { timeoutMs })
    const asked = nextRequest(fixture.broker)
    const result = fixture.runtime.execute(call('pay'))
    return { ...fixture, request: await asked, result }
  }

  it('unknown ids → APPROVAL_NOT_FOUND (404)', async () => {
    const { broker, request, result } = await withPending()
    for (const id of ['', 'nope', crypto.randomUUID(), request.id.toUpperCase(), `${request.id} `]) {
      expect(await broker.decide(id, { decision: 'allow' }), id).toMatchObject({ ok: false, code: 'APPROVAL_NOT_FOUND' })
    }
    expect(await broker.pending()).toHaveLength(1)
    await broker.decide(request.id, { decision: 'deny' })
    await result
  })

  it('an unknown id is quoted in the refusal up to 80 characters, never whole', async () => {
    const { broker, request, result } = await withPending()
    const long = `${'x'.repeat(80)}${'y'.repeat(16_000)}`
    const refusal = await broker.decide(long, { decision: 'allow' })
    expect(refusal).toEqual({ ok: false, code: 'APPROVAL_NOT_FOUND', message: `approval "${'x'.repeat(80)}…" (16080 characters) is not pending (unknown id)` })
    // An id as long as a real one is quoted whole.
    expect(await broker.decide('z'.repeat(80), { decision: 'allow' })).toMatchObject({ message: `approval "${'z'.repeat(80)}" is not pending (unknown id)` })
    await broker.decide(request.id, { decision: 'deny' })
    await result
  })

  it('a second decision → APPROVAL_ALREADY_DECIDED (409), and the first one stands', async () => {
    const { broker, request, result } = await withPending()
    expect((await broker.decide(request.id, { decision: 'deny', reason: 'first' })).ok).toBe(true)
    const again = await broker.decide(request.id, { decision: 'allow' })
    expect(again).toEqual({ ok: false, code: 'APPROVAL_ALREADY_DECIDED', message: expect.stringContaining('already decided (deny)') })
    expect(Object.isFrozen(again)).toBe(true)
    expect(messageOf(await result)).toContain('denied by a person: first')
  })

  const garbage: Array<[string, unknown, RegExp]> = [
    ['undefined', undefined, /must be an object/],
    ['null', null, /must be an object .*got null/],
    ['a string', 'allow', /must be an object .*got "allow"/],
    ['an array', [{ decision: 'allow' }], /got an array/],
    ['no decision', {}, /"decision" must be "allow" or "deny" \(got undefined\)/],
    ['a wrong word', { decision: 'yes' }, /got "yes"/],
    ['the wrong case', { decision: 'ALLOW' }, /got "ALLOW"/],
    ['a boolean', { decision: true }, /got true/],
    ['an unknown field', { decision: 'allow', approve: true }, /unknown field "approve"/],
    ['a number reason', { decision: 'deny', reason: 3 }, /"reason" must be a string \(got 3\)/],
    ['a null reason', { decision: 'deny', reason: null }, /"reason" must be a string \(got null\)/],
    ['a reason too long', { decision: 'deny', reason: 'x'.repeat(2001) }, /too long \(2001 characters; at most 2000\)/],
    ['an inherited decision', Object.create({ decision: 'allow' }), /plain object/],
    ['a class instance', new (class Decision { decision = 'allow' })(), /plain object/],
    ['a __proto__ key from JSON', JSON.parse('{"decision":"allow","__proto__":{"x":1}}'), /unknown field "__proto__"/],
  ]
  it.each(garbage)('a bad body (%s) → INVALID_DECISION (400), nothing changes', async (_label, body, message) => {
    const { broker, request, result } = await withPending()
    const refused = await broker.decide(request.id, body as never)
    expect(refused).toMatchObject({ ok: false, code: 'INVALID_DECISION' })
    expect((refused as { message: string }).message).toMatch(message)
    expect(await broker.pending()).toEqual([request])
    expect((await broker.decide(request.id, { decision: 'allow' })).ok).toBe(true)
    expect(codeOf(await result)).toBe('OK')
  })

  it('a body with an accessor is refused without running the getter; a throwing Proxy is refused too', async () => {
    const { broker, request, result } = await withPending()
    let reads = 0
    const getter = {
      get decision() {
        reads++
        return 'allow'
      },
    }
    expect(await broker.decide(request.id, getter as never)).toMatchObject({ code: 'INVALID_DECISION', message: expect.stringContaining('accessor') })
    expect(reads).toBe(0)
    const trap = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error('trap')
        },
      },
    )
    expect(await broker.decide(request.id, trap as never)).toMatchObject({ code: 'INVALID_DECISION', message: expect.stringContaining('could not be read') })
    expect(await broker.pending()).toHaveLength(1)
    await broker.decide(request.id, { decision: 'deny' })
    await result
  })

  it('a non-string id → INVALID_DECISION; a reason of exactly 2000 characters is accepted', async () => {
    const { broker, request, result } = await withPending()
    for (const id of [42, null, undefined, {}, [request.id]]) {
      expect(await broker.decide(id as never, { decision: 'allow' })).toMatchObject({ ok: false, code: 'INVALID_DECISION' })
    }
    const reason = 'r'.repeat(2000)
    expect(await broker.decide(request.id, { decision: 'deny', reason })).toMatchObject({ ok: true, reason })
    expect(messageOf(await result)).toContain(reason)
  })

  it('never throws, whatever it is given', async () => {
    const broker = createApprovalBroker()
    const inputs: unknown[] = [undefined, null, 0, NaN, '', Symbol('s'), () => {}, [], new Map(), Object.create(null)]
    for (const id of inputs) for (const body of inputs) expect(() => broker.decide(id as never, body as never)).not.toThrow()
  })
})

describe('subscribe(): events in order, listeners that cannot break the broker', () => {
  it.each<[string, (broker: ApprovalBroker, id: string) => unknown, string]>([
    ['decide()', (broker, id) => broker.decide(id, { decision: 'allow', reason: 'auto' }), 'OK'],
    ['dispose()', (broker) => broker.dispose(), 'DENIED_BY_APPROVAL'],
  ])('a subscriber calling %s while hearing "requested": every subscriber hears requested, then decided', async (_label, act, code) => {
    const { broker, runtime } = setup()
    const heard: string[] = []
    broker.subscribe((event) => {
      heard.push(`first:${event.type}`)
      if (event.type === 'requested') act(broker, event.approval.id)
    })
    broker.subscribe((event) => {
      heard.push(`second:${event.type}`)
    })
    expect(codeOf(await runtime.execute(call('pay')))).toBe(code)
    // A disposal denies the waiting call without an event: its request stays in the store for another process.
    expect(heard).toEqual(code === 'OK' ? ['first:requested', 'second:requested', 'first:decided', 'second:decided'] : ['first:requested', 'second:requested'])
    // The fixture's recorder plus these two; a disposal mid-delivery drops them once the queue drained.
    expect(broker.subscriberCount).toBe(code === 'OK' ? 3 : 0)
  })

  it('a throwing or rejecting subscriber changes nothing; the others still hear every event', async () => {
    const { broker, runtime, events } = setup()
    broker.subscribe(() => {
      throw new Error('listener bug')
    })
    broker.subscribe(async () => {
      throw new Error('async listener bug')
    })
    broker.subscribe(() => ({
      get then() {
        throw new Error('hostile thenable')
      },
    }) as never)
    const asked = nextRequest(broker)
    const result = runtime.execute(call('pay'))
    const request = await asked
    expect((await broker.decide(request.id, { decision: 'allow' })).ok).toBe(true)
    expect(codeOf(await result)).toBe('OK')
    expect(events.map((e) => e.type)).toEqual(['requested', 'decided'])
  })

  it('events are frozen and carry the request and the time', async () => {
    const { broker, runtime, events } = setup()
    const asked = nextRequest(broker)
    const result = runtime.execute(call('pay'))
    const request = await asked
    const before = Date.now()
    const decided = await broker.decide(request.id, { decision: 'deny', reason: 'no' })
    await result
    const [requested, settled] = events as [ApprovalEvent, ApprovalEvent]
    expect(requested).toEqual({ type: 'requested', approval: request })
    expect(settled).toEqual({ type: 'decided', approval: request, decision: 'deny', reason: 'no', at: expect.any(Number) })
    expect((settled as { at: number }).at).toBeGreaterThanOrEqual(before)
    expect(decided).toMatchObject({ decidedAt: (settled as { at: number }).at })
    for (const event of events) expect(Object.isFrozen(event)).toBe(true)
  })

  it('unsubscribe is idempotent and stops delivery; the same function twice is two subscriptions', async () => {
    const broker = createApprovalBroker()
    const heard: string[] = []
    const listener = (event: ApprovalEvent): void => {
      heard.push(event.type)
    }
    const stopA = broker.subscribe(listener)
    const stopB = broker.subscribe(listener)
    expect(broker.subscriberCount).toBe(2)
    stopA()
    stopA()
    expect(broker.subscriberCount).toBe(1)
    const pending = broker.handler({ execution: fakeExecution() })
    await until(() => heard.length > 0)
    expect(heard).toEqual(['requested'])
    stopB()
    expect(broker.subscriberCount).toBe(0)
    await broker.decide((await broker.pending())[0]!.id, { decision: 'allow' })
    await expect(pending).resolves.toBe(true)
    expect(heard).toEqual(['requested'])
  })

  it('refuses a non-function listener', () => {
    const broker = createApprovalBroker()
    expect(() => broker.subscribe('nope' as never)).toThrow(ToolError)
    expect(broker.subscriberCount).toBe(0)
  })
})

describe('dispose()', () => {
  it('denies everything pending, saying why, then refuses new asks and decisions', async () => {
    const { broker, runtime, events, ran } = setup()
    const results = [runtime.execute(call('pay', { n: 1 })), runtime.execute(call('write_file', { n: 2 }))]
    await until(async () => (await broker.pending()).length === 2)
    const ids = (await broker.pending()).map((p) => p.id)
    await broker.dispose()
    for (const result of await Promise.all(results)) {
      expect(codeOf(result)).toBe('DENIED_BY_APPROVAL')
      expect(messageOf(result)).toContain('the approval broker was disposed; the request stays open in the store for another process')
    }
    expect(ran).toEqual([])
    expect(events.map((e) => e.type)).toEqual(['requested', 'requested'])
    expect(await broker.pending()).toEqual([])
    expect(broker.subscriberCount).toBe(0)
    expect(await broker.decide(ids[0]!, { decision: 'allow' })).toMatchObject({ ok: false, code: 'BROKER_DISPOSED' })
    expect(await broker.decide(ids[0]!, { decision: 'maybe' } as never)).toMatchObject({ ok: false, code: 'INVALID_DECISION' })

    const late = await runtime.execute(call('pay'))
    expect(messageOf(late)).toContain('the approval broker is disposed')
    expect(broker.subscribe(() => {})).toBeTypeOf('function')
    expect(broker.subscriberCount).toBe(0)
    await broker.dispose()
  })
})

/** An execution as the registry would pass it, with a signal whose listeners we count. */
function fakeExecution(overrides: Partial<ToolExecution> = {}): ToolExecution {
  return {
    token: Symbol('t') as ToolExecution['token'],
    callId: 'direct-1',
    name: 'pay',
    arguments: { n: 1 },
    signal: new AbortController().signal,
    ...overrides,
  }
}

describe('nothing leaks', () => {
  function countingSignal() {
    const controller = new AbortController()
    const live = new Set<unknown>()
    const add = controller.signal.addEventListener.bind(controller.signal)
    const remove = controller.signal.removeEventListener.bind(controller.signal)
    vi.spyOn(controller.signal, 'addEventListener').mockImplementation((type, listener, options) => {
      live.add(listener)
      add(type, listener, options)
    })
    vi.spyOn(controller.signal, 'removeEventListener').mockImplementation((type, listener, options) => {
      live.delete(listener)
      remove(type, listener, options)
    })
    return { controller, live }
  }

  it.each(['allow', 'deny', 'expire', 'withdraw', 'dispose'] as const)('no timer or abort listener is left after %s', async (how) => {
    const delay = 4321
    const { live: timers, fireAll } = heldTimers(delay)
    const broker = createApprovalBroker({ timeoutMs: delay })
    const { controller, live } = countingSignal()
    const outcome = Promise.resolve(broker.handler({ execution: fakeExecution({ signal: controller.signal }) })).then(
      (value) => value,
      (error: unknown) => error,
    )
    await until(() => timers.size === 1 && live.size === 1, 'the expiry timer and the abort listener')
    const { id, expiresAt } = (await broker.pending())[0]!
    if (how === 'allow') await broker.decide(id, { decision: 'allow' })
    if (how === 'deny') await broker.decide(id, { decision: 'deny' })
    // The clock says the expiry came (else the broker re-arms the early timer for the rest).
    if (how === 'expire') vi.spyOn(Date, 'now').mockReturnValue(expiresAt)
    if (how === 'expire') fireAll()
    if (how === 'withdraw') controller.abort()
    if (how === 'dispose') await broker.dispose()
    const settled = await outcome
    if (how === 'allow') expect(settled).toBe(true)
    else {
      expect(settled).toBeInstanceOf(ToolError)
      expect((settled as ToolError).code).toBe('DENIED_BY_APPROVAL')
    }
    expect(timers.size).toBe(0)
    expect(live.size).toBe(0)
    expect(await broker.pending()).toEqual([])
  })
})

describe('the handler, called directly', () => {
  it('accepts parentCallId when the registry passes it', async () => {
    const broker = createApprovalBroker()
    const waiting = broker.handler({ execution: fakeExecution({ callId: 'run-1:code:2', agent: 'a' }), parentCallId: 'run-1', reason: 'r' } as never)
    await until(async () => (await broker.pending()).length === 1)
    expect((await broker.pending())[0]).toMatchObject({ callId: 'run-1:code:2', parentCallId: 'run-1', agent: 'a', reason: 'r' })
    await broker.decide((await broker.pending())[0]!.id, { decision: 'allow' })
    await expect(waiting).resolves.toBe(true)
  })

  it('copies and freezes arguments it did not get as a frozen snapshot', async () => {
    const broker = createApprovalBroker()
    const args = { list: [1, 2] }
    const waiting = broker.handler({ execution: fakeExecution({ arguments: args }) })
    args.list.push(3)
    await until(async () => (await broker.pending()).length === 1)
    const [request] = await broker.pending()
    expect(request!.arguments).toEqual({ list: [1, 2] })
    expect(Object.isFrozen((request!.arguments as { list: number[] }).list)).toBe(true)
    await broker.decide(request!.id, { decision: 'deny' })
    await expect(waiting).rejects.toThrow(ToolError)
  })

  it.each<[string, unknown]>([
    ['no request', undefined],
    ['no execution', {}],
    ['a non-string callId', { execution: fakeExecution({ callId: 1 as never }) }],
    ['no signal', { execution: { ...fakeExecution(), signal: undefined } }],
    ['a non-string agent', { execution: fakeExecution({ agent: 7 as never }) }],
    ['a non-string reason', { execution: fakeExecution(), reason: {} }],
    ['a non-string parentCallId', { execution: fakeExecution(), parentCallId: 9 }],
    ['non-JSON arguments', { execution: fakeExecution({ arguments: { when: new Date() } as never }) }],
  ])('denies a malformed request (%s) without opening one', async (_label, request) => {
    const broker = createApprovalBroker()
    expect(() => broker.handler(request as never)).toThrow(/malformed approval request/)
    expect(await broker.pending()).toEqual([])
  })

  it('denies at once for an already-cancelled call', async () => {
    const broker = createApprovalBroker()
    const controller = new AbortController()
    controller.abort()
    expect(() => broker.handler({ execution: fakeExecution({ signal: controller.signal }) })).toThrow(/cancelled/)
    expect(await broker.pending()).toEqual([])
  })
})

describe('options', () => {
  it.each<[string, unknown]>([
    ['zero', { timeoutMs: 0 }],
    ['negative', { timeoutMs: -5 }],
    ['NaN', { timeoutMs: NaN }],
    ['Infinity', { timeoutMs: Infinity }],
    ['a string', { timeoutMs: '5000' }],
    ['beyond one timer', { timeoutMs: 2 ** 31 }],
    ['an unknown key', { timeout: 5000 }],
    ['null', null],
    ['a number', 5000],
    ['an array', []],
    ['a throwing getter', { get timeoutMs() { throw new Error('getter') } }],
    ['a throwing Proxy', new Proxy({}, { ownKeys: () => { throw new Error('trap') } })],
  ])('refuses %s with INVALID_OPTIONS', (_label, options) => {
    expect(() => createApprovalBroker(options as never)).toThrow(expect.objectContaining({ name: 'ToolError', code: 'INVALID_OPTIONS' }))
  })

  it('accepts the largest single timer and {}', () => {
    expect(createApprovalBroker({ timeoutMs: 2 ** 31 - 1 }).timeoutMs).toBe(2 ** 31 - 1)
    expect(createApprovalBroker({}).timeoutMs).toBe(300_000)
    expect(createApprovalBroker({ timeoutMs: undefined }).timeoutMs).toBe(300_000)
  })
})
