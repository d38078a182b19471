/**
 * One principal cannot crowd the person's list (stop 53, red team finding 3). The listing
 * holds at most MAX_LISTED_APPROVALS (500), oldest first: before, one `run` token sending
 * 600 direct calls at once filled it, and another principal's request sent next was not
 * listed (it waited unseen until the flood expired, 5 minutes by default). Now each
 * principal has at most MAX_WAITING_PER_PRINCIPAL (200) calls waiting for a person in a
 * broker; past that a call is denied at once, unasked, and the others are listed.
 */
import { describe, expect, it } from 'vitest'
import { MAX_LISTED_APPROVALS } from '../../../src/approvals/index.js'
import { MAX_WAITING_PER_PRINCIPAL } from '../../../src/approvals/_store-broker.js'
import { payFixture } from '../../support/pay-fixture.js'
import { AGENT_TOKEN, PERSON_TOKEN, ROLE_TOKENS, eventually } from '../http/fixtures.js'

const OTHER = 'other-agent-token-0123456789'

type Answer = { isError: boolean; error?: { message: string; info?: { code?: string } } }

describe('calls waiting for a person, per principal', () => {
  it(`${MAX_LISTED_APPROVALS + 100} calls at once from one token: ${MAX_WAITING_PER_PRINCIPAL} wait, the rest are denied unasked; another principal's request is listed`, async () => {
    const f = payFixture({ tokens: [...ROLE_TOKENS, { token: OTHER, roles: ['run'], id: 'other' }] })
    const flood = Array.from({ length: MAX_LISTED_APPROVALS + 100 }, (_, i) => f.request('/v1/tools/pay/execute', AGENT_TOKEN, { body: { arguments: { cents: i } } }))
    const early: Answer[] = []
    for (const call of flood) void call.then(async (r) => early.push((await r.json()) as Answer))
    await eventually(async () => early.length === flood.length - MAX_WAITING_PER_PRINCIPAL, 'the calls past the bound to be denied', 60_000)
    for (const answer of early) {
      expect(answer.error?.info?.code).toBe('DENIED_BY_APPROVAL')
      expect(answer.error?.message).toBe(`pay was not put to a person: principal agent already has ${MAX_WAITING_PER_PRINCIPAL} calls waiting for one here (at most ${MAX_WAITING_PER_PRINCIPAL}); retry once some are decided`)
    }
    await eventually(async () => (await f.pending()).length === MAX_WAITING_PER_PRINCIPAL)
    const legit = f.request('/v1/tools/pay/execute', OTHER, { body: { arguments: { cents: 424242 } } })
    await eventually(async () => (await f.pending()).some((a) => a.principal === 'other'))
    const listed = await f.pending()
    expect(listed.length).toBe(MAX_WAITING_PER_PRINCIPAL + 1)
    const theirs = listed.find((a) => a.principal === 'other')!
    expect((await f.request(`/v1/approvals/${theirs.id}`, PERSON_TOKEN, { body: { decision: 'allow' } })).status).toBe(200)
    expect(((await (await legit).json()) as Answer).isError).toBe(false)
    // One decided: that principal may ask once more.
    const [first] = listed.filter((a) => a.principal === 'agent')
    expect((await f.request(`/v1/approvals/${first!.id}`, PERSON_TOKEN, { body: { decision: 'deny' } })).status).toBe(200)
    // An amount no call of the flood asked (they asked 0 to 599): waiting for `cents: 7` matched the
    // flood's own call 7, so the listing after it could come before this call's request (1 run in 6).
    const again = f.request('/v1/tools/pay/execute', AGENT_TOKEN, { body: { arguments: { cents: 777_777 } } })
    await eventually(async () => (await f.pending()).some((a) => a.principal === 'agent' && (a.arguments as { cents: number }).cents === 777_777))
    const waiting = await f.pending()
    expect(waiting.length).toBe(MAX_WAITING_PER_PRINCIPAL)
    for (const approval of waiting) await f.request(`/v1/approvals/${approval.id}`, PERSON_TOKEN, { body: { decision: 'deny' } })
    expect(((await (await again).json()) as Answer).isError).toBe(true)
    await Promise.all(flood)
    expect(f.paid).toEqual([424242])
  }, 120_000)
})
