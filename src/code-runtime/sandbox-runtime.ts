/**
 * The sandbox runtime, written once for every platform that has threads: QuickJS (the boundary)
 * running in a pool of pre-spawned threads (the host never stalls), with admission control,
 * budgets, the run state machine and disposal.
 * @module
 */
import type { CodeRunFailureKind, CodeRunRequest, CodeRunResult, CodeRuntime, CodeRuntimeCapabilities, CodeRuntimeLoad } from './contract.js'
import { ToolError } from '../errors.js'
import { CodeRunSession, DEFAULT_PARK_AFTER_MS, failedResult } from './host-session.js'
import type { PreparedRun } from './host-session.js'
import { JsonWireEndpoint } from './json-endpoint.js'
import { checkOptionsObject, DEFAULT_MAX_PENDING_ARG_BYTES, integerOption, MAX_TIMER_MS } from './limits.js'
import { CODE_RUNTIME_DEFAULTS, CODE_RUNTIME_LIMIT_KEYS, readRuntimeLimits } from './runtime-limits.js'
import type { CodeRuntimeLimitOptions } from './runtime-limits.js'
import type { CodeRunLimits } from './limits.js'
import { BUSY_SLOT, epochNow, parseThreadEvent, SEGMENT_SLOT, SIGNALS_BYTES, STOP_SLOT } from './sandbox-protocol.js'
import type { SandboxThreadBoot, ThreadCommand } from './sandbox-protocol.js'
import type { ParkedRunState, ParkedVm } from './contract.js'
import { abortMessage, RunLifecycle, threadExited } from './run-lifecycle.js'
import type { RunHandle } from './run-lifecycle.js'
import { journalChars, REPLAY_MARGIN, replayBudgetMessage } from './journal.js'
import { LaneQueue } from './run-lanes.js'
import { shareLeavingAQuarter } from '../util/shares.js'

/** How long a thread may take to release a stopped VM before it is terminated and replaced. */
export const STOP_GRACE_MS = 100
const IDLE_THREAD_MS = 30_000
const BOOT_TIMEOUT_MS = 30_000
/** Per-thread memory beyond the sandbox's own wasm memory (a thread's engine and heap), for the default concurrency. */
const THREAD_OVERHEAD_MB = 24

/** Budgets of the sandbox runtime: the shared code-runtime defaults ({@link CODE_RUNTIME_DEFAULTS}). */
export const SANDBOX_DEFAULT_LIMITS: CodeRunLimits = Object.freeze({
  computeMs: CODE_RUNTIME_DEFAULTS.computeMs,
  maxWallMs: CODE_RUNTIME_DEFAULTS.maxWallMs,
  maxLogBytes: CODE_RUNTIME_DEFAULTS.maxLogBytes,
  maxValueBytes: CODE_RUNTIME_DEFAULTS.maxValueBytes,
  maxPendingArgBytes: CODE_RUNTIME_DEFAULTS.maxPendingArgBytes,
})

/** The options `createSandboxRuntime` takes on every platform. */
export interface SandboxRuntimeOptions extends CodeRuntimeLimitOptions {
  /**
   * Idle threads kept booted, each with its next sandbox built, ahead of the next runs
   * (started at creation, and topped up as runs take them, within `maxConcurrentRuns`).
   * 0: start threads on demand. Default 1.
   */
  readonly prespawn?: number
  /** Programs running at once (one thread each). Default: derived from the machine's cores and memory. */
  readonly maxConcurrentRuns?: number
  /**
   * Programs waiting for a thread, in every lane together (`CodeRunRequest.lane`: each lane waits
   * first in, first out, and the lanes take turns); beyond that a run is refused at once as
   * `overloaded`. Default 8 × `maxConcurrentRuns`.
   */
  readonly maxQueuedRuns?: number
  /**
   * The compiled QuickJS wasm (or a loader), shared by every thread. Default: the
   * platform loads `@jitl/quickjs-wasmfile-release-sync`'s own wasm once.
   */
  readonly wasmModule?: WebAssembly.Module | (() => Promise<WebAssembly.Module>)
  /**
   * Park a run whose every unsettled call has waited this long for a person (an
   * approval): its VM's journal is kept, its VM, thread and admission slot are released,
   * its wall clock stays stopped; the decision resumes it on any thread by replaying the
   * journal (docs/durability.md). 1 to 2³¹−1 ms. Default 1 000.
   */
  readonly parkAfterMs?: number
  /** Whether runs park at all. Default `true`. */
  readonly parking?: boolean
  /**
   * Host memory all parked runs may keep together, in bytes: each run's journal (2 a UTF-16 unit),
   * its waiting calls' arguments (weighed as for `maxPendingArgBytes`) and its log lines. Default
   * 134 217 728 (128 MiB).
   */
  readonly maxParkedBytes?: number
  /**
   * Compute ms a run's resumes may spend replaying its journal, in total over the run (each resume
   * replays the whole journal in a fresh VM: the host's CPU, not the program's `computeMs`).
   * Default: `computeMs` (a run then costs the host at most about twice its compute budget, however
   * many times a person answers it).
   */
  readonly maxReplayMs?: number
}

/** The default of {@link SandboxRuntimeOptions.maxParkedBytes}. */
export const DEFAULT_MAX_PARKED_BYTES = 128 * 1024 * 1024

