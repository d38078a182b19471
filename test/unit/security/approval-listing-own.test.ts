/**
 * Each listing of the approvals is its caller's own (brief s54 "listing", items 5 and 7).
 * - A pinned approver's agent filter was applied after the 500 cut: 500 older requests of
 *   other agents crowded its agent's request out (`GET /v1/approvals` listed nothing).
 *   Now `pending({ agent })` filters while it reads the store.
 * - `pending()` answered a bare array and the cut was read from the broker's `lastListing`,
 *   which a library caller listing at the same time replaced (the HTTP route reported the
 *   other listing's `truncated`). Now each `pending()` carries its own `listing`.
 */
import { describe, expect, it } from 'vitest'
import { createApprovalBroker, MAX_LISTED_APPROVALS, type ApprovalBroker, type PendingApproval } from '../../../src/approvals/index.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { PERSON_TOKEN, ROLE_TOKENS, createFixture, jsonAuth } from '../http/fixtures.js'
import { CallSignals } from '../../support/call-signals.js'

const PINNED = 'pinned-person-token-0123456789'
const TOKENS = [...ROLE_TOKENS, { token: PINNED, roles: ['run', 'approve'] as ('run' | 'approve')[], id: 'pinned', agent: 'alice' }]

let seq = 0
/** Opens one request through the broker's public handler (as the registry asks); its denial is left unawaited. */
function ask(broker: ApprovalBroker, agent: string | undefined, calls: CallSignals): void {
  const n = ++seq
  const execution = { callId: `listing-${n}`, name: 'pay', arguments: { n }, signal: calls.signal(), ...(agent === undefined ? {} : { agent }) }
  Promise.resolve(broker.handler({ execution } as never)).catch(() => undefined)
}

async function openMany(broker: ApprovalBroker, agents: readonly (string | undefined)[], controller: CallSignals): Promise<void> {
  const opened = new Promise<void>((resolve) => {
    let left = agents.length
    const stop = broker.subscribe((event) => {
      if (event.type === 'requested' && --left === 0) {
        stop()
        resolve()
      }
    })
  })
  // One at a time: each request is older than the next (the listing's order is by time).
  for (const agent of agents) {
    void ask(broker, agent, controller)
    await new Promise((resolve) => setTimeout(resolve, 0))
  }
  await opened
}

describe("a pinned approver's listing is filtered within the listing, not after its cut", () => {
  it(`${MAX_LISTED_APPROVALS} older requests of another agent and the global layer: alice's one newer request is listed to alice's approver`, async () => {
    const broker = createApprovalBroker({ store: createMemoryStore() })
    const controller = new CallSignals()
    await openMany(broker, [...Array.from({ length: MAX_LISTED_APPROVALS - 1 }, () => 'bob'), undefined], controller)
    await openMany(broker, ['alice'], controller)
    const f = createFixture({ approvals: broker }, { tokens: TOKENS })
    const listed = (await (await f.app.request('/v1/approvals', { headers: jsonAuth(PINNED) })).json()) as { approvals: PendingApproval[]; truncated?: boolean }
    // Before: { approvals: [], truncated: true } (the 500 oldest were bob's and the global layer's; alice's was cut before the filter).
    expect(listed.truncated).toBeUndefined()
    expect(listed.approvals.map((approval) => approval.agent)).toEqual(['alice'])
    const all = (await (await f.app.request('/v1/approvals', { headers: jsonAuth(PERSON_TOKEN) })).json()) as { approvals: PendingApproval[]; truncated?: boolean }
    expect([all.approvals.length, all.truncated]).toEqual([MAX_LISTED_APPROVALS, true])
    // The library's filter: alice's alone; another's name lists nothing; a non-string fails closed.
    expect((await broker.pending({ agent: 'alice' })).map((approval) => approval.agent)).toEqual(['alice'])
    expect(await broker.pending({ agent: 'carol' })).toEqual([])
    await expect(broker.pending({ agent: 7 as never })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
    controller.abort()
    await broker.dispose()
  }, 60_000)
})

describe('each pending() answers its own listing', () => {
  it("two listings at once: each carries its own truncated (the library's cut, alice's whole), and JSON sees only the array", async () => {
    const broker = createApprovalBroker({ store: createMemoryStore() })
    const controller = new CallSignals()
    await openMany(broker, [...Array.from({ length: MAX_LISTED_APPROVALS }, () => 'bob'), 'alice'], controller)
    const [everyone, alice] = await Promise.all([broker.pending(), broker.pending({ agent: 'alice' })])
    // Before: no `listing` (only the broker's shared lastListing, the last one to finish).
    expect(everyone.listing).toMatchObject({ examined: MAX_LISTED_APPROVALS + 1, truncated: true })
    expect(alice.listing).toMatchObject({ examined: MAX_LISTED_APPROVALS + 1, truncated: false })
    expect(everyone).toHaveLength(MAX_LISTED_APPROVALS)
    expect(JSON.parse(JSON.stringify(alice))).toEqual([JSON.parse(JSON.stringify(alice[0]))])
    expect(Object.keys(alice)).toEqual(['0'])
    expect(Object.isFrozen(alice)).toBe(true)
    controller.abort()
    await broker.dispose()
    expect((await broker.pending()).listing).toEqual({ examined: 0, malformed: 0, truncated: false })
  }, 60_000)

  it("GET /v1/approvals beside a library caller's pending(): the route reports its own listing's truncated, never the other's", async () => {
    const store = createMemoryStore()
    let held = 0
    // The first listing's sweep of settled records is held until the second listing has ended: before, the second's
    // lastListing replaced the first's between its listing and its answer.
    let release: () => void = () => {}
    const second = new Promise<void>((resolve) => (release = resolve))
    const holding: DurableStore = {
      get: (key) => store.get(key),
      put: (key, value, options) => store.put(key, value, options),
      delete: (key, options) => store.delete(key, options),
      async list(prefix, options) {
        if (prefix === 'approvals/done/' && held++ === 0) await second
        return store.list(prefix, options)
      },
    }
    const broker = createApprovalBroker({ store: holding })
    const controller = new CallSignals()
    await openMany(broker, [...Array.from({ length: MAX_LISTED_APPROVALS }, () => 'bob'), 'alice'], controller)
    held = 0
    const f = createFixture({ approvals: broker }, { tokens: TOKENS })
    const route = Promise.resolve(f.app.request('/v1/approvals', { headers: jsonAuth(PINNED) })).then((response) => response.json())
    await new Promise((resolve) => setTimeout(resolve, 0))
    while (held === 0) await new Promise((resolve) => setTimeout(resolve, 1))
    const library = await broker.pending()
    release()
    const answer = (await route) as { approvals: PendingApproval[]; truncated?: boolean }
    // Before: truncated: true (the library's listing, read from lastListing).
    expect(answer.truncated).toBeUndefined()
    expect(answer.approvals.map((approval) => approval.agent)).toEqual(['alice'])
    expect([library.length, library.listing?.truncated]).toEqual([MAX_LISTED_APPROVALS, true])
    controller.abort()
    await broker.dispose()
  }, 60_000)
})
