import { createPythonRuntime } from '../../../platforms/python/index.js'
import { describeCodeRuntimeContract } from '../../contract/code-runtime-contract.js'
import { describeParkingContract } from '../../contract/parking-contract.js'

// toolyard/python on Node: the inline runtime (metered MicroPython on the host's thread), each case's Python translation.
describeCodeRuntimeContract('python inline (metered MicroPython, Node)', (options) => createPythonRuntime({ ...options, memoryMb: 32 }), {
  capturesStdio: 'print and sys.stderr reach the host as console lines; there is no process stdout or stderr',
  abortsBusyPrograms: 'the interpreter computes on the host thread: an abort is seen when the program yields, or at the compute budget',
}, 'python')
describeParkingContract('python inline (metered MicroPython, Node)', ({ parkAfterMs }) => createPythonRuntime({ memoryMb: 32, prespawn: 0, parkAfterMs }), 'python')
