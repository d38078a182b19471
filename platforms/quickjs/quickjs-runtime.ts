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
 * The VM side is the same bootstrap every message-passing runtime uses
 * (`src/code-runtime/bootstrap.ts`), adapted to two host functions; the host side is
 * the shared {@link CodeRunSession}, so caps, messages and failure kinds match the
 * Node and browser runtimes.
 *
 * @module
 */
import { newQuickJSWASMModuleFromVariant, newVariant } from 'quickjs-emscripten-core'
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSSyncVariant } from 'quickjs-emscripten-core'
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
const silentEmscripten = { print: () => undefined, printErr: () => undefined } as unknown as NonNullable<
  Parameters<typeof newVariant>[1]['emscriptenModule']
>

const FACTORY = 'createQuickJsRuntime'
const OPTION_KEYS: readonly string[] = [...CODE_RUN_LIMIT_KEYS, 'memoryMb', 'wasmModule', 'variant']

interface ResolvedOptions {
  readonly limits: CodeRunLimits
  readonly memoryMb: number
  readonly wasmModule: QuickJsWasmModuleSource | undefined
  readonly variant: QuickJSSyncVariant
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
  return { limits, memoryMb, wasmModule: wasmModule as QuickJsWasmModuleSource | undefined, variant: memoizeVariant(variant as QuickJSSyncVariant) }
}

/**
 * The variant's loaders are dynamic `import()`s; a fresh module per run would repeat
 * them every run (each a trip through the module loader). Resolve them once.
 */
