/**
 * `toolyard/node`: Node-specific pieces.
 *
 * @module
 */
export { createNodeWorkerRuntime } from './worker-runtime.js'
export type { NodeWorkerRuntime, NodeWorkerRuntimeOptions } from './worker-runtime.js'
export { serve } from './serve.js'
export type { FetchApp, ServeOptions, ServedApp } from './serve.js'
