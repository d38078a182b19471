/**
 * One principal cannot crowd the person's list through several servers (red team, stop 54).
 * `MAX_WAITING_PER_PRINCIPAL` (200) was counted per broker, so per process: three servers
 * sharing one approval store let one `run` token hold 600 open requests, the listing (at most
 * 500, oldest first) was full of them, and another principal's request was not listed. On the
 * edge each run object's broker counted its own keys, so every run of one token had a bound of
 * its own. Now the bound is counted in the store (`approvals/by/<principal>/`), across every
 * process and object sharing it; processes opening at the same moment may pass it by one each.
 */
import { setMaxListeners } from 'node:events'
import { afterEach, describe, expect, it } from 'vitest'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { ApprovalBroker } from '../../../src/approvals/index.js'
import { MAX_WAITING_PER_PRINCIPAL } from '../../../src/approvals/_store-broker.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { createRunIndexStore } from '../../../platforms/edge/run-index.js'
import { mapStorage } from '../../support/map-storage.js'
import { registerAskingPay, type ListedApproval } from '../../support/pay-fixture.js'
import { AGENT_TOKEN, PERSON_TOKEN, ROLE_TOKENS, createFixture, eventually, jsonAuth } from '../http/fixtures.js'

const OTHER = 'other-agent-token-0123456789'
const INSTANCES = 3

type Answer = { isError: boolean; error?: { message: string; info?: { code?: string } } }

/** `INSTANCES` servers, each its own runtime and broker, sharing one approval store (as over PostgreSQL or one file-store directory). */
function instances(store: DurableStore) {
  const paid: number[] = []
  const servers = Array.from({ length: INSTANCES }, () => {
    const broker = createApprovalBroker({ store, pollIntervalMs: 20 })
    const fixture = createFixture({ approvals: broker }, { tokens: [...ROLE_TOKENS, { token: OTHER, roles: ['run'], id: 'other' }] })
    registerAskingPay(fixture.runtime, (cents) => paid.push(cents))
    const request = (path: string, token: string, body?: unknown) =>
      Promise.resolve(fixture.app.request(path, { method: body === undefined ? 'GET' : 'POST', headers: jsonAuth(token), ...(body === undefined ? {} : { body: JSON.stringify(body) }) }))
    return { fixture, broker, request }
  })
  return { servers, paid }
}

const open: ApprovalBroker[] = []
afterEach(async () => {
  for (const broker of open.splice(0)) await broker.dispose()
})

/** The agent's open request count as the store holds it. */
async function openOf(store: DurableStore, principal: string): Promise<number> {
  const listed = await createApprovalBroker({ store }).pending()
  return listed.filter((approval) => approval.principal === principal).length
}

