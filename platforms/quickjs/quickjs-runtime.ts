/**
 * `createQuickJsRuntime(options)`: a {@link CodeRuntime} on QuickJS compiled to WebAssembly.
 * @module
 */
import type { QuickJSSyncVariant } from 'quickjs-emscripten-core'
import defaultVariant from '@jitl/quickjs-wasmfile-release-sync'
import type { CodeRunFailureKind, CodeRunRequest, CodeRuntime, CodeRuntimeCapabilities } from '../../src/code-runtime/contract.js'
import { ToolError } from '../../src/errors.js'
import { CodeRunSession, DEFAULT_PARK_AFTER_MS } from '../../src/code-runtime/host-session.js'
import type { PreparedRun } from '../../src/code-runtime/host-session.js'
import { JsonWireEndpoint } from '../../src/code-runtime/json-endpoint.js'
import { checkOptionsObject, integerOption, MAX_TIMER_MS } from '../../src/code-runtime/limits.js'
import { CODE_RUNTIME_LIMIT_KEYS, readRuntimeLimits } from '../../src/code-runtime/runtime-limits.js'
import type { CodeRuntimeLimitOptions } from '../../src/code-runtime/runtime-limits.js'
import type { ParkedVm } from '../../src/code-runtime/contract.js'
import { journalChars, REPLAY_MARGIN, replayBudgetMessage } from '../../src/code-runtime/journal.js'
import type { CodeRunLimits } from '../../src/code-runtime/limits.js'
import { RunLifecycle } from '../../src/code-runtime/run-lifecycle.js'
import { stripTypeScript } from '../../src/code-runtime/strip.js'
import { checkWasmModuleSource, INLINE_MAX_COMPILE_STACK_BYTES, INLINE_MAX_STACK_BYTES, isSyncVariant, QuickJsEngine } from '../../engine/quickjs/engine.js'
import type { QuickJsSandbox, QuickJsWasmModuleSource } from '../../engine/quickjs/engine.js'
import { SANDBOX_SOURCE } from '../../engine/quickjs/_sandbox-source.js'
import { VmRun } from '../../engine/quickjs/vm-run.js'

export type { QuickJsWasmModuleSource } from '../../engine/quickjs/engine.js'

/** Options of {@link createQuickJsRuntime}. Every field is validated at construction. */
export interface QuickJsRuntimeOptions extends CodeRuntimeLimitOptions {
  /**
   * How the QuickJS wasm is obtained. Absent: the variant loads its own `.wasm` on each
   * run (Node reads the file, browsers fetch it next to the module). Given: every run
   * instantiates this precompiled module, which skips loading and compiling (the fast
   * path everywhere) and is REQUIRED in Cloudflare workerd, which forbids compiling
   * wasm from bytes: import the file as a module and pass it.
   *
   * @example
   * ```ts
   * // workerd / wrangler (a CompiledWasm module rule for the import):
   * import wasmModule from '@jitl/quickjs-wasmfile-release-sync/wasm'
   * const runtime = createQuickJsRuntime({ wasmModule })
   * ```
   */
  readonly wasmModule?: QuickJsWasmModuleSource
  /**
   * The quickjs-emscripten SYNC variant to use; its wasm must match `wasmModule` when
   * both are given. Default `@jitl/quickjs-wasmfile-release-sync` (0.32.0).
   */
  readonly variant?: QuickJSSyncVariant
  /**
   * After a run, build the NEXT run's sandbox in the background (a timer task, when the
   * host is idle): a fresh wasm instance and memory, its runtime, context and the
   * installed sandbox bootstrap, with no program code run in it. A run then pays only
   * for its program. One sandbox at most waits; it serves exactly one run and is freed
   * by `dispose()`. A run that finds none ready builds its own, as without this.
   * Default true. Cloudflare workerd drops a request's timers once its response is
   * sent: there, call {@link QuickJsCodeRuntime.prewarm} under `ctx.waitUntil`.
   */
  readonly prewarm?: boolean
  /**
   * Park a run whose every unsettled call has waited this long for a person: its VM is
   * released (its journal kept) and replayed in a fresh VM when the decision comes; with
   * `request.durable.onPark` the state can be stored and resumed elsewhere
   * (docs/durability.md). 1 to 2³¹−1 ms. Default 1 000.
   */
  readonly parkAfterMs?: number
  /** Whether runs park at all. Default `true`. */
  readonly parking?: boolean
  /**
   * Host memory all parked runs may keep together, in bytes: journals (2 a UTF-16 unit),
   * waiting calls' arguments and logs; a run that does not fit keeps its VM (and tries
   * again later). 1 MiB to 2³⁰. Default 128 MiB.
   */
  readonly maxParkedBytes?: number
  /**
   * Compute ms a run's resumes may spend replaying its journal, in total (each resume
   * replays the whole journal in a fresh VM); a run whose resume would need more does not
   * park (it keeps its VM); a stored state that would, or a replay that takes more, ends
   * the run as a `timeout` naming `maxReplayMs`. 1 to 2³¹−1. Default: `computeMs`
   * (docs/durability.md).
   */
  readonly maxReplayMs?: number
}

