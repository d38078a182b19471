import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Miniflare } from 'miniflare'
import type { WorkerOptions } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

/**
 * The BUILT Cloudflare Worker (scripts/build-edge.mjs → worker.js + quickjs.wasm) served
 * by Miniflare's workerd under real rules: no `eval`/`new Function`, no wasm compiled
 * from bytes, no `Worker` (unlike @cloudflare/vitest-pool-workers, which re-enables
 * `new Function`). One Miniflare process holds four workers with the same compatibility
 * settings: the product with its token secret and a CORS allowlist, the product without
 * the secret, the product with a malformed secret, and a tiny probe that proves code
 * generation from strings is refused in that very runtime.
 */
const root = fileURLToPath(new URL('../..', import.meta.url))
const TOKEN = 'edge-test-token-0123456789abcdef'
const APP_ORIGIN = 'https://app.example'
const BASE = 'http://toolyard.test'

const PROBE = `export default {
  fetch() {
    const attempt = (make) => { try { make(); return 'allowed' } catch (error) { return String(error && error.name) + ': ' + String(error && error.message) } }
    return Response.json({
      newFunction: attempt(() => new Function('return 1')()),
      evalCall: attempt(() => (0, eval)('1')),
      asyncFunction: attempt(() => new (Object.getPrototypeOf(async function () {}).constructor)('return 1')),
      hasWorker: typeof globalThis.Worker !== 'undefined',
      userAgent: navigator.userAgent,
    })
  },
}`

interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string }
}

interface SseEvent {
  readonly event: string
  readonly data: Record<string, unknown>
}

function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = []
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n').filter((line) => line !== '' && !line.startsWith(':'))
    if (lines.length === 0) continue
    const event = lines.find((line) => line.startsWith('event: '))?.slice(7) ?? 'message'
    const data = lines.filter((line) => line.startsWith('data: ')).map((line) => line.slice(6)).join('\n')
    events.push({ event, data: JSON.parse(data) as Record<string, unknown> })
  }
  return events
}

/** Reads an error body and checks it has exactly the documented `{ error: { code, message } }` shape. */
async function errorOf(response: Response): Promise<ErrorBody['error']> {
  const body = (await response.json()) as ErrorBody
  expect(Object.keys(body)).toEqual(['error'])
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message'])
  return body.error
}

