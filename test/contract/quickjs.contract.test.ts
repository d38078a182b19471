import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createQuickJsRuntime } from '../../platforms/quickjs/index.js'
import { describeCodeRuntimeContract } from './code-runtime-contract.js'

// Precompiled once, as a workerd deployment passes it (`import wasm from '…/wasm'`).
const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))

describeCodeRuntimeContract('quickjs wasm (node)', (options) => createQuickJsRuntime({ ...options, wasmModule, memoryMb: 32 }), {
  capturesStdio: 'a QuickJS VM has no stdout or stderr: console is its only output',
  abortsBusyPrograms: 'the VM computes on the host thread: an abort is seen when the program yields, or at the compute budget',
})
