/**
 * The browser runtime's compute meter: a heartbeat over a private MessagePort.
 * @module
 */

/** A heartbeat ping (host → worker). */
export interface HeartbeatPing {
  readonly seq: number
}

/** The worker's notice that it is closing itself (sent by the patched `close()`). */
export interface HeartbeatExit {
  readonly exit: true
}

/** A heartbeat answer (worker → host): the ping's `seq` and the worker's absolute time of answering. */
export interface HeartbeatPong {
  readonly seq: number
  /** `performance.timeOrigin + performance.now()` inside the worker when it answered. */
  readonly at: number
}

/** Options of {@link HeartbeatMeter}. */
export interface HeartbeatMeterOptions {
  /** Mean milliseconds between pings; each gap is drawn from [0.5, 1.5] × this. */
  readonly intervalMs: number
  /** A ping answered later than this (ms) samples the loop as busy. */
  readonly busyThresholdMs: number
  /** Called after every ping sent and every answer received, so the owner can check its budget. */
  readonly onSample?: () => void
  /** Called once when the worker reports it is closing itself (`self.close()` from the program). */
  readonly onExit?: () => void
}

interface SentPing {
  readonly seq: number
  readonly sentAt: number
  /** Milliseconds since the previous ping (or since `start()`): what a busy sample is charged. */
  readonly slot: number
}

/** Absolute high-resolution time, comparable between a window and its workers. */
export function absoluteNow(): number {
  return performance.timeOrigin + performance.now()
}

/** Host side of the heartbeat. */
export class HeartbeatMeter {
  readonly #port: MessagePort
  readonly #options: HeartbeatMeterOptions
  readonly #outstanding: SentPing[] = []
  #timer: ReturnType<typeof setTimeout> | undefined
  #charged = 0
  #seq = 0
  #lastSentAt = 0
  #stopped = false
  #pongs = 0

  constructor(port: MessagePort, options: HeartbeatMeterOptions) {
    this.#port = port
    this.#options = options
    port.onmessage = (event: MessageEvent<unknown>) => this.#onPong(event.data)
  }

  /** Starts pinging; the first slot is measured from now. */
  start(): void {
    if (this.#stopped || this.#timer !== undefined) return
    this.#lastSentAt = absoluteNow()
    this.#schedule()
  }

  /** Busy milliseconds: answered busy samples plus provisionally charged outstanding pings. */
  computeMs(): number {
    const now = absoluteNow()
    let provisional = 0
    for (const ping of this.#outstanding) {
      if (now - ping.sentAt > this.#options.busyThresholdMs) provisional += ping.slot
    }
    return this.#charged + provisional
  }

  /** How many answers arrived (diagnostics and tests). */
  get answered(): number {
    return this.#pongs
  }

  /** Stops pinging and closes the port. Idempotent. */
  stop(): void {
    if (this.#stopped) return
    this.#stopped = true
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#timer = undefined
    this.#port.onmessage = null
    this.#port.close()
  }

  #schedule(): void {
    const gap = this.#options.intervalMs * (0.5 + Math.random())
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      if (this.#stopped) return
      this.#ping()
      this.#schedule()
    }, gap)
  }

  #ping(): void {
    const sentAt = absoluteNow()
    const seq = ++this.#seq
    this.#outstanding.push({ seq, sentAt, slot: sentAt - this.#lastSentAt })
    this.#lastSentAt = sentAt
    this.#port.postMessage({ seq } satisfies HeartbeatPing)
    this.#options.onSample?.()
  }

  #onPong(data: unknown): void {
    if (this.#stopped) return
    // The port is private to the bootstrap, but validate anyway: a malformed answer is ignored.
    if (typeof data !== 'object' || data === null) return
    if ((data as { exit?: unknown }).exit === true) {
      this.#options.onExit?.()
      return
    }
    const seq = (data as { seq?: unknown }).seq
    const at = (data as { at?: unknown }).at
    if (typeof seq !== 'number' || typeof at !== 'number' || !Number.isFinite(at)) return
    const receivedAt = absoluteNow()
    while (this.#outstanding.length > 0 && this.#outstanding[0]!.seq <= seq) {
      const ping = this.#outstanding.shift()!
      // The worker's stamp excludes time the host's own loop spent busy; it can never exceed what the host saw.
      const stamp = ping.seq === seq ? at : receivedAt
      const latency = Math.min(receivedAt - ping.sentAt, Math.max(0, stamp - ping.sentAt))
      if (latency > this.#options.busyThresholdMs) this.#charged += ping.slot
    }
    this.#pongs++
    this.#options.onSample?.()
  }
}

/**
 * Worker side of the heartbeat: answers every ping from a message handler, with
 * functions captured before any program code runs (a program that later patches
 * `MessagePort.prototype` or `performance` changes nothing here).
 */
export function answerHeartbeat(port: MessagePort): void {
  const post = port.postMessage.bind(port)
  // A worker that closes itself goes silent without any event the page can observe.
  const scope = globalThis as unknown as { close?: () => void }
  const proto = Object.getPrototypeOf(scope) as { close?: () => void } | null
  const original = proto?.close ?? scope.close
  if (typeof original === 'function') {
    const close = function close(this: unknown): void {
      try {
        post({ exit: true } satisfies HeartbeatExit)
      } finally {
        original.call(scope)
      }
    }
    for (const target of [proto, scope]) {
      if (target === null) continue
      try {
        Object.defineProperty(target, 'close', { value: close, writable: true, configurable: true, enumerable: false })
      } catch {
        // A realm that refuses the patch still meters silence as busy time.
      }
    }
  }
  const now = performance.now.bind(performance)
  const origin = performance.timeOrigin
  port.onmessage = (event: MessageEvent<unknown>) => {
    const data = event.data
    if (typeof data !== 'object' || data === null) return
    const seq = (data as { seq?: unknown }).seq
    if (typeof seq !== 'number') return
    post({ seq, at: origin + now() } satisfies HeartbeatPong)
  }
}
