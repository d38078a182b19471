/**
 * Discovery end to end inside workerd: QuickJS inline, the wasm imported as a module
 * (the only way workerd accepts it; see quickjs.contract.test.ts).
 */
import wasmModule from '@jitl/quickjs-wasmfile-release-sync/wasm'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { describeCatalogDiscovery } from '../../support/catalog-discovery-suite.js'

describeCatalogDiscovery('quickjs wasm (workerd)', () => createQuickJsRuntime({ wasmModule, memoryMb: 32 }))
