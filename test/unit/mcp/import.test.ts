import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { importMcpTools, MCP_CONTENT_OUTPUT_SCHEMA } from '../../../src/mcp/index.js'
import type { McpClientLike, McpImport } from '../../../src/mcp/index.js'
import { createToolRuntime } from '../../../src/index.js'
import type { ToolError } from '../../../src/errors.js'
import type { ToolExecutionResult } from '../../../src/types.js'
import { eventually } from '../../support/poll.js'

// The SDK's Client satisfies the structural interface the import asks for.
const _clientFits = (client: Client): McpClientLike => client

const everythingDir = fileURLToPath(new URL('../../../node_modules/@modelcontextprotocol/server-everything/', import.meta.url))
const everythingBin = (() => {
  const pkg = JSON.parse(readFileSync(`${everythingDir}package.json`, 'utf8')) as { bin: Record<string, string> }
  return `${everythingDir}${pkg.bin['mcp-server-everything']}`
})()

async function connectEverything(capabilities: Record<string, unknown> = {}): Promise<Client> {
  const client = new Client({ name: 'toolyard-test', version: '1.0.0' }, { capabilities })
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [everythingBin, 'stdio'], stderr: 'ignore' }))
  return client
}

const call = (runtime: { execute: (input: never) => Promise<ToolExecutionResult> }, name: string, args: unknown, signal = new AbortController().signal) =>
  runtime.execute({ callId: `c-${name}`, name, arguments: args, signal } as never)

function codeOf(result: ToolExecutionResult): string | undefined {
  return result.isError ? result.error.info?.code : undefined
}

