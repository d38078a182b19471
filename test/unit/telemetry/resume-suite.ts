/**
 * The durable-resume telemetry checks, for any CodeRuntime that parks (Chromium Web
 * Workers, QuickJS inside workerd): two runtimes over one store, the second resuming.
 *
 * @module
 */
import { MeterProvider, MetricReader, type DataPoint, type Histogram } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { afterAll, describe, expect, it } from 'vitest'
import type { CodeRuntime } from '../../../src/code-runtime/contract.js'
import { argumentsHash } from '../../../src/durable/call-key.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import { readStoredRun } from '../../../src/durable/runs.js'
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

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const PROGRAM = `
  const a = await tools.effect({ tag: 'before' })
  const paid = await tools.pay({ cents: 500 })
  const b = await tools.effect({ tag: 'after' })
  return { a, paid, b }
`

/**
 * Registers the two checks under `name`: a run parked by one runtime and resumed by a
 * second one (its own code runtime, tracer and meter; the same store) is in the parked
 * run's trace, and the calls the second one answers from the store's records are marked
 * `toolyard.replayed` and counted in no duration nor `calls_made`.
 */
export function describeResumeTelemetry(name: string, createCodeRuntime: (options: { parkAfterMs: number }) => CodeRuntime): void {
  describe(`durable resume telemetry: ${name}`, () => {
    const disposers: (() => Promise<void>)[] = []
    afterAll(async () => {
      for (const dispose of disposers.reverse()) await dispose()
    })

    /** One "process": its own code runtime, tool runtime and telemetry over the shared store. */
    function processOn(store: DurableStore, approve: ApprovalHandler, telemetry?: ToolTelemetryOptions) {
      const codeRuntime = createCodeRuntime({ parkAfterMs: 30 })
      const runtime = createToolRuntime({ mode: 'code', codeRuntime, store, approval: approve, ...(telemetry === undefined ? {} : { telemetry }) })
      disposers.push(() => codeRuntime.dispose(), () => runtime.dispose())
      const effects: string[] = []
      for (const tool of ['effect', 'pay']) {
        runtime.register(defineTool({
          name: tool, description: tool, parameters: { tag: { type: 'string' }, cents: { type: 'number' } },
          output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
          execute: async (args) => {
            effects.push(`${tool} ${args.tag ?? args.cents}`)
            return tool === 'pay' ? `paid ${args.cents}` : `did ${args.tag}`
          },
        }))
      }
      runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
      return { runtime, effects }
    }
    const tracing = () => {
      const exporter = new InMemorySpanExporter()
      const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
      disposers.push(() => provider.shutdown())
      return { exporter, tracer: provider.getTracer('toolyard') }
    }

    it('a run resumed by a second runtime on the store is in the same trace, its span the child of the parked run span', async () => {
      const store = createMemoryStore()
      const first = tracing()
      const a = processOn(store, () => new Promise<boolean>(() => {}), { tracer: first.tracer })
      const parkedResult = a.runtime.execute({
        callId: 'run-trace', name: 'run_code', arguments: { code: PROGRAM, description: 'pay' },
        signal: new AbortController().signal, trace: { traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01`, tracestate: 'vendor=abc' },
      })
      const stored = await until(async () => {
        const entry = await store.get('runs/run-trace')
        const run = entry === undefined ? undefined : await readStoredRun(entry.value)
        return run?.park?.trace !== undefined && run
      }, 'the parked run with its trace context')
      // The first runtime goes away with the run parked; its record stays for the second.
      await a.runtime.dispose()
      expect(((await parkedResult) as ToolExecutionResult).isError).toBe(true)
      const parkedRun = first.exporter.getFinishedSpans().find((s) => s.name === 'execute_tool run_code')!
      expect(parkedRun.spanContext().traceId).toBe(TRACE_ID)
      expect(stored.park!.trace).toEqual({ traceparent: `00-${TRACE_ID}-${parkedRun.spanContext().spanId}-01`, tracestate: 'vendor=abc' })
      expect(parkedRun.events.find((e) => e.name === 'toolyard.run.parked')!.attributes).toMatchObject({ 'toolyard.run.waiting_calls': 1 })

      const second = tracing()
      const b = processOn(store, async () => true, { tracer: second.tracer })
      const [resumed] = await b.runtime.resumeRuns({ staleMs: 0 })
      const result = (await resumed!.result) as ToolExecutionResult
      expect(result.isError).toBe(false)
      const spans = second.exporter.getFinishedSpans()
      const run = spans.find((s) => s.name === 'execute_tool run_code')!
      for (const span of spans) expect(span.spanContext().traceId).toBe(TRACE_ID)
      expect(run.parentSpanContext?.spanId).toBe(parkedRun.spanContext().spanId)
      expect(run.spanContext().traceState?.get('vendor')).toBe('abc')
      expect(run.events.find((e) => e.name === 'toolyard.run.resumed')!.attributes).toEqual({ 'toolyard.run.resumed_from': 'store', 'toolyard.run.waiting_calls': 1 })
      const pay = spans.find((s) => s.name === 'execute_tool pay' && s.attributes['toolyard.replayed'] !== true)!
      expect(pay.parentSpanContext?.spanId).toBe(run.spanContext().spanId)
      expect(pay.events.map((e) => e.name)).toEqual(['toolyard.approval.requested', 'toolyard.approval.decided'])
      // effect('before') ran in the first runtime: the second replays it, never runs it again.
      expect(a.effects).toEqual(['effect before'])
      expect(b.effects).toEqual(['pay 500', 'effect after'])
      expect(await store.get('runs/run-trace')).toBeUndefined()
    })

    it('the calls a resumed run answers from its records are marked toolyard.replayed and counted nowhere', async () => {
      const store = createMemoryStore()
      const a = processOn(store, () => new Promise<boolean>(() => {}))
      void a.runtime.execute({ callId: 'run-rec', name: 'run_code', arguments: { code: PROGRAM, description: 'pay' }, signal: new AbortController().signal })
      await until(async () => (await store.list('runs/')).entries.length === 1, 'the parked run')
      // As if the first runtime ran pay and effect('after') after the park, then died before the run ended.
      const secret = (JSON.parse((await store.get('runs/run-rec'))!.value) as { park: { secret: string } }).park.secret
      const record = async (n: number, call: { name: string; arguments: JsonValue; value: JsonValue }) =>
        store.put(`calls/run-rec/${n}`, JSON.stringify({ state: 'done', name: call.name, args: await argumentsHash(call.arguments), run: secret, value: call.value }))
      await record(2, { name: 'pay', arguments: { cents: 500 }, value: 'paid 500' })
      await record(3, { name: 'effect', arguments: { tag: 'after' }, value: 'did after' })

      const second = tracing()
      const reader = new TestReader()
      const meters = new MeterProvider({ readers: [reader] })
      disposers.push(() => meters.shutdown())
      const b = processOn(store, async () => true, { tracer: second.tracer, meter: meters.getMeter('toolyard') })
      const [resumed] = await b.runtime.resumeRuns({ staleMs: 0 })
      const result = (await resumed!.result) as ToolExecutionResult
      expect(result.isError).toBe(false)
      expect(b.effects).toEqual([])
      const spans = second.exporter.getFinishedSpans()
      const run = spans.find((s) => s.name === 'execute_tool run_code')!
      const subCalls = spans.filter((s) => s.parentSpanContext?.spanId === run.spanContext().spanId)
      expect(subCalls.length).toBeGreaterThan(0)
      for (const span of subCalls) expect(span.attributes['toolyard.replayed']).toBe(true)
      expect(run.attributes['toolyard.run.calls_made']).toBe(0)
      const { resourceMetrics } = await reader.collect()
      const duration = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === 'gen_ai.execute_tool.duration')
      const counted = ((duration?.dataPoints ?? []) as DataPoint<Histogram>[]).filter((p) => p.attributes['gen_ai.tool.name'] !== 'run_code').reduce((n, p) => n + p.value.count, 0)
      expect(counted).toBe(0)
    })
  })
}
