import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MCP_WORKER_TOKEN } from '../../fixtures/mcp-worker/token.js'
import { startBuiltWorker, type BuiltWorker } from '../../support/built-worker.js'

/**
 * The MCP endpoint bundled for workerd (platform neutral, workerd conditions) and served
 * by Miniflare under real workerd rules, driven by the MCP SDK's real Client.
 */
const TOKEN = MCP_WORKER_TOKEN

describe('MCP export in workerd (Miniflare, built bundle, real SDK Client)', () => {
  let worker: BuiltWorker | undefined

  beforeAll(async () => {
    worker = await startBuiltWorker('test/fixtures/mcp-worker/worker.ts')
  }, 120_000)

  afterAll(() => worker?.dispose())

  const workerFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init)
    const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.text()
    const response = await worker!.mf.dispatchFetch(request.url, { method: request.method, headers: Object.fromEntries(request.headers), body })
    return new Response(response.status === 202 || response.status === 204 ? null : await response.text(), { status: response.status, headers: Object.fromEntries(response.headers) })
  }

  it('lists and calls tools through the pipeline', async () => {
    const client = new Client({ name: 'workerd-test', version: '1.0.0' })
    await client.connect(
      new StreamableHTTPClientTransport(new URL('http://localhost/mcp'), { fetch: workerFetch, requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } }),
    )
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name)).toEqual(['echo'])
    expect(await client.callTool({ name: 'echo', arguments: { text: 'edge' } })).toEqual({
      content: [{ type: 'text', text: 'edge' }],
      structuredContent: { text: 'edge' },
    })
    const invalid = await client.callTool({ name: 'echo', arguments: {} })
    expect(invalid.isError).toBe(true)
    await client.close()
  })

  it('answers 401 without the token', async () => {
    const response = await workerFetch('http://localhost/mcp', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    })
    expect(response.status).toBe(401)
  })
})
