/**
 * `createSandboxRuntime` for Node: the shared sandbox runtime on `worker_threads`. This file
 * only starts threads, sizes the machine and finds the QuickJS wasm.
 *
 * @module
 */
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { availableParallelism, totalmem } from 'node:os'
import { createSandboxRuntimeOn } from '../../src/code-runtime/sandbox-runtime.js'
import { slicedDelivery, whenAllDrained } from '../../src/code-runtime/sliced-delivery.js'
import type { SlicedListener } from '../../src/code-runtime/sliced-delivery.js'
import { spawnCappedWorker } from './_capped-worker.js'
import { createPythonSandboxRuntime } from './python-sandbox-runtime.js'
import { ToolError } from '../../src/errors.js'
import { SANDBOX_SOURCE } from '../../engine/quickjs/_sandbox-source.js'
import type { SandboxPlatform, SandboxRuntime, SandboxRuntimeOptions, SandboxThread } from '../../src/code-runtime/sandbox-runtime.js'
import type { SandboxThreadBoot } from '../../src/code-runtime/sandbox-protocol.js'

export type { SandboxRuntime, SandboxRuntimeLoad, SandboxRuntimeOptions } from '../../src/code-runtime/sandbox-runtime.js'

/** The thread entry, generated next to this file (and copied next to its build). */
const THREAD_URL = new URL('./_sandbox-thread.cjs', import.meta.url)

/**
 * The memory the process may use, in MiB, from which the default concurrency is sized: the
 * machine's, or less where a container limits it (cgroup `memory.max`, which `totalmem()`
 * does not see: a 1 GiB container on a 64 GiB host would otherwise admit runs for 16 GiB).
 * `constrained` is `process.constrainedMemory()`: 0, absent, or at least the machine's
 * when there is no limit (cgroup v1 says "unlimited" with a number near 2^63).
 */
export function usableMemoryMb(total: number, constrained: number | undefined): number {
  const bytes = constrained !== undefined && constrained > 0 && constrained < total ? constrained : total
  return Math.floor(bytes / (1024 * 1024))
}

/**
 * A thread's own JavaScript heap cap (`resourceLimits.maxOldGenerationSizeMb`): the VM's memory is
 * wasm memory, outside it. V8 derives the heap's first full-collection threshold from this cap and
 * counts the wasm memory a thread allocates against it: under a 64 MiB cap, instantiating the first
 * VM (16 MiB of wasm memory, the image's copy) crossed it and ran a full mark-compact in 1 to 14 of
 * every 16-25 fresh threads (7-33 ms pause, the longer under load; 128 MiB still did), on the path of
 * a fresh runtime's first run; at 256 MiB none did (issue 34, test/unit/sandbox/boot-gc.test.ts).
 * The heap a thread uses stays ~6 MiB at boot, ~28 MiB after 400 runs that log, at either cap.
 */
const THREAD_HEAP_MB = 256

/**
 * Per compiled wasm module, per thread file and memory size: the memory image a thread took of its
 * booted VM, with the script it booted. A thread started later from the same file is given it at
 * boot, and restores its first VM from it instead of booting one (the script's evaluation is most of
 * a thread's start-up). Everything that goes into an image is in its key: the wasm, the thread's own
 * code (its engine sets the stack limit and installs the script: another file, say another version's,
 * may lay the VM out otherwise), the memory size (the allocator limit is in the image) and the script.
 */
const images = new WeakMap<WebAssembly.Module, Map<string, { readonly source: string; readonly image: unknown }>>()

/** The key of {@link images}' inner map: the thread file and the memory size. */
function imageKey(threadUrl: URL, memoryMb: number): string {
  return `${memoryMb} ${threadUrl.href}`
}

/**
 * @internal Whether the process keeps an image for threads of `threadUrl` with `memoryMb` MiB VMs
 * (of the process's compiled QuickJS wasm): for tests.
 */
export async function keepsImage(threadUrl: URL, memoryMb: number): Promise<boolean> {
  return images.get(await loadWasm())?.has(imageKey(threadUrl, memoryMb)) ?? false
}

/**
 * `image` with its bytes in a shared buffer of its own: no two threads (and not the host and the
 * thread that took it) hold the same bytes, so a thread whose realm a program escaped into cannot
 * rewrite the VMs other threads restore. A copy is ~0.1 ms; posting shared bytes ~0.01 ms.
 * `undefined` for anything not shaped like an image.
 *
 * @internal Exported for its test.
 */
export function ownBytes(image: unknown): unknown {
  const bytes = (image as { memory?: { bytes?: unknown } } | null)?.memory?.bytes
  if (!(bytes instanceof Uint8Array)) return undefined
  const own = new Uint8Array(new SharedArrayBuffer(bytes.length))
  own.set(bytes)
  const { memory } = image as { memory: object }
  return { ...(image as object), memory: { ...memory, bytes: own } }
}

