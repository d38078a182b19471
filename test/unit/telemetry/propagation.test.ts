/**
 * The caller's W3C trace context reaches the run's spans: a `traceparent` header on the
 * HTTP routes, MCP's `params._meta.traceparent`; an invalid one starts a new trace.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeEach, describe, expect, it } from 'vitest'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { createToolsApp } from '../../../src/http/index.js'
import { createMcpApp } from '../../../src/mcp/index.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { echoTool, JSON_AUTH, TOKEN } from '../http/fixtures.js'

const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))
const codeRuntime = createQuickJsRuntime({ computeMs: 20_000, maxWallMs: 60_000, wasmModule })
const exporter = new InMemorySpanExporter()
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
const runtime = createToolRuntime({ mode: 'both', codeRuntime, telemetry: { tracer: provider.getTracer('toolyard') } })
runtime.register(echoTool)
afterAll(async () => {
  await runtime.dispose()
  await codeRuntime.dispose()
  await provider.shutdown()
})
beforeEach(() => exporter.reset())

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c'
const PARENT = 'b7ad6b7169203331'
const TRACEPARENT = `00-${TRACE_ID}-${PARENT}-01`

describe('an incoming traceparent', () => {
  const app = createToolsApp(runtime, { token: TOKEN })
  it('over HTTP /v1/run: the program and its sub-call are in the caller trace, the run span the child of the caller span', async () => {
    const response = await app.request('/v1/run', { method: 'POST', headers: { ...JSON_AUTH, traceparent: TRACEPARENT, tracestate: 'k=v' }, body: JSON.stringify({ code: 'return await tools.echo({ text: "hi" })', description: 'd' }) })
    expect(response.status).toBe(200)
    const spans = exporter.getFinishedSpans()
    expect(spans.map((s) => s.name).sort()).toEqual(['execute_tool echo', 'execute_tool run_code'])
    for (const span of spans) expect(span.spanContext().traceId).toBe(TRACE_ID)
    const run = spans.find((s) => s.name === 'execute_tool run_code')!
    expect(run.parentSpanContext?.spanId).toBe(PARENT)
    expect(spans.find((s) => s.name === 'execute_tool echo')!.parentSpanContext?.spanId).toBe(run.spanContext().spanId)
  })
  it('over HTTP /v1/tools/:name/execute; a malformed header is ignored (a new trace)', async () => {
    await app.request('/v1/tools/echo/execute', { method: 'POST', headers: { ...JSON_AUTH, traceparent: TRACEPARENT }, body: JSON.stringify({ arguments: { text: 'x' } }) })
    await app.request('/v1/tools/echo/execute', { method: 'POST', headers: { ...JSON_AUTH, traceparent: `00-${TRACE_ID}-${PARENT}-01x` }, body: JSON.stringify({ arguments: { text: 'x' } }) })
    const [joined, fresh] = exporter.getFinishedSpans()
    expect(joined!.spanContext().traceId).toBe(TRACE_ID)
    expect(fresh!.spanContext().traceId).not.toBe(TRACE_ID)
    expect(fresh!.parentSpanContext).toBeUndefined()
  })
  it("over MCP: params._meta.traceparent", async () => {
    const mcp = createMcpApp(runtime, { token: TOKEN })
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' }, _meta: { traceparent: TRACEPARENT } } }
    const response = await mcp.request('/', { method: 'POST', headers: { ...JSON_AUTH, Accept: 'application/json, text/event-stream' }, body: JSON.stringify(call) })
    expect(response.status).toBe(200)
    const [span] = exporter.getFinishedSpans()
    expect(span!.name).toBe('execute_tool echo')
    expect(span!.spanContext().traceId).toBe(TRACE_ID)
    expect(span!.parentSpanContext?.spanId).toBe(PARENT)
  })
})
