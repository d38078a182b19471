/**
 * MCP batches are bounded in length, in response bytes and in work (issue 19, finding 6:
 * 487 KiB of `tools/list` requests were answered with 212 MiB, built and stringified on the
 * main thread), and the JSON-RPC envelope names unknown members (issue 23).
 */
import { describe, expect, it } from 'vitest'
import { DEFAULT_MCP_MAX_BATCH_LENGTH, DEFAULT_MCP_MAX_BATCH_RESPONSE_BYTES, JSON_RPC_ERRORS, createMcpApp } from '../../../src/mcp/index.js'
import type { McpAppOptions } from '../../../src/mcp/index.js'
import { createToolRuntime, defineTool } from '../../../src/index.js'
import { AUTH, TOKEN } from '../http/fixtures.js'

interface RpcAnswer {
  jsonrpc: '2.0'
  id: string | number | null
  result?: unknown
  error?: { code: number; message: string }
}

/** A runtime with `tools` wide tools (a big `tools/list`) and a `tick` tool that counts its runs. */
function mcpFixture(options: Partial<McpAppOptions> = {}, tools = 0) {
  const runtime = createToolRuntime()
  let ticks = 0
  runtime.register(
    defineTool({
      name: 'tick',
      description: 'Counts.',
      parameters: {},
      output: { schema: { type: 'integer' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
      execute: () => ++ticks,
    }),
  )
  for (let i = 0; i < tools; i++) {
    runtime.register(
      defineTool({
        name: `wide_${i}`,
        description: `A tool with a long description. ${'lorem ipsum '.repeat(40)}`,
        parameters: { path: { type: 'string', required: true, description: 'x'.repeat(200) } },
        output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
        execute: () => 'ok',
      }),
    )
  }
  const app = createMcpApp(runtime, { token: TOKEN, ...options })
  const post = async (body: unknown): Promise<{ status: number; text: string }> => {
    const response = await app.request('/', { method: 'POST', headers: { ...AUTH, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, body: JSON.stringify(body) })
    return { status: response.status, text: await response.text() }
  }
  return { runtime, post, get ticks() { return ticks } }
}

const list = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/list' })
const tick = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'tick', arguments: {} } })

describe('MCP batch bounds', () => {
  it('a batch longer than maxBatchLength is one -32600 error and nothing in it runs', async () => {
    expect(DEFAULT_MCP_MAX_BATCH_LENGTH).toBe(32)
    const fixture = mcpFixture()
    const tooLong = await fixture.post(Array.from({ length: 33 }, (_, i) => tick(i)))
    expect(tooLong.status).toBe(200)
    expect(JSON.parse(tooLong.text)).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'a JSON-RPC batch of 33 messages exceeds maxBatchLength (32); nothing in it was run: send at most 32 messages per request' },
    })
    expect(fixture.ticks).toBe(0)
    const atCap = await fixture.post(Array.from({ length: 32 }, (_, i) => tick(i)))
    expect((JSON.parse(atCap.text) as RpcAnswer[]).map((a) => a.id)).toEqual(Array.from({ length: 32 }, (_, i) => i))
    expect(fixture.ticks).toBe(32)
    // The option moves the cap.
    const small = mcpFixture({ maxBatchLength: 2 })
    expect((JSON.parse((await small.post([tick(1), tick(2), tick(3)])).text) as RpcAnswer).error?.message).toMatch(/exceeds maxBatchLength \(2\)/)
  })

  it('the finding\'s 487 KiB batch of tools/list is refused whole instead of answered with hundreds of MiB', async () => {
    const fixture = mcpFixture({ maxBodyBytes: 1024 * 1024 }, 20)
    const each = JSON.stringify(list(100_000)).length + 1
    const batch = Array.from({ length: Math.ceil((487 * 1024) / each) }, (_, i) => list(i))
    const answer = await fixture.post(batch)
    expect(answer.text.length).toBeLessThan(1000)
    expect((JSON.parse(answer.text) as RpcAnswer).error?.code).toBe(JSON_RPC_ERRORS.INVALID_REQUEST)
  })

  it('responses past maxBatchResponseBytes become -32000 errors and the later requests are not run', async () => {
    const fixture = mcpFixture({ maxBatchResponseBytes: 60_000 }, 20)
    const one = (await fixture.post(list(1))).text.length
    expect(one).toBeGreaterThan(15_000)
    const fitted = Math.floor(60_000 / one)
    // `fitted` lists fit; the next one does not; the ticks after it must not run.
    const batch = [...Array.from({ length: fitted + 1 }, (_, i) => list(i + 1)), tick(fitted + 2), tick(fitted + 3)]
    const { text } = await fixture.post(batch)
    expect(text.length).toBeLessThan(60_000 + 1000)
    const answers = JSON.parse(text) as RpcAnswer[]
    expect(answers.map((a) => a.id)).toEqual(batch.map((m) => m.id))
    expect(answers.slice(0, fitted).every((a) => a.result !== undefined)).toBe(true)
    for (const answer of answers.slice(fitted)) {
      expect(answer.error).toEqual({
        code: JSON_RPC_ERRORS.RESPONSE_TOO_LARGE,
        message: 'not answered: the responses to this batch reached maxBatchResponseBytes (60000 bytes); send fewer or smaller requests per batch',
      })
    }
    // The tick calls after the budget was spent never ran.
    expect(fixture.ticks).toBe(0)
    // A single message is not a batch: it is answered in full.
    expect((await fixture.post(list(9))).text.length).toBe(one)
  })

  it('at the default caps, a batch of 32 big tools/list answers at most 4 MiB', async () => {
    expect(DEFAULT_MCP_MAX_BATCH_RESPONSE_BYTES).toBe(4 * 1024 * 1024)
    const fixture = mcpFixture({}, 300)
    const { text } = await fixture.post(Array.from({ length: 32 }, (_, i) => list(i)))
    expect(new TextEncoder().encode(text).byteLength).toBeLessThanOrEqual(DEFAULT_MCP_MAX_BATCH_RESPONSE_BYTES + 32 * 300)
    const answers = JSON.parse(text) as RpcAnswer[]
    expect(answers).toHaveLength(32)
    expect(answers.some((a) => a.error?.code === JSON_RPC_ERRORS.RESPONSE_TOO_LARGE)).toBe(true)
  })

  it('refuses invalid options', () => {
    const runtime = createToolRuntime()
    for (const bad of [{ maxBatchLength: 0 }, { maxBatchLength: 1.5 }, { maxBatchResponseBytes: -1 }, { maxBatchResponseBytes: '1' }]) {
      expect(() => createMcpApp(runtime, { token: TOKEN, ...(bad as object) })).toThrow(/must be a positive integer/)
    }
  })
})

