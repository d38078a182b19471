import { createMemoryStore } from '../../src/index.js'
import { describeDurableStoreContract } from './durable-store-contract.js'

describeDurableStoreContract('memory (node)', (options) => createMemoryStore(options))
