/**
 * The inside of a Python sandbox thread: a fresh MicroPython interpreter per run, speaking
 * the QuickJS thread's protocol (src/code-runtime/sandbox-protocol.ts).
 *
 * @module
 */
import { MAX_CALL_ARG_NODES } from '../../src/code-runtime/limits.js'
import { MAX_VALUE_DEPTH } from '../../src/code-runtime/render.js'
import { BUSY_SLOT, MAX_VM_MESSAGE_CHARS, SEGMENT_SLOT, STOP_SLOT } from '../../src/code-runtime/sandbox-protocol.js'
import { scanJsonText } from '../../src/json/scan.js'
import type { SandboxThreadBoot, ThreadCommand, ThreadEvent } from '../../src/code-runtime/sandbox-protocol.js'
import { PYTHON_PRELUDE } from './prelude.js'
import { RunDriver } from './thread-runs.js'
import type { Interpreter, InterpreterRealm, VmTimer } from './thread-runs.js'
import { READING_IMPORTS } from './journal.js'
import type { WasmReading } from './journal.js'

/** The thread's channel to the host. */
export interface PythonThreadChannel {
  /** Sends a control event, or a VM message (a bare string). */
  post(message: ThreadEvent | string): void
  /** Receives the boot message, commands and VM deliveries. */
  onMessage(listener: (data: unknown) => void): void
  /**
   * Without shared memory (a page that is not cross-origin isolated), how the host meters a run:
   * told each entry into Python (`since`, epoch ms) and each exit (`since` 0), with the run's busy ms before.
   */
  busy?(since: number, busyMs: number): void
}

/** What `loadMicroPython` returns, as far as the thread uses it. */
export interface MicroPythonInstance {
  runPython(code: string): unknown
  registerJsModule(name: string, module: object): void
  readonly globals: { get(key: string): unknown }
}

/** `loadMicroPython` of `@micropython/micropython-webassembly-pyscript`. */
export type MicroPythonLoader = (options: {
  readonly heapsize: number
  readonly pystack?: number
  readonly linebuffer: boolean
  readonly stdout: (bytes: Uint8Array) => void
  readonly stderr: (bytes: Uint8Array) => void
  /** Emscripten's hook: the caller instantiates the wasm (platforms/python's loader passes it on). */
  readonly instantiateWasm?: (imports: WebAssembly.Imports, done: (instance: WebAssembly.Instance, module: WebAssembly.Module) => void) => object
  /** Emscripten's own diagnostics (each refused memory growth); default `console.error`. */
  readonly printErr?: (text: string) => void
}) => Promise<MicroPythonInstance>

/**
 * Cuts every path from a JavaScript value to code generation in this realm: MicroPython's
 * JS proxies reach `fn.constructor` (the `Function` constructor) from any function they
 * hold, and `Error.prepareStackTrace` from any error. The thread runs only our code and
 * the interpreter's glue, neither of which needs them.
 */
export function hardenRealm(): void {
  const samples = [function () {}, async function () {}, function* () {}, async function* () {}]
  for (const sample of samples) {
    Object.defineProperty(Object.getPrototypeOf(sample), 'constructor', { value: undefined, writable: false, configurable: false })
  }
  Object.defineProperty(Error, 'prepareStackTrace', { value: undefined, writable: false, configurable: false })
  for (const intrinsic of [Object.prototype, Function.prototype, Array.prototype, Promise.prototype, Error.prototype, String.prototype, Number.prototype, Boolean.prototype]) {
    Object.freeze(intrinsic)
  }
}

/** What a thread's wasm memory may hold beyond the interpreter's heap: its code, data and C stack (about 0.2 MiB measured). */
const MEMORY_SLACK_BYTES = 2 * 1024 * 1024

/**
 * Holds every wasm memory in this thread to `limit()` bytes: the published MicroPython build
 * grows its heap on demand (a split heap), so `heapsize` alone caps nothing; refused growth
 * makes the interpreter raise MemoryError in the program. Emscripten grows memory only through
 * `Memory.prototype.grow` from JavaScript, so this one hook covers every path.
 */
