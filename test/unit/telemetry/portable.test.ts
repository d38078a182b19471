/**
 * The telemetry of the core on every runtime (Node, Chromium, workerd): web standards
 * only, no sandbox. A nested call (a tool calling `execute` with its own token as
 * `parent`, as a program's sub-call does) is its caller's child; approvals are events;
 * an incoming traceparent (an execute input, an HTTP header, MCP's `_meta`) is the root's
 * parent; a decision over HTTP names the deciding principal's role.
 */
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { expect, it } from 'vitest'
import { createToolsApp } from '../../../src/http/index.js'
import { createMcpApp } from '../../../src/mcp/index.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { CodeRunRequest, CodeRunResult, CodeRuntime } from '../../../src/code-runtime/contract.js'
import type { ToolRuntime } from '../../../src/runtime-types.js'
import { until } from '../../support/poll.js'

class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

it('a tree of three nested calls (one failing, one approved) in the caller trace, with the GenAI attributes and approval events', async () => {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const runtime: ToolRuntime = createToolRuntime({ telemetry: { tracer: provider.getTracer('toolyard') }, approval: async () => true })
  const leaf = (name: string, execute: () => string) =>
    defineTool({ name, description: `the ${name} tool`, parameters: {}, output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] }, execute })
  runtime.register(leaf('ok', () => 'fine'))
  runtime.register(leaf('bad', () => { throw new Error('no') }))
  runtime.register(leaf('asks', () => 'allowed'))
  runtime.register(defineTool({
    name: 'outer', description: 'calls three tools', parameters: {},
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    execute: async (_args, exec) => {
      const results = await Promise.all(['ok', 'bad', 'asks'].map((name, i) => runtime.execute({ callId: `${exec.callId}:${i}`, name, arguments: {}, signal: exec.signal, parent: exec.token })))
      return results.map((r) => (r.isError ? r.error.info?.code : 'ok')).join(',')
    },
  }))
  runtime.on('tools/pre-execute', (d, e) => (e.name === 'asks' ? { kind: 'ask' } : d))
  const result = await runtime.execute({ callId: 'c', name: 'outer', arguments: {}, signal: AbortSignal.timeout(10_000), trace: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } })
  expect(result.isError).toBe(false)
  const spans = exporter.getFinishedSpans()
  const outer = spans.find((s) => s.name === 'execute_tool outer')!
  expect(outer.parentSpanContext?.spanId).toBe('b7ad6b7169203331')
  for (const span of spans) expect(span.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c')
  const children = spans.filter((s) => s.parentSpanContext?.spanId === outer.spanContext().spanId)
  expect(children.map((s) => s.name).sort()).toEqual(['execute_tool asks', 'execute_tool bad', 'execute_tool ok'])
  expect(children.find((s) => s.name === 'execute_tool bad')!.attributes['error.type']).toBe('TOOL_FAILED')
  expect(children.find((s) => s.name === 'execute_tool ok')!.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.type': 'function', 'gen_ai.tool.description': 'the ok tool', 'toolyard.tool.caller': 'code' })
  expect(children.find((s) => s.name === 'execute_tool asks')!.events.map((e) => e.name)).toEqual(['toolyard.approval.requested', 'toolyard.approval.decided'])
  await runtime.dispose()
  await provider.shutdown()
})

/** A code runtime that runs no text: it makes the calls `script` makes with the bindings it is given (no eval: workerd forbids it). */
function scriptedRuntime(script: (tools: Record<string, (args: unknown) => Promise<unknown>>) => Promise<unknown>, load = { running: 0, queued: 0, maxConcurrentRuns: 1, maxQueuedRuns: 0 }): CodeRuntime {
  return {
    language: 'typescript',
    isolation: 'in-process-test',
    capabilities: { streamsLogs: false, memoryLimit: false, capturesStdio: false },
    async run(request: CodeRunRequest): Promise<CodeRunResult> {
      const tools = request.bindings.find((b) => b.global === 'tools')!.functions as unknown as Record<string, (args: unknown) => Promise<unknown>>
      try {
        return { logs: [], value: await script(tools), stats: { wallMs: 1, computeMs: 1 } }
      } catch (error) {
        return { logs: [], error: { kind: 'exception', message: String(error) } }
      }
    },
    dispose: async () => {},
    load: () => load,
  }
}

it('a program: preflight a child span, a plan approval an event pair on the run span, the sub-call its child; the admission gauges read the runtime', async () => {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const reader = new TestReader()
  const meters = new MeterProvider({ readers: [reader] })
  const codeRuntime = scriptedRuntime(async (tools) => tools.write!({ path: 'a' }), { running: 2, queued: 1, maxConcurrentRuns: 2, maxQueuedRuns: 4 })
  const plans = Object.assign(async () => true, { acceptsPlans: true })
  const runtime = createToolRuntime({ mode: 'code', codeRuntime, preflight: 'block', approval: plans, telemetry: { tracer: provider.getTracer('toolyard'), meter: meters.getMeter('toolyard') } })
  runtime.register(defineTool({ name: 'write', description: 'Writes.', parameters: { path: { type: 'string', required: true } }, output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] }, execute: (a) => `wrote ${a.path}` }))
  runtime.on('tools/pre-execute', (d, e) => (e.name === 'write' ? { kind: 'ask', reason: 'writes' } : d))
  const result = await runtime.execute({ callId: 'p', name: 'run_code', arguments: { code: 'return await tools.write({ path: "a" })', description: 'd' }, signal: AbortSignal.timeout(10_000) })
  expect(result.isError).toBe(false)
  const spans = exporter.getFinishedSpans()
  const run = spans.find((s) => s.name === 'execute_tool run_code')!
  const children = spans.filter((s) => s.parentSpanContext?.spanId === run.spanContext().spanId)
  expect(children.map((s) => s.name).sort()).toEqual(['execute_tool write', 'toolyard.preflight'])
  expect(children.find((s) => s.name === 'toolyard.preflight')!.attributes).toMatchObject({ 'toolyard.preflight.plan_calls': 1 })
  expect(run.events.map((e) => [e.name, e.attributes?.['toolyard.approval.kind']])).toEqual([['toolyard.approval.requested', 'plan'], ['toolyard.approval.decided', 'plan']])
  expect(run.attributes['toolyard.run.compute_ms']).toBe(1)
  const { resourceMetrics } = await reader.collect()
  const gauge = (name: string) => resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name)?.dataPoints[0]?.value
  expect([gauge('toolyard.code.running'), gauge('toolyard.code.queued'), gauge('toolyard.code.parked')]).toEqual([2, 1, undefined])
  await runtime.dispose()
  await provider.shutdown()
  await meters.shutdown()
})

