/**
 * The one record of a run in process (src/durable/runs.ts; issue 38 item 4): `DurableRuns`
 * writes a `/v1/runs` run's view beside its park under its claim, adopts a record, deletes it,
 * and `createStoreRunRecords` reads and ends views. Two `DurableRuns` over one cue store are two processes.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import { resolveRunServiceOptions, RunService } from '../../../src/durable/run-service.js'
import { createStoreRunRecords, DurableRuns, readStoredRun } from '../../../src/durable/runs.js'
import type { StoredRun } from '../../../src/durable/runs.js'
import { createRunEventLog, createStoreRunEvents } from '../../../src/durable/run-table.js'
import type { RunRecordJson, StoredView } from '../../../src/durable/run-table.js'
import type { ToolExecutionResult } from '../../../src/types.js'
import { cueStore, readJson } from '../../support/cue-store.js'
import { closeProcesses, durableProcess, FIRST_CALL_NUMBERING, parkedState } from '../../support/parked-run.js'

const STATE = parkedState('pay')
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

afterEach(closeProcesses)
/** A "process": its runs over one store. */
const process = durableProcess

const view = (over: Partial<StoredView> = {}): StoredView => ({ id: 'x', status: 'running', createdAt: 1, events: { first: 0, last: 0, dropped: 0 }, ...over })
const CALL = 'http-run-x'
const KEY = `runs/${CALL}`
const stored = async (store: ConstructorParameters<typeof DurableRuns>[0]) => (await readJson(store, KEY)) as StoredRun | undefined

describe("writeView: a /v1/runs run's view in its one record", () => {
  it('a first view writes the whole record under a new claim; the next keeps the park, claimedAt and the first meta', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    const before = Date.now()
    expect(await a.writeView(CALL, { agent: 'ag', principal: 'p1' }, view())).toBe(true)
    const first = (await stored(cues.base))!
    expect(first).toEqual({ agent: 'ag', principal: 'p1', view: view(), version: 1, callId: CALL, owner: a.owner, claimedAt: first.claimedAt, claim: first.claim })
    expect(first.claim).toMatch(UUID)
    expect(first.claimedAt).toBeGreaterThanOrEqual(before)
    expect(cues.ops.filter((o) => o.op === 'put').map((o) => o.ifVersion)).toEqual([null])
    // The run parks: its park joins the view.
    a.forRun(CALL, 'ag', { code: 'c', description: 'd' }, 'p1').onPark(STATE, FIRST_CALL_NUMBERING)
    await a.flushed()
    expect((await stored(cues.base))!.park?.code).toBe('c')
    const version = (await cues.base.get(KEY))!.version
    expect(await a.writeView(CALL, { agent: 'other', principal: 'p2' }, view({ status: 'done', settledAt: 9 }))).toBe(true)
    const second = (await stored(cues.base))!
    expect(second.view).toEqual(view({ status: 'done', settledAt: 9 }))
    expect(second.park?.code).toBe('c')
    expect([second.agent, second.principal, second.claim, second.claimedAt]).toEqual(['ag', 'p1', first.claim, first.claimedAt])
    expect(cues.ops.filter((o) => o.op === 'put' && o.key === KEY).at(-1)!.ifVersion).toBe(version)
  })

  it('a run taken by another process: false, and nothing read or written', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    expect(await a.writeView(CALL, {}, view())).toBe(true)
    const b = process(cues.store)
    expect(await b.adopt(CALL)).toBe(true)
    expect(await a.writeView(CALL, {}, view({ status: 'done' }))).toBe(false)
    expect(a.taken(CALL)).toBe(true)
    cues.ops.length = 0
    expect(await a.writeView(CALL, {}, view({ status: 'failed' }))).toBe(false)
    expect(cues.ops).toEqual([])
    expect((await stored(cues.base))!.view!.status).toBe('running')
  })

  it("a store's failure goes to the caller; the run's next write still lands", async () => {
    const cues = cueStore()
    const a = process(cues.store)
    cues.before = (op) => {
      if (op.op === 'put') {
        cues.before = undefined
        throw new Error('store down')
      }
    }
    await expect(a.writeView(CALL, {}, view())).rejects.toThrow('store down')
    expect(await a.writeView(CALL, {}, view({ status: 'done' }))).toBe(true)
    expect((await stored(cues.base))!.view!.status).toBe('done')
  })

  it("a record too large with its result: written without the view's result; too large otherwise, or another error: thrown", async () => {
    const store = createMemoryStore({ maxValueBytes: 2048 })
    const a = process(store)
    const big = { isError: false, content: [{ type: 'text', text: 'x'.repeat(4000) }] } as unknown as ToolExecutionResult
    expect(await a.writeView(CALL, {}, view({ status: 'done', result: big }))).toBe(true)
    const record = (await stored(store))!
    expect(record.view).toEqual(view({ status: 'done' }))
    expect(record.owner).toBe(a.owner)
    // A view that is too large without any result: the store's error.
    const huge = view({ id: 'x'.repeat(4000) })
    await expect(a.writeView(CALL, {}, huge)).rejects.toMatchObject({ code: 'STORE_VALUE_TOO_LARGE' })
    // A result, but another error: thrown, not retried without the result.
    const cues = cueStore()
    const b = process(cues.store)
    let puts = 0
    cues.before = (op) => {
      if (op.op === 'put' && ++puts === 1) throw Object.assign(new Error('busy'), { code: 'STORE_BUSY' })
    }
    await expect(b.writeView(CALL, {}, view({ status: 'done', result: big }))).rejects.toThrow('busy')
    expect(puts).toBe(1)
  })

  it('a compare-and-set lost to a write that keeps the claim is tried again, at most four times', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    expect(await a.writeView(CALL, {}, view())).toBe(true)
    let races = 0
    const race = async (limit: number) => {
      races = 0
      cues.before = async (op) => {
        if (op.op === 'put' && op.key === KEY && races < limit) {
          races++
          // The same record under the same claim, rewritten: a new version, not a claim.
          await cues.base.put(KEY, (await cues.base.get(KEY))!.value)
        }
      }
    }
    await race(3)
    expect(await a.writeView(CALL, {}, view({ status: 'done' }))).toBe(true)
    expect(races).toBe(3)
    await race(4)
    expect(await a.writeView(CALL, {}, view({ status: 'failed' }))).toBe(false)
    expect(races).toBe(4)
    expect((await stored(cues.base))!.view!.status).toBe('done')
    cues.before = undefined
  })
})

