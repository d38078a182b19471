/**
 * The OpenTelemetry API shapes the core uses, declared structurally (no run-time import).
 * @module
 */

/** A span attribute value (the API's `AttributeValue`, scalars and homogeneous arrays). */
export type TelemetryAttributeValue = string | number | boolean | Array<null | undefined | string> | Array<null | undefined | number> | Array<null | undefined | boolean>

/** Span or metric attributes. */
export type TelemetryAttributes = Record<string, TelemetryAttributeValue | undefined>

/** The API's `SpanContext`: ids as lower-case hex, `traceFlags` bit 0 = sampled. */
export interface TelemetrySpanContext {
  readonly traceId: string
  readonly spanId: string
  readonly traceFlags: number
  readonly isRemote?: boolean
  /** The API's `TraceState`; only its header form is read. */
  readonly traceState?: { serialize(): string }
}

/** The API's `Context` (immutable; `setValue` answers a new one). */
export interface TelemetryContext {
  getValue(key: symbol): unknown
  setValue(key: symbol, value: unknown): TelemetryContext
  deleteValue(key: symbol): TelemetryContext
}

/** The part of the API's `Span` the core calls. */
export interface TelemetrySpan {
  spanContext(): TelemetrySpanContext
  setAttribute(key: string, value: TelemetryAttributeValue): unknown
  setAttributes(attributes: TelemetryAttributes): unknown
  addEvent(name: string, attributes?: TelemetryAttributes): unknown
  setStatus(status: { code: number; message?: string }): unknown
  isRecording(): boolean
  end(): void
}

/** The API's `SpanOptions`, as far as the core sets them. */
export interface TelemetrySpanOptions {
  kind?: number
  attributes?: TelemetryAttributes
}

/** The API's `Tracer` (`trace.getTracer(name)`). */
export interface TelemetryTracer {
  startSpan(name: string, options?: TelemetrySpanOptions, context?: TelemetryContext): TelemetrySpan
}

/** The API's `Histogram`. */
export interface TelemetryHistogram {
  record(value: number, attributes?: TelemetryAttributes): void
}

/** The API's `Counter` and `UpDownCounter`. */
export interface TelemetryCounter {
  add(value: number, attributes?: TelemetryAttributes): void
}

/** The API's `ObservableResult`: what a gauge's callback reports into. */
export interface TelemetryObservableResult {
  observe(value: number, attributes?: TelemetryAttributes): void
}

/** The API's `ObservableGauge`. */
export interface TelemetryObservableGauge {
  addCallback(callback: (result: TelemetryObservableResult) => void): void
  removeCallback(callback: (result: TelemetryObservableResult) => void): void
}

/** The API's `Meter` (`metrics.getMeter(name)`), as far as the core creates instruments. */
export interface TelemetryMeter {
  createHistogram(name: string, options?: { description?: string; unit?: string }): TelemetryHistogram
  createCounter(name: string, options?: { description?: string; unit?: string }): TelemetryCounter
  createUpDownCounter(name: string, options?: { description?: string; unit?: string }): TelemetryCounter
  /** Present on every API meter since 1.3; without it the admission gauges are left out. */
  createObservableGauge?(name: string, options?: { description?: string; unit?: string }): TelemetryObservableGauge
}

/** What the admission gauges read (a code runtime's `load()`: the sandbox adds `parked`). */
export interface TelemetryLoad {
  readonly running: number
  readonly queued: number
  readonly parked?: number
}

/**
 * `ToolRuntimeOptions.telemetry`: where spans and metrics go. Nothing is recorded
 * without a tracer or a meter; the library never registers a provider itself.
 */
export interface ToolTelemetryOptions {
  /** `trace.getTracer('toolyard')`: one `execute_tool <name>` span per call. */
  readonly tracer?: TelemetryTracer
  /** `metrics.getMeter('toolyard')`: `gen_ai.execute_tool.duration`, runs, approvals, admission. */
  readonly meter?: TelemetryMeter
  /**
   * Record `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result` (default false), as the
   * approval cards render them (bounded by `renderApprovalArguments`). The demo server
   * turns it on with `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.
   */
  readonly captureContent?: boolean
  /** The byte bound of each captured attribute (default 4096, at least 512). */
  readonly maxContentBytes?: number
}

/** A W3C trace context carried by an execution input (from an HTTP header or MCP's `_meta`). */
export interface TraceCarrier {
  readonly traceparent: string
  readonly tracestate?: string
}
