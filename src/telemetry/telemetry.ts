/**
 * One `execute_tool <name>` span per call (GenAI conventions), a program's events, the metrics.
 * @module
 */
import { renderApprovalArguments } from '../approvals/render.js'
import type { ToolExecutionResult } from '../types.js'
import { contextFromCarrier, contextWithSpan, traceparentOf } from './trace-context.js'
import { utf8Length } from '../util/utf8.js'
import type {
  TelemetryAttributes,
  TelemetryCounter,
  TelemetryHistogram,
  TelemetryLoad,
  TelemetryObservableGauge,
  TelemetryObservableResult,
  TelemetrySpan,
  TelemetryTracer,
  ToolTelemetryOptions,
  TraceCarrier,
} from './types.js'

/** What a person approves: one call, or a program's plan (before it runs). */
export type ApprovalKind = 'call' | 'plan'

/** `SpanKind.INTERNAL` of `@opentelemetry/api`. */
const SPAN_KIND_INTERNAL = 0
/** `SpanStatusCode.ERROR` of `@opentelemetry/api`. */
const STATUS_ERROR = 2
/** The default bound of a captured argument or result (the approval cards' default). */
export const DEFAULT_TELEMETRY_CONTENT_BYTES = 4096
/** The name `run_code` is registered under (kept here: the code-mode seam imports the registry). */
const RUN_CODE = 'run_code'
/** Failures that mean the call was refused before its tool ran (a program's `calls refused`). */
const REFUSED = new Set(['UNKNOWN_TOOL', 'INVALID_ARGS', 'INVALID_EXECUTION', 'DENIED_BY_GATE', 'DENIED_BY_GUARD', 'DENIED_BY_APPROVAL', 'ABORTED_BEFORE_DISPATCH'])
const RESULT_SCHEMA = Object.freeze({ type: 'object', properties: Object.freeze({ result: Object.freeze({}) }) })

/** What a call's span is started from. */
export interface CallSpanStart {
  readonly name: string
  readonly callId: string
  readonly caller: 'code' | 'native'
  /** The enclosing call's span (a program's sub-call). */
  readonly parent: CallSpan | undefined
  /** The caller's W3C trace context (top-level calls only). */
  readonly trace: TraceCarrier | undefined
}

/** What a call's span is ended with. */
export interface CallSpanEnd {
  readonly result: ToolExecutionResult
  readonly description: string | undefined
  readonly parameters: unknown
  readonly arguments: unknown
  readonly agent: string | undefined
  /** True when a wrapper answered without the body (a durable run's recorded call). */
  readonly replayed: boolean
  /** Milliseconds the call waited for a person (not part of its work). */
  readonly heldMs: number
}

/** The instruments, made once per runtime. */
interface Instruments {
  readonly duration: TelemetryHistogram
  readonly runs: TelemetryCounter
  readonly approvals: TelemetryCounter
  readonly approvalWait: TelemetryHistogram
}

function contentText(result: ToolExecutionResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join('\n')
}

/** The span of one call, and a program's tallies of its sub-calls. */
export class CallSpan {
  readonly span: TelemetrySpan | undefined
  readonly #telemetry: Telemetry
  readonly #start: CallSpanStart
  readonly #startedAt = performance.now()
  #callsMade = 0
  #callsRefused = 0
  #childHeldMs = 0
  #ended = false

  constructor(telemetry: Telemetry, start: CallSpanStart, span: TelemetrySpan | undefined) {
    this.#telemetry = telemetry
    this.#start = start
    this.span = span
  }

  /** A span event (approval, plan approval, parking); nothing without a tracer. */
  event(name: string, attributes: Record<string, string | number | boolean>): void {
    this.span?.addEvent(name, attributes)
  }

  /** `toolyard.approval.requested`: a person is asked (`kind` 'plan': a program's plan, on the run's span). */
  approvalRequested(reason: string | undefined, kind: ApprovalKind = 'call'): void {
    this.event('toolyard.approval.requested', { 'toolyard.approval.kind': kind, ...(reason === undefined ? {} : { 'toolyard.approval.reason': reason }) })
  }

