/**
 * Hostile MCP clients (issue 31, re-tried at /mcp with role tokens): a `run` token that
 * declares elicitation is still never asked (its asks go to the broker a person answers),
 * and an elicitation answer is taken only from the session's own principal.
 */
import { expect, it } from 'vitest'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { PendingApproval } from '../../../src/approvals/index.js'
import { createToolsApp } from '../../../src/http/index.js'
import { createMcpApp } from '../../../src/mcp/index.js'
import { createToolRuntime, defineTool } from '../../../src/index.js'
import { AGENT_TOKEN, PERSON_TOKEN, ROLE_TOKENS, eventually, jsonAuth } from '../http/fixtures.js'

function setup() {
  const broker = createApprovalBroker()
  const runtime = createToolRuntime({ approvals: broker })
  const paid: number[] = []
  runtime.register(
    defineTool({
      name: 'pay', description: 'Pays.', parameters: { cents: { type: 'number', required: true } },
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: (args) => {
        paid.push(args.cents)
        return `paid ${args.cents}`
      },
    }),
  )
  runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
  const app = createToolsApp(runtime, { tokens: ROLE_TOKENS })
  app.route('/mcp', createMcpApp(runtime, { tokens: ROLE_TOKENS }))
  const post = (token: string, body: unknown, headers: Record<string, string> = {}) =>
    Promise.resolve(app.request('/mcp', { method: 'POST', headers: { ...jsonAuth(token), Accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(body) }))
  const session = async (token: string): Promise<string | null> => {
    const response = await post(token, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: { elicitation: {} }, clientInfo: { name: 'raw', version: '1' } } })
    await response.text()
    return response.headers.get('Mcp-Session-Id')
  }
  const pending = async () => ((await (await app.request('/v1/approvals', { headers: jsonAuth(PERSON_TOKEN) })).json()) as { approvals: PendingApproval[] }).approvals
  return { app, runtime, paid, post, session, pending }
}

/** Reads SSE `data:` messages of a response body as they arrive. */
function messages(response: Response) {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  return async (): Promise<Record<string, unknown> | undefined> => {
    for (;;) {
      const end = buffer.indexOf('\n\n')
      if (end !== -1) {
        const frame = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const data = frame.split('\n').find((line) => line.startsWith('data:'))
        if (data !== undefined) return JSON.parse(data.slice(5)) as Record<string, unknown>
        continue
      }
      const { value, done } = await reader.read()
      if (done) return undefined
      buffer += value
    }
  }
}

it('a run token that declares elicitation is never asked: its call waits in the broker, and answering a guessed question id decides nothing', async () => {
  const f = setup()
  const own = await f.session(AGENT_TOKEN)
  const call = f.post(AGENT_TOKEN, { jsonrpc: '2.0', id: 'c1', method: 'tools/call', params: { name: 'pay', arguments: { cents: 4 } } }, own === null ? {} : { 'Mcp-Session-Id': own })
  await eventually(async () => (await f.pending()).length === 1)
  for (const id of ['toolyard-elicitation-1', 'toolyard-elicitation-0', 1, 'c1']) {
    await f.post(AGENT_TOKEN, { jsonrpc: '2.0', id, result: { action: 'accept' } }, own === null ? {} : { 'Mcp-Session-Id': own })
  }
  expect(await f.pending()).toHaveLength(1)
  expect(f.paid).toEqual([])
  const [approval] = await f.pending()
  await f.app.request(`/v1/approvals/${approval!.id}`, { method: 'POST', headers: jsonAuth(PERSON_TOKEN), body: JSON.stringify({ decision: 'deny' }) })
  const text = await (await call).text()
  expect(text).not.toContain('elicitation/create')
  expect(text).toContain('denied by a person')
  expect(f.paid).toEqual([])
})

it("an elicitation answer sent by another principal under the person's session id is not taken", async () => {
  const f = setup()
  const mine = (await f.session(PERSON_TOKEN))!
  expect(mine).toMatch(/^toolyard-elicit-/)
  const response = await f.post(PERSON_TOKEN, { jsonrpc: '2.0', id: 'call-1', method: 'tools/call', params: { name: 'pay', arguments: { cents: 11 } } }, { 'Mcp-Session-Id': mine })
  const next = messages(response)
  const question = (await next())!
  expect(question).toMatchObject({ method: 'elicitation/create' })
  // The agent learned both ids (a shared log, a proxy): its accept must not decide the person's question.
  const hijack = await f.post(AGENT_TOKEN, { jsonrpc: '2.0', id: question.id, result: { action: 'accept' } }, { 'Mcp-Session-Id': mine })
  expect(hijack.status).toBeGreaterThanOrEqual(200)
  await f.post(PERSON_TOKEN, { jsonrpc: '2.0', id: question.id, result: { action: 'decline' } }, { 'Mcp-Session-Id': mine })
  const answer = (await next())!
  expect(answer).toMatchObject({ id: 'call-1', result: { isError: true } })
  expect(f.paid).toEqual([])
})
