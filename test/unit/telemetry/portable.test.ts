/**
 * The telemetry of the core on every runtime (Node, Chromium, workerd): web standards
 * only, no sandbox. A nested call (a tool calling `execute` with its own token as
 * `parent`, as a program's sub-call does) is its caller's child; approvals are events;
 * an incoming traceparent is the root's parent.
 */
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { expect, it } from 'vitest'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ToolRuntime } from '../../../src/runtime-types.js'

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