  /** `toolyard.approval.decided`, and the approval metrics. `role` is the deciding principal's role, never a token. */
  approvalDecided(decision: string, waitedMs: number, more: { readonly role?: string | undefined; readonly kind?: ApprovalKind } = {}): void {
    const kind = more.kind ?? 'call'
    const role = more.role
    this.event('toolyard.approval.decided', { 'toolyard.approval.kind': kind, 'toolyard.approval.decision': decision, 'toolyard.approval.waited_ms': waitedMs, ...(role === undefined ? {} : { 'toolyard.approval.role': role }) })
    const instruments = this.#telemetry.instruments
    instruments?.approvals.add(1, { 'toolyard.approval.decision': decision, 'toolyard.approval.kind': kind, 'gen_ai.tool.name': this.#start.name })
    instruments?.approvalWait.record(waitedMs / 1000, { 'toolyard.approval.decision': decision, 'toolyard.approval.kind': kind })
  }

  /** The W3C context of this span (kept with a parked run: its resumption continues the trace). */
  traceCarrier(): TraceCarrier | undefined {
    const span = this.span
    if (span === undefined) return undefined
    const traceparent = traceparentOf(span)
    const state = span.spanContext().traceState?.serialize()
    return typeof state === 'string' && state !== '' ? { traceparent, tracestate: state } : { traceparent }
  }

  /** A child span of this one (preflight), or undefined without a tracer. */
  startChild(name: string, attributes: TelemetryAttributes): TelemetrySpan | undefined {
    return this.#telemetry.startChild(this, name, attributes)
  }

  /** A sub-call of this program ended (its tallies go on the program's span). */
  #childEnded(result: ToolExecutionResult, heldMs: number): void {
    this.#callsMade += 1
    this.#childHeldMs += heldMs
    if (result.isError && REFUSED.has(String(result.error.info?.code))) this.#callsRefused += 1
  }

  /** Ends the span once, with the result's attributes; records the duration metric. */
  end(end: CallSpanEnd): void {
    if (this.#ended) return
    this.#ended = true
    const { result } = end
    const errorType = result.isError ? String(result.error.info?.code ?? 'TOOL_FAILED') : undefined
    const elapsedMs = performance.now() - this.#startedAt
    if (!end.replayed) {
      const parent = this.#start.parent
      if (parent !== undefined) parent.#childEnded(result, end.heldMs)
      this.#telemetry.instruments?.duration.record(elapsedMs / 1000, { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': this.#start.name, ...(errorType === undefined ? {} : { 'error.type': errorType }) })
    }
    if (this.#start.name === RUN_CODE && this.#start.parent === undefined) this.#telemetry.instruments?.runs.add(1, { 'toolyard.run.outcome': errorType ?? 'ok' })
    const span = this.span
    if (span === undefined) return
    if (end.description !== undefined) span.setAttribute('gen_ai.tool.description', end.description)
    if (end.agent !== undefined) span.setAttribute('gen_ai.agent.name', end.agent)
    if (end.replayed) span.setAttribute('toolyard.replayed', true)
    if (end.heldMs > 0) span.setAttribute('toolyard.approval.held_ms', end.heldMs)
    if (this.#start.name === RUN_CODE) {
      span.setAttributes({
        // Elapsed, and the part of it sub-calls spent waiting for a person (summed: concurrent waits overlap).
        'toolyard.run.elapsed_ms': Math.round(elapsedMs),
        'toolyard.run.approval_wait_ms': Math.round(this.#childHeldMs + end.heldMs),
        'toolyard.run.calls_made': this.#callsMade,
        'toolyard.run.calls_refused': this.#callsRefused,
        'toolyard.run.bytes_returned': result.isError ? 0 : utf8Length(contentText(result)),
        'toolyard.run.outcome': errorType ?? 'ok',
      })
    }
    this.#telemetry.capture(span, end)
    if (result.isError) {
      span.setAttribute('error.type', errorType!)
      span.setStatus({ code: STATUS_ERROR, message: result.error.message.slice(0, 256) })
    }
    span.end()
  }
}

/** The runtime's telemetry: its tracer, its instruments and whether content is captured. */
export class Telemetry {
  readonly #tracer: TelemetryTracer | undefined
  readonly instruments: Instruments | undefined
  readonly #capture: boolean
  readonly #maxBytes: number
  /** The admission gauges and their callbacks, removed on dispose. */
  readonly #gauges: (readonly [TelemetryObservableGauge, (result: TelemetryObservableResult) => void])[] = []

  /** `load` reads the code runtime's admission figures (`CodeRuntime.load`), when it has them. */
  constructor(options: ToolTelemetryOptions, load?: () => TelemetryLoad | undefined) {
    this.#tracer = options.tracer
    this.#capture = options.captureContent === true
    this.#maxBytes = options.maxContentBytes ?? DEFAULT_TELEMETRY_CONTENT_BYTES
    const meter = options.meter
    this.instruments =
      meter === undefined
        ? undefined
        : Object.freeze({
            duration: meter.createHistogram('gen_ai.execute_tool.duration', { description: 'Duration of one tool call', unit: 's' }),
            runs: meter.createCounter('toolyard.code.runs', { description: 'Code Mode programs by outcome' }),
            approvals: meter.createCounter('toolyard.approval.decisions', { description: 'Approval decisions by decision' }),
            approvalWait: meter.createHistogram('toolyard.approval.wait', { description: 'How long a call waited for a person', unit: 's' }),
          })
    if (meter?.createObservableGauge === undefined || load === undefined) return
    const figures = [
      ['running', 'Code Mode programs running now'],
      ['queued', 'Code Mode programs admitted and waiting for a place'],
      ['parked', 'Code Mode programs parked while they wait for a person'],
    ] as const
    for (const [figure, description] of figures) {
      const gauge = meter.createObservableGauge(`toolyard.code.${figure}`, { description })
      const callback = (result: TelemetryObservableResult): void => {
        let value: unknown
        try {
          value = load()?.[figure]
        } catch {
          // A runtime disposed or failing to say its load reports nothing this time.
        }
        if (typeof value === 'number' && Number.isFinite(value)) result.observe(value)
      }
      gauge.addCallback(callback)
      this.#gauges.push([gauge, callback])
    }
  }

  /** Stops the admission gauges (the runtime was disposed). */
  dispose(): void {
    for (const [gauge, callback] of this.#gauges.splice(0)) gauge.removeCallback(callback)
  }

  /** Starts a call's span: the child of its program's span, else of the caller's trace, else a root. */
  startCall(start: CallSpanStart): CallSpan {
    const tracer = this.#tracer
    if (tracer === undefined) return new CallSpan(this, start, undefined)
    const parentSpan = start.parent?.span
    const context = parentSpan !== undefined ? contextWithSpan(parentSpan) : contextFromCarrier(start.trace)
    const span = tracer.startSpan(
      `execute_tool ${start.name}`,
      {
        kind: SPAN_KIND_INTERNAL,
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': start.name,
          'gen_ai.tool.call.id': start.callId,
          'gen_ai.tool.type': 'function',
          'toolyard.tool.caller': start.caller,
        },
      },
      context,
    )
    return new CallSpan(this, start, span)
  }

  /** A child span of `parent` (preflight); undefined without a tracer. */
  startChild(parent: CallSpan | undefined, name: string, attributes: TelemetryAttributes = {}): TelemetrySpan | undefined {
    const parentSpan = parent?.span
    return parentSpan === undefined ? undefined : this.#tracer?.startSpan(name, { kind: SPAN_KIND_INTERNAL, attributes }, contextWithSpan(parentSpan))
  }

  /** Arguments and result, only when opted in, rendered as the approval cards render them. */
  capture(span: TelemetrySpan, end: CallSpanEnd): void {
    if (!this.#capture || !span.isRecording()) return
    try {
      const tool = { name: 'tool', parameters: end.parameters }
      span.setAttribute('gen_ai.tool.call.arguments', renderApprovalArguments(tool, end.arguments, { maxBytes: this.#maxBytes }).text)
      const shown = end.result.isError ? contentText(end.result) : end.result.value
      span.setAttribute('gen_ai.tool.call.result', renderApprovalArguments({ name: 'tool', parameters: RESULT_SCHEMA }, { result: shown }, { maxBytes: this.#maxBytes }).text)
    } catch {
      // Capture is observation: a value the renderer refuses leaves the attribute out.
    }
  }
}
