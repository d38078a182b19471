/**
 * The Python sandbox for Node: the pooled sandbox runtime on MicroPython threads, reached as
 * `createSandboxRuntime({ language: 'python' })` from `toolyard/node`.
 *
 * @module
 */
import { readFile } from 'node:fs/promises'
import { availableParallelism, totalmem } from 'node:os'
import { createSandboxRuntimeOn } from '../../src/code-runtime/sandbox-runtime.js'
import { slicedDelivery, whenAllDrained } from '../../src/code-runtime/sliced-delivery.js'
import type { SlicedListener } from '../../src/code-runtime/sliced-delivery.js'
import { spawnCappedWorker } from './_capped-worker.js'
import type { SandboxPlatform, SandboxRuntime, SandboxRuntimeOptions, SandboxThread } from '../../src/code-runtime/sandbox-runtime.js'

/** The thread entry, generated next to this file (and copied next to its build). */
const THREAD_URL = new URL('./_python-thread.mjs', import.meta.url)

/** The metered MicroPython (toolyard/python's, scripts/build-micropython-bounded.mjs): compiled once, sent to every thread at boot. */
const WASM_URL = new URL('../python/_micropython-bounded.wasm', import.meta.url)

/** A thread's own JavaScript heap: the interpreter's heap is wasm memory, outside it. */
const THREAD_HEAP_MB = 64

function spawnPythonThread(): SandboxThread {
  const worker = spawnCappedWorker(THREAD_URL, {
    env: {},
    argv: [],
    execArgv: [],
    stdin: false,
    stdout: true,
    stderr: true,
    resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB },
    name: 'toolyard-python-sandbox',
  })
  worker.unref()
  let exited = false
  const exitListeners: Array<(reason: string) => void> = []
  let lastError = ''
  worker.on('error', (error) => {
    lastError = error instanceof Error ? error.message : String(error)
  })
  const deliveries: SlicedListener[] = []
  worker.once('exit', (code) => {
    exited = true
    const reason = `exit code ${code}${lastError === '' ? '' : ` (${lastError})`}`
    whenAllDrained(deliveries, () => {
      for (const listener of exitListeners.splice(0)) listener(reason)
    })
  })
  return {
    postMessage: (message) => worker.postMessage(message),
    onMessage: (listener) => {
      const deliver = slicedDelivery(listener)
      deliveries.push(deliver)
      worker.on('message', deliver)
    },
    onExit: (listener) => {
      if (exited) listener('exited')
      else exitListeners.push(listener)
    },
    terminate: async () => {
      if (!exited) await worker.terminate()
    },
    setActive: (active) => (active ? worker.ref() : worker.unref()),
  }
}

/** The Node Python platform of the shared sandbox core (tests wrap its `spawn` to count threads). */
export const PYTHON_PLATFORM: SandboxPlatform = {
  factory: 'createSandboxRuntime',
  language: 'python',
  // The prelude is part of the thread's bundle; the boot message carries nothing for it.
  sandboxSource: '',
  spawn: spawnPythonThread,
  loadWasm: async () => WebAssembly.compile(await readFile(WASM_URL)),
  sharedMemory: true,
  machine: { cores: availableParallelism(), memoryMb: Math.floor(totalmem() / (1024 * 1024)) },
  extraOptions: ['language'],
  unrefTimer: (timer) => {
    timer.unref()
  },
}

/**
 * Creates the Python Code Mode sandbox on Node: MicroPython (wasm) in a pool of
 * `worker_threads`, a fresh interpreter per run, with the TypeScript sandbox's budgets,
 * caps and admission control. A run waiting only for people parks (its thread goes back to the
 * pool) and resumes by replaying its journal in a fresh interpreter, as TypeScript runs do.
 * Validates `options` at once (`INVALID_OPTIONS`).
 */
export function createPythonSandboxRuntime(options?: SandboxRuntimeOptions & { readonly language?: 'typescript' | 'python' }): SandboxRuntime {
  return createSandboxRuntimeOn(PYTHON_PLATFORM, options)
}