/** What the sandbox runtime reports about its load: the admission figures, plus its threads. */
export interface SandboxRuntimeLoad extends CodeRuntimeLoad {
  /** Threads started (running, idle or booting). */
  readonly threads: number
  /** Runs parked: waiting for a person, holding no thread and no admission slot. */
  readonly parked: number
}

/** The sandbox runtime: a {@link CodeRuntime} with its pool's controls. */
export interface SandboxRuntime extends CodeRuntime {
  readonly language: 'typescript' | 'python'
  readonly isolation: 'quickjs-sandbox' | 'micropython-sandbox'
  /** The validated limits every run uses. */
  readonly limits: CodeRunLimits
  /** Resolves once the pre-spawned threads have booted and built their first sandbox. */
  warm(): Promise<void>
  /** Runs, queue and threads right now (admission decisions use the same figures). */
  load(): SandboxRuntimeLoad
}

/** One thread as the pool drives it. A platform's `spawn` returns it already starting. */
export interface SandboxThread {
  /** Sends a control command or a VM delivery (a bare string). May throw when the thread is gone. */
  postMessage(message: SandboxThreadBoot | ThreadCommand | string): void
  /** Receives everything the thread posts. */
  onMessage(listener: (data: unknown) => void): void
  /** Called once when the thread dies (exit, error, failed load), with a reason. */
  onExit(listener: (reason: string) => void): void
  /** Ends the thread; idempotent. Resolves when it is gone. */
  terminate(): Promise<void> | void
  /** Node: whether this thread keeps the process alive (only while it runs a program). */
  setActive?(active: boolean): void
}

/** How a platform starts sandbox threads: the only part of the sandbox runtime that differs per platform. */
export interface SandboxPlatform {
  /** The factory name used in option errors (`createSandboxRuntime`). */
  readonly factory: string
  /** Starts one thread; the pool then posts its {@link SandboxThreadBoot} as the first message. */
  spawn(): SandboxThread
  /** Loads the QuickJS wasm once for all threads; absent: each thread loads its own. */
  loadWasm?(): Promise<WebAssembly.Module>
  /** The script installed in every sandbox (`engine/quickjs/_sandbox-source.ts`), handed to each thread at boot. */
  readonly sandboxSource: string
  /** Whether `SharedArrayBuffer` can be shared with threads here (false in pages that are not cross-origin isolated). */
  readonly sharedMemory: boolean
  /** Logical cores and total memory in MiB (`undefined` when the platform cannot tell). */
  readonly machine: { readonly cores: number; readonly memoryMb: number | undefined }
  /** The language its threads run: `typescript` (QuickJS, the default) or `python` (MicroPython). */
  readonly language?: 'typescript' | 'python'
  /** Platform option keys beyond {@link SandboxRuntimeOptions}, validated by the platform. */
  readonly extraOptions?: readonly string[]
  /** Keeps a housekeeping timer from holding the process open (Node's `unref`). */
  unrefTimer?(timer: ReturnType<typeof setTimeout>): void
}

interface ResolvedOptions {
  readonly limits: CodeRunLimits
  readonly memoryMb: number
  readonly prespawn: number
  readonly maxConcurrentRuns: number
  readonly maxQueuedRuns: number
  readonly wasmModule: SandboxRuntimeOptions['wasmModule']
  /** `undefined`: runs never park. */
  readonly parkAfterMs: number | undefined
  readonly maxParkedBytes: number
  readonly maxReplayMs: number
}

const OPTION_KEYS = [...CODE_RUNTIME_LIMIT_KEYS, 'prespawn', 'maxConcurrentRuns', 'maxQueuedRuns', 'wasmModule', 'parkAfterMs', 'parking', 'maxParkedBytes', 'maxReplayMs']

/**
 * The default concurrency: four runs a core (runs mostly await tools), within a quarter of the
 * machine's memory.
 */
function defaultConcurrency(machine: SandboxPlatform['machine'], memoryMb: number, pendingArgBytes: number): number {
  const byCores = Math.max(1, Math.floor(machine.cores)) * 4
  const perRunMb = memoryMb + THREAD_OVERHEAD_MB + Math.ceil(pendingArgBytes / (1024 * 1024))
  const byMemory = machine.memoryMb === undefined ? byCores : Math.floor(machine.memoryMb / 4 / perRunMb)
  return Math.max(1, Math.min(byCores, byMemory, 256))
}

function resolveOptions(options: unknown, platform: SandboxPlatform): ResolvedOptions {
  const factory = platform.factory
  const record = checkOptionsObject(options, [...OPTION_KEYS, ...(platform.extraOptions ?? [])], factory)
  const { limits, memoryMb } = readRuntimeLimits(record, factory)
  const maxConcurrentRuns = integerOption(record, 'maxConcurrentRuns', defaultConcurrency(platform.machine, memoryMb, limits.maxPendingArgBytes ?? DEFAULT_MAX_PENDING_ARG_BYTES), 1, 4096, factory)
  const maxQueuedRuns = integerOption(record, 'maxQueuedRuns', 8 * maxConcurrentRuns, 0, 1_000_000, factory)
  const prespawn = Math.min(integerOption(record, 'prespawn', 1, 0, 256, factory), maxConcurrentRuns)
  const wasmModule = record.wasmModule
  if (wasmModule !== undefined && typeof wasmModule !== 'function' && !(wasmModule instanceof WebAssembly.Module)) {
    throw new ToolError('INVALID_OPTIONS', `${factory}: options.wasmModule must be a WebAssembly.Module or a function returning a promise of one`)
  }
  const parkAfterMs = integerOption(record, 'parkAfterMs', DEFAULT_PARK_AFTER_MS, 1, MAX_TIMER_MS, factory)
  if (record.parking !== undefined && typeof record.parking !== 'boolean') throw new ToolError('INVALID_OPTIONS', `${factory}: options.parking must be a boolean`)
  return {
    limits,
    memoryMb,
    prespawn,
    maxConcurrentRuns,
    maxQueuedRuns,
    wasmModule: wasmModule as ResolvedOptions['wasmModule'],
    parkAfterMs: record.parking === false ? undefined : parkAfterMs,
    maxParkedBytes: integerOption(record, 'maxParkedBytes', DEFAULT_MAX_PARKED_BYTES, 1024 * 1024, 1 << 30, factory),
    maxReplayMs: integerOption(record, 'maxReplayMs', limits.computeMs, 1, MAX_TIMER_MS, factory),
  }
}

