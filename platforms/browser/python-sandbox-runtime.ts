/**
 * The browser Python sandbox: the pooled sandbox runtime on MicroPython module Web Workers,
 * reached as `createSandboxRuntime({ language: 'python' })` from `toolyard/browser`.
 *
 * @module
 */
import { epochNow } from '../../src/code-runtime/sandbox-protocol.js'
import { createSandboxRuntimeOn } from '../../src/code-runtime/sandbox-runtime.js'
import type { SandboxPlatform, SandboxRuntime, SandboxRuntimeOptions, SandboxThread } from '../../src/code-runtime/sandbox-runtime.js'
import { ToolError } from '../../src/errors.js'

/** Options of the browser Python sandbox: the shared ones, plus where its worker script is. */
export interface BrowserPythonSandboxOptions extends SandboxRuntimeOptions {
  /**
   * The worker script: `platforms/browser/python-worker-entry.ts`, bundled on its own with
   * MicroPython's `micropython.wasm` beside it. Default `new URL('./python-worker-entry.js', import.meta.url)`.
   */
  readonly workerUrl?: string | URL
  /** `'python'`. */
  readonly language?: 'typescript' | 'python'
}

/** The machine as the browser hints it: cores and memory. */
export interface BrowserMachine {
  readonly cores: number
  readonly memoryMb: number | undefined
}

/**
 * A worker metered by messages, where no shared memory carries its busy time: the worker says
 * when it enters and leaves Python, and a run inside Python past its compute budget fails here
 * as the thread would fail it (MicroPython cannot be interrupted; the pool then ends the worker).
 */
function meteredByMessages(thread: SandboxThread): SandboxThread {
  const listeners: Array<(data: unknown) => void> = []
  let run = 0
  let computeMs = 0
  let timer: ReturnType<typeof setTimeout> | undefined
  const disarm = () => {
    clearTimeout(timer)
    timer = undefined
  }
  const meter = (since: number, busyMs: number) => {
    disarm()
    if (run === 0 || since <= 0) return
    const id = run
    timer = setTimeout(() => {
      timer = undefined
      if (run !== id) return
      const failed = { type: 'failed', run: id, kind: 'timeout', message: `compute budget of ${computeMs} ms exhausted` }
      for (const listener of listeners) listener(failed)
    }, Math.max(0, computeMs - busyMs - (epochNow() - since)))
  }
  thread.onMessage((data) => {
    const message = typeof data === 'object' && data !== null ? (data as { type?: unknown; since?: unknown; busyMs?: unknown }) : {}
    if (message.type !== 'busy') {
      for (const listener of listeners) listener(data)
    } else if (typeof message.since === 'number' && typeof message.busyMs === 'number') meter(message.since, message.busyMs)
  })
  thread.onExit(disarm)
  return {
    postMessage: (message) => {
      if (typeof message === 'object' && message.type === 'run') {
        run = message.run
        computeMs = message.computeMs
      } else if (typeof message === 'object' && message.type === 'end') {
        run = 0
        disarm()
      }
      thread.postMessage(message)
    },
    onMessage: (listener) => {
      listeners.push(listener)
    },
    onExit: (listener) => thread.onExit(listener),
    terminate: () => {
      disarm()
      return thread.terminate()
    },
  }
}

/**
 * Creates the Python Code Mode sandbox for browsers: MicroPython (wasm) in a pool of module
 * Web Workers, with the TypeScript sandbox's budgets, caps and admission control; a hot loop
 * is ended by terminating its worker. `spawn` starts one worker from a URL (the browser
 * sandbox's own). Validates `options` at once (`INVALID_OPTIONS`).
 */
export function createPythonSandboxRuntime(
  options: BrowserPythonSandboxOptions | undefined,
  spawn: (url: string | URL, name: string) => SandboxThread,
  machine: BrowserMachine,
): SandboxRuntime {
  const factory = 'createSandboxRuntime'
  const raw = (options ?? {}) as { workerUrl?: unknown }
  const workerUrl = raw.workerUrl ?? new URL('./python-worker-entry.js', import.meta.url)
  if (typeof workerUrl !== 'string' && !(workerUrl instanceof URL)) {
    throw new ToolError('INVALID_OPTIONS', `${factory}: options.workerUrl must be a string or a URL`)
  }
  const sharedMemory = typeof SharedArrayBuffer === 'function' && (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true
  const platform: SandboxPlatform = {
    factory,
    language: 'python',
    // The prelude is part of the worker's bundle; the boot message carries nothing for it.
    sandboxSource: '',
    spawn: () => (sharedMemory ? spawn(workerUrl, 'toolyard-python-sandbox') : meteredByMessages(spawn(workerUrl, 'toolyard-python-sandbox'))),
    sharedMemory,
    machine,
    extraOptions: ['workerUrl', 'language'],
  }
  return createSandboxRuntimeOn(platform, options)
}
