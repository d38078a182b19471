/**
 * `toolyard/postgres`: the `DurableStore` seam over one PostgreSQL table, so every instance
 * of a server sharing one database shares its runs, approvals and events. docs/deployment.md.
 * Takes any client with `query(text, values)` (a `pg.Pool`); `pg` is an optional peer.
 * @module
 */
import {
  assertStoreKey,
  assertStorePrefix,
  assertStoreValue,
  MAX_STORE_KEY_LENGTH,
  readIfVersion,
  readListOptions,
  resolveMaxValueBytes,
  storeError,
  type DurableStore,
  type StoreDeleteResult,
  type StoreEntry,
  type StoreListPage,
  type StoreOptions,
  type StorePutResult,
} from '../../src/durable/store.js'
import { refuseUnknownOptions } from '../../src/util/unknown-field.js'

/** What the store needs of a client: `pg.Pool`, `pg.Client` or anything answering the same way; `connect` (a pool's) enables {@link PostgresStore.watch}. */
export interface PostgresQueryable {
  query(text: string, values?: unknown[]): Promise<{ readonly rows: readonly Record<string, unknown>[] }>
  connect?(): Promise<PostgresListenClient>
}

/** A dedicated connection for `LISTEN` (what `pg.Pool.connect()` answers). */
export interface PostgresListenClient {
  query(text: string, values?: unknown[]): Promise<unknown>
  on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): unknown
  on(event: 'error' | 'end', listener: (error?: Error) => void): unknown
  release(error?: Error | boolean): void
}

/** Options of {@link createPostgresStore}. */
export interface PostgresStoreOptions extends StoreOptions {
  /** The client (a `pg.Pool`: operations run concurrently, each one statement). */
  readonly pool: PostgresQueryable
  /** The table's name (default {@link DEFAULT_POSTGRES_STORE_TABLE}): lowercase letters, digits and `_`. The version sequence is `<table>_version`. */
  readonly table?: string
  /** Create the table and its sequence on first use (`CREATE … IF NOT EXISTS`, default `true`). */
  readonly createTable?: boolean
  /** Where the store says that its `LISTEN` connection failed and watchers fall back to polling (default `console.warn`). */
  readonly log?: (message: string) => void
}

/** The PostgreSQL store: a {@link DurableStore}, plus its schema step and what listings skipped. */
export interface PostgresStore extends DurableStore {
  /** Creates the table and sequence if missing (idempotent, safe from many instances at once). Runs before the first operation unless `createTable: false`. */
  migrate(): Promise<void>
  /**
   * Calls `onChange(key)` after each committed change of a key starting with `prefix`, by any
   * instance on the database (`LISTEN` on one dedicated connection, shared by every watcher).
   * When that connection drops, the store logs it and opens it again; once back, each watcher
   * is called once with its `prefix` (changes may have been missed meanwhile).
   */
  watch(prefix: string, onChange: (key: string) => void): () => void
  /** Rows listings skipped since creation: a malformed version (the table is read as hostile; keys outside the grammar are filtered in SQL). */
  skippedEntries(): number
}

/** How long a dropped `LISTEN` connection waits before it is opened again. */
export const WATCH_RETRY_MS = 1_000

/** The default table name. */
export const DEFAULT_POSTGRES_STORE_TABLE = 'toolyard_store'

const TABLE_NAME = /^[a-z_][a-z0-9_]{0,50}$/
// assertStoreKey's grammar as SQL: 1..120 characters, non-empty segments of the key alphabet, none '.' or '..'.
const KEY_GRAMMAR = `char_length(key) <= ${MAX_STORE_KEY_LENGTH} AND key ~ '^[A-Za-z0-9._~:@=+-]+(/[A-Za-z0-9._~:@=+-]+)*$' AND key !~ '(^|/)[.][.]?(/|$)'`
const VERSION = /^[1-9][0-9]{0,17}$/
// Failures that say "try again later", not "broken": serialization, deadlock, lock wait, statement timeout, too many connections.
const BUSY_STATES = new Set(['40001', '40P01', '55P03', '57014', '53300'])

