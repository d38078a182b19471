/**
 * W3C Trace Context in the core: `traceparent` parsed strictly, the API's `Context` without the API.
 * @module
 */
import type { TelemetryContext, TelemetrySpan, TelemetrySpanContext, TraceCarrier } from './types.js'

/** The key `@opentelemetry/api` stores the active span under (`createContextKey` is `Symbol.for`). */
const SPAN_KEY = Symbol.for('OpenTelemetry Context Key SPAN')

const HEX_32 = /^[0-9a-f]{32}$/
const HEX_16 = /^[0-9a-f]{16}$/
const HEX_2 = /^[0-9a-f]{2}$/
/** A tracestate header's bound (the spec allows 32 members of at most 256 characters each, 512 is its advice). */
const MAX_TRACESTATE_CHARS = 512

/**
 * Parses a `traceparent` header per W3C Trace Context level 1: `version-traceid-parentid-flags`
 * in lower-case hex, version `ff` refused, all-zero ids refused, version `00` exactly 55
 * characters, a later version at least 55 with a `-` after the flags. Anything else is
 * `undefined` (the call then starts its own trace, as the spec says).
 */
export function parseTraceparent(header: unknown): TelemetrySpanContext | undefined {
  if (typeof header !== 'string' || header.length < 55 || header.length > 512) return undefined
  const version = header.slice(0, 2)
  if (!HEX_2.test(version) || version === 'ff') return undefined
  if (version === '00' && header.length !== 55) return undefined
  if (header.length > 55 && header[55] !== '-') return undefined
  if (header[2] !== '-' || header[35] !== '-' || header[52] !== '-') return undefined
  const traceId = header.slice(3, 35)
  const spanId = header.slice(36, 52)
  const flags = header.slice(53, 55)
  if (!HEX_32.test(traceId) || !HEX_16.test(spanId) || !HEX_2.test(flags)) return undefined
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined
  return Object.freeze({ traceId, spanId, traceFlags: Number.parseInt(flags, 16) & 0xff, isRemote: true })
}

/** The API's `TraceState`, kept as the header said it (read-only here: the core never edits it). */
function traceStateOf(raw: string): { serialize(): string } {
  const entries = new Map<string, string>()
  for (const member of raw.split(',')) {
    const at = member.indexOf('=')
    if (at > 0) entries.set(member.slice(0, at).trim(), member.slice(at + 1).trim())
  }
  const state = {
    get: (key: string) => entries.get(key),
    set: () => state,
    unset: () => state,
    serialize: () => raw,
  }
  return Object.freeze(state)
}

/** The caller's span, as the API's non-recording remote span (only its context is read). */
function remoteSpan(spanContext: TelemetrySpanContext): TelemetrySpan {
  const self: TelemetrySpan = Object.freeze({
    spanContext: () => spanContext,
    setAttribute: () => self,
    setAttributes: () => self,
    addEvent: () => self,
    setStatus: () => self,
    isRecording: () => false,
    end: () => {},
  })
  return self
}

/** An immutable context holding one value per key. */
class PlainContext implements TelemetryContext {
  readonly #values: ReadonlyMap<symbol, unknown>
  constructor(values: ReadonlyMap<symbol, unknown>) {
    this.#values = values
  }
  getValue(key: symbol): unknown {
    return this.#values.get(key)
  }
  setValue(key: symbol, value: unknown): TelemetryContext {
    return new PlainContext(new Map(this.#values).set(key, value))
  }
  deleteValue(key: symbol): TelemetryContext {
    const next = new Map(this.#values)
    next.delete(key)
    return new PlainContext(next)
  }
}

const ROOT = new PlainContext(new Map())

/** A context whose active span is `span`: what a child span is started in. */
export function contextWithSpan(span: TelemetrySpan): TelemetryContext {
  return ROOT.setValue(SPAN_KEY, span)
}

/** The parent context a W3C carrier names, or `undefined` when its `traceparent` is not valid. */
export function contextFromCarrier(carrier: TraceCarrier | undefined): TelemetryContext | undefined {
  const parsed = carrier === undefined ? undefined : parseTraceparent(carrier.traceparent)
  if (parsed === undefined) return undefined
  const raw = carrier!.tracestate
  const withState = typeof raw === 'string' && raw !== '' && raw.length <= MAX_TRACESTATE_CHARS ? { ...parsed, traceState: traceStateOf(raw) } : parsed
  return contextWithSpan(remoteSpan(Object.freeze(withState)))
}

/** The `traceparent` of a span, for carrying it on (a parked run's record, an outgoing request). */
export function traceparentOf(span: TelemetrySpan): string {
  const { traceId, spanId, traceFlags } = span.spanContext()
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, '0')}`
}

/**
 * The W3C carrier in a bag of string fields: MCP's `params._meta` (`traceparent`,
 * `tracestate`) or HTTP headers read into one. Anything but a string `traceparent` is
 * none (the execution input's `trace`; its validity is checked when the span starts).
 */
export function traceCarrierOf(bag: unknown): TraceCarrier | undefined {
  if (typeof bag !== 'object' || bag === null) return undefined
  const traceparent = Object.getOwnPropertyDescriptor(bag, 'traceparent')?.value
  const tracestate = Object.getOwnPropertyDescriptor(bag, 'tracestate')?.value
  if (typeof traceparent !== 'string') return undefined
  return typeof tracestate === 'string' ? { traceparent, tracestate } : { traceparent }
}

/** `{ trace }` for an execution input from a request's `traceparent` / `tracestate` headers, or `{}`. */
export function traceFieldOf(header: (name: string) => string | undefined): { trace?: TraceCarrier } {
  const trace = traceCarrierOf({ traceparent: header('traceparent'), tracestate: header('tracestate') })
  return trace === undefined ? {} : { trace }
}
