/**
 * The inside of a Python sandbox thread: a fresh MicroPython interpreter per run, speaking
 * the QuickJS thread's protocol (src/code-runtime/sandbox-protocol.ts).
 *
 * @module
 */
import { MAX_CALL_ARG_NODES } from '../../src/code-runtime/limits.js'
import { MAX_VALUE_DEPTH } from '../../src/code-runtime/render.js'
import { BUSY_SLOT, epochNow, MAX_VM_MESSAGE_CHARS, SEGMENT_SLOT } from '../../src/code-runtime/sandbox-protocol.js'
import { scanJsonText } from '../../src/json/scan.js'
import type { SandboxThreadBoot, ThreadCommand, ThreadEvent } from '../../src/code-runtime/sandbox-protocol.js'
import { PYTHON_PRELUDE } from './prelude.js'

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

/** One interpreter with its run's state. */
interface Interpreter {
  readonly mp: MicroPythonInstance
  readonly start: (text: string) => void
  readonly deliver: (text: string) => void
  /** The run it serves (0 while idle), where its output goes. */
  run: number
  logBytes: number
  maxLogBytes: number
  readonly timers: Map<number, ReturnType<typeof setTimeout> | undefined>
  readonly stdout: number[]
  readonly stderr: number[]
  dead: boolean
}

const decoder = new TextDecoder()

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

/** What building an interpreter needs from its thread. */
interface BuildContext {
  readonly load: MicroPythonLoader
  readonly post: PythonThreadChannel['post']
  readonly memoryMb: () => number
  readonly inPython: (vm: Interpreter, action: () => void) => void
  readonly timerId: () => number
}

