/**
 * Principals and roles over HTTP (issue 31 item 1): `createToolsApp({ tokens })`, the
 * role each route needs (403 `FORBIDDEN` before anything is read), a `run` token pinned to
 * an agent, runs that belong to their principal (another's is a 404), and approvals that
 * only `approve` lists and decides. Real app, real registry, real broker.
 */
import { describe, expect, it } from 'vitest'
import { createMemoryStore } from '../../../src/durable/index.js'
import { createToolsApp, sha256 } from '../../../src/http/index.js'
import type { ToolsAppOptions } from '../../../src/http/index.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { payFixture } from '../../support/pay-fixture.js'
import { ADMIN_TOKEN, AGENT_TOKEN, PERSON_TOKEN, ROLE_TOKENS, createFixture, errorOf, eventually, jsonAuth } from './fixtures.js'
import { until } from '../../support/poll.js'
import { createStoreRunRecords } from '../../../src/durable/runs.js'

const auth = (token: string) => ({ Authorization: `Bearer ${token}` })

/** The fixture with the three principals, a broker, and `pay`, which asks a person. */
const rolesFixture = payFixture

async function startRun(f: ReturnType<typeof rolesFixture>, token: string, code = 'return 1'): Promise<{ id: string; callId: string }> {
  const response = await f.request('/v1/runs', token, { body: { code, description: 'd' } })
  expect(response.status).toBe(202)
  return (await response.json()) as { id: string; callId: string }
}

async function settled(f: ReturnType<typeof rolesFixture>, id: string): Promise<Record<string, unknown>> {
  return until(async () => {
    const body = (await (await f.request(`/v1/runs/${id}`, ADMIN_TOKEN)).json()) as Record<string, unknown>
    return body.status !== 'running' && body.status !== 'waiting' && body
  }, `run ${id} to settle`)
}

describe('createToolsApp({ tokens }): validation', () => {
  const { runtime } = createFixture()
  const make = (options: object) => () => createToolsApp(runtime, options as ToolsAppOptions)
  const valid = { token: AGENT_TOKEN, roles: ['run'] }

  it('refuses token together with tokens, and tokens with auth: false', () => {
    expect(make({ token: ADMIN_TOKEN, tokens: [valid] })).toThrow('createToolsApp: give either token (one admin token) or tokens, not both')
    expect(make({ auth: false, tokens: [valid] })).toThrow('createToolsApp: give either tokens or auth: false, not both')
  })

  it('checks every entry and names it by index, never echoing a token', () => {
    const cases: [unknown, string][] = [
      [[], 'tokens must be a non-empty array of at most 64 entries'],
      [Array.from({ length: 65 }, (_, i) => ({ token: `token-${String(i).padStart(12, '0')}`, roles: ['run'] })), 'tokens must be a non-empty array of at most 64 entries'],
      ['x', 'tokens must be a non-empty array of at most 64 entries'],
      [[null], 'tokens[0] must be an object { token, roles, agent?, id? }'],
      [[valid, { ...valid, token: 'short' }], 'tokens[1].token must be 16–4096 printable ASCII characters without spaces'],
      [[{ ...valid, roles: [] }], "tokens[0].roles must be a non-empty array of 'run', 'approve', 'admin'"],
      [[{ ...valid, roles: 'run' }], "tokens[0].roles must be a non-empty array of 'run', 'approve', 'admin'"],
      [[{ ...valid, roles: ['run', 'root'] }], 'tokens[0].roles has an unknown role "root" (known: run, approve, admin)'],
      [[valid, { token: AGENT_TOKEN, roles: ['approve'] }], 'tokens[1].token is the same as tokens[0].token: each token names one principal'],
      [[{ ...valid, agent: '' }], 'tokens[0].agent must be a non-empty string of at most 256 characters'],
      [[{ ...valid, agent: 'a'.repeat(257) }], 'tokens[0].agent must be a non-empty string of at most 256 characters'],
      [[{ ...valid, roles: ['approve'], agent: 'alice' }], 'tokens[0].agent pins a run token to one agent: it needs the run role and cannot be given with admin'],
      [[{ ...valid, roles: ['run', 'admin'], agent: 'alice' }], 'tokens[0].agent pins a run token to one agent: it needs the run role and cannot be given with admin'],
      [[{ ...valid, id: 'a.b' }], 'tokens[0].id must be 1–64 characters of A-Z, a-z, 0-9, _ and -, not starting with "tok-"'],
      [[{ ...valid, id: 'tok-1234' }], 'tokens[0].id must be 1–64 characters of A-Z, a-z, 0-9, _ and -, not starting with "tok-"'],
      [[{ ...valid, id: 'me' }, { token: PERSON_TOKEN, roles: ['approve'], id: 'me' }], 'tokens[1].id "me" is already the id of tokens[0]'],
      [[{ ...valid, role: ['run'] }], 'tokens[0] has an unknown field "role" (expected token, roles, agent, id)'],
    ]
    for (const [tokens, message] of cases) {
      let thrown: unknown
      try {
        make({ tokens })()
      } catch (error) {
        thrown = error
      }
      expect(thrown, message).toMatchObject({ code: 'INVALID_OPTIONS', message: `createToolsApp: ${message}` })
      expect(String((thrown as Error).message)).not.toContain(AGENT_TOKEN)
    }
    expect(make({ tokens: ROLE_TOKENS })).not.toThrow()
  })
})

