/**
 * `runtime.runs` in process: the writes a dispose drains (issue 35: a `/v1/runs` record
 * written after the store was let go), the resume pool (each run to one table), its
 * options, and a lost-run sweep that never settles a run on a store that cannot answer.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { FIRST_CALL_NUMBERING, parkedState } from '../../support/parked-run.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import type { DurableStore } from '../../../src/durable/index.js'
import { resolveRunServiceOptions, RunService } from '../../../src/durable/run-service.js'
import { DurableRuns } from '../../../src/durable/runs.js'
import type { ResumedRun } from '../../../src/durable/runs.js'
import { createRunEventLog, interruptedRunResult } from '../../../src/durable/run-table.js'
import type { RunRecordJson } from '../../../src/durable/run-table.js'
import { runsHeld } from '../../../src/http/index.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { JSON_AUTH, createFixture } from '../http/fixtures.js'
import { createStoreRunRecords } from '../../../src/durable/runs.js'

/** A store that, once `close()` is called, records every write it is asked for (a store let go). */
function closingStore() {
  const base = createMemoryStore()
  const late: string[] = []
  let closed = false
  const store: DurableStore = {
    get: (key) => base.get(key),
    list: (prefix, options) => base.list(prefix, options),
    put: (key, value, options) => (closed ? (late.push(key), Promise.reject(new Error('store closed'))) : base.put(key, value, options)),
    delete: (key, options) => (closed ? (late.push(key), Promise.reject(new Error('store closed'))) : base.delete(key, options)),
  }
  return { store, late, close: () => (closed = true) }
}

const handle = (callId: string): ResumedRun => ({ callId, result: Promise.resolve(undefined), cancel: () => {} })

describe('runtime.runs: dispose drains the runs and their writes', () => {
  it('a /v1/runs run cut off by dispose() writes its last record before dispose resolves, none after', async () => {
    const { store, late, close } = closingStore()
    const reported: unknown[] = []
    const f = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime({ wallMs: 30_000 }), store, runs: { resumeEveryMs: 0 } }, { onError: (error) => void reported.push(error) })
    const started = await f.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code: 'await tools.wait({}); return 1', description: 'd' }) })
    const { id } = (await started.json()) as { id: string }
    await f.wait.started
    await f.runtime.dispose()
    close()
    expect(runsHeld(f.app)!.live).toBe(0)
    // The record says how the run ended: it was written before the store was let go.
    const record = (await createStoreRunRecords(store).get(id))! as unknown as { status: string }
    expect(record.status).toBe('failed')
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(late).toEqual([])
    expect(reported).toEqual([])
  })

  it('drained() waits for queued writes in order, those queued meanwhile included; a failed write does not stop the next', async () => {
    const service = new RunService(createMemoryStore(), undefined, async () => [], resolveRunServiceOptions(undefined))
    const order: string[] = []
    let letGo: () => void = () => {}
    const gate = new Promise<void>((resolve) => (letGo = resolve))
    void service.queue('a', async () => {
      await gate
      order.push('a1')
      void service.queue('b', async () => void order.push('b1'))
    })
    const failed = service.queue('a', async () => {
      throw new Error('write failed')
    })
    void service.queue('a', async () => void order.push('a3'))
    const rejected = expect(failed).rejects.toThrow('write failed')
    let drained = false
    const done = service.drained().then(() => (drained = true))
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(drained).toBe(false)
    letGo()
    await done
    await rejected
    // In order within a run; the write queued meanwhile (another run's) landed too.
    expect(order.filter((step) => step.startsWith('a'))).toEqual(['a1', 'a3'])
    expect(order).toContain('b1')
  })
})

describe('runtime.runs: resume hands each run to one table', () => {
  it('two attached tables: each resumed run is taken once; adopted counts the takes', async () => {
    const service = new RunService(createMemoryStore(), undefined, async () => [handle('r1'), handle('r2')], resolveRunServiceOptions({ resumeEveryMs: 0 }))
    const taken: string[][] = [[], []]
    for (const mine of taken) {
      service.attach({
        adopt: async (pool) => {
          let n = 0
          for (const callId of ['r1', 'r2']) if (pool.take(callId) !== undefined) (mine.push(callId), n++)
          return n
        },
      })
    }
    const answer = await service.resume({ staleMs: 0 })
    expect(answer.adopted).toBe(2)
    expect(answer.resumed.map((run) => run.callId)).toEqual(['r1', 'r2'])
    expect(taken).toEqual([['r1', 'r2'], []])
    service.close()
    expect(await service.resume()).toEqual({ resumed: [], adopted: 0 })
  })

  it('a lost-run sweep never settles a record whose parked state the store cannot read', async () => {
    const base = createMemoryStore()
    const store: DurableStore = { ...base, get: (key) => (key.startsWith('runs/') ? Promise.reject(new Error('down')) : base.get(key)), put: base.put, list: base.list, delete: base.delete }
    const service = new RunService(store, undefined, async () => [], resolveRunServiceOptions(undefined))
    const record = { id: 'x', callId: 'http-run-x', status: 'running' as const, createdAt: 1, events: { first: 0, last: 0, dropped: 0 } }
    await expect(service.settleIfLost(record, undefined, 0)).rejects.toThrow('down')
    expect(await service.parked('http-run-x')).toBe(false)
    expect(await base.get('run-records/x')).toBeUndefined()
  })
})

