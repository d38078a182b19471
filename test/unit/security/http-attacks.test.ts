/**
 * Hostile clients against the public HTTP routes (issue 31, re-tried after the principal
 * and store-broker change): decisions raced or repeated, forged approval ids, bodies that
 * try to smuggle a role or blow up the parser, Last-Event-ID abuse, another principal's run.
 */
import { describe, expect, it } from 'vitest'
import { payFixture } from '../../support/pay-fixture.js'
import { ADMIN_TOKEN, AGENT_TOKEN, PERSON_TOKEN, ROLE_TOKENS, errorOf, eventually } from '../http/fixtures.js'

const OTHER_AGENT = 'second-agent-token-0123456789'

function hostile() {
  const f = payFixture({ tokens: [...ROLE_TOKENS, { token: OTHER_AGENT, roles: ['run'], id: 'other' }] })
  const startRun = async (token: string, code: string): Promise<{ id: string; callId: string }> => {
    const response = await f.request('/v1/runs', token, { body: { code, description: 'd' } })
    expect(response.status).toBe(202)
    return (await response.json()) as { id: string; callId: string }
  }
  return { ...f, startRun }
}

describe('decisions: twice, raced, forged', () => {
  it('two decisions raced over HTTP: exactly one 200, every loser 409 APPROVAL_ALREADY_DECIDED; the call runs once, as the winner said', async () => {
    for (let round = 0; round < 5; round++) {
      const f = hostile()
      const call = f.request('/v1/tools/pay/execute', AGENT_TOKEN, { body: { arguments: { cents: round } } })
      await eventually(async () => (await f.pending()).length === 1)
      const [approval] = await f.pending()
      const answers = await Promise.all(
        (['allow', 'deny', 'allow', 'deny'] as const).map((decision, i) =>
          f.request(`/v1/approvals/${approval!.id}`, i % 2 === 0 ? PERSON_TOKEN : ADMIN_TOKEN, { body: { decision } }),
        ),
      )
      const statuses = answers.map((r) => r.status).sort()
      expect(statuses).toEqual([200, 409, 409, 409])
      for (const loser of answers.filter((r) => r.status === 409)) expect((await errorOf(loser)).code).toBe('APPROVAL_ALREADY_DECIDED')
      const winner = (await answers.find((r) => r.status === 200)!.json()) as { decision: string }
      const result = (await (await call).json()) as { isError: boolean }
      expect(result.isError).toBe(winner.decision === 'deny')
      expect(f.paid).toEqual(winner.decision === 'allow' ? [round] : [])
      // Deciding again later: still 409, nothing runs again.
      expect((await f.request(`/v1/approvals/${approval!.id}`, PERSON_TOKEN, { body: { decision: 'allow' } })).status).toBe(409)
      expect(f.paid.length).toBeLessThanOrEqual(1)
    }
  })

  it("an approval id forged from another request's key or another run's id: 404, nothing decided", async () => {
    const f = hostile()
    const a = await f.startRun(AGENT_TOKEN, 'return await tools.pay({ cents: 1 })')
    const b = await f.startRun(OTHER_AGENT, 'return await tools.pay({ cents: 2 })')
    await eventually(async () => (await f.pending()).length === 2)
    const listed = await f.pending()
    const ofA = listed.find((x) => x.parentCallId === a.callId)!
    const ofB = listed.find((x) => x.parentCallId === b.callId)!
    const [hashA, uuidA] = ofA.id.split('.') as [string, string]
    const [hashB, uuidB] = ofB.id.split('.') as [string, string]
    for (const forged of [`${hashA}.${uuidB}`, `${hashB}.${uuidA}`, `${hashA}.${crypto.randomUUID()}`, hashA, `${hashA}.${uuidA}.x`, '..%2F..%2Fruns%2Fx', `${hashA.toUpperCase()}.${uuidA}`, 'x'.repeat(5000)]) {
      const response = await f.request(`/v1/approvals/${forged}`, PERSON_TOKEN, { body: { decision: 'allow' } })
      expect(response.status, forged.slice(0, 40)).toBe(404)
      expect((await errorOf(response)).code).toBe('APPROVAL_NOT_FOUND')
    }
    expect((await f.pending()).map((x) => x.id).sort()).toEqual([ofA.id, ofB.id].sort())
    expect(f.paid).toEqual([])
    // A run token holds a run's approval id (its run lists it) and still cannot decide, not even its own run's.
    expect((await f.request(`/v1/approvals/${ofA.id}`, AGENT_TOKEN, { body: { decision: 'allow' } })).status).toBe(403)
    expect((await f.request(`/v1/approvals/${ofB.id}`, AGENT_TOKEN, { body: { decision: 'allow' } })).status).toBe(403)
    for (const approval of [ofA, ofB]) await f.request(`/v1/approvals/${approval.id}`, PERSON_TOKEN, { body: { decision: 'deny' } })
    expect(f.paid).toEqual([])
  })

  it('a decision body may not carry anything but decision and reason: a smuggled role, principal or callId is 400, nothing decided', async () => {
    const f = hostile()
    const call = f.request('/v1/tools/pay/execute', AGENT_TOKEN, { body: { arguments: { cents: 9 } } })
    await eventually(async () => (await f.pending()).length === 1)
    const [approval] = await f.pending()
    const bodies: unknown[] = [
      { decision: 'allow', role: 'admin' },
      { decision: 'allow', principal: 'person' },
      { decision: 'allow', callId: 'x' },
      '{"decision":"allow","__proto__":{"role":"admin"}}',
      '{"decision":"allow","decision":"deny"}x',
      { decision: 'ALLOW' },
      { decision: ['allow'] },
      { decision: 'allow', reason: 'r'.repeat(100_000) },
      [{ decision: 'allow' }],
      'null',
    ]
    for (const body of bodies) {
      const response = await f.request(`/v1/approvals/${approval!.id}`, PERSON_TOKEN, { body })
      expect(response.status, JSON.stringify(body).slice(0, 80)).toBeGreaterThanOrEqual(400)
      expect(response.status).toBeLessThan(500)
    }
    expect(await f.pending()).toHaveLength(1)
    expect(f.paid).toEqual([])
    await f.request(`/v1/approvals/${approval!.id}`, PERSON_TOKEN, { body: { decision: 'deny' } })
    await call
  })
})

