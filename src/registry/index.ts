/**
 * The registry: `createToolRuntime()` and the pieces of its public surface.
 *
 * @module
 */
export { createToolRuntime } from './runtime.js'
export { routeBackMessage } from './pipeline.js'
export { runToolCalls, type RunToolCallsOptions } from './batch.js'
export { CODE_ONLY_SECTION, CODE_ONLY_TEXT, SDK_SECTION } from './assembly.js'
export { DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_PARALLEL_SUB_CALLS, DEFAULT_SDK_BUDGET_CHARS } from './options.js'
