/**
 * The code-runtime seam: what a sandbox must do to run Code Mode programs.
 * @module
 */
import type { CodeRunFailureKind } from '../errors.js'

export type { CodeRunFailureKind } from '../errors.js'

/**
 * One binding function as the host implements it. Arguments and resolutions cross a
 * structured-clone boundary. `signal` fires when the run settles (or the caller
 * aborts), so a binding can stop owned work instead of orphaning it.
 */
export type CodeBindingFunction = (args: unknown, options: CodeBindingCallOptions) => Promise<unknown>

/** What a runtime passes to every binding invocation. */
export interface CodeBindingCallOptions {
  /** Aborted when the run settles for any reason (its wall-clock budget included), or when the request's signal aborts. */
  readonly signal: AbortSignal
  /**
   * When the run's wall-clock budget ends, in epoch ms (`Date.now()` scale), as of this
   * call: a binding can pass the remaining time on (a remote API's timeout). It moves
   * later while the wall clock is held.
   */
  readonly deadline?: number
  /**
   * Holds the run's wall clock (for a wait that is not the program's: a person deciding
   * on an approval) until the returned release is called; releasing twice is harmless.
   * The run's own `signal` still aborts the wait. Absent where a runtime cannot hold it.
   */
  readonly holdWallClock?: () => () => void
  /**
   * The program's number for this call (1 for its first binding call, then each next
   * one), the same when a parked run is resumed in another process (docs/durability.md):
   * a stable key for the call. Absent where a runtime does not number calls.
   */
  readonly callNumber?: number
}

/** A global object of async functions the program can call (e.g. `tools`). */
export interface CodeBindingNamespace {
  /** The global name inside the program (a valid JavaScript identifier). */
  readonly global: string
  /** Function name → host implementation. Any string is a valid name (`__proto__` included). */
  readonly functions: Readonly<Record<string, CodeBindingFunction>>
  /**
   * When true, each function receives every argument the program passed, as an array
   * (`catalog.search(query, { limit })` → `[query, { limit }]`); otherwise only the
   * first (`tools.x(args)` → `args`), so a stray second argument (`ids.map(tools.x)`
   * passes an index and the whole array) never crosses. Across a JSON boundary an
   * `undefined` element arrives as `null`. A runtime that predates the flag passes the
   * first argument alone: a variadic binding accepts that too.
   */
  readonly variadic?: boolean
}

/** Everything a runtime acts on for one run; defaults live in the runtime's validated options. */
export interface CodeRunRequest {
  /** The program text: the body of an async function (top-level `await` and `return` work). */
  readonly program: string
  /** The binding namespaces exposed as globals. */
  readonly bindings: readonly CodeBindingNamespace[]
  /** Aborting it ends the run with `error.kind: 'abort'`. */
  readonly signal?: AbortSignal
  /**
   * Called with each log entry as the program writes it, for runtimes that can stream
   * (`capabilities.streamsLogs`). Entries still arrive, capped, in `CodeRunResult.logs`.
   * A throwing callback is ignored.
   */
  readonly onLog?: (entry: CodeLogEntry) => void
  /**
   * Durable runs (docs/durability.md), on runtimes that park (`createSandboxRuntime`):
   * `onPark` receives the whole state of a run each time it parks (plain data, JSON-safe:
   * store it); `resume` starts a run from such a state instead of from the start: its
   * unsettled calls are made again (they were waiting for a person), and the VM replays
   * its journal when it is next needed. Runtimes that cannot park ignore both.
   */
  readonly durable?: {
    readonly onPark?: (state: ParkedRunState) => void
    readonly resume?: ParkedRunState
  }
  /**
   * Who the run waits for a slot with (1–256 characters): on the sandbox runtime each lane has its
   * own first-in-first-out queue and the lanes take turns, so a short run in one lane is not stuck
   * behind thousands queued in another. Absent: one shared lane. `run_code` sets it from the
   * caller's HTTP principal, else its agent (docs/runtimes.md, "Lanes"); one lane has at most
   * `laneQueueShare` waiting. Runtimes without a queue of their own ignore it.
   */
  readonly lane?: string
}

/** What a journal records. Arrays grow as the run goes; the whole object is the snapshot. */
export interface RunJournal {
  /** Every delivery to the VM in order: a host message (its JSON text) or a timer firing (the timer's id). The first is the run's `start`. */
  readonly inputs: (string | number)[]
  /** The answers of the clock and randomness services, in the order the VM read them. */
  readonly reads: (string | number)[]
  /** Which service each of {@link RunJournal.reads} answered: one character each (`n`ow, `d`ate, `r`and, random `b`ytes). */
  ops: string
  /** Each binding call the VM posted, as `name#hash` of its message: what a replay must post again, in order. */
  readonly calls: string[]
}

