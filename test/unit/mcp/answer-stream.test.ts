/**
 * A batch's JSON answer is streamed in bounded pieces with a turn of the host between them
 * (issue 34 item 6: four cap-size `tools/list` batches at once stalled the host 29 ms): the
 * work of one turn is counted here, not timed.
 */
import { describe, expect, it, vi } from 'vitest'
import { createMcpApp, listMcpTools } from '../../../src/mcp/index.js'
import { createToolRuntime, defineTool } from '../../../src/index.js'
import { AUTH, TOKEN } from '../http/fixtures.js'
import { countTurns } from '../../support/turn-counter.js'

/** The largest chunk one pull may encode: 64 Ki UTF-16 units, up to 3 UTF-8 bytes each. */
const MAX_CHUNK_BYTES = 3 * 64 * 1024

function wideRuntime(tools: number, description: (i: number) => string) {
  const runtime = createToolRuntime()
  for (let i = 0; i < tools; i++) {
    runtime.register(
      defineTool({
        name: `wide_${i}`,
        description: description(i),
        parameters: { path: { type: 'string', required: true, description: 'x'.repeat(200) } },
        output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
        execute: () => 'ok',
      }),
    )
  }
  return runtime
}

const wideApp = (tools: number, description: (i: number) => string) => createMcpApp(wideRuntime(tools, description), { token: TOKEN })

const lists = (n: number) => Array.from({ length: n }, (_, id) => ({ jsonrpc: '2.0', id, method: 'tools/list' }))

/** Reads `body` chunk by chunk, counting the host's turns (a chained setTimeout) each chunk took. */
async function readCountingTurns(body: ReadableStream<Uint8Array>): Promise<{ chunks: Uint8Array[]; turns: number[] }> {
  const counter = countTurns()
  const reader = body.getReader()
  const chunks: Uint8Array[] = []
  const at: number[] = []
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    chunks.push(value)
    at.push(counter.turns())
  }
  counter.stop()
  return { chunks, turns: at }
}

describe('MCP batch answer stream', () => {
  it('encodes at most 64 Ki units a pull and lets the host turn between pulls', async () => {
    const app = wideApp(300, () => `A tool with a long description. ${'lorem ipsum '.repeat(40)}`)
    const response = await app.request('/', { method: 'POST', headers: { ...AUTH, 'Content-Type': 'application/json' }, body: JSON.stringify(lists(32)) })
    expect(response.status).toBe(200)
    const { chunks, turns } = await readCountingTurns(response.body!)
    const sizes = chunks.map((chunk) => chunk.byteLength)
    // ~4 MiB of answer: well over a hundred pieces, none larger than one pull's bound.
    expect(sizes.reduce((a, b) => a + b, 0)).toBeGreaterThan(3.5 * 1024 * 1024)
    expect(chunks.length).toBeGreaterThan(60)
    expect(Math.max(...sizes)).toBeLessThanOrEqual(64 * 1024 + 2)
    // Each piece after the first waited for a turn of the host (a timer ran in between).
    for (let i = 1; i < turns.length; i++) expect(turns[i]!).toBeGreaterThan(turns[i - 1]!)
    const answers = JSON.parse(new TextDecoder().decode(Buffer.concat(chunks))) as { id: number; result?: { tools: unknown[] }; error?: { code: number } }[]
    expect(answers.map((a) => a.id)).toEqual(lists(32).map((m) => m.id))
    expect(answers[0]!.result!.tools).toHaveLength(300)
    expect(answers.at(-1)!.error!.code).toBe(-32000)
  })

  it('never splits a surrogate pair between two pulls', async () => {
    // One description of 140,000 units across the 64 Ki boundaries, at both parities: one of them puts a pair across each.
    for (const prefix of ['', 'a']) {
      const description = (i: number) => `${prefix}${i} ${'😀'.repeat(70_000)}`
      const app = wideApp(1, description)
      const response = await app.request('/', { method: 'POST', headers: { ...AUTH, 'Content-Type': 'application/json' }, body: JSON.stringify(lists(3)) })
      const { chunks } = await readCountingTurns(response.body!)
      expect(chunks.length).toBeGreaterThan(3)
      for (const chunk of chunks) expect(chunk.byteLength).toBeLessThanOrEqual(MAX_CHUNK_BYTES)
      const text = new TextDecoder().decode(Buffer.concat(chunks))
      expect(text).not.toContain('\uFFFD')
      const answers = JSON.parse(text) as { result: { tools: { description: string }[] } }[]
      for (const answer of answers) expect(answer.result.tools.map((t) => t.description)).toEqual([description(0)])
    }
  })

  it('serializes a tool descriptor once while the tool is unchanged, and lists what listMcpTools lists', async () => {
    const runtime = wideRuntime(50, (i) => `tool ${i}`)
    const changing = (description: string) =>
      runtime.register(defineTool({ name: 'changing', description, parameters: {}, output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] }, execute: () => 'ok' }))
    const off = changing('before')
    const app = createMcpApp(runtime, { token: TOKEN })
    const post = async () => {
      const response = await app.request('/', { method: 'POST', headers: { ...AUTH, 'Content-Type': 'application/json' }, body: JSON.stringify(lists(2)) })
      return JSON.parse(await response.text()) as { result: unknown }[]
    }
    const stringify = vi.spyOn(JSON, 'stringify')
    const descriptors = () => stringify.mock.calls.filter(([value]) => typeof value === 'object' && value !== null && ('inputSchema' in value || 'tools' in value)).length
    try {
      const first = await post()
      expect(descriptors()).toBe(51)
      expect(first[0]!.result).toEqual(JSON.parse(JSON.stringify({ tools: listMcpTools(runtime) })))
      expect(first[1]!.result).toEqual(first[0]!.result)
      stringify.mockClear()
      expect((await post())[0]!.result).toEqual(first[0]!.result)
      expect(descriptors()).toBe(0)
      // A changed tool is a new schema object: only it is serialized again, and the list shows it.
      off()
      changing('changed')
      stringify.mockClear()
      const changed = (await post())[0]!.result as { tools: { name: string; description: string }[] }
      expect(descriptors()).toBe(1)
      expect(changed).toEqual(JSON.parse(JSON.stringify({ tools: listMcpTools(runtime) })))
      expect(changed.tools.find((t) => t.name === 'changing')!.description).toBe('changed')
    } finally {
      stringify.mockRestore()
    }
  })
})
