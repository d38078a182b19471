import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPostgresStore, postgresStoreSchema } from '../../../platforms/postgres/index.js'
import { postgresSkipReason, startPostgres, type PostgresCluster } from '../../support/postgres.js'

const skip = postgresSkipReason()
let cluster: PostgresCluster | undefined
let pool: pg.Pool

describe('createPostgresStore options', () => {
  it('refuses a missing client and a table name that is not a plain identifier, with INVALID_OPTIONS', () => {
    expect(() => createPostgresStore({} as never)).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
    const pool = { query: async () => ({ rows: [] }) }
    for (const table of ['', 'x"; DROP TABLE y; --', 'Upper', '1x', 'a'.repeat(52), 'a b']) {
      expect(() => createPostgresStore({ pool, table }), table).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
    }
    expect(() => createPostgresStore({ pool, maxValueBytes: 0 })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
    expect(postgresStoreSchema('runs_1')).toContain('CREATE TABLE IF NOT EXISTS "runs_1"')
  })

  it('reports a client failure as STORE_FAILED and a lock wait or timeout as STORE_BUSY, with the SQLSTATE', async () => {
    const failing = (code: string) => ({ query: async () => Promise.reject(Object.assign(new Error('boom'), { code })) })
    await expect(createPostgresStore({ pool: failing('08006') }).get('k')).rejects.toMatchObject({ code: 'STORE_FAILED', message: expect.stringContaining('08006') })
    await expect(createPostgresStore({ pool: failing('55P03'), createTable: false }).put('k', 'v')).rejects.toMatchObject({ code: 'STORE_BUSY' })
  })
})

describe.skipIf(skip !== undefined)(`PostgreSQL store on a real server${skip === undefined ? '' : ` (skipped: ${skip})`}`, () => {
  beforeAll(async () => {
    cluster = await startPostgres()
    pool = new pg.Pool({ connectionString: cluster.url, max: 8 })
  }, 90_000)
  afterAll(async () => {
    await pool?.end()
    cluster?.stop()
  })

  it('creates its table once when many instances start at once, and shares one sequence of versions', async () => {
    const stores = Array.from({ length: 6 }, () => createPostgresStore({ pool, table: 'shared' }))
    const results = await Promise.all(stores.map((store, i) => store.put(`k${i}`, 'v', { ifVersion: null })))
    expect(results.every((result) => result.ok)).toBe(true)
    expect(new Set(results.map((result) => result.version)).size).toBe(6)
    expect((await stores[0]!.list('')).entries).toHaveLength(6)
  })

  it('with createTable: false, fails with STORE_FAILED until migrate() runs', async () => {
    const store = createPostgresStore({ pool, table: 'migrated', createTable: false })
    await expect(store.get('k')).rejects.toMatchObject({ code: 'STORE_FAILED', message: expect.stringContaining('42P01') })
    await store.migrate()
    await store.migrate()
    expect(await store.put('k', 'v')).toMatchObject({ ok: true })
  })

  it('reads rows written behind its back as hostile: no oversized transfer, no non-UTF-8 text, no foreign key in a listing', async () => {
    const store = createPostgresStore({ pool, table: 'hostile', maxValueBytes: 64 })
    await store.migrate()
    const insert = (key: string, value: Buffer) => pool.query(`INSERT INTO hostile (key, value, version) VALUES ($1, $2, nextval('"hostile_version"'))`, [key, value])
    await insert('big', Buffer.alloc(10_000, 0x61))
    await insert('latin1', Buffer.from([0x63, 0x61, 0x66, 0xe9]))
    for (const key of ['a/../b', '../x', 'sp ace', 'a//b', '/abs', 'x'.repeat(121), 'é']) await insert(key, Buffer.from('x'))
    await insert('good', Buffer.from('ok'))
    await expect(store.get('big')).rejects.toMatchObject({ code: 'STORE_FAILED', message: expect.stringContaining('10000 bytes') })
    await expect(store.get('latin1')).rejects.toMatchObject({ code: 'STORE_FAILED' })
    expect((await store.list('')).entries.map((entry) => entry.key)).toEqual(['big', 'good', 'latin1'])
    // Paging never hands out a cursor a list call would refuse.
    const keys: string[] = []
    let cursor: string | undefined
    do {
      const page = await store.list('', { limit: 1, ...(cursor === undefined ? {} : { after: cursor }) })
      keys.push(...page.entries.map((entry) => entry.key))
      cursor = page.cursor
    } while (cursor !== undefined)
    expect(keys).toEqual(['big', 'good', 'latin1'])
  })

  it('compare-and-set holds across two pools (two instances): of 20 racing creators exactly one wins', async () => {
    const other = new pg.Pool({ connectionString: cluster!.url, max: 4 })
    try {
      const a = createPostgresStore({ pool, table: 'race' })
      const b = createPostgresStore({ pool: other, table: 'race' })
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).put('claim', `owner ${i}`, { ifVersion: null })))
      const winners = results.filter((result) => result.ok)
      expect(winners).toHaveLength(1)
      for (const loser of results.filter((result) => !result.ok)) expect(loser.version).toBe(winners[0]!.version)
      expect(await b.put('claim', 'x', { ifVersion: 'not-a-version' })).toEqual({ ok: false, version: winners[0]!.version })
      expect(await b.delete('claim', { ifVersion: '999999999' })).toEqual({ ok: false, version: winners[0]!.version })
    } finally {
      await other.end()
    }
  })
})