describe('a run with a view: its end keeps the record, deleteView lets it go', () => {
  it('ended() drops only the park (claim and view kept); deleteView then deletes it by its version, and the claim is forgotten', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    expect(await a.writeView(CALL, {}, view())).toBe(true)
    const run = a.forRun(CALL, undefined, { code: 'c', description: 'd' })
    run.onPark(STATE, FIRST_CALL_NUMBERING)
    await a.flushed()
    const parkedRecord = (await stored(cues.base))!
    expect(parkedRecord.park).toBeDefined()
    await a.ended(CALL)
    const after = (await stored(cues.base))!
    expect('park' in after).toBe(false)
    expect(after.view).toEqual(view())
    expect(after.claim).toBe(parkedRecord.claim)
    // The view is still its own to write.
    expect(await a.writeView(CALL, {}, view({ status: 'done' }))).toBe(true)
    const version = (await cues.base.get(KEY))!.version
    cues.ops.length = 0
    expect(await a.deleteView(CALL)).toBe(true)
    expect(cues.ops.filter((o) => o.op === 'delete')).toEqual([{ op: 'delete', key: KEY, ifVersion: version }])
    expect(await cues.base.get(KEY)).toBeUndefined()
    // Forgotten: a second delete does nothing, and a later view starts a new claim.
    cues.ops.length = 0
    expect(await a.deleteView(CALL)).toBe(false)
    expect(cues.ops).toEqual([])
    expect(await a.writeView(CALL, {}, view())).toBe(true)
    expect((await stored(cues.base))!.claim).not.toBe(after.claim)
  })

  it('an end with a view whose record another process claimed writes nothing', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    expect(await a.writeView(CALL, {}, view())).toBe(true)
    a.forRun(CALL, undefined, { code: 'c', description: 'd' }).onPark(STATE, FIRST_CALL_NUMBERING)
    await a.flushed()
    const b = process(cues.store)
    expect((await b.resumeAll(async () => undefined, { staleMs: 0 })).map((r) => r.callId)).toEqual([CALL])
    const theirs = await cues.base.get(KEY)
    // The sweep's claim is stored: the claimant holds the run before writing anything.
    expect(await b.holds(CALL)).toBe(true)
    await a.ended(CALL)
    expect(await cues.base.get(KEY)).toEqual(theirs)
    expect(await a.deleteView(CALL)).toBe(false)
    expect(await cues.base.get(KEY)).toEqual(theirs)
  })

  it('deleteView of a view never written, or of a run another process took: false, and the record stays', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    expect(await a.deleteView(CALL)).toBe(false)
    expect(cues.ops).toEqual([])
    expect(await a.writeView(CALL, {}, view())).toBe(true)
    const b = process(cues.store)
    expect(await b.adopt(CALL)).toBe(true)
    expect(await a.deleteView(CALL)).toBe(false)
    expect((await stored(cues.base))!.owner).toBe(b.owner)
  })
})

