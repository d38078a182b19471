/**
 * A durable run resumed by a second runtime (another process, here in one): the calls
 * answered from the store are never reported as new executions. Their spans are kept
 * and marked `toolyard.replayed`, and no duration or `calls_made` counts them.
 */
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { MeterProvider, MetricReader, type DataPoint, type Histogram } from '@opentelemetry/sdk-metrics'
import { afterAll, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { argumentsHash } from '../../../src/durable/call-key.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import type { DurableStore } from '../../../src/durable/store.js'
import type { JsonValue } from '../../../src/json/json-value.js'
import { createToolRuntime } from '../../../src/registry/runtime.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ToolTelemetryOptions } from '../../../src/telemetry/types.js'
import type { ApprovalHandler, ToolExecutionResult } from '../../../src/types.js'
import { until } from '../../support/poll.js'

class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}
const disposers: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const dispose of disposers) await dispose()
})

function processOn(store: DurableStore, approve: ApprovalHandler, telemetry: ToolTelemetryOptions | undefined) {
  const codeRuntime = createSandboxRuntime({ memoryMb: 32, prespawn: 0, parkAfterMs: 30 })
  const runtime = createToolRuntime({ mode: 'code', codeRuntime, store, approval: approve, ...(telemetry === undefined ? {} : { telemetry }) })
  disposers.push(() => runtime.dispose(), () => codeRuntime.dispose())
  const effects: string[] = []
  for (const name of ['effect', 'pay']) {
    runtime.register(defineTool({
      name, description: name, parameters: { tag: { type: 'string' }, cents: { type: 'number' } },
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: async (args) => {
        effects.push(`${name} ${args.tag ?? args.cents}`)
        return name === 'pay' ? `paid ${args.cents}` : `did ${args.tag}`
      },
    }))
  }
  runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
  return { runtime, effects }
}

async function putCallRecord(store: DurableStore, run: string, n: number, call: { name: string; arguments: JsonValue; value: JsonValue }): Promise<void> {
  const secret = (JSON.parse((await store.get(`runs/${run}`))!.value) as { park: { secret: string } }).park.secret
  await store.put(`calls/${run}/${n}`, JSON.stringify({ state: 'done', name: call.name, args: await argumentsHash(call.arguments), run: secret, value: call.value }))
}

const PROGRAM = `
  const a = await tools.effect({ tag: 'before' })
  const paid = await tools.pay({ cents: 500 })
  const b = await tools.effect({ tag: 'after' })
  return { a, paid, b }
`

it('the calls a resumed run answers from its records are marked toolyard.replayed and counted nowhere', async () => {
  const store = createMemoryStore()
  const a = processOn(store, () => new Promise<boolean>(() => {}), undefined)
  void a.runtime.execute({ callId: 'run-rec', name: 'run_code', arguments: { code: PROGRAM, description: 'pay' }, signal: new AbortController().signal })
  await until(async () => (await store.list('runs/')).entries.length === 1)
  // The first process ran pay and effect('after') after the park, then died before the run ended.
  await putCallRecord(store, 'run-rec', 2, { name: 'pay', arguments: { cents: 500 }, value: 'paid 500' })
  await putCallRecord(store, 'run-rec', 3, { name: 'effect', arguments: { tag: 'after' }, value: 'did after' })

  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const reader = new TestReader()
  const meters = new MeterProvider({ readers: [reader] })
  const b = processOn(store, async () => true, { tracer: provider.getTracer('toolyard'), meter: meters.getMeter('toolyard') })
  const [resumed] = await b.runtime.resumeRuns({ staleMs: 0 })
  const result = (await resumed!.result) as ToolExecutionResult
  expect(result.isError).toBe(false)
  expect(b.effects).toEqual([])
  const spans = exporter.getFinishedSpans()
  const run = spans.find((s) => s.name === 'execute_tool run_code')!
  const subCalls = spans.filter((s) => s.parentSpanContext?.spanId === run.spanContext().spanId)
  expect(subCalls.length).toBeGreaterThan(0)
  for (const span of subCalls) expect(span.attributes['toolyard.replayed']).toBe(true)
  expect(run.attributes['toolyard.run.calls_made']).toBe(0)
  const { resourceMetrics } = await reader.collect()
  const duration = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === 'gen_ai.execute_tool.duration')
  const counted = ((duration?.dataPoints ?? []) as DataPoint<Histogram>[]).filter((p) => p.attributes['gen_ai.tool.name'] !== 'run_code').reduce((n, p) => n + p.value.count, 0)
  expect(counted).toBe(0)
  await provider.shutdown()
  await meters.shutdown()
})
