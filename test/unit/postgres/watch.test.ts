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

const skip = postgresSkipReason()
let cluster: PostgresCluster | undefined
const pools: pg.Pool[] = []
const newPool = () => {
  const pool = new pg.Pool({ connectionString: cluster!.url, max: 4 })
  pools.push(pool)
  return pool
}

async function until(check: () => boolean, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
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
    const stop = a.watch('approvals/done/', (key) => heard.push(key))
    expect(() => a.watch('../', () => undefined)).toThrow(expect.objectContaining({ code: 'INVALID_STORE_KEY' }))
    // The LISTEN connection opens in the background: write until the first change is heard.
    await until(() => heard.length > 0 || (void b.put('approvals/done/probe', 'x'), false), 'the first notification')
    heard.length = 0
    await b.put('approvals/open/x', 'not watched')
    await b.put('approvals/done/x', 'decided')
    await b.delete('approvals/done/x')
    await until(() => heard.length >= 2, 'the write and the delete')
    expect(heard).toEqual(['approvals/done/x', 'approvals/done/x'])
    stop()
    await b.put('approvals/done/y', 'after')
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(heard).toEqual(['approvals/done/x', 'approvals/done/x'])
  })

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