describe('createToolRuntime({ runs }) options', () => {
  it('defaults; bounds; stable INVALID_OPTIONS texts', () => {
    expect(resolveRunServiceOptions(undefined)).toEqual({ resumeEveryMs: 10_000, staleMs: 30_000, maxFollowers: 64 })
    expect(resolveRunServiceOptions({ resumeEveryMs: 0, staleMs: 0 })).toEqual({ resumeEveryMs: 0, staleMs: 0, maxFollowers: 64 })
    expect(() => resolveRunServiceOptions(7)).toThrow('createToolRuntime: runs must be an object')
    expect(() => resolveRunServiceOptions(null)).toThrow('createToolRuntime: runs must be an object')
    for (const bad of [-1, 1.5, 2_147_483_648, '10', Number.NaN]) {
      expect(() => resolveRunServiceOptions({ resumeEveryMs: bad })).toThrow('createToolRuntime: runs.resumeEveryMs must be an integer from 0 to 2147483647 (ms)')
      expect(() => resolveRunServiceOptions({ staleMs: bad })).toThrow('createToolRuntime: runs.staleMs must be an integer from 0 to 2147483647 (ms)')
    }
  })
})

afterEach(() => {
  vi.useRealTimers()
  vi.restoreAllMocks()
})

/** A service over a memory store with its process's durable side (one "process"). */
function serviceOn(store: DurableStore, options: Parameters<typeof resolveRunServiceOptions>[0] = { resumeEveryMs: 0 }, resumeAll: (staleMs: number) => Promise<ResumedRun[]> = async () => []) {
  const durable = new DurableRuns(store)
  return { durable, service: new RunService(store, durable, resumeAll, resolveRunServiceOptions(options)) }
}

const running = (over: Partial<RunRecordJson> = {}): RunRecordJson => ({ id: 'x', callId: 'http-run-x', status: 'running', createdAt: 1, events: { first: 0, last: 0, dropped: 0 }, ...over })

describe('runtime.runs without a store', () => {
  it('is not durable: no owner, no records or events, nobody alive, nothing parked, no loop', async () => {
    vi.useFakeTimers()
    let sweeps = 0
    const service = new RunService(undefined, undefined, async () => (sweeps++, []), resolveRunServiceOptions({ resumeEveryMs: 10 }))
    expect(service.durable).toBe(false)
    expect(service.owner).toBe('')
    expect(service.records).toBeUndefined()
    expect(service.events(1024)).toBeUndefined()
    service.hold()
    expect(await service.alive(crypto.randomUUID(), 60_000)).toBe(false)
    expect(await service.parked('r')).toBe(false)
    expect(await service.settleIfLost(running(), undefined, 0)).toBe(false)
    service.attach({ adopt: async () => 0 })
    await vi.advanceTimersByTimeAsync(100)
    expect(sweeps).toBe(0)
  })
})

describe('runtime.runs with a store', () => {
  it('is durable: the owner is the process id; hold() starts its one heartbeat; alive() reads it', async () => {
    const store = createMemoryStore()
    const { durable, service } = serviceOn(store)
    expect(service.durable).toBe(true)
    expect(service.owner).toBe(durable.owner)
    expect(await service.alive(durable.owner, 60_000)).toBe(false)
    service.hold()
    await durable.flushed()
    expect(await service.alive(durable.owner, 60_000)).toBe(true)
    durable.close()
  })

  it('records and events live in the store (run-records/, run-events/)', async () => {
    const store = createMemoryStore()
    const { service } = serviceOn(store)
    await service.records!.put(running())
    expect(await service.records!.get('x')).toEqual(running())
    const events = service.events(4096)!
    const log = createRunEventLog(4096)
    log.append('message', { a: 1 })
    await events.put('x', log)
    expect((await store.list('run-events/')).entries.length).toBeGreaterThan(0)
    expect((await events.load('x'))?.frames.map((frame) => frame.id)).toEqual([1])
  })

  it('parked(): whether the runtime parked the run in the store', async () => {
    const store = createMemoryStore()
    const { service } = serviceOn(store)
    expect(await service.parked('r')).toBe(false)
    await store.put('runs/r', JSON.stringify({ version: 1, callId: 'r' }))
    expect(await service.parked('r')).toBe(false)
    await store.put('runs/r', JSON.stringify({ version: 1, callId: 'r', park: { code: 'c', description: 'd', state: parkedState('pay'), numbering: FIRST_CALL_NUMBERING } }))
    expect(await service.parked('r')).toBe(true)
  })
})