describe('roles per route', () => {
  it('a run token starts runs and executes, but cannot list or decide approvals (403 FORBIDDEN naming approve)', async () => {
    const f = rolesFixture()
    expect((await f.request('/v1/run', AGENT_TOKEN, { body: { code: 'return 1', description: 'd' } })).status).toBe(200)
    expect((await f.request('/v1/tools/echo/execute', AGENT_TOKEN, { body: { arguments: { text: 'x' } } })).status).toBe(200)
    expect(await errorOf(await f.request('/v1/approvals', AGENT_TOKEN))).toEqual({
      code: 'FORBIDDEN',
      message: 'GET /v1/approvals needs the approve role; this token has run',
    })
    // The role is checked before the body is read: malformed JSON still gets the 403.
    const decided = await f.request('/v1/approvals/some-id', AGENT_TOKEN, { body: '{not json' })
    expect(decided.status).toBe(403)
    expect(await errorOf(decided)).toEqual({ code: 'FORBIDDEN', message: 'POST /v1/approvals/:id needs the approve role; this token has run' })
  })

  it('an approve-only token decides but cannot run (403 naming run); admin does everything', async () => {
    const f = rolesFixture({ tokens: [...ROLE_TOKENS, { token: 'approver-only-0123456789', roles: ['approve'], id: 'approver' }] })
    const approver = 'approver-only-0123456789'
    expect((await f.request('/v1/approvals', approver)).status).toBe(200)
    for (const [path, body] of [
      ['/v1/run', { code: 'return 1', description: 'd' }],
      ['/v1/runs', { code: 'return 1', description: 'd' }],
      ['/v1/tools/echo/execute', { arguments: { text: 'x' } }],
    ] as const) {
      const response = await f.request(path, approver, { body })
      expect(response.status, path).toBe(403)
      expect((await errorOf(response)).message).toMatch(/needs the run role; this token has approve$/)
    }
    expect((await f.request('/v1/approvals', ADMIN_TOKEN)).status).toBe(200)
    expect((await f.request('/v1/run', ADMIN_TOKEN, { body: { code: 'return 1', description: 'd' } })).status).toBe(200)
  })

  it('the metadata routes serve every role; health needs no token; a wrong token is 401', async () => {
    const f = rolesFixture({ tokens: [...ROLE_TOKENS, { token: 'approver-only-0123456789', roles: ['approve'] }] })
    for (const token of [AGENT_TOKEN, PERSON_TOKEN, ADMIN_TOKEN, 'approver-only-0123456789']) {
      for (const path of ['/v1/tools', '/v1/tools/echo', '/v1/sdk', '/v1/prompt', '/v1/catalog/search?q=echo']) {
        expect((await f.request(path, token)).status, `${path} ${token}`).toBe(200)
      }
    }
    expect((await f.app.request('/v1/health')).status).toBe(200)
    expect(await errorOf(await f.request('/v1/tools', 'not-a-token-0123456789'))).toEqual({ code: 'UNAUTHORIZED', message: 'the bearer token is not valid' })
  })

  it('a token pinned to an agent acts as that agent, and asking for another is 403', async () => {
    const f = rolesFixture({ tokens: [{ token: AGENT_TOKEN, roles: ['run'], agent: 'alice' }] })
    const tools = (await (await f.request('/v1/tools', AGENT_TOKEN)).json()) as { agent: string; tools: { name: string }[] }
    expect(tools.agent).toBe('alice')
    expect(tools.tools.map((t) => t.name)).toContain('secret')
    const executed = await f.request('/v1/tools/secret/execute', AGENT_TOKEN, { body: {} })
    expect(((await executed.json()) as { value: unknown }).value).toBe('for alice')
    for (const [path, body] of [
      ['/v1/tools?agent=bob', undefined],
      ['/v1/sdk?agent=bob', undefined],
      ['/v1/tools/echo/execute', { agent: 'bob', arguments: { text: 'x' } }],
      ['/v1/run', { agent: 'bob', code: 'return 1', description: 'd' }],
      ['/v1/runs?agent=bob', { code: 'return 1', description: 'd' }],
    ] as const) {
      const response = await f.request(path, AGENT_TOKEN, body === undefined ? {} : { body })
      expect(await errorOf(response), path).toEqual({ code: 'FORBIDDEN', message: 'this token acts for agent "alice" only, not "bob"' })
    }
    expect(f.results.map((r) => r.agent)).toEqual(['alice'])
  })
})

