/**
 * `GET /v1/approvals` says when it is not the whole list (red team, stop 54). A listing holds
 * at most 500 requests (oldest first) and reads at most 1,000 records and 8 MiB; before, it
 * returned `{ approvals }` alone, so a person shown 500 requests could not know that more
 * were waiting unseen (three principals at their bound of 200 are 600). Now a cut listing
 * answers `truncated: true` (a whole one keeps its shape), read from the same listing:
 * listings of one broker run one at a time (its `lastListing` is the last one's).
 */
import { describe, expect, it } from 'vitest'
import { createApprovalBroker, MAX_LISTED_APPROVALS } from '../../../src/approvals/index.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { MAX_WAITING_PER_PRINCIPAL } from '../../../src/approvals/_store-broker.js'
import { payFixture, type ListedApproval } from '../../support/pay-fixture.js'
import { AGENT_TOKEN, PERSON_TOKEN, ROLE_TOKENS, createFixture, eventually, jsonAuth } from '../http/fixtures.js'

const SECOND = 'second-agent-token-0123456789'
const THIRD = 'third-agent-token-0123456789'
const PINNED = 'pinned-person-token-0123456789'

type Listing = { approvals: ListedApproval[]; truncated?: boolean }

describe('GET /v1/approvals says when it is truncated', () => {
  it(`three principals at their bound (${3 * MAX_WAITING_PER_PRINCIPAL} requests): ${MAX_LISTED_APPROVALS} listed, truncated: true, in every one of 20 listings at once; after decisions, whole (no truncated)`, async () => {
    const f = payFixture({
      tokens: [
        ...ROLE_TOKENS,
        { token: SECOND, roles: ['run'], id: 'second' },
        { token: THIRD, roles: ['run'], id: 'third' },
        { token: PINNED, roles: ['run', 'approve'], id: 'pinned', agent: 'alice' },
      ],
    })
    const listing = async (token = PERSON_TOKEN): Promise<Listing> => (await (await f.request('/v1/approvals', token)).json()) as Listing
    const calls = [AGENT_TOKEN, SECOND, THIRD].flatMap((token, t) => Array.from({ length: MAX_WAITING_PER_PRINCIPAL }, (_, i) => f.request('/v1/tools/pay/execute', token, { body: { arguments: { cents: t * 1000 + i } } })))
    await eventually(async () => (await f.broker.pending()).length === MAX_LISTED_APPROVALS && f.broker.lastListing.truncated, 'every request to be open', 60_000)
    const full = await listing()
    expect(full.approvals).toHaveLength(MAX_LISTED_APPROVALS)
    // Before: { approvals } alone (truncated undefined): 100 requests waited unseen, and nothing said so.
    expect(full.truncated).toBe(true)
    // Listings at once each report their own listing's bound (never a concurrent one's).
    const many = await Promise.all(Array.from({ length: 20 }, () => listing()))
    for (const each of many) expect([each.approvals.length, each.truncated]).toEqual([MAX_LISTED_APPROVALS, true])
    // A pinned approver (agent alice: no request here) gets its own listing: alice's requests, filtered within the
    // bounds (600 records read, none alice's: whole). Before brief s54 "listing": the whole listing's cut, filtered after it.
    expect(await listing(PINNED)).toEqual({ approvals: [] })
    // Decided down to 500 and fewer: the listing is whole again.
    for (const approval of full.approvals.slice(0, 100)) await f.request(`/v1/approvals/${approval.id}`, PERSON_TOKEN, { body: { decision: 'deny' } })
    await eventually(async () => (await listing()).truncated === undefined)
    const whole = await listing()
    expect([whole.approvals.length, whole.truncated]).toEqual([MAX_LISTED_APPROVALS, undefined])
    for (const approval of whole.approvals) await f.request(`/v1/approvals/${approval.id}`, PERSON_TOKEN, { body: { decision: 'deny' } })
    expect(await listing()).toEqual({ approvals: [] })
    await Promise.all(calls)
    expect(f.paid).toEqual([])
  }, 120_000)

  it('20 listings asked at once read the store one listing at a time (at most two listings for all of them)', async () => {
    const store = createMemoryStore()
    let inFlight = 0
    let most = 0
    let listings = 0
    // Each listing of open requests counted, and held a little so that the requests overlap.
    const counting: DurableStore = {
      ...store,
      get: (key) => store.get(key),
      put: (key, value, options) => store.put(key, value, options),
      delete: (key, options) => store.delete(key, options),
      async list(prefix, options) {
        if (prefix !== 'approvals/open/') return store.list(prefix, options)
        listings++
        most = Math.max(most, ++inFlight)
        try {
          await new Promise((resolve) => setTimeout(resolve, 20))
          return await store.list(prefix, options)
        } finally {
          inFlight--
        }
      },
    }
    const f = createFixture({ approvals: createApprovalBroker({ store: counting }) }, { tokens: ROLE_TOKENS })
    const answers = await Promise.all(Array.from({ length: 20 }, () => Promise.resolve(f.app.request('/v1/approvals', { headers: jsonAuth(PERSON_TOKEN) })).then((r) => r.json())))
    for (const answer of answers) expect(answer).toEqual({ approvals: [] })
    // Before: 20 listings at once, each reading up to 1,000 records and 8 MiB.
    expect(most).toBe(1)
    expect(listings).toBeLessThanOrEqual(2)
  })
})
