/**
 * The per-principal bound on requests waiting for a person holds across brokers that share one
 * PostgreSQL table, each over its own connection pool (as separate servers): one principal
 * flooding all of them at once keeps at most 200 + (brokers - 1) requests open, and another
 * principal's request is listed (red team, stop 54: before, 200 per broker).
 */
import { setMaxListeners } from 'node:events'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPostgresStore } from '../../../platforms/postgres/index.js'
import { createApprovalBroker, type ApprovalBroker } from '../../../src/approvals/index.js'
import { MAX_WAITING_PER_PRINCIPAL } from '../../../src/approvals/_store-broker.js'
import { postgresSkipReason, startPostgres, type PostgresCluster } from '../../support/postgres.js'
import { until } from '../../support/poll.js'

const skip = postgresSkipReason()
const BROKERS = 3
let cluster: PostgresCluster | undefined
const pools: pg.Pool[] = []

describe.skipIf(skip !== undefined)(`approvals per principal over PostgreSQL${skip === undefined ? '' : ` (skipped: ${skip})`}`, () => {
  beforeAll(async () => {
    cluster = await startPostgres()
  }, 60_000)
  afterAll(async () => {
    for (const pool of pools) await pool.end()
    cluster?.stop()
  })

  it(`${BROKERS} brokers on their own pools, ${MAX_WAITING_PER_PRINCIPAL} calls of one principal on each at once: at most ${MAX_WAITING_PER_PRINCIPAL} + ${BROKERS - 1} open; another principal is listed`, async () => {
    const brokers: ApprovalBroker[] = Array.from({ length: BROKERS }, () => {
      const pool = new pg.Pool({ connectionString: cluster!.url, max: 4 })
      pools.push(pool)
      return createApprovalBroker({ store: createPostgresStore({ pool, table: 'approval_bound' }), pollIntervalMs: 50, timeoutMs: 120_000 })
    })
    const controller = new AbortController()
    setMaxListeners(0, controller.signal)
    const ask = (broker: ApprovalBroker, principal: string, n: number) =>
      Promise.resolve(broker.handler({ execution: { callId: `${principal}-${n}`, name: 'pay', arguments: { cents: n }, principal, signal: controller.signal } } as never)).then(
        () => 'allowed',
        (error: Error) => error.message,
      )
    const denied: string[] = []
    const flood = brokers.flatMap((broker, b) => Array.from({ length: MAX_WAITING_PER_PRINCIPAL }, (_, i) => ask(broker, 'agent', b * 1000 + i)))
    for (const call of flood) void call.then((message) => denied.push(message))
    await until(async () => denied.length >= flood.length - MAX_WAITING_PER_PRINCIPAL - (BROKERS - 1), 'the calls past the bound to be denied', 60_000)
    for (const message of denied) expect(message).toMatch(/^pay was not put to a person: principal agent already has \d+ requests waiting for one in the approval store/)
    const listed = await brokers[0]!.pending()
    expect(listed.length).toBeGreaterThanOrEqual(MAX_WAITING_PER_PRINCIPAL)
    expect(listed.length).toBeLessThanOrEqual(MAX_WAITING_PER_PRINCIPAL + BROKERS - 1)
    const other = ask(brokers[2]!, 'other', 1)
    await until(async () => (await brokers[1]!.pending()).some((a) => a.principal === 'other'), 'the other principal to be listed', 10_000)
    const theirs = (await brokers[1]!.pending()).find((a) => a.principal === 'other')!
    expect((await brokers[1]!.decide(theirs.id, { decision: 'allow' })).ok).toBe(true)
    expect(await other).toBe('allowed')
    controller.abort()
    await Promise.all(flood)
    for (const broker of brokers) await broker.dispose()
  }, 120_000)
})
