import { createSandboxRuntime } from '../../platforms/browser/index.js'
import { describeParkingContract } from '../contract/parking-contract.js'

// The default sandbox in real Chromium: a parked run gives its Web Worker back to the pool.
describeParkingContract('sandbox (QuickJS in Chromium Web Workers)', ({ parkAfterMs }) => createSandboxRuntime({ memoryMb: 32, parkAfterMs }))
