import { createSandboxRuntime } from '../../platforms/browser/index.js'
import { describeCodeRuntimeContract } from '../contract/code-runtime-contract.js'

// The Python sandbox in real Chromium: MicroPython in pooled module Web Workers, each case's Python translation.
describeCodeRuntimeContract('sandbox (MicroPython in Chromium Web Workers)', (options) => createSandboxRuntime({ ...options, language: 'python', memoryMb: 32 }), {
  capturesStdio: 'print and sys.stderr reach the host as console lines; there is no process stdout or stderr',
}, 'python')
