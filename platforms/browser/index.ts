/**
 * `toolyard/browser`: the Web Worker code runtime for browsers.
 *
 * @module
 */
export { createBrowserWorkerRuntime } from './browser-worker-runtime.js'
export type { BrowserWorkerRuntime, BrowserWorkerRuntimeOptions } from './browser-worker-runtime.js'
