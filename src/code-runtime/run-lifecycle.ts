/**
 * The run lifecycle, written once for every code runtime: disposed check, request preparation,
 * "an abort beats a syntax error", stripping, run tracking, dispose, and the runtime's own failure messages.
 * @module
 */
import type { CodeRunFailureKind, CodeRunRequest, CodeRunResult } from './contract.js'
import { abortMessage, CodeRunSession, failedResult, prepareRun } from './host-session.js'
import type { PreparedRun } from './host-session.js'
import type { CodeRunLimits } from './limits.js'
import { programTooLong } from './sandbox-protocol.js'
import type { WireEndpoint } from './wire.js'

export { abortMessage }

/** The `abort` message of every run `dispose()` ends, and of every run asked for after it. */
export const DISPOSED_MESSAGE = 'the runtime was disposed'

/** The `worker-exit` message of a run whose thread died (or never started), on every threaded runtime. */
export function threadExited(reason: string): string {
  return `the thread running the program exited: ${reason}`
}

/** What stripping answers: the JavaScript, or the `exception` message. */
export type StripOutcome = { readonly ok: true; readonly code: string } | { readonly ok: false; readonly message: string }

/** One run as its driver started it. */
export interface RunHandle {
  /** The caller's result; never rejects. */
  readonly result: Promise<CodeRunResult>
  /** Ends the run with this failure wherever it is (waiting for a slot, running, parked). First outcome wins. */
  fail(kind: CodeRunFailureKind, message: string): void
  /** Called once `result` has resolved: resolves when the slot is let go and every binding call the run started has settled. */
  quiescent(): Promise<void>
}

/** What a runtime supplies to {@link RunLifecycle}. */
export interface RunLifecycleDriver {
  /**
   * Strips on the host, before a slot is taken (trusted workers, inline QuickJS: there is no thread
   * that could kill a runaway, or the code is trusted).
   */
  readonly strip?: (program: string) => StripOutcome
  /** A host-side check of the stripped program (a V8 compile), answering a syntax error's message. */
  readonly checkSyntax?: (code: string) => string | undefined
  /** Starts one prepared run; `program` is stripped when {@link RunLifecycleDriver.strip} is given. */
  start(run: PreparedRun, program: string): RunHandle
  /** `dispose()` has begun: take no more work (called before any run is aborted). */
  close?(): void
  /** Every run is quiescent: end what is left (idle threads, spares). */
  release?(): Promise<void>
}

/** The run sequence and run tracking of one runtime. */
export class RunLifecycle {
  #disposed = false
  readonly #live = new Set<RunHandle>()
  readonly #driver: RunLifecycleDriver

  constructor(driver: RunLifecycleDriver) {
    this.#driver = driver
  }

  /** Whether `dispose()` has begun. */
  get disposed(): boolean {
    return this.#disposed
  }

  /** disposed? → prepare → an abort beats a syntax error → strip (or check the length) → start → track. Never rejects. */
  run(request: CodeRunRequest): Promise<CodeRunResult> {
    if (this.#disposed) return Promise.resolve(failedResult('abort', DISPOSED_MESSAGE))
    let prepared: ReturnType<typeof prepareRun>
    try {
      prepared = prepareRun(request)
    } catch (error) {
      // A request whose properties throw when read.
      return Promise.resolve(failedResult('exception', `TypeError: the request could not be read (${error instanceof Error ? error.message : String(error)})`))
    }
    if (!prepared.ok) return Promise.resolve(failedResult('exception', prepared.message))
    const run = prepared.run
    if (run.signal?.aborted === true) return Promise.resolve(failedResult('abort', abortMessage(run.signal)))
    const program = this.#program(run)
    if (!program.ok) return Promise.resolve(failedResult('exception', program.message))
    const handle = this.#driver.start(run, program.code)
    this.#live.add(handle)
    void handle.result.then(() => handle.quiescent()).finally(() => this.#live.delete(handle))
    return handle.result
  }

  #program(run: PreparedRun): StripOutcome {
    const { strip, checkSyntax } = this.#driver
    if (strip === undefined || run.resume !== undefined) {
      const tooLong = programTooLong(run.program)
      return tooLong === undefined ? { ok: true, code: run.program } : { ok: false, message: tooLong }
    }
    const stripped = strip(run.program)
    if (!stripped.ok) return stripped
    const syntax = checkSyntax?.(stripped.code)
    return syntax === undefined ? stripped : { ok: false, message: syntax }
  }

  /** Aborts every run with {@link DISPOSED_MESSAGE}, awaits their quiescence, then lets the driver release the rest. */
  async dispose(): Promise<void> {
    this.#disposed = true
    this.#driver.close?.()
    const live = [...this.#live]
    for (const handle of live) handle.fail('abort', DISPOSED_MESSAGE)
    await Promise.all(live.map((handle) => handle.result.then(() => handle.quiescent())))
    await this.#driver.release?.()
  }
}

/** A slot one run uses: a fresh worker of a trusted runtime. */
export interface RunSlot {
  /** The host end of the private channel. */
  readonly endpoint: WireEndpoint
  /** Busy ms since any origin; absent: only the wall budget applies. */
  readonly meter?: () => number
  /** Ends the slot (at settlement). Idempotent. */
  terminate(): void
  /** Pushes buffered platform output into the session at settlement. */
  collect?(): void
  /** Calls `listener` once when the slot dies, with a reason (at once when it is dead already). */
  onDeath(listener: (reason: string) => void): void
  /** The run's session exists: feed it (stdio, a meter's heartbeat). */
  attach?(session: CodeRunSession): void
}

/**
 * Starts `run` on the slot `acquire` yields: an abort or a failure while it is acquired
 * settles the run there (a slot that arrives later is terminated); the slot's death is a
 * `worker-exit` with {@link threadExited}.
 */
export function startOnSlot(run: PreparedRun, program: string, limits: CodeRunLimits, acquire: () => Promise<RunSlot>): RunHandle {
  let session: CodeRunSession | undefined
  let early = false
  let resolve!: (result: CodeRunResult) => void
  const result = new Promise<CodeRunResult>((settle) => {
    resolve = settle
  })
  const signal = run.signal
  const fail = (kind: CodeRunFailureKind, message: string): void => {
    if (session !== undefined) return session.fail(kind, message)
    if (early) return
    early = true
    signal?.removeEventListener('abort', onAbort)
    resolve(failedResult(kind, message))
  }
  const onAbort = (): void => fail('abort', abortMessage(signal!))
  signal?.addEventListener('abort', onAbort, { once: true })
  acquire().then(
    (slot) => {
      signal?.removeEventListener('abort', onAbort)
      if (early) return slot.terminate()
      const { endpoint, meter, collect } = slot
      const opened = new CodeRunSession(run, program, limits, { endpoint, terminate: () => slot.terminate(), ...(meter ? { meter } : {}), ...(collect ? { collect: () => collect.call(slot) } : {}) })
      session = opened
      slot.attach?.(opened)
      opened.start()
      slot.onDeath((reason) => opened.fail('worker-exit', threadExited(reason)))
      void opened.result.then(resolve)
    },
    (error: unknown) => fail('worker-exit', threadExited(`it could not be started (${error instanceof Error ? error.message : String(error)})`)),
  )
  return { result, fail, quiescent: () => session?.bindingsSettled() ?? Promise.resolve() }
}
