/**
 * MCP import against a real SDK `Server` and `Client` joined by the SDK's in-memory
 * transport, through a real `createToolRuntime()`. Imports nothing from `node:*`, so the
 * same file runs in the node, browser (Chromium) and workerd projects (issue 7: "with an
 * in-memory transport in the browser/workerd suites"). The Node-only suite with the
 * stdio server-everything lives in import.test.ts.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createToolRuntime } from '../../../src/index.js'
import { importMcpTools, MCP_CONTENT_OUTPUT_SCHEMA } from '../../../src/mcp/import.js'
import type { ToolRuntime } from '../../../src/runtime-types.js'
import type { ToolExecutionResult } from '../../../src/types.js'
import { eventually } from '../../support/poll.js'

const ECHO: Tool = {
  name: 'echo',
  description: 'Echoes the text back',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
}

const WEATHER_OUTPUT = {
  type: 'object',
  properties: { city: { type: 'string' }, celsius: { type: 'number' } },
  required: ['city', 'celsius'],
  additionalProperties: false,
} as const

const WEATHER: Tool = {
  name: 'weather',
  description: 'The weather in a city',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  outputSchema: WEATHER_OUTPUT as unknown as Tool['outputSchema'],
}

const FAIL: Tool = {
  name: 'fail',
  description: 'Always reports an error',
  inputSchema: { type: 'object' },
}

const SLOW: Tool = {
  name: 'slow',
  description: 'Waits until cancelled',
  inputSchema: { type: 'object' },
}

const ADDED: Tool = {
  name: 'added',
  description: 'Registered after the import',
  inputSchema: { type: 'object' },
}

type Handler = (args: Record<string, unknown>, signal: AbortSignal) => CallToolResult | Promise<CallToolResult>

/** A live in-memory SDK server whose tool list the test mutates. */
interface Peer {
  readonly server: Server
  readonly client: Client
  /** What `tools/list` answers; mutate, then `server.sendToolListChanged()`. */
  tools: Tool[]
  readonly handlers: Map<string, Handler>
  /** How many `tools/list` requests the server answered. */
  listCalls: number
  /** Resolves when the slow tool's call reached the server. */
  readonly slowStarted: Promise<void>
  /** Resolves with the server-side abort reason once the slow call is cancelled. */
  readonly slowCancelled: Promise<unknown>
}

const peers: Peer[] = []
const runtimes: ToolRuntime[] = []

afterEach(async () => {
  for (const peer of peers.splice(0)) {
    await peer.client.close()
    await peer.server.close()
  }
  for (const runtime of runtimes.splice(0)) await runtime.dispose()
})

async function startPeer(): Promise<Peer> {
  let markStarted!: () => void
  let markCancelled!: (reason: unknown) => void
  const slowStarted = new Promise<void>((resolve) => (markStarted = resolve))
  const slowCancelled = new Promise<unknown>((resolve) => (markCancelled = resolve))
  const server = new Server({ name: 'portable-fake', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } })
  const peer: Peer = {
    server,
    client: new Client({ name: 'toolyard-test', version: '1.0.0' }),
    tools: [ECHO, WEATHER, FAIL, SLOW],
    handlers: new Map<string, Handler>([
      ['echo', (args) => ({ content: [{ type: 'text', text: `echo: ${String(args.text)}` }] })],
      [
        'weather',
        (args) => {
          const value = { city: String(args.city), celsius: -3 }
          return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value }
        },
      ],
      ['fail', () => ({ content: [{ type: 'text', text: 'the disk is on fire' }], isError: true })],
      [
        'slow',
        (_args, signal) =>
          new Promise<CallToolResult>((resolve) => {
            // Never answers on its own: only the client's notifications/cancelled ends it.
            const finish = (): void => {
              markCancelled(signal.reason)
              resolve({ content: [{ type: 'text', text: 'cancelled' }] })
            }
            if (signal.aborted) finish()
            else signal.addEventListener('abort', finish, { once: true })
            markStarted()
          }),
      ],
      ['added', () => ({ content: [{ type: 'text', text: 'hello from a new tool' }] })],
    ]),
    listCalls: 0,
    slowStarted,
    slowCancelled,
  }
  server.setRequestHandler(ListToolsRequestSchema, () => {
    peer.listCalls++
    return { tools: peer.tools }
  })
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    const name = request.params.name
    const handler = peer.tools.some((t) => t.name === name) ? peer.handlers.get(name) : undefined
    if (handler === undefined) return { content: [{ type: 'text', text: `unknown tool ${name}` }], isError: true }
    return handler(request.params.arguments ?? {}, extra.signal)
  })
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair()
  await server.connect(serverSide)
  await peer.client.connect(clientSide)
  peers.push(peer)
  return peer
}

