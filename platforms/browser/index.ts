/**
 * `toolyard/browser`: code runtimes for browsers.
 * @module
 */
export { createSandboxRuntime } from './sandbox-runtime.js'
export type { BrowserSandboxRuntimeOptions, SandboxRuntime, SandboxRuntimeLoad } from './sandbox-runtime.js'
export { createBrowserWorkerRuntime } from './browser-worker-runtime.js'
export type { BrowserWorkerRuntime, BrowserWorkerRuntimeOptions } from './browser-worker-runtime.js'
export { createPreflightWorker } from './preflight-worker.js'
export type { BrowserPreflightWorkerOptions } from './preflight-worker.js'
