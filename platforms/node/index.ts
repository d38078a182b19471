/**
 * `toolyard/node`: Node-specific pieces.
 * @module
 */
export { createSandboxRuntime } from './sandbox-runtime.js'
export type { SandboxRuntime, SandboxRuntimeLoad, SandboxRuntimeOptions } from './sandbox-runtime.js'
export { createNodeWorkerRuntime } from './worker-runtime.js'
export type { NodeWorkerRuntime, NodeWorkerRuntimeOptions } from './worker-runtime.js'
export { serve } from './serve.js'
export type { FetchApp, ServeOptions, ServedApp } from './serve.js'
export { createPreflightWorker } from './preflight-worker.js'
export type { PreflightWorkerOptions } from './preflight-worker.js'
export { loadTypeScript } from './preflight-typescript.js'
export { createFileStore, DEFAULT_LOCK_TIMEOUT_MS, DEFAULT_STALE_LOCK_MS } from './file-store.js'
export type { FileStore, FileStoreOptions } from './file-store.js'
