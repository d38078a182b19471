/**
 * The QuickJS engine shared by the inline runtime (`toolyard/quickjs`) and the sandbox
 * threads: builds one-run VMs (booted, restored from a memory image, or restored in place
 * on a released VM's instance: docs/runtimes.md "How a VM is made"). No `node:*` import.
 * @module
 */
import { Lifetime, QuickJSRuntime, QuickJSWASMModule } from 'quickjs-emscripten-core'
import type {
  EmscriptenModuleLoader,
  EmscriptenModuleLoaderOptions,
  JSContextPointer,
  JSRuntimePointer,
  JSValuePointer,
  QuickJSContext,
  QuickJSEmscriptenModule,
  QuickJSFFI,
  QuickJSHandle,
  QuickJSSyncVariant,
  VmFunctionImplementation,
} from 'quickjs-emscripten-core'
import { ToolError } from '../../src/errors.js'
import { chunkCount, flagNonZeroChunks, nonZeroChunks, resetMemoryToImage, restoreMemoryImage, takeMemoryImage } from './vm-image.js'
import type { MemoryImage } from './vm-image.js'

/** A precompiled QuickJS wasm module, or a function that loads one (called once, memoized on success). */
export type QuickJsWasmModuleSource = WebAssembly.Module | (() => Promise<WebAssembly.Module>)

/** The largest memory a wasm32 QuickJS build addresses here (32 768 pages). */
export const MAX_MEMORY_MB = 2048
/** QuickJS's wasm declares 256 initial pages (16 MiB): the memory cannot start smaller. */
export const MIN_MEMORY_MB = 16
const INITIAL_PAGES = 256
const PAGES_PER_MB = 16
const PAGE_BYTES = 65_536
/** A released instance whose memory grew more than this past its image is dropped, not reset: zeroing it would cost more than a fresh one, and its pages would stay resident. */
const MAX_RECYCLED_GROWTH_BYTES = 16 * 1024 * 1024
/**
 * Builds that take a fresh instance while a scan runs, before one waits for the scan to end: a thread's
 * first runs stay quick, and one that keeps getting runs back to back pays the scan's rest once.
 */
const FRESH_BUILDS_WHILE_SCANNING = 3
/**
 * QuickJS's own stack limit in a sandbox thread, which turns deep recursion into a catchable
 * `InternalError: stack overflow`. It counts only QuickJS's shadow stack in wasm memory; each
 * level of recursion also takes wasm frames on the thread's real stack, which must not run out
 * first (`Maximum call stack size exceeded` from the engine itself: the instance is lost, kind
 * `worker-exit`). A Node sandbox thread has a 4 MiB stack, enough for the worst shape measured
 * at this limit (a parser's nested brackets, ~25 bytes of real stack to one of shadow stack:
 * about 2.4 MiB). In Chromium's Web Worker 128 KiB still fit and 160 KiB crashed the thread on
 * the contract suite's recursion shapes. A plain function recurses about 500 levels.
 * (Larger limits can also crash the wasm on clean-up: NOTES-env.)
 */
export const THREAD_MAX_STACK_BYTES = 96 * 1024
/**
 * QuickJS's own stack limit for a VM that runs on its host's stack (the inline runtime,
 * `createQuickJsRuntime`): a server's event loop, a Worker's isolate, a page's main thread,
 * whose V8 stack is 984 KiB by default on Node's main thread. The worst native recursion
 * over DATA measured (`JSON.stringify` of a nested value, a replacer, a `toJSON` chain: 16
 * bytes of shadow stack and ~184 bytes of real stack a level, 11.5 to 1) then needs at most
 * ~760 KiB of real stack before QuickJS's check fires (Node's `--stack-size=780` holds it,
 * 740 does not): the rest of 984 KiB is kept for the host's own frames below the VM (its
 * entries run from shallow microtasks). A plain function still recurses about 330 levels
 * (the contract suite asks for more than 300). Parsing is worse (up to 25 to 1: nested
 * brackets): it runs under {@link INLINE_MAX_COMPILE_STACK_BYTES}. Figures: node 20, x86-64,
 * quickjs-wasmfile-release-sync 0.32.0 (docs/runtimes.md "Deep recursion").
 */
export const INLINE_MAX_STACK_BYTES = 64 * 1024
/**
 * QuickJS's stack limit while an inline VM compiles text (its program, `eval`, the `Function`
 * constructors): the parser's worst shape then needs ~575 KiB of real stack, under the run
 * limit's ~760 (docs/runtimes.md "Deep recursion").
 */
