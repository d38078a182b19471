/**
 * `toolyard/python`: Python Code Mode inline (MicroPython wasm with a step meter), for hosts
 * where nothing can terminate a run: Cloudflare workerd, and any other runtime.
 *
 * @module
 */
export { createPythonRuntime, STEPS_PER_MS } from './python-runtime.js'
export type { PythonCodeRuntime, PythonRuntimeOptions } from './python-runtime.js'