function newRuntime(): ToolRuntime {
  const runtime = createToolRuntime()
  runtimes.push(runtime)
  return runtime
}

let callCount = 0
const call = (runtime: ToolRuntime, name: string, args: unknown, signal: AbortSignal = new AbortController().signal): Promise<ToolExecutionResult> =>
  runtime.execute({ callId: `portable-${++callCount}`, name, arguments: args, signal })

const codeOf = (result: ToolExecutionResult): string | undefined => (result.isError ? result.error.info?.code : undefined)

describe('importMcpTools over the SDK in-memory transport (portable)', () => {
  it('registers every listed tool under the prefix, presenting schemas as the server lists them', async () => {
    const peer = await startPeer()
    const runtime = newRuntime()
    const imported = await importMcpTools(runtime, peer.client, { prefix: 'yard_' })
    expect(imported.tools()).toEqual(['yard_echo', 'yard_weather', 'yard_fail', 'yard_slow'])
    expect(imported.skipped()).toEqual([])
    expect(runtime.schemas().map((s) => s.name).sort()).toEqual(['yard_echo', 'yard_fail', 'yard_slow', 'yard_weather'])
    // Only the prefixed names exist.
    expect(runtime.get('echo')).toBeUndefined()
    const echo = runtime.get('yard_echo')!
    expect(echo.description).toBe('Echoes the text back')
    expect(echo.parameters).toEqual(ECHO.inputSchema)
    expect(echo.output.schema).toEqual(MCP_CONTENT_OUTPUT_SCHEMA)
    // A declared outputSchema becomes the output declaration.
    expect(runtime.get('yard_weather')!.output.schema).toEqual(WEATHER_OUTPUT)
    await imported.dispose()
  })

  it('calls through the pipeline: content tools yield { content }, structured tools yield structuredContent', async () => {
    const peer = await startPeer()
    const runtime = newRuntime()
    const imported = await importMcpTools(runtime, peer.client, { prefix: 'yard_' })
    const echo = await call(runtime, 'yard_echo', { text: 'hi there' })
    expect(echo).toEqual({
      isError: false,
      value: { content: [{ type: 'text', text: 'echo: hi there' }] },
      content: [{ type: 'text', text: 'echo: hi there' }],
    })
    const weather = await call(runtime, 'yard_weather', { city: 'Oslo' })
    expect(weather).toEqual({
      isError: false,
      value: { city: 'Oslo', celsius: -3 },
      content: [{ type: 'text', text: '{"city":"Oslo","celsius":-3}' }],
    })
    await imported.dispose()
  })

  it('maps an isError result to TOOL_FAILED carrying the server text', async () => {
    const peer = await startPeer()
    const runtime = newRuntime()
    const imported = await importMcpTools(runtime, peer.client, { prefix: 'yard_' })
    const result = await call(runtime, 'yard_fail', {})
    expect(result.isError).toBe(true)
    expect(codeOf(result)).toBe('TOOL_FAILED')
    expect(result.isError && result.error.message).toBe('the disk is on fire')
    expect(result.content).toEqual([{ type: 'text', text: 'Error: the disk is on fire' }])
    // The connection stays usable after a failed call.
    expect((await call(runtime, 'yard_echo', { text: 'still here' })).isError).toBe(false)
    await imported.dispose()
  })

  it('aborting the execution cancels the call on the server (ABORTED)', async () => {
    const peer = await startPeer()
    const runtime = newRuntime()
    const imported = await importMcpTools(runtime, peer.client, { prefix: 'yard_' })
    const controller = new AbortController()
    const pending = call(runtime, 'yard_slow', {}, controller.signal)
    // Abort only once the request is in the server's hands, so the cancellation must travel.
    await peer.slowStarted
    controller.abort(new Error('user pressed stop'))
    const result = await pending
    expect(codeOf(result)).toBe('ABORTED')
    // The SDK client sent notifications/cancelled and the server's handler saw its signal abort.
    await expect(peer.slowCancelled).resolves.toBeDefined()
    expect((await call(runtime, 'yard_echo', { text: 'after abort' })).content).toEqual([{ type: 'text', text: 'echo: after abort' }])
    await imported.dispose()
  })

  it('re-syncs on notifications/tools/list_changed when the server adds and removes tools', async () => {
    const peer = await startPeer()
    const runtime = newRuntime()
    const changes: string[] = []
    runtime.on('tools/changed', (event) => changes.push(`${event.kind}:${event.name}`))
    const imported = await importMcpTools(runtime, peer.client, { prefix: 'yard_' })
    changes.length = 0
    const listsBefore = peer.listCalls

    peer.tools = [ECHO, WEATHER, SLOW, ADDED]
    await peer.server.sendToolListChanged()
    await eventually(() => expect(imported.tools()).toEqual(['yard_echo', 'yard_weather', 'yard_slow', 'yard_added']))

    expect(peer.listCalls).toBeGreaterThan(listsBefore)
    expect(runtime.get('yard_fail')).toBeUndefined()
    expect(changes.sort()).toEqual(['register:yard_added', 'unregister:yard_fail'])
    expect((await call(runtime, 'yard_added', {})).content).toEqual([{ type: 'text', text: 'hello from a new tool' }])
    // A call to the removed name fails in the registry, never reaching the server.
    expect(codeOf(await call(runtime, 'yard_fail', {}))).toBe('UNKNOWN_TOOL')
    await imported.dispose()
  })

  it('dispose unregisters everything, leaves the borrowed client open and ignores later notifications', async () => {
    const peer = await startPeer()
    const runtime = newRuntime()
    const imported = await importMcpTools(runtime, peer.client, { prefix: 'yard_' })
    expect(runtime.schemas()).toHaveLength(4)
    await imported.dispose()
    await imported.dispose()
    expect(imported.tools()).toEqual([])
    expect(runtime.schemas()).toEqual([])
    expect(runtime.get('yard_echo')).toBeUndefined()
    expect(peer.client.fallbackNotificationHandler).toBeUndefined()
    await expect(imported.refresh()).rejects.toMatchObject({ code: 'DISPOSED' })

    // The borrowed client is still connected.
    expect((await peer.client.listTools()).tools.map((t) => t.name)).toEqual(['echo', 'weather', 'fail', 'slow'])
    const listsAfter = peer.listCalls
    peer.tools = [ADDED]
    await peer.server.sendToolListChanged()
    // A ping answer travels the same server → client path after the notification: once it
    // is back, the notification has been delivered.
    await peer.client.ping()
    expect(peer.listCalls).toBe(listsAfter)
    expect(runtime.schemas()).toEqual([])
  })

  it('ownsClient: dispose closes the client', async () => {
    const peer = await startPeer()
    const runtime = newRuntime()
    const imported = await importMcpTools(runtime, peer.client, { ownsClient: true })
    expect(runtime.get('echo')).toBeDefined()
    await imported.dispose()
    expect(runtime.get('echo')).toBeUndefined()
    await expect(peer.client.listTools()).rejects.toThrow()
  })
})
