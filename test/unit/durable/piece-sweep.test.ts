/**
 * Pieces no record names are swept (issue 38 follow-up): a park's pieces left by a process that
 * stopped between writing them and its record, a generation whose delete failed, an event
 * snapshot whose run's record is gone. Never a write still under way (its pieces are younger
 * than the age bound), and at most a bounded number of keys a pass. Memory, file and edge stores.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { createDurableObjectStore } from '../../../platforms/edge/durable-object-store.js'
import { createFileStore } from '../../../platforms/node/index.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import { PIECE_SWEEP_EVERY_MS, PIECE_SWEEP_MAX_DELETES, PIECE_SWEEP_MIN_AGE_MS, RunService, resolveRunServiceOptions } from '../../../src/durable/run-service.js'
import { createRunEventLog, createStoreRunEvents, newPiecesGen } from '../../../src/durable/run-table.js'
import { readStoredRun, sweepParkPieces } from '../../../src/durable/runs.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { mapStorage } from '../../support/map-storage.js'
import { closeProcesses, durableProcess, FIRST_CALL_NUMBERING, parkedState } from '../../support/parked-run.js'
import { until } from '../../support/poll.js'

const dirs: string[] = []
afterEach(() => {
  closeProcesses()
  vi.useRealTimers()
})
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** A cap small enough that a 20 KiB program spills its park into a few pieces. */
const CAP = 8 * 1024
const BIG = 'x'.repeat(20 * 1024)
const STATE = parkedState('pay')
const LATER = () => Date.now() + PIECE_SWEEP_MIN_AGE_MS + 60_000

const STORES: readonly (readonly [string, () => DurableStore])[] = [
  ['memory', () => createMemoryStore({ maxValueBytes: CAP })],
  [
    'file',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'toolyard-piece-sweep-'))
      dirs.push(dir)
      return createFileStore(dir, { maxValueBytes: CAP })
    },
  ],
  ['edge', () => createDurableObjectStore(mapStorage(), { maxValueBytes: CAP })],
]

async function keys(store: DurableStore, prefix: string): Promise<string[]> {
  const out: string[] = []
  for (let after: string | undefined; ; ) {
    const page = await store.list(prefix, { limit: 1000, ...(after === undefined ? {} : { after }) })
    out.push(...page.entries.map((e) => e.key))
    if (page.cursor === undefined) return out
    after = page.cursor
  }
}

/**
 * `base` whose write of a record naming spilled pieces waits until released (never: the
 * process stopped between its pieces and its record), and whose deletes of park pieces fail while `failDeletes`.
 */
function heldStore(base: DurableStore) {
  const gate = { held: 0, release: () => {}, failDeletes: false }
  let released = new Promise<void>((resolve) => (gate.release = resolve))
  const store: DurableStore = {
    ...base,
    async put(key, value, options) {
      if (key.startsWith('runs/') && value.includes('"parkPieces"') && gate.held >= 0) {
        gate.held++
        await released
      }
      return base.put(key, value, options)
    },
    async delete(key, options) {
      if (gate.failDeletes && key.startsWith('run-parks/')) throw new Error('the store failed')
      return base.delete(key, options)
    },
  }
  return { store, gate, reset: () => ((gate.held = -1), (released = Promise.resolve())) }
}

function serviceOn(store: DurableStore): RunService {
  return new RunService(store, durableProcess(store), async () => [], resolveRunServiceOptions({ resumeEveryMs: 0 }))
}