describe('calls waiting for a person, per principal, across servers sharing a store', () => {
  it(`${INSTANCES} servers, ${MAX_WAITING_PER_PRINCIPAL} calls of one token on each: at most ${MAX_WAITING_PER_PRINCIPAL} + ${INSTANCES - 1} open in the store; another principal's request is listed and runs`, async () => {
    const store = createMemoryStore()
    const { servers, paid } = instances(store)
    open.push(...servers.map((s) => s.broker))
    const flood = servers.flatMap((server, n) => Array.from({ length: MAX_WAITING_PER_PRINCIPAL }, (_, i) => server.request('/v1/tools/pay/execute', AGENT_TOKEN, { arguments: { cents: n * 1000 + i } })))
    const early: Answer[] = []
    for (const call of flood) void call.then(async (r) => early.push((await r.json()) as Answer))
    // Before: each server let its 200 wait (600 open, none denied) and this never came true.
    await eventually(async () => early.length >= flood.length - MAX_WAITING_PER_PRINCIPAL - (INSTANCES - 1), 'the calls past the store-wide bound to be denied', 60_000)
    for (const answer of early) {
      expect(answer.error?.info?.code).toBe('DENIED_BY_APPROVAL')
      expect(answer.error?.message).toMatch(/^pay was not put to a person: principal agent already has \d+ requests waiting for one in the approval store, across every server sharing it \(at most 200\); retry once some are decided$/)
    }
    const waiting = await openOf(store, 'agent')
    expect(waiting).toBeGreaterThanOrEqual(MAX_WAITING_PER_PRINCIPAL)
    expect(waiting).toBeLessThanOrEqual(MAX_WAITING_PER_PRINCIPAL + INSTANCES - 1)
    // Another principal asks on the last server; the person lists on the first.
    const legit = servers[2]!.request('/v1/tools/pay/execute', OTHER, { arguments: { cents: 424242 } })
    const listedThere = async () => ((await (await servers[0]!.request('/v1/approvals', PERSON_TOKEN)).json()) as { approvals: ListedApproval[] }).approvals
    await eventually(async () => (await listedThere()).some((a) => a.principal === 'other'))
    const theirs = (await listedThere()).find((a) => a.principal === 'other')!
    expect((await servers[0]!.request(`/v1/approvals/${theirs.id}`, PERSON_TOKEN, { decision: 'allow' })).status).toBe(200)
    expect(((await (await legit).json()) as Answer).isError).toBe(false)
    expect(paid).toEqual([424242])
    // A decided request no longer counts: the agent may ask once more (on another server).
    const mine = (await listedThere()).filter((a) => a.principal === 'agent')
    for (const approval of mine.slice(0, INSTANCES)) expect((await servers[1]!.request(`/v1/approvals/${approval.id}`, PERSON_TOKEN, { decision: 'deny' })).status).toBe(200)
    const again = servers[1]!.request('/v1/tools/pay/execute', AGENT_TOKEN, { arguments: { cents: 777_777 } })
    await eventually(async () => (await listedThere()).some((a) => (a.arguments as { cents: number }).cents === 777_777))
    for (const approval of await listedThere()) await servers[0]!.request(`/v1/approvals/${approval.id}`, PERSON_TOKEN, { decision: 'deny' })
    expect(((await (await again).json()) as Answer).isError).toBe(true)
    await Promise.all(flood)
    // Every count key went with its request.
    expect((await store.list('approvals/by/')).entries).toEqual([])
    expect(paid).toEqual([424242])
  }, 120_000)

  it('edge: two run objects of one token share the bound (their brokers count in the index, not in their own storage)', async () => {
    const index = createMemoryStore()
    const [a, b] = [0, 1].map(() => createApprovalBroker({ store: createRunIndexStore(index, mapStorage()), pollIntervalMs: 20 }))
    open.push(a!, b!)
    const controller = new AbortController()
    setMaxListeners(0, controller.signal)
    const ask = (broker: ApprovalBroker, n: number) =>
      Promise.resolve(broker.handler({ execution: { callId: `call-${n}`, name: 'pay', arguments: { cents: n }, principal: 'agent', signal: controller.signal } } as never)).then(
        () => 'allowed',
        (error: Error) => error.message,
      )
    const first = Array.from({ length: MAX_WAITING_PER_PRINCIPAL }, (_, i) => ask(a!, i))
    await eventually(async () => (await a!.pending()).length === MAX_WAITING_PER_PRINCIPAL)
    // Before: the second object counted only the keys it wrote (none) and opened a request.
    const asked = new Promise<string>((resolve) => b!.subscribe((event) => event.type === 'requested' && resolve('asked a person')))
    expect(await Promise.race([ask(b!, 9999), asked])).toBe(`pay was not put to a person: principal agent already has ${MAX_WAITING_PER_PRINCIPAL} requests waiting for one in the approval store, across every server sharing it (at most ${MAX_WAITING_PER_PRINCIPAL}); retry once some are decided`)
    controller.abort()
    await Promise.all(first)
    expect((await index.list('approvals/by/')).entries).toEqual([])
  }, 60_000)

  it('a request left open by a broker that went away stops counting at its expiry; a later listing removes it and its count key', async () => {
    const store = createMemoryStore()
    const gone = createApprovalBroker({ store, timeoutMs: 100, retainSettledMs: 1 })
    const controller = new AbortController()
    const asked = Promise.resolve(gone.handler({ execution: { callId: 'c', name: 'pay', arguments: { cents: 1 }, principal: 'agent', signal: controller.signal } } as never)).catch(() => 'denied')
    await eventually(async () => (await gone.pending()).length === 1)
    // Disposed, it denies its caller and leaves the request open in the store (for another process).
    await gone.dispose()
    expect(await asked).toBe('denied')
    expect((await store.list('approvals/by/agent/')).entries).toHaveLength(1)
    await new Promise((resolve) => setTimeout(resolve, 200))
    const next = createApprovalBroker({ store, retainSettledMs: 1 })
    open.push(next)
    await next.pending()
    expect((await store.list('approvals/open/')).entries).toEqual([])
    expect((await store.list('approvals/by/')).entries).toEqual([])
  })
})
