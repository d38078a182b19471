/**
 * One token cannot hold every event stream (stop 55, red team 3, finding 2). `runs.maxStreams`
 * (64) was one count for every reader: a `run` token opened 64 streams of its own waiting run
 * and every other principal got 503 `OVERLOADED`, the person deciding its approvals included,
 * until it let go. Now a reader without `approve` holds at most a quarter (16), and such
 * readers together at most three quarters (48): a person can always open the last quarter.
 */
import { describe, expect, it } from 'vitest'
import { streamShares } from '../../../src/durable/run-table.js'
import { payFixture } from '../../support/pay-fixture.js'
import { AGENT_TOKEN, PERSON_TOKEN, ROLE_TOKENS, errorOf, eventually } from '../http/fixtures.js'

const AGENTS = Array.from({ length: 5 }, (_, i) => ({ token: `run-token-${i}-0123456789abcdef`, roles: ['run'] as const, id: `agent-${i}` }))

function fixture() {
  const f = payFixture({ tokens: [...ROLE_TOKENS, ...AGENTS] })
  const start = async (token: string): Promise<string> => {
    const response = await f.request('/v1/runs', token, { body: { code: 'return await tools.pay({ cents: 1 })', description: 'd' } })
    expect(response.status).toBe(202)
    return ((await response.json()) as { id: string }).id
  }
  const open: Response[] = []
  const stream = async (id: string, token: string): Promise<Response> => {
    const response = await f.request(`/v1/runs/${id}/events`, token, { headers: { Accept: 'text/event-stream' } })
    if (response.status === 200) open.push(response)
    return response
  }
  const close = async () => {
    for (const response of open.splice(0)) await response.body?.cancel()
    for (const approval of await f.pending()) await f.request(`/v1/approvals/${approval.id}`, PERSON_TOKEN, { body: { decision: 'deny' } })
  }
  return { ...f, open, start, stream, close }
}

describe('the shares of runs.maxStreams', () => {
  it('the shares: a quarter per token without approve (at least one), all but a quarter for all of them', () => {
    expect(streamShares(64)).toEqual({ perReader: 16, nonPersons: 48 })
    expect(streamShares(3)).toEqual({ perReader: 1, nonPersons: 3 })
    expect(streamShares(1)).toEqual({ perReader: 1, nonPersons: 1 })
  })

  it('one run token: 16 streams of its waiting run, the 17th 503 OVERLOADED naming its share; another token and the person still stream', async () => {
    const f = fixture()
    const mine = await f.start(AGENT_TOKEN)
    const theirs = await f.start(AGENTS[0]!.token)
    await eventually(async () => (await f.pending()).length === 2)
    for (let i = 0; i < 16; i++) expect((await f.stream(mine, AGENT_TOKEN)).status).toBe(200)
    const refused = await f.stream(mine, AGENT_TOKEN)
    expect(refused.status).toBe(503)
    expect(refused.headers.get('Retry-After')).toBe('1')
    expect(await errorOf(refused)).toEqual({
      code: 'OVERLOADED',
      message: 'this token has 16 event streams open, the most a token without the approve role may (a quarter of runs.maxStreams, 64); close one or retry later',
    })
    // Before: 64 of them, and these two were 503.
    expect((await f.stream(theirs, AGENTS[0]!.token)).status).toBe(200)
    expect((await f.stream(theirs, PERSON_TOKEN)).status).toBe(200)
    // A stream the token closes gives its place back to it.
    await f.open.shift()!.body!.cancel()
    await eventually(async () => (await f.stream(mine, AGENT_TOKEN)).status === 200)
    await f.close()
  }, 60_000)

  it('five run tokens: 48 streams between them, then 503; the person opens the last 16, then the server is full for everyone', async () => {
    const f = fixture()
    const runs = await Promise.all(AGENTS.map((agent) => f.start(agent.token)))
    await eventually(async () => (await f.pending()).length === AGENTS.length)
    let opened = 0
    const refusals: string[] = []
    for (const [i, agent] of AGENTS.entries()) {
      for (let n = 0; n < 16; n++) {
        const response = await f.stream(runs[i]!, agent.token)
        if (response.status === 200) opened++
        else refusals.push(`${response.status} ${(await errorOf(response)).message}`)
      }
    }
    expect(opened).toBe(48)
    expect(new Set(refusals)).toEqual(new Set(['503 tokens without the approve role have 48 event streams open, the most they may together (runs.maxStreams 64 less a quarter kept for people); close one or retry later']))
    for (let n = 0; n < 16; n++) expect((await f.stream(runs[n % AGENTS.length]!, PERSON_TOKEN)).status).toBe(200)
    const full = await f.stream(runs[0]!, PERSON_TOKEN)
    expect(full.status).toBe(503)
    expect((await errorOf(full)).message).toBe('this server has 64 event streams open (runs.maxStreams); close one or retry later')
    await f.close()
  }, 60_000)
})