/** The QuickJS {@link CodeRuntime}, with a way to build the next run's sandbox on request. */
export interface QuickJsCodeRuntime extends CodeRuntime {
  /**
   * Builds the next run's sandbox now, unless one is ready or being built (or the
   * runtime is disposed); resolves when done, never rejects (a failed build is left for
   * the next run to retry and report). For hosts whose idle time timers cannot reach,
   * such as a Worker after its response: `ctx.waitUntil(runtime.warm())`. Works
   * whatever `options.prewarm` says. The same word as every other code runtime's
   * `warm()`: get ready for the next run, ahead of it.
   */
  warm(): Promise<void>
  /** @deprecated Renamed {@link QuickJsCodeRuntime.warm} (one word for one meaning across the runtimes). */
  prewarm(): Promise<void>
}

const FACTORY = 'createQuickJsRuntime'
const OPTION_KEYS: readonly string[] = [...CODE_RUNTIME_LIMIT_KEYS, 'wasmModule', 'variant', 'prewarm', 'parkAfterMs', 'parking', 'maxParkedBytes', 'maxReplayMs']

interface ResolvedOptions {
  readonly limits: CodeRunLimits
  readonly memoryMb: number
  readonly wasmModule: QuickJsWasmModuleSource | undefined
  readonly variant: QuickJSSyncVariant
  readonly prewarm: boolean
  /** `undefined`: runs never park. */
  readonly parkAfterMs: number | undefined
  readonly maxParkedBytes: number
  readonly maxReplayMs: number
}

/** The room parked runs share in one runtime, in bytes (`maxParkedBytes`). */
interface ParkingAccount {
  room(): number
  add(bytes: number): void
  /** A run parked: build the next sandbox now, so its resume (or the next run) finds one ready. */
  parked(): void
}

function readOptions(options: unknown): ResolvedOptions {
  const record = checkOptionsObject(options, OPTION_KEYS, FACTORY)
  const { limits, memoryMb } = readRuntimeLimits(record, FACTORY)
  const wasmModule = checkWasmModuleSource(record.wasmModule, FACTORY)
  const variant = record.variant ?? defaultVariant
  if (!isSyncVariant(variant)) throw new ToolError('INVALID_OPTIONS', `${FACTORY}: options.variant must be a quickjs-emscripten sync variant`)
  const prewarm = record.prewarm ?? true
  if (typeof prewarm !== 'boolean') throw new ToolError('INVALID_OPTIONS', `${FACTORY}: options.prewarm must be a boolean`)
  const parkAfterMs = integerOption(record, 'parkAfterMs', DEFAULT_PARK_AFTER_MS, 1, MAX_TIMER_MS, FACTORY)
  if (record.parking !== undefined && typeof record.parking !== 'boolean') throw new ToolError('INVALID_OPTIONS', `${FACTORY}: options.parking must be a boolean`)
  const maxParkedBytes = integerOption(record, 'maxParkedBytes', 128 * 1024 * 1024, 1024 * 1024, 1 << 30, FACTORY)
  const maxReplayMs = integerOption(record, 'maxReplayMs', limits.computeMs, 1, MAX_TIMER_MS, FACTORY)
  return { limits, memoryMb, wasmModule, variant, prewarm, parkAfterMs: record.parking === false ? undefined : parkAfterMs, maxParkedBytes, maxReplayMs }
}