export function capWasmMemory(limit: () => number): void {
  const grow = WebAssembly.Memory.prototype.grow
  Object.defineProperty(WebAssembly.Memory.prototype, 'grow', {
    value: function capped(this: WebAssembly.Memory, delta: number): number {
      if (this.buffer.byteLength + delta * 65_536 > limit()) throw new RangeError('the sandbox memory cap refuses this growth')
      return grow.call(this, delta)
    },
    writable: false,
    configurable: false,
  })
}

const decoder = new TextDecoder()

/** `call` as the interpreter uses it (`f.call(self, …)` for a module's function), itself cut from every prototype. */
const safeCall = function (this: (...args: unknown[]) => unknown, self: unknown, ...args: unknown[]): unknown {
  return Reflect.apply(this, self, args)
}
Object.setPrototypeOf(safeCall, null)
Object.freeze(safeCall)
/** The one prototype of the functions an interpreter holds: `call`, and nothing that leads anywhere. */
const SAFE_FUNCTION_PROTOTYPE: object = Object.freeze(Object.assign(Object.create(null) as object, { call: safeCall }))

/**
 * A function the interpreter may hold, cut from `Function.prototype`: its JS proxy then finds no
 * `constructor`, `__proto__`, `apply` or `bind`. A thread's realm has the constructors cut anyway;
 * inline (toolyard/python) the host's realm is not ours to harden, and `fn.constructor` would be
 * its `Function`.
 */
function detach<F>(fn: F): F {
  Object.setPrototypeOf(fn, SAFE_FUNCTION_PROTOTYPE)
  return Object.freeze(fn)
}

/**
 * The program as the body of `async def __program__()`: every line indented by four
 * spaces except those that continue a string literal (a triple-quoted string's text must
 * not change). Line N of the program is line N + 1 of the result.
 */
export function wrapProgram(program: string): string {
  let out = 'async def __program__():\n    '
  let quote = ''
  let from = 0
  const n = program.length
  for (let i = 0; i < n; i++) {
    const c = program[i]!
    if (quote === '') {
      if (c === '#') {
        const eol = program.indexOf('\n', i)
        i = (eol < 0 ? n : eol) - 1
      } else if (c === '"' || c === "'") {
        quote = program.startsWith(c + c + c, i) ? c + c + c : c
        i += quote.length - 1
      } else if (c === '\n') {
        out += program.slice(from, i + 1) + '    '
        from = i + 1
      }
    } else if (c === '\\') i++
    else if (program.startsWith(quote, i)) {
      i += quote.length - 1
      quote = ''
    } else if (c === '\n' && quote.length === 1) {
      // An unterminated one-line string: leave it to the compiler to report.
      quote = ''
      out += program.slice(from, i + 1) + '    '
      from = i + 1
    }
  }
  return out + program.slice(from) + '\n    pass\n'
}

/** The loader's state on `globalThis` (one set per interpreter; inline, many share one realm). */
const REALM_GLOBALS = ['Module', 'proxy_js_ref', 'proxy_js_ref_next', 'proxy_js_ref_map', 'proxy_js_map', 'proxy_js_existing', 'pyProxyFinalizationRegistry'] as const

/** Captures the loader's globals as the last load left them; entries swap them in and out. */
function captureRealm(): InterpreterRealm {
  const realm = globalThis as unknown as Record<string, unknown>
  const own = REALM_GLOBALS.map((key) => realm[key])
  const saved: unknown[][] = []
  return {
    enter: () => {
      saved.push(REALM_GLOBALS.map((key) => realm[key]))
      REALM_GLOBALS.forEach((key, i) => (realm[key] = own[i]))
    },
    leave: () => {
      REALM_GLOBALS.forEach((key, i) => (own[i] = realm[key]))
      const before = saved.pop() ?? []
      REALM_GLOBALS.forEach((key, i) => (realm[key] = before[i]))
    },
  }
}

/**
 * How every interpreter is instantiated: the metered wasm (scripts/build-micropython-bounded.mjs)
 * with its budget check, its readings routed to the run's journal and its own memory capped,
 * touching no global of the realm (inline, the realm is the host's).
 */
interface MeteredWasm {
  readonly module: WebAssembly.Module
  readonly check: () => void
  readonly read: (reading: WasmReading, live: () => number) => number
  readonly limit: () => number
}