describe.each(STORES)('orphaned park pieces on the %s store', (_name, make) => {
  it('pieces left by a process that stopped before its record are swept after the age bound, not before', async () => {
    const base = make()
    const { store, gate } = heldStore(base)
    const a = durableProcess(store)
    a.forRun('r1', undefined, { code: BIG, description: 'd' }).onPark(STATE, FIRST_CALL_NUMBERING)
    await until(() => gate.held === 1, 'the pieces to be written and the record held')
    a.close()
    const pieces = await keys(base, 'run-parks/')
    expect(pieces.length).toBeGreaterThan(1)
    expect(await base.get('runs/r1')).toBeUndefined()
    const service = serviceOn(base)
    expect((await service.sweepPieces(Date.now() + PIECE_SWEEP_MIN_AGE_MS - 60_000)).parks).toEqual({ listed: pieces.length, deleted: 0 })
    expect(await keys(base, 'run-parks/')).toEqual(pieces)
    expect((await service.sweepPieces(LATER())).parks).toEqual({ listed: pieces.length, deleted: pieces.length })
    expect(await keys(base, 'run-parks/')).toEqual([])
  })

  it('a spill under way is never swept: its pieces are young while its record is held, and named once it lands', async () => {
    const base = make()
    const { store, gate, reset } = heldStore(base)
    const a = durableProcess(store)
    a.forRun('r2', undefined, { code: BIG, description: 'd' }).onPark(STATE, FIRST_CALL_NUMBERING)
    await until(() => gate.held === 1, 'the pieces to be written and the record held')
    const pieces = await keys(base, 'run-parks/')
    const service = serviceOn(base)
    expect((await service.sweepPieces()).parks.deleted).toBe(0)
    expect((await service.sweepPieces(Date.now() + PIECE_SWEEP_MIN_AGE_MS - 60_000)).parks.deleted).toBe(0)
    reset()
    gate.release()
    await a.flushed()
    a.close()
    const record = (await readStoredRun((await base.get('runs/r2'))!.value))!
    expect(pieces.every((key) => key.startsWith(`run-parks/r2/${record.parkPieces!.gen}.`))).toBe(true)
    expect((await service.sweepPieces(Date.now() + 100 * PIECE_SWEEP_MIN_AGE_MS)).parks.deleted).toBe(0)
    expect(await keys(base, 'run-parks/')).toEqual(pieces)
    // Still whole: another process resumes the run from them.
    const b = durableProcess(base)
    const resumed = await b.resumeAll(async () => undefined, { staleMs: 0 })
    expect(resumed.map((run) => run.callId)).toEqual(['r2'])
  })

  it("a run whose record names generation B loses generation A's leftover pieces (their delete failed), and resumes from B", async () => {
    const base = make()
    const { store, gate, reset } = heldStore(base)
    reset()
    const a = durableProcess(store)
    const run = a.forRun('r3', undefined, { code: BIG, description: 'd' })
    run.onPark(STATE, FIRST_CALL_NUMBERING)
    await a.flushed()
    const first = (await readStoredRun((await base.get('runs/r3'))!.value))!.parkPieces!
    gate.failDeletes = true
    run.onPark({ ...STATE, busyMs: 1 }, FIRST_CALL_NUMBERING)
    await a.flushed()
    a.close()
    const second = (await readStoredRun((await base.get('runs/r3'))!.value))!.parkPieces!
    expect(second.gen).not.toBe(first.gen)
    const left = await keys(base, 'run-parks/')
    expect(left.filter((key) => key.includes(`/${first.gen}.`))).toHaveLength(first.pieces)
    const swept = await serviceOn(base).sweepPieces(LATER())
    expect(swept.parks).toEqual({ listed: first.pieces + second.pieces, deleted: first.pieces })
    expect(await keys(base, 'run-parks/')).toEqual(left.filter((key) => key.includes(`/${second.gen}.`)))
    const b = durableProcess(base)
    let state: unknown
    const resumed = await b.resumeAll(async (callId, agent, args) => void (state = b.forRun(callId, agent, args).resume?.state), { staleMs: 0 })
    expect(resumed).toHaveLength(1)
    expect(state).toMatchObject({ busyMs: 1 })
  })

  it('a pass lists and deletes at most its bounds, and the next goes on where it stopped; pieces of a generation without a time stay', async () => {
    const store = make()
    const gen = newPiecesGen()
    for (let r = 0; r < 10; r++) for (let n = 0; n < 3; n++) await store.put(`run-parks/r${r}/${gen}.${n}`, '"x"')
    await store.put('run-parks/zz/0123456789ab.0', '"x"')
    const now = LATER()
    const bounds = { maxKeys: 8, maxDeletes: 100, minAgeMs: PIECE_SWEEP_MIN_AGE_MS }
    const first = await sweepParkPieces(store, bounds, undefined, now)
    expect(first).toEqual({ listed: 8, deleted: 8, cursor: `run-parks/r2/${gen}.1` })
    const second = await sweepParkPieces(store, { ...bounds, maxKeys: 100, maxDeletes: 5 }, first.cursor, now)
    expect(second).toEqual({ listed: 5, deleted: 5, cursor: `run-parks/r4/${gen}.0` })
    const rest = await sweepParkPieces(store, { ...bounds, maxKeys: 100 }, second.cursor, now)
    expect(rest).toEqual({ listed: 18, deleted: 17 })
    expect(await keys(store, 'run-parks/')).toEqual(['run-parks/zz/0123456789ab.0'])
  })
})

