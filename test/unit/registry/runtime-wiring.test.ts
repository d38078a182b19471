/**
 * Configured once (issue 38 item 2): the runtime makes its approval broker over its store
 * and its event hub, disposes what it made and leaves what it was given; the HTTP app and
 * its MCP endpoint read them from the runtime, behind one gate and one option set.
 */
import { describe, expect, it } from 'vitest'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import { createSessionLogHub, createToolsApp } from '../../../src/http/index.js'
import { createMcpApp } from '../../../src/mcp/index.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import type { SessionLogEvent } from '../../../src/runtime-types.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ToolRuntime } from '../../../src/runtime-types.js'
import { until } from '../approvals/helpers.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'

const TOKEN = 'wiring-token-0123456789abcdef'
const AUTH = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }

function withPay(runtime: ToolRuntime): string[] {
  const paid: string[] = []
  runtime.register(
    defineTool({
      name: 'pay',
      description: 'Pays (asks a person).',
      parameters: { cents: { type: 'number', required: true } },
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: (args) => {
        paid.push(String(args.cents))
        return `paid ${args.cents}`
      },
    }),
  )
  runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
  return paid
}

const INVALID = expect.objectContaining({ code: 'INVALID_OPTIONS' })

describe('createToolRuntime({ approvals })', () => {
  it('makes one broker over the runtime store: its requests are records there, the app lists and decides them, dispose() ends it', async () => {
    const store = createMemoryStore()
    const runtime = createToolRuntime({ store, approvals: { timeoutMs: 60_000 } })
    const paid = withPay(runtime)
    expect(runtime.approvals!.timeoutMs).toBe(60_000)
    const app = createToolsApp(runtime, { token: TOKEN })
    const result = runtime.execute({ callId: 'c1', name: 'pay', arguments: { cents: 3 }, signal: new AbortController().signal })
    await until(async () => (await runtime.approvals!.pending()).length === 1)
    // The request is in the runtime's store: given once, it is the broker's too.
    expect((await store.list('approvals/open/')).entries).toHaveLength(1)
    const listed = (await (await app.request('/v1/approvals', { headers: AUTH })).json()) as { approvals: { id: string; name: string }[] }
    expect(listed.approvals.map((a) => a.name)).toEqual(['pay'])
    const decided = await app.request(`/v1/approvals/${listed.approvals[0]!.id}`, { method: 'POST', headers: AUTH, body: JSON.stringify({ decision: 'allow' }) })
    expect(decided.status).toBe(200)
    expect((await result).isError).toBe(false)
    expect(paid).toEqual(['3'])
    await runtime.dispose()
    expect(await runtime.approvals!.decide('x', { decision: 'allow' })).toMatchObject({ ok: false, code: 'BROKER_DISPOSED' })
  })

  it('without a store the broker keeps its own memory store; without approvals an ask is denied and the routes answer 404', async () => {
    const asking = createToolRuntime({ approvals: {} })
    expect(await asking.approvals!.pending()).toEqual([])
    await asking.dispose()
    const bare = createToolRuntime()
    withPay(bare)
    expect(bare.approvals).toBeUndefined()
    const result = await bare.execute({ callId: 'c1', name: 'pay', arguments: { cents: 1 }, signal: new AbortController().signal })
    expect(result.isError && result.error.info?.code).toBe('DENIED_BY_APPROVAL')
    expect((await createToolsApp(bare, { token: TOKEN }).request('/v1/approvals', { headers: AUTH })).status).toBe(404)
  })

  it('a broker passed in is used as it is and stays the caller\'s: the runtime does not dispose it', async () => {
    const broker = createApprovalBroker()
    const runtime = createToolRuntime({ approvals: broker })
    expect(runtime.approvals).toBe(broker)
    await runtime.dispose()
    expect(await broker.decide('x', { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_NOT_FOUND' })
    await broker.dispose()
  })

  it('refuses approvals together with approval, and approvals that are not an object or bad broker options', () => {
    expect(() => createToolRuntime({ approvals: {}, approval: async () => true })).toThrow(
      expect.objectContaining({ code: 'INVALID_OPTIONS', message: "createToolRuntime: give either approvals (the runtime's broker) or approval (your own handler), not both" }),
    )
    for (const approvals of [null, 'yes', [], 5]) expect(() => createToolRuntime({ approvals } as never)).toThrow(INVALID)
    expect(() => createToolRuntime({ approvals: { timeoutMs: -1 } })).toThrow(INVALID)
    expect(() => createToolRuntime({ approvals: { nope: 1 } as never })).toThrow(INVALID)
  })
})

/** workerd refuses code generation while it serves (the in-process runtime cannot run a program there); the hub is the same code everywhere. */
const inWorkerd = globalThis.navigator?.userAgent === 'Cloudflare-Workers'

describe('runtime.events', () => {
  it.skipIf(inWorkerd)('is a hub the runtime makes; a sessionLog sink hears each event first; a hub passed in is the runtime\'s', async () => {
    const heard: string[] = []
    const sink = { append: (event: SessionLogEvent) => void heard.push(`sink:${event.type}`) }
    const runtime = createToolRuntime({ mode: 'code', codeRuntime: createInProcessRuntime(), sessionLog: sink })
    runtime.register(defineTool({ name: 'echo', description: 'Echo', parameters: {}, output: { schema: { type: 'string' }, render: () => [] }, execute: () => 'e' }))
    runtime.events.subscribe((event) => void heard.push(`hub:${event.type}`))
    const result = await runtime.execute({ callId: 'r1', name: 'run_code', arguments: { code: 'await tools.echo({}); return 1', description: 'd' }, signal: new AbortController().signal })
    expect(result.isError ? result.error : undefined).toBeUndefined()
    expect(heard).toEqual(['sink:tool/code-dispatch-start', 'hub:tool/code-dispatch-start', 'sink:tool/code-dispatch', 'hub:tool/code-dispatch'])
    const hub = createSessionLogHub()
    expect(createToolRuntime({ sessionLog: hub }).events).toBe(hub)
  })
})

describe('createToolsApp(runtime, { mcp })', () => {
  const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } })

  it('mounts the MCP endpoint at /mcp behind the same token, origins and shutdown', async () => {
    const stopping = new AbortController()
    const runtime = createToolRuntime()
    const app = createToolsApp(runtime, { token: TOKEN, signal: stopping.signal, cors: { origins: ['https://ok.example'] }, mcp: { serverInfo: { name: 'yard', version: '9' } } })
    const ok = await app.request('/mcp', { method: 'POST', headers: { ...AUTH, Accept: 'application/json' }, body: initialize })
    expect(ok.status).toBe(200)
    expect(((await ok.json()) as { result: { serverInfo: unknown } }).result.serverInfo).toEqual({ name: 'yard', version: '9' })
    expect((await app.request('/mcp', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: initialize })).status).toBe(401)
    expect((await app.request('/mcp', { method: 'POST', headers: { ...AUTH, Origin: 'https://evil.example' }, body: initialize })).status).toBe(403)
    expect((await app.request('/mcp', { method: 'POST', headers: { ...AUTH, Origin: 'https://ok.example' }, body: initialize })).status).toBe(200)
    stopping.abort()
    expect((await app.request('/mcp', { method: 'POST', headers: AUTH, body: initialize })).status).toBe(503)
    // Without `mcp` there is no /mcp.
    expect((await createToolsApp(runtime, { token: TOKEN }).request('/mcp', { method: 'POST', headers: AUTH, body: initialize })).status).toBe(404)
  })

  it('refuses an MCP option it does not know, or a shared one put inside mcp, with one set of texts', () => {
    const runtime = createToolRuntime()
    expect(() => createToolsApp(runtime, { token: TOKEN, mcp: { token: TOKEN } as never })).toThrow(
      expect.objectContaining({ message: 'createToolsApp: mcp has an unknown option "token" (expected agent, maxBatchLength, maxBatchResponseBytes, serverInfo, instructions; the shared ones go beside mcp)' }),
    )
    expect(() => createToolsApp(runtime, { token: TOKEN, mcp: { maxBatchLength: 0 } })).toThrow(expect.objectContaining({ message: 'createToolsApp: mcp.maxBatchLength must be a positive integer' }))
    expect(() => createToolsApp(runtime, { token: TOKEN, mcp: 'yes' as never })).toThrow(expect.objectContaining({ message: 'createToolsApp: mcp must be true or an object of MCP options' }))
    // The same shared rule, the same words, whichever factory reads it.
    for (const [factory, make] of [
      ['createToolsApp', (options: object) => createToolsApp(runtime, { token: TOKEN, ...options })],
      ['createMcpApp', (options: object) => createMcpApp(runtime, { token: TOKEN, ...options })],
    ] as const) {
      expect(() => make({ cors: { origins: ['https://a.example/path'] } })).toThrow(expect.objectContaining({ message: `${factory}: cors.origins entry "https://a.example/path" is not an exact origin (scheme://host[:port])` }))
      expect(() => make({ allowedOrigins: ['https://a.example'] })).toThrow(expect.objectContaining({ message: `${factory}: allowedOrigins is no longer an option here: use cors: { origins }` }))
      expect(() => make({ maxStreamBacklogBytes: 0 })).toThrow(expect.objectContaining({ message: `${factory}: maxStreamBacklogBytes must be a positive integer` }))
    }
  })
})
