/**
 * The telemetry of the core on every runtime (Node, Chromium, workerd): web standards
 * only, no sandbox. A nested call (a tool calling `execute` with its own token as
 * `parent`, as a program's sub-call does) is its caller's child; approvals are events;
 * an incoming traceparent is the root's parent.
 */
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { expect, it } from 'vitest'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { CodeRunRequest, CodeRunResult, CodeRuntime } from '../../../src/code-runtime/contract.js'
import type { ToolRuntime } from '../../../src/runtime-types.js'

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