/** A run admitted but not yet bound to a thread. */
interface PendingRun {
  readonly prepared: PreparedRun
  /** The model's TypeScript as written: its thread strips it. */
  readonly program: string
  readonly resolve: (result: CodeRunResult) => void
}

/** One thread of the pool: idle ⇄ running → stopping → idle, or dead at any point. */
class PooledThread {
  state: 'idle' | 'running' | 'stopping' | 'dead' = 'idle'
  /** A sandbox is built and waiting in the thread: a run here pays only for its program. */
  primed = false
  /** Runs this thread has taken: the busiest idle thread is the warmest (its engine's JIT has seen the most). */
  runsTaken = 0
  /** The run the thread serves while running or stopping. */
  current: ActiveRun | undefined
  /** Resolves once the thread has booted (or died). */
  readonly booted: Promise<void>
  /** Whether {@link booted} has resolved. */
  isBooted = false
  /** Its boot message is out: only then can a `ready` be an answer to it. */
  #bootSent = false
  readonly #pool: SandboxPool
  readonly #thread: SandboxThread
  readonly #stop: Int32Array | undefined
  readonly #busy: Float64Array | undefined
  #markBooted!: () => void
  #graceTimer: ReturnType<typeof setTimeout> | undefined
  #idleTimer: ReturnType<typeof setTimeout> | undefined
  #bootTimer: ReturnType<typeof setTimeout> | undefined

  constructor(pool: SandboxPool, wasm: Promise<WebAssembly.Module | undefined>) {
    this.#pool = pool
    const shared = pool.platform.sharedMemory ? new SharedArrayBuffer(SIGNALS_BYTES) : undefined
    this.#stop = shared === undefined ? undefined : new Int32Array(shared)
    this.#busy = shared === undefined ? undefined : new Float64Array(shared)
    this.booted = new Promise((resolve) => {
      this.#markBooted = () => {
        this.isBooted = true
        resolve()
      }
    })
    this.#thread = pool.platform.spawn()
    this.#bootTimer = setTimeout(() => this.die(`it did not boot within ${BOOT_TIMEOUT_MS} ms`), BOOT_TIMEOUT_MS)
    pool.platform.unrefTimer?.(this.#bootTimer)
    this.#thread.onMessage((data) => this.#receive(data))
    this.#thread.onExit((reason) => this.die(reason))
    void wasm.then((wasmModule) => {
      // A thread that died while the wasm loaded gets nothing more.
      if (this.state === 'dead') return
      const boot: SandboxThreadBoot = {
        type: 'boot',
        memoryMb: pool.options.memoryMb,
        sandboxSource: pool.platform.sandboxSource,
        ...(wasmModule === undefined ? {} : { wasmModule }),
        ...(shared === undefined ? {} : { signals: shared }),
      }
      this.#bootSent = true
      this.#send(boot)
    })
  }

