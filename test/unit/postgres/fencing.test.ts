/**
 * Fencing of a run's call records on one PostgreSQL database (issue 37): process A, taken
 * over while paused, never writes a call record over B's, whatever point it wakes at; B
 * makes each call once, and fails a call only when A may really have made it.
 */
import pg from 'pg'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createPostgresStore } from '../../../platforms/postgres/index.js'
import type { ParkedRunState } from '../../../src/code-runtime/contract.js'
import { bindRunSecret } from '../../../src/durable/call-key.js'
import { DurableRuns } from '../../../src/durable/runs.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { postgresSkipReason, startPostgres, type PostgresCluster } from '../../support/postgres.js'
import { FIRST_CALL_NUMBERING, parkedState } from '../../support/parked-run.js'

const skip = postgresSkipReason()
let cluster: PostgresCluster | undefined
let pool: pg.Pool
const processes: DurableRuns[] = []
let tables = 0
/** A store on a table of its own per case: one case's sweep never claims another's runs. */
let fresh: () => DurableStore

const STATE = parkedState('write_file')
const NUMBERING = FIRST_CALL_NUMBERING
const ARGS = { code: 'c', description: 'd' }

/** The `parent` token of a run's sub-calls, bound to the run's secret as the bridge does. */
function parentOf(secret: string): symbol {
  const token = Symbol('run_code')
  bindRunSecret(token, secret)
  return token
}
const writeFile = (callId: string, secret: string) => ({ callId, name: 'write_file', arguments: { path: 'a.md' }, parent: parentOf(secret) })

/** A store whose next write of `key` waits until `release()`: the process is paused right before it. */
function pausable(store: DurableStore) {
  let gate: { key: string; reached: () => void; open: Promise<void> } | undefined
  const wrapped: DurableStore = {
    get: (key) => store.get(key),
    list: (prefix, options) => store.list(prefix, options),
    delete: (key, options) => store.delete(key, options),
    put: async (key, value, options) => {
      if (gate?.key === key) {
        const { reached, open } = gate
        gate = undefined
        reached()
        await open
      }
      return store.put(key, value, options)
    },
  }
  /** Pauses the next write of `key`; resolves `reached` once the process is there. */
  const pauseBefore = (key: string) => {
    let release!: () => void
    let reached!: () => void
    const open = new Promise<void>((resolve) => (release = resolve))
    const there = new Promise<void>((resolve) => (reached = resolve))
    gate = { key, reached, open }
    return { reached: there, release }
  }
  return { store: wrapped, pauseBefore }
}

/** A parks run `callId`; B (a second process on the database) claims it as A's heartbeat goes stale. */
async function takenOver(callId: string, storeA: DurableStore) {
  const store = fresh()
  const a = new DurableRuns(storeA)
  const b = new DurableRuns(store)
  processes.push(a, b)
  const onA = a.forRun(callId, undefined, ARGS)
  onA.onPark(STATE, NUMBERING)
  await a.flushed()
  // staleMs 0: A's heartbeat counts as stale at once (what 12 s of SIGSTOP does in two-instances.test.ts).
  const resumed = await b.resumeAll(async () => 'resumed', { staleMs: 0 })
  expect(resumed.map((run) => run.callId)).toEqual([callId])
  const onB = b.forRun(callId, undefined, ARGS)
  expect(onB.secret).toBe(onA.secret)
  const record = async (n: number) => {
    const entry = await store.get(`calls/${callId}/${n}`)
    return entry === undefined ? undefined : (JSON.parse(entry.value) as { state: string; value?: unknown })
  }
  return { a, b, secret: onA.secret, store, record }
}

