/**
 * The Node sandbox thread's entry (bundled into `_sandbox-thread.mjs` by
 * scripts/gen-bootstrap.mjs): connects the parent port to the thread server.
 *
 * @module
 */
import { createRequire } from 'node:module'
import { parentPort } from 'node:worker_threads'
import defaultVariant from '@jitl/quickjs-wasmfile-release-sync'
import type { QuickJSSyncVariant } from 'quickjs-emscripten-core'
import { serveSandboxThread } from '../../engine/quickjs/thread-server.js'
import type { Stripper } from '../../engine/quickjs/thread-server.js'

// The package's typings describe its CommonJS shape; under ESM its default export is the variant itself.
const variant = defaultVariant as unknown as QuickJSSyncVariant
const port = parentPort
if (port !== null) {
  serveSandboxThread(
    {
      post: (message) => port.postMessage(message),
      onMessage: (listener) => port.on('message', listener),
    },
    variant,
    // The stripper (sucrase, 700 KB of code) is its own generated file, read on first need: a thread that runs only plain programs never parses it.
    () => (createRequire(import.meta.url)('./_sandbox-strip.cjs') as { stripTypeScript: Stripper }).stripTypeScript,
  )
}
