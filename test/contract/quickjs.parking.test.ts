import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createQuickJsRuntime } from '../../platforms/quickjs/index.js'
import { describeParkingContract } from './parking-contract.js'

const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))

// Inline QuickJS (the edge's runtime) on Node: a parked run releases its VM.
describeParkingContract('quickjs wasm inline (node)', ({ parkAfterMs }) => createQuickJsRuntime({ wasmModule, memoryMb: 32, parkAfterMs }))
