/**
 * OpenTelemetry for toolyard: spans and metrics through objects of the API's shape that
 * the caller passes (`ToolRuntimeOptions.telemetry`); see docs/observability.md.
 *
 * @module
 */
export { parseTraceparent, traceCarrierOf, traceparentOf } from './trace-context.js'
export type {
  TelemetryAttributes,
  TelemetryAttributeValue,
  TelemetryContext,
  TelemetryCounter,
  TelemetryHistogram,
  TelemetryLoad,
  TelemetryMeter,
  TelemetryObservableGauge,
  TelemetryObservableResult,
  TelemetrySpan,
  TelemetrySpanContext,
  TelemetrySpanOptions,
  TelemetryTracer,
  ToolTelemetryOptions,
  TraceCarrier,
} from './types.js'
