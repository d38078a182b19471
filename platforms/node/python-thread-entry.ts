/**
 * The Node Python sandbox thread's entry (bundled into `_python-thread.mjs` by
 * scripts/gen-bootstrap.mjs): hardens the realm, then serves the parent port.
 *
 * @module
 */
import { readFile } from 'node:fs/promises'
import { parentPort } from 'node:worker_threads'
import { loadMicroPython } from '../python/_micropython-bounded.mjs'
import { hardenRealm, servePythonThread } from '../../engine/python/thread-server.js'

/** The metered wasm, where the source tree and dist/ both keep it (this file is bundled beside its own source). */
const WASM_URL = new URL('../python/_micropython-bounded.wasm', import.meta.url)

const port = parentPort
if (port !== null) {
  hardenRealm()
  servePythonThread(
    {
      post: (message) => port.postMessage(message),
      onMessage: (listener) => port.on('message', listener),
    },
    loadMicroPython,
    false,
    // Only when the host sent none at boot (its own load failed).
    async () => WebAssembly.compile(await readFile(WASM_URL)),
  )
}
