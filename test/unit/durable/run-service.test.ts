/**
 * `runtime.runs` in process: the writes a dispose drains (issue 35: a `/v1/runs` record
 * written after the store was let go), the resume pool (each run to one table), its
 * options, and a lost-run sweep that never settles a run on a store that cannot answer.
 */
import { describe, expect, it } from 'vitest'
import { createMemoryStore } from '../../../src/durable/index.js'
import type { DurableStore } from '../../../src/durable/index.js'
import { resolveRunServiceOptions, RunService } from '../../../src/durable/run-service.js'
import type { ResumedRun } from '../../../src/durable/runs.js'
import { runsHeld } from '../../../src/http/index.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { JSON_AUTH, createFixture } from '../http/fixtures.js'

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
    const record = JSON.parse((await store.get(`run-records/${id}`))!.value) as { status: string }
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
    expect(resolveRunServiceOptions(undefined)).toEqual({ resumeEveryMs: 10_000, staleMs: 30_000 })
    expect(resolveRunServiceOptions({ resumeEveryMs: 0, staleMs: 0 })).toEqual({ resumeEveryMs: 0, staleMs: 0 })
    expect(() => resolveRunServiceOptions(7)).toThrow('createToolRuntime: runs must be an object')
    expect(() => resolveRunServiceOptions(null)).toThrow('createToolRuntime: runs must be an object')
    for (const bad of [-1, 1.5, 2_147_483_648, '10', Number.NaN]) {
      expect(() => resolveRunServiceOptions({ resumeEveryMs: bad })).toThrow('createToolRuntime: runs.resumeEveryMs must be an integer from 0 to 2147483647 (ms)')
      expect(() => resolveRunServiceOptions({ staleMs: bad })).toThrow('createToolRuntime: runs.staleMs must be an integer from 0 to 2147483647 (ms)')
    }
  })
})
