/**
 * A test entry for the edge Worker (test/edge/telemetry-resume.test.ts): the production Worker with
 * OpenTelemetry SDK providers registered globally, and a test-only route answered by a run's object.
 * @module
 */
import { metrics, trace } from '@opentelemetry/api'
import { MeterProvider, MetricReader, type DataPoint, type Histogram } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan, type Span, type SpanProcessor } from '@opentelemetry/sdk-trace-base'
import type { ExecutionContext } from 'hono'
import worker, { ToolyardRun as EdgeRun, ToolyardRunIndex, type EdgeEnv } from '../../platforms/edge/worker.js'

/** The route only this test Worker has: `GET /__telemetry/<run id>`, served by that run's object. */
const TELEMETRY_PATH = /^\/__telemetry\/([0-9a-f-]{36})$/

class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

// Registered per isolate as the module loads, as a deployment would: every span of this
// process is in `exporter` once it ends, and in `started` from its start (a run parked
// when workerd stops never ends its span in this process, yet its id is what the resumed
// run must name as its parent).
const exporter = new InMemorySpanExporter()
const started: Span[] = []
const recordStart: SpanProcessor = {
  onStart: (span) => void started.push(span),
  onEnd: () => {},
  forceFlush: async () => {},
  shutdown: async () => {},
}
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [recordStart, new SimpleSpanProcessor(exporter)] }))
const reader = new TestReader()
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }))

/** A span as JSON (`ended` false for one still open in this process). */
function spanJson(span: ReadableSpan, ended: boolean) {
  const context = span.spanContext()
  return {
    name: span.name,
    ended,
    traceId: context.traceId,
    spanId: context.spanId,
    traceState: context.traceState?.serialize(),
    parentSpanId: span.parentSpanContext?.spanId,
    attributes: span.attributes,
    events: span.events.map((event) => ({ name: event.name, attributes: event.attributes ?? {} })),
  }
}

/** What this isolate recorded: its spans (started, ended or not) and `gen_ai.execute_tool.duration`'s counts by tool. */
async function recorded(): Promise<Response> {
  const finished = new Set(exporter.getFinishedSpans().map((span) => span.spanContext().spanId))
  const { resourceMetrics } = await reader.collect()
  const duration = resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics).find((metric) => metric.descriptor.name === 'gen_ai.execute_tool.duration')
  const counts: Record<string, number> = {}
  for (const point of (duration?.dataPoints ?? []) as DataPoint<Histogram>[]) {
    const tool = String(point.attributes['gen_ai.tool.name'])
    counts[tool] = (counts[tool] ?? 0) + point.value.count
  }
  return Response.json({ spans: started.map((span) => spanJson(span, finished.has(span.spanContext().spanId))), durationCounts: counts })
}

/** The run object, answering the test route from its own isolate. */
export class ToolyardRun extends EdgeRun {
  override async fetch(request: Request): Promise<Response> {
    return TELEMETRY_PATH.test(new URL(request.url).pathname) ? recorded() : super.fetch(request)
  }
}
export { ToolyardRunIndex }

export default {
  async fetch(request: Request, env: EdgeEnv, executionContext: ExecutionContext): Promise<Response> {
    const match = TELEMETRY_PATH.exec(new URL(request.url).pathname)
    if (match !== null && env.RUNS !== undefined) return env.RUNS.get(env.RUNS.idFromName(match[1]!)).fetch(request)
    return worker.fetch(request, env, executionContext)
  },
}