/** A parked VM: its journal, its clock, and the timers it had armed. */
export interface ParkedVm {
  readonly journal: RunJournal
  /** The VM's `performance.now()` when it parked: its clock resumes from here (a parked run's clock is stopped). */
  readonly clockMs: number
  /** Timers armed when it parked: `[id, ms left]`. */
  readonly timers: readonly (readonly [number, number])[]
}

/** Everything a parked run is: its VM's journal, what the host kept of it, and the calls it waits on. JSON-safe. */
export interface ParkedRunState {
  readonly version: 1
  readonly vm: ParkedVm
  readonly logs: readonly CodeLogEntry[]
  readonly logBytes: number
  readonly logTruncated: boolean
  /** Compute and wall-clock ms charged so far. */
  readonly busyMs: number
  readonly wallMs: number
  /** The highest call number the program used. */
  readonly lastCallId: number
  /** The calls waiting for a person when it parked: made again on resume. */
  readonly calls: readonly { readonly id: number; readonly global: string; readonly name: string; readonly args: unknown }[]
  /** Compute ms its resumes have spent replaying its journal so far (`maxReplayMs` counts it). Absent: none. */
  readonly replayMs?: number
}

/** Where a log line came from. */
export type CodeLogSource = 'console' | 'stdout' | 'stderr'

/** The console method that wrote a `console` line. */
export type CodeLogLevel = 'log' | 'info' | 'warn' | 'error' | 'debug'

/** One captured line of program output. */
export interface CodeLogEntry {
  readonly source: CodeLogSource
  readonly level?: CodeLogLevel
  readonly text: string
}

/** Why a run failed. `message` is human-readable and names the budget that fired for timeouts. */
export interface CodeRunFailure {
  readonly kind: CodeRunFailureKind
  readonly message: string
}

/** How long a run took, as the runtime measured it. */
export interface CodeRunStats {
  /** Wall-clock milliseconds from `run()` to settlement. */
  readonly wallMs: number
  /** Measured busy milliseconds charged to the compute budget. */
  readonly computeMs: number
}

/**
 * The outcome of one run. `run()` never rejects: every failure is `error`.
 * `value` is the program's completion value (absent when it returned `undefined`
 * or failed); it has crossed a structured-clone boundary.
 */
export interface CodeRunResult {
  readonly value?: unknown
  readonly logs: readonly CodeLogEntry[]
  readonly error?: CodeRunFailure
  readonly stats?: CodeRunStats
}

/** What a runtime can and cannot do; the contract suite skips gaps by name, never silently. */
export interface CodeRuntimeCapabilities {
  /** `onLog` is called as lines are written (not only at the end). */
  readonly streamsLogs: boolean
  /** A heap or memory cap ends a memory bomb with `worker-exit` (or `exception`). */
  readonly memoryLimit: boolean
  /** Program output written through the platform's stdout/stderr streams is captured with that source. */
  readonly capturesStdio: boolean
  /**
   * The request's `signal` ends a program even while it computes synchronously (a hot
   * loop). `false` where the program runs on the host's own thread (QuickJS wasm): the
   * abort is then seen when the program next yields, or the compute budget ends it.
   * Absent means `true`.
   */
  readonly abortsBusyPrograms?: boolean
  /**
   * The program's only authority is its bindings and the sandbox's fixed global
   * environment (no filesystem, network, processes, storage or other contexts): the
   * runtime is a security boundary. `false` for the V8 worker runtimes, which are for
   * trusted code. Absent means `false`.
   */
  readonly confinesAuthority?: boolean
}

/** How busy a code runtime with admission control is (`createSandboxRuntime`). */
export interface CodeRuntimeLoad {
  /** Programs running now. */
  readonly running: number
  /** Programs admitted and waiting for a place. */
  readonly queued: number
  /** At most this many run at once. */
  readonly maxConcurrentRuns: number
  /** At most this many wait; a run beyond that is refused at once as `overloaded`. */
  readonly maxQueuedRuns: number
}

/** A sandbox for Code Mode programs. */
export interface CodeRuntime {
  /** The language programs must be written in; selects the SDK renderer (`typescript`, `python`, …). */
  readonly language: string
  /** How runs are contained (`worker-thread`, `web-worker`, `quickjs-wasm`, …); informational. */
  readonly isolation: string
  /** Declared capability gaps. */
  readonly capabilities: CodeRuntimeCapabilities
  /** Runs one program to settlement. Never rejects. */
  run(request: CodeRunRequest): Promise<CodeRunResult>
  /** Aborts every in-flight run and resolves once nothing (worker, timer, pending binding) is left. */
  dispose(): Promise<void>
  /** Optional: the runtime's load, for runtimes that admit a bounded number of runs (the HTTP API refuses early with it). */
  load?(): CodeRuntimeLoad
}
