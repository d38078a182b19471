/**
 * The browser sandbox thread: a module Web Worker that runs QuickJS for the sandbox
 * runtime. It only connects its own message channel to the platform-neutral thread
 * server: no program code ever runs in this worker's realm (programs run in the VM),
 * so the channel is trusted both ways.
 *
 * Bundle it as its own file next to the page's script as `sandbox-worker-entry.js` (the
 * runtime's default `workerUrl`), with QuickJS's `emscripten-module.wasm` beside it
 * unless you pass `wasmModule` (scripts/build-demo.mjs does both).
 *
 * @module
 */
import { QuickJSFFI } from '@jitl/quickjs-wasmfile-release-sync/ffi'
import moduleLoader from '@jitl/quickjs-wasmfile-release-sync/emscripten-module'
import type { QuickJSSyncVariant } from 'quickjs-emscripten-core'
import { serveSandboxThread } from '../../engine/quickjs/thread-server.js'

/** The worker's global scope, as far as this file uses it (the project's lib is DOM, not WebWorker). */
interface WorkerScope {
  postMessage(message: unknown): void
  addEventListener(type: 'message', listener: (event: MessageEvent) => void): void
}

const scope = globalThis as unknown as WorkerScope
// The variant's parts, imported statically: its own `importFFI`/`importModuleLoader` are
// dynamic imports, which some dev servers rewrite for the page (vitest's browser mode
// does) and which then fail inside a worker. Statically imported, every bundler and
// server leaves them alone.
const variant = {
  type: 'sync',
  importFFI: () => Promise.resolve(QuickJSFFI),
  importModuleLoader: () => Promise.resolve(moduleLoader),
} as unknown as QuickJSSyncVariant

serveSandboxThread(
  {
    post: (message) => scope.postMessage(message),
    onMessage: (listener) => scope.addEventListener('message', (event) => listener(event.data)),
  },
  variant,
)
