import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime, serve } from '../../../platforms/node/index.js'
import type { ServedApp } from '../../../platforms/node/index.js'
import { createToolsApp } from '../../../src/http/index.js'
import { createToolRuntime } from '../../../src/index.js'
import type { ToolRuntime } from '../../../src/runtime-types.js'
import { TOKEN, echoTool, failTool } from '../http/fixtures.js'

// Python Code Mode over MCP (issue 33, item 5), driven by the MCP SDK's own client over HTTP:
// one server whose model language is Python, one that runs both languages.
const python = createSandboxRuntime({ language: 'python', prespawn: 1 })
const typescript = createSandboxRuntime({ prespawn: 1 })

function runtimeOf(options: Parameters<typeof createToolRuntime>[0]): ToolRuntime {
  const runtime = createToolRuntime({ mode: 'code', ...options })
  runtime.register(echoTool)
  runtime.register(failTool)
  return runtime
}
const pythonOnly = runtimeOf({ codeRuntime: python })
const both = runtimeOf({ codeRuntime: typescript, codeRuntimes: [python] })

const servers: ServedApp[] = []
const clients: Client[] = []

async function connect(server: ServedApp): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } })
  const client = new Client({ name: 'toolyard-python-mcp-test', version: '1.0.0' })
  await client.connect(transport)
  clients.push(client)
  return client
}

let pythonServer: ServedApp
let bothServer: ServedApp
beforeAll(async () => {
  pythonServer = await serve(createToolsApp(pythonOnly, { token: TOKEN, mcp: true }), { port: 0 })
  bothServer = await serve(createToolsApp(both, { token: TOKEN, mcp: true }), { port: 0 })
  servers.push(pythonServer, bothServer)
})
afterAll(async () => {
  for (const client of clients) await client.close().catch(() => {})
  for (const server of servers) await server.close()
  for (const runtime of [pythonOnly, both]) await runtime.dispose()
  await python.dispose()
  await typescript.dispose()
})

describe('Python Code Mode over MCP', () => {
  it('lists run_code with the Python SDK and a Python description on a Python server', async () => {
    const client = await connect(pythonServer)
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name)).toEqual(['run_code'])
    const description = tools[0]!.description!
    expect(description).toMatch(/Python/)
    expect(description).toContain('async def echo(')
    expect(description).not.toContain('declare const tools')
    expect(Object.keys(tools[0]!.inputSchema.properties ?? {}).sort()).toEqual(['code', 'description'])
  })

  it('runs a Python program: print as logs, return as the value, a failed call as ToolCallError', async () => {
    const client = await connect(pythonServer)
    const ok = await client.callTool({ name: 'run_code', arguments: { description: 'echo', code: 'r = await tools.echo({"text": "hi"})\nprint("got", r["text"])\nreturn r["text"] + "!"' } })
    expect(ok.isError).toBeFalsy()
    expect(ok.structuredContent).toEqual({ logs: ['got hi'], result: 'hi!' })

    const caught = await client.callTool({
      name: 'run_code',
      arguments: { description: 'fail', code: 'try:\n    await tools.fail({})\nexcept ToolCallError as e:\n    return [e.tool_name, e.code]' },
    })
    expect(caught.isError).toBeFalsy()
    expect((caught.structuredContent as { result: unknown }).result).toEqual(['fail', 'TOOL_FAILED'])
  })

  it('offers a language choice on a server that runs both, and runs each program in its own language', async () => {
    const client = await connect(bothServer)
    const { tools } = await client.listTools()
    const runCode = tools.find((t) => t.name === 'run_code')!
    expect((runCode.inputSchema.properties as Record<string, { enum?: unknown }>).language?.enum).toEqual(['typescript', 'python'])

    const py = await client.callTool({ name: 'run_code', arguments: { description: 'py', language: 'python', code: 'return (await tools.echo({"text": "py"}))["text"]' } })
    expect(py.isError).toBeFalsy()
    expect((py.structuredContent as { result: unknown }).result).toBe('py')

    const ts = await client.callTool({ name: 'run_code', arguments: { description: 'ts', code: 'return (await tools.echo({ text: "ts" })).text' } })
    expect(ts.isError).toBeFalsy()
    expect((ts.structuredContent as { result: unknown }).result).toBe('ts')

    const wrong = await client.callTool({ name: 'run_code', arguments: { description: 'x', language: 'ruby', code: 'puts 1' } })
    expect(wrong.isError).toBe(true)
    expect(JSON.stringify(wrong.content)).toMatch(/language/)
  })

  it('stops a hot Python loop within its budget and says so', async () => {
    const client = await connect(pythonServer)
    const started = Date.now()
    const hot = await client.callTool({ name: 'run_code', arguments: { description: 'spin', code: 'while True:\n    pass' } })
    expect(hot.isError).toBe(true)
    expect(JSON.stringify(hot.content)).toMatch(/budget|TIMEOUT|time/i)
    expect(Date.now() - started).toBeLessThan(python.limits.maxWallMs + 10_000)
  })
})
