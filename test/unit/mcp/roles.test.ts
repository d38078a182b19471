/**
 * The MCP endpoint's tokens (issue 31 item 1): `createMcpApp({ tokens })` takes the HTTP
 * API's tokens, checked by the same function; every request needs `run`; a token pinned
 * to an agent is served that agent only; and a client is asked to decide its own calls
 * only when its token has `approve` — a `run` token's asks go to the runtime's handler
 * (the broker a person answers over HTTP). Raw JSON-RPC over `app.request`.
 */
import { describe, expect, it } from 'vitest'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { PendingApproval } from '../../../src/approvals/index.js'
import { createToolsApp } from '../../../src/http/index.js'
import { createMcpApp } from '../../../src/mcp/index.js'
import type { McpAppOptions } from '../../../src/mcp/index.js'
import { createToolRuntime, defineTool } from '../../../src/index.js'
import { ADMIN_TOKEN, AGENT_TOKEN, PERSON_TOKEN, ROLE_TOKENS, errorOf, eventually, jsonAuth } from '../http/fixtures.js'
import { payTool } from '../../support/pay-fixture.js'

function setup(options: Partial<McpAppOptions> = {}) {
  const broker = createApprovalBroker()
  const runtime = createToolRuntime({ approvals: broker })
  const paid: number[] = []
  runtime.register(payTool((cents) => paid.push(cents)))
  runtime.agent('alice').register(defineTool({ name: 'secret', description: 'alice only', parameters: {}, output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] }, execute: () => 'for alice' }))
  runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
  const app = createToolsApp(runtime, { tokens: ROLE_TOKENS })
  app.route('/mcp', createMcpApp(runtime, { tokens: ROLE_TOKENS, ...options } as McpAppOptions))
  const rpc = (token: string, method: string, params: unknown = {}, path = '/mcp') =>
    Promise.resolve(app.request(path, { method: 'POST', headers: { ...jsonAuth(token), Accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) }))
  return { app, runtime, broker, paid, rpc }
}

describe('createMcpApp({ tokens })', () => {
  it('validates tokens with the HTTP API\'s rules and messages, named for the MCP factory', () => {
    const runtime = createToolRuntime()
    expect(() => createMcpApp(runtime, { token: ADMIN_TOKEN, tokens: ROLE_TOKENS })).toThrow('createMcpApp: give either token (one admin token) or tokens, not both')
    expect(() => createMcpApp(runtime, { tokens: [{ token: AGENT_TOKEN, roles: ['sudo' as never] }] })).toThrow('createMcpApp: tokens[0].roles has an unknown role "sudo" (known: run, approve, admin)')
    expect(() => createMcpApp(runtime, { tokens: [{ token: AGENT_TOKEN, roles: ['run'] }, { token: AGENT_TOKEN, roles: ['approve'] }] })).toThrow(
      'createMcpApp: tokens[1].token is the same as tokens[0].token: each token names one principal',
    )
  })

  it('every request needs run: an approve-only token is refused before the body is read', async () => {
    const { app, rpc } = setup()
    app.route('/mcp-approver', createMcpApp(createToolRuntime(), { tokens: [{ token: 'approver-only-0123456789', roles: ['approve'] }] }))
    const refused = await Promise.resolve(app.request('/mcp-approver', { method: 'POST', headers: jsonAuth('approver-only-0123456789'), body: '{not json' }))
    expect(await errorOf(refused)).toEqual({ code: 'FORBIDDEN', message: 'POST /mcp-approver needs the run role; this token has approve' })
    expect((await rpc(AGENT_TOKEN, 'ping')).status).toBe(200)
    expect((await rpc('wrong-token-0123456789', 'ping')).status).toBe(401)
  })

  it('a token pinned to an agent is served that agent; asking for another is 403', async () => {
    const pinned = [{ token: AGENT_TOKEN, roles: ['run'], agent: 'alice' }] as const
    const runtime = createToolRuntime()
    runtime.agent('alice').register(defineTool({ name: 'secret', description: 'alice only', parameters: {}, output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] }, execute: () => 'for alice' }))
    const byQuery = createMcpApp(runtime, { tokens: pinned, agent: (request) => new URL(request.url).searchParams.get('agent') ?? undefined })
    const call = (path: string) => Promise.resolve(byQuery.request(path, { method: 'POST', headers: jsonAuth(AGENT_TOKEN), body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) }))
    const listed = (await (await call('/')).json()) as { result: { tools: { name: string }[] } }
    expect(listed.result.tools.map((t) => t.name)).toContain('secret')
    expect(await errorOf(await call('/?agent=bob'))).toEqual({ code: 'FORBIDDEN', message: 'this token acts for agent "alice" only, not "bob"' })
    expect((await call('/?agent=alice')).status).toBe(200)
  })

  it("a run token's ask goes to the runtime's handler (a person decides over HTTP); a person's token without elicitation is denied as before", async () => {
    const { rpc, paid, app } = setup()
    const call = rpc(AGENT_TOKEN, 'tools/call', { name: 'pay', arguments: { cents: 9 } })
    let listed: PendingApproval[] = []
    await eventually(async () => {
      listed = ((await (await app.request('/v1/approvals', { headers: jsonAuth(PERSON_TOKEN) })).json()) as { approvals: PendingApproval[] }).approvals
      return listed.length === 1
    })
    // The broker records whose call it is: the MCP token's principal, not the HTTP app's guess.
    expect(listed[0]).toMatchObject({ name: 'pay', arguments: { cents: 9 }, principal: 'agent' })
    expect(listed[0]!.callId).toMatch(/^mcp-/)
    expect((await app.request(`/v1/approvals/${listed[0]!.id}`, { method: 'POST', headers: jsonAuth(PERSON_TOKEN), body: JSON.stringify({ decision: 'allow' }) })).status).toBe(200)
    const answer = (await (await call).json()) as { result: { isError?: boolean } }
    expect(answer.result.isError).toBeUndefined()
    expect(paid).toEqual([9])
    const person = (await (await rpc(PERSON_TOKEN, 'tools/call', { name: 'pay', arguments: { cents: 1 } })).json()) as { result: { isError: boolean; content: { text: string }[] } }
    expect(person.result.isError).toBe(true)
    expect(person.result.content[0]!.text).toContain('this MCP client cannot be asked')
    expect(paid).toEqual([9])
  })
})
