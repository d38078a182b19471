import { createSandboxRuntime } from '../../platforms/node/index.js'
import { describeParkingContract } from './parking-contract.js'

// The Python sandbox on Node: a parked run gives its MicroPython thread back to the pool and resumes by replay in a fresh interpreter.
describeParkingContract('python sandbox (MicroPython in Node worker threads)', ({ parkAfterMs }) => createSandboxRuntime({ language: 'python', memoryMb: 32, prespawn: 0, parkAfterMs }), 'python')
