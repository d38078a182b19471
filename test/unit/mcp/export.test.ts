import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Hono } from 'hono'
import { createNodeWorkerRuntime, serve } from '../../../platforms/node/index.js'
import type { ServedApp } from '../../../platforms/node/index.js'
import { createToolsApp } from '../../../src/http/index.js'
import { createMcpApp, importMcpTools, listMcpTools } from '../../../src/mcp/index.js'
import { createToolRuntime, defineTool } from '../../../src/index.js'
import { TOKEN, AUTH, DOCUMENTED_BODY_LIMIT, echoTool, errorOf, failTool, pingOfBytes } from '../http/fixtures.js'

const codeRuntime = createNodeWorkerRuntime({ prespawn: 1 })
const runtime = createToolRuntime({ codeRuntime })
runtime.register(echoTool)
runtime.register(failTool)
runtime.register(
  defineTool({
    name: 'count',
    description: 'Counts to n.',
    parameters: { n: { type: 'integer', required: true } },
    output: { schema: { type: 'array', items: { type: 'integer' } }, render: (_a, v) => [{ type: 'text', text: v.join(',') }] },
    execute: (args) => Array.from({ length: args.n }, (_, i) => i + 1),
  }),
)
runtime.agent('native').presentAs('native')
runtime.agent('code').presentAs('code')
runtime.agent('both').presentAs('both')

// What the lead mounts: the API app plus the MCP endpoint under /mcp, same token.
const app = createToolsApp(runtime, { token: TOKEN })
app.route('/mcp', createMcpApp(runtime, { token: TOKEN, agent: (request) => new URL(request.url).searchParams.get('agent') ?? undefined }))

let server: ServedApp
const clients: Client[] = []

async function connect(agent?: string, token: string | null = TOKEN): Promise<Client> {
  const url = new URL(`${server.url}/mcp${agent === undefined ? '' : `?agent=${agent}`}`)
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: token === null ? {} : { headers: { Authorization: `Bearer ${token}` } },
  })
  const client = new Client({ name: 'toolyard-export-test', version: '1.0.0' })
  await client.connect(transport)
  clients.push(client)
  return client
}

beforeAll(async () => {
  server = await serve(app, { port: 0 })
})
afterAll(async () => {
  for (const client of clients) await client.close().catch(() => {})
  await server.close()
  await runtime.dispose()
  await codeRuntime.dispose()
})