function instantiateMetered(wasm: MeteredWasm): NonNullable<Parameters<MicroPythonLoader>[0]['instantiateWasm']> {
  return (imports, done) => {
    const env = imports.env as Record<string, unknown>
    for (const [name, reading] of Object.entries(READING_IMPORTS)) {
      const live = env[name]
      if (typeof live === 'function') env[name] = () => wasm.read(reading, live as () => number)
    }
    env.toolyard_budget_check = wasm.check
    // Synchronous: a failure rejects the load (the loader catches a throw here, not a rejected promise).
    const instance = new WebAssembly.Instance(wasm.module, imports)
    const memory = instance.exports.memory
    if (memory instanceof WebAssembly.Memory) {
      const grow = WebAssembly.Memory.prototype.grow
      // This memory's own `grow` (emscripten grows it only from JavaScript): the cap without touching the prototype.
      Object.defineProperty(memory, 'grow', {
        value: (delta: number): number => {
          if (memory.buffer.byteLength + delta * 65_536 > wasm.limit()) throw new RangeError('the sandbox memory cap refuses this growth')
          return grow.call(memory, delta)
        },
      })
    }
    done(instance, wasm.module)
    return {}
  }
}

/** What building an interpreter needs from its thread. */
interface BuildContext {
  readonly load: MicroPythonLoader
  /** True when the realm is the host's (toolyard/python). */
  readonly inline: boolean
  /** The metered wasm every interpreter is instantiated from. */
  readonly wasm: () => Promise<MeteredWasm>
  readonly post: PythonThreadChannel['post']
  readonly memoryMb: () => number
  readonly inPython: (vm: Interpreter, action: () => void) => void
  /** Arms timer `id` (ids count from 1 in each interpreter, so a replay sees the same ones). */
  readonly setTimer: (vm: Interpreter, id: number, timer: VmTimer) => void
  /** A message the program sent, screened: to the host, or to the replay's check while resuming. */
  readonly output: (vm: Interpreter, text: string) => void
}

/** Sends one captured line of stdout/stderr as a log message, within the log cap. */
function emitLine(post: PythonThreadChannel['post'], vm: Interpreter, bytes: number[], level: 'log' | 'error'): void {
  const text = decoder.decode(new Uint8Array(bytes))
  bytes.length = 0
  if (vm.run === 0 || vm.logBytes > vm.maxLogBytes) return
  vm.logBytes += text.length + 1
  // A replay's lines are in the host's logs already.
  if (!vm.replaying) post(JSON.stringify({ type: 'log', source: 'console', level, text }))
}
/** An interpreter's byte sink for stdout or stderr: whole lines become log messages. */
function writer(post: PythonThreadChannel['post'], get: () => Interpreter | undefined, pick: (vm: Interpreter) => number[], level: 'log' | 'error'): (data: Uint8Array) => void {
  return (data) => {
    const vm = get()
    if (vm === undefined) return
    const buffer = pick(vm)
    for (const byte of data) {
      if (byte === 10) emitLine(post, vm, buffer, level)
      // A line longer than the log cap is cut here: the rest of it could only be dropped by the host.
      else if (buffer.length <= vm.maxLogBytes) buffer.push(byte)
    }
  }
}