/** The schema the store uses, as SQL text (for a migration tool when `createTable: false`). */
export function postgresStoreSchema(table: string = DEFAULT_POSTGRES_STORE_TABLE): string {
  const name = checkTable(table)
  return [
    `CREATE SEQUENCE IF NOT EXISTS "${name}_version"`,
    `CREATE TABLE IF NOT EXISTS "${name}" (key text COLLATE "C" PRIMARY KEY, value bytea NOT NULL, version bigint NOT NULL)`,
    // Every committed change is announced on the channel `<table>_changes`, the key as payload (ids only, ≤ 120 characters).
    `CREATE OR REPLACE FUNCTION "${name}_notify"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('${name}_changes', COALESCE(NEW.key, OLD.key)); RETURN NULL; END $$`,
    `CREATE OR REPLACE TRIGGER "${name}_notify" AFTER INSERT OR UPDATE OR DELETE ON "${name}" FOR EACH ROW EXECUTE FUNCTION "${name}_notify"()`,
  ].join(';\n')
}

function checkTable(table: unknown): string {
  if (typeof table !== 'string' || !TABLE_NAME.test(table)) {
    throw storeError('INVALID_OPTIONS', 'table must be 1 to 51 characters of [a-z0-9_], not starting with a digit')
  }
  return table
}

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

function failure(error: unknown, what: string): Error {
  const state = (error as { code?: unknown } | null)?.code
  const code = typeof state === 'string' && BUSY_STATES.has(state) ? 'STORE_BUSY' : 'STORE_FAILED'
  return storeError(code, `PostgreSQL store: ${what} failed${typeof state === 'string' ? ` (SQLSTATE ${state})` : ''}`, error)
}

function readVersion(row: Record<string, unknown> | undefined): string | undefined {
  const version = row?.version
  if (version === undefined || version === null) return undefined
  if (typeof version !== 'string' || !VERSION.test(version)) throw storeError('STORE_FAILED', 'PostgreSQL store: a row holds a malformed version')
  return version
}

/**
 * A `DurableStore` over one PostgreSQL table (schema: {@link postgresStoreSchema}).
 * @example
 * ```ts
 * import pg from 'pg'
 * import { createPostgresStore } from 'toolyard/postgres'
 * const store = createPostgresStore({ pool: new pg.Pool({ connectionString: process.env.DATABASE_URL }) })
 * await store.put('run/abc/journal', '[]', { ifVersion: null })
 * ```
 */
/** The names {@link PostgresStoreOptions} holds: any other is refused, naming the closest. */
const POSTGRES_STORE_OPTION_KEYS: readonly string[] = ['pool', 'table', 'createTable', 'log', 'maxValueBytes']