/** The boot message with a copy of the image kept for its module, thread file, memory size and script, or asking for one. */
function withImage(message: unknown, threadUrl: URL): unknown {
  const boot = message as Partial<SandboxThreadBoot>
  if (boot.type !== 'boot' || boot.wasmModule === undefined || boot.memoryMb === undefined) return message
  const kept = images.get(boot.wasmModule)?.get(imageKey(threadUrl, boot.memoryMb))
  return kept === undefined || kept.source !== boot.sandboxSource ? { ...boot, wantsImage: true } : { ...boot, image: ownBytes(kept.image) }
}

/**
 * How long ending a thread waits for it to say `imaging` (it may be building its next VM first),
 * then for the image it was asked for: a fresh memory's scan and a boot, ~60 ms of CPU idle, 0.4-2 s
 * measured with the machine's two cores under load ~13. Only while the process keeps no image.
 */
const IMAGE_ACK_MS = 1_000
const IMAGE_AT_EXIT_MS = 5_000
/** The ends waiting for an image (any thread's, any key: each checks again). */
const imageWaiters = new Set<() => void>()

/** Whether a thread booted with `boot` was asked for the image (it goes to the boot message) and the process still keeps none. */
function wantsImage(boot: Partial<SandboxThreadBoot>, threadUrl: URL): boolean {
  return boot.type === 'boot' && boot.wasmModule !== undefined && boot.memoryMb !== undefined && typeof boot.sandboxSource === 'string' && images.get(boot.wasmModule)?.get(imageKey(threadUrl, boot.memoryMb)) === undefined
}

let emscriptenModule: string | undefined

/**
 * The QuickJS emscripten glue's file, resolved here once a process and handed to each thread
 * (`workerData`): a thread that resolves the package name itself goes through the package's
 * `exports` map, whose resolver Node loads fresh in every thread (3.5-15 ms wall a thread, against
 * ~1 ms to require the same file by its path; issue 34). Undefined where it cannot be resolved:
 * the thread then resolves it itself.
 */
function emscriptenModuleFile(): string | undefined {
  try {
    emscriptenModule ??= require.resolve('@jitl/quickjs-wasmfile-release-sync/emscripten-module')
  } catch {
    // The thread's own resolution reports it.
  }
  return emscriptenModule
}

function spawnThread(url: URL): SandboxThread {
  const glue = emscriptenModuleFile()
  const worker = spawnCappedWorker(url, {
    ...(glue === undefined ? {} : { workerData: { emscriptenModule: glue } }),
    env: {},
    argv: [],
    execArgv: [],
    stdin: false,
    // The thread runs no program code in its own realm, so it writes nothing; a stray
    // write must not reach the host's stdout either.
    stdout: true,
    stderr: true,
    resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB },
    name: 'toolyard-sandbox',
  })
  // An idle thread never keeps the process alive; a running one does (setActive).
  worker.unref()
  let exited = false
  const exitListeners: Array<(reason: string) => void> = []
  let lastError = ''
  worker.on('error', (error) => {
    lastError = error instanceof Error ? error.message : String(error)
  })
  // A flood of calls reaches the host in slices, between which its event loop runs; the
  // thread's exit is told after the messages it sent before it.
  const deliveries: SlicedListener[] = []
  worker.once('exit', (code) => {
    exited = true
    const reason = `exit code ${code}${lastError === '' ? '' : ` (${lastError})`}`
    whenAllDrained(deliveries, () => {
      for (const listener of exitListeners.splice(0)) listener(reason)
    })
  })
  let booted: Partial<SandboxThreadBoot> = {}
  /** Set while `terminate` waits for the thread's answers to `{ type: 'image' }`. */
  let answered: ((type: unknown) => void) | undefined
  worker.on('message', (data: { type?: unknown; memoryMb?: unknown; image?: unknown }) => {
    answered?.(data?.type)
    if (data?.type !== 'image' || booted.wasmModule === undefined || typeof data.memoryMb !== 'number' || data.memoryMb !== booted.memoryMb || typeof booted.sandboxSource !== 'string') return
    const image = ownBytes(data.image)
    if (image === undefined) return
    const kept = images.get(booted.wasmModule) ?? new Map()
    images.set(booted.wasmModule, kept)
    const key = imageKey(url, data.memoryMb)
    if (!kept.has(key)) kept.set(key, { source: booted.sandboxSource, image })
    // Threads ending while they finish the same image need not: the process keeps one now.
    for (const waiting of [...imageWaiters]) waiting()
  })
  /**
   * Asks the thread for its image; settles when it is kept (this thread's or another's), the thread
   * has none to give or exits, or it has not said `imaging` within {@link IMAGE_ACK_MS} (wedged in
   * a run) or sent the image within {@link IMAGE_AT_EXIT_MS}.
   */
  const imageBeforeEnd = (): Promise<void> => {
    let kept = (): void => undefined
    return new Promise<void>((resolve) => {
      let timer = setTimeout(resolve, IMAGE_ACK_MS)
      answered = (type) => {
        if (type !== 'imaging' && type !== 'image' && type !== 'no-image' && type !== 'exit') return
        clearTimeout(timer)
        if (type === 'imaging') timer = setTimeout(resolve, IMAGE_AT_EXIT_MS)
        else resolve()
      }
      kept = () => answered?.('image')
      imageWaiters.add(kept)
      exitListeners.push(() => answered?.('exit'))
      worker.postMessage({ type: 'image' })
    }).finally(() => imageWaiters.delete(kept))
  }
  return {
    postMessage: (message) => {
      if ((message as { type?: unknown }).type === 'boot') booted = message as SandboxThreadBoot
      worker.postMessage(withImage(message, url))
    },
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
      if (exited) return
      // Asked for the image at boot, and none is kept yet: the thread finishes its scan before it
      // goes, or a process whose runtimes each serve one run boots every VM.
      if (wantsImage(booted, url)) await imageBeforeEnd()
      if (!exited) await worker.terminate()
    },
    setActive: (active) => (active ? worker.ref() : worker.unref()),
  }
}