export const INLINE_MAX_COMPILE_STACK_BYTES = 24 * 1024
/** Headroom left between QuickJS's allocator limit and the wasm memory maximum, for the runtime's own reporting. */
const MEMORY_HEADROOM_BYTES = 4 * 1024 * 1024
/** The most random bytes one `crypto.getRandomValues` call may ask for (the Web Crypto limit). */
const MAX_RANDOM_BYTES = 65_536
/** URL properties a program may set, by name: anything else is refused before it reaches a host object. */
const URL_SETTERS: ReadonlySet<string> = new Set(['href', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash'])

/** Emscripten prints aborts to the console by default; the run reports them as its outcome instead. */
const silentPrint = () => undefined

/** The library's `default` / `default.default` wrapping of a dynamically imported factory, undone. */
function unwrapLoader(imported: unknown): EmscriptenModuleLoader<QuickJSEmscriptenModule> {
  let value = imported
  for (let i = 0; i < 2 && typeof value === 'object' && value !== null && 'default' in value; i++) value = (value as { default: unknown }).default
  if (typeof value !== 'function') throw new TypeError('the QuickJS variant did not provide an emscripten module factory')
  return value as EmscriptenModuleLoader<QuickJSEmscriptenModule>
}

/** Checks a `variant` option: a quickjs-emscripten SYNC variant. */
export function isSyncVariant(value: unknown): value is QuickJSSyncVariant {
  const v = value as Partial<QuickJSSyncVariant> | null
  return typeof v === 'object' && v !== null && v.type === 'sync' && typeof v.importFFI === 'function' && typeof v.importModuleLoader === 'function'
}

/** Checks a `wasmModule` option; throws `INVALID_OPTIONS` naming `factory`. */
export function checkWasmModuleSource(value: unknown, factory: string): QuickJsWasmModuleSource | undefined {
  if (value !== undefined && typeof value !== 'function' && !(value instanceof WebAssembly.Module)) {
    throw new ToolError('INVALID_OPTIONS', `${factory}: options.wasmModule must be a WebAssembly.Module or a function returning a promise of one`)
  }
  return value as QuickJsWasmModuleSource | undefined
}

/** What every sandbox of one engine is built from, resolved once. */
interface EngineParts {
  readonly loader: EmscriptenModuleLoader<QuickJSEmscriptenModule>
  readonly Ffi: new (module: QuickJSEmscriptenModule) => QuickJSFFI
  /** Undefined when the variant loads (and compiles) its own wasm on each instantiation. */
  readonly wasmModule: WebAssembly.Module | undefined
}

/** QuickJS's stack limits of a VM, in bytes: while it runs, and while it compiles text (never more). */
export interface StackLimits {
  readonly run: number
  readonly compile: number
}

/** Where a sandbox's run receives what the VM does: messages, timers, interrupt polls. */
export interface SandboxListener {
  /** The VM posted one message (JSON text). */
  post(json: string): void
  /** Arms (`delay >= 0`) or clears (`delay < 0`) host timer `id`; false refuses. */
  timer(id: number, delay: number): boolean
  /** Polled by QuickJS about every 10 000 interpreter steps: true ends the VM's current job. */
  interrupt(): boolean
  /**
   * Every reading of the host's clock or randomness (`op`: `now`, `date`, `rand`,
   * `random`) goes through here: `live` computes the value; a run journals it, or answers
   * from its journal while it replays. Absent: the live value.
   */
  read?(op: NondeterministicOp, live: () => string | number): string | number
}

/** The host services whose answers differ from run to run: the inputs a run's journal records besides its messages and timers. */
export type NondeterministicOp = 'now' | 'date' | 'rand' | 'random'

/**
 * One QuickJS instance for exactly one run: a fresh wasm instance over its own fixed
 * memory, one QuickJS runtime (stack and memory limits, interrupt handler), one context,
 * and the in-VM script evaluated and installed in it (its `ready` message held until a
 * run attaches). It may be built ahead of its run; until a run {@link attach}es,
 * nothing but the in-VM script has run in it.
 */
export class QuickJsSandbox {
  /** The in-VM script's `deliver(json)` and `fire(id)`: how the host drives the VM. */
  deliver: QuickJSHandle | undefined
  fire: QuickJSHandle | undefined
  /** Set when the wasm instance trapped: it must not be touched again, not even to free it. */
  crashed = false
  /** `performance.now()` inside the VM counts from here: the build, then the attach. */
  timeOrigin = performance.now()
  readonly #handles: QuickJSHandle[] = []
  #listener: SandboxListener | undefined
  /** Messages the VM posted before its run attached (the bootstrap's `ready`). */
  readonly #early: string[] = []
  #attached = false
  #disposed = false
  /** Set by the engine for a sandbox whose instance may serve the next one: called once at release. */
  recycle: (() => void) | undefined
  /**
   * QuickJS's stack limits for this VM: `run` (the engine's `maxStackBytes`) and `compile`, set
   * while the VM turns text into code (src/code-runtime/in-sandbox/compile-guard.ts).
   */
  stackLimits: StackLimits = { run: THREAD_MAX_STACK_BYTES, compile: THREAD_MAX_STACK_BYTES }

  /**
   * How this VM was made: `booted` (runtime, context and in-VM script created in it) or
   * `restored` (a fresh instance given a booted VM's memory image). Either way nothing of
   * a program has run in it.
   */
  readonly made: 'booted' | 'restored'

  /**
   * @param restored Set for a VM restored from an image: what the booted VM posted before
   *   the image was taken (its `ready`), which this VM then holds for its run.
   */
  constructor(
    readonly runtime: QuickJSRuntime,
    readonly context: QuickJSContext,
    restored?: { readonly early: readonly string[] },
  ) {
    this.made = restored === undefined ? 'booted' : 'restored'
    if (restored !== undefined) this.#early.push(...restored.early)
  }

  /** Handles freed with the sandbox. */
  own<T extends QuickJSHandle>(handle: T): T {
    this.#handles.push(handle)
    return handle
  }

  /** @internal The owned handles' pointers, in the order they were owned, and what the VM posted so far: what an image keeps. */
  bootState(): { readonly owned: readonly number[]; readonly early: readonly string[] } {
    return { owned: this.#handles.map((handle) => handle.value as number), early: [...this.#early] }
  }

  /**
   * Routes the VM's messages, timers and interrupts to `listener`, then hands it what the
   * VM posted so far. A sandbox serves one run: false if it was attached or freed before.
   */
  attach(listener: SandboxListener): boolean {
    if (this.#attached || this.#disposed) return false
    this.#attached = true
    this.#listener = listener
    this.timeOrigin = performance.now()
    for (const json of this.#early.splice(0)) listener.post(json)
    return true
  }

  /** @internal The VM's `post` host function. */
  hostPost(json: string): void {
    if (this.#listener !== undefined) this.#listener.post(json)
    else if (!this.#attached) this.#early.push(json)
  }

  /** @internal The VM's `timer` host function. */
  hostTimer(id: number, delay: number): boolean {
    return this.#listener?.timer(id, delay) ?? false
  }

  /** @internal A clock or randomness reading: the run's journal sees it. */
  hostRead(op: NondeterministicOp, live: () => string | number): string | number {
    const listener = this.#listener
    return listener?.read === undefined ? live() : listener.read(op, live)
  }

  /** @internal The interrupt handler. Only the in-VM script runs before a run attaches; past that, the run decides. */
  hostInterrupt(): boolean {
    return this.#listener?.interrupt() ?? false
  }

  /**
   * Ends the sandbox's service to its run: no message, timer or interrupt reaches the run
   * any more. Nothing is freed piecewise (the VM's objects all live in its wasm memory):
   * the instance goes to the engine for its next VM (reset to the image) unless it
   * crashed, else to the garbage collector.
   */
  release(): void {
    if (this.#disposed) return
    this.#disposed = true
    this.#listener = undefined
    // A trapped instance is never reused: its stack pointer and heap are anyone's guess.
    if (!this.crashed) this.recycle?.()
    this.recycle = undefined
  }

  /** Frees the VM explicitly (a no-op once released or disposed, or after a crash). */
  dispose(): void {
    if (this.#disposed) return
    this.#disposed = true
    this.#listener = undefined
    this.recycle = undefined
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

/** A URL's components as the in-VM `URL` class keeps them (JSON text), or '' when `input` does not parse. */
function urlComponents(url: URL | undefined): string {
  if (url === undefined) return ''
  const { href, origin, protocol, username, password, host, hostname, port, pathname, search, hash } = url
  return JSON.stringify({ href, origin, protocol, username, password, host, hostname, port, pathname, search, hash })
}

function parseUrl(input: string, base: string | undefined): URL | undefined {
  try {
    return base === undefined ? new URL(input) : new URL(input, base)
  } catch {
    // The in-VM class throws its own TypeError for '' (an invalid URL is an expected input).
    return undefined
  }
}

/**
 * The in-VM global environment's few host services. Each is a pure function of its
 * arguments (or of the host's randomness and clock): none hands the program a host
 * object, a path to one, or any authority. URL parsing goes to the host's own WHATWG
 * parser so that `URL` behaves exactly as on every other platform.
 */
function hostOp(sandbox: QuickJsSandbox, op: string, a: unknown, b: unknown, c: unknown): string | number | undefined {
  switch (op) {
    case 'now':
      return sandbox.hostRead('now', () => performance.now() - sandbox.timeOrigin)
    case 'date':
      return sandbox.hostRead('date', () => Date.now())
    case 'rand':
      return sandbox.hostRead('rand', () => Math.random())
    case 'random': {
      const n = typeof a === 'number' && Number.isInteger(a) && a >= 0 && a <= MAX_RANDOM_BYTES ? a : 0
      return sandbox.hostRead('random', () => {
        // Hex, not one character a byte: strings enter the VM as C strings, which a zero byte would cut short.
        const bytes = crypto.getRandomValues(new Uint8Array(n))
        let out = ''
        for (let i = 0; i < n; i++) out += (bytes[i]! < 16 ? '0' : '') + bytes[i]!.toString(16)
        return out
      })
    }
    case 'url-parse':
      return typeof a === 'string' ? urlComponents(parseUrl(a, typeof b === 'string' ? b : undefined)) : ''
    case 'url-set': {
      const url = typeof a === 'string' ? parseUrl(a, undefined) : undefined
      if (url === undefined || typeof b !== 'string' || !URL_SETTERS.has(b) || typeof c !== 'string') return urlComponents(url)
      if (b === 'href') return urlComponents(parseUrl(c, undefined))
      ;(url as unknown as Record<string, string>)[b] = c
      return urlComponents(url)
    }
    case 'compile-limit':
      // From the VM's compile guard only (the program never holds the host function): 1 lowers, 0 restores.
      sandbox.runtime.setMaxStackSize(a === 1 ? sandbox.stackLimits.compile : sandbox.stackLimits.run)
      return undefined
    case 'qs-parse':
      return typeof a === 'string' ? JSON.stringify([...new URLSearchParams(a)]) : '[]'
    case 'qs-serialize': {
      if (typeof a !== 'string') return ''
      const pairs: unknown = JSON.parse(a)
      if (!Array.isArray(pairs)) return ''
      const params = new URLSearchParams()
      for (const pair of pairs) if (Array.isArray(pair) && typeof pair[0] === 'string' && typeof pair[1] === 'string') params.append(pair[0], pair[1])
      return params.toString()
    }
    default:
      return undefined
  }
}

/** Options of a {@link QuickJsEngine}. */
export interface QuickJsEngineOptions {
  /**
   * The script installed in every sandbox (`SANDBOX_SOURCE` of `_sandbox-source.ts`).
   * Passed in rather than imported here so a sandbox thread's bundle does not carry a
   * second copy: its host sends it once, in the boot message.
   */
  readonly sandboxSource: string
  /** The variant (a quickjs-emscripten SYNC variant). */
  readonly variant: QuickJSSyncVariant
  /** The precompiled wasm (or its loader); absent: the variant loads its own on each instantiation. */
  readonly wasmModule?: QuickJsWasmModuleSource
  /**
   * QuickJS's own stack limit in bytes, for every VM this engine makes (booted or restored):
   * {@link THREAD_MAX_STACK_BYTES} on a sandbox thread (the default),
   * {@link INLINE_MAX_STACK_BYTES} where the VM runs on its host's stack.
   */
  readonly maxStackBytes?: number
  /**
   * QuickJS's stack limit while a VM compiles text (its program, `eval`, the `Function`
   * constructors): {@link INLINE_MAX_COMPILE_STACK_BYTES} where the VM runs on its host's
   * stack; default (and at most) `maxStackBytes`.
   */
  readonly maxCompileStackBytes?: number
  /**
   * `false`: boot every sandbox (runtime, context, script) instead of restoring the
   * image of the first one. For measuring the two side by side; default `true`.
   */
  readonly images?: boolean
  /**
   * `false`: every restored sandbox gets a fresh wasm instance instead of resetting a
   * released one's memory in place. For measuring the two side by side; default `true`.
   */
  readonly inPlace?: boolean
  /**
   * `false`: no build reads memory its VM never touched, which costs far more than reading it
   * again: only {@link QuickJsEngine.scanInSteps} takes the image (by default the second boot of a
   * size does), and only instances read whole are reset in place.
   */
  readonly imageInBuild?: boolean
  /** Called with each image this engine takes (another engine of the same wasm and script may adopt it). */
  readonly onImage?: (memoryMb: number, image: QuickJsImage) => void
}

/**
 * What a sandbox restored from an image needs besides the memory's bytes: the booted
 * VM's pointers (they are the same in every copy) and what it posted while booting.
 * Plain data: it can be posted to another thread.
 */
export interface QuickJsImage {
  readonly memory: MemoryImage
  readonly rt: JSRuntimePointer
  readonly ctx: JSContextPointer
  /** The JSValue pointers the booted sandbox owned, in the order it owned them. */
  readonly owned: readonly JSValuePointer[]
  readonly deliver: JSValuePointer
  readonly fire: JSValuePointer
  /** What the in-VM script posted while it was installed (the bootstrap's `ready`). */
  readonly early: readonly string[]
}

/** A freshly instantiated QuickJS wasm: the emscripten module and the memory it runs on. */
interface Instantiated {
  readonly emscripten: QuickJSEmscriptenModule
  readonly memory: WebAssembly.Memory
}

/**
 * The id the library gives the first host function of a fresh runtime (its `HostRefMap`
 * counts up from INT32_MIN); the sandbox's three host functions take the first three.
 */
const FIRST_HOST_REF_ID = -2147483648

/**
 * Builds QuickJS sandboxes. The variant's factory, FFI and compiled wasm are resolved
 * once (and retried after a failure): they are not per-run work. So is the boot of the
 * in-VM script: the first two sandboxes of each memory size are booted, and the
 * second's memory image then makes the others.
 */
export class QuickJsEngine {
  readonly #options: QuickJsEngineOptions
  #parts: Promise<EngineParts> | undefined
  #loaded = false
  /**
   * Without a precompiled module the variant fetches and compiles its wasm on every
   * build; the first build tells us where it lives (`locateFile`), and later builds use
   * a module compiled once from there.
   */
  #learned: WebAssembly.Module | undefined
  #learning = false
  /** One image per memory size (the size is part of what the booted VM holds: its allocator limit). */
  readonly #images = new Map<number, QuickJsImage>()
  /** Boots so far, per memory size: the first is never imaged (see {@link build}). */
  readonly #boots = new Map<number, number>()
  /** Sizes whose image could not be taken or restored: every build of them boots, and none scans the memory again. */
  readonly #unimageable = new Set<number>()
  /** Per memory size, the instance of a released sandbox: the next build resets its memory in place. */
  readonly #spares = new Map<number, Instantiated>()
  /** Per memory size, the scan {@link scanInSteps} runs now: `hurry()` ends its pauses, `done` settles when it ends. */
  readonly #scanning = new Map<number, { readonly hurry: () => void; readonly done: Promise<void>; builds: number }>()
  /** Per memory size, the VM {@link scanInSteps} made on the instance it scanned: the next build's. */
  readonly #prebuilt = new Map<number, QuickJsSandbox>()

  constructor(options: QuickJsEngineOptions) {
    this.#options = options
  }

  get #stackLimits(): StackLimits {
    const run = this.#options.maxStackBytes ?? THREAD_MAX_STACK_BYTES
    return { run, compile: Math.min(run, this.#options.maxCompileStackBytes ?? run) }
  }

  /** True once the parts are resolved: a build then awaits nothing but the variant's own module look-ups. */
  get loaded(): boolean {
    return this.#loaded
  }

  #loadParts(): Promise<EngineParts> {
    this.#parts ??= (async (): Promise<EngineParts> => {
      const { variant, wasmModule: source } = this.#options
      const [loader, Ffi, wasmModule] = await Promise.all([
        variant.importModuleLoader().then(unwrapLoader),
        variant.importFFI(),
        source === undefined || source instanceof WebAssembly.Module
          ? source
          : Promise.resolve()
              .then(source)
              .then((module) => {
                if (!(module instanceof WebAssembly.Module)) throw new TypeError('options.wasmModule() did not return a WebAssembly.Module')
                return module
              }),
      ])
      this.#loaded = true
      return { loader, Ffi, wasmModule }
    })()
    const attempt = this.#parts
    attempt.catch(() => {
      if (this.#parts === attempt) this.#parts = undefined
    })
    return attempt
  }

  /** Compiles the variant's own wasm once, in the background, from where it says it lives. */
  #learn(url: string): string {
    if (!this.#learning && typeof fetch === 'function' && typeof WebAssembly.compileStreaming === 'function') {
      this.#learning = true
      WebAssembly.compileStreaming(fetch(url)).then(
        (module) => {
          this.#learned = module
        },
        () => {
          // Builds keep letting the variant load its own wasm: slower, still correct.
        },
      )
    }
    return url
  }

  /**
   * Builds a sandbox with a memory of `memoryMb` MiB: a fresh wasm instance over a
   * fresh `WebAssembly.Memory` whose maximum is the run's memory cap, holding a booted
   * VM with nothing of a program in it. The first two builds of each size boot it
   * (QuickJS runtime, context, the in-VM script evaluated and installed: 5-8 ms of CPU)
   * and the second also takes its image; later builds copy the image into the fresh
   * memory and rebuild only the host's wrappers (a fraction of that: `npm run
   * bench:sandbox` prints both). Not the first: taking an image scans the memory twice
   * (~as long as a boot), which a runtime that makes one VM (a workerd isolate serving
   * one request, a thread's first VM at its start) should not pay. An image that
   * cannot be taken or restored (the library keeps state this engine does not rebuild)
   * is given up for that size: its builds boot, as without images.
   */
  async build(memoryMb: number): Promise<QuickJsSandbox> {
    const parts = await this.#loadParts()
    const prebuilt = this.#prebuilt.get(memoryMb)
    this.#prebuilt.delete(memoryMb)
    if (prebuilt !== undefined) return prebuilt
    const scan = this.#scanning.get(memoryMb)
    if (scan !== undefined && !this.#spares.has(memoryMb) && ++scan.builds > FRESH_BUILDS_WHILE_SCANNING) {
      // Finishing the scan now (tens of ms, once a thread) beats a fresh instance a run until it ends:
      // each costs its image's first page touches, and the memories dropped bring major collections.
      scan.hurry()
      await scan.done
      return this.build(memoryMb)
    }
    const image = this.#images.get(memoryMb)
    if (image !== undefined) {
      const spare = this.#spares.get(memoryMb)
      this.#spares.delete(memoryMb)
      const reused = spare !== undefined && spare.memory.buffer.byteLength <= image.memory.pages * PAGE_BYTES + MAX_RECYCLED_GROWTH_BYTES
      const instance = reused ? spare : await this.#instantiate(parts, memoryMb, image.memory.pages)
      try {
        if (reused) resetMemoryToImage(instance.memory, image.memory)
        const sandbox = restoreSandbox(instance, new parts.Ffi(instance.emscripten), image, !reused, this.#stackLimits)
        // Without imageInBuild, only instances read whole are reset: a fresh one's first reset would touch every page.
        if (reused || this.#options.imageInBuild !== false) this.#recycles(sandbox, memoryMb, instance)
        return sandbox
      } catch {
        // Never seen: the image does not fit this library. Booting is slower, still correct.
        this.#images.delete(memoryMb)
        this.#unimageable.add(memoryMb)
      }
    }
    const instance = await this.#instantiate(parts, memoryMb, INITIAL_PAGES)
    const boots = (this.#boots.get(memoryMb) ?? 0) + 1
    this.#boots.set(memoryMb, boots)
    const imaging = this.#imageable(memoryMb) && this.#options.imageInBuild !== false && boots >= 2
    return this.#boot(parts, memoryMb, instance, imaging ? nonZeroChunks(instance.memory) : undefined)
  }

  /** Boots a VM on `instance`; given the instance's `fresh` chunks, also takes its image. */
  #boot(parts: EngineParts, memoryMb: number, instance: Instantiated, fresh: Uint8Array | undefined): QuickJsSandbox {
    const quickjs = new QuickJSWASMModule(instance.emscripten, new parts.Ffi(instance.emscripten))
    const sandbox = installSandbox(quickjs.newRuntime(), memoryMb, this.#options.sandboxSource, this.#stackLimits)
    if (fresh !== undefined) {
      const taken = imageOf(sandbox, instance.memory, fresh, instance.emscripten)
      if (taken === undefined) this.#unimageable.add(memoryMb)
      else {
        this.#images.set(memoryMb, taken)
        this.#options.onImage?.(memoryMb, taken)
      }
    }
    return sandbox
  }

  #recycles(sandbox: QuickJsSandbox, memoryMb: number, instance: Instantiated): void {
    sandbox.recycle = () => {
      if (this.#options.inPlace !== false) this.#spares.set(memoryMb, instance)
    }
  }


  /**
   * Takes `image` (from {@link QuickJsEngineOptions.onImage} of an engine with the same wasm
   * module and script) as this engine's image of `memoryMb` MiB VMs, unless it has one: its
   * builds restore instead of booting. One that does not fit is given up at the first build,
   * which boots.
   */
  adoptImage(memoryMb: number, image: QuickJsImage): void {
    if (this.#imageable(memoryMb)) this.#images.set(memoryMb, image)
  }

  #imageable(memoryMb: number): boolean {
    return this.#options.images !== false && !this.#images.has(memoryMb) && !this.#unimageable.has(memoryMb)
  }

  /**
   * Makes the next build's VM of `memoryMb` MiB in steps of about `stepMs`, awaiting `pause()`
   * before each, and takes the image: a fresh instance's memory scanned in steps (the first read
   * of a page costs far more than a scan: ~14 µs a 4 KiB page here, ~57 ms for 16 MiB never
   * touched, which no build should wait for), then a VM booted on it whose image is taken with
   * every page already read (~3 ms); with an image already, restored on it. Its instance is then
   * reset in place for later VMs, never touching a page for the first time. Past its first few
   * builds on fresh instances, a {@link build} while it runs ends its pauses and waits for it.
   */
  async scanInSteps(memoryMb: number, pause: () => Promise<void>, stepMs = 2): Promise<void> {
    if (this.#options.images === false || this.#unimageable.has(memoryMb) || this.#spares.has(memoryMb) || this.#prebuilt.has(memoryMb) || this.#scanning.has(memoryMb)) return
    let hurried = false
    let wake: () => void = () => undefined
    const hurry = new Promise<void>((resolve) => {
      wake = resolve
    })
    const step = (): Promise<void> | undefined => (hurried ? undefined : Promise.race([pause(), hurry]))
    let finish!: () => void
    this.#scanning.set(memoryMb, {
      hurry: () => {
        hurried = true
        wake()
      },
      done: new Promise((resolve) => {
        finish = resolve
      }),
      builds: 0,
    })
    try {
      await step()
      const instance = await this.#instantiate(await this.#loadParts(), memoryMb, INITIAL_PAGES)
      const fresh = new Uint8Array(chunkCount(instance.memory))
      for (let from = 0; from < fresh.length; ) {
        await step()
        const startedAt = performance.now()
        // 64 chunks between clock readings: ~1 ms where their pages are read for the first time.
        while (from < fresh.length && (hurried || performance.now() - startedAt < stepMs)) {
          const to = Math.min(fresh.length, from + 64)
          flagNonZeroChunks(instance.memory, fresh, from, to)
          from = to
        }
      }
      await step()
      const image = this.#images.get(memoryMb)
      const parts = await this.#loadParts()
      // The image's boot (or, with an image, its restore) on the scanned instance: a VM ready for the next build.
      const sandbox = image === undefined ? this.#boot(parts, memoryMb, instance, fresh) : restoreSandbox(instance, new parts.Ffi(instance.emscripten), image, true, this.#stackLimits)
      if (this.#images.has(memoryMb)) this.#recycles(sandbox, memoryMb, instance)
      this.#prebuilt.set(memoryMb, sandbox)
    } catch {
      // The builds boot as without it, and report what fails.
    } finally {
      this.#scanning.delete(memoryMb)
      finish()
    }
  }

  /** Ends the pauses of the scan of `memoryMb` MiB VMs {@link scanInSteps} runs, if any: settles when it ends. */
  hurryScan(memoryMb: number): Promise<void> {
    const scan = this.#scanning.get(memoryMb)
    if (scan === undefined) return Promise.resolve()
    scan.hurry()
    return scan.done
  }

  /**
   * A fresh instance of the QuickJS wasm over a fresh memory of `pages` pages (at most
   * `memoryMb`), its C constructors run. Goes straight to the variant's emscripten
   * factory with the precompiled module (instantiated synchronously, with none of the
   * per-instance dynamic `import()` and promise hops of the library's
   * `newQuickJSWASMModuleFromVariant`).
   */
  async #instantiate(parts: EngineParts, memoryMb: number, pages: number): Promise<Instantiated> {
    const memory = new WebAssembly.Memory({ initial: pages, maximum: memoryMb * PAGES_PER_MB })
    const precompiled = parts.wasmModule ?? this.#learned
    const moduleOptions: EmscriptenModuleLoaderOptions & Record<string, unknown> = {
      wasmMemory: memory,
      print: silentPrint,
      printErr: silentPrint,
      ...(precompiled === undefined
        ? { locateFile: (path: string, directory: string) => this.#learn(`${directory}${path}`) }
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
    return { emscripten, memory }
  }
}

/**
 * The sandbox's three host functions (`post`, `timer`, `host`), in the order they are
 * registered: a restored sandbox registers the same implementations in the same order,
 * so that they get the ids the booted VM's function objects hold.
 */
function hostFunctions(box: QuickJsSandbox): readonly (readonly [string, VmFunctionImplementation<QuickJSHandle>])[] {
  const ctx = box.context
  const read = (h: QuickJSHandle | undefined): unknown => {
    if (h === undefined) return undefined
    const type = ctx.typeof(h)
    return type === 'string' ? ctx.getString(h) : type === 'number' ? ctx.getNumber(h) : undefined
  }
  return [
    [
      'post',
      (json) => {
        if (ctx.typeof(json) === 'string') box.hostPost(ctx.getString(json))
      },
    ],
    [
      'timer',
      (id, delay) => {
        const ok = ctx.typeof(id) === 'number' && ctx.typeof(delay) === 'number' && box.hostTimer(ctx.getNumber(id), ctx.getNumber(delay))
        return ok ? ctx.true : ctx.false
      },
    ],
    [
      'host',
      (op, ...args) => {
        const result = ctx.typeof(op) === 'string' ? hostOp(box, ctx.getString(op), read(args[0]), read(args[1]), read(args[2])) : undefined
        return typeof result === 'string' ? ctx.newString(result) : typeof result === 'number' ? ctx.newNumber(result) : ctx.undefined
      },
    ],
  ]
}

/** Whether the emscripten module's heap is `memory` (the variant honoured `wasmMemory`). */
function runsOn(emscripten: QuickJSEmscriptenModule, memory: WebAssembly.Memory): boolean {
  return emscripten.HEAPU8.buffer === memory.buffer
}

/** The library's pointer behind a runtime or context wrapper (a protected field: read, never changed). */
function pointerOf<T>(wrapper: QuickJSRuntime | QuickJSContext, field: 'rt' | 'ctx'): T {
  return (wrapper as unknown as Record<'rt' | 'ctx', { readonly value: T }>)[field].value
}

/**
 * The image of a just-booted sandbox (its memory at rest, on the host, before any run),
 * or `undefined` when it does not have the shape a restore rebuilds: then every build boots.
 */
function imageOf(sandbox: QuickJsSandbox, memory: WebAssembly.Memory, fresh: Uint8Array, emscripten: QuickJSEmscriptenModule): QuickJsImage | undefined {
  // A variant that ignored `wasmMemory` runs on a memory of its own: this one holds nothing of the VM.
  if (!runsOn(emscripten, memory)) return undefined
  const { deliver, fire } = sandbox
  const { owned, early } = sandbox.bootState()
  const refs = sandbox.runtime.hostRefs
  const holds = (id: number): boolean => {
    try {
      return typeof refs.get(id as Parameters<typeof refs.get>[0]) === 'function'
    } catch {
      // get() throws for an id the map does not hold.
      return false
    }
  }
  // The host functions must hold the first three ids of the runtime's map, and nothing else one (see hostFunctions).
  if (!holds(FIRST_HOST_REF_ID) || !holds(FIRST_HOST_REF_ID + 1) || !holds(FIRST_HOST_REF_ID + 2) || holds(FIRST_HOST_REF_ID + 3)) return undefined
  if (deliver === undefined || fire === undefined) return undefined
  return {
    memory: takeMemoryImage(memory, fresh),
    rt: pointerOf<JSRuntimePointer>(sandbox.runtime, 'rt'),
    ctx: pointerOf<JSContextPointer>(sandbox.context, 'ctx'),
    owned: owned as JSValuePointer[],
    deliver: deliver.value as JSValuePointer,
    fire: fire.value as JSValuePointer,
    early,
  }
}

type RuntimeCallbacks = ConstructorParameters<typeof QuickJSRuntime>[0]['callbacks']

/**
 * A sandbox from `image`: the image copied into the fresh instance's memory (its
 * constructors have run, nothing else has), then the host side the booted VM had,
 * rebuilt for the same pointers: the library's runtime and context wrappers (which
 * route the VM's calls to the host by pointer), the interrupt handler, the three host
 * functions under the ids the VM's function objects hold, and handles to the values
 * the booted sandbox kept (`deliver`, `fire`, ...). Throws if anything does not line up.
 */
function restoreSandbox(instance: Instantiated, ffi: QuickJSFFI, image: QuickJsImage, fresh: boolean, stackLimits: StackLimits): QuickJsSandbox {
  const { emscripten, memory } = instance
  if (!runsOn(emscripten, memory)) throw new Error('the instance does not run on the memory it was given')
  // A reused instance's memory was reset to the image by the caller.
  if (fresh) restoreMemoryImage(memory, image.memory)
  // Sets `emscripten.callbacks`, through which the wasm calls the host.
  const quickjs = new QuickJSWASMModule(emscripten, ffi)
  const callbacks = (quickjs as unknown as { readonly callbacks: RuntimeCallbacks }).callbacks
  const rt = new Lifetime<JSRuntimePointer>(image.rt, undefined, (pointer) => {
    ffi.QTS_FreeRuntime(pointer)
    callbacks.deleteRuntime(pointer)
  })
  const runtime = new QuickJSRuntime({ module: emscripten, ffi, rt, callbacks })
  // The image holds its booted VM's limit; an image adopted from another engine may hold another one.
  runtime.setMaxStackSize(stackLimits.run)
  const context = runtime.newContext({ contextPointer: image.ctx })
  const box = new QuickJsSandbox(runtime, context, { early: image.early })
  box.stackLimits = stackLimits
  runtime.setInterruptHandler(() => box.hostInterrupt())
  hostFunctions(box).forEach(([, fn], i) => {
    if (runtime.hostRefs.put(fn) !== FIRST_HOST_REF_ID + i) throw new Error('the restored host functions did not get their ids')
  })
  for (const pointer of image.owned) {
    const handle = box.own(new Lifetime(pointer, undefined, (value: JSValuePointer) => ffi.QTS_FreeValuePointer(image.ctx, value), runtime) as QuickJSHandle)
    if (pointer === image.deliver) box.deliver = handle
    if (pointer === image.fire) box.fire = handle
  }
  if (box.deliver === undefined || box.fire === undefined) throw new Error('the image has no deliver/fire handles')
  return box
}

/** Sets a fresh QuickJS runtime's limits, creates its context and installs the in-VM script. */
function installSandbox(runtime: QuickJSRuntime, memoryMb: number, source: string, stackLimits: StackLimits): QuickJsSandbox {
  let sandbox: QuickJsSandbox | undefined
  try {
    runtime.setMaxStackSize(stackLimits.run)
    runtime.setMemoryLimit(Math.max(8 * 1024 * 1024, memoryMb * 1024 * 1024 - MEMORY_HEADROOM_BYTES))
    runtime.setInterruptHandler(() => sandbox?.hostInterrupt() ?? false)
    const ctx = runtime.newContext()
    const box = new QuickJsSandbox(runtime, ctx)
    box.stackLimits = stackLimits
    sandbox = box
    const [post, timer, host] = hostFunctions(box).map(([name, fn]) => box.own(ctx.newFunction(name, fn)))
    // The script, then its `install(post, timer, host)`: the in-VM set-up, before any
    // program exists. The program arrives later, in the run's `start` message.
    const exports = ctx.evalCode(source, 'toolyard-sandbox.js')
    if (exports.error !== undefined) throw sandboxError(ctx, exports.error, 'the sandbox script failed')
    const install = box.own(ctx.getProp(exports.value, 'install'))
    exports.value.dispose()
    const installed = ctx.callFunction(install, ctx.undefined, post!, timer!, host!)
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
