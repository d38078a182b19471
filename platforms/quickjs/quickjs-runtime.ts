/**
 * `createQuickJsRuntime(options)`: a {@link CodeRuntime} on QuickJS compiled to
 * WebAssembly. It needs no `eval`, no `new Function`, no `Worker` and no compilation
 * of wasm bytes when given a precompiled module, so it runs in Node, browsers and
 * Cloudflare workerd alike. No `node:*` import here, on purpose.
 *
 * Every run gets a fresh wasm instance with its own fixed `WebAssembly.Memory`
 * (QuickJS's own memory limit does not cap strings or typed arrays; a memory that
 * cannot grow does), a 256 KiB stack limit, and an interrupt handler enforcing the
 * compute and wall budgets. The program runs on the host's thread: while it computes,
 * the host's event loop waits (at most `computeMs` per run).
 *
 * Speed without sharing: the variant's factory, FFI and wasm module are resolved once
 * per runtime, and each sandbox (instance, memory, runtime, context, installed
 * bootstrap) can be built before its run, in idle time (`prewarm`), so that a run pays
 * for its program only. A sandbox serves exactly one run and is then dropped whole.
 *
 * The VM side is the same bootstrap every message-passing runtime uses
 * (`src/code-runtime/bootstrap.ts`), adapted to two host functions; the host side is
 * the shared {@link CodeRunSession}, so caps, messages and failure kinds match the
 * Node and browser runtimes.
 *
 * @module
 */
import { QuickJSWASMModule } from 'quickjs-emscripten-core'
import type { EmscriptenModuleLoader, EmscriptenModuleLoaderOptions, QuickJSContext, QuickJSEmscriptenModule, QuickJSFFI, QuickJSHandle, QuickJSRuntime, QuickJSSyncVariant } from 'quickjs-emscripten-core'
import defaultVariant from '@jitl/quickjs-wasmfile-release-sync'
import type { CodeRunRequest, CodeRunResult, CodeRuntime, CodeRuntimeCapabilities } from '../../src/code-runtime/contract.js'
import { ToolError, toErrorData } from '../../src/errors.js'
import { CodeRunSession, failedResult, prepareRun } from '../../src/code-runtime/host-session.js'
import { checkOptionsObject, CODE_RUN_LIMIT_KEYS, integerOption, readCodeRunLimits } from '../../src/code-runtime/limits.js'
import type { CodeRunLimits } from '../../src/code-runtime/limits.js'
import { stripTypeScript } from '../../src/code-runtime/strip.js'
import { PROGRAM_SOURCE_URL } from '../../src/code-runtime/wire.js'
import type { WireEndpoint, WireListener } from '../../src/code-runtime/wire.js'
import { SANDBOX_SOURCE } from './_sandbox-source.js'

/** A precompiled QuickJS wasm module, or a function that loads one (called once, memoized on success). */
export type QuickJsWasmModuleSource = WebAssembly.Module | (() => Promise<WebAssembly.Module>)

/** Options of {@link createQuickJsRuntime}. Every field is validated at construction. */
export interface QuickJsRuntimeOptions {
  /** Busy milliseconds a run may spend executing inside the VM. Awaiting a host binding costs nothing. Default 60 000. */
  readonly computeMs?: number
  /** Wall-clock ceiling of a run in ms, never paused. Default 600 000. */
  readonly maxWallMs?: number
  /** UTF-8 bytes of console output kept per run; the last kept line ends with an in-band truncation mark. Default 65 536. */
  readonly maxLogBytes?: number
  /** Serialized bytes of the returned value kept; a larger value becomes a truncated text rendering. Default 32 768. */
  readonly maxValueBytes?: number
  /**
   * The fixed size, in MiB, of each run's wasm memory (16 to 2048; QuickJS needs 16 to
   * start). Everything the program allocates, strings and typed arrays included, lives
   * in it; exhausting it ends the run with `worker-exit`. Default 64.
   */
  readonly memoryMb?: number
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
}