describe('runtime.runs: the resume loop', () => {
  it('the first attach sweeps once now and every resumeEveryMs; a second attach adds no loop; close() stops it', async () => {
    vi.useFakeTimers()
    const seen: number[] = []
    const { service } = serviceOn(createMemoryStore(), { resumeEveryMs: 1000, staleMs: 7 }, async (staleMs) => (seen.push(staleMs), []))
    service.attach({ adopt: async () => 0 })
    service.attach({ adopt: async () => 0 })
    expect(seen).toEqual([])
    await vi.advanceTimersByTimeAsync(0)
    expect(seen).toEqual([7])
    await vi.advanceTimersByTimeAsync(999)
    expect(seen).toEqual([7])
    await vi.advanceTimersByTimeAsync(1)
    expect(seen).toEqual([7, 7])
    service.close()
    await vi.advanceTimersByTimeAsync(5000)
    expect(seen).toEqual([7, 7])
  })

  it('no loop with resumeEveryMs 0, nor once closed; a failed sweep is reported, the loop goes on', async () => {
    vi.useFakeTimers()
    let sweeps = 0
    const off = serviceOn(createMemoryStore(), { resumeEveryMs: 0 }, async () => (sweeps++, [])).service
    off.attach({ adopt: async () => 0 })
    const closed = serviceOn(createMemoryStore(), { resumeEveryMs: 10 }, async () => (sweeps++, [])).service
    closed.close()
    closed.attach({ adopt: async () => 0 })
    await vi.advanceTimersByTimeAsync(100)
    expect(sweeps).toBe(0)
    const errors: unknown[][] = []
    vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void errors.push(args))
    const failing = serviceOn(createMemoryStore(), { resumeEveryMs: 10 }, async () => {
      sweeps++
      throw new Error('store down')
    }).service
    failing.attach({ adopt: async () => 0 })
    await vi.advanceTimersByTimeAsync(10)
    expect(sweeps).toBe(2)
    expect(errors).toHaveLength(2)
    expect(errors[0]![0]).toBe('resuming runs failed:')
    expect((errors[0]![1] as Error).message).toBe('store down')
    failing.close()
  })

  it('resume() passes its staleMs or the configured one; adopt() hands the pool to attached tables only, until detached', async () => {
    const seen: number[] = []
    const { service } = serviceOn(createMemoryStore(), { resumeEveryMs: 0, staleMs: 42 }, async (staleMs) => (seen.push(staleMs), [handle('r1')]))
    const stales: number[] = []
    const sizes: number[] = []
    const detach = service.attach({ adopt: async (pool, staleMs) => (stales.push(staleMs), sizes.push(pool.size), pool.take('r1') === undefined ? 0 : 1) })
    expect(await service.resume()).toMatchObject({ adopted: 1 })
    expect(await service.resume({ staleMs: 5 })).toMatchObject({ adopted: 1 })
    expect(seen).toEqual([42, 5])
    expect(stales).toEqual([42, 5])
    expect(await service.adopt([handle('r1'), handle('r2')])).toMatchObject({ adopted: 1 })
    expect(sizes).toEqual([1, 1, 2])
    expect(stales).toEqual([42, 5, 42])
    // A pool hands a run once, and nothing it does not hold.
    await service.adopt([handle('r1')], 3)
    expect(stales.at(-1)).toBe(3)
    detach()
    expect(await service.adopt([handle('r1')])).toEqual({ resumed: [handle('r1')].map(() => expect.objectContaining({ callId: 'r1' })), adopted: 0 })
    expect(sizes).toHaveLength(4)
  })

  it('a pool answers undefined for a run it does not hold, and for a run already taken', async () => {
    const { service } = serviceOn(createMemoryStore())
    const takes: unknown[] = []
    service.attach({ adopt: async (pool) => (takes.push(pool.take('r1'), pool.take('r1'), pool.take('zz')), 0) })
    await service.adopt([handle('r1')])
    expect(takes.map((run) => (run as ResumedRun | undefined)?.callId)).toEqual(['r1', undefined, undefined])
  })
})

