/**
 * Approval over the MCP export with the SDK's REAL `Client` and
 * `StreamableHTTPClientTransport` against `serve()` (Node): a client that declared the
 * `elicitation` capability is asked (`elicitation/create`: accept → allow, decline /
 * cancel → deny), also for a `run_code` program's sub-calls on the sandbox runtime; any
 * other client's `ask` is denied with a message saying approval was needed. Then the
 * wire itself (raw fetch): the session id that carries the capability, a response from
 * another session, expiry, and cancellation. And per-tool callers in the export.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import type { ElicitRequest, ElicitResult } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime, serve } from '../../../platforms/node/index.js'
import type { ServedApp } from '../../../platforms/node/index.js'
import { createToolsApp } from '../../../src/http/index.js'
import { createMcpApp } from '../../../src/mcp/index.js'
import { createToolRuntime, defineTool } from '../../../src/index.js'
import type { ToolExecutionResult, ToolRuntime } from '../../../src/index.js'
import { TOKEN } from '../http/fixtures.js'
import { payTool } from '../../support/pay-fixture.js'

const codeRuntime = createSandboxRuntime({ memoryMb: 32 })
const runtime = createToolRuntime({ mode: 'both', codeRuntime, approval: () => true })
const paid: number[] = []
runtime.register(payTool((cents) => paid.push(cents)))
runtime.register(
  defineTool({
    name: 'look',
    description: 'Looks (no approval).',
    parameters: {},
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    execute: () => 'looked',
  }),
)
const only = (name: string, callers: ['native'] | ['code']) =>
  defineTool({ name, description: `${name} (test)`, parameters: {}, output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] }, execute: () => name, callers })
runtime.register(only('code_only', ['code']))
runtime.register(only('native_only', ['native']))
runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
// The outcomes the server published, by tool (the client cannot see a withdrawn call's result).
const published: { name: string; result: ToolExecutionResult }[] = []
runtime.on('tools/result', (execution, result) => void published.push({ name: execution.name, result }))

const app = createToolsApp(runtime, { token: TOKEN })
app.route('/mcp', createMcpApp(runtime, { token: TOKEN }))
// The same registry with a short elicitation timeout, for the expiry test only (a loaded machine may take a while to answer).
app.route('/mcp-short', createMcpApp(Object.create(runtime, { approvals: { value: { timeoutMs: 300 } } }) as ToolRuntime, { token: TOKEN }))

let server: ServedApp
const clients: Client[] = []

type Answer = (request: ElicitRequest) => Promise<ElicitResult> | ElicitResult

/** A real SDK client; with `answer`, it declares elicitation and answers each question with it. */
async function connect(
  answer?: Answer,
  capabilities: Record<string, unknown> = { elicitation: {} },
  path = '/mcp',
): Promise<{ client: Client; asked: ElicitRequest[]; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}${path}`), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } })
  const client = new Client({ name: 'elicitation-test', version: '1.0.0' }, answer === undefined ? {} : { capabilities })
  const asked: ElicitRequest[] = []
  if (answer !== undefined) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request)
      return answer(request)
    })
  }
  await client.connect(transport)
  clients.push(client)
  return { client, asked, transport }
}

type CallResult = { isError?: boolean; content: { type: string; text?: string }[]; structuredContent?: unknown }
const textOf = (result: CallResult): string => result.content.map((c) => c.text ?? '').join('\n')

beforeAll(async () => {
  server = await serve(app, { port: 0 })
})
afterAll(async () => {
  for (const client of clients) await client.close().catch(() => {})
  await server.close()
  await runtime.dispose()
  await codeRuntime.dispose()
})

describe('MCP export: an ask is put to an eliciting client (real SDK Client)', () => {
  it('accept → the call runs; the question names the tool, the reason and the arguments', async () => {
    const { client, asked, transport } = await connect(() => ({ action: 'accept', content: {} }))
    expect(transport.sessionId).toMatch(/^toolyard-elicit-[0-9a-f-]{36}$/)
    const before = paid.length
    const result = (await client.callTool({ name: 'pay', arguments: { cents: 42 } })) as CallResult
    expect(result.isError, textOf(result)).toBeFalsy()
    expect(textOf(result)).toBe('paid 42')
    expect(paid.slice(before)).toEqual([42])
    expect(asked).toHaveLength(1)
    expect(asked[0]!.params).toEqual({ message: 'Allow the tool call pay (money moves)?\nArguments:\ncents: 42', requestedSchema: { type: 'object', properties: {} } })
    // A call that does not ask is not put to the client.
    expect(textOf((await client.callTool({ name: 'look', arguments: {} })) as CallResult)).toBe('looked')
    expect(asked).toHaveLength(1)
  })

  it.each([
    ['decline', "pay was denied by the MCP client's user (declined)"],
    ['cancel', "pay was denied by the MCP client's user (dismissed the request)"],
  ] as const)('%s → the call is denied (isError) with a message saying so', async (action, message) => {
    const { client } = await connect(() => ({ action }))
    const before = paid.length
    const result = (await client.callTool({ name: 'pay', arguments: { cents: 1 } })) as CallResult
    expect(result.isError).toBe(true)
    expect(textOf(result)).toBe(`Error: ${message}`)
    expect(paid.length).toBe(before)
  })

  it('a run_code program\'s sub-call asks the same client (inherited); siblings are not asked', async () => {
    const { client, asked } = await connect((request) => ({ action: request.params.message.includes('cents: 7') ? 'accept' : 'decline' }))
    const result = (await client.callTool({
      name: 'run_code',
      arguments: {
        description: 'pay twice',
        code: `const looked = await tools.look({})
          const first = await tools.pay({ cents: 7 })
          let second
          try { second = await tools.pay({ cents: 8 }) } catch (e) { second = e.name + ': ' + e.message }
          return { looked, first, second }`,
      },
    })) as CallResult
    expect(result.isError).toBeFalsy()
    expect(JSON.parse(textOf(result))).toEqual({ looked: 'looked', first: 'paid 7', second: "ToolCallError: pay was denied by the MCP client's user (declined)" })
    expect(asked.map((r) => r.params.message)).toEqual([
      'Allow the tool call pay (money moves)?\nArguments:\ncents: 7',
      'Allow the tool call pay (money moves)?\nArguments:\ncents: 8',
    ])
  })

  it('an unanswered question expires (elicitationTimeoutMs) as a denial', async () => {
    const { client } = await connect(() => new Promise<ElicitResult>(() => {}), { elicitation: {} }, '/mcp-short')
    const result = (await client.callTool({ name: 'pay', arguments: { cents: 3 } })) as CallResult
    expect(result.isError).toBe(true)
    expect(textOf(result)).toBe('Error: pay was denied by timeout: the MCP client did not answer within 300 ms')
  })

  it('a client that aborts its call withdraws the question (notifications/cancelled)', async () => {
    let wasAsked!: () => void
    const asking = new Promise<void>((resolve) => (wasAsked = resolve))
    const { client } = await connect(() => {
      wasAsked()
      return new Promise<ElicitResult>(() => {})
    })
    const controller = new AbortController()
    const call = client.callTool({ name: 'pay', arguments: { cents: 9 } }, undefined, { signal: controller.signal })
    await asking
    const before = published.length
    controller.abort()
    await expect(call).rejects.toThrow()
    await expect.poll(() => published.slice(before).find((p) => p.name === 'pay')?.result, { timeout: 300 }).toMatchObject({
      isError: true,
      error: { info: { code: 'ABORTED_BEFORE_DISPATCH' } },
    })
  })
})

describe('MCP export: a client that cannot be asked', () => {
  it('without the elicitation capability the call is denied, saying approval was needed', async () => {
    const { client, transport } = await connect()
    expect(transport.sessionId).toBeUndefined()
    const result = (await client.callTool({ name: 'pay', arguments: { cents: 5 } })) as CallResult
    expect(result.isError).toBe(true)
    expect(textOf(result)).toBe('Error: pay was denied: it needs approval (money moves), and this MCP client cannot be asked: it did not declare the elicitation capability')
  })

  it('a client that declares URL-mode elicitation only cannot confirm a call: no session, denied', async () => {
    const { client, transport, asked } = await connect(() => ({ action: 'accept' }), { elicitation: { url: {} } })
    expect(transport.sessionId).toBeUndefined()
    const result = (await client.callTool({ name: 'pay', arguments: { cents: 5 } })) as CallResult
    expect(result.isError).toBe(true)
    expect(textOf(result)).toContain('did not declare the elicitation capability')
    expect(asked).toEqual([])
  })
})

describe('MCP export: the wire (raw requests)', () => {
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify(body),
    })

  async function session(): Promise<string> {
    const response = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: { elicitation: {} }, clientInfo: { name: 'raw', version: '1' } } })
    expect(response.headers.get('Content-Type')).toBe('application/json')
    await response.json()
    return response.headers.get('Mcp-Session-Id')!
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

  it('issues the session only to a client on a protocol with elicitation; 2025-03-26 gets none', async () => {
    expect(await session()).toMatch(/^toolyard-elicit-/)
    const old = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: { elicitation: {} }, clientInfo: { name: 'raw', version: '1' } } })
    expect(old.headers.get('Mcp-Session-Id')).toBeNull()
  })

  it('streams the question, ignores an answer from another session, then takes the right one; the result follows', async () => {
    const mine = await session()
    const other = await session()
    const response = await post({ jsonrpc: '2.0', id: 'call-1', method: 'tools/call', params: { name: 'pay', arguments: { cents: 11 } } }, { 'Mcp-Session-Id': mine })
    expect(response.headers.get('Content-Type')).toBe('text/event-stream; charset=utf-8')
    const next = messages(response)
    const question = (await next())!
    expect(question).toMatchObject({ jsonrpc: '2.0', method: 'elicitation/create', id: expect.stringMatching(/^toolyard-elicitation-/) })
    const forged = await post({ jsonrpc: '2.0', id: question.id, result: { action: 'accept' } }, { 'Mcp-Session-Id': other })
    expect(forged.status).toBe(202)
    const declined = await post({ jsonrpc: '2.0', id: question.id, result: { action: 'decline' } }, { 'Mcp-Session-Id': mine })
    expect(declined.status).toBe(202)
    const answer = (await next())!
    expect(answer).toMatchObject({ jsonrpc: '2.0', id: 'call-1', result: { isError: true, content: [{ type: 'text', text: "Error: pay was denied by the MCP client's user (declined)" }] } })
    expect(await next()).toBeUndefined()
  })

  it('an error answer denies; a tools/call without event-stream Accept is denied, saying why', async () => {
    const mine = await session()
    const response = await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'pay', arguments: { cents: 1 } } }, { 'Mcp-Session-Id': mine })
    const next = messages(response)
    const question = (await next())!
    await post({ jsonrpc: '2.0', id: question.id, error: { code: -32601, message: 'no UI here' } }, { 'Mcp-Session-Id': mine })
    expect(((await next())!.result as CallResult).content[0]!.text).toBe('Error: pay was denied: it needed approval and the MCP client could not ask (it answered no UI here)')

    const json = await post({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'pay', arguments: { cents: 1 } } }, { 'Mcp-Session-Id': mine, Accept: 'application/json' })
    expect(json.headers.get('Content-Type')).toBe('application/json')
    const body = (await json.json()) as { result: CallResult }
    expect(body.result.content[0]!.text).toBe('Error: pay was denied: it needs approval (money moves), and this MCP client could not be asked: the request does not accept text/event-stream')
  })

  it('a session id that is not ours is ignored (no stream, no question); GET and DELETE stay 405', async () => {
    const response = await post({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'pay', arguments: { cents: 1 } } }, { 'Mcp-Session-Id': 'someone-elses' })
    expect(response.headers.get('Content-Type')).toBe('application/json')
    expect(((await response.json()) as { result: CallResult }).result.isError).toBe(true)
    const mine = await session()
    for (const method of ['GET', 'DELETE']) {
      const refused = await fetch(`${server.url}/mcp`, { method, headers: { Authorization: `Bearer ${TOKEN}`, 'Mcp-Session-Id': mine } })
      expect(refused.status).toBe(405)
      await refused.body?.cancel()
    }
  })
})

describe('MCP export honours per-tool callers', () => {
  it('tools/list leaves a code-only tool out; run_code\'s SDK leaves a native-only tool out; calling a code-only tool is -32602', async () => {
    const { client } = await connect()
    const { tools } = await client.listTools()
    const names = tools.map((t) => t.name)
    expect(names).toContain('native_only')
    expect(names).not.toContain('code_only')
    const runCode = tools.find((t) => t.name === 'run_code')!.description!
    expect(runCode).toContain('code_only')
    expect(runCode).not.toContain('native_only')
    await expect(client.callTool({ name: 'code_only', arguments: {} })).rejects.toThrow(/`code_only` is callable only from inside a `run_code` program/)
  })
})
