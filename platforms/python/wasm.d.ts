// A Worker imports the metered MicroPython as a compiled module (wrangler's CompiledWasm rule).
declare module '*_micropython-bounded.wasm' {
  const wasmModule: WebAssembly.Module
  export default wasmModule
}