describe('adopt: a record taken up by this process', () => {
  it('no record, or one that is not a run: false, nothing written', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    expect(await a.adopt(CALL)).toBe(false)
    await cues.base.put(KEY, '{"version":2}')
    expect(await a.adopt(CALL)).toBe(false)
    expect(cues.ops.filter((o) => o.op === 'put')).toEqual([])
  })

  it("another process's record: a new owner and claim by compare-and-set, the rest kept; the adopter writes on, the old holder is fenced", async () => {
    const cues = cueStore()
    const a = process(cues.store)
    expect(await a.writeView(CALL, { agent: 'ag', principal: 'p1' }, view())).toBe(true)
    const old = (await stored(cues.base))!
    const version = (await cues.base.get(KEY))!.version
    const b = process(cues.store)
    const before = Date.now()
    expect(await b.adopt(CALL)).toBe(true)
    const adopted = (await stored(cues.base))!
    expect(adopted).toEqual({ ...old, owner: b.owner, claimedAt: adopted.claimedAt, claim: adopted.claim })
    expect(adopted.claim).toMatch(UUID)
    expect(adopted.claim).not.toBe(old.claim)
    expect(adopted.claimedAt).toBeGreaterThanOrEqual(before)
    // Held from the adoption on (its claim is stored), before any write of its own.
    expect(await b.holds(CALL)).toBe(true)
    expect(cues.ops.filter((o) => o.op === 'put').at(-1)!.ifVersion).toBe(version)
    expect(await b.writeView(CALL, {}, view({ status: 'done' }))).toBe(true)
    expect(await b.holds(CALL)).toBe(true)
    expect(await a.holds(CALL)).toBe(false)
    // Adopted again: held already, no new claim.
    cues.ops.length = 0
    expect(await b.adopt(CALL)).toBe(true)
    expect(cues.ops.map((o) => o.op)).toEqual(['get'])
    // A's adoption back clears its fence.
    expect(a.taken(CALL)).toBe(true)
    expect(await a.adopt(CALL)).toBe(true)
    expect(a.taken(CALL)).toBe(false)
    expect(await a.writeView(CALL, {}, view({ status: 'failed' }))).toBe(true)
    // And B, which held it, is told so when it adopts again.
    expect(await b.adopt(CALL)).toBe(false)
  })

  it('a compare-and-set lost to another write: false, and the adopter holds nothing', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    expect(await a.writeView(CALL, {}, view())).toBe(true)
    const b = process(cues.store)
    cues.before = async (op) => {
      if (op.op === 'put') {
        cues.before = undefined
        await cues.base.put(KEY, (await cues.base.get(KEY))!.value)
      }
    }
    expect(await b.adopt(CALL)).toBe(false)
    expect(await b.holds(CALL)).toBe(false)
    expect((await stored(cues.base))!.owner).toBe(a.owner)
  })

  it('an adopted run ends with its view kept (adoption marks it viewed), and its park written under the new claim', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    expect(await a.writeView(CALL, {}, view())).toBe(true)
    a.close()
    const c = process(cues.store)
    expect(await c.adopt(CALL)).toBe(true)
    const claim = (await stored(cues.base))!.claim
    const run = c.forRun(CALL, undefined, { code: 'c', description: 'd' })
    run.onPark(STATE, FIRST_CALL_NUMBERING)
    await c.flushed()
    const parkedBy = (await stored(cues.base))!
    expect([parkedBy.owner, parkedBy.claim, parkedBy.park?.code]).toEqual([c.owner, claim, 'c'])
    await c.ended(CALL)
    const ended = (await stored(cues.base))!
    expect('park' in ended).toBe(false)
    expect(ended.view).toEqual(view())
    expect(await c.deleteView(CALL)).toBe(true)
    expect(await cues.base.get(KEY)).toBeUndefined()
  })
})

