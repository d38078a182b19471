import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request as httpRequest } from 'node:http'
import { afterAll, describe, expect, it } from 'vitest'
import { startServer } from '../../../examples/start.js'
import type { ToolExecutionResult } from '../../../src/types.js'
import { until } from '../../support/poll.js'

const TOKEN = 'start-test-token-0123456789'

function rawGet(port: number, path: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { Host: host } }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('npm start (startServer)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'toolyard-static-'))
  writeFileSync(join(dir, 'index.html'), '<!doctype html><html><head><title>pg</title></head><body>playground</body></html>')
  writeFileSync(join(dir, 'main.js'), 'console.log("hi")')
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('serves the playground with the token injected same-origin, the API and the demo tools, then shuts down', async () => {
    const server = await startServer({ port: 0, token: TOKEN, staticDir: dir })
    try {
      const page = await fetch(`${server.url}/`)
      expect(page.status).toBe(200)
      const html = await page.text()
      expect(html).toContain(`<meta name="toolyard-token" content="${TOKEN}" />`)
      expect(html).toContain('<meta name="toolyard-api" content="/v1" />')
      expect(html.indexOf('toolyard-token')).toBeLessThan(html.indexOf('</head>'))
      expect(page.headers.get('Cache-Control')).toBe('no-store')
      expect(page.headers.get('Content-Security-Policy')).toBe("frame-ancestors 'none'")
      expect(page.headers.get('Access-Control-Allow-Origin')).toBeNull()
      // /index.html must not bypass the injection.
      expect(await (await fetch(`${server.url}/index.html`)).text()).toContain(TOKEN)
      const script = await fetch(`${server.url}/main.js`)
      expect(script.status).toBe(200)
      expect(script.headers.get('Content-Type')).toMatch(/javascript/)
      // DNS rebinding: the page (and its token) is refused under a foreign Host.
      expect(await rawGet(server.port, '/', 'evil.example')).toBe(421)
      expect(await rawGet(server.port, '/', `localhost:${server.port}`)).toBe(200)

      const auth = { Authorization: `Bearer ${TOKEN}` }
      const tools = (await (await fetch(`${server.url}/v1/tools`, { headers: auth })).json()) as { mode: string; tools: { name: string }[] }
      expect(tools.mode).toBe('both')
      expect(tools.tools.length).toBeGreaterThan(3)
      // One agent per mode, as the playground's mode switch uses them.
      for (const mode of ['native', 'code', 'both']) {
        const prompt = (await (await fetch(`${server.url}/v1/prompt?agent=${mode}`, { headers: auth })).json()) as { mode: string }
        expect(prompt.mode).toBe(mode)
      }
      const run = await fetch(`${server.url}/v1/run`, {
        method: 'POST',
        headers: { ...auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({ code: 'return 40 + 2', description: 'answer' }),
      })
      const result = (await run.json()) as ToolExecutionResult
      expect(result.isError).toBe(false)
      if (!result.isError) expect(result.value).toMatchObject({ result: 42 })

      // The same registry as an MCP server at /mcp, behind the same token; ?agent= picks a layer.
      const rpc = (body: unknown, query = '', headers: Record<string, string> = auth) =>
        fetch(`${server.url}/mcp${query}`, {
          method: 'POST',
          headers: { ...headers, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
          body: JSON.stringify(body),
        })
      expect((await rpc({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, '', {})).status).toBe(401)
      const listed = (await (await rpc({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, '?agent=code')).json()) as {
        result: { tools: { name: string; description: string }[] }
      }
      expect(listed.result.tools.map((t) => t.name)).toEqual(['run_code'])
      expect(listed.result.tools[0]?.description).toContain('declare const tools')
      const called = (await (
        await rpc({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'read_file', arguments: { path: 'README.md' } } })
      ).json()) as { result: { isError?: boolean } }
      expect(called.result.isError ?? false).toBe(false)
    } finally {
      await server.shutdown()
    }
    await expect(fetch(`${server.url}/v1/health`)).rejects.toThrow()
  })

  it('aborts an in-flight run on shutdown and answers it', async () => {
    const server = await startServer({ port: 0, token: TOKEN, staticDir: null })
    const auth = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }
    let started: () => void = () => {}
    const inFlight = new Promise<void>((resolve) => (started = resolve))
    server.runtime.on('tools/execute', (execution, next) => {
      if (execution.name === 'run_code') started()
      return next()
    })
    const pending = fetch(`${server.url}/v1/run`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ code: 'await new Promise(() => {}); return 1', description: 'forever' }),
    })
    await inFlight
    await server.shutdown()
    const response = await pending
    expect(response.status).toBe(200)
    const result = (await response.json()) as ToolExecutionResult
    expect(result.isError && result.error.info?.code).toBe('CODE_RUN_FAILED')
    expect(result.isError && result.error.message).toMatch(/abort/)
  })

  it('lists the API on GET / when the playground is not built', async () => {
    const server = await startServer({ port: 0, token: TOKEN, staticDir: null })
    try {
      expect(server.staticDir).toBeUndefined()
      const html = await (await fetch(`${server.url}/`)).text()
      expect(html).toContain('POST /v1/run')
      expect(html).toContain(`<meta name="toolyard-token" content="${TOKEN}" />`)
      expect((await fetch(`${server.url}/main.js`)).status).toBe(404)
    } finally {
      await server.shutdown()
    }
  })

  it('asks before writing: a write waits in GET /v1/approvals until POST decides it; reads never ask; shutdown denies what waits', async () => {
    const server = await startServer({ port: 0, token: TOKEN, staticDir: null, approvalTimeoutMs: 60_000 })
    const auth = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }
    const execute = (name: string, args: unknown) =>
      fetch(`${server.url}/v1/tools/${name}/execute`, { method: 'POST', headers: auth, body: JSON.stringify({ arguments: args }) })
    const pending = async () => ((await (await fetch(`${server.url}/v1/approvals`, { headers: auth })).json()) as { approvals: { id: string; name: string; reason?: string }[] }).approvals
    try {
      expect(server.approvals.timeoutMs).toBe(60_000)
      expect(((await (await execute('read_file', { path: 'README.md' })).json()) as ToolExecutionResult).isError).toBe(false)
      expect(await pending()).toEqual([])
      for (const [name, args] of [
        ['write_file', { path: 'notes/a.md', content: 'a' }],
        ['edit_file', { path: 'README.md', oldText: 'TODO: document the tag API.', newText: 'done' }],
      ] as const) {
        const call = execute(name, args)
        const waiting = await until(async () => {
          const list: { id: string; name: string; reason?: string }[] = await pending()
          return list.length > 0 && list
        }, `${name}'s request`)
        expect(waiting.map((w) => [w.name, w.reason])).toEqual([[name, 'changes the workspace']])
        const decided = await fetch(`${server.url}/v1/approvals/${waiting[0]!.id}`, { method: 'POST', headers: auth, body: JSON.stringify({ decision: 'allow' }) })
        expect(decided.status).toBe(200)
        expect(((await (await call).json()) as ToolExecutionResult).isError).toBe(false)
      }
      const stranded = execute('write_file', { path: 'notes/b.md', content: 'b' })
      await until(async () => (await pending()).length > 0, 'the stranded write\'s request')
      await server.shutdown()
      const result = (await (await stranded).json()) as ToolExecutionResult
      expect(result.isError && result.error.info?.code).toMatch(/^(ABORTED_BEFORE_DISPATCH|DENIED_BY_APPROVAL)$/)
      expect(await server.approvals.pending()).toEqual([])
    } finally {
      await server.shutdown()
    }
  })
})
