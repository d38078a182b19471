import { createSandboxRuntime } from '../../platforms/node/index.js'
import { describeCodeRuntimeContract } from './code-runtime-contract.js'

// The Python sandbox on Node: MicroPython in pooled worker_threads, each case's Python translation.
describeCodeRuntimeContract('sandbox (MicroPython in Node worker_threads)', (options) => createSandboxRuntime({ ...options, language: 'python', memoryMb: 32 }), {
  capturesStdio: 'print and sys.stderr reach the host as console lines; there is no process stdout or stderr',
}, 'python')