describe('the run service sweeps as it resumes, within its per-pass bound', () => {
  it(`deletes at most ${PIECE_SWEEP_MAX_DELETES} pieces a pass; a resume sweep starts one, at most every ${PIECE_SWEEP_EVERY_MS} ms`, async () => {
    const store = createMemoryStore()
    const gen = newPiecesGen()
    const total = PIECE_SWEEP_MAX_DELETES + 10
    for (let n = 0; n < total; n++) await store.put(`run-parks/r/${gen}.${n}`, '"x"')
    const service = serviceOn(store)
    expect((await service.sweepPieces(LATER())).parks.deleted).toBe(PIECE_SWEEP_MAX_DELETES)
    expect(await keys(store, 'run-parks/')).toHaveLength(10)
    vi.useFakeTimers({ toFake: ['Date'] })
    const at = LATER()
    vi.setSystemTime(at)
    await service.resume()
    await service.drained()
    expect(await keys(store, 'run-parks/')).toEqual([])
    await store.put(`run-parks/r/${gen}.0`, '"x"')
    vi.setSystemTime(at + PIECE_SWEEP_EVERY_MS - 1)
    await service.resume()
    await service.drained()
    expect(await keys(store, 'run-parks/')).toHaveLength(1)
    vi.setSystemTime(at + PIECE_SWEEP_EVERY_MS)
    await service.resume()
    await service.drained()
    expect(await keys(store, 'run-parks/')).toEqual([])
  })
})

describe.each(STORES)('orphaned event snapshot pieces on the %s store', (_name, make) => {
  const logOf = (n: number) => {
    const log = createRunEventLog(1024 * 1024)
    for (let i = 0; i < n; i++) log.append('progress', { i, note: 'y'.repeat(100) })
    return log
  }

  it("pieces its manifest does not name go; a snapshot whose run's record is gone goes whole once old; a young one or one with a record stays", async () => {
    const store = make()
    const events = createStoreRunEvents(store, 1024 * 1024)
    // e1: a run with its record, and pieces of a generation whose write never got its manifest.
    await store.put('runs/http-run-e1', '{}')
    expect((await events.put('e1', logOf(200))).ok).toBe(true)
    const stray = `run-events/e1/${newPiecesGen()}.0`
    await store.put(stray, '"x"')
    // e2: a snapshot whose run's record is gone (its process stopped between the two deletes).
    expect((await events.put('e2', logOf(200))).ok).toBe(true)
    const before = await keys(store, 'run-events/')
    const service = serviceOn(store)
    expect((await service.sweepPieces()).events.deleted).toBe(0)
    expect(await keys(store, 'run-events/')).toEqual(before)
    const swept = await service.sweepPieces(LATER())
    const e2Pieces = before.filter((key) => key.startsWith('run-events/e2/'))
    expect(swept.events).toMatchObject({ deleted: 1 + e2Pieces.length })
    expect(await keys(store, 'run-events/')).toEqual(before.filter((key) => key !== stray && !key.startsWith('run-events/e2')))
    expect((await events.load('e1'))?.frames).toHaveLength(200)
  })
})
