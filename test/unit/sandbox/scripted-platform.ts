/**
 * A scripted sandbox platform for the pool of src/code-runtime/sandbox-runtime.ts: each
 * "thread" is a test double that speaks the thread protocol (boot → ready, run → the VM's
 * messages, end → ended), so admission, queueing, overload, thread death, the stop grace,
 * idle threads, wasm loading and disposal are checked exactly and in milliseconds
 * (sandbox-runtime.test.ts; run-accounts.test.ts). The real threads run there too and in
 * the contract suite.
 */
import type { SandboxPlatform, SandboxThread } from '../../../src/code-runtime/sandbox-runtime.js'

/** What a run command's `start` text carries (the fields these tests read). */
export interface StartMessage {
  readonly program: string
  readonly maxLogBytes: number
  readonly maxValueBytes: number
}

/** A scripted thread: it answers boot and end by itself (unless told not to); the test plays its VM. */
export class FakeThread implements SandboxThread {
  readonly posted: unknown[] = []
  terminated = 0
  readonly active: boolean[] = []
  signals: SharedArrayBuffer | undefined
  #listener: ((data: unknown) => void) | undefined
  #exit: ((reason: string) => void) | undefined

  constructor(readonly script: Script) {}

  postMessage(message: unknown): void {
    if (this.script.throwOnPost?.(message) === true) throw new Error('port closed')
    this.posted.push(message)
    const m = message as { type?: string; run?: number; start?: string; signals?: SharedArrayBuffer }
    if (m.type === 'boot') {
      this.signals = m.signals
      if (this.script.autoReady !== false) queueMicrotask(() => this.send({ type: 'ready' }))
    } else if (m.type === 'run') {
      // A resumed run replays its journal: its start text is empty.
      if (m.start === '') queueMicrotask(() => this.script.onResume?.(this, m.run!))
      else {
        const start = JSON.parse(m.start!) as StartMessage
        queueMicrotask(() => this.script.onRun?.(this, m.run!, start))
      }
    } else if (m.type === 'park') {
      queueMicrotask(() => this.script.onPark?.(this, m.run!))
    } else if (m.type === 'end') {
      if (this.script.autoEnd !== false) queueMicrotask(() => this.send({ type: 'ended', run: m.run }))
    }
  }

  onMessage(listener: (data: unknown) => void): void {
    this.#listener = listener
  }

  onExit(listener: (reason: string) => void): void {
    this.#exit = listener
  }

  terminate(): void {
    this.terminated++
  }

  setActive(active: boolean): void {
    this.active.push(active)
  }

  /** Delivers what the thread posts to the host. */
  send(data: unknown): void {
    this.#listener?.(data)
  }

  /** The VM's completion, as JSON text. */
  done(value: unknown): void {
    this.send(JSON.stringify({ type: 'done', value }))
  }

  exit(reason: string): void {
    this.#exit?.(reason)
  }

  get runs(): Array<{ run: number; computeMs: number; start: StartMessage }> {
    return this.posted
      .filter((m): m is { type: 'run'; run: number; computeMs: number; start: string } => (m as { type?: string }).type === 'run' && (m as { start?: string }).start !== '')
      .map((m) => ({ run: m.run, computeMs: m.computeMs, start: JSON.parse(m.start) as StartMessage }))
  }
}

/** How every thread of a scripted platform behaves. */
export interface Script {
  /** The thread has no `setActive` (a platform without process keep-alive, like the browser). */
  bare?: boolean
  autoReady?: boolean
  autoEnd?: boolean
  onRun?: (thread: FakeThread, run: number, start: StartMessage) => void
  /** A parked run bound to this thread again (a run command with an empty start and the VM to replay). */
  onResume?: (thread: FakeThread, run: number) => void
  /** The host asks the thread to park run `run`. */
  onPark?: (thread: FakeThread, run: number) => void
  throwOnPost?: (message: unknown) => boolean
}

/** The platform: every spawned thread, scripted alike. */
export function scriptedPlatform(script: Script = {}, extra: Partial<SandboxPlatform> = {}) {
  const threads: FakeThread[] = []
  const unrefs: unknown[] = []
  const p: SandboxPlatform = {
    factory: 'createSandboxRuntime',
    sandboxSource: '/* the sandbox script */',
    sharedMemory: false,
    machine: { cores: 2, memoryMb: undefined },
    spawn: () => {
      const thread = new FakeThread(script)
      if (script.bare === true) Object.defineProperty(thread, 'setActive', { value: undefined })
      threads.push(thread)
      return thread
    },
    unrefTimer: (timer) => void unrefs.push(timer),
    ...extra,
  }
  return { platform: p, threads, unrefs }
}

/** Programs the fake VM understands: `return N` answers N at once; anything else waits for the test. */
export const answering: Script = {
  onRun: (thread, _run, start) => {
    const match = /return (\d+)$/.exec(start.program)
    if (match) thread.done(Number(match[1]))
  },
}

/** Lets `n` macrotask turns pass: enough for the pool's microtask chains and posted replies to settle. */
export const tick = async (n = 3) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setTimeout(resolve, 0))
}

/** The `abort` listeners currently attached to `signal` (wraps its add/remove). */
export function liveAbortListeners(signal: AbortSignal): Set<unknown> {
  const live = new Set<unknown>()
  const add = signal.addEventListener.bind(signal)
  const remove = signal.removeEventListener.bind(signal)
  signal.addEventListener = (type: string, listener: EventListenerOrEventListenerObject, options?: boolean | AddEventListenerOptions) => {
    if (type === 'abort') live.add(listener)
    add(type, listener, options)
  }
  signal.removeEventListener = (type: string, listener: EventListenerOrEventListenerObject, options?: boolean | EventListenerOptions) => {
    if (type === 'abort') live.delete(listener)
    remove(type, listener, options)
  }
  return live
}
