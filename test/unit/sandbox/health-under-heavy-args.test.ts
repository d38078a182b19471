/**
 * A second client's `GET /v1/health` answers promptly while a program spins on heavy
 * binding arguments through `POST /v1/tools/run_code/execute` (issue 19, finding 4, at
 * the HTTP app): the worst arguments are refused in the sandbox's thread, and the
 * heaviest accepted ones cost the host's thread milliseconds, not seconds.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { defineTool } from '../../../src/index.js'
import { createToolsApp } from '../../../src/http/index.js'
import { createToolRuntime } from '../../../src/registry/index.js'

const TOKEN = 'heavy-args-token-0123456789abcdef'
const sandbox = createSandboxRuntime({ memoryMb: 128, computeMs: 120_000, maxWallMs: 300_000 })
const runtime = createToolRuntime({ mode: 'code', codeRuntime: sandbox })
let reached = 0
runtime.register(
  defineTool({
    name: 'take',
    description: 'Takes a list and says how long it is.',
    parameters: { items: { type: 'array', items: { type: 'object', additionalProperties: true } } },
    output: { schema: { type: 'number' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
    isConcurrencySafe: () => true,
    execute: (args) => {
      reached++
      return args.items?.length ?? 0
    },
  }),
)
const app = createToolsApp(runtime, { token: TOKEN })
afterAll(async () => {
  await runtime.dispose()
  await sandbox.dispose()
})

describe('the HTTP app while a program sends heavy arguments', () => {
  it('GET /v1/health keeps answering promptly', { timeout: 300_000 }, async () => {
    await sandbox.warm()
    const code = `
      const o = {}
      const over = new Array(200_000).fill(o) // twice the values one call may send: refused in the thread
      const heavy = new Array(49_999).fill(o) // { items: [...] }: 100,000 values with the key and the object
      let refused = 0
      for (let i = 0; i < 3; i++) {
        try { await tools.take({ items: over }) } catch { refused++ }
        await tools.take({ items: heavy })
      }
      return refused`
    const running = Promise.resolve(app.request('/v1/tools/run_code/execute', {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ arguments: { code, description: 'heavy arguments' } }),
    }))
    let done = false
    void running.finally(() => {
      done = true
    })
    let slowest = 0
    let probes = 0
    while (!done) {
      const started = performance.now()
      const health = await app.request('/v1/health')
      slowest = Math.max(slowest, performance.now() - started)
      probes++
      expect(health.status).toBe(200)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    const response = await running
    const body = (await response.json()) as { isError?: boolean; value?: { result?: unknown } }
    expect(response.status).toBe(200)
    expect(body.value?.result).toBe(3)
    expect(reached).toBe(3)
    expect(probes).toBeGreaterThan(10)
    // The counts above fail without the bound (every call reached the host). The time bound
    // is loose on purpose (a loaded 2-core machine): each heavy call costs the host ~15 ms;
    // a call of 200,000 objects cost it ~0.5 s before the bound (and 2.7 million, 4.5 s).
    expect(slowest).toBeLessThan(1_000)
  })
})
