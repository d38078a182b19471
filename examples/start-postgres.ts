/**
 * `npm start` with `TOOLYARD_DATABASE_URL`: the server's durable state in PostgreSQL
 * (`toolyard/postgres`), shared by every instance on that database. docs/deployment.md.
 * @module
 */
import type { DurableStore } from '../src/durable/index.js'
import { createPostgresStore } from '../platforms/postgres/index.js'

/** A PostgreSQL store and the pool behind it. */
export interface OpenedPostgresStore {
  readonly store: DurableStore
  /** Ends the pool (after the server has shut down). */
  close(): Promise<void>
}

/**
 * Connects to `url` with `pg` (an optional peer: loaded only here) and prepares the table,
 * so a wrong URL or a refused login fails the start, not the first run.
 */
export async function openPostgresStore(url: string): Promise<OpenedPostgresStore> {
  const { default: pg } = await import('pg')
  // Bounded: a database that does not answer fails the start instead of hanging it.
  const pool = new pg.Pool({ connectionString: url, max: 10, connectionTimeoutMillis: 10_000, idleTimeoutMillis: 30_000 })
  // An idle client's connection can drop (a database restart): the pool replaces it; unhandled, the error would end the process.
  pool.on('error', (error: Error) => console.error('PostgreSQL: an idle connection failed:', error.message))
  const store = createPostgresStore({ pool })
  try {
    await store.migrate()
  } catch (error) {
    await pool.end().catch(() => undefined)
    throw error
  }
  return { store, close: () => pool.end() }
}
