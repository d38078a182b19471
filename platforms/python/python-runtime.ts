/**
 * `createPythonRuntime(options)`: the Python sandbox inline, on the thread of its host.
 * @module
 */
import type { CodeRunRequest, CodeRuntime, CodeRuntimeCapabilities } from '../../src/code-runtime/contract.js'
import { createSandboxRuntimeOn } from '../../src/code-runtime/sandbox-runtime.js'
import type { SandboxPlatform, SandboxRuntimeLoad, SandboxRuntimeOptions, SandboxThread } from '../../src/code-runtime/sandbox-runtime.js'
import type { CodeRunLimits } from '../../src/code-runtime/limits.js'
import { servePythonThread } from '../../engine/python/thread-server.js'
import { STEPS_PER_MS } from '../../engine/python/thread-runs.js'
import { loadMicroPython } from './_micropython-bounded.mjs'

export { STEPS_PER_MS }

/** Options of {@link createPythonRuntime}: the sandbox's, with `wasmModule` the metered MicroPython. */
export interface PythonRuntimeOptions extends Omit<SandboxRuntimeOptions, 'wasmModule' | 'prespawn'> {
  /** Interpreters built at construction, ahead of the first run. Default 0 (workerd allows no timer in a module's global scope; call `warm()` instead). */
  readonly prespawn?: number
  /**
   * The compiled `_micropython-bounded.wasm` shipped beside this module (built from the pinned
   * MicroPython package by scripts/build-micropython-bounded.mjs), or a loader of it. REQUIRED in
   * Cloudflare workerd, which compiles wasm only from modules: import the file (a `CompiledWasm`
   * rule) and pass it. Default: the file beside this module, read once (Node, browsers).
   */
  readonly wasmModule?: WebAssembly.Module | (() => Promise<WebAssembly.Module>)
}

/** The inline Python {@link CodeRuntime}, with the pool's controls. */
export interface PythonCodeRuntime extends CodeRuntime {
  readonly language: 'python'
  readonly isolation: 'micropython-wasm'
  /** The validated limits every run uses. */
  readonly limits: CodeRunLimits
  /** Resolves once an interpreter is built for the next run (`ctx.waitUntil(runtime.warm())` in a Worker). */
  warm(): Promise<void>
  /** Runs, queue and interpreters right now. */
  load(): SandboxRuntimeLoad
}

/** The metered wasm beside this module: read from disk where `fetch` cannot (Node's `file:`). */
async function loadDefaultWasm(): Promise<WebAssembly.Module> {
  // Resolved here, not at import: a bundle may have no `import.meta.url` (it must pass `wasmModule`).
  const WASM_URL = new URL('./_micropython-bounded.wasm', import.meta.url)
  if (WASM_URL.protocol === 'file:') {
    // Not an `import()`: no bundler resolves it, and no edge module walker meets a computed one. Only hosts with files reach this line.
    const host = (globalThis as { process?: { getBuiltinModule?(id: string): unknown } }).process
    const fs = host?.getBuiltinModule?.('node:fs/promises') as { readFile(url: URL): Promise<Uint8Array<ArrayBuffer>> } | undefined
    if (fs === undefined) throw new Error(`createPythonRuntime: this host cannot read ${WASM_URL.href}: pass options.wasmModule`)
    return WebAssembly.compile(await fs.readFile(WASM_URL))
  }
  return WebAssembly.compileStreaming(fetch(WASM_URL))
}

/**
 * A "thread" on the host's own thread: the Python thread server behind a channel whose messages
 * are delivered as microtasks (never within the sender's call), as a worker's would be later.
 */
function spawnInline(): SandboxThread {
  const toThread: Array<(data: unknown) => void> = []
  const toHost: Array<(data: unknown) => void> = []
  const exits: Array<(reason: string) => void> = []
  let alive = true
  const send = (listeners: Array<(data: unknown) => void>, data: unknown) => {
    queueMicrotask(() => {
      if (!alive) return
      for (const listener of listeners) listener(data)
    })
  }
  servePythonThread(
    {
      post: (message) => send(toHost, message),
      onMessage: (listener) => toThread.push(listener),
    },
    loadMicroPython,
    true,
  )
  return {
    postMessage: (message) => {
      if (!alive) throw new Error('the interpreter is gone')
      send(toThread, message)
    },
    onMessage: (listener) => toHost.push(listener),
    onExit: (listener) => {
      if (alive) exits.push(listener)
      else listener('ended')
    },
    terminate: () => {
      // Nothing runs between two entries: dropping the channel ends it (its interpreter is collected).
      if (!alive) return
      alive = false
      for (const listener of exits.splice(0)) listener('ended')
    },
  }
}

/**
 * Creates the Python Code Mode runtime inline (`isolation: 'micropython-wasm'`, `language:
 * 'python'`): MicroPython in wasm on the host's thread, a fresh interpreter per run, with the
 * Python sandbox's contract (budgets, caps, approvals, parking and replay). Nothing can
 * terminate an inline run, so the interpreter stops itself: its wasm counts loop steps and
 * checks the run's compute budget every {@link STEPS_PER_MS}-calibrated 10 000 steps, by the clock
 * and by steps (workerd's clock stands still during synchronous code). Validates `options` at
 * once (`INVALID_OPTIONS`).
 *
 * @example
 * ```ts
 * // workerd / wrangler (a CompiledWasm module rule for the import):
 * import wasmModule from 'toolyard/python/micropython.wasm'
 * const runtime = createPythonRuntime({ wasmModule, computeMs: 2_000 })
 * ```
 */
export function createPythonRuntime(options: PythonRuntimeOptions = {}): PythonCodeRuntime {
  const platform: SandboxPlatform = {
    factory: 'createPythonRuntime',
    language: 'python',
    sandboxSource: '',
    spawn: spawnInline,
    loadWasm: loadDefaultWasm,
    // One realm: the "shared" buffer is an ordinary one the thread server reads in place.
    sharedMemory: typeof SharedArrayBuffer === 'function',
    // One thread does all the work: concurrency is for runs that wait on tools.
    machine: { cores: 1, memoryMb: undefined },
  }
  // No interpreter built at construction by default: workerd refuses timers in a module's global scope.
  const sandbox = createSandboxRuntimeOn(platform, { prespawn: 0, ...options } as SandboxRuntimeOptions)
  // The check sees an abort only when it runs; it runs every few hundred microseconds of compute.
  const capabilities: CodeRuntimeCapabilities = Object.freeze({ ...sandbox.capabilities, abortsBusyPrograms: false })
  return Object.freeze({
    language: 'python',
    isolation: 'micropython-wasm',
    capabilities,
    limits: sandbox.limits,
    run: (request: CodeRunRequest) => sandbox.run(request),
    warm: () => sandbox.warm(),
    load: () => sandbox.load(),
    dispose: () => sandbox.dispose(),
  })
}