describe('runtime.runs: settleIfLost ends only what nothing will finish', () => {
  it('a running record whose process is silent and that never parked: failed as INTERRUPTED, its event snapshot deleted', async () => {
    const store = createMemoryStore()
    const { service } = serviceOn(store)
    const events = service.events(4096)!
    const log = createRunEventLog(4096)
    log.append('message', {})
    await events.put('x', log)
    for (const owner of [undefined, crypto.randomUUID()]) {
      const record = running(owner === undefined ? {} : { owner })
      await service.records!.put(record)
      const before = Date.now()
      expect(await service.settleIfLost(record, events, 60_000)).toBe(true)
      const settled = await service.records!.get('x')
      expect(settled).toEqual({ ...record, status: 'failed', settledAt: settled!.settledAt, result: interruptedRunResult('the process running it') })
      expect(settled!.settledAt).toBeGreaterThanOrEqual(before)
      expect(await events.load('x')).toBeUndefined()
    }
    // Without an event store, the record alone.
    await service.records!.put(running())
    expect(await service.settleIfLost(running(), undefined, 60_000)).toBe(true)
    expect((await service.records!.get('x'))!.status).toBe('failed')
  })

  it('leaves a record that is settled, ours, parked, or whose process is alive', async () => {
    const store = createMemoryStore()
    const { durable, service } = serviceOn(store)
    const live = crypto.randomUUID()
    await store.put(`owners/${live}`, JSON.stringify({ at: Date.now() }))
    const cases = [running({ status: 'done' }), running({ status: 'cancelled' }), running({ status: 'failed' }), running({ owner: durable.owner }), running({ owner: live })]
    for (const record of cases) {
      await service.records!.put(record)
      expect(await service.settleIfLost(record, undefined, 60_000)).toBe(false)
      expect(await service.records!.get('x')).toEqual(record)
    }
    // The live one is lost once its beat is older than staleMs.
    await store.put(`owners/${live}`, JSON.stringify({ at: Date.now() - 120_000 }))
    expect(await service.settleIfLost(running({ owner: live }), undefined, 60_000)).toBe(true)
    // Parked: its record holds a parked state beside its view.
    await store.delete('runs/http-run-x')
    await service.records!.put(running())
    const current = JSON.parse((await store.get('runs/http-run-x'))!.value) as object
    await store.put('runs/http-run-x', JSON.stringify({ ...current, park: { code: 'c', description: 'd', state: parkedState('pay'), numbering: FIRST_CALL_NUMBERING } }))
    expect(await service.settleIfLost(running(), undefined, 0)).toBe(false)
    expect(await service.records!.get('x')).toEqual(running())
  })
})

describe('runtime.runs: tracked work', () => {
  it('drained() waits for tracked work, failed or not, and work tracked meanwhile', async () => {
    const { service } = serviceOn(createMemoryStore())
    let finish: () => void = () => {}
    const work = new Promise<void>((resolve) => (finish = resolve))
    const order: string[] = []
    service.track(work.then(() => void order.push('work')))
    service.track(Promise.reject(new Error('failed run')))
    service.track(
      work.then(() => {
        order.push('second')
        service.track(new Promise<void>((resolve) => setTimeout(() => (order.push('late'), resolve()), 5)))
      }),
    )
    let drained = false
    const done = service.drained().then(() => (drained = true))
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(drained).toBe(false)
    finish()
    await done
    expect(order).toEqual(['work', 'second', 'late'])
    await service.drained()
  })

  it("drained() called after a run's first write landed still waits for its next one", async () => {
    const { service } = serviceOn(createMemoryStore())
    let release: () => void = () => {}
    const gate = new Promise<void>((resolve) => (release = resolve))
    let second = false
    const first = service.queue('a', async () => {})
    void service.queue('a', async () => {
      await gate
      second = true
    })
    await first
    await new Promise((resolve) => setTimeout(resolve, 1))
    let drained = false
    const done = service.drained().then(() => (drained = true))
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(drained).toBe(false)
    release()
    await done
    expect(second).toBe(true)
  })

  it('queue(): a write rejects as it does, and the next write of the run still runs', async () => {
    const { service } = serviceOn(createMemoryStore())
    await expect(service.queue('a', async () => Promise.reject(new Error('no')))).rejects.toThrow('no')
    let ran = false
    await service.queue('a', async () => void (ran = true))
    expect(ran).toBe(true)
    await service.drained()
  })
})

describe('createToolRuntime({ runs }) option bounds', () => {
  it('accepts the largest timer and an empty object', () => {
    expect(resolveRunServiceOptions({ resumeEveryMs: 2_147_483_647, staleMs: 2_147_483_647 })).toEqual({ resumeEveryMs: 2_147_483_647, staleMs: 2_147_483_647, maxFollowers: 64 })
    expect(resolveRunServiceOptions({})).toEqual({ resumeEveryMs: 10_000, staleMs: 30_000, maxFollowers: 64 })
    expect(resolveRunServiceOptions({ staleMs: 1 })).toEqual({ resumeEveryMs: 10_000, staleMs: 1, maxFollowers: 64 })
    expect(() => resolveRunServiceOptions('x')).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
    expect(() => resolveRunServiceOptions({ staleMs: -1 })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
  })
})