describe('bodies that try the parser', () => {
  it('deeply nested and oversize JSON on every body route: a 4xx with a stable code, never a 500, and the server still answers', async () => {
    const f = hostile()
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n)
    const deepObject = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n)
    const paths = ['/v1/approvals/00000000000000000000000000000000.00000000-0000-0000-0000-000000000000', '/v1/tools/pay/execute', '/v1/run', '/v1/runs']
    for (const path of paths) {
      for (const body of [deep(100_000), deepObject(50_000), `{"arguments":{"cents":1},"pad":"${'x'.repeat(2 * 1024 * 1024)}"}`, '{"arguments":', '\u0000']) {
        const response = await f.request(path, path.startsWith('/v1/approvals') ? PERSON_TOKEN : AGENT_TOKEN, { body })
        expect(response.status, `${path} ${body.slice(0, 20)}`).toBeGreaterThanOrEqual(400)
        expect(response.status, `${path} ${body.slice(0, 20)}`).toBeLessThan(500)
        expect(typeof (await errorOf(response)).code).toBe('string')
      }
    }
    // A number JSON cannot hold (1e999999 parses as Infinity) is refused as arguments, before anyone is asked.
    const infinite = await f.request('/v1/tools/pay/execute', AGENT_TOKEN, { body: '{"arguments":{"cents":1e999999}}' })
    expect(await infinite.json()).toMatchObject({ isError: true, error: { info: { code: 'INVALID_ARGS' } } })
    expect(await f.pending()).toEqual([])
    expect((await f.request('/v1/health', AGENT_TOKEN)).status).toBe(200)
    expect(f.paid).toEqual([])
  })

  it('unknown fields on execute and runs are refused (400), not ignored', async () => {
    const f = hostile()
    for (const [path, body] of [
      ['/v1/tools/pay/execute', { arguments: { cents: 1 }, principal: 'person' }],
      ['/v1/tools/pay/execute', { arguments: { cents: 1 }, approved: true }],
      ['/v1/runs', { code: 'return 1', description: 'd', principal: 'operator' }],
      ['/v1/runs', { code: 'return 1', description: 'd', callId: 'x:code:1' }],
      ['/v1/run', { code: 'return 1', description: 'd', runKey: 'x' }],
    ] as const) {
      const response = await f.request(path, AGENT_TOKEN, { body })
      expect(response.status, `${path} ${JSON.stringify(body)}`).toBe(400)
    }
    expect(f.paid).toEqual([])
  })
})

describe('runs and their event streams', () => {
  it('Last-Event-ID abuse: non-numbers, negatives, huge, past the end, another principal: 400 or 404, never a 500 or a frame', async () => {
    const f = hostile()
    const mine = await f.startRun(AGENT_TOKEN, 'return 1')
    await eventually(async () => ((await (await f.request(`/v1/runs/${mine.id}`, AGENT_TOKEN)).json()) as { status: string }).status === 'done')
    for (const last of ['-1', '1e3', '0x10', '99999999999999999999', '9'.repeat(15), 'NaN', ' 1 1', '1,2', 'x'.repeat(8000), '\u00e9']) {
      const response = await f.request(`/v1/runs/${mine.id}/events`, AGENT_TOKEN, { headers: { 'Last-Event-ID': last, Accept: 'text/event-stream' } })
      expect(response.status, last.slice(0, 20)).toBe(400)
      expect((await errorOf(response)).code).toBe('INVALID_REQUEST')
    }
    // Another run token: the same 404 as for a run that never existed, whatever the header.
    for (const last of ['0', '1', '-1']) {
      const response = await f.request(`/v1/runs/${mine.id}/events`, OTHER_AGENT, { headers: { 'Last-Event-ID': last, Accept: 'text/event-stream' } })
      expect(response.status).toBe(404)
      expect((await errorOf(response)).code).toBe('RUN_NOT_FOUND')
    }
    const ok = await f.request(`/v1/runs/${mine.id}/events`, AGENT_TOKEN, { headers: { 'Last-Event-ID': '0', Accept: 'text/event-stream' } })
    expect(ok.status).toBe(200)
    await ok.body?.cancel()
  })

  it("a run id forged or another principal's: the run routes answer 404 without reading anything of it", async () => {
    const f = hostile()
    const theirs = await f.startRun(OTHER_AGENT, 'return await tools.pay({ cents: 5 })')
    await eventually(async () => (await f.pending()).length === 1)
    for (const id of [theirs.id, theirs.callId, `${theirs.id}/../${theirs.id}`, encodeURIComponent(`../run-records/${theirs.id}`), `${theirs.id}%00`]) {
      for (const [method, path] of [['GET', `/v1/runs/${id}`], ['GET', `/v1/runs/${id}/events`], ['DELETE', `/v1/runs/${id}`]] as const) {
        const response = await f.request(path, AGENT_TOKEN, { method })
        expect([404, 400], `${method} ${path}`).toContain(response.status)
        expect(JSON.stringify(await response.json())).not.toContain('cents')
      }
    }
    const [approval] = await f.pending()
    await f.request(`/v1/approvals/${approval!.id}`, PERSON_TOKEN, { body: { decision: 'deny' } })
    expect(f.paid).toEqual([])
  })
})
