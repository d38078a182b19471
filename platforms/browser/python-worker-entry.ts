/**
 * The browser Python sandbox thread: a module Web Worker serving the Python thread server.
 * Bundle it as `python-worker-entry.js`, the metered `micropython.wasm` beside it (docs/python.md).
 * @module
 */
import { loadMicroPython } from '../python/_micropython-bounded.mjs'
import { hardenRealm, servePythonThread } from '../../engine/python/thread-server.js'
import { eachMessage } from './message-batch.js'

/** The worker's global scope, as far as this file uses it (the project's lib is DOM, not WebWorker). */
interface WorkerScope {
  postMessage(message: unknown): void
  addEventListener(type: 'message', listener: (event: MessageEvent) => void): void
}

const scope = globalThis as unknown as WorkerScope
// Emscripten reports each growth the memory cap refuses on console.error; the interpreter then
// collects or raises MemoryError in the program, so these lines are noise in the page's console.
const REFUSED_GROWTH = /^(growMemory: Attempted to grow heap|Failed to grow the heap)/
const consoleError = console.error.bind(console)
console.error = (...args: unknown[]) => {
  if (typeof args[0] === 'string' && REFUSED_GROWTH.test(args[0])) return
  consoleError(...args)
}
/** Where the metered wasm may be: beside this worker's bundle, else where the source tree and dist/ keep it (a dev server). */
const WASM_PLACES = ['micropython.wasm', '../python/_micropython-bounded.wasm']

/** Compiles the first of {@link WASM_PLACES} that is served (only when the page sent no `wasmModule` at boot). */
async function locateWasm(): Promise<WebAssembly.Module> {
  let failure = ''
  for (const place of WASM_PLACES) {
    const response = await fetch(new URL(place, import.meta.url)).catch(() => undefined)
    // A dev server may answer a missing file with its HTML page (200): only wasm counts.
    const bytes = response?.ok === true ? new Uint8Array(await response.arrayBuffer()) : undefined
    if (bytes !== undefined && bytes[0] === 0 && bytes[1] === 0x61 && bytes[2] === 0x73 && bytes[3] === 0x6d) return WebAssembly.compile(bytes)
    failure += `${place}: ${response === undefined ? 'unreachable' : bytes === undefined ? response.status : 'not wasm'}; `
  }
  throw new Error(`the metered MicroPython wasm was not found beside the worker (${failure.slice(0, -2)})`)
}

hardenRealm()
servePythonThread(
  {
    post: (message) => scope.postMessage(message),
    // The page batches a burst of replies (message-batch.ts).
    onMessage: (listener) => scope.addEventListener('message', (event) => eachMessage(event.data, listener)),
    // Read only without shared memory: the page meters a hot loop from these (python-sandbox-runtime.ts).
    busy: (since, busyMs) => scope.postMessage({ type: 'busy', since, busyMs }),
  },
  loadMicroPython,
  false,
  locateWasm,
)
