/**
 * Live frames across instances over PostgreSQL (src/durable/_live-events.ts, issue 37 item 2):
 * a publisher's frames reach a follower on another pool in order, the run's `end` closes it,
 * and chunks that are not frames of the expected shape (the table is shared: hostile) are skipped.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { until } from '../../support/poll.js'
import { createPostgresStore } from '../../../platforms/postgres/index.js'
import { createLiveEvents, LIVE_EVENTS_PREFIX } from '../../../src/durable/_live-events.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import { createRunEventLog } from '../../../src/durable/run-table.js'
import { postgresSkipReason, startPostgres, type PostgresCluster } from '../../support/postgres.js'

const skip = postgresSkipReason()
let cluster: PostgresCluster | undefined
const pools: pg.Pool[] = []
const newStore = () => {
  const pool = new pg.Pool({ connectionString: cluster!.url, max: 4 })
  pools.push(pool)
  return createPostgresStore({ pool, table: 'live', log: () => undefined })
}

describe.skipIf(skip !== undefined)(`live run events across instances${skip === undefined ? '' : ` (skipped: ${skip})`}`, () => {
  beforeAll(async () => {
    cluster = await startPostgres()
  }, 90_000)
  afterAll(async () => {
    for (const pool of pools) await pool.end()
    cluster?.stop()
  })

  it('a store without watch has no live events (one process: its table has every run)', () => {
    expect(createLiveEvents(createMemoryStore())).toBeUndefined()
  })

  it("B follows A's frames in order, same ids and text, and closes at the run's end frame", async () => {
    const a = createLiveEvents(newStore())!
    const b = createLiveEvents(newStore())!
    const log = createRunEventLog(1024 * 1024)
    const runId = crypto.randomUUID()
    const errors: unknown[] = []
    a.publish(runId, log, (error) => errors.push(error))
    log.append('start', { id: runId })
    const followed = await b.follow(runId, 1024 * 1024, async () => false)
    for (let i = 0; i < 50; i++) log.append('log', { i })
    log.append('end', { id: runId, status: 'done' })
    log.close()
    await until(() => followed.events.closed, 'the follower to close')
    expect(followed.events.since(0).frames).toEqual(log.since(0).frames)
    expect(followed.events.last).toBe(52)
    // Last-Event-ID on the follower: the frames after it.
    expect(followed.events.since(50).frames.map((frame) => frame.id)).toEqual([51, 52])
    followed.stop()
    expect(errors).toEqual([])
  })

  it('chunks that are not frames of the expected shape are skipped; ids never go back; a settled record ends the stream', async () => {
    const store = newStore()
    const b = createLiveEvents(newStore())!
    const runId = crypto.randomUUID()
    const key = (n: number) => `${LIVE_EVENTS_PREFIX}${runId}/${String(n).padStart(15, '0')}`
    const good = (id: number) => `event: log\nid: ${id}\ndata: {"i":${id}}\n\n`
    await store.put(key(1), JSON.stringify({ frames: [[1, good(1)]] }))
    await store.put(key(2), 'not json')
    // An extra SSE field smuggled into a frame, an id line that is not the frame's, a frame id of 0.
    await store.put(key(3), JSON.stringify({ frames: [[3, 'event: log\nid: 3\nretry: 1\ndata: {}\n\n']] }))
    await store.put(key(4), JSON.stringify({ frames: [[4, good(5)]] }))
    await store.put(key(5), JSON.stringify({ frames: [[0, good(0)]] }))
    await store.put(key(6), JSON.stringify({ frames: [[6, good(6)]], closed: 'yes' }))
    await store.put(key(7), JSON.stringify({ frames: [[2, good(2)]] }))
    let settled = false
    const followed = await b.follow(runId, 1024 * 1024, async () => settled)
    expect(followed.events.since(0).frames.map((frame) => frame.id)).toEqual([1, 6])
    expect(followed.events.closed).toBe(false)
    settled = true
    await until(() => followed.events.closed, 'the poll to see the settled record')
    followed.stop()
  })
})
