/** The parking contract for inline QuickJS inside workerd (the `workerd` vitest project). */
import wasmModule from '@jitl/quickjs-wasmfile-release-sync/wasm'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { describeParkingContract } from '../../contract/parking-contract.js'

describeParkingContract('quickjs wasm inline (workerd)', ({ parkAfterMs }) => createQuickJsRuntime({ wasmModule, memoryMb: 32, parkAfterMs }))
