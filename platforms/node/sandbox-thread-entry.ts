/**
 * The Node sandbox thread's entry (bundled into `_sandbox-thread.cjs` by
 * scripts/gen-bootstrap.mjs): connects the parent port to the thread server.
 *
 * @module
 */
import { createRequire } from 'node:module'
import { parentPort, workerData } from 'node:worker_threads'
import type { QuickJSSyncVariant } from 'quickjs-emscripten-core'
import { serveSandboxThread } from '../../engine/quickjs/thread-server.js'
import type { Stripper } from '../../engine/quickjs/thread-server.js'

/** The emscripten glue's file as the host resolved it (platforms/node/sandbox-runtime.ts), if it did. */
const glue = (workerData as { emscriptenModule?: unknown } | null)?.emscriptenModule

/**
 * The release-sync variant, from its CommonJS files: the thread loads no ES module, so Node never
 * starts its ES module loader there (~20-30 ms of a thread's start, issue 34). The glue by the path
 * the host resolved: resolving the package name here loads the `exports` map resolver (3.5-15 ms).
 */
const variant: QuickJSSyncVariant = {
  type: 'sync',
  importFFI: () => Promise.resolve(require('@jitl/quickjs-wasmfile-release-sync/ffi').QuickJSFFI),
  importModuleLoader: () => Promise.resolve(typeof glue === 'string' ? require(glue) : require('@jitl/quickjs-wasmfile-release-sync/emscripten-module')),
}
const port = parentPort
if (port !== null) {
  serveSandboxThread(
    {
      post: (message) => port.postMessage(message),
      onMessage: (listener) => port.on('message', listener),
    },
    variant,
    // The stripper (sucrase, 700 KB of code) is its own generated file, read on first need: a thread that runs only plain programs never parses it.
    () => (createRequire(__filename)('./_sandbox-strip.cjs') as { stripTypeScript: Stripper }).stripTypeScript,
  )
}