export function createPostgresStore(options: PostgresStoreOptions): PostgresStore {
  if (typeof options !== 'object' || options === null || typeof options.pool?.query !== 'function') {
    throw storeError('INVALID_OPTIONS', 'createPostgresStore needs { pool }: an object with query(text, values), such as a pg.Pool')
  }
  refuseUnknownOptions(options, POSTGRES_STORE_OPTION_KEYS, (message) => {
    throw storeError('INVALID_OPTIONS', `createPostgresStore: ${message}`)
  })
  const { pool } = options
  const table = checkTable(options.table ?? DEFAULT_POSTGRES_STORE_TABLE)
  const maxValueBytes = resolveMaxValueBytes(options)
  const t = `"${table}"`
  const seq = `'"${table}_version"'`
  // A lock id per table name: instances creating the same table at once queue instead of colliding in the catalog.
  const lockId = [...table].reduce((hash, char) => (hash * 31 + char.charCodeAt(0)) | 0, 7)
  let skipped = 0
  let ready: Promise<void> | undefined

  const run = async (what: string, text: string, values: unknown[]): Promise<readonly Record<string, unknown>[]> => {
    try {
      return (await pool.query(text, values)).rows
    } catch (error) {
      throw failure(error, what)
    }
  }

  const migrate = async (): Promise<void> => {
    // No parameters: one simple-protocol query string, i.e. one implicit transaction holding the advisory lock.
    await run('creating the table', `SELECT pg_advisory_xact_lock(${lockId});\n${postgresStoreSchema(table)}`, [])
  }
  const prepared = async (): Promise<void> => {
    if (options.createTable === false) return
    ready ??= migrate().catch((error: unknown) => {
      ready = undefined
      throw error
    })
    await ready
  }

  const currentVersion = async (key: string): Promise<string | undefined> =>
    readVersion((await run('reading a version', `SELECT version::text AS version FROM ${t} WHERE key = $1`, [key]))[0])

  // A conditional statement answers ok, or the version its snapshot saw.
  const settle = async (key: string, rows: readonly Record<string, unknown>[], ifVersion: string | null): Promise<{ ok: boolean; version: string | undefined }> => {
    const row = rows[0]
    if (row?.ok === true) return { ok: true, version: readVersion(row) }
    const seen = readVersion(row)
    if (seen === undefined || seen === ifVersion) return { ok: false, version: await currentVersion(key) }
    return { ok: false, version: seen }
  }

  const watch = createWatcher(pool, `${table}_changes`, prepared, options.log ?? ((message) => console.warn(message)))

  return {
    migrate,
    watch,
    skippedEntries: () => skipped,

    async get(key: string): Promise<StoreEntry | undefined> {
      assertStoreKey(key)
      await prepared()
      const rows = await run(
        'get',
        `SELECT version::text AS version, octet_length(value) AS bytes, CASE WHEN octet_length(value) <= $2 THEN value END AS value FROM ${t} WHERE key = $1`,
        [key, maxValueBytes],
      )
      const row = rows[0]
      if (row === undefined) return undefined
      const version = readVersion(row)!
      if (!(row.value instanceof Uint8Array)) throw storeError('STORE_FAILED', `PostgreSQL store: the value of ${JSON.stringify(key)} holds ${String(row.bytes)} bytes, more than maxValueBytes (${maxValueBytes})`)
      try {
        return { value: decoder.decode(row.value), version }
      } catch (error) {
        throw storeError('STORE_FAILED', `PostgreSQL store: the value of ${JSON.stringify(key)} is not UTF-8 text`, error)
      }
    },

    async put(key: string, value: string, writeOptions?): Promise<StorePutResult> {
      assertStoreKey(key)
      assertStoreValue(value, maxValueBytes)
      const ifVersion = readIfVersion(writeOptions)
      await prepared()
      const bytes = encoder.encode(value)
      if (ifVersion === undefined) {
        const rows = await run(
          'put',
          `INSERT INTO ${t} (key, value, version) VALUES ($1, $2, nextval(${seq})) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, version = EXCLUDED.version RETURNING version::text AS version`,
          [key, bytes],
        )
        return { ok: true, version: readVersion(rows[0])! }
      }
      if (ifVersion !== null && !VERSION.test(ifVersion)) return { ok: false, version: await currentVersion(key) }
      const write = ifVersion === null
        ? `INSERT INTO ${t} (key, value, version) VALUES ($1, $2, nextval(${seq})) ON CONFLICT (key) DO NOTHING RETURNING version`
        : `UPDATE ${t} SET value = $2, version = nextval(${seq}) WHERE key = $1 AND version = $3::bigint RETURNING version`
      const rows = await run(
        'compare-and-set put',
        `WITH w AS (${write}) SELECT true AS ok, version::text AS version FROM w UNION ALL SELECT false, version::text FROM ${t} WHERE key = $1 AND NOT EXISTS (SELECT 1 FROM w)`,
        ifVersion === null ? [key, bytes] : [key, bytes, ifVersion],
      )
      const answer = await settle(key, rows, ifVersion)
      return answer.ok ? { ok: true, version: answer.version! } : { ok: false, version: answer.version }
    },

    async delete(key: string, writeOptions?): Promise<StoreDeleteResult> {
      assertStoreKey(key)
      const ifVersion = readIfVersion(writeOptions)
      await prepared()
      if (ifVersion === undefined) {
        await run('delete', `DELETE FROM ${t} WHERE key = $1`, [key])
        return { ok: true }
      }
      if (ifVersion === null) {
        const version = await currentVersion(key)
        return version === undefined ? { ok: true } : { ok: false, version }
      }
      if (!VERSION.test(ifVersion)) return { ok: false, version: await currentVersion(key) }
      const rows = await run(
        'compare-and-set delete',
        `WITH w AS (DELETE FROM ${t} WHERE key = $1 AND version = $2::bigint RETURNING version) SELECT true AS ok, NULL::text AS version FROM w UNION ALL SELECT false, version::text FROM ${t} WHERE key = $1 AND NOT EXISTS (SELECT 1 FROM w)`,
        [key, ifVersion],
      )
      const answer = await settle(key, rows, ifVersion)
      return answer.ok ? { ok: true } : { ok: false, version: answer.version }
    },

    async list(prefix: string, listOptions?): Promise<StoreListPage> {
      assertStorePrefix(prefix)
      const { limit, after } = readListOptions(listOptions)
      await prepared()
      // One row beyond the page says whether a cursor is needed.
      const rows = await run(
        'list',
        `SELECT key, version::text AS version FROM ${t} WHERE key >= $1 AND starts_with(key, $1) AND ($2::text IS NULL OR key > $2) AND ${KEY_GRAMMAR} ORDER BY key LIMIT $3`,
        [prefix, after ?? null, limit + 1],
      )
      const entries: { key: string; version: string }[] = []
      for (const row of rows.slice(0, limit)) {
        const key = row.key
        let version: string | undefined
        try {
          assertStoreKey(key)
          version = readVersion(row)
        } catch {
          version = undefined
        }
        if (typeof key !== 'string' || version === undefined) {
          skipped++
          continue
        }
        entries.push({ key, version })
      }
      const last = rows[Math.min(rows.length, limit) - 1]?.key
      return rows.length > limit && typeof last === 'string' ? { entries, cursor: last } : { entries }
    },
  }
}