function memoizeVariant(variant: QuickJSSyncVariant): QuickJSSyncVariant {
  let ffi: ReturnType<QuickJSSyncVariant['importFFI']> | undefined
  let loader: ReturnType<QuickJSSyncVariant['importModuleLoader']> | undefined
  return {
    ...variant,
    importFFI: () => (ffi ??= variant.importFFI().catch((error: unknown) => {
      ffi = undefined
      throw error
    })),
    importModuleLoader: () => (loader ??= variant.importModuleLoader().catch((error: unknown) => {
      loader = undefined
      throw error
    })),
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
  /** Resolves once the VM and everything the run owns on the host are freed. */
  readonly finished: Promise<void>

  readonly #options: ResolvedOptions
  readonly #loadModule: () => Promise<WebAssembly.Module | undefined>
  readonly #listeners: WireListener[] = []
  readonly #inbox: Array<{ readonly kind: 'message'; readonly json: string } | { readonly kind: 'timer'; readonly id: number }> = []
  readonly #timers = new Map<number, ReturnType<typeof setTimeout>>()
  #terminated = false
  #wake: (() => void) | undefined
  #busyMs = 0
  #interrupts = 0
  #segmentStart = 0
  #startedAt = 0
  /** Set when the wasm instance trapped: it must not be touched again, not even to free it. */
  #crashed = false

  constructor(run: ReturnType<typeof prepareRun> & { ok: true }, program: string, options: ResolvedOptions, loadModule: () => Promise<WebAssembly.Module | undefined>) {
    this.#options = options
    this.#loadModule = loadModule
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
      this.#crashed = true
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

  async #drive(): Promise<void> {
    let rt: QuickJSRuntime | undefined
    let ctx: QuickJSContext | undefined
    const handles: QuickJSHandle[] = []
    try {
      if (this.#terminated) return
      let memory: WebAssembly.Memory
      let wasmModule: WebAssembly.Module | undefined
      try {
        memory = new WebAssembly.Memory({ initial: INITIAL_PAGES, maximum: this.#options.memoryMb * PAGES_PER_MB })
        wasmModule = await this.#loadModule()
      } catch (error) {
        this.session.fail('worker-exit', `the QuickJS sandbox could not be created: ${toErrorData(error).message}`)
        return
      }
      if (this.#terminated) return
      const variant = newVariant(this.#options.variant, {
        ...(wasmModule === undefined ? {} : { wasmModule }),
        wasmMemory: memory,
        emscriptenModule: silentEmscripten,
      })
      let quickjs: Awaited<ReturnType<typeof newQuickJSWASMModuleFromVariant>>
      try {
        quickjs = await newQuickJSWASMModuleFromVariant(variant)
      } catch (error) {
        this.session.fail('worker-exit', `the QuickJS sandbox could not be created: ${toErrorData(error).message}`)
        return
      }
      if (this.#terminated) return
      rt = quickjs.newRuntime()
      rt.setMaxStackSize(MAX_STACK_BYTES)
      rt.setMemoryLimit(Math.max(8 * 1024 * 1024, this.#options.memoryMb * 1024 * 1024 - MEMORY_HEADROOM_BYTES))
      rt.setInterruptHandler(() => this.#interrupt())
      const context = rt.newContext()
      ctx = context

      const post = context.newFunction('post', (json) => {
        if (context.typeof(json) === 'string') this.#fromSandbox(context.getString(json))
      })
      const timer = context.newFunction('timer', (id, delay) => {
        const ok = context.typeof(id) === 'number' && context.typeof(delay) === 'number' && this.#setTimer(context.getNumber(id), context.getNumber(delay))
        return ok ? context.true : context.false
      })
      handles.push(post, timer)
      let api: QuickJSHandle | undefined
      this.#enter(context, () => {
        const exports = context.evalCode(SANDBOX_SOURCE, 'toolyard-sandbox.js')
        if (exports.error !== undefined) return exports
        const install = context.getProp(exports.value, 'install')
        exports.value.dispose()
        const installed = context.callFunction(install, context.undefined, post, timer)
        install.dispose()
        if (installed.error !== undefined) return installed
        api = installed.value
        return {}
      })
      if (api === undefined) return
      // The sandbox's own set-up is the host's overhead, not the program's: charge from here.
      this.#busyMs = 0
      this.#interrupts = 0
      const deliver = context.getProp(api, 'deliver')
      const fire = context.getProp(api, 'fire')
      api.dispose()
      handles.push(deliver, fire)

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
          const runtime = rt
          this.#enter(context, () => {
            const jobs = runtime.executePendingJobs()
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
      if (!this.#crashed) {
        try {
          for (const handle of handles) if (handle.alive) handle.dispose()
          ctx?.dispose()
          rt?.dispose()
        } catch {
          // A VM that failed mid-operation may refuse clean-up; its whole wasm instance
          // and memory are private to this run and are reclaimed with it.
        }
      }
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
export function createQuickJsRuntime(options: QuickJsRuntimeOptions = {}): CodeRuntime {
  const resolved = readOptions(options)
  const runs = new Set<QuickJsRun>()
  let disposed = false
  let modulePromise: Promise<WebAssembly.Module> | undefined
  const source = resolved.wasmModule
  const loadModule = async (): Promise<WebAssembly.Module | undefined> => {
    if (source === undefined) return undefined
    if (source instanceof WebAssembly.Module) return source
    modulePromise ??= Promise.resolve()
      .then(source)
      .then((module) => {
        if (!(module instanceof WebAssembly.Module)) throw new TypeError('options.wasmModule() did not return a WebAssembly.Module')
        return module
      })
    try {
      return await modulePromise
    } catch (error) {
      modulePromise = undefined
      throw error
    }
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
      const run = new QuickJsRun(prepared, program, resolved, loadModule)
      // Tracked until quiescent: the VM freed and every binding call it started settled.
      runs.add(run)
      void Promise.all([run.finished, run.session.result.then(() => run.session.bindingsSettled())]).finally(() => runs.delete(run))
      const result = await run.session.result
      await run.finished
      return result
    },
    async dispose(): Promise<void> {
      disposed = true
      const active = [...runs]
      for (const run of active) run.session.fail('abort', 'the runtime was disposed')
      await Promise.all(active.map(async (run) => {
        await run.finished
        await run.session.bindingsSettled()
      }))
    },
  })
}
