/**
 * A plan request carries the principal that started the run (stop 54, found by mutation
 * testing): before, the plan's request was opened without it, so `GET /v1/approvals` could not
 * say who asked, and plan requests escaped the bound on one principal's open requests
 * (`MAX_WAITING_PER_PRINCIPAL`): 260 `POST /v1/runs` of one `run` token opened 256 plan requests.
 */
import { describe, expect, it } from 'vitest'
import { MAX_WAITING_PER_PRINCIPAL } from '../../../src/approvals/_store-broker.js'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { AGENT_TOKEN, PERSON_TOKEN, ROLE_TOKENS, createFixture, eventually, jsonAuth } from '../http/fixtures.js'
import { registerAskingPay, type ListedApproval } from '../../support/pay-fixture.js'

function planFixture() {
  const broker = createApprovalBroker({ plans: true })
  // Room for more runs of one token than the approvals bound: one token's share of the run
  // table (runs.maxRuns less a quarter: 192 of the default 256) would stop them first.
  const fixture = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime({ wallMs: 30_000 }), approvals: broker, store: createMemoryStore() }, { tokens: ROLE_TOKENS, runs: { maxRuns: 512 } })
  const paid: unknown[] = []
  registerAskingPay(fixture.runtime, (cents) => paid.push(cents))
  const post = (path: string, token: string, body: unknown) => Promise.resolve(fixture.app.request(path, { method: 'POST', headers: jsonAuth(token), body: JSON.stringify(body) }))
  const listed = async (): Promise<ListedApproval[]> => ((await (await fixture.app.request('/v1/approvals', { headers: jsonAuth(PERSON_TOKEN) })).json()) as { approvals: ListedApproval[] }).approvals
  return { broker, paid, post, listed }
}

describe('a plan request names who asked', () => {
  it("lists the run's principal on its plan request, and a person's allow runs the plan", async () => {
    const f = planFixture()
    const started = await f.post('/v1/runs', AGENT_TOKEN, { code: 'return await tools.pay({ cents: 5 })', description: 'pays five cents' })
    expect(started.status).toBe(202)
    await eventually(async () => (await f.listed()).length === 1, 'the plan request', 20_000, 20)
    const [plan] = await f.listed()
    expect(plan).toMatchObject({ kind: 'plan', principal: 'agent' })
    expect((await f.post(`/v1/approvals/${plan!.id}`, PERSON_TOKEN, { decision: 'allow' })).status).toBe(200)
    await eventually(() => f.paid.length === 1, 'the payment', 20_000, 20)
    expect(f.paid).toEqual([5])
  })

  it(`counts plan requests against the principal's bound (${MAX_WAITING_PER_PRINCIPAL})`, { timeout: 60_000 }, async () => {
    const f = planFixture()
    const runs = MAX_WAITING_PER_PRINCIPAL + 5
    for (let i = 0; i < runs; i++) {
      const started = await f.post('/v1/runs', AGENT_TOKEN, { code: `return await tools.pay({ cents: ${i} })`, description: `run ${i}` })
      expect(started.status).toBe(202)
    }
    // Past the bound a plan of this principal is denied unasked: never more listed than the bound.
    await eventually(async () => (await f.listed()).length === MAX_WAITING_PER_PRINCIPAL, 'the bound of plan requests listed', 40_000, 100)
    await new Promise((resolve) => setTimeout(resolve, 200))
    const listed = await f.listed()
    expect(listed).toHaveLength(MAX_WAITING_PER_PRINCIPAL)
    expect(new Set(listed.map((a) => a.principal))).toEqual(new Set(['agent']))
    for (const approval of listed) await f.post(`/v1/approvals/${approval.id}`, PERSON_TOKEN, { decision: 'deny' })
    expect(f.paid).toEqual([])
  })
})
