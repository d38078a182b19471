/**
 * The browser Python sandbox thread: a module Web Worker serving the Python thread server.
 * Bundle it as `python-worker-entry.js` beside the page, with MicroPython's `micropython.wasm` beside it.
 *
 * @module
 */
import { loadMicroPython } from '@micropython/micropython-webassembly-pyscript'
import { hardenRealm, servePythonThread } from '../../engine/python/thread-server.js'

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
hardenRealm()
servePythonThread(
  {
    post: (message) => scope.postMessage(message),
    onMessage: (listener) => scope.addEventListener('message', (event) => listener(event.data)),
    // Read only without shared memory: the page meters a hot loop from these (python-sandbox-runtime.ts).
    busy: (since, busyMs) => scope.postMessage({ type: 'busy', since, busyMs }),
  },
  loadMicroPython,
)