describe('createStoreRunRecords: the views as the table reads them', () => {
  const json = (over: Partial<RunRecordJson> = {}): RunRecordJson => ({ id: 'x', callId: CALL, status: 'running', createdAt: 1, events: { first: 0, last: 0, dropped: 0 }, ...over })

  it('put writes the view with its own owner, agent and principal and a new claim, keeping the park; read answers it with its version', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    a.forRun(CALL, 'old', { code: 'c', description: 'd' }, 'p0').onPark(STATE, FIRST_CALL_NUMBERING)
    await a.flushed()
    const parkedRecord = (await stored(cues.base))!
    const records = createStoreRunRecords(cues.store)
    expect((await records.put(json({ agent: 'ag', principal: 'p1', owner: 'o1', status: 'failed' }))).ok).toBe(true)
    const written = (await stored(cues.base))!
    expect(written).toEqual({ version: 1, callId: CALL, park: parkedRecord.park, claimedAt: parkedRecord.claimedAt, agent: 'ag', principal: 'p1', view: view({ status: 'failed' }), owner: 'o1', claim: written.claim })
    expect(written.claim).toMatch(UUID)
    expect(written.claim).not.toBe(parkedRecord.claim)
    // Without owner, agent or principal: none is kept from before.
    expect((await records.put(json())).ok).toBe(true)
    const bare = (await stored(cues.base))!
    expect(['owner', 'agent', 'principal'].filter((k) => k in bare)).toEqual([])
    const read = (await records.read('x'))!
    expect(read).toEqual({ record: json(), version: (await cues.base.get(KEY))!.version })
    expect(await records.get('x')).toEqual(json())
    expect(await records.list(10)).toEqual(['x'])
    // The old holder is fenced by the new claim.
    expect(await a.holds(CALL)).toBe(false)
  })

  it('put by compare-and-set: a version that is not the stored one, or null over a record, is a conflict with the stored version', async () => {
    const cues = cueStore()
    const records = createStoreRunRecords(cues.store)
    expect(await records.put(json(), { ifVersion: 'nope' })).toEqual({ ok: false, version: undefined })
    const first = await records.put(json(), { ifVersion: null })
    expect(first.ok).toBe(true)
    expect(await records.put(json(), { ifVersion: null })).toEqual({ ok: false, version: first.version })
    expect(await records.put(json(), { ifVersion: 'nope' })).toEqual({ ok: false, version: first.version })
    const second = await records.put(json({ status: 'done' }), { ifVersion: first.version })
    expect(second.ok).toBe(true)
    // Without ifVersion: over whatever is there.
    expect((await records.put(json({ status: 'failed' }))).ok).toBe(true)
    expect((await records.get('x'))!.status).toBe('failed')
    // A write that loses between the read and the put: the store's answer.
    cues.before = async (op) => {
      if (op.op === 'put') {
        cues.before = undefined
        await cues.base.put(KEY, (await cues.base.get(KEY))!.value)
      }
    }
    expect((await records.put(json({ status: 'done' }))).ok).toBe(false)
  })

  it('a record too large with its result is written without it; without a result, or on another error, the error', async () => {
    const store = createMemoryStore({ maxValueBytes: 2048 })
    const records = createStoreRunRecords(store)
    const big = { isError: false, content: [{ type: 'text', text: 'x'.repeat(4000) }] } as unknown as ToolExecutionResult
    expect((await records.put(json({ status: 'done', result: big }))).ok).toBe(true)
    expect(await records.get('x')).toEqual(json({ status: 'done' }))
    await expect(records.put(json({ status: 'done', principal: 'p'.repeat(60), createdAt: 2, events: { first: 0, last: 0, dropped: 0, next: Number('9'.repeat(15)) }, asked: true, settledAt: 3, agent: 'a'.repeat(3000) }))).rejects.toMatchObject({ code: 'STORE_VALUE_TOO_LARGE' })
    // Another error, once: thrown, not written again without the result.
    let fails = 1
    const failing = createStoreRunRecords({ ...store, put: async (...args) => (fails-- > 0 ? Promise.reject(Object.assign(new Error('busy'), { code: 'STORE_BUSY' })) : store.put(...args)) })
    await expect(failing.put(json({ id: 'y', callId: 'http-run-y', status: 'done', result: big }))).rejects.toThrow('busy')
    expect(await store.get('runs/http-run-y')).toBeUndefined()
  })

  it('read: no view, a view of another id, or a record of another call id is no record; delete and list by id', async () => {
    const cues = cueStore()
    const records = createStoreRunRecords(cues.store)
    expect(await records.read('x')).toBeUndefined()
    expect(await records.get('x')).toBeUndefined()
    const base = { version: 1, callId: CALL, owner: 'o', claim: 'c' }
    await cues.base.put(KEY, JSON.stringify(base))
    expect(await records.read('x')).toBeUndefined()
    await cues.base.put(KEY, JSON.stringify({ ...base, view: view({ id: 'y' }) }))
    expect(await records.read('x')).toBeUndefined()
    await cues.base.put(KEY, JSON.stringify({ ...base, callId: 'http-run-y', view: view() }))
    expect(await records.read('x')).toBeUndefined()
    await cues.base.put(KEY, JSON.stringify({ ...base, agent: 'ag', principal: 'p1', view: view() }))
    expect(await records.get('x')).toEqual({ ...view(), callId: CALL, agent: 'ag', principal: 'p1', owner: 'o' })
    await cues.base.put(KEY, JSON.stringify({ ...base, owner: undefined, view: view() }))
    expect(await records.get('x')).toEqual({ ...view(), callId: CALL })
    await cues.base.put('runs/http-run-y', JSON.stringify({ ...base, callId: 'http-run-y', view: view({ id: 'y' }) }))
    await cues.base.put('runs/other', JSON.stringify({ ...base, callId: 'other' }))
    expect(await records.list(10)).toEqual(['x', 'y'])
    expect(await records.list(1)).toEqual(['x'])
    const version = (await cues.base.get(KEY))!.version
    expect(await records.delete('x', { ifVersion: 'nope' })).toEqual({ ok: false, version })
    expect((await records.delete('x')).ok).toBe(true)
    expect(await records.list(10)).toEqual(['y'])
  })
})

