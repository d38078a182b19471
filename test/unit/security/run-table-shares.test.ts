/**
 * One token cannot fill the run table (stop 55, red team 3, finding 4). `runs.maxRuns` (256)
 * counted every principal's running runs together: one `run` token's runs waiting for a person
 * (parked: no thread, no slot; 200 may wait per principal) plus a few sleeping ones filled it,
 * and every other principal's `POST /v1/runs` was 503 until they ended. Now one principal may
 * have at most `maxRuns` less a quarter running; a run adopted after a restart is never refused.
 */
import { describe, expect, it } from 'vitest'
import { liveShare } from '../../../src/durable/run-table.js'
import { payFixture } from '../../support/pay-fixture.js'
import { AGENT_TOKEN, PERSON_TOKEN, ROLE_TOKENS, errorOf, eventually } from '../http/fixtures.js'

const OTHER = 'second-agent-token-0123456789'

describe("a principal's share of the run table", () => {
  it('the share: maxRuns less a quarter, at least one', () => {
    expect([1, 2, 3, 4, 8, 256].map(liveShare)).toEqual([1, 2, 3, 3, 6, 192])
  })

  it('runs.maxRuns 8: one token starts 6 runs that wait for a person, its 7th is 503 naming its share; another token and the person still start runs', async () => {
    const f = payFixture({ tokens: [...ROLE_TOKENS, { token: OTHER, roles: ['run'], id: 'other' }], runs: { maxRuns: 8 } })
    const start = (token: string, cents: number) => f.request('/v1/runs', token, { body: { code: `return await tools.pay({ cents: ${cents} })`, description: 'd' } })
    for (let i = 0; i < 6; i++) expect((await start(AGENT_TOKEN, i)).status).toBe(202)
    await eventually(async () => (await f.pending()).length === 6)
    const refused = await start(AGENT_TOKEN, 6)
    expect(refused.status).toBe(503)
    expect(refused.headers.get('Retry-After')).toBe('1')
    expect(await errorOf(refused)).toEqual({ code: 'OVERLOADED', message: 'this token has 6 runs running, the most one token may (runs.maxRuns 8 less a quarter left to the others); retry once some end' })
    // Before: the agent's 7th and 8th were admitted, and these two were 503 ("the run table is full of running runs").
    expect((await start(OTHER, 100)).status).toBe(202)
    expect((await start(PERSON_TOKEN, 200)).status).toBe(202)
    await eventually(async () => (await f.pending()).length === 8)
    // A run that ends gives its place back to its token.
    const [first] = (await f.pending()).filter((approval) => approval.principal === 'agent')
    await f.request(`/v1/approvals/${first!.id}`, PERSON_TOKEN, { body: { decision: 'allow' } })
    await eventually(async () => (await start(AGENT_TOKEN, 7)).status === 202)
    for (const approval of await f.pending()) await f.request(`/v1/approvals/${approval.id}`, PERSON_TOKEN, { body: { decision: 'deny' } })
  }, 60_000)
})
