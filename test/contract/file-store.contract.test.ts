import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll } from 'vitest'
import { createFileStore } from '../../platforms/node/index.js'
import { describeDurableStoreContract } from './durable-store-contract.js'

const root = mkdtempSync(join(tmpdir(), 'toolyard-file-store-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let n = 0

describeDurableStoreContract('file (node)', (options) => createFileStore(join(root, `store-${n++}`), options))