/**
 * One inline run: the host session (every account) over a JSON endpoint, and the VM run that drives
 * the sandbox on this same thread.
 */
class InlineRun {
  readonly session: CodeRunSession
  readonly quiescent: Promise<void>
  #vm: VmRun | undefined
  #parked: ParkedVm | undefined
  #endpoint!: JsonWireEndpoint
  #busyBefore = 0
  #replayBusy = 0
  #replaying = false
  /** Compute the run's resumes have spent replaying so far (`maxReplayMs`). */
  #replaySpent = 0
  readonly #options: ResolvedOptions
  readonly #acquire: () => Promise<QuickJsSandbox>
  readonly #prepared: PreparedRun
  readonly #account: ParkingAccount
  #heldBytes = 0
  #settleVm!: () => void
  readonly #vmReleased = new Promise<void>((resolve) => {
    this.#settleVm = resolve
  })

  constructor(prepared: PreparedRun, program: string, options: ResolvedOptions, acquire: () => Promise<QuickJsSandbox>, account: ParkingAccount) {
    this.#options = options
    this.#account = account
    this.#acquire = acquire
    this.#prepared = prepared
    const fail = (kind: CodeRunFailureKind, message: string) => this.session.fail(kind, message)
    const endpoint = new JsonWireEndpoint((json) => this.#toVm(json), fail, options.memoryMb)
    this.#endpoint = endpoint
    const { parkAfterMs } = options
    this.session = new CodeRunSession(prepared, program, options.limits, {
      endpoint,
      meter: () => this.#meter(),
      terminate: () => {
        this.#release()
        this.#vm?.stop()
        if (this.#vm === undefined) this.#settleVm()
      },
      ...(parkAfterMs === undefined ? {} : { park: () => this.#park(parkAfterMs), parkAfterMs }),
    })
    const resume = prepared.resume
    if (resume === undefined) {
      this.#vm = this.#newVm(undefined, options.limits.computeMs)
      this.session.start()
      if (this.session.settled) this.#vm.stop()
    } else {
      this.#parked = resume.vm
      this.#busyBefore = resume.busyMs
      this.#replaySpent = resume.replayMs ?? 0
      // A state whose replay no longer fits the budget ends before its waiting calls are made again.
      const left = options.maxReplayMs - this.#replaySpent
      if (resume.busyMs > left) this.session.fail('timeout', replayBudgetMessage(left, resume.busyMs))
      else this.session.startParked(resume)
      // Counted once its waiting calls hold their arguments again (a state refused at the start holds nothing).
      if (this.session.settled) this.#settleVm()
      else this.#hold(resume.vm)
    }
    this.quiescent = Promise.all([this.#vmReleased, this.session.result.then(() => this.session.bindingsSettled())]).then(() => undefined)
  }

  /** Whether a VM was ever acquired for the run (a runtime pre-builds the next one only when building works). */
  get acquiredSandbox(): boolean {
    return this.#vm?.acquiredSandbox ?? false
  }

  /** Resolves once the run's current VM (if any) has let go of its sandbox. */
  get vmFinished(): Promise<void> {
    return this.#vm === undefined ? Promise.resolve() : this.#vm.finished
  }

  #newVm(replay: ParkedVm | undefined, computeMs: number, replayMs?: number): VmRun {
    const vm: VmRun = new VmRun(
      this.#acquire,
      { computeMs, maxWallMs: this.#options.limits.maxWallMs, memoryMb: this.#options.memoryMb, ...(replayMs === undefined ? {} : { replayMs }) },
      {
        output: (json) => this.#endpoint.receive(json),
        fail: (kind, message) => this.session.fail(kind, message),
        stopRequested: () => this.session.settled,
        wallElapsedMs: () => this.session.wallElapsedMs(),
        replayed: (busyMs) => {
          this.#replayBusy = busyMs
          this.#replaySpent += busyMs
          this.#replaying = false
        },
      },
      replay === undefined ? { journal: this.#options.parkAfterMs !== undefined } : { replay },
    )
    void vm.finished.then(() => {
      if (this.#vm === vm && this.session.settled) this.#settleVm()
    })
    return vm
  }

  /** Counts what the parked run keeps: its journal, its waiting calls' arguments, its logs. */
  #hold(parked: ParkedVm): void {
    this.#heldBytes = 2 * journalChars(parked.journal) + this.session.heldBytes()
    this.#account.add(this.#heldBytes)
  }

  #release(): void {
    this.#account.add(-this.#heldBytes)
    this.#heldBytes = 0
  }

  #meter(): number {
    const vm = this.#vm
    if (vm === undefined || this.#replaying) return this.#busyBefore
    return this.#busyBefore + Math.max(0, vm.computeMs() - this.#replayBusy)
  }

  #park(afterMs: number): void {
    const vm = this.#vm
    // What the run keeps besides its journal comes first.
    const room = this.#account.room() - this.session.heldBytes()
    const replayable = REPLAY_MARGIN * this.#meter() <= this.#options.maxReplayMs - this.#replaySpent
    const parked = room < 0 || !replayable ? undefined : vm?.park(afterMs, Math.floor(room / 2))
    if (vm === undefined || parked === undefined) {
      this.session.parkRefused()
      return
    }
    this.#busyBefore = this.#meter()
    this.#parked = parked
    this.#hold(parked)
    this.#vm = undefined
    this.#replayBusy = 0
    this.session.parked(true)
    this.#account.parked()
    const onPark = this.#prepared.onPark
    if (onPark !== undefined) {
      try {
        onPark(this.session.snapshot(parked, this.#replaySpent))
      } catch {
        // Keeping the state is the caller's business; the run stays parked here either way.
      }
    }
  }

  /** A message for the VM: delivered, or kept while the run is parked and a fresh VM started to replay it. */
  #toVm(json: string): void {
    const parked = this.#parked
    if (parked === undefined) {
      this.#vm?.input(json)
      return
    }
    this.#parked = undefined
    this.#release()
    // The park was allowed only if this resume fitted the replay budget; the VM still checks the replay against it.
    const room = Math.max(0, this.#options.maxReplayMs - this.#replaySpent)
    this.#replaying = true
    const computeMs = Math.min(MAX_TIMER_MS, this.#options.limits.computeMs + Math.ceil(room) + 50)
    this.#vm = this.#newVm(parked, computeMs, room)
    this.#vm.input(json)
    this.session.parked(false)
  }
}

/**
 * Creates a {@link CodeRuntime} on QuickJS wasm (`isolation: 'quickjs-wasm'`,
 * `language: 'typescript'`). Validates `options` at once (`ToolError` code
 * `INVALID_OPTIONS`).
 *
 * Failure kinds: `exception` (the program threw or could not be parsed: the message
 * names the line), `timeout` (names `computeMs` or `maxWallMs`), `abort` (the request's
 * signal, or `dispose()`), `worker-exit` (the run's memory was exhausted or the VM crashed).
 *
 * @example
 * ```ts
 * const runtime = createQuickJsRuntime({ computeMs: 5_000, memoryMb: 32 })
 * const result = await runtime.run({
 *   program: 'const r = await tools.add({ a: 1, b: 2 }); return r',
 *   bindings: [{ global: 'tools', functions: { add: async (args) => (args as { a: number; b: number }).a + 2 } }],
 * })
 * ```
 */
export function createQuickJsRuntime(options: QuickJsRuntimeOptions = {}): QuickJsCodeRuntime {
  const resolved = readOptions(options)
  // The VM runs on this thread's own stack: its recursion limit leaves that stack room (INLINE_MAX_STACK_BYTES).
  const engine = new QuickJsEngine({
    sandboxSource: SANDBOX_SOURCE,
    variant: resolved.variant,
    maxStackBytes: INLINE_MAX_STACK_BYTES,
    maxCompileStackBytes: INLINE_MAX_COMPILE_STACK_BYTES,
    ...(resolved.wasmModule === undefined ? {} : { wasmModule: resolved.wasmModule }),
  })
  let disposed = false
  let parkedBytes = 0
  const parking: ParkingAccount = {
    room: () => Math.max(0, resolved.maxParkedBytes - parkedBytes),
    add: (bytes) => {
      parkedBytes += bytes
    },
    parked: () => schedulePrewarm(),
  }
  const build = (): Promise<QuickJsSandbox> => engine.build(resolved.memoryMb)

  // At most one sandbox built ahead of its run, kept as a plain value (`ready`) and taken
  // synchronously.
  let ready: QuickJsSandbox | undefined
  let building: Promise<void> | undefined
  let buildingJoinable = false
  let prewarmTimer: ReturnType<typeof setTimeout> | undefined
  const take = (): QuickJsSandbox | undefined => {
    const sandbox = ready
    ready = undefined
    return sandbox
  }
  const acquire = (): Promise<QuickJsSandbox> => {
    if (prewarmTimer !== undefined) {
      // Not started yet: building it now, for this run, costs the same.
      clearTimeout(prewarmTimer)
      prewarmTimer = undefined
    }
    const sandbox = take()
    if (sandbox !== undefined) return Promise.resolve(sandbox)
    // Part of it is done already. Two runs may join one build: the second builds its own.
    if (building !== undefined && buildingJoinable) return building.then(() => take() ?? build())
    return build()
  }
  const prewarm = (): Promise<void> => {
    if (prewarmTimer !== undefined) {
      clearTimeout(prewarmTimer)
      prewarmTimer = undefined
    }
    if (disposed || ready !== undefined) return Promise.resolve()
    if (building === undefined) buildingJoinable = engine.loaded
    building ??= build()
      .then(
        (sandbox) => {
          if (disposed || ready !== undefined) sandbox.dispose()
          else ready = sandbox
        },
        () => {
          // The next run builds its own and reports the failure.
        },
      )
      .finally(() => {
        building = undefined
      })
    return building
  }
  const schedulePrewarm = (): void => {
    if (!resolved.prewarm || disposed || ready !== undefined || building !== undefined || prewarmTimer !== undefined) return
    // A timer task, so that the finished run's caller goes first.
    prewarmTimer = setTimeout(() => void prewarm(), 0)
  }

  // The one run lifecycle.
  const lifecycle = new RunLifecycle({
    strip: stripTypeScript,
    start: (prepared, program) => {
      const run = new InlineRun(prepared, program, resolved, acquire, parking)
      const result = run.session.result.then(async (settled) => {
        await run.vmFinished
        if (run.acquiredSandbox) schedulePrewarm()
        return settled
      })
      return { result, fail: (kind, message) => run.session.fail(kind, message), quiescent: () => run.quiescent }
    },
    close: () => {
      disposed = true
      clearTimeout(prewarmTimer)
      prewarmTimer = undefined
    },
    release: async () => {
      await building
      ready?.dispose()
      ready = undefined
    },
  })

  // The VM computes on the host's thread: an abort cannot be delivered until it yields.
  const capabilities: CodeRuntimeCapabilities = Object.freeze({
    streamsLogs: true,
    memoryLimit: true,
    capturesStdio: false,
    abortsBusyPrograms: false,
    confinesAuthority: true,
  })

  return Object.freeze({
    language: 'typescript',
    isolation: 'quickjs-wasm',
    capabilities,
    run: (request: CodeRunRequest) => lifecycle.run(request),
    warm: prewarm,
    prewarm,
    dispose: () => lifecycle.dispose(),
  })
}