describe('readStoredRun: a record that is not one is skipped, never trusted', () => {
  const base = { version: 1, callId: 'r' }
  const read = (over: Record<string, unknown>) => readStoredRun(JSON.stringify({ ...base, ...over }))

  it('checks each field it trusts', async () => {
    expect(await readStoredRun('not json')).toBeUndefined()
    expect(await readStoredRun('null')).toBeUndefined()
    expect(await readStoredRun('"r"')).toBeUndefined()
    expect(await read({})).toEqual(base)
    expect(await read({ version: 2 })).toBeUndefined()
    expect(await read({ callId: 7 })).toBeUndefined()
    expect(await read({ agent: 'a' })).toEqual({ ...base, agent: 'a' })
    expect(await read({ agent: 7 })).toBeUndefined()
    expect(await read({ principal: 'p'.repeat(64) })).toEqual({ ...base, principal: 'p'.repeat(64) })
    expect(await read({ principal: 'p'.repeat(65) })).toBeUndefined()
    expect(await read({ principal: '' })).toBeUndefined()
    expect(await read({ principal: 'a b' })).toBeUndefined()
    expect(await read({ principal: 'x\nok' })).toBeUndefined()
    expect(await read({ principal: 7 })).toBeUndefined()
    expect(await read({ owner: 'o' })).toEqual({ ...base, owner: 'o' })
    expect(await read({ owner: 7 })).toBeUndefined()
    expect(await read({ claim: 'c'.repeat(64) })).toEqual({ ...base, claim: 'c'.repeat(64) })
    expect(await read({ claim: 'c'.repeat(65) })).toBeUndefined()
    expect(await read({ claim: 7 })).toBeUndefined()
    expect(await read({ view: view() })).toEqual({ ...base, view: view() })
    expect(await read({ view: { id: 'x' } })).toBeUndefined()
    expect(await read({ park: { code: 'c' } })).toBeUndefined()
  })
})