/** The QuickJS {@link CodeRuntime}, with a way to build the next run's sandbox on request. */
export interface QuickJsCodeRuntime extends CodeRuntime {
  /**
   * Builds the next run's sandbox now, unless one is ready or being built (or the
   * runtime is disposed); resolves when done, never rejects (a failed build is left for
   * the next run to retry and report). For hosts whose idle time timers cannot reach,
   * such as a Worker after its response: `ctx.waitUntil(runtime.prewarm())`. Works
   * whatever `options.prewarm` says.
   */
  prewarm(): Promise<void>
}

/** The largest memory a wasm32 QuickJS build addresses here (32 768 pages). */
const MAX_MEMORY_MB = 2048
/** QuickJS's wasm declares 256 initial pages: the memory cannot start smaller. */
const INITIAL_PAGES = 256
const PAGES_PER_MB = 16
/** Larger stack limits can crash the wasm on clean-up (NOTES-env). */
const MAX_STACK_BYTES = 256 * 1024
/** Headroom left between QuickJS's allocator limit and the wasm memory maximum, for the runtime's own reporting. */
const MEMORY_HEADROOM_BYTES = 4 * 1024 * 1024
/**
 * The interrupt handler runs about every 10 000 interpreter steps. Where the clock does
 * not advance during synchronous code (workerd in production), each call is charged at
 * least this many ms of compute, an upper bound on the call rate of fast hardware (this
 * machine measured ~11 calls/ms in a tight loop), so a hot loop still hits its budget.
 */
const MIN_MS_PER_INTERRUPT = 1 / 64
/** Host timers one run may hold at once. */
const MAX_TIMERS = 10_000

/** Emscripten prints aborts to the console by default; the run reports them as its outcome instead. */
const silentPrint = () => undefined

const FACTORY = 'createQuickJsRuntime'
const OPTION_KEYS: readonly string[] = [...CODE_RUN_LIMIT_KEYS, 'memoryMb', 'wasmModule', 'variant', 'prewarm']

interface ResolvedOptions {
  readonly limits: CodeRunLimits
  readonly memoryMb: number
  readonly wasmModule: QuickJsWasmModuleSource | undefined
  readonly variant: QuickJSSyncVariant
  readonly prewarm: boolean
}

function readOptions(options: unknown): ResolvedOptions {
  const record = checkOptionsObject(options, OPTION_KEYS, FACTORY)
  const limits = readCodeRunLimits(record, FACTORY)
  const memoryMb = integerOption(record, 'memoryMb', 64, INITIAL_PAGES / PAGES_PER_MB, MAX_MEMORY_MB, FACTORY)
  const wasmModule = record.wasmModule
  if (wasmModule !== undefined && typeof wasmModule !== 'function' && !(wasmModule instanceof WebAssembly.Module)) {
    throw new ToolError('INVALID_OPTIONS', `${FACTORY}: options.wasmModule must be a WebAssembly.Module or a function returning a promise of one`)
  }
  const variant = record.variant ?? defaultVariant
  const v = variant as Partial<QuickJSSyncVariant> | null
  if (typeof v !== 'object' || v === null || v.type !== 'sync' || typeof v.importFFI !== 'function' || typeof v.importModuleLoader !== 'function') {
    throw new ToolError('INVALID_OPTIONS', `${FACTORY}: options.variant must be a quickjs-emscripten sync variant`)
  }
  const prewarm = record.prewarm ?? true
  if (typeof prewarm !== 'boolean') throw new ToolError('INVALID_OPTIONS', `${FACTORY}: options.prewarm must be a boolean`)
  return { limits, memoryMb, wasmModule: wasmModule as QuickJsWasmModuleSource | undefined, variant: variant as QuickJSSyncVariant, prewarm }
}

/** The library's `default` / `default.default` wrapping of a dynamically imported factory, undone. */
function unwrapLoader(imported: unknown): EmscriptenModuleLoader<QuickJSEmscriptenModule> {
  let value = imported
  for (let i = 0; i < 2 && typeof value === 'object' && value !== null && 'default' in value; i++) value = (value as { default: unknown }).default
  if (typeof value !== 'function') throw new TypeError('the QuickJS variant did not provide an emscripten module factory')
  return value as EmscriptenModuleLoader<QuickJSEmscriptenModule>
}