const require = createRequire(import.meta.url)

let compiled: Promise<WebAssembly.Module> | undefined

/**
 * The QuickJS wasm, read and compiled once per process (off the event loop:
 * `WebAssembly.compile`) and shared by every runtime's threads; a failed load is retried.
 */
function loadWasm(): Promise<WebAssembly.Module> {
  if (compiled !== undefined) return compiled
  const attempt = readFile(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')).then((bytes) => WebAssembly.compile(bytes))
  compiled = attempt
  attempt.catch(() => {
    if (compiled === attempt) compiled = undefined
  })
  return attempt
}

/** @internal The Node platform with threads from `threadUrl` (a bench compares two thread bundles with it). */
export function nodeSandboxPlatform(threadUrl: URL = THREAD_URL): SandboxPlatform {
  return { ...platform, spawn: () => spawnThread(threadUrl) }
}

const platform: SandboxPlatform = {
  factory: 'createSandboxRuntime',
  sandboxSource: SANDBOX_SOURCE,
  spawn: () => spawnThread(THREAD_URL),
  loadWasm,
  sharedMemory: true,
  machine: { cores: availableParallelism(), memoryMb: usableMemoryMb(totalmem(), process.constrainedMemory?.()) },
  unrefTimer: (timer) => {
    timer.unref()
  },
}

/**
 * Creates the default Code Mode sandbox for Node: QuickJS (wasm) in a pool of
 * pre-spawned `worker_threads`. A program's only authority is its bindings and a fixed
 * list of web-standard globals (docs/runtimes.md): no `process`, `require`, module
 * loader, filesystem, network, storage, timers beyond its own, nor a way to reach
 * another context. The host's event loop never waits for a program; an abort, the
 * compute budget or the wall ceiling ends a run at once, even mid-loop.
 *
 * At most `maxConcurrentRuns` programs run at once and `maxQueuedRuns` wait; beyond
 * that a run is refused at once with `error.kind: 'overloaded'` (`OVERLOADED` through
 * `run_code`, HTTP 503). Validates `options` at once (`INVALID_OPTIONS`).
 *
 * @example
 * ```ts
 * import { createToolRuntime } from 'toolyard'
 * import { createSandboxRuntime } from 'toolyard/node'
 *
 * const codeRuntime = createSandboxRuntime({ computeMs: 5_000, maxWallMs: 60_000 })
 * const runtime = createToolRuntime({ mode: 'code', codeRuntime })
 * // …
 * await codeRuntime.dispose()
 * ```
 */
export function createSandboxRuntime(options?: SandboxRuntimeOptions & { readonly language?: 'typescript' | 'python' }): SandboxRuntime {
  if (options?.language === 'python') return createPythonSandboxRuntime(options)
  if (options?.language !== undefined) {
    if (options.language !== 'typescript') throw new ToolError('INVALID_OPTIONS', `createSandboxRuntime: options.language must be 'typescript' or 'python'`)
    const { language: _language, ...rest } = options
    return createSandboxRuntimeOn(platform, rest)
  }
  return createSandboxRuntimeOn(platform, options)
}
