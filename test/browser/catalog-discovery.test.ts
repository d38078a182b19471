import { createSandboxRuntime } from '../../platforms/browser/index.js'
import { describeCatalogDiscovery } from '../support/catalog-discovery-suite.js'

// The default sandbox in real Chromium: QuickJS in pooled module Web Workers.
describeCatalogDiscovery('sandbox (QuickJS in Chromium Web Workers)', () => createSandboxRuntime({ memoryMb: 32 }))