/** What every sandbox of one runtime is built from, resolved once per runtime. */
interface SandboxParts {
  readonly loader: EmscriptenModuleLoader<QuickJSEmscriptenModule>
  readonly Ffi: new (module: QuickJSEmscriptenModule) => QuickJSFFI
  /** Undefined when the variant loads (and compiles) its own wasm on each instantiation. */
  readonly wasmModule: WebAssembly.Module | undefined
}

/** The run a sandbox currently serves: where its two host functions and its interrupt handler go. */
interface SandboxHost {
  post(json: string): void
  timer(id: number, delay: number): boolean
  interrupt(): boolean
}

/**
 * One QuickJS instance for exactly one run: a fresh wasm instance over its own fixed
 * memory, one runtime (stack and memory limits, interrupt handler), one context, and
 * the sandbox bundle evaluated and installed in it (its `ready` message held until a
 * run attaches). It may be built ahead of its run; until a run {@link attach}es,
 * nothing but the bundle has run in it.
 */
class QuickJsSandbox {
  /** The bundle's `deliver(json)` and `fire(id)`: how the host drives the VM. */
  deliver: QuickJSHandle | undefined
  fire: QuickJSHandle | undefined
  /** Set when the wasm instance trapped: it must not be touched again, not even to free it. */
  crashed = false
  readonly #handles: QuickJSHandle[] = []
  #host: SandboxHost | undefined
  /** Messages the VM posted before its run attached (the bootstrap's `ready`). */
  readonly #early: string[] = []
  #attached = false
  #disposed = false

  constructor(
    readonly runtime: QuickJSRuntime,
    readonly context: QuickJSContext,
  ) {}

  /** Handles freed with the sandbox. */
  own<T extends QuickJSHandle>(handle: T): T {
    this.#handles.push(handle)
    return handle
  }

