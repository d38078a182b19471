/**
 * `tools/list` over MCP: a POST's first list is the last answer while no tool changed, and
 * new descriptors are serialized in slices with a turn of the host between them (the work
 * of one turn is counted, on a clock that moves 1 ms a reading, not timed).
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createMcpApp } from '../../../src/mcp/index.js'
import { createToolRuntime, defineTool } from '../../../src/index.js'
import type { ToolRuntime } from '../../../src/index.js'
import { JSON_AUTH, TOKEN } from '../http/fixtures.js'
import { countTurns } from '../../support/turn-counter.js'

function tool(name: string) {
  return defineTool({
    name,
    description: `The tool ${name}.`,
    parameters: { path: { type: 'string', required: true } },
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    execute: () => 'ok',
  })
}

function runtimeWith(tools: number): ToolRuntime {
  const runtime = createToolRuntime()
  for (let i = 0; i < tools; i++) runtime.register(tool(`t_${i}`))
  return runtime
}

async function listed(app: ReturnType<typeof createMcpApp>): Promise<string[]> {
  const response = await app.request('/', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) })
  const answer = (await response.json()) as { result: { tools: { name: string }[] } }
  return answer.result.tools.map((t) => t.name)
}

describe('MCP tools/list', () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it('answers every change of the tool set, across POSTs', async () => {
    const runtime = runtimeWith(3)
    const app = createMcpApp(runtime, { token: TOKEN, agent: 'a1' })
    expect(await listed(app)).toEqual(['t_0', 't_1', 't_2'])
    expect(await listed(app)).toEqual(['t_0', 't_1', 't_2'])
    const added = runtime.register(tool('t_3'))
    expect(await listed(app)).toEqual(['t_0', 't_1', 't_2', 't_3'])
    added()
    expect(await listed(app)).toEqual(['t_0', 't_1', 't_2'])
    const restricted = runtime.agent('a1').restrict({ deny: ['t_1'] })
    expect(await listed(app)).toEqual(['t_0', 't_2'])
    restricted()
    expect(await listed(app)).toEqual(['t_0', 't_1', 't_2'])
    // An assemble listener's tools are new objects each time: never answered from the last list.
    let suffix = 'a'
    runtime.on('system-prompt/assemble', (assembly) => ({ ...assembly, tools: assembly.tools.map((t) => ({ ...t, description: `${t.description} ${suffix}` })) }))
    const described = async () => {
      const response = await app.request('/', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) })
      return ((await response.json()) as { result: { tools: { description: string }[] } }).result.tools[0]!.description
    }
    expect(await described()).toBe('The tool t_0. a')
    suffix = 'b'
    expect(await described()).toBe('The tool t_0. b')
    await runtime.dispose()
  })

  it('serializes new descriptors in slices, a turn of the host between them', async () => {
    const runtime = runtimeWith(300)
    const app = createMcpApp(runtime, { token: TOKEN })
    // Each clock reading moves 1 ms: a slice of 2 ms holds a few descriptors.
    let clock = 0
    vi.spyOn(performance, 'now').mockImplementation(() => (clock += 1))
    const counter = countTurns()
    const names = await listed(app)
    const cold = counter.turns()
    vi.restoreAllMocks()
    counter.reset()
    expect(await listed(app)).toHaveLength(300)
    counter.stop()
    expect(names).toHaveLength(300)
    // 300 new descriptors: dozens of turns; the same list again: the last answer, in the request's own few turns.
    expect(cold).toBeGreaterThan(50)
    expect(counter.turns()).toBeLessThan(10)
    await runtime.dispose()
  })
})

describe('a large single MCP answer', () => {
  it('is streamed in pieces of at most 64 Ki units, a turn of the host between them', async () => {
    const runtime = runtimeWith(2_000)
    const app = createMcpApp(runtime, { token: TOKEN })
    const response = await app.request('/', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) })
    const reader = response.body!.getReader()
    const sizes: number[] = []
    const chunks: Uint8Array[] = []
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      sizes.push(value.byteLength)
      chunks.push(value)
    }
    expect(sizes.length).toBeGreaterThan(2)
    expect(Math.max(...sizes)).toBeLessThanOrEqual(64 * 1024)
    const answer = JSON.parse(new TextDecoder().decode(Buffer.concat(chunks))) as { id: number; result: { tools: unknown[] } }
    expect(answer.id).toBe(1)
    expect(answer.result.tools).toHaveLength(2_000)
    await runtime.dispose()
  })

  it('a small one is one body with its length', async () => {
    const runtime = runtimeWith(2)
    const app = createMcpApp(runtime, { token: TOKEN })
    const response = await app.request('/', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) })
    const text = await response.text()
    expect(JSON.parse(text)).toMatchObject({ jsonrpc: '2.0', id: 1 })
    await runtime.dispose()
  })
})
