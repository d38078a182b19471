/**
 * `POST /v1/run` as server-sent events: `start`, each Code Mode sub-call's
 * `dispatch-start` / `dispatch`, its `approval` / `approval-settled` (when it waits for a
 * person) and console `log` as they happen, then `result` (or `error` on an internal
 * failure). The stream plumbing is Hono's `streamSSE`; its
 * `onAbort` (the client cancelled the body) and the request's signal both abort the run.
 *
 * @module
 */
import type { Context } from 'hono'
import { streamSSE } from 'hono/streaming'
import type { ApprovalBroker } from '../approvals/types.js'
import type { ToolExecutionResult } from '../types.js'
import { forwardApprovals } from './_approvals.js'
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
  readonly report: InternalErrorReporter
}

// The session log's approval records are not streamed: the broker's events carry the id a decision needs.
const EVENT_OF: Readonly<Partial<Record<SessionLogHubEvent['type'], string>>> = {
  'tool/code-dispatch-start': 'dispatch-start',
  'tool/code-dispatch': 'dispatch',
  'tool/code-log': 'log',
}

/**
 * Answers with the event stream of one run. Frames are written with one synchronous
 * `write` each, `event:`, `id:` (1, 2, 3 … per stream) and one `data:` line of JSON
 * (which escapes every line break): frames leave in the order they were produced, which
 * `writeSSE` would not promise (it awaits before writing).
 */
export function streamRun(c: Context, run: StreamedRun, config: StreamConfig): Response {
  const response = streamSSE(c, async (stream) => {
    const cancelled = new AbortController()
    stream.onAbort(() => cancelled.abort(new DOMException('the client went away', 'AbortError')))
    let sequence = 0
    const send = (event: string, data: unknown): void => {
      void stream.write(`event: ${event}\nid: ${++sequence}\ndata: ${JSON.stringify(data)}\n\n`)
    }
    send('start', run.start)
    const unsubscribe = config.hub?.subscribe(
      (event) => {
        const name = EVENT_OF[event.type]
        if (name !== undefined) send(name, event)
      },
      { parentCallId: run.callId },
    )
    const stopApprovals = forwardApprovals(config.approvals, run.callId, send)
    const heartbeat = config.heartbeatMs > 0 ? setInterval(() => void stream.write(': keep-alive\n\n'), config.heartbeatMs) : undefined
    try {
      send('result', await run.execute(cancelled.signal))
    } catch (error) {
      // runtime.execute never rejects; a runtime that does is a bug to report, not to stream.
      config.report(error, c.req.raw)
      send('error', { error: { code: 'INTERNAL', message: 'internal error' } })
    } finally {
      if (heartbeat !== undefined) clearInterval(heartbeat)
      unsubscribe?.()
      stopApprovals()
    }
  })
  // streamSSE's defaults are `text/event-stream` and `no-cache`; the documented ones follow.
  response.headers.set('Content-Type', 'text/event-stream; charset=utf-8')
  response.headers.set('Cache-Control', 'no-store')
  // Reverse proxies (nginx) must not buffer the stream.
  response.headers.set('X-Accel-Buffering', 'no')
  return response
}
