import { createSandboxRuntime } from '../../platforms/browser/index.js'
import { describeCodeRuntimeContract } from '../contract/code-runtime-contract.js'

// The default sandbox in real Chromium: QuickJS in pooled module Web Workers. It is the boundary: no authority gap.
describeCodeRuntimeContract('sandbox (QuickJS in Chromium Web Workers)', (options) => createSandboxRuntime({ ...options, memoryMb: 32 }), {
  capturesStdio: 'a QuickJS VM has no stdout or stderr: console is its only output',
})