describe.skipIf(skip !== undefined)(`fencing of call records on PostgreSQL${skip === undefined ? '' : ` (skipped: ${skip})`}`, () => {
  beforeAll(async () => {
    cluster = await startPostgres()
    pool = new pg.Pool({ connectionString: cluster.url, max: 8 })
  }, 90_000)
  beforeEach(async () => {
    const table = `fencing_${++tables}`
    await createPostgresStore({ pool, table }).migrate()
    fresh = () => createPostgresStore({ pool, table })
  })
  afterEach(() => {
    for (const runs of processes.splice(0)) runs.close()
  })
  afterAll(async () => {
    await pool?.end()
    cluster?.stop()
  })

  it('A, taken over without knowing it, reaches a call: RUN_TAKEN_OVER and no record written; B makes the call', async () => {
    // The CI failure: A woke and wrote `started` for call 4 just before B got there; B read it as a call cut off (INTERRUPTED).
    const { a, b, secret, record } = await takenOver('quiet', fresh())
    const made: string[] = []
    const onA = await a.aroundBody(writeFile('quiet:code:2', secret), false, async () => (made.push('A'), 'A')).catch((error: unknown) => error)
    expect(onA).toMatchObject({ code: 'RUN_TAKEN_OVER' })
    expect(await record(2)).toBeUndefined()
    expect(await b.aroundBody(writeFile('quiet:code:2', secret), false, async () => (made.push('B'), 'B'))).toBe('B')
    expect(made).toEqual(['B'])
    expect(await record(2)).toMatchObject({ state: 'done', value: 'B' })
    // A knows it now: its next call writes nothing either.
    expect(a.taken('quiet')).toBe(true)
    await expect(a.aroundBody(writeFile('quiet:code:4', secret), false, async () => 'A')).rejects.toMatchObject({ code: 'RUN_TAKEN_OVER' })
    expect(await record(4)).toBeUndefined()
  })

  it('A, paused between its check and its write while B claims the run and makes the call: its late write lands on nothing, B\'s record stands', async () => {
    const paused = pausable(fresh())
    const { a, b, secret, record } = await (async () => {
      // A checks its fence before B claims: A parks, then reaches call 2 and stops just before writing `started`.
      const store = fresh()
      const a = new DurableRuns(paused.store)
      const b = new DurableRuns(store)
      processes.push(a, b)
      const onA = a.forRun('late', undefined, ARGS)
      onA.onPark(STATE, NUMBERING)
      await a.flushed()
      return { a, b, secret: onA.secret, store, record: async (n: number) => JSON.parse((await store.get(`calls/late/${n}`))?.value ?? 'null') as { state: string; value?: unknown } | null }
    })()
    const made: string[] = []
    const at = paused.pauseBefore('calls/late/2')
    const onA = a.aroundBody(writeFile('late:code:2', secret), false, async () => (made.push('A'), 'A')).catch((error: unknown) => error)
    await at.reached
    expect(await b.resumeAll(async () => 'resumed', { staleMs: 0 })).toHaveLength(1)
    b.forRun('late', undefined, ARGS)
    expect(await b.aroundBody(writeFile('late:code:2', secret), false, async () => (made.push('B'), 'B'))).toBe('B')
    at.release()
    expect(await onA).toMatchObject({ code: 'RUN_TAKEN_OVER' })
    expect(made).toEqual(['B'])
    // Not overwritten with A's `started` (a later takeover would read the call as cut off).
    expect(await record(2)).toMatchObject({ state: 'done', value: 'B' })
  })

  it('A paused while the call runs (after its check): B finds it started and fails it INTERRUPTED (the safe outcome); an idempotent one B makes again, and A\'s late `done` does not replace B\'s', async () => {
    const store = fresh()
    const a = new DurableRuns(store)
    const b = new DurableRuns(store)
    processes.push(a, b)
    const onA = a.forRun('cut', undefined, ARGS)
    onA.onPark(STATE, NUMBERING)
    await a.flushed()
    let finishA!: () => void
    const running = new Promise<void>((resolve) => (finishA = resolve))
    const made: string[] = []
    const body = (name: string) => {
      let started!: () => void
      const reached = new Promise<void>((resolve) => (started = resolve))
      return { reached, run: async () => (made.push(name), started(), await running, name) }
    }
    const [two, three] = [body('A'), body('A3')]
    const onAWrite = a.aroundBody(writeFile('cut:code:2', onA.secret), false, two.run)
    const onAIdempotent = a.aroundBody(writeFile('cut:code:3', onA.secret), true, three.run)
    await Promise.all([two.reached, three.reached])
    expect(await b.resumeAll(async () => 'resumed', { staleMs: 0 })).toHaveLength(1)
    b.forRun('cut', undefined, ARGS)
    await expect(b.aroundBody(writeFile('cut:code:2', onA.secret), false, async () => (made.push('B'), 'B'))).rejects.toMatchObject({ code: 'INTERRUPTED' })
    expect(await b.aroundBody(writeFile('cut:code:3', onA.secret), true, async () => (made.push('B3'), 'B3'))).toBe('B3')
    finishA()
    expect(await onAWrite).toBe('A')
    expect(await onAIdempotent).toBe('A3')
    expect(made.sort()).toEqual(['A', 'A3', 'B3'])
    const entry = await store.get('calls/cut/3')
    expect(JSON.parse(entry!.value)).toMatchObject({ state: 'done', value: 'B3' })
  })
})
