/**
 * The CodeRuntime contract suite for QuickJS, inside workerd (the `workerd` vitest project,
 * vitest.workerd.config.ts). The wasm is imported as a module, the only way workerd
 * accepts it; the config's CompiledWasm rule makes the pool serve it that way.
 */
import wasmModule from '@jitl/quickjs-wasmfile-release-sync/wasm'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { describeCodeRuntimeContract } from '../../contract/code-runtime-contract.js'

describeCodeRuntimeContract('quickjs wasm (workerd)', (options) => createQuickJsRuntime({ ...options, wasmModule, memoryMb: 32 }), {
  capturesStdio: 'a QuickJS VM has no stdout or stderr: console is its only output',
  abortsBusyPrograms: 'the VM computes on the host thread: an abort is seen when the program yields, or at the compute budget',
})
