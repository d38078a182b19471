/**
 * The host stays responsive while a client sends the heaviest MCP batches it accepts,
 * while a run floods a stream client that reads nothing, and while the finding's batch is sent (issue 19, finding 6: 487 KiB of `tools/list` requests
 * once stalled `/v1/health` for 2.2 s). A second client's `GET /v1/health` must answer
 * within 1 s throughout: answers here take milliseconds to tens of ms, and a loaded 2-core
 * machine (a full test run beside this one) adds hundreds; the old stall was over twice
 * the bound, and the byte counts below fail on the code without the batch caps. (The measured figures are printed by
 * `npm run bench -- http`, not here.)
 */
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serve } from '../../../platforms/node/index.js'
import type { ServedApp } from '../../../platforms/node/index.js'
import { createMcpApp } from '../../../src/mcp/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { AUTH, TOKEN, createFixture } from './fixtures.js'
import { until } from '../../support/poll.js'

const HEALTH_BOUND_MS = 1_000

/** Polls `/v1/health` until `work` settles; resolves with the slowest answer in ms. */
async function slowestHealthDuring(url: string, work: Promise<unknown>): Promise<number> {
  let done = false
  void work.finally(() => (done = true))
  let slowest = 0
  let answered = 0
  while (!done || answered < 5) {
    const start = performance.now()
    const response = await fetch(`${url}/v1/health`)
    await response.arrayBuffer()
    slowest = Math.max(slowest, performance.now() - start)
    answered++
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  await work
  return slowest
}

describe('GET /v1/health while MCP batches are answered', () => {
  const fixture = createFixture()
  for (let i = 0; i < 300; i++) {
    fixture.runtime.register(
      defineTool({
        name: `wide_${i}`,
        description: `A tool with a long description. ${'lorem ipsum '.repeat(40)}`,
        parameters: { path: { type: 'string', required: true, description: 'p'.repeat(200) } },
        output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
        execute: () => 'ok',
      }),
    )
  }
  fixture.app.route('/mcp', createMcpApp(fixture.runtime, { token: TOKEN }))
  let server: ServedApp
  beforeAll(async () => {
    server = await serve(fixture.app, { port: 0 })
  })
  afterAll(async () => {
    await server.close()
    await fixture.runtime.dispose()
  })

  const post = async (body: string): Promise<number> => {
    const response = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { ...AUTH, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, body })
    return (await response.arrayBuffer()).byteLength
  }

  it('the finding\'s 487 KiB batch of tools/list', async () => {
    const each = JSON.stringify({ jsonrpc: '2.0', id: 100_000, method: 'tools/list' }).length + 1
    const batch = JSON.stringify(Array.from({ length: Math.ceil((487 * 1024) / each) }, (_, id) => ({ jsonrpc: '2.0', id, method: 'tools/list' })))
    const work = Promise.all([post(batch), post(batch)])
    expect(await slowestHealthDuring(server.url, work)).toBeLessThan(HEALTH_BOUND_MS)
    for (const bytes of await work) expect(bytes).toBeLessThan(1000)
  }, 60_000)

  it('two clients sending batches at the caps (32 tools/list of 300 tools, 4 MiB of answers each)', async () => {
    const batch = JSON.stringify(Array.from({ length: 32 }, (_, id) => ({ jsonrpc: '2.0', id, method: 'tools/list' })))
    const work = Promise.all(Array.from({ length: 2 }, async () => [await post(batch), await post(batch)]))
    expect(await slowestHealthDuring(server.url, work)).toBeLessThan(HEALTH_BOUND_MS)
    for (const bytes of (await work).flat()) expect(bytes).toBeLessThanOrEqual(4 * 1024 * 1024 + 32 * 300)
  }, 60_000)
})

describe('GET /v1/health while a run floods a stream client that reads nothing', () => {
  it('stays within the bound; the run finishes', async () => {
    const fixture = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime({ wallMs: 60_000 }) })
    const server = await serve(fixture.app, { port: 0 })
    try {
      const body = JSON.stringify({ code: `for (let i = 0; i < 200; i++) await tools.echo({ text: String(i).padEnd(100000, 'x') }); return 'done'`, description: 'flood' })
      const socket = connect(server.port, '127.0.0.1')
      await new Promise<void>((resolve) => socket.once('connect', resolve))
      socket.pause()
      socket.write(
        `POST /v1/run HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n${Object.entries(AUTH).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\nContent-Type: application/json\r\n` +
          `Accept: text/event-stream\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      )
      const ended = until(() => fixture.results.some((r) => r.name === 'run_code'), 'the run_code result', 60_000, 10)
      expect(await slowestHealthDuring(server.url, ended)).toBeLessThan(HEALTH_BOUND_MS)
      expect(fixture.results.find((r) => r.name === 'run_code')!.result.isError).toBe(false)
      socket.destroy()
    } finally {
      await server.close()
      await fixture.runtime.dispose()
    }
  }, 60_000)
})