describe('the built Cloudflare Worker under real workerd rules (Miniflare)', () => {
  let dir: string
  let mf: Miniflare | undefined

  const auth = { Authorization: `Bearer ${TOKEN}` }
  const jsonAuth = { ...auth, 'Content-Type': 'application/json' }

  /** A request to the configured product worker. */
  const call = (path: string, init: RequestInit & { headers?: Record<string, string> } = {}) =>
    mf!.dispatchFetch(`${BASE}${path}`, init as never) as unknown as Promise<Response>
  const callWorker = async (name: string, path: string, init: RequestInit = {}) => {
    // Miniflare types its fetcher with workerd's Request/Response; at run time they are undici's.
    const fetcher = (await mf!.getWorker(name)) as unknown as { fetch(url: string, init?: RequestInit): Promise<Response> }
    return fetcher.fetch(`${BASE}${path}`, init)
  }
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    call(path, { method: 'POST', headers: { ...jsonAuth, ...headers }, body: JSON.stringify(body) })

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'toolyard-edge-'))
    // The product build itself, exactly as `npm run build:edge` makes it.
    execFileSync(process.execPath, ['scripts/build-edge.mjs', '--outdir', dir], { cwd: root, stdio: 'pipe' })
    const common: Partial<WorkerOptions> = {
      modules: true,
      // As wrangler.toml deploys it.
      compatibilityDate: '2026-04-20',
      compatibilityFlags: ['enable_request_signal'],
    }
    const product = (name: string, bindings: Record<string, string>): WorkerOptions =>
      ({
        ...common,
        name,
        scriptPath: join(dir, 'worker.js'),
        modulesRoot: dir,
        modulesRules: [{ type: 'CompiledWasm', include: ['**/*.wasm'] }],
        bindings,
      }) as WorkerOptions
    mf = new Miniflare({
      workers: [
        product('toolyard', { TOOLYARD_TOKEN: TOKEN, TOOLYARD_CORS_ORIGINS: `${APP_ORIGIN}, https://other.example` }),
        product('unconfigured', {}),
        product('bad-secret', { TOOLYARD_TOKEN: 'short' }),
        { ...common, name: 'probe', script: PROBE } as WorkerOptions,
      ],
    })
    await mf.ready
  }, 180_000)

  afterAll(async () => {
    await mf?.dispose()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  describe('runtime rules', () => {
    it('refuses code generation from strings and has no Worker in this workerd', async () => {
      const probe = (await (await callWorker('probe', '/')).json()) as Record<string, unknown>
      expect(probe.newFunction).toMatch(/^EvalError: Code generation from strings disallowed/)
      expect(probe.evalCall).toMatch(/^EvalError: Code generation from strings disallowed/)
      expect(probe.asyncFunction).toMatch(/^EvalError: Code generation from strings disallowed/)
      expect(probe.hasWorker).toBe(false)
      expect(probe.userAgent).toBe('Cloudflare-Workers')
    })
  })

  describe('configuration', () => {
    it('answers health without a token', async () => {
      const response = await call('/v1/health')
      expect(response.status).toBe(200)
      expect(await response.json()).toEqual({ status: 'ok' })
      expect(response.headers.get('Cache-Control')).toBe('no-store')
    })

    it('answers 503 NOT_CONFIGURED on every tool route without the secret, and says so in health', async () => {
      const health = await callWorker('unconfigured', '/v1/health')
      expect(await health.json()).toEqual({ status: 'not-configured' })
      for (const [method, path] of [
        ['GET', '/v1/tools'],
        ['GET', '/v1/sdk'],
        ['GET', '/v1/prompt'],
        ['POST', '/v1/run'],
        ['POST', '/v1/tools/get_customer/execute'],
      ] as const) {
        const response = await callWorker('unconfigured', path, {
          method,
          headers: jsonAuth,
          ...(method === 'POST' ? { body: '{"code":"return 1","description":"x"}' } : {}),
        })
        expect(response.status, `${method} ${path}`).toBe(503)
        const error = await errorOf(response)
        expect(error.code).toBe('NOT_CONFIGURED')
        expect(error.message).toContain('TOOLYARD_TOKEN')
      }
    })

    it('stays closed (503) with a malformed secret, without echoing it', async () => {
      const response = await callWorker('bad-secret', '/v1/tools', { headers: { Authorization: 'Bearer short' } })
      expect(response.status).toBe(503)
      const error = await errorOf(response)
      expect(error.code).toBe('NOT_CONFIGURED')
      expect(error.message).toMatch(/^TOOLYARD_TOKEN is malformed/)
      expect(error.message).not.toContain('short')
    })
  })

  describe('authentication', () => {
    it('answers 401 with a WWW-Authenticate challenge without a token', async () => {
      const response = await call('/v1/tools')
      expect(response.status).toBe(401)
      expect(response.headers.get('WWW-Authenticate')).toBe('Bearer realm="toolyard"')
      expect((await errorOf(response)).code).toBe('UNAUTHORIZED')
    })

    it('answers 401 invalid_token for a wrong token, and for the right token under another scheme', async () => {
      const wrong = await call('/v1/tools', { headers: { Authorization: `Bearer ${TOKEN}x` } })
      expect(wrong.status).toBe(401)
      expect(wrong.headers.get('WWW-Authenticate')).toContain('error="invalid_token"')
      expect((await errorOf(wrong)).code).toBe('UNAUTHORIZED')
      const basic = await call('/v1/tools', { headers: { Authorization: `Basic ${TOKEN}` } })
      expect(basic.status).toBe(401)
      await basic.body?.cancel()
    })

    it('answers 200 with the right token', async () => {
      const response = await call('/v1/tools', { headers: auth })
      expect(response.status).toBe(200)
      await response.body?.cancel()
    })
  })

  describe('CORS from the TOOLYARD_CORS_ORIGINS var', () => {
    it('answers an allowlisted preflight and tags responses for that origin', async () => {
      const preflight = await call('/v1/tools', {
        method: 'OPTIONS',
        headers: { Origin: APP_ORIGIN, 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'authorization' },
      })
      expect(preflight.status).toBe(204)
      expect(preflight.headers.get('Access-Control-Allow-Origin')).toBe(APP_ORIGIN)
      const response = await call('/v1/tools', { headers: { ...auth, Origin: APP_ORIGIN } })
      expect(response.status).toBe(200)
      expect(response.headers.get('Access-Control-Allow-Origin')).toBe(APP_ORIGIN)
      await response.body?.cancel()
    })

    it('refuses any other origin with 403 FORBIDDEN_ORIGIN', async () => {
      const response = await call('/v1/tools', { headers: { ...auth, Origin: 'https://evil.example' } })
      expect(response.status).toBe(403)
      expect((await errorOf(response)).code).toBe('FORBIDDEN_ORIGIN')
    })
  })

  describe('routes', () => {
    it('GET /v1/tools lists the demo tools and run_code (mode both)', async () => {
      const body = (await (await call('/v1/tools', { headers: auth })).json()) as { mode: string; tools: { name: string }[] }
      expect(body.mode).toBe('both')
      const names = body.tools.map((tool) => tool.name)
      expect(names).toEqual(expect.arrayContaining(['get_customer', 'list_orders', 'run_code']))
    })

    it('GET /v1/tools/:name describes one tool with its output schema; unknown → 404 UNKNOWN_TOOL', async () => {
      const body = (await (await call('/v1/tools/get_customer', { headers: auth })).json()) as { tool: { name: string; output: unknown } }
      expect(body.tool.name).toBe('get_customer')
      expect(body.tool.output).toMatchObject({ type: 'object' })
      const missing = await call('/v1/tools/no_such_tool', { headers: auth })
      expect(missing.status).toBe(404)
      expect((await errorOf(missing)).code).toBe('UNKNOWN_TOOL')
    })

    it('GET /v1/sdk serves the TypeScript SDK with an ETag and answers 304 to it', async () => {
      const response = await call('/v1/sdk', { headers: auth })
      expect(response.status).toBe(200)
      expect(response.headers.get('Content-Type')).toBe('text/plain; charset=utf-8')
      expect(response.headers.get('X-Toolyard-Sdk-Language')).toBe('typescript')
      const etag = response.headers.get('ETag')
      expect(etag).toMatch(/^"sha256-[A-Za-z0-9_-]+"$/)
      const text = await response.text()
      expect(text).toContain('get_customer')
      const again = await call('/v1/sdk', { headers: auth })
      expect(again.headers.get('ETag')).toBe(etag)
      expect(await again.text()).toBe(text)
      const cached = await call('/v1/sdk', { headers: { ...auth, 'If-None-Match': etag! } })
      expect(cached.status).toBe(304)
      expect(cached.headers.get('ETag')).toBe(etag)
      expect(await cached.text()).toBe('')
    })

    it('GET /v1/sdk?language=python serves the Python SDK under its own ETag; unknown language → 400', async () => {
      const ts = await call('/v1/sdk?language=typescript', { headers: auth })
      const py = await call('/v1/sdk?language=python', { headers: auth })
      expect(py.status).toBe(200)
      expect(py.headers.get('X-Toolyard-Sdk-Language')).toBe('python')
      expect(py.headers.get('ETag')).not.toBe(ts.headers.get('ETag'))
      expect(await py.text()).toMatch(/def get_customer|get_customer/)
      await ts.body?.cancel()
      const bad = await call('/v1/sdk?language=cobol', { headers: auth })
      expect(bad.status).toBe(400)
      expect((await errorOf(bad)).code).toBe('INVALID_REQUEST')
    })

    it('GET /v1/prompt assembles sections and wire tools', async () => {
      const body = (await (await call('/v1/prompt', { headers: auth })).json()) as {
        mode: string
        sections: { id: string; text: string }[]
        tools: { name: string }[]
      }
      expect(body.mode).toBe('both')
      expect(body.sections.length).toBeGreaterThan(0)
      expect(body.tools.map((tool) => tool.name)).toContain('run_code')
    })

    it('POST /v1/tools/:name/execute runs one tool; a tool failure is a 200 result with isError', async () => {
      const response = await post('/v1/tools/get_customer/execute', { arguments: { id: 'C001' }, callId: 'edge-1' })
      expect(response.status).toBe(200)
      expect(response.headers.get('X-Toolyard-Call-Id')).toBe('client.agent.edge-1')
      const result = (await response.json()) as { isError: boolean; value: { id: string } }
      expect(result.isError).toBe(false)
      expect(result.value.id).toBe('C001')
      const failed = (await (await post('/v1/tools/get_customer/execute', { arguments: { id: 'nobody' } })).json()) as {
        isError: boolean
      }
      expect(failed.isError).toBe(true)
    })

    it('rejects bad input with the documented codes (400, 404, 405, 413, 415)', async () => {
      const malformed = await call('/v1/tools/get_customer/execute', { method: 'POST', headers: jsonAuth, body: '{nope' })
      expect(malformed.status).toBe(400)
      expect((await errorOf(malformed)).code).toBe('INVALID_JSON_BODY')
      const unknown = await post('/v1/tools/no_such_tool/execute', { arguments: {} })
      expect(unknown.status).toBe(404)
      expect((await errorOf(unknown)).code).toBe('UNKNOWN_TOOL')
      const wrongMethod = await call('/v1/run', { headers: auth })
      expect(wrongMethod.status).toBe(405)
      // OPTIONS is allowed too: this worker has a CORS allowlist.
      expect(wrongMethod.headers.get('Allow')).toBe('POST, OPTIONS')
      await errorOf(wrongMethod)
      const notJson = await call('/v1/run', { method: 'POST', headers: { ...auth, 'Content-Type': 'text/plain' }, body: 'return 1' })
      expect(notJson.status).toBe(415)
      expect((await errorOf(notJson)).code).toBe('UNSUPPORTED_MEDIA_TYPE')
      const huge = await post('/v1/run', { code: `return ${JSON.stringify('x'.repeat(1024 * 1024))}`, description: 'too big' })
      expect(huge.status).toBe(413)
      expect((await errorOf(huge)).code).toBe('PAYLOAD_TOO_LARGE')
    })
  })

  describe('run_code on QuickJS in workerd', () => {
    const PARALLEL = `
const ids = ['C001', 'C002', 'C003', 'C004']
const customers = await Promise.all(ids.map((id) => tools.get_customer({ id })))
console.log('fetched', customers.length)
return customers.map((c) => c.id).join(',')
`

    it('POST /v1/run (JSON) runs a program with parallel sub-calls over the demo tools', async () => {
      const response = await post('/v1/run', { code: PARALLEL, description: 'four customers at once' })
      expect(response.status).toBe(200)
      expect(response.headers.get('X-Toolyard-Call-Id')).toMatch(/^http-run-/)
      const result = (await response.json()) as { isError: boolean; value: { result: unknown; logs: string[] } }
      expect(result.isError).toBe(false)
      expect(result.value).toMatchObject({ result: 'C001,C002,C003,C004', logs: ['fetched 4'] })
    })

    it('POST /v1/run (SSE) streams each sub-call start and settlement, overlapping, then the result', async () => {
      const response = await post('/v1/run', { code: PARALLEL, description: 'four customers at once, streamed' }, { Accept: 'text/event-stream' })
      expect(response.status).toBe(200)
      expect(response.headers.get('Content-Type')).toBe('text/event-stream; charset=utf-8')
      const callId = response.headers.get('X-Toolyard-Call-Id')!
      const events = parseSse(await response.text())
      expect(events[0]).toMatchObject({ event: 'start', data: { callId } })
      expect(events.at(-1)).toMatchObject({ event: 'result', data: { isError: false, value: { result: 'C001,C002,C003,C004' } } })

      const starts = events.filter((e) => e.event === 'dispatch-start')
      const settles = events.filter((e) => e.event === 'dispatch')
      const expected = [1, 2, 3, 4].map((n) => `${callId}:code:${n}`)
      expect(starts.map((e) => e.data.subCallId).sort()).toEqual(expected)
      expect(settles.map((e) => e.data.subCallId).sort()).toEqual(expected)
      for (const e of [...starts, ...settles]) {
        expect(e.data).toMatchObject({ parentCallId: callId, name: 'get_customer' })
      }
      expect(settles.every((e) => e.data.isError === false)).toBe(true)
      // Every sub-call's start precedes its settlement, and the program's Promise.all put
      // more than one in flight at once: the peak of (started − settled) over the stream.
      let inFlight = 0
      let peak = 0
      const open = new Set<unknown>()
      for (const e of events) {
        if (e.event === 'dispatch-start') {
          open.add(e.data.subCallId)
          peak = Math.max(peak, ++inFlight)
        } else if (e.event === 'dispatch') {
          expect(open.delete(e.data.subCallId), `settled before it started: ${String(e.data.subCallId)}`).toBe(true)
          inFlight--
        }
      }
      expect(peak).toBeGreaterThanOrEqual(2)
    })

    it('reports a failing program as a 200 result with CODE_RUN_FAILED and its line', async () => {
      const response = await post('/v1/run', { code: 'const a = 1\nthrow new Error("edge boom")', description: 'fails' })
      expect(response.status).toBe(200)
      const result = (await response.json()) as { isError: boolean; error: { message: string; info?: { code?: string } } }
      expect(result.isError).toBe(true)
      expect(result.error.info?.code).toBe('CODE_RUN_FAILED')
      expect(result.error.message).toContain('edge boom')
    })

    it('strips TypeScript in workerd (no eval needed)', async () => {
      const response = await post('/v1/run', {
        code: 'interface P { id: string }\nconst c: P = await tools.get_customer({ id: "C002" }) as P\nreturn c.id satisfies string',
        description: 'typed program',
      })
      const result = (await response.json()) as { isError: boolean; value: { result: unknown } }
      expect(result).toMatchObject({ isError: false, value: { result: 'C002' } })
    })
  })

  describe('run_code on MicroPython in workerd ("language": "python")', () => {
    type RunResult = { isError: boolean; value?: { result: unknown; logs: string[] }; error?: { message: string; info?: { code?: string } } }
    const runPython = async (code: string): Promise<RunResult> => {
      const response = await post('/v1/run', { code, description: 'python at the edge', language: 'python' })
      expect(response.status).toBe(200)
      return (await response.json()) as RunResult
    }

    it('runs a Python program over the demo tools: print as logs, return as the value, gather overlapping calls', async () => {
      const result = await runPython('import asyncio\ncs = await asyncio.gather(*[tools.get_customer({"id": i}) for i in ["C001", "C002"]])\nprint("fetched", len(cs))\nreturn ",".join([c["id"] for c in cs])')
      expect(result).toMatchObject({ isError: false, value: { result: 'C001,C002', logs: ['fetched 2'] } })
    })

    it('raises a failed call as ToolCallError (tool_name, code); uncaught, the run fails with CODE_RUN_FAILED', async () => {
      const caught = await runPython('try:\n    await tools.get_customer({"id": "nobody"})\nexcept ToolCallError as e:\n    return [e.tool_name, e.code]')
      expect(caught.isError).toBe(false)
      expect((caught.value!.result as string[])[0]).toBe('get_customer')
      expect(typeof (caught.value!.result as string[])[1]).toBe('string')
      const uncaught = await runPython('await tools.get_customer({"id": "nobody"})')
      expect(uncaught.isError).toBe(true)
      expect(uncaught.error?.info?.code).toBe('CODE_RUN_FAILED')
      expect(uncaught.error?.message).toContain('ToolCallError')
    })

    it('ends a hot `while True: pass` at its compute budget (5 s), and the isolate serves the next request', async () => {
      const started = Date.now()
      const hot = await runPython('while True:\n    pass')
      expect(hot.isError).toBe(true)
      expect(hot.error?.info?.code).toBe('CODE_RUN_FAILED')
      expect(hot.error?.message).toContain('compute budget of 5000 ms exhausted')
      // Steps decide where the clock stands still, so it may end before 5 s of wall time; never long after.
      expect(Date.now() - started).toBeLessThan(30_000)
      expect(await runPython('return 6 * 7')).toMatchObject({ isError: false, value: { result: 42 } })
      expect((await post('/v1/run', { code: 'return 6 * 7', description: 'typescript after python' })).status).toBe(200)
    })

    it('refuses a language the Worker does not run with 400 INVALID_REQUEST, naming both it runs', async () => {
      const response = await post('/v1/run', { code: 'return 1', description: 'd', language: 'cobol' })
      expect(response.status).toBe(400)
      const error = await errorOf(response)
      expect(error.code).toBe('INVALID_REQUEST')
      expect(error.message).toBe('language "cobol" is not run here: this server runs programs in typescript and python')
    })

    it("offers run_code's language choice over MCP: typescript and python", async () => {
      const response = await call('/mcp', {
        method: 'POST',
        headers: { ...jsonAuth, Accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      })
      const list = (await response.json()) as { result: { tools: { name: string; inputSchema: { properties?: Record<string, { enum?: string[] }> } }[] } }
      const runCode = list.result.tools.find((t) => t.name === 'run_code')!
      expect(runCode.inputSchema.properties?.language?.enum).toEqual(['typescript', 'python'])
    })
  })

  describe('MCP at /mcp (Streamable HTTP, JSON-RPC)', () => {
    const rpc = (body: unknown, headers: Record<string, string> = jsonAuth, worker?: string) => {
      const init = {
        method: 'POST',
        headers: { Accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify(body),
      }
      return worker === undefined ? call('/mcp', init) : callWorker(worker, '/mcp', init)
    }

    it('lists the tools as mode both presents them and calls one through the pipeline', async () => {
      const list = (await (await rpc({ jsonrpc: '2.0', id: 1, method: 'tools/list' })).json()) as {
        result: { tools: { name: string }[] }
      }
      const names = list.result.tools.map((t) => t.name)
      expect(names).toContain('get_customer')
      expect(names).toContain('run_code')
      const called = (await (
        await rpc({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_customer', arguments: { id: 'C002' } } })
      ).json()) as { result: { isError?: boolean; structuredContent?: { id?: string } } }
      expect(called.result.isError ?? false).toBe(false)
      expect(called.result.structuredContent?.id).toBe('C002')
    })

    it('requires the same bearer token, and stays closed without the secret', async () => {
      const anonymous = await rpc({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'Content-Type': 'application/json' })
      expect(anonymous.status).toBe(401)
      const unconfigured = await rpc({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, jsonAuth, 'unconfigured')
      expect(unconfigured.status).toBe(503)
    })
  })
})
