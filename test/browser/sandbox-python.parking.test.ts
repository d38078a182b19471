import { createSandboxRuntime } from '../../platforms/browser/index.js'
import { describeParkingContract } from '../contract/parking-contract.js'

// The Python sandbox in real Chromium: a parked run gives its Web Worker back to the pool and resumes by replay in a fresh interpreter.
describeParkingContract('python sandbox (MicroPython in Chromium Web Workers)', ({ parkAfterMs }) => createSandboxRuntime({ language: 'python', memoryMb: 32, parkAfterMs }), 'python')
