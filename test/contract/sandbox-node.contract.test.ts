import { createSandboxRuntime } from '../../platforms/node/index.js'
import { describeCodeRuntimeContract } from './code-runtime-contract.js'

// The default sandbox on Node: QuickJS in pooled worker_threads. It is the boundary: no authority gap.
describeCodeRuntimeContract('sandbox (QuickJS in Node worker_threads)', (options) => createSandboxRuntime({ ...options, memoryMb: 32 }), {
  capturesStdio: 'a QuickJS VM has no stdout or stderr: console is its only output',
})