  /**
   * Binds `run` to this idle thread and starts it once the thread has booted: a run's budgets count
   * from there, never the thread's start-up.
   */
  start(run: ActiveRun): void {
    this.state = 'running'
    this.primed = false
    // The figures still hold the previous run's busy time until the thread starts this one:
    // a run's meter must start from zero, or the previous run's compute is taken off its own.
    if (this.#busy !== undefined) {
      this.#busy[BUSY_SLOT] = 0
      this.#busy[SEGMENT_SLOT] = 0
    }
    this.runsTaken++
    this.current = run
    clearTimeout(this.#idleTimer)
    this.#idleTimer = undefined
    this.#thread.setActive?.(true)
    void this.booted.then(() => run.attach(this))
  }

  /** The host is done with `run`: stop its VM now, and replace the thread if it does not let go in time. */
  stop(run: ActiveRun): void {
    // A running thread serves exactly the run that stops it (it holds that run until then).
    if (this.state !== 'running') return
    this.state = 'stopping'
    if (this.#stop !== undefined) Atomics.store(this.#stop, STOP_SLOT, run.id)
    this.post({ type: 'end', run: run.id })
    // Stryker disable next-line StringLiteral: the run has settled before its thread is stopped
    this.#graceTimer = setTimeout(() => this.die(`it did not release run ${run.id} within ${STOP_GRACE_MS} ms`), STOP_GRACE_MS)
  }

  /** Posts a command or a VM delivery. */
  post(message: ThreadCommand | string): void {
    this.#send(message)
  }

  /**
   * Busy ms of the current run, live, where shared memory carries it: what the VM has
   * used so far plus the computation it is in now (even one stuck in a long built-in).
   */
  busyMs(): number {
    const busy = this.#busy
    if (busy === undefined) return 0
    const since = busy[SEGMENT_SLOT]!
    return busy[BUSY_SLOT]! + (since > 0 ? Math.max(0, epochNow() - since) : 0)
  }

  /** Ends an idle thread after a while without runs, unless the pool needs it by then. */
  idleFor(ms: number, end: () => void): void {
    this.#idleTimer = setTimeout(end, ms)
    this.#pool.platform.unrefTimer?.(this.#idleTimer)
  }

  terminate(): Promise<void> {
    return Promise.resolve()
      .then(() => this.#thread.terminate())
      .catch(() => undefined)
  }

  /** The thread is gone, or must go: fail its run, terminate it, let the pool replace it. */
  die(reason: string): void {
    if (this.state === 'dead') return
    // A stopping thread's run no longer needs it (settled, or parked with its journal on the host): a slow release fails no run.
    const run = this.state === 'stopping' ? undefined : this.current
    this.state = 'dead'
    this.current = undefined
    for (const timer of [this.#graceTimer, this.#idleTimer, this.#bootTimer]) clearTimeout(timer)
    this.#markBooted()
    run?.fail('worker-exit', threadExited(reason))
    this.#pool.retire(this)
  }

  #send(message: SandboxThreadBoot | ThreadCommand | string): void {
    try {
      this.#thread.postMessage(message)
    } catch (error) {
      this.die(`it cannot be reached (${error instanceof Error ? error.message : String(error)})`)
    }
  }

  // A dead thread's late messages change nothing: it has no run, is not idle and is not stopping.
  #receive(data: unknown): void {
    if (typeof data === 'string') {
      // VM text for the run this thread serves.
      this.current?.fromVm(data)
      return
    }
    const event = parseThreadEvent(data)
    if (event === undefined) return
    switch (event.type) {
      case 'ready':
        // A `ready` before the boot message went out answers nothing (a confused thread).
        if (!this.#bootSent) return
        clearTimeout(this.#bootTimer)
        this.#markBooted()
        if (this.state === 'idle') this.primed = true
        return
      case 'failed':
        if (this.current?.id === event.run) this.current.fail(event.kind, event.message)
        return
      case 'parked':
        if (this.state === 'running' && this.current?.id === event.run) this.current.parkedOn(this, event.parked)
        return
      case 'park-refused':
        if (this.state === 'running' && this.current?.id === event.run) this.current.parkRefused()
        return
      case 'replayed':
        if (this.state === 'running' && this.current?.id === event.run) this.current.replayed(event.busyMs)
        return
      case 'ended':
        // Stryker disable next-line OptionalChaining: a stopping thread always has its run
        if (this.state !== 'stopping' || this.current?.id !== event.run) return
        clearTimeout(this.#graceTimer)
        this.#graceTimer = undefined
        this.state = 'idle'
        this.current = undefined
        this.#thread.setActive?.(false)
        this.#pool.released(this)
    }
  }
}

/** One run: the host session over the VM of the thread it is bound to. */
class ActiveRun {
  session: CodeRunSession | undefined
  readonly settled: Promise<void>
  #endpoint: JsonWireEndpoint | undefined
  #unattachedSettled = false
  #markSettled!: () => void
  readonly #onEarlyAbort: () => void
  /** The thread the run is bound to now (none while parked or waiting to resume). */
  #thread: PooledThread | undefined
  /** While parked or resuming: the VM to replay, and the VM messages that wait for it. */
  #parked: ParkedVm | undefined
  #waiting: string[] = []
  #resumeAsked = false
  /** A park was asked, not yet answered: VM messages wait in `#waiting` (the thread would take them after the park, and drop them). */
  #parkInFlight = false
  #busyBefore = 0
  #replayBusy = 0
  #replaying = false
  /** Compute the run's resumes have spent replaying so far, and what was left of `maxReplayMs` when the current replay began. */
  #replaySpent = 0
  #replayRoom = 0
  /** Bytes of the parked runs' room held for a park this run asked for and the thread has not answered. */
  #parkReserve = 0

  constructor(
    readonly id: number,
    readonly pending: PendingRun,
    readonly options: ResolvedOptions,
    readonly pool: SandboxPool,
  ) {
    this.settled = new Promise((resolve) => {
      this.#markSettled = resolve
    })
    // Until the session owns the signal (a thread still booting), an abort settles the run here.
    const signal = pending.prepared.signal
    this.#onEarlyAbort = () => this.fail('abort', abortMessage(signal!))
    // Stryker disable next-line ObjectLiteral,BooleanLiteral: a signal aborts once
    signal?.addEventListener('abort', this.#onEarlyAbort, { once: true })
  }

  /** Starts the session on `thread` (or, for a parked run, resumes it there). */
  attach(thread: PooledThread): void {
    if (this.session !== undefined) {
      this.#resumeOn(thread)
      return
    }
    this.pending.prepared.signal?.removeEventListener('abort', this.#onEarlyAbort)
    if (this.#unattachedSettled) {
      thread.stop(this)
      return
    }
    this.#thread = thread
    const journal = this.options.parkAfterMs !== undefined
    this.#open((start) => thread.post({ type: 'run', run: this.id, computeMs: this.options.limits.computeMs, start, ...(journal ? {} : { journal }) })).start()
  }

  /**
   * Starts a run from the parked state of a run that parked earlier, maybe in another
   * process: it holds no thread until its VM is needed (the answer to a call it waits on).
   */
  openParked(state: ParkedRunState): void {
    this.pending.prepared.signal?.removeEventListener('abort', this.#onEarlyAbort)
    this.#parked = state.vm
    this.#busyBefore = state.busyMs
    this.#replaySpent = state.replayMs ?? 0
    const session = this.#open(() => undefined)
    // A state whose replay no longer fits the budget ends before its waiting calls are made again.
    const left = this.options.maxReplayMs - this.#replaySpent
    if (state.busyMs > left) {
      session.fail('timeout', replayBudgetMessage(left, state.busyMs))
      return
    }
    session.startParked(state)
    // Counted once its waiting calls hold their arguments again (a state refused at the start holds nothing).
    if (!session.settled) this.pool.addParked(this, state.vm, session.heldBytes())
  }

  /** The session over a JSON endpoint whose first message (the program) goes to `sendStart`, later ones to the VM. */
  #open(sendStart: (json: string) => void): CodeRunSession {
    const { limits, memoryMb, parkAfterMs } = this.options
    let first = this.pending.prepared.resume === undefined
    const endpoint = new JsonWireEndpoint(
      (json) => {
        // The session's first message is the program: it travels inside the run command.
        if (first) {
          first = false
          sendStart(json)
        } else this.#toVm(json)
      },
      // Stryker disable next-line OptionalChaining: the endpoint reports failures only once the session below exists
      (kind, message) => this.session?.fail(kind, message),
      memoryMb,
    )
    this.#endpoint = endpoint
    const session = new CodeRunSession(this.pending.prepared, this.pending.program, limits, {
      endpoint,
      meter: () => this.#meter(),
      terminate: () => this.#terminate(),
      ...(parkAfterMs === undefined
        ? {}
        : { park: () => this.#askPark(parkAfterMs), parkAfterMs, parkNow: () => this.pool.queue.size > 0 }),
    })
    this.session = session
    void session.result.then((result) => {
      this.pending.resolve(result)
      void session.bindingsSettled().then(this.#markSettled)
    })
    return session
  }

  #askPark(afterMs: number): void {
    const session = this.session!
    const held = session.heldBytes()
    const room = this.pool.parkingRoomBytes() - held
    // A run whose resume would replay more than its replay budget has left does not park:
    // it keeps its thread (as a run that does not fit the bytes), and a decision reaches a
    // live VM, so no approved call's result is ever refused for want of a replay.
    if (room < 0 || REPLAY_MARGIN * this.#meter() > this.options.maxReplayMs - this.#replaySpent) {
      session.parkRefused()
      return
    }
    // Reserved until the thread answers: runs asking at once cannot each be told the same room.
    this.#releaseReserve()
    this.#parkReserve = held
    this.pool.reserveParking(held)
    this.#parkInFlight = true
    this.#thread?.post({ type: 'park', run: this.id, afterMs, maxChars: Math.floor(room / 2) })
  }

  #releaseReserve(): void {
    this.pool.reserveParking(-this.#parkReserve)
    this.#parkReserve = 0
  }

  /** The thread could not park the VM now: release the room it was promised, and let the session try later. */
  parkRefused(): void {
    this.#releaseReserve()
    this.#parkInFlight = false
    for (const json of this.#waiting.splice(0)) this.#thread?.post(json)
    this.session?.parkRefused()
  }

  #meter(): number {
    const thread = this.#thread
    if (thread === undefined) return this.#busyBefore
    if (this.#replaying) return this.#busyBefore + Math.max(0, thread.busyMs() - this.#replayRoom)
    return this.#busyBefore + Math.max(0, thread.busyMs() - this.#replayBusy)
  }

  /** A message for the VM: to its thread, or kept until a parked run is bound to one again. */
  #toVm(json: string): void {
    if (this.#parked === undefined && !this.#parkInFlight) {
      this.#thread?.post(json)
      return
    }
    this.#waiting.push(json)
    if (this.#parked !== undefined && !this.#resumeAsked) {
      // The park was allowed only if this resume fitted the replay budget; the VM still checks the replay against it.
      this.#resumeAsked = true
      this.pool.resume(this)
    }
  }

  /** The thread parked the VM: keep its journal, let the thread go. */
  parkedOn(thread: PooledThread, parked: ParkedVm): void {
    const session = this.session
    if (session === undefined || session.settled || this.#thread !== thread) return
    this.#releaseReserve()
    this.#parkInFlight = false
    this.#busyBefore = this.#meter()
    this.#parked = parked
    this.#thread = undefined
    this.#replayBusy = 0
    session.parked(true)
    this.pool.addParked(this, parked, session.heldBytes())
    thread.stop(this)
    if (this.#waiting.length > 0) {
      // A call settled while the thread parked: the state lags the run, so it is not handed on; the VM resumes at once.
      this.#resumeAsked = true
      this.pool.resume(this)
      return
    }
    const onPark = this.pending.prepared.onPark
    if (onPark !== undefined) {
      try {
        onPark(session.snapshot(parked, this.#replaySpent))
      } catch {
        // Keeping the state is the caller's business; the run stays parked here either way.
      }
    }
  }

  /** Binds the parked run to `thread`: the VM replays its journal, then takes the messages that waited. */
  #resumeOn(thread: PooledThread): void {
    const parked = this.#parked
    const session = this.session!
    this.#resumeAsked = false
    this.pool.removeParked(this)
    if (parked === undefined || session.settled) {
      thread.stop(this)
      return
    }
    this.#parked = undefined
    this.#thread = thread
    this.#replaying = true
    this.#replayRoom = Math.max(0, this.options.maxReplayMs - this.#replaySpent)
    // The VM checks the replay against its room, and its whole compute against the room plus the program's budget.
    const computeMs = Math.min(MAX_TIMER_MS, this.options.limits.computeMs + Math.ceil(this.#replayRoom) + 50)
    thread.post({ type: 'run', run: this.id, computeMs, start: '', replay: parked, replayMs: this.#replayRoom })
    for (const json of this.#waiting.splice(0)) thread.post(json)
    session.parked(false)
  }

  /** The resumed VM has replayed its journal: meter it live from here. */
  replayed(busyMs: number): void {
    this.#replayBusy = busyMs
    this.#replaySpent += busyMs
    this.#replaying = false
  }

  #terminate(): void {
    this.#releaseReserve()
    this.pool.removeParked(this)
    this.pool.forget(this)
    this.#thread?.stop(this)
  }

  /** Ends the run with a failure, bound to its thread or not yet. */
  fail(kind: CodeRunFailureKind, message: string): void {
    if (this.session !== undefined) this.session.fail(kind, message)
    else {
      this.#unattachedSettled = true
      this.pending.prepared.signal?.removeEventListener('abort', this.#onEarlyAbort)
      this.pending.resolve(failedResult(kind, message))
      this.#markSettled()
    }
  }

  /** One VM message (JSON text) from the thread. */
  fromVm(json: string): void {
    this.#endpoint?.receive(json)
  }
}

class SandboxPool {
  readonly threads = new Set<PooledThread>()
  /** New runs waiting for a thread: a queue per `CodeRunRequest.lane`, lanes served in turn. */
  readonly queue = new LaneQueue<PendingRun>()
  /** Runs started and not yet let go (running, parked or waiting to resume), by the request they serve. */
  readonly active = new Map<PendingRun, ActiveRun>()
  /** Parked runs (no thread, no slot) and the bytes each keeps on the host. */
  readonly parkedRuns = new Map<ActiveRun, number>()
  /** What the parked runs keep, within `maxParkedBytes`: their journals (2 bytes a UTF-16 unit), waiting calls' arguments and logs. */
  #parkedBytes = 0
  #reservedBytes = 0
  /**
   * Parked runs whose VM is needed again (a decision came), waiting for a thread: lanes served in
   * turn as the new runs' queue, so one principal's thousand decisions do not hold another's
   * resume, and a run that settles meanwhile leaves in O(1).
   */
  readonly #resumeQueue = new LaneQueue<ActiveRun>()
  /** The last run {@link SandboxPool.#serve} took was a resume: the queue's turn next. */
  #servedResume = false
  disposed = false
  #nextRun = 1
  #wasm: Promise<WebAssembly.Module | undefined> | undefined

  constructor(
    readonly platform: SandboxPlatform,
    readonly options: ResolvedOptions,
  ) {
    this.#topUp()
  }

  load(): SandboxRuntimeLoad {
    let running = 0
    for (const thread of this.threads) if (thread.state === 'running' || thread.state === 'stopping') running++
    return {
      running,
      queued: this.queue.size + this.#resumeQueue.size,
      threads: this.threads.size,
      parked: this.parkedRuns.size,
      maxConcurrentRuns: this.options.maxConcurrentRuns,
      maxQueuedRuns: this.options.maxQueuedRuns,
    }
  }

  resume(run: ActiveRun): void {
    if (this.disposed) return
    const lane = run.pending.prepared.lane ?? ''
    const idle = this.#idleThread()
    const thread = idle ?? (this.threads.size < this.options.maxConcurrentRuns ? this.#spawn() : undefined)
    if (thread === undefined) {
      this.#resumeQueue.push(lane, run)
      return
    }
    this.#resumeQueue.started(lane)
    this.#bind(thread, run)
  }

  /** A run that parked before (maybe in another process) comes back parked: it takes no thread until its VM is needed. */
  openParked(pending: PendingRun, state: ParkedRunState): void {
    const run = new ActiveRun(this.#nextRun++, pending, this.options, this)
    this.active.set(pending, run)
    // Stryker disable next-line ArrowFunction: memory only, as in #start
    void run.settled.finally(() => this.active.delete(pending))
    run.openParked(state)
  }

  /** The bytes parked runs (and parks asked for) have left of `maxParkedBytes`. */
  parkingRoomBytes(): number {
    return Math.max(0, this.options.maxParkedBytes - this.#parkedBytes - this.#reservedBytes)
  }

  /** Holds (or, negative, releases) room for a park asked for and not yet answered. */
  reserveParking(bytes: number): void {
    this.#reservedBytes += bytes
  }

  addParked(run: ActiveRun, parked: ParkedVm, heldBytes: number): void {
    if (this.parkedRuns.has(run)) return
    const bytes = 2 * journalChars(parked.journal) + heldBytes
    this.parkedRuns.set(run, bytes)
    this.#parkedBytes += bytes
  }

  removeParked(run: ActiveRun): void {
    const bytes = this.parkedRuns.get(run)
    if (bytes === undefined) return
    this.parkedRuns.delete(run)
    this.#parkedBytes -= bytes
  }

  /** A run settled: it no longer waits to resume. */
  forget(run: ActiveRun): void {
    this.#resumeQueue.remove(run)
  }

  #bind(thread: PooledThread, run: ActiveRun): void {
    thread.start(run)
    this.#topUpAfter(thread)
  }

  /**
   * Tops up once `thread` (just given a run) has booted: a spare spawned while the run's own
   * thread still boots takes CPU from that boot (a fresh runtime's first run measured ~2×).
   */
  #topUpAfter(thread: PooledThread): void {
    if (thread.isBooted) this.#topUp()
    else void thread.booted.then(() => this.#topUp())
  }

  /**
   * Serves a free thread, taking turns while both wait: a run waiting to resume, then a new run
   * from the queue.
   */
  #serve(thread: PooledThread): boolean {
    const resumeFirst = this.queue.size === 0 || !this.#servedResume
    const resumed = resumeFirst ? this.#resumeQueue.shift() : undefined
    if (resumed !== undefined) {
      this.#servedResume = true
      this.#bind(thread, resumed)
      return true
    }
    this.#servedResume = false
    const next = this.queue.shift()
    if (next === undefined) return false
    this.#start(thread, next)
    return true
  }

  /**
   * Admits a run: bound to an idle thread (starting one while the pool may grow), else queued while
   * there is room.
   */
  admit(pending: PendingRun): boolean | string {
    // A thread that is releasing its last run is free within a millisecond: wait for it
    // rather than start another (sequential runs would otherwise grow the pool to its cap),
    // or rather than take an idle thread still booting (a boot takes tens of ms).
    let releasing = 0
    for (const thread of this.threads) if (thread.state === 'stopping') releasing++
    const idle = this.#idleThread()
    if (idle !== undefined && (idle.isBooted || this.queue.size >= releasing)) {
      this.#start(idle, pending)
      return true
    }
    if (this.queue.size >= releasing) {
      if (this.threads.size < this.options.maxConcurrentRuns) {
        this.#start(this.#spawn(), pending)
        return true
      }
      if (this.queue.size >= releasing + this.options.maxQueuedRuns) return false
      const lane = pending.prepared.lane
      const share = laneQueueShare(this.options.maxQueuedRuns)
      if (lane !== undefined && this.queue.sizeOf(lane) >= share) {
        return `the sandbox queue keeps a quarter of its ${this.options.maxQueuedRuns} places for other callers, and this caller already has ${this.queue.sizeOf(lane)} runs waiting; retry later`
      }
    }
    this.#enqueue(pending)
    return true
  }

  #enqueue(pending: PendingRun): void {
    const signal = pending.prepared.signal
    const onAbort = () => {
      // Stryker disable next-line ConditionalExpression: unreachable: a run leaves the queue with this listener removed
      if (this.queue.remove(pending)) pending.resolve(failedResult('abort', abortMessage(signal!)))
    }
    // Stryker disable next-line ObjectLiteral,BooleanLiteral: a signal aborts once
    signal?.addEventListener('abort', onAbort, { once: true })
    this.queue.push(pending.prepared.lane ?? '', pending, signal === undefined ? undefined : () => signal.removeEventListener('abort', onAbort))
    // A run now waits for a slot: runs that wait only for people give theirs up at once (only
    // runs on a thread hold one: not the parked, however many).
    if (this.queue.size === 1) for (const thread of this.threads) thread.current?.session?.slotWanted()
  }

  /** A thread finished a run: serve the queue, or idle (extra threads end after a while). */
  released(thread: PooledThread): void {
    // Stryker disable next-line ConditionalExpression,BlockStatement: dispose ends every thread it holds once its runs settle
    if (this.disposed) {
      // Stryker disable next-line StringLiteral: as above
      thread.state = 'dead'
      this.threads.delete(thread)
      void thread.terminate()
      return
    }
    if (this.#serve(thread)) return
    if (this.#idleCount() > this.options.prespawn) {
      thread.idleFor(IDLE_THREAD_MS, () => {
        if (thread.state !== 'idle' || this.#idleCount() <= this.options.prespawn) return
        thread.state = 'dead'
        this.threads.delete(thread)
        void thread.terminate()
      })
    }
  }

  /** A thread died: forget it, then keep the queue served and the pre-spawned floor up. */
  retire(thread: PooledThread): void {
    this.threads.delete(thread)
    void thread.terminate()
    // Stryker disable next-line ConditionalExpression: unreachable after dispose
    if (this.disposed) return
    while ((this.queue.size > 0 || this.#resumeQueue.size > 0) && this.threads.size < this.options.maxConcurrentRuns) this.#serve(this.#spawn())
    this.#topUp()
  }

  /**
   * Ends the run `pending` started with a failure, wherever it is: queued (it leaves the queue),
   * waiting for its thread, running or parked.
   */
  fail(pending: PendingRun, kind: CodeRunFailureKind, message: string): void {
    if (this.queue.remove(pending)) {
      pending.resolve(failedResult(kind, message))
      return
    }
    this.runOf(pending)?.fail(kind, message)
  }

  /** The run bound to `pending` (none while it is queued, or once it has settled and let go). O(1): 2,000 parked runs aborted cost 2,000 look-ups, not 2,000². */
  runOf(pending: PendingRun): ActiveRun | undefined {
    return this.active.get(pending)
  }

  /** After every run is quiescent (the lifecycle aborted them all): resolves once no thread is left. */
  async release(): Promise<void> {
    const threads = [...this.threads]
    this.threads.clear()
    for (const thread of threads) thread.state = 'dead'
    await Promise.all(threads.map((thread) => thread.terminate()))
  }

  /** Resolves once every thread started so far has booted. */
  async warm(): Promise<void> {
    await Promise.all([...this.threads].map((thread) => thread.booted))
  }

  /**
   * An idle thread: one with its next sandbox built first, and among those the one that has taken
   * the most runs.
   */
  #idleThread(): PooledThread | undefined {
    let best: PooledThread | undefined
    const rank = (thread: PooledThread) => (thread.primed ? 1e9 : 0) + thread.runsTaken
    for (const thread of this.threads) {
      if (thread.state !== 'idle') continue
      if (best === undefined || rank(thread) > rank(best)) best = thread
    }
    return best
  }

  #start(thread: PooledThread, pending: PendingRun): void {
    this.queue.started(pending.prepared.lane ?? '')
    const run = new ActiveRun(this.#nextRun++, pending, this.options, this)
    this.active.set(pending, run)
    thread.start(run)
    // Stryker disable next-line ArrowFunction: memory only: dispose finds a finished run already settled
    void run.settled.finally(() => this.active.delete(pending))
    this.#topUpAfter(thread)
  }

  #idleCount(): number {
    let idle = 0
    for (const thread of this.threads) if (thread.state === 'idle') idle++
    return idle
  }

  /**
   * Keeps `prespawn` idle threads (booting or built) ahead of the next runs, within the concurrency cap.
   * A thread releasing its last run counts: it is idle within a millisecond, or dies and is replaced.
   */
  #topUp(): void {
    // Stryker disable next-line ConditionalExpression: unreachable after dispose (no run is admitted, retire returns first)
    if (this.disposed) return
    let idle = this.#idleCount()
    for (const thread of this.threads) if (thread.state === 'stopping') idle++
    while (idle < this.options.prespawn && this.threads.size < this.options.maxConcurrentRuns) {
      this.#spawn()
      idle++
    }
  }

  #spawn(): PooledThread {
    const thread = new PooledThread(this, this.#wasmModule())
    this.threads.add(thread)
    return thread
  }

  #wasmModule(): Promise<WebAssembly.Module | undefined> {
    if (this.#wasm !== undefined) return this.#wasm
    const source = this.options.wasmModule
    // Every thread spawned while the load is pending shares this promise, so it must not
    // reject: a failed load boots them without the shared wasm (each loads its own).
    const attempt = (async () => {
      if (source instanceof WebAssembly.Module) return source
      if (typeof source === 'function') return source()
      // Stryker disable next-line OptionalChaining: without `?.` a platform lacking loadWasm throws here
      return this.platform.loadWasm?.()
    })().catch(() => {
      this.#wasm = undefined
      return undefined
    })
    this.#wasm = attempt
    return attempt
  }
}

/** Runs one named lane may have waiting: `maxQueuedRuns` less a quarter. */
export const laneQueueShare: (maxQueuedRuns: number) => number = shareLeavingAQuarter

/**
 * The sandbox pool as a driver of the one run lifecycle: the thread strips (no stripper on the
 * host: only the length is checked there).
 */
function startPooled(pool: SandboxPool, run: PreparedRun, program: string): RunHandle {
  let resolve!: (result: CodeRunResult) => void
  const result = new Promise<CodeRunResult>((settle) => {
    resolve = settle
  })
  const pending: PendingRun = { prepared: run, program, resolve }
  if (run.resume !== undefined) pool.openParked(pending, run.resume)
  else {
    const admitted = pool.admit(pending)
    if (typeof admitted === 'string') resolve(failedResult('overloaded', admitted))
    else if (!admitted) {
      const { running, queued } = pool.load()
      resolve(failedResult('overloaded', `the sandbox is at capacity (${running} runs running, ${queued} waiting); retry later`))
    }
  }
  return {
    result,
    fail: (kind, message) => pool.fail(pending, kind, message),
    quiescent: () => pool.runOf(pending)?.settled ?? Promise.resolve(),
  }
}

/** Creates the sandbox runtime on `platform`. */
export function createSandboxRuntimeOn(platform: SandboxPlatform, options?: SandboxRuntimeOptions): SandboxRuntime {
  const resolved = resolveOptions(options, platform)
  const pool = new SandboxPool(platform, resolved)
  const lifecycle = new RunLifecycle({
    start: (run, program) => startPooled(pool, run, program),
    close: () => {
      pool.disposed = true
    },
    release: () => pool.release(),
  })
  const capabilities: CodeRuntimeCapabilities = Object.freeze({
    streamsLogs: true,
    memoryLimit: true,
    capturesStdio: false,
    abortsBusyPrograms: true,
    confinesAuthority: true,
  })
  return Object.freeze({
    language: platform.language ?? 'typescript',
    isolation: platform.language === 'python' ? 'micropython-sandbox' : 'quickjs-sandbox',
    capabilities,
    limits: resolved.limits,
    run: (request: CodeRunRequest) => lifecycle.run(request),
    warm: () => pool.warm(),
    load: () => pool.load(),
    dispose: () => lifecycle.dispose(),
  })
}
