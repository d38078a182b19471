/**
 * Run identity belongs to the server (issue 19, finding 9): `/v1/tools/run_code/execute`
 * used to accept any `callId`, and a live run's id is visible in `GET /v1/approvals`
 * (`parentCallId`): reusing it put another client's sub-calls and approval requests into
 * the victim's event stream as its own.
 */
import { describe, expect, it } from 'vitest'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { PendingApproval } from '../../../src/approvals/index.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { AUTH, JSON_AUTH, askingPayFixture, createFixture, errorOf, sseFrames } from './fixtures.js'
import { until } from '../../support/poll.js'

const identityFixture = askingPayFixture

async function pending(app: ReturnType<typeof identityFixture>['app']): Promise<PendingApproval[]> {
  return ((await (await app.request('/v1/approvals', { headers: AUTH })).json()) as { approvals: PendingApproval[] }).approvals
}

const post = (body: unknown) => ({ method: 'POST', headers: JSON_AUTH, body: JSON.stringify(body) })

describe('a client cannot take over another client\'s run', () => {
  it('refuses a client-chosen id for run_code on every route; the victim\'s stream carries only its own sub-calls', async () => {
    const fixture = identityFixture()
    const { app, broker } = fixture
    const victim = await app.request('/v1/run', {
      method: 'POST',
      headers: { ...JSON_AUTH, Accept: 'text/event-stream' },
      body: JSON.stringify({ code: 'return await tools.pay({ cents: 1 })', description: 'victim pays 1' }),
    })
    const frames = sseFrames(victim)
    const victimId = ((await frames.until('start')).data as { callId: string }).callId
    await frames.until('approval')
    // The attacker reads the victim's run id where every client can see it.
    const [request] = await pending(app)
    expect(request!.parentCallId).toBe(victimId)

    // 1. Reusing it through the direct route is refused before anything runs.
    const takeover = await app.request('/v1/tools/run_code/execute', post({ callId: victimId, arguments: { code: 'return await tools.pay({ cents: 999 })', description: 'attacker' } }))
    expect(takeover.status).toBe(400)
    expect(await errorOf(takeover)).toEqual({ code: 'INVALID_REQUEST', message: 'callId is assigned by the server for runs (see the X-Toolyard-Call-Id header)' })
    // Any other client id too: ids of runs are the server's alone.
    expect((await app.request('/v1/tools/run_code/execute', post({ callId: 'mine', arguments: { code: 'return 1', description: 'd' } }))).status).toBe(400)

    // 2. A run started without an id gets a fresh one, and its sub-calls stay out of the victim's stream.
    const attackerRun = app.request('/v1/tools/run_code/execute', post({ arguments: { code: 'return await tools.pay({ cents: 999 })', description: 'attacker' } }))
    // Bounded: a run that never asks fails here within 20 s, with what was pending, not at the test's timeout.
    let seen = 0
    const open = await until(async () => {
      const list = await pending(app)
      seen = list.length
      return list.length === 2 && list
    }, () => `the attacker's run to ask: ${seen} pending, not 2`)
    const theirs = open.find((a) => a.parentCallId !== victimId)!
    expect(theirs.parentCallId).toMatch(/^http-run-[0-9a-f-]{36}$/)
    expect((await broker.decide(theirs.id, { decision: 'deny', reason: 'no' })).ok).toBe(true)
    const attacked = await attackerRun
    expect(attacked.headers.get('X-Toolyard-Call-Id')).toMatch(/^http-run-/)
    expect(attacked.headers.get('X-Toolyard-Call-Id')).not.toBe(victimId)

    // 3. An MCP tools/call of run_code gets a server id as well.
    const mcp = app.request('/mcp', {
      method: 'POST',
      headers: { ...JSON_AUTH, Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'run_code', arguments: { code: 'return await tools.pay({ cents: 7 })', description: 'mcp' } } }),
    })
    expect((await mcp).status).toBe(200)
    // (An MCP client without elicitation cannot be asked: its pay is denied, not put to the broker.)
    const mcpRun = fixture.results.filter((r) => r.name === 'run_code').at(-1)!
    expect(mcpRun.callId).toMatch(/^mcp-[0-9a-f-]{36}$/)

    expect((await broker.decide(request!.id, { decision: 'allow' })).ok).toBe(true)
    const all = await frames.rest()
    const approvals = all.filter((f) => f.event === 'approval' || f.event === 'dispatch-start')
    // Exactly the victim's own: one approval, one sub-call start, all under its id.
    expect(approvals.map((f) => (f.data as { parentCallId: string }).parentCallId)).toEqual([victimId, victimId])
    expect(all.filter((f) => f.event === 'dispatch-start').map((f) => (f.data as { arguments: unknown }).arguments)).toEqual([{ cents: 1 }])
    expect(all.at(-1)!.event).toBe('result')
  })
})

describe('unknown top-level body fields are refused, naming the field and the expected ones (issue 23)', () => {
  it('POST /v1/tools/:name/execute: `args` for `arguments`', async () => {
    const { app } = createFixture()
    const response = await app.request('/v1/tools/echo/execute', post({ args: { text: 'x' } }))
    expect(response.status).toBe(400)
    expect(await errorOf(response)).toEqual({
      code: 'INVALID_REQUEST',
      message: 'unknown field "args" in the request body (did you mean "arguments"? expected: arguments, callId, agent)',
    })
    // Nothing ran.
    expect((await app.request('/v1/tools/echo/execute', post({ arguments: { text: 'x' }, agnet: 'alice' }))).status).toBe(400)
    const far = await errorOf(await app.request('/v1/tools/echo/execute', post({ arguments: { text: 'x' }, zzzzzz: 1 })))
    expect(far.message).toBe('unknown field "zzzzzz" in the request body (expected: arguments, callId, agent)')
    const long = await errorOf(await app.request('/v1/tools/echo/execute', post({ ['k'.repeat(5000)]: 1 })))
    expect(long.message.length).toBeLessThan(300)
    expect(long.message).toContain('(5000 characters)')
  })

  it('POST /v1/run: `source` for `code`, `callid`', async () => {
    const { app } = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() })
    expect(await errorOf(await app.request('/v1/run', post({ source: 'return 1', description: 'd' })))).toEqual({
      code: 'INVALID_REQUEST',
      message: 'unknown field "source" in the request body (expected: code, description, agent, language)',
    })
    expect((await errorOf(await app.request('/v1/run', post({ code: 'return 1', descripton: 'd' })))).message).toBe(
      'unknown field "descripton" in the request body (did you mean "description"? expected: code, description, agent, language)',
    )
    const ok = await app.request('/v1/run', post({ code: 'return 1', description: 'd' }))
    expect(ok.status).toBe(200)
  })

  it('POST /v1/approvals/:id names the unknown field too', async () => {
    const broker = createApprovalBroker()
    const { app } = createFixture({ approvals: broker })
    expect(await errorOf(await app.request('/v1/approvals/x', post({ decison: 'allow' })))).toEqual({
      code: 'INVALID_DECISION',
      message: 'unknown field "decison" (allowed: decision, reason)',
    })
    broker.dispose()
  })
})
