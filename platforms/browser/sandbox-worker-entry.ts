/**
 * The browser sandbox thread: a module Web Worker serving the thread server. Bundle it as
 * `sandbox-worker-entry.js` beside the page, with QuickJS's wasm (scripts/build-demo.mjs).
 *
 * @module
 */
import { QuickJSFFI } from '@jitl/quickjs-wasmfile-release-sync/ffi'
import moduleLoader from '@jitl/quickjs-wasmfile-release-sync/emscripten-module'
import type { QuickJSSyncVariant } from 'quickjs-emscripten-core'
import { serveSandboxThread } from '../../engine/quickjs/thread-server.js'
import { stripTypeScript } from '../../src/code-runtime/strip.js'

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
  () => stripTypeScript,
)
