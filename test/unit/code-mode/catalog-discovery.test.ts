import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { describeCatalogDiscovery } from '../../support/catalog-discovery-suite.js'

// The default sandbox on Node: QuickJS in pooled worker_threads.
describeCatalogDiscovery('sandbox (QuickJS in Node worker_threads)', () => createSandboxRuntime({ memoryMb: 32 }))