describe('runs belong to their principal', () => {
  it('records the principal; another run token gets the same 404 as for a run that never existed', async () => {
    const f = rolesFixture({ tokens: [...ROLE_TOKENS, { token: 'second-agent-0123456789', roles: ['run'] }] })
    const other = 'second-agent-0123456789'
    const { id } = await startRun(f, AGENT_TOKEN)
    const own = (await (await f.request(`/v1/runs/${id}`, AGENT_TOKEN)).json()) as Record<string, unknown>
    expect(own.principal).toBe('agent')
    await settled(f, id)
    const unknown = crypto.randomUUID()
    const never = await errorOf(await f.request(`/v1/runs/${unknown}`, other))
    for (const [method, path] of [
      ['GET', `/v1/runs/${id}`],
      ['GET', `/v1/runs/${id}/events`],
      ['DELETE', `/v1/runs/${id}`],
    ] as const) {
      const response = await f.request(path, other, { method })
      expect(response.status, `${method} ${path}`).toBe(404)
      expect(await errorOf(response)).toEqual({ code: 'RUN_NOT_FOUND', message: never.message.replace(unknown, id) })
    }
    // A default principal id is a hash prefix of its token, never the token.
    const second = await startRun(f, other)
    const digest = [...(await sha256(other))].map((b) => b.toString(16).padStart(2, '0')).join('')
    expect(((await (await f.request(`/v1/runs/${second.id}`, other)).json()) as { principal: string }).principal).toBe(`tok-${digest.slice(0, 16)}`)
    await settled(f, second.id)
    // Nothing the store keeps carries a token.
    for (const entry of (await f.store.list('')).entries) {
      const value = (await f.store.get(entry.key))?.value ?? ''
      for (const token of [AGENT_TOKEN, PERSON_TOKEN, ADMIN_TOKEN, other]) expect(value).not.toContain(token)
    }
  })

  it('approve reads the runs that asked a person (not cancel: 403), not the others (404); admin reads and cancels any; the starter cancels its own', async () => {
    const f = rolesFixture()
    f.wait.reset()
    const quiet = await startRun(f, AGENT_TOKEN, 'await tools.wait({}); return 1')
    await f.wait.started
    // It never asked: to the person it does not exist; the operator reads and cancels it.
    expect((await errorOf(await f.request(`/v1/runs/${quiet.id}`, PERSON_TOKEN))).code).toBe('RUN_NOT_FOUND')
    expect((await f.request(`/v1/runs/${quiet.id}/events`, PERSON_TOKEN)).status).toBe(404)
    expect((await f.request(`/v1/runs/${quiet.id}`, ADMIN_TOKEN)).status).toBe(200)
    const cancelled = await f.request(`/v1/runs/${quiet.id}`, ADMIN_TOKEN, { method: 'DELETE' })
    expect(((await cancelled.json()) as { status: string }).status).toBe('cancelled')
    // One that asks: the person reads it while it waits and after the decision, but cannot cancel it.
    const asking = await startRun(f, AGENT_TOKEN, 'return await tools.pay({ cents: 3 })')
    await eventually(async () => (await f.pending()).length === 1)
    expect(((await (await f.request(`/v1/runs/${asking.id}`, PERSON_TOKEN)).json()) as { status: string }).status).toBe('waiting')
    expect(await errorOf(await f.request(`/v1/runs/${asking.id}`, PERSON_TOKEN, { method: 'DELETE' }))).toEqual({
      code: 'FORBIDDEN',
      message: 'cancelling a run another principal started needs the admin role',
    })
    const [request] = await f.pending()
    await f.request(`/v1/approvals/${request!.id}`, PERSON_TOKEN, { body: { decision: 'allow' } })
    expect(await settled(f, asking.id)).toMatchObject({ status: 'done' })
    await eventually(async () => ((await createStoreRunRecords(f.store).get(asking.id)) ?? {}).status === 'done')
    expect(await createStoreRunRecords(f.store).get(asking.id)).toMatchObject({ principal: 'agent', asked: true })
    expect(((await (await f.request(`/v1/runs/${asking.id}`, PERSON_TOKEN)).json()) as { status: string }).status).toBe('done')
    // The stored record says it asked: another app on the store lets the person read it too.
    const other = createToolsApp(f.runtime, { tokens: ROLE_TOKENS })
    expect((await other.request(`/v1/runs/${asking.id}`, { headers: auth(PERSON_TOKEN) })).status).toBe(200)
    expect((await other.request(`/v1/runs/${quiet.id}`, { headers: auth(PERSON_TOKEN) })).status).toBe(404)
    f.wait.reset()
    const mine = await startRun(f, AGENT_TOKEN, 'await tools.wait({}); return 1')
    await f.wait.started
    expect(((await (await f.request(`/v1/runs/${mine.id}`, AGENT_TOKEN, { method: 'DELETE' })).json()) as { status: string }).status).toBe('cancelled')
  })

  it("an approval names the principal of the run that asked; a run token sees its run's request only in its own run", async () => {
    const f = rolesFixture()
    const { id, callId } = await startRun(f, AGENT_TOKEN, 'return await tools.pay({ cents: 7 })')
    await eventually(async () => (await f.pending()).length === 1)
    const [approval] = await f.pending()
    expect(approval).toMatchObject({ parentCallId: callId, name: 'pay', principal: 'agent' })
    const run = (await (await f.request(`/v1/runs/${id}`, AGENT_TOKEN)).json()) as { status: string; approvals: { id: string }[] }
    expect(run.status).toBe('waiting')
    expect(run.approvals.map((a) => a.id)).toEqual([approval!.id])
    // The agent knows the id, and still cannot decide it.
    expect((await f.request(`/v1/approvals/${approval!.id}`, AGENT_TOKEN, { body: { decision: 'allow' } })).status).toBe(403)
    expect(f.paid).toEqual([])
    expect((await f.request(`/v1/approvals/${approval!.id}`, PERSON_TOKEN, { body: { decision: 'allow' } })).status).toBe(200)
    expect(await settled(f, id)).toMatchObject({ status: 'done', principal: 'agent' })
    expect(f.paid).toEqual([7])
  })
})