/** Sends one captured line of stdout/stderr as a log message, within the log cap. */
function emitLine(post: PythonThreadChannel['post'], vm: Interpreter, bytes: number[], level: 'log' | 'error'): void {
  const text = decoder.decode(new Uint8Array(bytes))
  bytes.length = 0
  if (vm.run === 0 || vm.logBytes > vm.maxLogBytes) return
  vm.logBytes += text.length + 1
  post(JSON.stringify({ type: 'log', source: 'console', level, text }))
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
  const mp = await load({
    heapsize: context.memoryMb() * 1024 * 1024,
    linebuffer: false,
    stdout: writer(post, () => self, (vm) => vm.stdout, 'log'),
    stderr: writer(post, () => self, (vm) => vm.stderr, 'error'),
  })
  const timers = new Map<number, ReturnType<typeof setTimeout> | undefined>()
  // The interpreter's `js` module: only what its asyncio needs, answering with numbers, never a host object.
  const safeGlobal = Object.freeze(Object.assign(Object.create(null) as object, {
    setTimeout: (callback: unknown, ms: unknown) => {
      const id = context.timerId()
      if (typeof callback !== 'function') return id
      const delay = typeof ms === 'number' && ms > 0 ? Math.min(ms, 2 ** 31 - 1) : 0
      const fire = () => {
        if (!timers.delete(id)) return
        if (self !== undefined) context.inPython(self, () => (callback as () => void)())
      }
      // asyncio schedules its next step with a 0 ms timer: a platform timer would add its 1 ms floor to every call.
      if (delay === 0) {
        timers.set(id, undefined)
        queueMicrotask(fire)
      } else timers.set(id, setTimeout(fire, delay))
      return id
    },
    clearTimeout: (id: unknown) => {
      if (typeof id !== 'number') return
      clearTimeout(timers.get(id))
      timers.delete(id)
    },
  }))
  const refs = (globalThis as unknown as { proxy_js_ref: unknown[] }).proxy_js_ref
  refs[0] = safeGlobal
  const host = Object.freeze(Object.assign(Object.create(null) as object, {
    // Returns '' once sent, or why a call was refused (the prelude raises it in the program).
    post: (text: unknown): string => {
      const vm = self
      if (vm === undefined || vm.run === 0 || typeof text !== 'string') return ''
      const refusal = screen(post, vm, text)
      if (refusal === undefined) {
        post(text)
        return ''
      }
      if (refusal.call) return refusal.message
      if (refusal.message !== '') post({ type: 'failed', run: vm.run, kind: 'exception', message: refusal.message })
      return ''
    },
  }))
  mp.registerJsModule('_tyhost', host)
  mp.runPython(PYTHON_PRELUDE)
  const start = mp.globals.get('_ty_start') as (text: string) => void
  const deliver = mp.globals.get('_ty_deliver') as (text: string) => void
  self = { mp, start, deliver, run: 0, logBytes: 0, maxLogBytes: 65_536, timers, stdout: [], stderr: [], dead: false }
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

/** Serves one host over `channel`: boot, then each run in a fresh interpreter. */
export function servePythonThread(channel: PythonThreadChannel, load: MicroPythonLoader): void {
  let booted = false
  let memoryMb = 64
  let busy: Float64Array | undefined
  let current: { readonly id: number; readonly vm: Interpreter; busyMs: number; readonly computeMs: number } | undefined
  let ready: Interpreter | undefined
  let building: Promise<Interpreter | undefined> | undefined
  let nextTimer = 1
  /** A run the host ended while its interpreter was still being built. */
  let endedEarly = 0
  capWasmMemory(() => memoryMb * 1024 * 1024 + MEMORY_SLACK_BYTES)

  const enter = (): number => {
    const at = epochNow()
    if (busy !== undefined) busy[SEGMENT_SLOT] = at
    else channel.busy?.(at, current?.busyMs ?? 0)
    return at
  }
  const leave = (at: number): void => {
    const run = current
    if (run === undefined) return
    run.busyMs += epochNow() - at
    if (busy !== undefined) {
      busy[BUSY_SLOT] = run.busyMs
      busy[SEGMENT_SLOT] = 0
    } else channel.busy?.(0, run.busyMs)
    if (run.busyMs >= run.computeMs) channel.post({ type: 'failed', run: run.id, kind: 'timeout', message: `compute budget of ${run.computeMs} ms exhausted` })
  }

  /** Runs one entry into Python for the current run; a crash of the interpreter ends the run. */
  const inPython = (vm: Interpreter, action: () => void): void => {
    if (vm.dead || current?.vm !== vm) return
    const at = enter()
    try {
      action()
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      vm.dead = true
      const isMemory = /MemoryError|memory access out of bounds|Cannot enlarge memory/.test(message)
      channel.post({ type: 'failed', run: vm.run, kind: 'worker-exit', message: isMemory ? `out of memory: the program exceeded the ${memoryMb} MB memory of its MicroPython sandbox` : `the Python interpreter failed: ${message.slice(0, 2000)}` })
    } finally {
      leave(at)
    }
  }

  const context: BuildContext = { load, post: (message) => channel.post(message), memoryMb: () => memoryMb, inPython, timerId: () => nextTimer++ }
  const build = (): Promise<Interpreter> => buildInterpreter(context)

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

  const startRun = async (command: ThreadCommand & { type: 'run' }): Promise<void> => {
    const id = command.run
    if (command.replay !== undefined) {
      channel.post({ type: 'failed', run: id, kind: 'exception', message: 'a Python run cannot be resumed from a parked state' })
      return
    }
    if (busy !== undefined) {
      busy[BUSY_SLOT] = 0
      busy[SEGMENT_SLOT] = 0
    }
    if (ready === undefined) await prebuild()
    let vm = ready
    ready = undefined
    if (vm === undefined) {
      try {
        vm = await build()
      } catch (error) {
        channel.post({ type: 'failed', run: id, kind: 'worker-exit', message: `the Python interpreter did not start: ${error instanceof Error ? error.message : String(error)}` })
        return
      }
    }
    if (endedEarly === id) {
      ready = vm
      channel.post({ type: 'ready' })
      return
    }
    let start: { maxLogBytes?: unknown; program?: unknown }
    let startText: string
    try {
      start = JSON.parse(command.start) as { maxLogBytes?: unknown; program?: unknown }
      startText = JSON.stringify({ ...start, program: wrapProgram(typeof start.program === 'string' ? start.program : '') })
    } catch {
      channel.post({ type: 'failed', run: id, kind: 'worker-exit', message: 'the run command was malformed' })
      return
    }
    vm.run = id
    if (typeof start.maxLogBytes === 'number') vm.maxLogBytes = start.maxLogBytes
    current = { id, vm, busyMs: 0, computeMs: command.computeMs }
    const started = vm
    inPython(started, () => started.start(startText))
  }

  const end = (id: number): void => {
    const run = current
    if (run === undefined || run.id !== id) {
      endedEarly = id
      channel.post({ type: 'ended', run: id })
      return
    }
    current = undefined
    run.vm.dead = true
    run.vm.run = 0
    for (const timer of run.vm.timers.values()) clearTimeout(timer)
    run.vm.timers.clear()
    channel.post({ type: 'ended', run: id })
    setTimeout(() => {
      if (current === undefined) void prebuild().then(() => channel.post({ type: 'ready' }))
    }, 0)
  }

  channel.onMessage((data) => {
    try {
      if (typeof data === 'string') {
        const run = current
        if (run !== undefined) inPython(run.vm, () => run.vm.deliver(data))
        return
      }
      const message = data as { type?: unknown }
      if (message.type === 'boot' && !booted) {
        const boot = data as SandboxThreadBoot
        booted = true
        memoryMb = boot.memoryMb
        if (boot.signals !== undefined) busy = new Float64Array(boot.signals)
        void prebuild().then(() => channel.post({ type: 'ready' }))
      } else if (message.type === 'run' && booted && current === undefined) void startRun(data as ThreadCommand & { type: 'run' })
      else if (message.type === 'end') end((data as { run: number }).run)
      // No journal: a Python run does not park; it keeps its thread while a person decides.
      else if (message.type === 'park') channel.post({ type: 'park-refused', run: (data as { run: number }).run })
    } catch (error) {
      if (current !== undefined) channel.post({ type: 'failed', run: current.id, kind: 'worker-exit', message: `the sandbox thread failed: ${error instanceof Error ? error.message : String(error)}` })
    }
  })
}
