/** The QuickJS wasm, compiled by workerd. */
declare const wasmModule: WebAssembly.Module
export default wasmModule