/** The `LISTEN` side of a store: one connection, opened on the first watcher, closed with the last. */
function createWatcher(pool: PostgresQueryable, channel: string, prepared: () => Promise<void>, log: (message: string) => void): PostgresStore['watch'] {
  const watchers = new Set<{ readonly prefix: string; readonly onChange: (key: string) => void }>()
  let client: PostgresListenClient | undefined
  let opening = false
  let retry: ReturnType<typeof setTimeout> | undefined
  // Set while notifications may have been missed (a drop, a failed LISTEN): the next LISTEN wakes every watcher once.
  let lost = false

  const drop = (listener: PostgresListenClient, error: Error | undefined): void => {
    if (client !== listener) return
    client = undefined
    listener.release(error ?? true)
    if (watchers.size === 0) return
    lost = true
    log(`toolyard/postgres: the LISTEN connection on ${channel} dropped (${error?.message ?? 'ended'}); watchers fall back to polling until it is back`)
    retry = setTimeout(open, WATCH_RETRY_MS)
    ;(retry as { unref?: () => void }).unref?.()
  }
  const open = (): void => {
    retry = undefined
    if (client !== undefined || opening || watchers.size === 0) return
    if (typeof pool.connect !== 'function') {
      log('toolyard/postgres: the client has no connect(): watchers poll (pass a pg.Pool to be woken by LISTEN/NOTIFY)')
      return
    }
    opening = true
    void (async () => {
      let listener: PostgresListenClient | undefined
      try {
        await prepared()
        listener = await pool.connect!()
        const connected = listener
        connected.on('notification', (message) => {
          const key = message.payload
          if (message.channel !== channel || typeof key !== 'string' || key.length > MAX_STORE_KEY_LENGTH) return
          for (const watcher of [...watchers]) if (key.startsWith(watcher.prefix)) watcher.onChange(key)
        })
        connected.on('error', (error) => drop(connected, error))
        connected.on('end', () => drop(connected, undefined))
        await connected.query(`LISTEN "${channel}"`)
        client = connected
        if (watchers.size === 0) drop(connected, undefined)
        else if (lost) {
          lost = false
          log(`toolyard/postgres: LISTEN on ${channel} is back; watchers are woken by notifications again`)
          // What changed while nobody listened is unknown: each watcher hears its prefix once and reads what it needs.
          for (const watcher of [...watchers]) watcher.onChange(watcher.prefix)
        }
      } catch (error) {
        listener?.release(error instanceof Error ? error : true)
        lost = true
        log(`toolyard/postgres: cannot LISTEN on ${channel} (${(error as Error)?.message}); watchers fall back to polling, retrying in ${WATCH_RETRY_MS} ms`)
        retry = setTimeout(open, WATCH_RETRY_MS)
        ;(retry as { unref?: () => void }).unref?.()
      } finally {
        opening = false
      }
    })()
  }

  return (prefix, onChange) => {
    assertStorePrefix(prefix)
    if (typeof onChange !== 'function') throw storeError('INVALID_OPTIONS', 'watch needs an onChange function')
    const watcher = { prefix, onChange }
    watchers.add(watcher)
    open()
    return () => {
      watchers.delete(watcher)
      if (watchers.size > 0) return
      clearTimeout(retry)
      retry = undefined
      const listener = client
      client = undefined
      listener?.release(true)
    }
  }
}
