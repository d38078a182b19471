/**
 * Server-sent events with back-pressure, a backlog cap and a write timeout, so a client that
 * stops reading cannot pin the host's memory (docs/http-api.md).
 *
 * @module
 */
import type { Context } from 'hono'
import { streamSSE } from 'hono/streaming'
import type { SSEStreamingApi } from 'hono/streaming'

/** Default `maxStreamBacklogBytes`: 4 MiB. */
export const DEFAULT_MAX_STREAM_BACKLOG_BYTES = 4 * 1024 * 1024
/** Default `streamWriteTimeoutMs`: 30 s. */
export const DEFAULT_STREAM_WRITE_TIMEOUT_MS = 30_000

/** Why a stream was given up: its backlog passed the cap, or a write was not taken in time. */
export type FallBehindReason = 'backlog' | 'write-timeout'

/** Options of {@link createSseSender}. */
export interface SseSenderOptions {
  readonly maxBacklogBytes: number
  readonly writeTimeoutMs: number
  /** The last frame of a stream that fell behind (its backlog was dropped). */
  readonly finalFrame: (droppedBytes: number) => string
  /** Called once when the stream is given up, before it closes: stop producing for it. */
  readonly onFallBehind: (reason: FallBehindReason) => void
}

/** A stream's writer. */
export interface SseSender {
  /** Queues one frame (`event: …\n…\n\n`); ignored once the stream fell behind. */
  send(frame: string): void
  /** Resolves once every queued frame was taken by the client, or the stream was given up. */
  drained(): Promise<void>
  /** Why the stream was given up, or `undefined` while it keeps up. */
  readonly fallen: FallBehindReason | undefined
  /** Bytes queued or being written (a test's and a bench's gauge). */
  readonly backlogBytes: number
}

/**
 * Creates the writer of one event stream. `stream` is Hono's `streamSSE` handle; nothing
 * else writes to it.
 *
 * @example
 * ```ts
 * const sender = createSseSender(stream, { maxBacklogBytes, writeTimeoutMs, finalFrame, onFallBehind: stop })
 * sender.send(`event: start\ndata: {}\n\n`)
 * await sender.drained()
 * ```
 */
export function createSseSender(stream: SSEStreamingApi, options: SseSenderOptions): SseSender {
  const encoder = new TextEncoder()
  const queue: Uint8Array[] = []
  let queued = 0
  let writing = 0
  let pumping = false
  let fallen: FallBehindReason | undefined
  let waiters: (() => void)[] = []

  const wake = (): void => {
    const ready = waiters
    waiters = []
    for (const resolve of ready) resolve()
  }

  const giveUp = (reason: FallBehindReason): void => {
    fallen = reason
    queue.length = 0
    queued = 0
    try {
      options.onFallBehind(reason)
    } catch {
      // The producer's cleanup failing changes nothing here: the stream is given up either way.
    }
  }

  /** Writes one chunk; `false` when the client did not take it within the write timeout. */
  const writeInTime = async (chunk: Uint8Array): Promise<boolean> => {
    let timer: ReturnType<typeof setTimeout> | undefined
    const expired = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), options.writeTimeoutMs)))
    try {
      return await Promise.race([stream.write(chunk).then(() => true), expired])
    } finally {
      clearTimeout(timer)
    }
  }

  const pump = async (): Promise<void> => {
    pumping = true
    while (queue.length > 0) {
      const chunk = queue.shift()!
      queued -= chunk.byteLength
      writing = chunk.byteLength
      const taken = await writeInTime(chunk)
      writing = 0
      if (!taken) {
        if (fallen === undefined) giveUp('write-timeout')
        queue.length = 0
        queued = 0
        // Cancels the response body: every byte it held is released; the client's connection ends.
        stream.abort()
        break
      }
    }
    pumping = false
    // The final frame of a stream that fell behind is out: nothing more will be written.
    if (fallen !== undefined && !stream.aborted) void stream.close()
    wake()
  }

  return {
    send(frame) {
      if (fallen !== undefined) return
      const chunk = encoder.encode(frame)
      const backlog = queued + writing
      if (backlog > 0 && backlog + chunk.byteLength > options.maxBacklogBytes) {
        const dropped = queued + chunk.byteLength
        giveUp('backlog')
        const final = encoder.encode(options.finalFrame(dropped))
        queue.push(final)
        queued += final.byteLength
      } else {
        queue.push(chunk)
        queued += chunk.byteLength
      }
      if (!pumping) void pump()
    },
    drained() {
      if (
        !pumping &&
        // Stryker disable next-line ConditionalExpression: send() starts pump() whenever it queues, and pump() sets pumping before its first await, so the queue is never non-empty while pumping is false
        queue.length === 0
      )
        return Promise.resolve()
      return new Promise((resolve) => waiters.push(resolve))
    },
    get fallen() {
      return fallen
    },
    get backlogBytes() {
      return queued + writing
    },
  }
}