describe('the JSON-RPC envelope and tools/call params name unknown members (issue 23)', () => {
  it('an unknown request member is -32600 naming it; `args` in tools/call params is -32602 suggesting `arguments`', async () => {
    const fixture = mcpFixture()
    expect(JSON.parse((await fixture.post({ jsonrpc: '2.0', id: 1, method: 'tools/list', parms: {} })).text)).toEqual({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32600, message: 'unknown field "parms" in the JSON-RPC request (did you mean "params"? expected: jsonrpc, id, method, params)' },
    })
    expect(JSON.parse((await fixture.post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'tick', args: {} } })).text)).toEqual({
      jsonrpc: '2.0',
      id: 2,
      error: { code: -32602, message: 'unknown field "args" in tools/call params (did you mean "arguments"? expected: name, arguments, _meta)' },
    })
    expect(fixture.ticks).toBe(0)
    // `_meta` is MCP's own.
    const ok = JSON.parse((await fixture.post({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'tick', arguments: {}, _meta: { progressToken: 1 } } })).text) as RpcAnswer
    expect(ok.result).toBeDefined()
  })
})

describe('a streamed MCP answer whose client stops reading', () => {
  it('is closed with a final STREAM_BACKLOG event once its unread messages pass maxStreamBacklogBytes', async () => {
    const runtime = createToolRuntime()
    let bigCalls = 0
    runtime.register(
      defineTool({
        name: 'big',
        description: 'Returns 100 KB.',
        parameters: {},
        output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
        execute: () => `${++bigCalls}`.padEnd(100_000, 'b'),
      }),
    )
    const app = createMcpApp(runtime, { token: TOKEN, maxStreamBacklogBytes: 150_000 })
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      app.request('/', { method: 'POST', headers: { ...AUTH, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(body) })
    const init = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: { elicitation: {} }, clientInfo: { name: 'raw', version: '1' } } })
    const session = init.headers.get('Mcp-Session-Id')!
    const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'big', arguments: {} } })
    const streamed = await post([call(1), call(2), call(3), call(4), call(5), call(6)], { 'Mcp-Session-Id': session })
    expect(streamed.headers.get('Content-Type')).toMatch(/^text\/event-stream/)
    // Nothing is read until every call has been answered (or cancelled).
    await new Promise((resolve) => setTimeout(resolve, 200))
    const text = await streamed.text()
    const frames = text.split('\n\n').filter((f) => f.trim() !== '')
    const last = frames.at(-1)!
    expect(last).toMatch(/^event: error\ndata: /)
    expect(JSON.parse(last.slice(last.indexOf('data: ') + 6))).toEqual({
      error: { code: 'STREAM_BACKLOG', message: expect.stringMatching(/^this stream fell behind: \d+ bytes of messages were not read in time \(maxStreamBacklogBytes 150000\) and were dropped; its calls were cancelled$/) },
    })
    // The client got fewer answers than it asked for: the rest were dropped, not kept for it.
    expect(frames.filter((f) => f.startsWith('event: message')).length).toBeLessThan(6)
    expect(text.length).toBeLessThan(500_000)
  })
})
