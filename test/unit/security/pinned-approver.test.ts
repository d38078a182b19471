/**
 * A token pinned to an agent acts for that agent only, approvals included (stop 53, red
 * team finding 2). Before, a `run` + `approve` token pinned to `alice` listed every
 * agent's requests, decided a global-layer call (200, the tool ran) and read every run that
 * asked a person. Now it lists, decides and reads its agent's alone; another agent's request
 * is 404 `APPROVAL_NOT_FOUND` (as one that never existed, also once settled), another
 * agent's run 404 `RUN_NOT_FOUND`. An unpinned `approve` token is unchanged.
 */
import { describe, expect, it } from 'vitest'
import { payFixture, type ListedApproval } from '../../support/pay-fixture.js'
import { AGENT_TOKEN, PERSON_TOKEN, ROLE_TOKENS, errorOf, eventually } from '../http/fixtures.js'

const ALICE_AGENT = 'alice-agent-token-0123456789'
const ALICE_PERSON = 'alice-person-token-0123456789'

function fixture() {
  const f = payFixture({
    tokens: [...ROLE_TOKENS, { token: ALICE_AGENT, roles: ['run'], id: 'alice-agent', agent: 'alice' }, { token: ALICE_PERSON, roles: ['run', 'approve'], id: 'alice-person', agent: 'alice' }],
  })
  const listedBy = async (token: string): Promise<ListedApproval[]> => ((await (await f.request('/v1/approvals', token)).json()) as { approvals: ListedApproval[] }).approvals
  return { ...f, listedBy }
}

describe("a pinned approver decides its agent's requests only", () => {
  it("another agent's call: not listed to it, its decision 404 (nothing runs), also once settled; its own agent's: listed and decided", async () => {
    const f = fixture()
    const global = f.request('/v1/tools/pay/execute', AGENT_TOKEN, { body: { arguments: { cents: 1 } } })
    await eventually(async () => (await f.pending()).length === 1)
    const [other] = await f.pending()
    expect(other!.agent).toBeUndefined()
    expect(await f.listedBy(ALICE_PERSON)).toEqual([])
    const refused = await f.request(`/v1/approvals/${other!.id}`, ALICE_PERSON, { body: { decision: 'allow' } })
    expect([refused.status, (await errorOf(refused)).code]).toEqual([404, 'APPROVAL_NOT_FOUND'])
    expect(f.paid).toEqual([])
    expect(await f.pending()).toEqual([other])
    expect((await f.request(`/v1/approvals/${other!.id}`, PERSON_TOKEN, { body: { decision: 'deny' } })).status).toBe(200)
    expect(((await (await global).json()) as { isError: boolean }).isError).toBe(true)
    // Settled: still not its to hear about (404, not 409 with the decision).
    const late = await f.request(`/v1/approvals/${other!.id}`, ALICE_PERSON, { body: { decision: 'allow' } })
    expect([late.status, (await errorOf(late)).code]).toEqual([404, 'APPROVAL_NOT_FOUND'])

    const mine = f.request('/v1/tools/pay/execute', ALICE_AGENT, { body: { arguments: { cents: 2 } } })
    await eventually(async () => (await f.listedBy(ALICE_PERSON)).length === 1)
    const [own] = await f.listedBy(ALICE_PERSON)
    expect(own).toMatchObject({ agent: 'alice', arguments: { cents: 2 } })
    expect(await f.pending()).toEqual([own])
    expect((await f.request(`/v1/approvals/${own!.id}`, ALICE_PERSON, { body: { decision: 'allow' } })).status).toBe(200)
    expect(((await (await mine).json()) as { isError: boolean }).isError).toBe(false)
    expect(f.paid).toEqual([2])
  })

  it("another agent's run that asked a person: 404 to it (GET and events); its own agent's: readable", async () => {
    const f = fixture()
    const start = async (token: string) => (await (await f.request('/v1/runs', token, { body: { code: 'return await tools.pay({ cents: 3 })', description: 'd' } })).json()) as { id: string }
    const other = await start(AGENT_TOKEN)
    const own = await start(ALICE_AGENT)
    await eventually(async () => (await f.pending()).length === 2)
    for (const path of [`/v1/runs/${other.id}`, `/v1/runs/${other.id}/events`]) {
      const refused = await f.request(path, ALICE_PERSON)
      expect([refused.status, (await errorOf(refused)).code], path).toEqual([404, 'RUN_NOT_FOUND'])
    }
    expect((await f.request(`/v1/runs/${other.id}`, PERSON_TOKEN)).status).toBe(200)
    // An unpinned approver reads every agent's run that asked, alice's included.
    expect((await f.request(`/v1/runs/${own.id}`, PERSON_TOKEN)).status).toBe(200)
    const view = (await (await f.request(`/v1/runs/${own.id}`, ALICE_PERSON)).json()) as { agent?: string; approvals: unknown[] }
    expect([view.agent, view.approvals.length]).toEqual(['alice', 1])
    for (const approval of await f.pending()) await f.request(`/v1/approvals/${approval.id}`, PERSON_TOKEN, { body: { decision: 'deny' } })
  })
})