// ─────────────────────────────────────────────────────────────────────────────
// Against the real @modelcontextprotocol/server-everything over stdio.
//
// Every tool this server lists has an inputSchema carrying "$schema" (and some
// "minimum"/"maximum"), outside the schema subset: raw tools (no validateArgs) present
// any lossless-JSON object schema as is (src/schema/tool-definition.ts), which these
// tests rely on.
// ─────────────────────────────────────────────────────────────────────────────
describe('importMcpTools against server-everything (stdio)', () => {
  let client: Client
  const runtime = createToolRuntime()
  let imported: McpImport

  beforeAll(async () => {
    client = await connectEverything()
    imported = await importMcpTools(runtime, client)
  })
  afterAll(async () => {
    await imported?.dispose()
    await client?.close()
    await runtime.dispose()
  })

  it('registers every callable tool, presenting the server inputSchema as is', async () => {
    const listed = await client.listTools()
    const callable = listed.tools.filter((t) => t.execution?.taskSupport !== 'required').map((t) => t.name)
    expect(imported.skipped()).toEqual(
      listed.tools
        .filter((t) => t.execution?.taskSupport === 'required')
        .map((t) => expect.objectContaining({ name: t.name, code: 'UNSUPPORTED_TOOL' })),
    )
    expect(imported.tools()).toEqual(callable)
    expect(callable).toEqual(expect.arrayContaining(['echo', 'get-sum', 'get-tiny-image', 'get-structured-content']))
    const echo = runtime.get('echo')!
    const fromServer = listed.tools.find((t) => t.name === 'echo')!
    expect(echo.parameters).toEqual(fromServer.inputSchema)
    expect(echo.description).toBe('Echoes back the input string')
    expect(echo.validateArgs).toBeUndefined()
    expect(echo.output.schema).toEqual(MCP_CONTENT_OUTPUT_SCHEMA)
  })

  it('calls echo and get-sum through the pipeline', async () => {
    const echo = await call(runtime, 'echo', { message: 'hi there' })
    expect(echo).toEqual({ isError: false, value: { content: [{ type: 'text', text: 'Echo: hi there' }] }, content: [{ type: 'text', text: 'Echo: hi there' }] })
    const sum = await call(runtime, 'get-sum', { a: 2, b: 40 })
    expect(sum.content).toEqual([{ type: 'text', text: 'The sum of 2 and 40 is 42.' }])
  })

  it('maps an isError result (server-side input validation) to TOOL_FAILED with the server text', async () => {
    const result = await call(runtime, 'echo', { message: 5 })
    expect(codeOf(result)).toBe('TOOL_FAILED')
    expect(result.isError && result.error.message).toMatch(/Input validation error/)
    expect(result.content[0]).toEqual({ type: 'text', text: expect.stringMatching(/^Error: .*Input validation error/) })
  })

  it('rejects non-object arguments before calling the server (INVALID_ARGS)', async () => {
    expect(codeOf(await call(runtime, 'echo', 'hi'))).toBe('INVALID_ARGS')
    expect(codeOf(await call(runtime, 'echo', [1]))).toBe('INVALID_ARGS')
  })

  it('maps image content to image blocks', async () => {
    const result = await call(runtime, 'get-tiny-image', {})
    expect(result.isError).toBe(false)
    expect(result.content.map((b) => b.type)).toEqual(['text', 'image', 'text'])
    expect(result.content[1]).toMatchObject({ type: 'image', mimeType: 'image/png', data: expect.stringMatching(/^iVBOR/) })
  })

  it('maps resource links to text placeholders', async () => {
    const result = await call(runtime, 'get-resource-links', { count: 2 })
    expect(result.isError).toBe(false)
    expect(result.content.some((b) => b.type === 'text' && b.text.startsWith('[resource link'))).toBe(true)
  })

  it('uses a declared outputSchema as the output declaration; the value is structuredContent', async () => {
    const definition = runtime.get('get-structured-content')!
    // The root "$schema" identifier is dropped; the rest is inside the subset.
    expect(definition.output.schema).toMatchObject({ type: 'object', required: ['temperature', 'conditions', 'humidity'], additionalProperties: false })
    const result = await call(runtime, 'get-structured-content', { location: 'Chicago' })
    expect(result).toMatchObject({ isError: false, value: { temperature: 36, conditions: 'Light rain / drizzle', humidity: 82 } })
    expect(result.content).toEqual([{ type: 'text', text: '{"temperature":36,"conditions":"Light rain / drizzle","humidity":82}' }])
  })

  it('cancels an in-flight call with the execution signal (ABORTED)', async () => {
    const controller = new AbortController()
    const pending = call(runtime, 'trigger-long-running-operation', { duration: 10, steps: 5 }, controller.signal)
    setTimeout(() => controller.abort(), 100)
    const result = await pending
    expect(codeOf(result)).toBe('ABORTED')
    // The connection stays usable.
    expect((await call(runtime, 'echo', { message: 'still here' })).isError).toBe(false)
  })

  it('imports into an agent layer with a prefix; dispose unregisters and leaves a borrowed client open', async () => {
    const agent = runtime.agent('mcp-agent')
    const prefixed = await importMcpTools(agent, client, { prefix: 'ev_' })
    expect(prefixed.tools()).toContain('ev_echo')
    expect(agent.get('ev_echo')).toBeDefined()
    expect(runtime.get('ev_echo')).toBeUndefined()
    expect((await agent.execute({ callId: 'p1', name: 'ev_get-sum', arguments: { a: 1, b: 1 }, signal: AbortSignal.timeout(10_000) })).content)
      .toEqual([{ type: 'text', text: 'The sum of 1 and 1 is 2.' }])
    await prefixed.dispose()
    await prefixed.dispose()
    expect(prefixed.tools()).toEqual([])
    expect(agent.get('ev_echo')).toBeUndefined()
    expect(agent.schemas().some((s) => s.name.startsWith('ev_'))).toBe(false)
    expect((await client.listTools()).tools.length).toBeGreaterThan(0)
    await expect(prefixed.refresh()).rejects.toMatchObject({ code: 'DISPOSED' })
  })

  // server-everything registers its capability-dependent tools right after initialization
  // (and announces them with tools/list_changed, usually before our first tools/list); it
  // offers no way to change its list later, so re-sync proper is tested in-memory below.
  it('picks up the tools the real server adds after initialization; ownsClient closes the client', async () => {
    const rootsClient = await connectEverything({ roots: { listChanged: true } })
    rootsClient.setRequestHandler((await import('@modelcontextprotocol/sdk/types.js')).ListRootsRequestSchema, () => ({ roots: [] }))
    const scope = createToolRuntime()
    const live = await importMcpTools(scope, rootsClient, { ownsClient: true })
    await eventually(() => expect(live.tools()).toContain('get-roots-list'))
    expect(scope.get('get-roots-list')).toBeDefined()
    await live.dispose()
    expect(scope.get('echo')).toBeUndefined()
    // ownsClient: the import closed it.
    await expect(rootsClient.listTools()).rejects.toThrow()
    await scope.dispose()
  })
})

// ─────────────────────────────────────────────────────────────────────────────
// Against an in-memory SDK Server whose tool list the test controls.
// ─────────────────────────────────────────────────────────────────────────────
interface Fake {
  client: Client
  server: Server
  tools: Tool[]
  pageSize: number
  onCall: (name: string, args: Record<string, unknown> | undefined) => CallToolResult | Promise<CallToolResult>
  listCalls: number
}

