/**
 * `npm start`'s entry with `TOOLYARD_DATABASE_URL` (examples/start.ts main()): the server
 * keeps its state in PostgreSQL and says so; a database that refuses fails the start.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postgresSkipReason, startPostgres, type PostgresCluster } from '../../support/postgres.js'

const root = fileURLToPath(new URL('../../..', import.meta.url))
const skip = postgresSkipReason()
const base = mkdtempSync(join(tmpdir(), 'toolyard-npm-start-'))
let cluster: PostgresCluster | undefined

/** Runs examples/start.ts until `done(output)` says enough, or it exits; answers its output and exit code. */
function start(env: Record<string, string>, done: (out: string) => boolean): Promise<{ out: string; code: number | null }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'examples/start.ts'], {
    cwd: root,
    env: { ...process.env, PORT: '0', TOOLYARD_DATA_DIR: join(base, 'data'), TOOLYARD_TOKEN: 'api-token-0123456789abcdef', TOOLYARD_APPROVER_TOKEN: 'approver-token-0123456789abcdef', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000)
    const check = (chunk: Buffer) => {
      out += chunk.toString()
      if (done(out)) child.kill('SIGTERM')
    }
    child.stdout!.on('data', check)
    child.stderr!.on('data', check)
    child.once('exit', (code) => {
      clearTimeout(timer)
      resolve({ out, code })
    })
  })
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
