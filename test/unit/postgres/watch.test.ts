/**
 * Cross-instance wake-ups (issue 37, item 2): the PostgreSQL store's `watch` hears the
 * changes another instance commits (LISTEN/NOTIFY), and an approval broker over it is woken
 * by a decision taken on another instance instead of waiting for its next poll.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPostgresStore } from '../../../platforms/postgres/index.js'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import { postgresSkipReason, startPostgres, type PostgresCluster } from '../../support/postgres.js'
import { until } from '../../support/poll.js'

const skip = postgresSkipReason()
let cluster: PostgresCluster | undefined
const pools: pg.Pool[] = []
const newPool = () => {
  const pool = new pg.Pool({ connectionString: cluster!.url, max: 4 })
  pools.push(pool)
  return pool
}

describe.skipIf(skip !== undefined)(`PostgreSQL LISTEN/NOTIFY wake-ups${skip === undefined ? '' : ` (skipped: ${skip})`}`, () => {
  beforeAll(async () => {
    cluster = await startPostgres()
  }, 90_000)
  afterAll(async () => {
    for (const pool of pools) await pool.end()
    cluster?.stop()
  })

  it("watch hears another instance's committed writes and deletes under its prefix, and nothing once stopped", async () => {
    const a = createPostgresStore({ pool: newPool(), table: 'watched' })
    const b = createPostgresStore({ pool: newPool(), table: 'watched' })
    await b.migrate()
    const heard: string[] = []
    // Probe writes still in flight when the first is heard may be heard later: not counted.
    let probed = false
    const stop = a.watch('approvals/done/', (key) => {
      if (key === 'approvals/done/probe') probed = true
      else heard.push(key)
    })
    try {
      expect(() => a.watch('../', () => undefined)).toThrow(expect.objectContaining({ code: 'INVALID_STORE_KEY' }))
      // The LISTEN connection opens in the background: write until the first change is heard.
      await until(() => probed || (void b.put('approvals/done/probe', 'x'), false), 'the first notification')
      heard.length = 0
      await b.put('approvals/open/x', 'not watched')
      await b.put('approvals/done/x', 'decided')
      await b.delete('approvals/done/x')
      await until(() => heard.length >= 2, 'the write and the delete')
      expect(heard).toEqual(['approvals/done/x', 'approvals/done/x'])
    } finally {
      stop()
    }
    await b.put('approvals/done/y', 'after')
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(heard).toEqual(['approvals/done/x', 'approvals/done/x'])
  })

  it('a LISTEN connection terminated by the server: the drop is logged, watchers hear their prefix once when it is back, then notifications again', async () => {
    const logged: string[] = []
    const pool = newPool()
    const a = createPostgresStore({ pool, table: 'dropped', log: (message) => logged.push(message) })
    const b = createPostgresStore({ pool: newPool(), table: 'dropped' })
    await b.migrate()
    const heard: string[] = []
    const stop = a.watch('run-live/', (key) => heard.push(key))
    try {
      await until(() => heard.length > 0 || (void b.put('run-live/probe', 'x'), false), 'the first notification')
      const admin = newPool()
      const { rows } = await admin.query("SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE query = 'LISTEN \"dropped_changes\"' AND pid <> pg_backend_pid()")
      expect(rows).toEqual([{ done: true }])
      await until(() => logged.some((line) => line.includes('dropped') && line.includes('fall back to polling')), 'the drop in the log')
      heard.length = 0
      // Back after WATCH_RETRY_MS: the catch-up wake (the prefix: what changed meanwhile is unknown), then live notifications.
      await until(() => heard.includes('run-live/'), 'the catch-up wake-up', 10_000)
      await until(() => heard.includes('run-live/after') || (void b.put('run-live/after', 'y'), false), 'a notification after the reconnect')
      expect(logged.filter((line) => line.includes('fall back to polling'))).toHaveLength(1)
      expect(logged.some((line) => line.includes('is back'))).toBe(true)
    } finally {
      stop()
    }
  }, 30_000)

  it('a broker polling once a minute is woken by a decision another instance takes', async () => {
    const a = createApprovalBroker({ store: createPostgresStore({ pool: newPool(), table: 'brokers' }), pollIntervalMs: 60_000 })
    const b = createApprovalBroker({ store: createPostgresStore({ pool: newPool(), table: 'brokers' }), pollIntervalMs: 60_000 })
    try {
      const controller = new AbortController()
      const outcome = Promise.resolve(a.handler({ execution: { callId: 'call-1', name: 'pay', arguments: { cents: 5 }, signal: controller.signal } as never, reason: 'moves money' } as never))
      let settled: unknown
      void outcome.then((value) => (settled = { value }), (error: { code?: string }) => (settled = { code: error.code }))
      let pending: readonly { id: string }[] = []
      await until(() => pending.length > 0 || (void b.pending().then((list) => (pending = list)), false), 'the request on B')
      expect(await b.decide(pending[0]!.id, { decision: 'deny', reason: 'no' })).toMatchObject({ ok: true })
      // Without the wake-up, A would see the decision at its next poll, a minute from now.
      await until(() => settled !== undefined, "A's call to be answered", 15_000)
      expect(settled).toEqual({ code: 'DENIED_BY_APPROVAL' })
    } finally {
      await a.dispose()
      await b.dispose()
    }
  }, 30_000)
})
