/**
 * The CodeRuntime contract and parking suites for toolyard/python, inside workerd (the
 * `workerd` vitest project): the metered wasm imported as a module (the config's
 * CompiledWasm rule), each case's Python translation.
 */
import wasmModule from '../../../platforms/python/_micropython-bounded.wasm'
import { createPythonRuntime } from '../../../platforms/python/index.js'
import { describeCodeRuntimeContract } from '../../contract/code-runtime-contract.js'
import { describeParkingContract } from '../../contract/parking-contract.js'

describeCodeRuntimeContract('python inline (metered MicroPython, workerd)', (options) => createPythonRuntime({ ...options, wasmModule, memoryMb: 32 }), {
  capturesStdio: 'print and sys.stderr reach the host as console lines; there is no process stdout or stderr',
  abortsBusyPrograms: 'the interpreter computes on the host thread: an abort is seen when the program yields, or at the compute budget',
}, 'python')
describeParkingContract('python inline (metered MicroPython, workerd)', ({ parkAfterMs }) => createPythonRuntime({ wasmModule, memoryMb: 32, parkAfterMs }), 'python')