/** Options of {@link sseResponse}: the sender's, plus the keep-alive and the client's leaving. */
export interface SseResponseOptions extends Omit<SseSenderOptions, 'onFallBehind'> {
  /** A `: keep-alive` comment every this many ms while the body runs; 0: none. */
  readonly heartbeatMs?: number
  /** Called once when the stream is given up (it fell behind), before it closes: stop producing for it. */
  readonly onFallBehind?: (reason: FallBehindReason) => void
  /** Called once when the client goes away (the stream or the request aborted) before the stream fell behind. */
  readonly onClientGone?: () => void
  /** Called once the stream is done: its body ended and every queued frame is out (or given up). */
  readonly onClosed?: () => void
}

/**
 * The one event-stream response of the HTTP API and MCP: Hono's `streamSSE` under a
 * {@link createSseSender}, the keep-alive, the client's leaving wired to `onClientGone`, the
 * documented headers, and every queued frame out (or given up) before the stream closes.
 * `body` produces the frames through the sender; the stream ends when it resolves.
 */
export function sseResponse(c: Context, options: SseResponseOptions, body: (sender: SseSender) => Promise<void>): Response {
  const response = streamSSE(c, async (stream) => {
    let heartbeat: ReturnType<typeof setInterval> | undefined
    const stopBeating = (): void => clearInterval(heartbeat)
    const sender = createSseSender(stream, {
      maxBacklogBytes: options.maxBacklogBytes,
      writeTimeoutMs: options.writeTimeoutMs,
      finalFrame: options.finalFrame,
      onFallBehind: (reason) => {
        stopBeating()
        options.onFallBehind?.(reason)
      },
    })
    // A stream given up on is not a client gone: its producer already heard onFallBehind.
    const gone = (): void => {
      if (sender.fallen === undefined) options.onClientGone?.()
    }
    stream.onAbort(gone)
    const signal = c.req.raw.signal
    if (signal.aborted) gone()
    else
      // Stryker disable next-line ObjectLiteral,BooleanLiteral: a signal fires 'abort' at most once, and the finally block below removes the listener either way
      signal.addEventListener('abort', gone, { once: true })
    const everyMs = options.heartbeatMs ?? 0
    if (everyMs > 0) heartbeat = setInterval(() => sender.send(': keep-alive\n\n'), everyMs)
    try {
      await body(sender)
    } finally {
      stopBeating()
      // Stryker disable next-line StringLiteral: a listener left on the request's signal could only report a client gone after the stream ended
      signal.removeEventListener('abort', gone)
      try {
        // Hono closes the stream when this returns: every queued frame must be out first (or given up).
        await sender.drained()
      } finally {
        options.onClosed?.()
      }
    }
  })
  // streamSSE's defaults are `text/event-stream` and `no-cache`; the documented ones follow.
  response.headers.set('Content-Type', 'text/event-stream; charset=utf-8')
  response.headers.set('Cache-Control', 'no-store')
  // Reverse proxies (nginx) must not buffer the stream.
  response.headers.set('X-Accel-Buffering', 'no')
  return response
}
