/** The DurableStore contract for the memory store, inside workerd (the `workerd` vitest project). */
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import { describeDurableStoreContract } from '../../contract/durable-store-contract.js'

describeDurableStoreContract('memory (workerd)', (options) => createMemoryStore(options))