async function fakeServer(tools: Tool[], pageSize = 100): Promise<Fake> {
  const server = new Server({ name: 'fake', version: '1.0.0' }, { capabilities: { tools: { listChanged: true }, resources: { listChanged: true } } })
  const fake: Fake = {
    client: new Client({ name: 'toolyard-test', version: '1.0.0' }),
    server,
    tools,
    pageSize,
    onCall: (name, args) => ({ content: [{ type: 'text', text: `${name}:${JSON.stringify(args)}` }] }),
    listCalls: 0,
  }
  server.setRequestHandler(ListToolsRequestSchema, (request) => {
    fake.listCalls++
    const start = request.params?.cursor === undefined ? 0 : Number(request.params.cursor)
    const page = fake.tools.slice(start, start + fake.pageSize)
    const next = start + fake.pageSize
    return { tools: page, ...(next < fake.tools.length ? { nextCursor: String(next) } : {}) }
  })
  server.setRequestHandler(CallToolRequestSchema, (request) => fake.onCall(request.params.name, request.params.arguments))
  const [a, b] = InMemoryTransport.createLinkedPair()
  await server.connect(a)
  await fake.client.connect(b)
  return fake
}

const tool = (name: string, extra: Partial<Tool> = {}): Tool => ({
  name,
  description: `the ${name} tool`,
  inputSchema: { type: 'object', properties: { x: { type: 'number' } } },
  ...extra,
})

