import pg from 'pg'
import { afterAll, beforeAll, describe } from 'vitest'
import { createPostgresStore } from '../../platforms/postgres/index.js'
import { postgresSkipReason, startPostgres, type PostgresCluster } from '../support/postgres.js'
import { describeDurableStoreContract } from './durable-store-contract.js'

const skip = postgresSkipReason()
let cluster: PostgresCluster | undefined
let pool: pg.Pool | undefined
let n = 0

describe.skipIf(skip !== undefined)(`PostgreSQL store${skip === undefined ? '' : ` (skipped: ${skip})`}`, () => {
  beforeAll(async () => {
    cluster = await startPostgres()
    pool = new pg.Pool({ connectionString: cluster.url, max: 10 })
  }, 90_000)
  afterAll(async () => {
    await pool?.end()
    cluster?.stop()
  })

  // One table per fresh store: the suite's stores stay empty and independent on one server.
  describeDurableStoreContract('postgres (node)', (options) => createPostgresStore({ pool: pool!, table: `contract_${n++}`, ...options }))
})