const ECHO = defineTool({
  name: 'echo', description: 'Echoes.', parameters: { text: { type: 'string', required: true } },
  output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] }, execute: (a) => a.text,
})
const TRACE = '0af7651916cd43dd8448eb211c80319c'
const CALLER = 'b7ad6b7169203331'
const tokens = [
  { token: 'agent-token-0123456789abcdef', roles: ['run'], id: 'agent' },
  { token: 'person-token-0123456789abcdef', roles: ['run', 'approve'], id: 'person' },
  { token: 'admin-token-0123456789abcdef', roles: ['admin'], id: 'operator' },
] as const
const auth = (token: string) => ({ Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' })

/** A call that asks over HTTP, decided over HTTP by `decider`: its span's decided event. */
async function decidedOverHttp(decider: string, decision: 'allow' | 'deny') {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const runtime = createToolRuntime({ approvals: {}, telemetry: { tracer: provider.getTracer('toolyard') } })
  runtime.register(ECHO)
  runtime.on('tools/pre-execute', (d, e) => (e.name === 'echo' ? { kind: 'ask', reason: 'says things' } : d))
  const app = createToolsApp(runtime, { tokens })
  const call = app.request('/v1/tools/echo/execute', { method: 'POST', headers: { ...auth(tokens[0].token), traceparent: `00-${TRACE}-${CALLER}-01` }, body: JSON.stringify({ arguments: { text: 'hi' } }) })
  const pending = await until(async () => {
    const listed = await app.request('/v1/approvals', { headers: auth(tokens[1].token) })
    const approvals = ((await listed.json()) as { approvals: { id: string }[] }).approvals
    return approvals.length > 0 && approvals
  }, 'the request in GET /v1/approvals')
  // The agent's token cannot decide; the decider's can.
  const refused = await app.request(`/v1/approvals/${pending[0]!.id}`, { method: 'POST', headers: auth(tokens[0].token), body: JSON.stringify({ decision: 'allow' }) })
  expect(refused.status).toBe(403)
  const decided = await app.request(`/v1/approvals/${pending[0]!.id}`, { method: 'POST', headers: auth(decider), body: JSON.stringify({ decision }) })
  expect(decided.status).toBe(200)
  const response = await call
  expect(response.status).toBe(200)
  const [span] = exporter.getFinishedSpans()
  await runtime.dispose()
  await provider.shutdown()
  return span!
}

it("over HTTP: the call is in the caller's trace, and toolyard.approval.decided names the deciding principal's role, never its token or id", async () => {
  const span = await decidedOverHttp(tokens[1].token, 'allow')
  expect(span.spanContext().traceId).toBe(TRACE)
  expect(span.parentSpanContext?.spanId).toBe(CALLER)
  const decided = span.events.find((e) => e.name === 'toolyard.approval.decided')!
  expect(decided.attributes).toMatchObject({ 'toolyard.approval.decision': 'allow', 'toolyard.approval.role': 'approve', 'toolyard.approval.kind': 'call' })
  const everything = JSON.stringify([span.attributes, span.events])
  for (const secret of [tokens[0].token, tokens[1].token, '"person"']) expect(everything).not.toContain(secret)
  const byAdmin = await decidedOverHttp(tokens[2].token, 'deny')
  expect(byAdmin.events.find((e) => e.name === 'toolyard.approval.decided')!.attributes).toMatchObject({ 'toolyard.approval.decision': 'deny', 'toolyard.approval.role': 'admin' })
  expect(byAdmin.attributes['error.type']).toBe('DENIED_BY_APPROVAL')
})

it("over MCP: params._meta.traceparent puts the call in the caller's trace", async () => {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const runtime = createToolRuntime({ telemetry: { tracer: provider.getTracer('toolyard') } })
  runtime.register(ECHO)
  const mcp = createMcpApp(runtime, { token: tokens[2].token })
  const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' }, _meta: { traceparent: `00-${TRACE}-${CALLER}-01` } } }
  const response = await mcp.request('/', { method: 'POST', headers: { ...auth(tokens[2].token), Accept: 'application/json, text/event-stream' }, body: JSON.stringify(call) })
  expect(response.status).toBe(200)
  const [span] = exporter.getFinishedSpans()
  expect(span!.name).toBe('execute_tool echo')
  expect(span!.spanContext().traceId).toBe(TRACE)
  expect(span!.parentSpanContext?.spanId).toBe(CALLER)
  await runtime.dispose()
  await provider.shutdown()
})