describe('importMcpTools against an in-memory SDK server', () => {
  it('lists every page (nextCursor)', async () => {
    const fake = await fakeServer(Array.from({ length: 7 }, (_, i) => tool(`t${i}`)), 3)
    const runtime = createToolRuntime()
    const imported = await importMcpTools(runtime, fake.client)
    expect(fake.listCalls).toBe(3)
    expect(imported.tools()).toEqual(['t0', 't1', 't2', 't3', 't4', 't5', 't6'])
    expect(runtime.schemas().map((s) => s.name).sort()).toEqual(['t0', 't1', 't2', 't3', 't4', 't5', 't6'])
    await imported.dispose()
    expect(runtime.schemas()).toEqual([])
  })

  it('re-syncs on notifications/tools/list_changed: registers new, removes gone, replaces changed', async () => {
    const fake = await fakeServer([tool('keep'), tool('gone'), tool('change')])
    const runtime = createToolRuntime()
    const changes: string[] = []
    runtime.on('tools/changed', (event) => changes.push(`${event.kind}:${event.name}`))
    const imported = await importMcpTools(runtime, fake.client, { prefix: 'm.' })
    changes.length = 0
    fake.tools = [tool('keep'), tool('change', { description: 'changed description' }), tool('new')]
    await fake.server.sendToolListChanged()
    await eventually(() => expect(imported.tools()).toEqual(['m.keep', 'm.change', 'm.new']))
    expect(runtime.get('m.gone')).toBeUndefined()
    expect(runtime.get('m.change')?.description).toBe('changed description')
    expect(changes.sort()).toEqual(['register:m.change', 'register:m.new', 'unregister:m.change', 'unregister:m.gone'])
    // An unchanged tool keeps its registration.
    expect(changes).not.toContain('unregister:m.keep')
    await imported.dispose()
    // After dispose, a notification changes nothing.
    fake.tools = [tool('late')]
    await fake.server.sendToolListChanged()
    await new Promise((r) => setTimeout(r, 20))
    expect(runtime.schemas()).toEqual([])
    expect(fake.client.fallbackNotificationHandler).toBeUndefined()
  })

  it('chains an existing fallback notification handler and restores it on dispose', async () => {
    const fake = await fakeServer([tool('a')])
    const seen: string[] = []
    const previous = async (n: { method: string }): Promise<void> => {
      seen.push(n.method)
    }
    fake.client.fallbackNotificationHandler = previous
    const imported = await importMcpTools(createToolRuntime(), fake.client)
    await fake.server.sendResourceListChanged()
    await eventually(() => expect(seen).toEqual(['notifications/resources/list_changed']))
    await imported.dispose()
    expect(fake.client.fallbackNotificationHandler).toBe(previous)
  })

  it('refresh() coalesces concurrent calls', async () => {
    const fake = await fakeServer([tool('a')])
    const imported = await importMcpTools(createToolRuntime(), fake.client)
    const before = fake.listCalls
    fake.tools = [tool('a'), tool('b')]
    await Promise.all([imported.refresh(), imported.refresh(), imported.refresh()])
    expect(fake.listCalls - before).toBeLessThanOrEqual(2)
    expect(imported.tools()).toEqual(['a', 'b'])
    await imported.dispose()
  })

  it('degrades an outputSchema outside the subset to an annotation-only node (any JSON)', async () => {
    const fake = await fakeServer([
      tool('odd', { outputSchema: { type: 'object', description: 'weird', properties: { n: { type: 'string', minLength: 1 } } } }),
    ])
    fake.onCall = () => ({ content: [{ type: 'text', text: '{"n":"2020"}' }], structuredContent: { n: '2020' } })
    const runtime = createToolRuntime()
    const imported = await importMcpTools(runtime, fake.client)
    expect(runtime.get('odd')!.output.schema).toEqual({ description: 'weird' })
    const result = await call(runtime, 'odd', {})
    expect(result).toMatchObject({ isError: false, value: { n: '2020' } })
    await imported.dispose()
  })

  it('fails a structured tool that returns no structuredContent, and an isError without text', async () => {
    const fake = await fakeServer([tool('s', { outputSchema: { type: 'object', properties: {} } }), tool('e')])
    const runtime = createToolRuntime()
    const imported = await importMcpTools(runtime, fake.client)
    // Bypass the SDK client's own output validation by answering with isError for 'e' and nothing for 's'.
    fake.onCall = (name) => (name === 'e' ? { content: [], isError: true } : { content: [{ type: 'text', text: 'x' }] })
    const s = await call(runtime, 's', {})
    expect(codeOf(s)).toBe('TOOL_FAILED')
    const e = await call(runtime, 'e', {})
    expect(codeOf(e)).toBe('TOOL_FAILED')
    expect(e.isError && e.error.message).toBe('MCP tool "e" reported an error')
    await imported.dispose()
  })

  it('turns a JSON-RPC error from tools/call into TOOL_FAILED', async () => {
    const fake = await fakeServer([tool('boom')])
    fake.onCall = () => {
      throw new Error('kaput')
    }
    const runtime = createToolRuntime()
    const imported = await importMcpTools(runtime, fake.client)
    const result = await call(runtime, 'boom', {})
    expect(codeOf(result)).toBe('TOOL_FAILED')
    expect(result.isError && result.error.message).toMatch(/kaput/)
    await imported.dispose()
  })

  it('maps audio, embedded resources and unknown content to text placeholders', async () => {
    const fake = await fakeServer([tool('mixed')])
    fake.onCall = () => ({
      content: [
        { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' },
        { type: 'resource', resource: { uri: 'file:///a.txt', text: 'hello' } },
        { type: 'resource', resource: { uri: 'file:///b.bin', blob: 'AAAA', mimeType: 'application/octet-stream' } },
        { type: 'resource_link', uri: 'file:///c', name: 'c' },
      ],
    })
    const runtime = createToolRuntime()
    const imported = await importMcpTools(runtime, fake.client)
    const result = await call(runtime, 'mixed', {})
    expect(result.content).toEqual([
      { type: 'text', text: '[audio audio/wav]' },
      { type: 'text', text: '[resource file:///a.txt]\nhello' },
      { type: 'text', text: '[resource file:///b.bin (application/octet-stream)]' },
      { type: 'text', text: '[resource link c: file:///c]' },
    ])
    await imported.dispose()
  })

  it('skips duplicate names and names already taken in the scope, without failing the import', async () => {
    const fake = await fakeServer([tool('dup'), tool('dup'), tool('taken')])
    const runtime = createToolRuntime()
    runtime.register({
      name: 'taken',
      description: '',
      parameters: { type: 'object' },
      output: { schema: {}, render: () => [] },
      execute: () => null,
    })
    const imported = await importMcpTools(runtime, fake.client)
    expect(imported.tools()).toEqual(['dup'])
    expect(imported.skipped()).toEqual([
      { name: 'dup', code: 'DUPLICATE_TOOL', message: 'the server listed this name twice' },
      expect.objectContaining({ name: 'taken', code: 'DUPLICATE_TOOL' }),
    ])
    await imported.dispose()
  })

  it('rejects with MCP_PROTOCOL_ERROR on a cursor loop and undoes everything', async () => {
    const fake = await fakeServer([tool('a')])
    fake.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [tool('a')], nextCursor: 'same' }))
    const runtime = createToolRuntime()
    await expect(importMcpTools(runtime, fake.client)).rejects.toMatchObject({ code: 'MCP_PROTOCOL_ERROR' })
    expect(runtime.schemas()).toEqual([])
    expect(fake.client.fallbackNotificationHandler).toBeUndefined()
  })

  it('rejects with MCP_PROTOCOL_ERROR when tools/list fails', async () => {
    const fake = await fakeServer([])
    fake.server.setRequestHandler(ListToolsRequestSchema, () => {
      throw new Error('no listing today')
    })
    await expect(importMcpTools(createToolRuntime(), fake.client)).rejects.toMatchObject({ code: 'MCP_PROTOCOL_ERROR', message: expect.stringMatching(/no listing today/) })
  })

  it('reports a failing background re-sync to onError and keeps the last good set', async () => {
    const fake = await fakeServer([tool('a')])
    const errors: ToolError[] = []
    const runtime = createToolRuntime()
    const imported = await importMcpTools(runtime, fake.client, { onError: (e) => errors.push(e) })
    fake.server.setRequestHandler(ListToolsRequestSchema, () => {
      throw new Error('flaky')
    })
    await fake.server.sendToolListChanged()
    await eventually(() => expect(errors).toHaveLength(1))
    expect(errors[0]!.code).toBe('MCP_PROTOCOL_ERROR')
    expect(imported.tools()).toEqual(['a'])
    await imported.dispose()
  })

  it('the signal cancels the listing, then disposes the import', async () => {
    const fake = await fakeServer([tool('a')])
    await expect(importMcpTools(createToolRuntime(), fake.client, { signal: AbortSignal.abort(new Error('stop')) })).rejects.toThrow('stop')
    const controller = new AbortController()
    const runtime = createToolRuntime()
    const imported = await importMcpTools(runtime, fake.client, { signal: controller.signal, ownsClient: true })
    expect(runtime.get('a')).toBeDefined()
    controller.abort()
    await eventually(() => expect(runtime.get('a')).toBeUndefined())
    expect(imported.tools()).toEqual([])
    await eventually(() => expect(fake.client.listTools()).rejects.toThrow())
  })

  it('validates its inputs', async () => {
    const fake = await fakeServer([])
    await expect(importMcpTools(null as never, fake.client)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
    await expect(importMcpTools(createToolRuntime(), {} as never)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
    await expect(importMcpTools(createToolRuntime(), fake.client, { prefix: 3 as never })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
  })

  it('skips malformed listed tools from a hostile peer without failing the import', async () => {
    // A hand-written peer: the SDK client would reject these pages itself, other clients may not.
    const page = {
      tools: [
        { name: 'ok', inputSchema: { type: 'object' } },
        { name: 'arr', inputSchema: { type: 'array' } },
        { name: 'none' },
        { inputSchema: { type: 'object' } },
        'junk',
        { name: 'nan', inputSchema: { type: 'object', default: Number.NaN } },
      ],
    }
    const peer: McpClientLike = {
      listTools: async () => page,
      callTool: async () => ({ content: [{ type: 'text', text: 'fine' }] }),
      close: async () => {},
    }
    const runtime = createToolRuntime()
    const imported = await importMcpTools(runtime, peer)
    expect(imported.tools()).toEqual(['ok'])
    expect(imported.skipped().map((s) => [s.name, s.code])).toEqual([
      ['arr', 'INVALID_SCHEMA'],
      ['none', 'INVALID_SCHEMA'],
      ['#3', 'MCP_PROTOCOL_ERROR'],
      ['#4', 'MCP_PROTOCOL_ERROR'],
      ['nan', 'INVALID_JSON'],
    ])
    expect((await call(runtime, 'ok', {})).content).toEqual([{ type: 'text', text: 'fine' }])
    await imported.dispose()
  })

  it('fails a call whose result is malformed (TOOL_FAILED), and rejects a malformed listing', async () => {
    const peer: McpClientLike = {
      listTools: async () => ({ tools: [{ name: 'x', inputSchema: { type: 'object' } }] }),
      callTool: async () => ({ content: 'not an array' }),
      close: async () => {},
    }
    const runtime = createToolRuntime()
    const imported = await importMcpTools(runtime, peer)
    const result = await call(runtime, 'x', {})
    expect(codeOf(result)).toBe('TOOL_FAILED')
    expect(result.isError && result.error.message).toMatch(/malformed result/)
    await imported.dispose()
    for (const listing of [null, { tools: 'x' }, { tools: [], nextCursor: 5 }]) {
      const bad: McpClientLike = { ...peer, listTools: async () => listing }
      await expect(importMcpTools(createToolRuntime(), bad)).rejects.toMatchObject({ code: 'MCP_PROTOCOL_ERROR' })
    }
  })
})
