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
import { batchedSender, eachMessage } from './message-batch.js'

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

// A program's burst of calls reaches the page in batches (message-batch.ts): one task of the
// page's event loop per batch, so its timers, input and frames are not queued behind 10,000.
const post = batchedSender((message) => scope.postMessage(message))

serveSandboxThread(
  {
    post,
    onMessage: (listener) => scope.addEventListener('message', (event) => eachMessage(event.data, listener)),
  },
  variant,
  () => stripTypeScript,
)
