/**
 * `npm start`'s entry with `TOOLYARD_DATABASE_URL` (examples/start.ts main()): the server
 * keeps its state in PostgreSQL and says so; a database that refuses fails the start.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startChild } from '../../support/child.js'
import { postgresSkipReason, startPostgres, type PostgresCluster } from '../../support/postgres.js'

const root = fileURLToPath(new URL('../../..', import.meta.url))
const skip = postgresSkipReason()
const base = mkdtempSync(join(tmpdir(), 'toolyard-npm-start-'))
let cluster: PostgresCluster | undefined

/** Runs examples/start.ts until `done(output)` says enough (then SIGTERM), or it exits, or 90 s pass (then SIGKILL); answers its output and exit code. */
async function start(env: Record<string, string>, done: (out: string) => boolean): Promise<{ out: string; code: number | null }> {
  const child = startChild(process.execPath, ['--import', 'tsx', 'examples/start.ts'], {
    cwd: root,
    env: { PORT: '0', TOOLYARD_DATA_DIR: join(base, 'data'), TOOLYARD_TOKEN: 'api-token-0123456789abcdef', TOOLYARD_APPROVER_TOKEN: 'approver-token-0123456789abcdef', ...env },
  })
  const reached = await child.waitFor((_, out) => (done(out) ? true : undefined), 'the expected output', 90_000).catch(() => false)
  child.kill(reached ? 'SIGTERM' : 'SIGKILL')
  const { code } = await child.exit(30_000)
  return { out: child.output, code }
}

describe.skipIf(skip !== undefined)(`npm start with TOOLYARD_DATABASE_URL${skip === undefined ? '' : ` (skipped: ${skip})`}`, () => {
  beforeAll(async () => {
    cluster = await startPostgres()
  }, 90_000)
  afterAll(() => {
    cluster?.stop()
    rmSync(base, { recursive: true, force: true })
  })

  it('keeps its state in PostgreSQL: the banner says so and the table exists', async () => {
    const { out } = await start({ TOOLYARD_DATABASE_URL: cluster!.url }, (text) => text.includes('Ctrl+C stops the server'))
    expect(out).toContain('kept in PostgreSQL (TOOLYARD_DATABASE_URL)')
    const pool = new pg.Pool({ connectionString: cluster!.url, max: 1 })
    try {
      expect((await pool.query(`SELECT to_regclass('toolyard_store') IS NOT NULL AS present`)).rows[0]).toEqual({ present: true })
    } finally {
      await pool.end()
    }
  }, 120_000)

  it('a database that refuses fails the start (exit 1), never serves on a file store instead', async () => {
    const refused = cluster!.url.replace(/:(\d+)\//, ':1/')
    const { out, code } = await start({ TOOLYARD_DATABASE_URL: refused }, (text) => text.includes('listening on'))
    expect(code).toBe(1)
    expect(out).not.toContain('listening on')
    expect(out).toMatch(/STORE_FAILED|ECONNREFUSED/)
  }, 120_000)
})
