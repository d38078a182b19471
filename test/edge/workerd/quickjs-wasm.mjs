// Loaded natively by workerd (vitest.workerd.config.ts externalizes this file), so the
// pool's module fallback serves the package's wasm as a CompiledWasm module: a real
// WebAssembly.Module, as a wrangler deployment gets it. Vite never sees the .wasm.
export { default } from '@jitl/quickjs-wasmfile-release-sync/wasm'
