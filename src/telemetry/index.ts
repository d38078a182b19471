/**
 * OpenTelemetry for toolyard through objects of the API's shape (docs/observability.md).
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
