/**
 * One Allow runs one call (stop 53, red team finding 1). A client of the HTTP API chooses
 * its direct call's `callId` (`client.<principal>.<id>`) and may send it again: before the
 * fix, the same id with the same arguments was "the same call asked again", so a settled
 * Allow answered every repeat for `retainSettledMs` (one Allow, four payments), and two
 * concurrent repeats shared one request (one Allow, two payments). A call with a principal
 * and no run is now asked on its own every time; a run's sub-calls still re-attach after a
 * restart (test/unit/approvals/principal-resume, test/unit/durable/approvals-file-store).
 */
import { describe, expect, it } from 'vitest'
import { payFixture } from '../../support/pay-fixture.js'
import { AGENT_TOKEN, PERSON_TOKEN, eventually } from '../http/fixtures.js'

const PAY = { arguments: { cents: 100 }, callId: 'invoice-7' }

async function decide(f: ReturnType<typeof payFixture>, id: string, decision: 'allow' | 'deny'): Promise<void> {
  expect((await f.request(`/v1/approvals/${id}`, PERSON_TOKEN, { body: { decision } })).status).toBe(200)
}

describe('a client repeating its call id gets no decision it was not given', () => {
  it('allowed once, the same callId and arguments sent again: each repeat asks a person anew, and nothing runs meanwhile', async () => {
    const f = payFixture()
    const first = f.request('/v1/tools/pay/execute', AGENT_TOKEN, { body: PAY })
    await eventually(async () => (await f.pending()).length === 1)
    const [allowed] = await f.pending()
    await decide(f, allowed!.id, 'allow')
    expect(((await (await first).json()) as { isError: boolean }).isError).toBe(false)
    expect(f.paid).toEqual([100])
    const seen = new Set([allowed!.id])
    for (let repeat = 0; repeat < 3; repeat++) {
      const again = f.request('/v1/tools/pay/execute', AGENT_TOKEN, { body: PAY })
      await eventually(async () => (await f.pending()).length === 1)
      const [asked] = await f.pending()
      // A new request: a person sees it, under a new id; the earlier Allow is not replayed.
      expect(asked).toMatchObject({ callId: 'client.agent.invoice-7', arguments: { cents: 100 }, principal: 'agent' })
      expect(seen.has(asked!.id)).toBe(false)
      seen.add(asked!.id)
      expect(f.paid).toEqual([100])
      await decide(f, asked!.id, 'deny')
      const answer = (await (await again).json()) as { isError: boolean; error?: { info?: { code?: string } } }
      expect([answer.isError, answer.error?.info?.code]).toEqual([true, 'DENIED_BY_APPROVAL'])
    }
    expect(f.paid).toEqual([100])
  })

  it('the same callId and arguments sent twice at once: two requests, each decided on its own (one Allow runs one call)', async () => {
    const f = payFixture()
    const calls = [f.request('/v1/tools/pay/execute', AGENT_TOKEN, { body: PAY }), f.request('/v1/tools/pay/execute', AGENT_TOKEN, { body: PAY })]
    await eventually(async () => (await f.pending()).length === 2)
    const [one, two] = await f.pending()
    expect(one!.id).not.toBe(two!.id)
    await decide(f, one!.id, 'allow')
    await eventually(async () => f.paid.length === 1)
    expect(await f.pending()).toEqual([two])
    await decide(f, two!.id, 'deny')
    const answers = (await Promise.all(calls.map(async (call) => ((await (await call).json()) as { isError: boolean }).isError))).sort()
    expect(answers).toEqual([false, true])
    expect(f.paid).toEqual([100])
  })
})