/** Loads a fresh interpreter and runs the prelude in it. */
async function buildInterpreter(context: BuildContext): Promise<Interpreter> {
  const { load, post } = context
  let self: Interpreter | undefined
  const { inline } = context
  const wasm = await context.wasm()
  const mp = await load({
    heapsize: context.memoryMb() * 1024 * 1024,
    linebuffer: false,
    stdout: writer(post, () => self, (vm) => vm.stdout, 'log'),
    stderr: writer(post, () => self, (vm) => vm.stderr, 'error'),
    instantiateWasm: instantiateMetered(wasm),
    // Inline, the host's console is not ours: emscripten's lines on refused growth are dropped (the program sees MemoryError).
    ...(inline ? { printErr: () => undefined } : {}),
  })
  // Captured before anything else can load (this continuation runs right after the load's last step).
  const realm = inline ? captureRealm() : undefined
  // A thread's realm is hardened already (hardenRealm); inline, each function is cut off itself.
  const detached = inline ? detach : <F,>(fn: F): F => fn
  const timers = new Map<number, VmTimer>()
  let nextTimer = 1
  // The interpreter's `js` module: only what its asyncio needs, answering with numbers, never a host object.
  const safeGlobal = Object.freeze(Object.assign(Object.create(null) as object, {
    setTimeout: detached((callback: unknown, ms: unknown) => {
      const id = nextTimer++
      if (typeof callback !== 'function' || self === undefined) return id
      const delay = typeof ms === 'number' && ms > 0 ? Math.min(ms, 2 ** 31 - 1) : 0
      context.setTimer(self, id, { callback: callback as () => void, delay })
      return id
    }),
    clearTimeout: detached((id: unknown) => {
      if (typeof id !== 'number') return
      const timer = timers.get(id)
      if (timer === undefined) return
      clearTimeout(timer.handle)
      if (timer.delay === 0 && self !== undefined) self.zeroTimers--
      timers.delete(id)
    }),
  }))
  const refs = (globalThis as unknown as { proxy_js_ref: unknown[] }).proxy_js_ref
  refs[0] = safeGlobal
  const host = Object.freeze(Object.assign(Object.create(null) as object, {
    // Returns '' once sent, or why a call was refused (the prelude raises it in the program).
    post: detached((text: unknown): string => {
      const vm = self
      if (vm === undefined || vm.run === 0 || typeof text !== 'string') return ''
      const refusal = screen(post, vm, text)
      if (refusal === undefined) {
        context.output(vm, text)
        return ''
      }
      if (refusal.call) return refusal.message
      if (refusal.message !== '') post({ type: 'failed', run: vm.run, kind: 'exception', message: refusal.message })
      return ''
    }),
  }))
  realm?.enter()
  try {
    mp.registerJsModule('_tyhost', host)
    mp.runPython(PYTHON_PRELUDE)
    const start = mp.globals.get('_ty_start') as (text: string) => void
    const deliver = mp.globals.get('_ty_deliver') as (text: string) => void
    self = { mp, start, deliver, run: 0, logBytes: 0, maxLogBytes: 65_536, timers, zeroTimers: 0, timeOrigin: 0, replaying: false, stdout: [], stderr: [], dead: false, ...(realm === undefined ? {} : { realm }) }
  } finally {
    realm?.leave()
  }
  return self
}

/**
 * Holds what the program sends to the TypeScript sandbox's bounds before it leaves the thread
 * (charged to the run's compute: it runs inside the program's call): the prelude keeps them, and
 * this holds them for a program that calls `_post` itself with text of its own making.
 */
function screen(post: PythonThreadChannel['post'], vm: Interpreter, text: string): { readonly call: boolean; readonly message: string } | undefined {
  if (text.length > MAX_VM_MESSAGE_CHARS) {
    return { call: false, message: `a message from the program took ${Math.ceil(text.length / 1024 / 1024)} MiB; at most ${MAX_VM_MESSAGE_CHARS / 1024 / 1024} MiB go to the host at once` }
  }
  // A linear, non-recursive pass before any JSON walk: text nested millions deep (8 MiB of `[`)
  // overflows JSON.stringify's recursion, which ended the thread (worker-exit) instead of refusing.
  // Every message the prelude writes nests at most one level deeper than its value.
  if (scanJsonText(text, 0, text.length, Number.MAX_SAFE_INTEGER, MAX_VALUE_DEPTH + 1).depth > MAX_VALUE_DEPTH + 1) {
    const nests = `they nest deeper than ${MAX_VALUE_DEPTH} levels; flatten them`
    return text.startsWith('{"type":"call"') ? { call: true, message: nests } : { call: false, message: `the program sent the host a message that ${nests.slice(5)}` }
  }
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch {
    return { call: false, message: 'the program sent the host a message that is not JSON' }
  }
  const message = typeof data === 'object' && data !== null ? (data as { type?: unknown; args?: unknown; text?: unknown }) : {}
  if (message.type === 'call') {
    if (message.args === undefined) return undefined
    const args = JSON.stringify(message.args)
    if (args.length + 8 > MAX_VM_MESSAGE_CHARS) {
      return { call: true, message: `the arguments take ${Math.ceil(args.length / 1024 / 1024)} MiB of JSON; at most ${MAX_VM_MESSAGE_CHARS / 1024 / 1024} MiB go to the host in one call` }
    }
    const scan = scanJsonText(args, 0, args.length, MAX_CALL_ARG_NODES, MAX_VALUE_DEPTH)
    if (scan.nodes > MAX_CALL_ARG_NODES) {
      return { call: true, message: `they hold more than ${MAX_CALL_ARG_NODES} JSON values (object keys count); send fewer values per call, or data as one string` }
    }
    if (scan.depth > MAX_VALUE_DEPTH) return { call: true, message: `they nest deeper than ${MAX_VALUE_DEPTH} levels; flatten them` }
  } else if (message.type === 'log') {
    // A backstop (dropped, as the host drops lines past the cap): the prelude stops at the cap itself.
    if (vm.logBytes > 2 * vm.maxLogBytes + 4096) return { call: false, message: '' }
    vm.logBytes += typeof message.text === 'string' ? message.text.length + 1 : text.length
  } else if (message.type === 'done') flush(post, vm)
  return undefined
}

