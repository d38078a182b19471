/**
 * A `/v1/runs` run resumed by a sweep after a `kill -9` may end before its table adopts it:
 * its approval was decided while its process was down, so the resumed execution answers at
 * once, while the table is still adopting the runs resumed before it (each adoption awaits
 * store writes). Its end must keep the record's view (the table writes the final status
 * into it, and deletes it when it evicts the run): a record holding a view is the table's.
 *
 * Found by hand against `npm start`: two runs waiting for a person, `kill -9`, restart,
 * both decided; after the sweep both read `done` from the new process's table, but their
 * records (`runs/http-run-<id>`) were gone and their event snapshots left behind, so after
 * the next restart `GET /v1/runs/:id` answered 404 `RUN_NOT_FOUND` to their own starter.
 * `ended()` kept a record only when this process had already written its view (`#viewed`),
 * which a sweep's claim does not do.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import type { StoredRun } from '../../../src/durable/runs.js'
import type { StoredView } from '../../../src/durable/run-table.js'
import { readJson } from '../../support/cue-store.js'
import { closeProcesses, durableProcess, FIRST_CALL_NUMBERING, parkedState } from '../../support/parked-run.js'

afterEach(closeProcesses)

const CALL = 'http-run-0b0c1f3e-5a63-4f39-9d1e-6a1d2c3b4a59'
const KEY = `runs/${CALL}`
const view = (over: Partial<StoredView> = {}): StoredView => ({ id: CALL.slice('http-run-'.length), status: 'running', createdAt: 1, events: { first: 1, last: 4, dropped: 0 }, ...over })

describe('a resumed /v1/runs run that ends before its table adopts it', () => {
  it('keeps its record with its view (the park dropped); the table then adopts it, writes its end and deletes it on eviction', async () => {
    const store = createMemoryStore()
    // The killed process: the run's view, then its park (it waits for a person).
    const killed = durableProcess(store)
    expect(await killed.writeView(CALL, { principal: 'api' }, view())).toBe(true)
    killed.forRun(CALL, undefined, { code: 'c', description: 'd' }, 'api').onPark(parkedState('pay'), FIRST_CALL_NUMBERING)
    await killed.flushed()
    killed.close()

    // The next process's sweep claims and resumes it: the execution registers as the run's.
    const next = durableProcess(store)
    const resumed = await next.resumeAll(async (callId, agent, args, _signal, principal) => void next.forRun(callId, agent, args, principal), { staleMs: 0 })
    expect(resumed.map((run) => run.callId)).toEqual([CALL])

    // Its decision was already taken: it ends before the table reaches it.
    await next.ended(CALL)
    const kept = (await readJson(store, KEY)) as StoredRun | undefined
    expect(kept?.view).toEqual(view())
    expect(kept !== undefined && 'park' in kept).toBe(false)
    expect(kept?.owner).toBe(next.owner)

    // The table adopts it and writes its end into the same record.
    expect(await next.adopt(CALL)).toBe(true)
    expect(await next.writeView(CALL, {}, view({ status: 'done', settledAt: 2 }))).toBe(true)
    expect(((await readJson(store, KEY)) as StoredRun).view?.status).toBe('done')
    expect(((await readJson(store, KEY)) as StoredRun).principal).toBe('api')
    // Evicted: the record goes.
    expect(await next.deleteView(CALL)).toBe(true)
    expect(await store.get(KEY)).toBeUndefined()
  })

  it('a resumed run without a view (not a /v1/runs run) is still deleted at its end', async () => {
    const store = createMemoryStore()
    const killed = durableProcess(store)
    killed.forRun(CALL, undefined, { code: 'c', description: 'd' }).onPark(parkedState('pay'), FIRST_CALL_NUMBERING)
    await killed.flushed()
    killed.close()
    const next = durableProcess(store)
    expect((await next.resumeAll(async (callId, agent, args, _signal, principal) => void next.forRun(callId, agent, args, principal), { staleMs: 0 })).length).toBe(1)
    await next.ended(CALL)
    expect(await store.get(KEY)).toBeUndefined()
  })
})
