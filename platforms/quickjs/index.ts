/**
 * `toolyard/quickjs`: the Code Mode runtime on QuickJS wasm, for every runtime
 * (Node, browsers, Cloudflare workerd).
 *
 * @module
 */
export { createQuickJsRuntime } from './quickjs-runtime.js'
export type { QuickJsCodeRuntime, QuickJsRuntimeOptions, QuickJsWasmModuleSource } from './quickjs-runtime.js'
