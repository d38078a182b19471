/**
 * `POST /v1/run` as server-sent events (docs/http-api.md): the run's events as they happen,
 * then `result`; a client that falls behind is cut off, the run goes on.
 *
 * @module
 */
import type { Context } from 'hono'
import type { ApprovalBroker } from '../approvals/types.js'
import type { ToolExecutionResult } from '../types.js'
import { forwardApprovals } from './_approvals.js'
import { sseResponse } from './_sse-sender.js'
import type { InternalErrorReporter } from './http-errors.js'
import type { SessionLogHub, SessionLogHubEvent } from './session-log-hub.js'

/** What one streamed run needs. */
export interface StreamedRun {
  readonly callId: string
  /** The data of the `start` event. */
  readonly start: Readonly<Record<string, unknown>>
  /** Runs `run_code`; `cancelled` fires when the client goes away. */
  readonly execute: (cancelled: AbortSignal) => Promise<ToolExecutionResult>
}

/** The configuration a stream reads. */
export interface StreamConfig {
  readonly hub: SessionLogHub | undefined
  /** The broker whose requests for this run's sub-calls the stream forwards (`approval`, `approval-settled`). */
  readonly approvals: ApprovalBroker | undefined
  readonly heartbeatMs: number
  /** The most bytes of unwritten frames a stream may hold before it is closed with `STREAM_BACKLOG`. */
  readonly maxStreamBacklogBytes: number
  /** How long one frame may wait for the client to take it before the stream is aborted. */
  readonly streamWriteTimeoutMs: number
  readonly report: InternalErrorReporter
}

/**
 * The stream event each session-log event becomes (`/v1/run`'s stream and `/v1/runs`'
 * buffers). The session log's approval records are not streamed: the broker's events carry
 * the id a decision needs.
 */
export const EVENT_OF: Readonly<Partial<Record<SessionLogHubEvent['type'], string>>> = {
  'tool/code-dispatch-start': 'dispatch-start',
  'tool/code-dispatch': 'dispatch',
  'tool/code-log': 'log',
}

/**
 * Answers with the event stream of one run. Each frame is `event:`, `id:` (1, 2, 3 … per
 * stream) and one `data:` line of JSON (which escapes every line break), queued in the
 * order it was produced and written one at a time (`_sse-sender.ts`).
 */
export function streamRun(c: Context, run: StreamedRun, config: StreamConfig): Response {
  const cancelled = new AbortController()
  let sequence = 0
  const frame = (event: string, data: unknown): string => `event: ${event}\nid: ${++sequence}\ndata: ${JSON.stringify(data)}\n\n`
  let unsubscribe: (() => void) | undefined
  let stopApprovals: (() => void) | undefined
  const stopProducing = (): void => {
    unsubscribe?.()
    // Stryker disable next-line OptionalChaining: stopProducing runs only after the start frame is queued (a first frame is always taken whole), when stopApprovals is set
    stopApprovals?.()
  }
  const options = {
    maxBacklogBytes: config.maxStreamBacklogBytes,
    writeTimeoutMs: config.streamWriteTimeoutMs,
    heartbeatMs: config.heartbeatMs,
    finalFrame: (dropped: number) =>
      frame('error', {
        callId: run.callId,
        error: {
          code: 'STREAM_BACKLOG',
          message: `this stream fell behind: ${dropped} bytes of events were not read in time (maxStreamBacklogBytes ${config.maxStreamBacklogBytes}) and were dropped; the run goes on without this stream`,
        },
      }),
    onFallBehind: stopProducing,
    // A client that went away cancels its run; a stream given up on does not.
    onClientGone: () => cancelled.abort(new DOMException('the client went away', 'AbortError')),
  }
  return sseResponse(c, options, async (sender) => {
    const send = (event: string, data: unknown): void => sender.send(frame(event, data))
    send('start', run.start)
    unsubscribe = config.hub?.subscribe(
      (event) => {
        const name = EVENT_OF[event.type]
        if (name !== undefined) send(name, event)
      },
      { parentCallId: run.callId },
    )
    stopApprovals = forwardApprovals(config.approvals, run.callId, send)
    try {
      send('result', await run.execute(cancelled.signal))
    } catch (error) {
      // runtime.execute never rejects; a runtime that does is a bug to report, not to stream.
      config.report(error, c.req.raw)
      send('error', { error: { code: 'INTERNAL', message: 'internal error' } })
    } finally {
      stopProducing()
    }
  })
}
