import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { build } from 'esbuild'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

/**
 * The MCP endpoint bundled for workerd (platform neutral, workerd conditions) and served
 * by Miniflare under real workerd rules, driven by the MCP SDK's real Client.
 */
const root = fileURLToPath(new URL('../../..', import.meta.url))
const TOKEN = 'workerd-token-0123456789abcdef'

const entry = `
import { Hono } from 'hono'
import { createToolRuntime, defineTool } from './src/index.js'
import { createMcpApp } from './src/mcp/index.js'
let app
function getApp() {
  if (app) return app
  // Created on first request: workerd forbids some objects at module scope.
  const runtime = createToolRuntime()
  runtime.register(defineTool({
    name: 'echo', description: 'Echo the text back.',
    parameters: { text: { type: 'string', required: true } },
    output: { schema: { type: 'object', properties: { text: { type: 'string', required: true } }, additionalProperties: false }, render: (_a, v) => [{ type: 'text', text: v.text }] },
    execute: (args) => ({ text: args.text }),
  }))
  app = new Hono().route('/mcp', createMcpApp(runtime, { token: ${JSON.stringify(TOKEN)} }))
  return app
}
export default { fetch: (request, env, ctx) => getApp().fetch(request, env, ctx) }
`

describe('MCP export in workerd (Miniflare, built bundle, real SDK Client)', () => {
  let dir: string
  let mf: Miniflare | undefined

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'toolyard-mcp-worker-'))
    await build({
      absWorkingDir: root,
      stdin: { contents: entry, resolveDir: root, sourcefile: 'mcp-worker.ts', loader: 'ts' },
      outfile: join(dir, 'worker.js'),
      bundle: true,
      format: 'esm',
      platform: 'neutral',
      conditions: ['workerd', 'worker', 'browser'],
      mainFields: ['module', 'main'],
      target: 'es2022',
      logLevel: 'error',
    })
    mf = new Miniflare({ modules: true, scriptPath: join(dir, 'worker.js'), modulesRoot: dir, compatibilityDate: '2025-09-01', compatibilityFlags: ['nodejs_compat'] })
    await mf.ready
  }, 120_000)

  afterAll(async () => {
    await mf?.dispose()
    rmSync(dir, { recursive: true, force: true })
  })

  const workerFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init)
    const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.text()
    const response = await mf!.dispatchFetch(request.url, { method: request.method, headers: Object.fromEntries(request.headers), body })
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