describe('the token shorthand and auth: false', () => {
  it('token alone is one admin principal, "admin"; auth: false acts as admin, "anonymous"', async () => {
    const shorthand = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime({ wallMs: 30_000 }), store: createMemoryStore() })
    const response = await shorthand.app.request('/v1/runs', { method: 'POST', headers: jsonAuth('test-token-0123456789abcdef'), body: JSON.stringify({ code: 'return 1', description: 'd' }) })
    const { id } = (await response.json()) as { id: string }
    expect(((await (await shorthand.app.request(`/v1/runs/${id}`, { headers: auth('test-token-0123456789abcdef') })).json()) as { principal: string }).principal).toBe('admin')
    const open = createToolsApp(shorthand.runtime, { auth: false })
    const executed = await open.request('/v1/tools/echo/execute', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ callId: 'c', arguments: { text: 'x' } }) })
    expect(executed.headers.get('X-Toolyard-Call-Id')).toBe('client.anonymous.c')
  })

  it('unauthorizedHint is appended to every 401, and must be a short string', async () => {
    const f = rolesFixture({ unauthorizedHint: 'the server prints its tokens at start-up' })
    expect(await errorOf(await f.app.request('/v1/tools'))).toEqual({ code: 'UNAUTHORIZED', message: 'a bearer token is required; the server prints its tokens at start-up' })
    expect((await errorOf(await f.request('/v1/tools', 'wrong-token-0123456789'))).message).toBe('the bearer token is not valid; the server prints its tokens at start-up')
    for (const unauthorizedHint of ['', 'x'.repeat(501), 5]) {
      expect(() => createToolsApp(f.runtime, { token: ADMIN_TOKEN, unauthorizedHint } as never)).toThrow('unauthorizedHint must be a non-empty string of at most 500 characters')
    }
  })
})