describe('MCP export over Streamable HTTP (real SDK Client, Node serve())', () => {
  it('initializes and lists every tool under native presentation, with object outputs as outputSchema', async () => {
    const client = await connect('native')
    expect(client.getServerVersion()).toEqual({ name: 'toolyard', version: '0.1.0' })
    expect(client.getServerCapabilities()?.tools).toBeDefined()
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name).sort()).toEqual(['count', 'echo', 'fail'])
    const echo = tools.find((t) => t.name === 'echo')!
    expect(echo.inputSchema).toEqual(runtime.get('echo')!.parameters)
    expect(echo.outputSchema).toEqual(runtime.get('echo')!.output.schema)
    // Non-object outputs are not declared (MCP structuredContent must be an object).
    expect(tools.find((t) => t.name === 'count')!.outputSchema).toBeUndefined()
  })

  it('lists exactly run_code under code, its description carrying the SDK', async () => {
    const client = await connect('code')
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name)).toEqual(['run_code'])
    const description = tools[0]!.description!
    expect(description).toContain(runtime.get('run_code', 'code')!.description)
    const sdk = runtime.assemble('code').sections.find((s) => s.id === 'tools:sdk')!.text
    expect(description).toContain(sdk)
    expect(description).toMatch(/Only `run_code` may be called directly/)
    expect(description).toMatch(/echo/)
  })

  it('lists every tool plus run_code under both', async () => {
    const client = await connect('both')
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name).sort()).toEqual(['count', 'echo', 'fail', 'run_code'])
    expect(listMcpTools(runtime, 'both').map((t) => t.name).sort()).toEqual(['count', 'echo', 'fail', 'run_code'])
  })

  it('calls a tool through the pipeline: content + structuredContent', async () => {
    const client = await connect('native')
    await client.listTools()
    const result = await client.callTool({ name: 'echo', arguments: { text: 'hello' } })
    expect(result).toEqual({ content: [{ type: 'text', text: 'hello' }], structuredContent: { text: 'hello' } })
    const count = await client.callTool({ name: 'count', arguments: { n: 3 } })
    expect(count).toEqual({ content: [{ type: 'text', text: '1,2,3' }] })
  })

  it('maps failures to isError results: a throwing tool, invalid arguments, a guard denial', async () => {
    const client = await connect('native')
    const failed = await client.callTool({ name: 'fail', arguments: {} })
    expect(failed).toEqual({ content: [{ type: 'text', text: 'Error: kaput' }], isError: true })
    const invalid = await client.callTool({ name: 'echo', arguments: { text: 5 } })
    expect(invalid.isError).toBe(true)
    expect((invalid.content as { text: string }[])[0]!.text).toMatch(/^Error: Invalid arguments/)
    const undo = runtime.guard((execution) => (execution.name === 'count' ? 'no counting today' : undefined))
    try {
      const denied = await client.callTool({ name: 'count', arguments: { n: 1 } })
      expect(denied).toMatchObject({ isError: true, content: [{ type: 'text', text: expect.stringMatching(/no counting today/) }] })
    } finally {
      undo()
    }
  })

  it('answers an unknown tool with a JSON-RPC error; under code, a direct call gets the route-back hint', async () => {
    const native = await connect('native')
    await expect(native.callTool({ name: 'nope', arguments: {} })).rejects.toThrow(/nope/)
    const code = await connect('code')
    await expect(code.callTool({ name: 'echo', arguments: { text: 'x' } })).rejects.toThrow(/only `run_code` is callable directly/)
  })

  it('runs a program through run_code under code presentation', async () => {
    const client = await connect('code')
    await client.listTools()
    const result = await client.callTool({
      name: 'run_code',
      arguments: { description: 'echo twice', code: 'const a = await tools.echo({ text: "a" }); console.log("got", a.text); return a.text + "b"' },
    })
    expect(result.isError).toBeFalsy()
    expect(result.structuredContent).toEqual({ logs: ['got a'], result: 'ab' })
  })

  it('requires the bearer token (401 without, 401 with a wrong one) and refuses foreign origins', async () => {
    await expect(connect('native', null)).rejects.toThrow(/401|bearer token/i)
    await expect(connect('native', 'wrong-token-0123456789')).rejects.toThrow(/401|not valid/i)
    const noToken = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    })
    expect(noToken.status).toBe(401)
    expect(noToken.headers.get('WWW-Authenticate')).toMatch(/Bearer/)
    expect(await noToken.json()).toEqual({ error: { code: 'UNAUTHORIZED', message: 'a bearer token is required' } })
    const foreign = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { ...AUTH, 'Content-Type': 'application/json', Origin: 'https://evil.example' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    })
    expect(foreign.status).toBe(403)
  })

  it('speaks plain JSON-RPC: ping, batches, notifications (202), unknown methods, bad versions, GET 405', async () => {
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${server.url}/mcp`, { method: 'POST', headers: { ...AUTH, 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body) })
    expect(await (await post({ jsonrpc: '2.0', id: 7, method: 'ping' })).json()).toEqual({ jsonrpc: '2.0', id: 7, result: {} })
    const batch = await post([
      { jsonrpc: '2.0', id: 'a', method: 'ping' },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 'b', method: 'resources/list' },
    ])
    expect(await batch.json()).toEqual([
      { jsonrpc: '2.0', id: 'a', result: {} },
      { jsonrpc: '2.0', id: 'b', error: { code: -32601, message: 'method not found: resources/list' } },
    ])
    const note = await post({ jsonrpc: '2.0', method: 'notifications/initialized' })
    expect(note.status).toBe(202)
    expect(await post({ hello: 1 }).then((r) => r.json())).toMatchObject({ id: null, error: { code: -32600 } })
    expect(await post({ jsonrpc: '2.0', id: {}, method: 'ping' }).then((r) => r.json())).toMatchObject({ id: null, error: { code: -32600 } })
    expect(await post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: {} }).then((r) => r.json())).toMatchObject({ id: 1, error: { code: -32602 } })
    expect((await post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { 'MCP-Protocol-Version': '1999-01-01' })).status).toBe(400)
    const init = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2099-01-01', capabilities: {}, clientInfo: { name: 'x', version: '1' } } })
    expect((await init.json()).result.protocolVersion).toBe('2025-11-25')
    const get = await fetch(`${server.url}/mcp`, { headers: { ...AUTH, Accept: 'text/event-stream' } })
    expect(get.status).toBe(405)
    expect(get.headers.get('Allow')).toBe('POST')
    const notJson = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { ...AUTH, 'Content-Type': 'application/json' }, body: '{' })
    expect(notJson.status).toBe(400)
  })

  it('reads a body of exactly the default 1 MiB limit and refuses one byte more with 413 over the wire', async () => {
    const post = (body: string) => fetch(`${server.url}/mcp`, { method: 'POST', headers: { ...AUTH, 'Content-Type': 'application/json' }, body })
    const exactly = await post(pingOfBytes(DOCUMENTED_BODY_LIMIT))
    expect(exactly.status).toBe(200)
    expect(await exactly.json()).toEqual({ jsonrpc: '2.0', id: 1, result: {} })
    const over = await post(pingOfBytes(DOCUMENTED_BODY_LIMIT + 1))
    expect(over.status).toBe(413)
    expect(await errorOf(over)).toEqual({ code: 'PAYLOAD_TOO_LARGE', message: `the request body exceeds ${DOCUMENTED_BODY_LIMIT} bytes` })
  })

  it('serves standalone too, and round-trips into importMcpTools (export → import)', async () => {
    const standalone = new Hono().route('/', createMcpApp(runtime, { auth: false, agent: 'native' }))
    // A custom fetch that calls the app in-process: no socket at all.
    const transport = new StreamableHTTPClientTransport(new URL('http://in-process/'), {
      fetch: (input, init) => Promise.resolve(standalone.request(new Request(input, init))),
    })
    const client = new Client({ name: 'roundtrip', version: '1.0.0' })
    await client.connect(transport)
    clients.push(client)
    const other = createToolRuntime()
    const imported = await importMcpTools(other, client, { prefix: 'remote_' })
    expect(imported.tools().sort()).toEqual(['remote_count', 'remote_echo', 'remote_fail'])
    const result = await other.execute({ callId: 'r1', name: 'remote_echo', arguments: { text: 'via mcp' }, signal: AbortSignal.timeout(10_000) })
    expect(result).toMatchObject({ isError: false, value: { text: 'via mcp' }, content: [{ type: 'text', text: '{"text":"via mcp"}' }] })
    const failed = await other.execute({ callId: 'r2', name: 'remote_fail', arguments: {}, signal: AbortSignal.timeout(10_000) })
    expect(failed).toMatchObject({ isError: true, error: { message: 'Error: kaput', info: { code: 'TOOL_FAILED' } } })
    await imported.dispose()
    await other.dispose()
  })

  it('reports an unexpected exception to onError and tells the client only its name', async () => {
    const reported: unknown[] = []
    const broken = {
      ...runtime,
      assemble: () => {
        throw new TypeError('secret detail')
      },
    }
    const mcp = createMcpApp(broken, { auth: false, onError: (error) => reported.push(error) })
    const response = await mcp.request('/', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"jsonrpc":"2.0","id":3,"method":"tools/list"}' })
    expect(await response.json()).toEqual({ jsonrpc: '2.0', id: 3, error: { code: -32603, message: 'internal error (TypeError)' } })
    expect(reported).toEqual([expect.objectContaining({ message: 'secret detail' })])
    // A documented failure (an unknown method, an unknown path) is the client's, not the operator's.
    await mcp.request('/', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"jsonrpc":"2.0","id":4,"method":"nope"}' })
    const elsewhere = await mcp.request('/elsewhere', { method: 'POST' })
    expect(elsewhere.status).toBe(404)
    expect(await errorOf(elsewhere)).toEqual({ code: 'NOT_FOUND', message: 'no route for POST /elsewhere' })
    expect((await mcp.request('/', { method: 'DELETE' })).headers.get('Allow')).toBe('POST')
    expect(reported).toHaveLength(1)
  })

  it('validates its options', () => {
    expect(() => createMcpApp(runtime, {} as never)).toThrow(/token is required/)
    expect(() => createMcpApp(runtime, { token: 'short' })).toThrow(/token must be/)
    expect(() => createMcpApp(runtime, { token: TOKEN, auth: false })).toThrow(/either token or auth/)
    expect(() => createMcpApp({} as never, { auth: false })).toThrow(/runtime/)
    expect(() => createMcpApp(runtime, { auth: false, agent: '' })).toThrow(/agent/)
    expect(() => createMcpApp(runtime, { auth: false, onError: 'log' as never })).toThrow(/onError/)
  })
})
