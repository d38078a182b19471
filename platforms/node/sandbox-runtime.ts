/**
 * `createSandboxRuntime` for Node: the shared sandbox runtime on `worker_threads`. This file
 * only starts threads, sizes the machine and finds the QuickJS wasm.
 *
 * @module
 */
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { availableParallelism, totalmem } from 'node:os'
import { fileURLToPath } from 'node:url'
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

/** What a thread's loader puts before and after the thread file's source: Node's own CommonJS wrapper. */
export const THREAD_SCRIPT_HEAD = '(function (exports, require, module, __filename, __dirname) {'
export const THREAD_SCRIPT_TAIL = '\n})'

/**
 * A sandbox thread's entry (run with `eval: true`): compiles the thread file (`workerData.thread`)
 * as Node's CommonJS loader would, but through `vm.Script` with the V8 code cache the host kept for
 * that file (`workerData.codeCache`), and answers the host's one `{ type: 'code-cache' }` with the
 * cache of what the thread has compiled so far. Node 20's CommonJS loader takes no code cache;
 * compiling the 128 KB file, and its functions as they are first called, is ~2-3 ms of each
 * thread's CPU (issue 34). A cache V8 rejects (another file, another V8) is ignored by V8.
 */
const THREAD_LOADER = `"use strict";
{
  const { parentPort, workerData } = require('node:worker_threads')
  const { readFileSync } = require('node:fs')
  const { dirname } = require('node:path')
  const { Script } = require('node:vm')
  const { createRequire } = require('node:module')
  const file = workerData.thread
  const cachedData = workerData.codeCache
  const script = new Script(${JSON.stringify(THREAD_SCRIPT_HEAD)} + readFileSync(file, 'utf8') + ${JSON.stringify(THREAD_SCRIPT_TAIL)}, cachedData === undefined ? { filename: file } : { filename: file, cachedData })
  parentPort.on('message', (message) => {
    if (message !== null && typeof message === 'object' && message.type === 'code-cache') parentPort.postMessage({ type: 'code-cache', bytes: script.createCachedData() })
  })
  const threadModule = { exports: {}, filename: file, id: file, loaded: false }
  script.runInThisContext().call(threadModule.exports, threadModule.exports, createRequire(file), threadModule, file, dirname(file))
  threadModule.loaded = true
}
`

/** The largest code cache the host keeps (the thread file's is ~100-140 KB). */
const MAX_CODE_CACHE_BYTES = 4 * 1024 * 1024

/**
 * Per thread file (href): the V8 code cache of it, handed to every thread started later. Only
 * a thread that has been sent no program is asked for it, once: V8 takes a code cache as code,
 * so one from a thread a program may have reached would run in every later thread. Asked at
 * its first `ready` and answered before the thread reads any later message, so the answer is
 * the file's own code, compiled by it, as its boot (with the process's image) ran it.
 */
const codeCaches = new Map<string, Uint8Array>()
/** Thread files whose cache a thread is being asked for now. */
const codeCacheAsks = new Set<string>()

/** @internal The code cache the process keeps for threads of `threadUrl` (a copy), if any: for tests. */
export function keptCodeCache(threadUrl: URL): Uint8Array | undefined {
  const kept = codeCaches.get(threadUrl.href)
  return kept === undefined ? undefined : kept.slice()
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
  const codeCache = codeCaches.get(url.href)
  const worker = spawnCappedWorker(THREAD_LOADER, {
    eval: true,
    workerData: { thread: fileURLToPath(url), ...(glue === undefined ? {} : { emscriptenModule: glue }), ...(codeCache === undefined ? {} : { codeCache }) },
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
  let booted: Partial<SandboxThreadBoot> = {}
  /** Whether the thread was given the process's image at boot: its boot ran the restore, which later threads run too. */
  let restored = false
  /** Whether a run (a program) or a VM delivery has been sent to the thread: from then on it is never asked for a code cache. */
  let programSent = false
  /** The code cache ask: none yet, sent (its first answer is taken), or done. */
  let cacheAsk: 'none' | 'sent' | 'done' = 'none'
  const endCacheAsk = (): void => {
    if (cacheAsk === 'sent') codeCacheAsks.delete(url.href)
    cacheAsk = 'done'
  }
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
    endCacheAsk()
    const reason = `exit code ${code}${lastError === '' ? '' : ` (${lastError})`}`
    whenAllDrained(deliveries, () => {
      for (const listener of exitListeners.splice(0)) listener(reason)
    })
  })
  /** Set while `terminate` waits for the thread's answers to `{ type: 'image' }`. */
  let answered: ((type: unknown) => void) | undefined
  worker.on('message', (data: { type?: unknown; memoryMb?: unknown; image?: unknown; bytes?: unknown }) => {
    answered?.(data?.type)
    if (data?.type === 'ready' && cacheAsk === 'none') {
      // Its first `ready`: asked now, before any program is sent to it, or never.
      if (!programSent && restored && !codeCaches.has(url.href) && !codeCacheAsks.has(url.href)) {
        codeCacheAsks.add(url.href)
        cacheAsk = 'sent'
        worker.postMessage({ type: 'code-cache' })
      } else cacheAsk = 'done'
      return
    }
    if (data?.type === 'code-cache') {
      // Only the first answer to the ask: any other is a thread's word after a program may have run.
      if (cacheAsk === 'sent' && data.bytes instanceof Uint8Array && data.bytes.length > 0 && data.bytes.length <= MAX_CODE_CACHE_BYTES) codeCaches.set(url.href, data.bytes.slice())
      endCacheAsk()
      return
    }
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
      const type = (message as { type?: unknown }).type
      if (type === 'boot') booted = message as SandboxThreadBoot
      else programSent = true
      const sent = withImage(message, url)
      if (type === 'boot' && (sent as { image?: unknown }).image !== undefined) restored = true
      worker.postMessage(sent)
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
