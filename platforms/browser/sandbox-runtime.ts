/**
 * `createSandboxRuntime` for browsers: the shared sandbox runtime on module Web Workers. This
 * file only starts workers and sizes the machine.
 *
 * @module
 */
import { createSandboxRuntimeOn } from '../../src/code-runtime/sandbox-runtime.js'
import { slicedDelivery, whenAllDrained, yieldHostTurnsWith } from '../../src/code-runtime/sliced-delivery.js'
import type { SlicedListener } from '../../src/code-runtime/sliced-delivery.js'
import { SANDBOX_SOURCE } from '../../engine/quickjs/_sandbox-source.js'
import type { SandboxPlatform, SandboxRuntime, SandboxRuntimeOptions, SandboxThread } from '../../src/code-runtime/sandbox-runtime.js'
import { ToolError } from '../../src/errors.js'
import { batchedSender, eachMessage, PAGE_AT_ONCE_MESSAGES } from './message-batch.js'
import { channelTurn } from './next-turn.js'
import { createPythonSandboxRuntime } from './python-sandbox-runtime.js'

export type { SandboxRuntime, SandboxRuntimeLoad } from '../../src/code-runtime/sandbox-runtime.js'

/** Options of the browser {@link createSandboxRuntime}: the shared ones, plus where the worker script is. */
export interface BrowserSandboxRuntimeOptions extends SandboxRuntimeOptions {
  /**
   * The worker script: `platforms/browser/sandbox-worker-entry.ts`, bundled on its own.
   * Default `new URL('./sandbox-worker-entry.js', import.meta.url)`: right under Vite
   * (which maps it to the `.ts` source), for the compiled package, and for a bundle that
   * writes the entry as `sandbox-worker-entry.js` next to the page's script.
   */
  readonly workerUrl?: string | URL
  /**
   * The language of its programs: `typescript` (QuickJS, the default) or `python` (MicroPython,
   * whose worker is `python-worker-entry.js` with `micropython.wasm` beside it: docs/python.md).
   */
  readonly language?: 'typescript' | 'python'
}

const FACTORY = 'createSandboxRuntime'

function spawnWorker(url: string | URL, name = 'toolyard-sandbox'): SandboxThread {
  const worker = new Worker(url, { type: 'module', name })
  let dead = false
  const exitListeners: Array<(reason: string) => void> = []
  // A flood of calls reaches the page in slices, between which it renders and handles
  // input; the worker's death is told after the messages it sent before it.
  const deliveries: SlicedListener[] = []
  const die = (reason: string) => {
    if (dead) return
    dead = true
    whenAllDrained(deliveries, () => {
      for (const listener of exitListeners.splice(0)) listener(reason)
    })
  }
  worker.addEventListener('error', (event: ErrorEvent) => {
    event.preventDefault()
    die(event.message !== '' && event.message !== undefined ? event.message : 'its script did not load or threw at start-up')
  })
  worker.addEventListener('messageerror', () => die('a message from it could not be read'))
  // A burst goes both ways in batches (message-batch.ts): one task of the page per batch, not per call.
  // The page's turn ends with a macrotask (a message's, not a timer's): a slice's replies come from many microtasks.
  // Its first reply of a turn goes at once (a lone call waits for nothing), the rest of the turn's in batches.
  const post = batchedSender((message) => worker.postMessage(message), channelTurn, PAGE_AT_ONCE_MESSAGES)
  return {
    postMessage: post,
    onMessage: (listener) => {
      const deliver = slicedDelivery(listener, channelTurn)
      deliveries.push(deliver)
      worker.addEventListener('message', (event: MessageEvent) => eachMessage(event.data, deliver))
    },
    onExit: (listener) => {
      if (dead) listener('exited')
      else exitListeners.push(listener)
    },
    terminate: () => {
      worker.terminate()
      die('terminated')
    },
  }
}

interface NavigatorHints {
  readonly hardwareConcurrency?: number
  readonly deviceMemory?: number
}

/**
 * Creates the default Code Mode sandbox for browsers: QuickJS (wasm) in a pool of
 * pre-spawned module Web Workers, with the same options and behaviour as the Node one
 * (`toolyard/node`). A program's only authority is its bindings and a fixed list of
 * web-standard globals (docs/runtimes.md): no `fetch`, no storage, no DOM, no page
 * origin. The page never waits for a program; an abort ends a run at once (through
 * shared memory when the page is cross-origin isolated, else by terminating and
 * replacing the worker). `language: 'python'` runs MicroPython instead (docs/python.md).
 * Validates `options` at once (`INVALID_OPTIONS`).
 *
 * @example
 * ```ts
 * import { createSandboxRuntime } from 'toolyard/browser'
 * const codeRuntime = createSandboxRuntime({ computeMs: 5_000 })
 * const runtime = createToolRuntime({ mode: 'code', codeRuntime })
 * ```
 */
export function createSandboxRuntime(options?: BrowserSandboxRuntimeOptions): SandboxRuntime {
  // The page's bridge yields to it between calls of a flood: through a message, which a hidden tab does not throttle.
  yieldHostTurnsWith(channelTurn)
  const hints = (globalThis as { navigator?: NavigatorHints }).navigator ?? {}
  const machine = {
    cores: typeof hints.hardwareConcurrency === 'number' && hints.hardwareConcurrency > 0 ? hints.hardwareConcurrency : 2,
    memoryMb: typeof hints.deviceMemory === 'number' && hints.deviceMemory > 0 ? hints.deviceMemory * 1024 : undefined,
  }
  const language = (options as { language?: unknown } | undefined)?.language
  if (language === 'python') return createPythonSandboxRuntime(options, spawnWorker, machine)
  if (language !== undefined && language !== 'typescript') throw new ToolError('INVALID_OPTIONS', `${FACTORY}: options.language must be 'typescript' or 'python'`)
  const raw = (options ?? {}) as { workerUrl?: unknown }
  const workerUrl = raw.workerUrl ?? new URL('./sandbox-worker-entry.js', import.meta.url)
  if (typeof workerUrl !== 'string' && !(workerUrl instanceof URL)) {
    throw new ToolError('INVALID_OPTIONS', `${FACTORY}: options.workerUrl must be a string or a URL`)
  }
  const platform: SandboxPlatform = {
    factory: FACTORY,
    sandboxSource: SANDBOX_SOURCE,
    spawn: () => spawnWorker(workerUrl),
    sharedMemory: typeof SharedArrayBuffer === 'function' && (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true,
    machine,
    extraOptions: ['workerUrl', 'language'],
  }
  return createSandboxRuntimeOn(platform, options)
}
