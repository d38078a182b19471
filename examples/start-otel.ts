/**
 * `npm start` with `OTEL_EXPORTER_OTLP_ENDPOINT` set: traces and metrics of the demo server
 * over OTLP/HTTP (JSON). The SDK and exporters are the demo server's devDependencies, loaded
 * only when the variable is set; the library itself only receives a tracer and a meter.
 */
import type { ToolTelemetryOptions } from '../src/telemetry/index.js'

/** What {@link startOtel} answers: the runtime's `telemetry` option, and the flush-and-stop of the exporters. */
export interface StartedOtel {
  readonly telemetry: ToolTelemetryOptions
  /** Exports what is buffered, then stops the providers. Never rejects (an unreachable collector is logged). */
  shutdown(): Promise<void>
}

/** Milliseconds from an environment variable, or `fallback` when it is absent or not a positive integer. */
function envMs(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = Number(env[name])
  return Number.isSafeInteger(value) && value > 0 ? value : fallback
}

/**
 * Starts OTLP/HTTP export when `OTEL_EXPORTER_OTLP_ENDPOINT` (or the per-signal
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, else answers `undefined`. The exporters
 * read the standard `OTEL_EXPORTER_OTLP_*` variables themselves (endpoint, headers);
 * `OTEL_SERVICE_NAME` names the service (default `toolyard`),
 * `OTEL_METRIC_EXPORT_INTERVAL` the metric period (default 60 s), and
 * `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` records arguments and results.
 */
export async function startOtel(env: NodeJS.ProcessEnv = process.env): Promise<StartedOtel | undefined> {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return undefined
  const [{ OTLPTraceExporter }, { OTLPMetricExporter }, { BasicTracerProvider, BatchSpanProcessor }, { MeterProvider, PeriodicExportingMetricReader }, { resourceFromAttributes }] =
    await Promise.all([
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/exporter-metrics-otlp-http'),
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/sdk-metrics'),
      import('@opentelemetry/resources'),
    ])
  const resource = resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || 'toolyard' })
  // The batch processor reads OTEL_BSP_* (delay, queue size) itself.
  const tracing = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] })
  const reader = new PeriodicExportingMetricReader({ exporter: new OTLPMetricExporter(), exportIntervalMillis: envMs(env, 'OTEL_METRIC_EXPORT_INTERVAL', 60_000) })
  const metering = new MeterProvider({ resource, readers: [reader] })
  let stopped: Promise<void> | undefined
  return {
    telemetry: {
      tracer: tracing.getTracer('toolyard'),
      meter: metering.getMeter('toolyard'),
      captureContent: env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT === 'true',
    },
    shutdown: () =>
      (stopped ??= Promise.all([tracing.shutdown(), metering.shutdown()]).then(
        () => undefined,
        (error: unknown) => console.error('OpenTelemetry export failed at shutdown:', error),
      )),
  }
}