  /**
   * Routes the VM's messages, timers and interrupts to `host`, then hands it what the VM
   * posted so far. A sandbox serves one run: false if it was attached or freed before.
   */
  attach(host: SandboxHost): boolean {
    if (this.#attached || this.#disposed) return false
    this.#attached = true
    this.#host = host
    for (const json of this.#early.splice(0)) host.post(json)
    return true
  }

  hostPost(json: string): void {
    if (this.#host !== undefined) this.#host.post(json)
    else if (!this.#attached) this.#early.push(json)
  }

  hostTimer(id: number, delay: number): boolean {
    return this.#host?.timer(id, delay) ?? false
  }

  hostInterrupt(): boolean {
    // Only our own bundle runs before a run attaches; past that, the run decides.
    return this.#host?.interrupt() ?? false
  }

  /**
   * Ends the sandbox's service to its run: no message, timer or interrupt reaches the run
   * any more, and the whole instance is left to the garbage collector. Nothing is freed
   * piecewise: the VM's objects all live in its private wasm memory, which goes with the
   * instance (freeing them first cost ~0.3 ms per run, on the run's critical path), and
   * no host-side registry outlives the instance.
   */
  release(): void {
    this.#disposed = true
    this.#host = undefined
  }

  /** Frees the VM explicitly (a no-op once released or disposed, or after a crash). */
  dispose(): void {
    if (this.#disposed) return
    this.#disposed = true
    this.#host = undefined
    if (this.crashed) return
    try {
      for (const handle of this.#handles) if (handle.alive) handle.dispose()
      this.context.dispose()
      this.runtime.dispose()
    } catch {
      // A VM that failed mid-operation may refuse clean-up; its whole wasm instance
      // and memory are private to its run and are reclaimed with it.
    }
  }
}

/** A VM-level failure while building a sandbox, as an Error with QuickJS's message. */
function sandboxError(ctx: QuickJSContext, error: QuickJSHandle, what: string): Error {
  let message = 'unknown error'
  try {
    const dumped = ctx.dump(error) as { message?: unknown } | null
    if (typeof dumped?.message === 'string') message = dumped.message
  } catch {
    // Unreadable: reported generically.
  } finally {
    error.dispose()
  }
  return new Error(`${what}: ${message}`)
}

/**
 * Builds a sandbox. Goes straight to the variant's emscripten factory with the runtime's
 * precompiled module (instantiated synchronously, with none of the per-instance dynamic
 * `import()` and promise hops of the library's `newQuickJSWASMModuleFromVariant`), over
 * a fresh `WebAssembly.Memory` whose maximum is the run's memory cap.
 */
async function createSandbox(parts: SandboxParts, options: ResolvedOptions): Promise<QuickJsSandbox> {
  const memory = new WebAssembly.Memory({ initial: INITIAL_PAGES, maximum: options.memoryMb * PAGES_PER_MB })
  const precompiled = parts.wasmModule
  const moduleOptions: EmscriptenModuleLoaderOptions & Record<string, unknown> = {
    wasmMemory: memory,
    print: silentPrint,
    printErr: silentPrint,
    ...(precompiled === undefined
      ? {}
      : {
          instantiateWasm(imports: WebAssembly.Imports, onSuccess: (instance: WebAssembly.Instance) => void): WebAssembly.Exports {
            const instance = new WebAssembly.Instance(precompiled, imports)
            onSuccess(instance)
            return instance.exports
          },
        }),
  }
  const emscripten = await parts.loader(moduleOptions)
  ;(emscripten as { type?: string }).type = 'sync'
  const quickjs = new QuickJSWASMModule(emscripten, new parts.Ffi(emscripten))
  const runtime = quickjs.newRuntime()
  let sandbox: QuickJsSandbox | undefined
  try {
    runtime.setMaxStackSize(MAX_STACK_BYTES)
    runtime.setMemoryLimit(Math.max(8 * 1024 * 1024, options.memoryMb * 1024 * 1024 - MEMORY_HEADROOM_BYTES))
    runtime.setInterruptHandler(() => sandbox?.hostInterrupt() ?? false)
    const ctx = runtime.newContext()
    const box = new QuickJsSandbox(runtime, ctx)
    sandbox = box
    const post = box.own(ctx.newFunction('post', (json) => {
      if (ctx.typeof(json) === 'string') box.hostPost(ctx.getString(json))
    }))
    const timer = box.own(ctx.newFunction('timer', (id, delay) => {
      const ok = ctx.typeof(id) === 'number' && ctx.typeof(delay) === 'number' && box.hostTimer(ctx.getNumber(id), ctx.getNumber(delay))
      return ok ? ctx.true : ctx.false
    }))
    // The bundle, then its `install(post, timer)`: the bootstrap's set-up, before any
    // program exists. The program arrives later, in the run's `start` message.
    const exports = ctx.evalCode(SANDBOX_SOURCE, 'toolyard-sandbox.js')
    if (exports.error !== undefined) throw sandboxError(ctx, exports.error, 'the sandbox bundle failed')
    const install = box.own(ctx.getProp(exports.value, 'install'))
    exports.value.dispose()
    const installed = ctx.callFunction(install, ctx.undefined, post, timer)
    if (installed.error !== undefined) throw sandboxError(ctx, installed.error, 'the sandbox bootstrap failed')
    box.deliver = box.own(ctx.getProp(installed.value, 'deliver'))
    box.fire = box.own(ctx.getProp(installed.value, 'fire'))
    installed.value.dispose()
    return box
  } catch (error) {
    if (sandbox !== undefined) sandbox.dispose()
    else {
      try {
        runtime.dispose()
      } catch {
        // See QuickJsSandbox.dispose.
      }
    }
    throw error
  }
}

/** Rewrites QuickJS frames of the program (`<input>:L:C`, two wrapper lines above the body) to `program.ts:L:C`. */
function remapQuickJsStack(stack: string): string {
  return stack.replace(/<input>:(\d+)(?::(\d+))?/g, (_all, line: string, column: string | undefined) => {
    const mapped = `${PROGRAM_SOURCE_URL}:${Math.max(1, Number(line) - 2)}`
    return column === undefined ? mapped : `${mapped}:${column}`
  })
}

function own(data: object, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(data, key) ? (data as Record<string, unknown>)[key] : undefined
}

const isOutOfMemory = (name: unknown, message: unknown) => name === 'InternalError' && message === 'out of memory'

/**
 * One run: the session (every account), the VM it drives, and the host timers. The
 * drive loop is the only place VM code runs; messages for the VM are queued and
 * delivered from it, never re-entrantly.
 */
class QuickJsRun {
  readonly session: CodeRunSession
  /** Resolves once the run has let go of its VM (released whole, see QuickJsSandbox.release) and cleared its host timers. */
  readonly finished: Promise<void>

  readonly #options: ResolvedOptions
  readonly #acquire: () => Promise<QuickJsSandbox>
  readonly #listeners: WireListener[] = []
  readonly #inbox: Array<{ readonly kind: 'message'; readonly json: string } | { readonly kind: 'timer'; readonly id: number }> = []
  readonly #timers = new Map<number, ReturnType<typeof setTimeout>>()
  #terminated = false
  #wake: (() => void) | undefined
  #busyMs = 0
  #interrupts = 0
  #segmentStart = 0
  #startedAt = 0
  /** The run's VM, once acquired. */
  #sandbox: QuickJsSandbox | undefined

  constructor(run: ReturnType<typeof prepareRun> & { ok: true }, program: string, options: ResolvedOptions, acquire: () => Promise<QuickJsSandbox>) {
    this.#options = options
    this.#acquire = acquire
    const endpoint: WireEndpoint = {
      postMessage: (message) => {
        this.#inbox.push({ kind: 'message', json: JSON.stringify(message) })
        this.#poke()
      },
      addEventListener: (_type, listener) => {
        this.#listeners.push(listener)
      },
      removeEventListener: (_type, listener) => {
        const at = this.#listeners.indexOf(listener)
        if (at >= 0) this.#listeners.splice(at, 1)
      },
    }
    this.session = new CodeRunSession(run.run, program, options.limits, {
      endpoint,
      meter: () => this.#computeMs(),
      terminate: () => {
        // Possibly called from inside the VM (interrupt handler, a host function): only
        // mark; the drive loop frees the VM once control is back on the host.
        this.#terminated = true
        this.#poke()
      },
    })
    this.#startedAt = performance.now()
    this.session.start()
    this.finished = this.#drive()
  }

  #poke(): void {
    const wake = this.#wake
    this.#wake = undefined
    wake?.()
  }

  /** Busy time: the clock while the VM runs, but never less than the interrupt count allows. */
  #computeMs(): number {
    const running = this.#segmentStart > 0 ? performance.now() - this.#segmentStart : 0
    return Math.max(this.#busyMs + running, this.#interrupts * MIN_MS_PER_INTERRUPT)
  }

  #interrupt(): boolean {
    if (this.#terminated || this.session.settled) return true
    this.#interrupts++
    const compute = this.#computeMs()
    const { computeMs, maxWallMs } = this.#options.limits
    if (compute >= computeMs) {
      this.session.fail('timeout', `compute budget of ${computeMs} ms exhausted`)
      return true
    }
    // Compute the clock did not see (a frozen clock) still counts towards the wall.
    const clockBusy = this.#busyMs + (performance.now() - this.#segmentStart)
    const wall = performance.now() - this.#startedAt + Math.max(0, compute - clockBusy)
    if (wall >= maxWallMs) {
      this.session.fail('timeout', `wall-clock ceiling of ${maxWallMs} ms reached`)
      return true
    }
    return false
  }

  /** A message from the VM (JSON text): parsed here, then validated by the session like any peer's. */
  #fromSandbox(json: string): void {
    if (this.#terminated) return
    let data: unknown
    try {
      data = JSON.parse(json)
    } catch {
      return
    }
    if (typeof data === 'object' && data !== null && !Array.isArray(data)) {
      const type = own(data, 'type')
      // JSON cannot carry `undefined`: a call without arguments arrives without the key.
      if (type === 'call' && !Object.prototype.hasOwnProperty.call(data, 'args')) {
        Object.defineProperty(data, 'args', { value: undefined, enumerable: true, writable: true, configurable: true })
      }
      const error = type === 'done' ? own(data, 'error') : undefined
      if (typeof error === 'object' && error !== null) {
        if (isOutOfMemory(own(error, 'name'), own(error, 'message'))) {
          this.session.fail('worker-exit', this.#oomMessage())
          return
        }
        const stack = own(error, 'stack')
        if (typeof stack === 'string') (error as Record<string, unknown>).stack = remapQuickJsStack(stack)
      }
    }
    for (const listener of this.#listeners.slice()) listener({ data })
  }

  #oomMessage(): string {
    return `out of memory: the program exceeded the ${this.#options.memoryMb} MB memory of its QuickJS sandbox`
  }

  #setTimer(id: number, delay: number): boolean {
    const existing = this.#timers.get(id)
    if (existing !== undefined) {
      clearTimeout(existing)
      this.#timers.delete(id)
    }
    if (delay < 0 || this.#terminated) return delay < 0
    if (this.#timers.size >= MAX_TIMERS) return false
    this.#timers.set(
      id,
      setTimeout(() => {
        this.#timers.delete(id)
        this.#inbox.push({ kind: 'timer', id })
        this.#poke()
      }, delay),
    )
    return true
  }

  /** Runs one VM entry with the compute clock running; a VM-level failure ends the run. */
  #enter(ctx: QuickJSContext, call: () => { error?: QuickJSHandle; value?: unknown; dispose?: () => void }): void {
    this.#segmentStart = performance.now()
    let error: QuickJSHandle | undefined
    try {
      const result = call()
      error = result.error
      if (error === undefined) result.dispose?.()
    } catch (thrown) {
      // A wasm trap or an emscripten abort: the instance is unusable.
      this.#busyMs += performance.now() - this.#segmentStart
      this.#segmentStart = 0
      if (this.#sandbox !== undefined) this.#sandbox.crashed = true
      this.session.fail('worker-exit', `the QuickJS sandbox crashed: ${toErrorData(thrown).message}`)
      return
    }
    this.#busyMs += performance.now() - this.#segmentStart
    this.#segmentStart = 0
    if (error === undefined) return
    let name: unknown
    let message: unknown
    try {
      // Only reached for failures outside the program's own promise chain (the
      // bootstrap catches the program's errors): interrupts, memory exhaustion.
      const dumped = ctx.dump(error) as { name?: unknown; message?: unknown } | null
      name = dumped?.name
      message = dumped?.message
    } catch {
      // Unreadable: reported generically below.
    } finally {
      error.dispose()
    }
    if (this.session.settled) return
    if (isOutOfMemory(name, message)) this.session.fail('worker-exit', this.#oomMessage())
    else this.session.fail('worker-exit', `the QuickJS sandbox failed: ${typeof name === 'string' ? name : 'Error'}: ${typeof message === 'string' ? message : 'unknown error'}`)
  }

  /** Whether the run obtained a sandbox (the runtime pre-builds the next one only when building works). */
  get createdSandbox(): boolean {
    return this.#sandbox !== undefined
  }

  async #drive(): Promise<void> {
    try {
      if (this.#terminated) return
      let sandbox: QuickJsSandbox
      try {
        sandbox = await this.#acquire()
      } catch (error) {
        this.session.fail('worker-exit', `the QuickJS sandbox could not be created: ${toErrorData(error).message}`)
        return
      }
      this.#sandbox = sandbox
      if (this.#terminated) return
      const attached = sandbox.attach({
        post: (json) => this.#fromSandbox(json),
        timer: (id, delay) => this.#setTimer(id, delay),
        interrupt: () => this.#interrupt(),
      })
      const rt = sandbox.runtime
      const context = sandbox.context
      const deliver = sandbox.deliver
      const fire = sandbox.fire
      if (!attached || deliver === undefined || fire === undefined) {
        // Unreachable by construction; a sandbox is never shared between runs.
        this.session.fail('worker-exit', 'the QuickJS sandbox could not be created: it was not fresh')
        return
      }
      while (!this.#terminated) {
        const next = this.#inbox.shift()
        if (next !== undefined) {
          this.#enter(context, () => {
            const arg = next.kind === 'message' ? context.newString(next.json) : context.newNumber(next.id)
            try {
              return context.callFunction(next.kind === 'message' ? deliver : fire, context.undefined, arg)
            } finally {
              arg.dispose()
            }
          })
          continue
        }
        if (rt.hasPendingJob()) {
          this.#enter(context, () => {
            const jobs = rt.executePendingJobs()
            return jobs.error === undefined ? { dispose: () => jobs.dispose() } : { error: jobs.error }
          })
          continue
        }
        await new Promise<void>((resolve) => {
          this.#wake = resolve
        })
      }
    } finally {
      for (const id of this.#timers.values()) clearTimeout(id)
      this.#timers.clear()
      this.#inbox.length = 0
      this.#sandbox?.release()
    }
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
  const runs = new Set<QuickJsRun>()
  let disposed = false

  // Everything a sandbox is built from, resolved once (retried after a failure): the
  // variant's dynamic imports and the caller's wasm loader are not per-run work.
  let partsPromise: Promise<SandboxParts> | undefined
  let partsLoaded = false
  const loadParts = (): Promise<SandboxParts> => {
    partsPromise ??= (async (): Promise<SandboxParts> => {
      const source = resolved.wasmModule
      const [loader, Ffi, wasmModule] = await Promise.all([
        resolved.variant.importModuleLoader().then(unwrapLoader),
        resolved.variant.importFFI(),
        source === undefined || source instanceof WebAssembly.Module
          ? source
          : Promise.resolve()
              .then(source)
              .then((module) => {
                if (!(module instanceof WebAssembly.Module)) throw new TypeError('options.wasmModule() did not return a WebAssembly.Module')
                return module
              }),
      ])
      partsLoaded = true
      return { loader, Ffi, wasmModule }
    })()
    const attempt = partsPromise
    attempt.catch(() => {
      if (partsPromise === attempt) partsPromise = undefined
    })
    return attempt
  }
  const build = async (): Promise<QuickJsSandbox> => createSandbox(await loadParts(), resolved)

  // At most one sandbox built ahead of its run, kept as a plain value (`ready`) and taken
  // synchronously. A run that finds the build still in flight joins it only when it can
  // wait on nothing but the build itself (the parts were loaded when it started: then it
  // awaits at most the variant's own module look-ups). A build that also awaits the
  // caller's wasm loader (possibly I/O) is never joined, so that a run never waits on
  // I/O started by another task (in workerd, by another request, which is not allowed
  // to wake it); such a run builds its own.
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
    if (building === undefined) buildingJoinable = partsLoaded
    building ??= build().then(
      (sandbox) => {
        if (disposed || ready !== undefined) sandbox.dispose()
        else ready = sandbox
      },
      () => {
        // The next run builds its own and reports the failure.
      },
    ).finally(() => {
      building = undefined
    })
    return building
  }
  const schedulePrewarm = (): void => {
    if (!resolved.prewarm || disposed || ready !== undefined || building !== undefined || prewarmTimer !== undefined) return
    // A timer task, so that the finished run's caller goes first.
    prewarmTimer = setTimeout(() => void prewarm(), 0)
  }

  // The VM computes on the host's thread: an abort cannot be delivered until it yields.
  const capabilities: CodeRuntimeCapabilities = Object.freeze({ streamsLogs: true, memoryLimit: true, capturesStdio: false, abortsBusyPrograms: false })

  return Object.freeze({
    language: 'typescript',
    isolation: 'quickjs-wasm',
    capabilities,
    async run(request: CodeRunRequest): Promise<CodeRunResult> {
      if (disposed) return failedResult('abort', 'the runtime was disposed')
      const prepared = prepareRun(request)
      if (!prepared.ok) return failedResult('exception', prepared.message)
      // An already-aborted signal wins over a syntax error: the session settles it at start.
      let program = prepared.run.program
      if (prepared.run.signal?.aborted !== true) {
        const stripped = stripTypeScript(program)
        if (!stripped.ok) return failedResult('exception', stripped.message)
        program = stripped.code
      }
      const run = new QuickJsRun(prepared, program, resolved, acquire)
      // Tracked until quiescent: the VM freed and every binding call it started settled.
      runs.add(run)
      void Promise.all([run.finished, run.session.result.then(() => run.session.bindingsSettled())]).finally(() => runs.delete(run))
      const result = await run.session.result
      await run.finished
      if (run.createdSandbox) schedulePrewarm()
      return result
    },
    prewarm,
    async dispose(): Promise<void> {
      disposed = true
      if (prewarmTimer !== undefined) clearTimeout(prewarmTimer)
      prewarmTimer = undefined
      const active = [...runs]
      for (const run of active) run.session.fail('abort', 'the runtime was disposed')
      await Promise.all([
        building,
        ...active.map(async (run) => {
          await run.finished
          await run.session.bindingsSettled()
        }),
      ])
      ready?.dispose()
      ready = undefined
    },
  })
}