/** Sends what is left of an unfinished line. */
function flush(post: PythonThreadChannel['post'], vm: Interpreter): void {
  if (vm.stdout.length > 0) emitLine(post, vm, vm.stdout, 'log')
  if (vm.stderr.length > 0) emitLine(post, vm, vm.stderr, 'error')
}

/** One interpreter loads at a time in a shared realm: the loader leaves its state on `globalThis` for {@link captureRealm}. */
let inlineLoads: Promise<unknown> = Promise.resolve()

/**
 * Serves one host over `channel`: boot, then each run in a fresh interpreter of the metered wasm
 * (its budget check stops a hot loop in place; a thread is terminated only if it does not let go).
 * The wasm is the boot's `wasmModule`, else `locateWasm()` (compiled once per thread). `inline`:
 * the thread shares its realm with the host (toolyard/python): the boot must carry the module, and
 * no global of the realm is patched.
 */
export function servePythonThread(channel: PythonThreadChannel, load: MicroPythonLoader, inline = false, locateWasm?: () => Promise<WebAssembly.Module>): void {
  let booted = false
  let memoryMb = 64
  /** The run whose start waits for an interpreter (deliveries for it are held until it has one). */
  let starting: { readonly id: number; readonly held: string[] } | undefined
  let ready: Interpreter | undefined
  let building: Promise<Interpreter | undefined> | undefined
  /** A run the host ended while its interpreter was still being built. */
  let endedEarly = 0
  let wasmModule: WebAssembly.Module | undefined
  let locating: Promise<WebAssembly.Module> | undefined
  const limit = () => memoryMb * 1024 * 1024 + MEMORY_SLACK_BYTES
  if (!inline) capWasmMemory(limit)
  const runs = new RunDriver((message) => channel.post(message), () => memoryMb, channel.busy?.bind(channel))
  const metered = async (): Promise<MeteredWasm> => {
    if (wasmModule === undefined) {
      if (inline || locateWasm === undefined) throw new Error('no wasm module was given at boot')
      // A failed look-up is tried again by the next build.
      locating ??= locateWasm().finally(() => (locating = undefined))
      wasmModule = await locating
    }
    return { module: wasmModule, check: () => runs.check(), read: (reading, live) => runs.read(reading, live), limit }
  }

  const context: BuildContext = {
    load,
    post: (message) => channel.post(message),
    memoryMb: () => memoryMb,
    inPython: (vm, action) => runs.inPython(vm, action),
    setTimer: (vm, id, timer) => runs.setTimer(vm, id, timer),
    output: (vm, text) => runs.output(vm, text),
    inline,
    wasm: metered,
  }
  const build = (): Promise<Interpreter> => {
    if (!inline) return buildInterpreter(context)
    const built = inlineLoads.then(() => buildInterpreter(context))
    inlineLoads = built.catch(() => undefined)
    return built
  }

  const prebuild = (): Promise<Interpreter | undefined> => {
    if (!booted || ready !== undefined) return Promise.resolve(ready)
    building ??= build().then(
      (vm) => {
        building = undefined
        ready = vm
        return vm
      },
      () => {
        building = undefined
        return undefined
      },
    )
    return building
  }

  /** An interpreter for run `id`: the one built while idle, or a new one; `undefined` once the failure is reported. */
  const acquire = async (id: number): Promise<Interpreter | undefined> => {
    if (runs.busy !== undefined) {
      runs.busy[BUSY_SLOT] = 0
      runs.busy[SEGMENT_SLOT] = 0
    }
    if (ready === undefined) await prebuild()
    const vm = ready
    ready = undefined
    if (vm !== undefined) return vm
    try {
      return await build()
    } catch (error) {
      channel.post({ type: 'failed', run: id, kind: 'worker-exit', message: `the Python interpreter did not start: ${error instanceof Error ? error.message : String(error)}` })
      return undefined
    }
  }

  const startRun = async (command: ThreadCommand & { type: 'run' }): Promise<void> => {
    const id = command.run
    const held: string[] = []
    starting = { id, held }
    const vm = await acquire(id)
    starting = undefined
    if (vm === undefined) return
    if (endedEarly === id) {
      ready = vm
      channel.post({ type: 'ready' })
      return
    }
    const first = command.replay?.journal.inputs[0]
    let startText = typeof first === 'string' ? first : ''
    let start: { maxLogBytes?: unknown; program?: unknown } = {}
    try {
      // A resumed run's start is its journal's first input, its program wrapped when it first ran.
      start = JSON.parse(command.replay === undefined ? command.start : startText) as typeof start
      if (command.replay === undefined) startText = JSON.stringify({ ...start, program: wrapProgram(typeof start.program === 'string' ? start.program : '') })
    } catch {
      channel.post({ type: 'failed', run: id, kind: 'worker-exit', message: 'the run command was malformed' })
      return
    }
    if (typeof start.maxLogBytes === 'number') vm.maxLogBytes = start.maxLogBytes
    await runs.start({
      id,
      vm,
      computeMs: command.computeMs,
      startText,
      held,
      journal: command.journal !== false,
      ...(command.replay === undefined ? {} : { replay: command.replay, ...(command.replayMs === undefined ? {} : { replayMs: command.replayMs }) }),
    })
  }

  const end = (id: number): void => {
    // The stop slot is read by the budget check only while run `id` is current: cleared, a resumed run of the same id starts unstopped.
    if (runs.stop !== undefined) Atomics.compareExchange(runs.stop, STOP_SLOT, id, 0)
    const run = runs.current
    if (run === undefined || run.id !== id) {
      endedEarly = id
      channel.post({ type: 'ended', run: id })
      return
    }
    runs.current = undefined
    run.over = true
    run.vm.run = 0
    runs.release(run.vm)
    channel.post({ type: 'ended', run: id })
    setTimeout(() => {
      if (runs.current === undefined) void prebuild().then(() => channel.post({ type: 'ready' }))
    }, 0)
  }

  channel.onMessage((data) => {
    try {
      if (typeof data === 'string') {
        const run = runs.current
        if (run === undefined) starting?.held.push(data)
        else runs.deliver(run, data)
        return
      }
      const message = data as { type?: unknown }
      if (message.type === 'boot' && !booted) {
        const boot = data as SandboxThreadBoot
        booted = true
        memoryMb = boot.memoryMb
        wasmModule = boot.wasmModule
        if (boot.signals !== undefined) {
          runs.busy = new Float64Array(boot.signals)
          runs.stop = new Int32Array(boot.signals)
        }
        void prebuild().then(() => channel.post({ type: 'ready' }))
      } else if (message.type === 'run' && booted && runs.current === undefined && starting === undefined) void startRun(data as ThreadCommand & { type: 'run' })
      else if (message.type === 'end') end((data as { run: number }).run)
      else if (message.type === 'park') {
        const command = data as { run: number; afterMs: number; maxChars: number }
        runs.park(command.run, command.afterMs, command.maxChars)
      }
    } catch (error) {
      const run = runs.current
      if (run !== undefined) channel.post({ type: 'failed', run: run.id, kind: 'worker-exit', message: `the sandbox thread failed: ${error instanceof Error ? error.message : String(error)}` })
    }
  })
}
