/**
 * What `POST /v1/approvals/:id` tells the broker about who decides (`decide(id, input, by)`):
 * the role that let the principal decide (`approve` when it holds it, else `admin`) and, for
 * a token pinned to an agent, that agent; an unpinned one passes no `agent` key at all
 * (`ApprovalDecider.agent` absent: every agent). The app accepts any `ApprovalBroker`, so this
 * argument is what a broker of the host's own reads: an `agent: undefined` key would read
 * as pinned to nothing to a broker that checks for the key.
 */
import { describe, expect, it } from 'vitest'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { ApprovalBroker, ApprovalDecider } from '../../../src/approvals/index.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import { registerAskingPay } from '../../support/pay-fixture.js'
import { ADMIN_TOKEN, AGENT_TOKEN, PERSON_TOKEN, ROLE_TOKENS, createFixture, eventually, jsonAuth } from './fixtures.js'

const ALICE_AGENT = 'alice-agent-token-0123456789'
const ALICE_PERSON = 'alice-person-token-0123456789'

function fixture() {
  const broker = createApprovalBroker()
  const deciders: Array<ApprovalDecider | undefined> = []
  // The real broker, with its decide() recording what the app passed.
  const recording: ApprovalBroker = Object.create(broker, {
    decide: {
      value: (id: string, input: never, by?: ApprovalDecider) => {
        deciders.push(by)
        return broker.decide(id, input, by)
      },
    },
  })
  const tokens = [...ROLE_TOKENS, { token: ALICE_AGENT, roles: ['run' as const], id: 'alice-agent', agent: 'alice' }, { token: ALICE_PERSON, roles: ['run' as const, 'approve' as const], id: 'alice-person', agent: 'alice' }]
  const f = createFixture({ approvals: recording, store: createMemoryStore() }, { tokens })
  const paid: number[] = []
  registerAskingPay(f.runtime, (cents) => paid.push(cents))
  const request = (path: string, token: string, body?: unknown) =>
    Promise.resolve(f.app.request(path, { method: body === undefined ? 'GET' : 'POST', headers: jsonAuth(token), ...(body === undefined ? {} : { body: JSON.stringify(body) }) }))
  const pending = async () => ((await (await request('/v1/approvals', ADMIN_TOKEN)).json()) as { approvals: Array<{ id: string; arguments: { cents: number } }> }).approvals
  /** Sends a pay call as `token`, waits for its request and has `decider` allow it: what the broker was told. */
  const decidedBy = async (token: string, decider: string, cents: number) => {
    const call = request('/v1/tools/pay/execute', token, { arguments: { cents } })
    await eventually(async () => (await pending()).some((a) => a.arguments.cents === cents))
    const asked = (await pending()).find((a) => a.arguments.cents === cents)!
    const before = deciders.length
    expect((await request(`/v1/approvals/${asked.id}`, decider, { decision: 'allow' })).status).toBe(200)
    expect(((await (await call).json()) as { isError: boolean }).isError).toBe(false)
    expect(deciders.length).toBe(before + 1)
    return deciders.at(-1)
  }
  return { decidedBy, paid }
}

describe('the decider the app passes to the broker', () => {
  it('an unpinned approve token: { role: approve }, no agent key; admin: { role: admin }; pinned: its agent too', async () => {
    const f = fixture()
    const person = await f.decidedBy(AGENT_TOKEN, PERSON_TOKEN, 1)
    expect(person).toStrictEqual({ role: 'approve' })
    expect(Object.hasOwn(person!, 'agent')).toBe(false)
    expect(await f.decidedBy(AGENT_TOKEN, ADMIN_TOKEN, 2)).toStrictEqual({ role: 'admin' })
    expect(await f.decidedBy(ALICE_AGENT, ALICE_PERSON, 3)).toStrictEqual({ role: 'approve', agent: 'alice' })
    expect(f.paid).toEqual([1, 2, 3])
  })
})