describe("runtime.runs: a table run's record and snapshot writes (RunService)", () => {
  const json = (over: Partial<RunRecordJson> = {}): RunRecordJson => ({ id: 'x', callId: CALL, status: 'running', createdAt: 1, events: { first: 0, last: 0, dropped: 0 }, ...over })
  const RUN = { id: 'x', callId: CALL }
  const MANIFEST = 'run-events/x'

  function serviceOn(store: ConstructorParameters<typeof DurableRuns>[0]) {
    const durable = process(store)
    return { durable, service: new RunService(store, durable, async () => [], resolveRunServiceOptions({ resumeEveryMs: 0 })) }
  }
  const logOf = (n: number) => {
    const log = createRunEventLog(4096)
    for (let i = 0; i < n; i++) log.append('message', { i })
    return log
  }

  it('options: every refusal has its text; 0 and the timer maximum are allowed', () => {
    const refused = (options: unknown) => {
      try {
        resolveRunServiceOptions(options)
      } catch (error) {
        return `${(error as { code?: string }).code}: ${(error as Error).message}`
      }
      return 'ok'
    }
    const ms = (name: string) => `INVALID_OPTIONS: createToolRuntime: runs.${name} must be an integer from 0 to 2147483647 (ms)`
    for (const name of ['staleMs', 'resumeEveryMs']) {
      for (const bad of [-1, 1.5, '5', 2_147_483_648, Number.NaN]) expect(refused({ [name]: bad })).toBe(ms(name))
      expect(refused({ [name]: 0 })).toBe('ok')
      expect(refused({ [name]: 2_147_483_647 })).toBe('ok')
    }
    for (const bad of [-1, 1.5, '3', Number.NaN]) expect(refused({ maxFollowers: bad })).toBe('INVALID_OPTIONS: createToolRuntime: runs.maxFollowers must be a non-negative integer')
    expect(resolveRunServiceOptions({ maxFollowers: 0 }).maxFollowers).toBe(0)
  })

  it("writeRecord: the view goes into the run's record with its agent and principal; none given, none stored; a fenced run writes nothing", async () => {
    const cues = cueStore()
    const { service, durable } = serviceOn(cues.store)
    expect(await service.writeRecord(json({ agent: 'ag', principal: 'p1' }))).toBe(true)
    expect(await stored(cues.base)).toMatchObject({ agent: 'ag', principal: 'p1', owner: durable.owner, view: view() })
    const other = serviceOn(cues.store)
    expect(await other.service.writeRecord({ ...json(), callId: 'http-run-y', id: 'y' })).toBe(true)
    const bare = (await readJson(cues.base, 'runs/http-run-y')) as StoredRun
    expect(['agent', 'principal'].filter((k) => k in bare)).toEqual([])
    // Another process claims run x: this one is fenced, and from then on does not even ask the store.
    expect(await other.durable.adopt(CALL)).toBe(true)
    expect(await service.writeRecord(json({ status: 'done' }))).toBe(false)
    expect(service.fenced('x')).toBe(true)
    cues.ops.length = 0
    expect(await service.writeRecord(json({ status: 'failed' }))).toBe(false)
    expect(cues.ops).toEqual([])
    // Without durable runs: nothing to write.
    const bareService = new RunService(undefined, undefined, async () => [], resolveRunServiceOptions(undefined))
    expect(await bareService.writeRecord(json())).toBe(false)
    expect(await bareService.writeEvents(bareService.events(4096) ?? createStoreRunEvents(cues.base, 4096), RUN, logOf(1), 0)).toBe(false)
    expect(bareService.fenced('x')).toBe(false)
  })

  it('writeEvents: compare-and-set on the version it last wrote; a conflict while it holds the run is written over, four are STORE_BUSY', async () => {
    const cues = cueStore()
    const { service } = serviceOn(cues.store)
    expect(await service.writeRecord(json())).toBe(true)
    const events = service.events(4096)!
    const manifestPuts = () => cues.ops.filter((o) => o.op === 'put' && o.key === MANIFEST).map((o) => o.ifVersion)
    expect(await service.writeEvents(events, RUN, logOf(1), 0)).toBe(true)
    const v1 = (await cues.base.get(MANIFEST))!.version
    expect(await service.writeEvents(events, RUN, logOf(2), 0)).toBe(true)
    expect(manifestPuts()).toEqual([null, v1])
    // Another writer replaced the snapshot: this process still holds the run, so it writes again over that version.
    const theirs = createStoreRunEvents(cues.base, 4096)
    await theirs.put('x', logOf(5))
    const v3 = (await cues.base.get(MANIFEST))!.version
    cues.ops.length = 0
    expect(await service.writeEvents(events, RUN, logOf(3), 0)).toBe(true)
    expect(manifestPuts().slice(1)).toEqual([v3])
    expect((await events.load('x'))!.last).toBe(3)
    // The snapshot deleted: the next one is created anew (ifVersion null).
    await events.delete('x')
    service.eventsDeleted('x')
    service.eventsDeleted('unknown')
    cues.ops.length = 0
    expect(await service.writeEvents(events, RUN, logOf(4), 0)).toBe(true)
    expect(manifestPuts()).toEqual([null])
    // Four conflicts in a row: STORE_BUSY, with its text.
    let conflicts = 0
    cues.before = async (op) => {
      if (op.op === 'put' && op.key === MANIFEST) {
        conflicts++
        await theirs.put('x', logOf(1))
      }
    }
    await expect(service.writeEvents(events, RUN, logOf(6), 0)).rejects.toMatchObject({
      code: 'STORE_BUSY',
      message: "run x's events were written by another process 4 times while this one held the run; not written",
    })
    expect(conflicts).toBe(4)
    expect(service.fenced('x')).toBe(false)
    cues.before = undefined
  })

  it("writeEvents: a conflict once another process claimed the run fences it, and a fenced or taken run's snapshot is not written", async () => {
    const cues = cueStore()
    const { service, durable } = serviceOn(cues.store)
    expect(await service.writeRecord(json())).toBe(true)
    const events = service.events(4096)!
    expect(await service.writeEvents(events, RUN, logOf(1), 0)).toBe(true)
    const other = serviceOn(cues.store)
    expect(await other.durable.adopt(CALL)).toBe(true)
    await createStoreRunEvents(cues.base, 4096).put('x', logOf(9))
    // Not taken yet as far as this process knows: it tries, loses, asks, and is fenced.
    expect(durable.taken(CALL)).toBe(false)
    expect(await service.writeEvents(events, RUN, logOf(2), 0)).toBe(false)
    expect(service.fenced('x')).toBe(true)
    expect((await events.load('x'))!.last).toBe(9)
    cues.ops.length = 0
    expect(await service.writeEvents(events, RUN, logOf(3), 0)).toBe(false)
    expect(cues.ops).toEqual([])
    // A run the runtime knows as taken (not yet fenced here): refused before any write.
    const second = serviceOn(cues.store)
    const run2 = { id: 'y', callId: 'http-run-y' }
    expect(await second.service.writeRecord(json({ id: 'y', callId: 'http-run-y' }))).toBe(true)
    expect(await other.durable.adopt('http-run-y')).toBe(true)
    expect(await second.durable.holds('http-run-y')).toBe(false)
    expect(second.durable.taken('http-run-y')).toBe(true)
    cues.ops.length = 0
    expect(await second.service.writeEvents(events, run2, logOf(1), 0)).toBe(false)
    expect(cues.ops).toEqual([])
    expect(second.service.fenced('y')).toBe(true)
  })

  it('writeSnapshotRecord: a record fenced off takes the snapshot it just wrote with it, unless another process wrote one since', async () => {
    const cues = cueStore()
    const { service } = serviceOn(cues.store)
    const events = service.events(4096)!
    expect(await service.writeSnapshotRecord(events, json())).toBe(true)
    expect(await service.writeEvents(events, RUN, logOf(2), 0)).toBe(true)
    const other = serviceOn(cues.store)
    expect(await other.durable.adopt(CALL)).toBe(true)
    expect(await service.writeSnapshotRecord(events, json({ status: 'done' }))).toBe(false)
    expect(await events.load('x')).toBeUndefined()
    // Another process's snapshot since: kept.
    const third = serviceOn(cues.store)
    expect(await third.service.writeRecord(json({ id: 'z', callId: 'http-run-z' }))).toBe(true)
    expect(await third.service.writeEvents(events, { id: 'z', callId: 'http-run-z' }, logOf(2), 0)).toBe(true)
    expect(await other.durable.adopt('http-run-z')).toBe(true)
    await createStoreRunEvents(cues.base, 4096).put('z', logOf(7))
    expect(await third.service.writeSnapshotRecord(events, json({ id: 'z', callId: 'http-run-z', status: 'done' }))).toBe(false)
    expect((await events.load('z'))!.last).toBe(7)
    // Nothing written by this process: no delete asked.
    const fourth = serviceOn(cues.store)
    expect(await other.durable.adopt(CALL)).toBe(true)
    cues.ops.length = 0
    expect(await fourth.service.writeSnapshotRecord(events, json({ status: 'done' }))).toBe(false)
    expect(cues.ops.filter((o) => o.op === 'delete' || o.op === 'list')).toEqual([])
  })

  it('deleteRecord: while held, the record goes and then `after`; fenced or lost, neither, and the claim is forgotten either way', async () => {
    const cues = cueStore()
    const { service } = serviceOn(cues.store)
    expect(await service.writeRecord(json())).toBe(true)
    const after: string[] = []
    expect(await service.deleteRecord(RUN, async () => void after.push('x'))).toBe(true)
    expect(after).toEqual(['x'])
    expect(await cues.base.get(KEY)).toBeUndefined()
    // Not held (never written, or already gone): false, no `after`.
    expect(await service.deleteRecord(RUN, async () => void after.push('again'))).toBe(false)
    expect(after).toEqual(['x'])
    // Fenced: the record (another process's now) stays.
    expect(await service.writeRecord(json())).toBe(true)
    const other = serviceOn(cues.store)
    expect(await other.durable.adopt(CALL)).toBe(true)
    expect(await service.writeRecord(json({ status: 'done' }))).toBe(false)
    expect(await service.deleteRecord(RUN, async () => void after.push('fenced'))).toBe(false)
    expect(after).toEqual(['x'])
    expect((await stored(cues.base))!.owner).toBe(other.durable.owner)
    // Unfenced again after the delete: the next view starts over (a new claim, refused by the store's compare-and-set here).
    expect(service.fenced('x')).toBe(false)
  })

  it('adopted: the snapshot version it was taken up at is the next write’s compare-and-set; a record it cannot adopt fences the run', async () => {
    const cues = cueStore()
    const first = serviceOn(cues.store)
    expect(await first.service.writeRecord(json())).toBe(true)
    const events = first.service.events(4096)!
    expect(await first.service.writeEvents(events, RUN, logOf(2), 0)).toBe(true)
    const version = (await cues.base.get(MANIFEST))!.version
    const { service, durable } = serviceOn(cues.store)
    await service.adopted(RUN, version)
    expect((await stored(cues.base))!.owner).toBe(durable.owner)
    cues.ops.length = 0
    expect(await service.writeEvents(events, RUN, logOf(3), 0)).toBe(true)
    expect(cues.ops.filter((o) => o.op === 'put' && o.key === MANIFEST).map((o) => o.ifVersion)).toEqual([version])
    // No snapshot: the first write creates one (null); no record to adopt: fenced.
    const { service: late } = serviceOn(cues.store)
    await late.adopted({ id: 'none', callId: 'http-run-none' }, undefined)
    expect(late.fenced('none')).toBe(true)
    expect(await late.writeRecord(json({ id: 'none', callId: 'http-run-none' }))).toBe(false)
    // Adopted again: the fence goes (the adoption succeeds now that a record exists).
    await cues.base.put('runs/http-run-none', JSON.stringify({ version: 1, callId: 'http-run-none', view: view({ id: 'none' }) }))
    cues.ops.length = 0
    await late.adopted({ id: 'none', callId: 'http-run-none' }, undefined)
    expect(late.fenced('none')).toBe(false)
    expect(await late.writeEvents(events, { id: 'none', callId: 'http-run-none' }, logOf(1), 0)).toBe(true)
    expect(cues.ops.filter((o) => o.op === 'put' && o.key === 'run-events/none').map((o) => o.ifVersion)).toEqual([null])
  })
})
