/**
 * The seam between the host and a sandbox thread (a Node `worker_threads` Worker or a browser Web
 * Worker running QuickJS): what each side sends.
 * @module
 */
import type { CodeRunFailureKind } from './contract.js'
import { isParkedVm } from './journal.js'
import type { ParkedVm } from './journal.js'

/** What a thread is started with (Node `workerData`, or the first message to a browser worker). */
export interface SandboxThreadBoot {
  readonly type: 'boot'
  /** The compiled QuickJS wasm, shared by every sandbox the thread builds; absent: the thread loads its own. */
  readonly wasmModule?: WebAssembly.Module
  /** The fixed memory of each sandbox, in MiB. */
  readonly memoryMb: number
  /** The script installed in every sandbox before its program (the platform's `SANDBOX_SOURCE`): sent once, not bundled twice. */
  readonly sandboxSource: string
  /**
   * {@link STOP_SLOT}: the id of a run the host wants stopped now, read by the VM's interrupt
   * handler; {@link BUSY_SLOT} and {@link SEGMENT_SLOT}: the current run's busy time, written by
   * the thread, so the host meters compute live.
   */
  readonly signals?: SharedArrayBuffer
}

/** Index in an `Int32Array` over {@link SandboxThreadBoot.signals}: the run to stop (bytes 0–3). */
export const STOP_SLOT = 0
/** Index in a `Float64Array` over {@link SandboxThreadBoot.signals}: the current run's busy ms, as of its last VM entry (bytes 8–15). */
export const BUSY_SLOT = 1
/**
 * Index in a `Float64Array` over {@link SandboxThreadBoot.signals}: when the VM entered
 * its current computation, in epoch ms (`performance.timeOrigin + performance.now()`,
 * comparable across threads), or 0 while it waits (bytes 16–23).
 */
export const SEGMENT_SLOT = 2
/** Byte length of {@link SandboxThreadBoot.signals}. */
export const SIGNALS_BYTES = 24

/**
 * The longest VM message (JSON text, in UTF-16 code units) a thread passes to its host: the host
 * parses each one on its own thread, and a program must not be able to stall it with one huge
 * binding argument (parsing 8 MiB of JSON takes tens of ms; 60 MiB, a VM's whole memory, hundreds).
 */
export const MAX_VM_MESSAGE_CHARS = 8 * 1024 * 1024

/** The longest program (TypeScript source, in UTF-16 code units) any runtime accepts: 256 KiB. */
export const MAX_PROGRAM_CHARS = 256 * 1024

/** The model-facing refusal of a program longer than {@link MAX_PROGRAM_CHARS}; `undefined` when it is not. */
export function programTooLong(program: string): string | undefined {
  if (program.length <= MAX_PROGRAM_CHARS) return undefined
  return `SyntaxError: the program is ${program.length} characters long; at most ${MAX_PROGRAM_CHARS} are accepted: pass data through tool calls instead of embedding it, or split the work into several runs`
}

/** Epoch milliseconds with sub-millisecond precision, comparable between a host and its threads. */
export function epochNow(): number {
  return performance.timeOrigin + performance.now()
}

/**
 * Host → thread: start run `run` in a fresh sandbox, then deliver `start` (the session's first
 * message, JSON text).
 */
export interface ThreadRunCommand {
  readonly type: 'run'
  readonly run: number
  readonly computeMs: number
  readonly start: string
  /** Resume a parked VM: replay its journal (whose first input is the original `start`; `start` is then ignored) and go on live. */
  readonly replay?: ParkedVm
  /** With `replay`: the most compute the replay may take (what is left of the run's `maxReplayMs`). */
  readonly replayMs?: number
  /** `false`: the run never parks, so its VM keeps no journal. */
  readonly journal?: boolean
}

/**
 * Host → thread: park run `run` if its VM has nothing due within `afterMs` (docs/durability.md):
 * the thread answers `parked` with the VM's journal and releases it, or `park-refused`.
 */
export interface ThreadParkCommand {
  readonly type: 'park'
  readonly run: number
  readonly afterMs: number
  /** The most journal (UTF-16 code units) the host has room for: a larger one does not park. */
  readonly maxChars: number
}

/** Host → thread: run `run` is over for the host; release its sandbox and report `ended`. */
export interface ThreadEndCommand {
  readonly type: 'end'
  readonly run: number
}

/** Every control message the host sends; a bare string is a VM delivery for the current run. */
export type ThreadCommand = ThreadRunCommand | ThreadEndCommand | ThreadParkCommand

/** Thread → host: a sandbox is built and waiting for the next run (after boot, and after each run); sent after a failed build too (the run then retries and reports it). */
export interface ThreadReadyEvent {
  readonly type: 'ready'
  /** On a thread's first `ready`: how its first VM was made (`restored` from the process's image, or `booted`); the pool ignores it, tests and benches read it. */
  readonly made?: 'booted' | 'restored'
}

/** Thread → host: run `run` failed inside the VM (a budget, memory, a crash). */
export interface ThreadFailedEvent {
  readonly type: 'failed'
  readonly run: number
  readonly kind: CodeRunFailureKind
  readonly message: string
}

/** Thread → host: run `run`'s sandbox is released; the thread is idle. */
export interface ThreadEndedEvent {
  readonly type: 'ended'
  readonly run: number
}

/** Thread → host: run `run` is parked: its VM is released (an `ended` follows) and this is all it needs to resume. */
export interface ThreadParkedEvent {
  readonly type: 'parked'
  readonly run: number
  readonly parked: ParkedVm
}

/** Thread → host: run `run` could not park now (something is due); it runs on. */
export interface ThreadParkRefusedEvent {
  readonly type: 'park-refused'
  readonly run: number
}

/** Thread → host: resumed run `run` has replayed its journal, spending `busyMs` of compute, and goes on live. */
export interface ThreadReplayedEvent {
  readonly type: 'replayed'
  readonly run: number
  readonly busyMs: number
}

/** Every control message a thread sends; a bare string is a VM message of the current run. */
export type ThreadEvent = ThreadReadyEvent | ThreadFailedEvent | ThreadEndedEvent | ThreadParkedEvent | ThreadParkRefusedEvent | ThreadReplayedEvent

const failureKinds: ReadonlySet<string> = new Set<CodeRunFailureKind>(['exception', 'timeout', 'abort', 'worker-exit'])

/** Reads a thread's control message; `undefined` for anything that is not exactly one. */
export function parseThreadEvent(data: unknown): ThreadEvent | undefined {
  if (typeof data !== 'object' || data === null) return undefined
  const event = data as Partial<Record<string, unknown>>
  switch (event.type) {
    case 'ready':
      return { type: 'ready' }
    case 'ended':
      return typeof event.run === 'number' ? { type: 'ended', run: event.run } : undefined
    case 'park-refused':
      return typeof event.run === 'number' ? { type: 'park-refused', run: event.run } : undefined
    case 'replayed':
      return typeof event.run === 'number' && typeof event.busyMs === 'number' ? { type: 'replayed', run: event.run, busyMs: event.busyMs } : undefined
    case 'parked':
      return typeof event.run === 'number' && isParkedVm(event.parked) ? { type: 'parked', run: event.run, parked: event.parked } : undefined
    case 'failed':
      return typeof event.run === 'number' && typeof event.kind === 'string' && failureKinds.has(event.kind) && typeof event.message === 'string'
        ? { type: 'failed', run: event.run, kind: event.kind as CodeRunFailureKind, message: event.message }
        : undefined
    default:
      return undefined
  }
}
