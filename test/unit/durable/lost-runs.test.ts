/**
 * A `/v1/runs` run whose process died before the run ever parked leaves nothing to resume:
 * its record must not say `running` forever. `runtime.runs.resume()` ends such a record as
 * `failed` with `INTERRUPTED` — and only such a record: a run whose app instance still
 * beats, a run with parked state (another process resumes it) and the app's own runs are
 * left alone. The process-level version (SIGKILL mid-run) is in crash-resume.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FIRST_CALL_NUMBERING, parkedState } from '../../support/parked-run.js'
import type { CodeRuntime } from '../../../src/code-runtime/contract.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import type { DurableStore } from '../../../src/durable/index.js'
import { runKeySegment } from '../../../src/durable/runs.js'
import type { RunBody } from '../../../src/http/index.js'
import { AUTH, JSON_AUTH, createFixture } from '../http/fixtures.js'
import { createStoreRunRecords } from '../../../src/durable/runs.js'
import type { RunRecordJson } from '../../../src/durable/run-table.js'

/** Writes a `/v1/runs` record as another process would (its view in runs/http-run-<id>). */
const putRecord = (store: DurableStore, record: object) => createStoreRunRecords(store).put(record as RunRecordJson)

let codeRuntime: CodeRuntime

beforeAll(async () => {
  const { createSandboxRuntime } = await import('../../../platforms/node/index.js')
  codeRuntime = createSandboxRuntime({ memoryMb: 32 })
})
afterAll(async () => {
  await codeRuntime.dispose()
})

/** The record another app instance wrote when it started a run (then, maybe, it died). */
async function leftRunning(store: DurableStore, owner: string | undefined): Promise<string> {
  const id = crypto.randomUUID()
  const record: RunRecordJson = { id, callId: `http-run-${id}`, status: 'running', createdAt: Date.now() - 5_000, events: { first: 1, last: 1, dropped: 0 }, ...(owner === undefined ? {} : { owner }) }
  await putRecord(store, (record))
  return id
}

function setup() {
  const store = createMemoryStore()
  const fixture = createFixture({ mode: 'both', codeRuntime, store, runs: { resumeEveryMs: 0 } })
  const get = async (id: string) => (await (await fixture.app.request(`/v1/runs/${id}`, { headers: AUTH })).json()) as RunBody
  return { store, fixture, get }
}

describe('runtime.runs.resume() ends the records of runs lost before they parked', () => {
  it('a run whose app instance never beat and left no parked state → failed, INTERRUPTED, in the store too', async () => {
    const { store, fixture, get } = setup()
    const id = await leftRunning(store, crypto.randomUUID())
    expect((await get(id)).status).toBe('running')
    await fixture.runtime.runs.resume({ staleMs: 30_000 })
    const body = await get(id)
    expect(body.status).toBe('failed')
    const result = body.result
    if (result === undefined || !result.isError) throw new Error(`expected a failed result: ${JSON.stringify(body)}`)
    expect(result.error.info).toEqual({ name: 'ToolError', code: 'INTERRUPTED' })
    expect(result.error.message).toBe(
      'the run was interrupted: the process running it stopped before the run parked, so there is no state to resume it from; its calls may or may not have taken effect',
    )
    expect(body.settledAt).toBeGreaterThan(0)
    const stored = (await createStoreRunRecords(store).get(id))! as unknown as { status: string }
    expect(stored.status).toBe('failed')
    await fixture.runtime.dispose()
  })

  it('a record without an owner (written before owners were recorded) and one with a hostile owner count as lost', async () => {
    const { store, fixture, get } = setup()
    const plain = await leftRunning(store, undefined)
    // Not an owner id this code writes: never turned into a store key, so it reads as silent.
    const hostile = await leftRunning(store, '../../owners/x')
    await fixture.runtime.runs.resume()
    expect((await get(plain)).status).toBe('failed')
    expect((await get(hostile)).status).toBe('failed')
    await fixture.runtime.dispose()
  })

  it('a run whose app instance beat within staleMs stays running; once its beat is older, it ends', async () => {
    const { store, fixture, get } = setup()
    const owner = crypto.randomUUID()
    const id = await leftRunning(store, owner)
    await store.put(`owners/${owner}`, JSON.stringify({ at: Date.now() - 10_000 }))
    await fixture.runtime.runs.resume({ staleMs: 30_000 })
    expect((await get(id)).status).toBe('running')
    await fixture.runtime.runs.resume({ staleMs: 5_000 })
    expect((await get(id)).status).toBe('failed')
    await fixture.runtime.dispose()
  })

  it('a run with parked state in the store is left to whichever process resumes it', async () => {
    const { store, fixture, get } = setup()
    const id = await leftRunning(store, crypto.randomUUID())
    // Its record holds a parked state beside its view: the sweep that settles lost runs leaves it.
    const key = `runs/${runKeySegment(`http-run-${id}`)}`
    const current = JSON.parse((await store.get(key))!.value) as object
    await store.put(key, JSON.stringify({ ...current, park: { code: 'c', description: 'd', state: parkedState('pay'), numbering: FIRST_CALL_NUMBERING } }))
    expect(await fixture.runtime.runs.settleIfLost((await createStoreRunRecords(store).get(id))!, undefined, 0)).toBe(false)
    expect((await get(id)).status).toBe('running')
    await fixture.runtime.dispose()
  })

  it("the app's own running run is never ended by its own sweep, however small staleMs; its record names it and its beat is in the store", async () => {
    const { store, fixture, get } = setup()
    const response = await fixture.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code: 'await tools.wait({})\nreturn 1', description: 'waits' }) })
    const started = (await response.json()) as { id: string }
    expect(response.status, JSON.stringify(started)).toBe(202)
    await fixture.wait.started
    await fixture.runtime.runs.resume({ staleMs: 0 })
    expect((await get(started.id)).status).toBe('running')
    const record = (await createStoreRunRecords(store).get(started.id))! as unknown as { owner?: string }
    expect(record.owner).toMatch(/^[0-9a-f-]{36}$/)
    const beat = JSON.parse((await store.get(`owners/${record.owner}`))!.value) as { at: number }
    expect(Date.now() - beat.at).toBeLessThan(60_000)
    await fixture.app.request(`/v1/runs/${started.id}`, { method: 'DELETE', headers: AUTH })
    await fixture.runtime.dispose()
  })
})
