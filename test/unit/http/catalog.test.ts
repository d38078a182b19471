/**
 * Large registries over HTTP and MCP: `GET /v1/sdk` and `GET /v1/prompt` show the
 * budgeted SDK, `GET /v1/catalog/search` ranks what the agent may call, and the MCP
 * export's `run_code` description carries the index.
 */
import { describe, expect, it } from 'vitest'
import type { CodeRuntime } from '../../../src/code-runtime/contract.js'
import { listMcpTools } from '../../../src/mcp/index.js'
import type { ToolCatalogHit } from '../../../src/runtime-types.js'
import { LARGE_REGISTRY } from '../../fixtures/large-registry.js'
import { registerLargeRegistry } from '../../support/large-registry-tools.js'
import { AUTH, createFixture } from './fixtures.js'

const idle: CodeRuntime = {
  language: 'typescript',
  isolation: 'in-process-test',
  capabilities: { streamsLogs: false, memoryLimit: false, capturesStdio: false },
  run: async () => ({ logs: [] }),
  dispose: async () => {},
}

const BILLING = LARGE_REGISTRY.filter((tool) => tool.name.startsWith('billing_'))

/** The HTTP fixture under `code` presentation with the billing tools and a budget they exceed. */
function large() {
  const fixture = createFixture({ mode: 'code', codeRuntime: idle, sdkBudgetChars: 8_000 })
  registerLargeRegistry(fixture.runtime, BILLING)
  return fixture
}

describe('the budgeted SDK over HTTP', () => {
  it('GET /v1/sdk and GET /v1/prompt carry the same catalog form', async () => {
    const { app, runtime } = large()
    const sdk = await (await app.request('/v1/sdk', { headers: AUTH })).text()
    const prompt = (await (await app.request('/v1/prompt', { headers: AUTH })).json()) as { sections: { id: string; text: string }[] }
    const section = prompt.sections.find((s) => s.id === 'tools:sdk')!.text
    expect(sdk).toBe(section)
    expect(sdk).toBe(runtime.assemble().sections.find((s) => s.id === 'tools:sdk')!.text)
    expect(sdk).toContain(`## Tool catalog\n\n${BILLING.length + 3} tools in 2 namespaces`)
    expect(sdk.length).toBeLessThanOrEqual(8_000)
    const python = await (await app.request('/v1/sdk?language=python', { headers: AUTH })).text()
    expect(python).toContain('    async def describe(self, name: str) -> str:')
  })

  it('GET /v1/sdk declares what a program may call, so it is the prompt’s section byte for byte', async () => {
    const { app, runtime } = createFixture({ mode: 'code', codeRuntime: idle })
    const sdk = await (await app.request('/v1/sdk', { headers: AUTH })).text()
    expect(sdk).not.toContain('"run_code"')
    expect(sdk).toBe(runtime.assemble().sections.find((s) => s.id === 'tools:sdk')!.text)
  })
})

describe('GET /v1/catalog/search', () => {
  it('ranks the agent’s tools: best first, with description and declaration', async () => {
    const { app, runtime } = large()
    const response = await app.request('/v1/catalog/search?q=refund%20a%20payment&limit=3', { headers: AUTH })
    expect(response.status).toBe(200)
    const body = (await response.json()) as { query: string; language: string; size: number; hits: ToolCatalogHit[]; agent?: string }
    expect(body).toMatchObject({ query: 'refund a payment', language: 'typescript', size: BILLING.length + 3 })
    expect(body).not.toHaveProperty('agent')
    expect(body.hits).toEqual(runtime.catalog().search('refund a payment', { limit: 3 }).map((hit) => ({ ...hit })))
    expect(body.hits).toHaveLength(3)
    const all = (await (await app.request('/v1/catalog/search?q=invoice', { headers: AUTH })).json()) as { hits: unknown[] }
    expect(all.hits).toHaveLength(10)
  })

  it('masks by agent: only the agent finds its own tool', async () => {
    const { app } = large()
    const global = (await (await app.request('/v1/catalog/search?q=secret', { headers: AUTH })).json()) as { hits: ToolCatalogHit[] }
    expect(global.hits.map((hit) => hit.name)).not.toContain('secret')
    const alice = (await (await app.request('/v1/catalog/search?q=secret&agent=alice', { headers: AUTH })).json()) as { agent: string; hits: ToolCatalogHit[] }
    expect(alice.agent).toBe('alice')
    expect(alice.hits[0]!.name).toBe('secret')
  })

  it('checks q and limit (400 INVALID_REQUEST) and needs the token (401)', async () => {
    const { app } = large()
    const limitMessage = 'limit must be an integer from 1 to 100'
    for (const [path, message] of [
      ['/v1/catalog/search', 'q must be given exactly once'],
      ['/v1/catalog/search?q=a&q=b', 'q must be given exactly once'],
      ['/v1/catalog/search?q=a&limit=0', limitMessage],
      ['/v1/catalog/search?q=a&limit=101', limitMessage],
      ['/v1/catalog/search?q=a&limit=2.5', limitMessage],
      ['/v1/catalog/search?q=a&limit=-1', limitMessage],
      ['/v1/catalog/search?q=a&limit=1&limit=2', 'limit must be given at most once'],
    ]) {
      const response = await app.request(path!, { headers: AUTH })
      expect(response.status, path).toBe(400)
      expect(await response.json(), path).toEqual({ error: { code: 'INVALID_REQUEST', message } })
    }
    // Both ends of the range are accepted, and the limit is the number of hits.
    for (const limit of [1, 100]) {
      const response = await app.request(`/v1/catalog/search?q=invoice&limit=${limit}`, { headers: AUTH })
      expect(response.status).toBe(200)
      const hits = ((await response.json()) as { hits: unknown[] }).hits
      expect(hits.length).toBe(Math.min(limit, BILLING.length))
    }
    expect((await app.request('/v1/catalog/search?q=a')).status).toBe(401)
    expect((await app.request('/v1/catalog/search?q=a', { method: 'POST', headers: AUTH })).status).toBe(405)
  })
})

describe('the MCP export', () => {
  it('run_code’s description carries the index and the catalog declarations', () => {
    const { runtime } = large()
    const runCode = listMcpTools(runtime).find((tool) => tool.name === 'run_code')!
    expect(runCode.description).toContain('## Tool catalog')
    expect(runCode.description).toContain('declare const catalog: {')
    expect(runCode.description).toMatch(/^- billing_\* \(\d+: /m)
    expect(runCode.description.length).toBeLessThan(9_000)
  })
})
