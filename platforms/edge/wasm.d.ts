// workerd (and wrangler's CompiledWasm rule) hands a `.wasm` import over as a compiled module.
declare module '@jitl/quickjs-wasmfile-release-sync/wasm' {
  const wasmModule: WebAssembly.Module
  export default wasmModule
}
