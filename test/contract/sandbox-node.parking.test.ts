import { createSandboxRuntime } from '../../platforms/node/index.js'
import { describeParkingContract } from './parking-contract.js'

// The default sandbox on Node: a parked run gives its worker thread back to the pool.
describeParkingContract('sandbox (QuickJS in Node worker threads)', ({ parkAfterMs }) => createSandboxRuntime({ memoryMb: 32, prespawn: 0, parkAfterMs }))
