/**
 * Fencing of `/v1/runs` records and event snapshots (brief s44 item 1): a process the run was
 * taken from, paused right before a write, never lands it over its new holder's record or
 * snapshot when it wakes; a sweep never ends as lost a record its process wrote meanwhile.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { PendingApproval } from '../../../src/approvals/index.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import { RUN_EVENTS_PREFIX } from '../../../src/durable/run-table.js'
import type { RunRecordJson } from '../../../src/durable/run-table.js'
import { createStoreRunRecords } from '../../../src/durable/runs.js'
import type { ResumedRun } from '../../../src/durable/runs.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { runsHeld } from '../../../src/http/index.js'
import type { ToolExecutionResult } from '../../../src/types.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { askingPayTool, createFixture, JSON_AUTH, sseFrames, AUTH } from '../http/fixtures.js'
import { until } from '../../support/poll.js'

/** A store whose `n`th write of a key matching `match` waits until released: the process is paused right before it. */
function pausable(store: DurableStore) {
  let gate: { match: (key: string) => boolean; skip: number; reached: () => void; open: Promise<void>; landed: (ok: boolean) => void } | undefined
  const wrapped: DurableStore = {
    get: (key) => store.get(key),
    list: (prefix, options) => store.list(prefix, options),
    delete: (key, options) => store.delete(key, options),
    put: async (key, value, options) => {
      const held = gate !== undefined && gate.match(key) && gate.skip-- === 0 ? gate : undefined
      if (held === undefined) return store.put(key, value, options)
      gate = undefined
      held.reached()
      await held.open
      const put = await store.put(key, value, options)
      held.landed(put.ok)
      return put
    },
  }
  /** Pauses the write after `skip` matching ones; `landed` says whether it was written once let go. */
  const pauseAt = (match: (key: string) => boolean, skip = 0) => {
    let release!: () => void
    let reached!: () => void
    let landed!: (ok: boolean) => void
    const open = new Promise<void>((resolve) => (release = resolve))
    const there = new Promise<void>((resolve) => (reached = resolve))
    const done = new Promise<boolean>((resolve) => (landed = resolve))
    gate = { match, skip, reached, open, landed }
    return { reached: there, release, landed: done }
  }
  return { store: wrapped, pauseAt }
}

const disposers: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const dispose of disposers.splice(0)) await dispose()
})

/** One process on `store`: `pay` asks a person. */
function processOn(store: DurableStore) {
  const stopping = new AbortController()
  const broker = createApprovalBroker()
  const f = createFixture(
    { mode: 'both', codeRuntime: createInProcessRuntime({ wallMs: 30_000 }), approvals: broker, store, runs: { resumeEveryMs: 0 } },
    { signal: stopping.signal, onError: () => {} },
  )
  f.runtime.register(askingPayTool())
  f.runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
  disposers.push(async () => {
    stopping.abort()
    await f.runtime.dispose()
  })
  return { ...f, broker, stopping }
}

/** A run of `p` waiting for a person: its ids and its approval. */
async function waitingRun(p: ReturnType<typeof processOn>) {
  const response = await p.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code: 'return await tools.pay({ cents: 5 })', description: 'd' }) })
  expect(response.status).toBe(202)
  const run = (await response.json()) as { id: string; callId: string }
  const approval = (await sseFrames(await p.app.request(`/v1/runs/${run.id}/events`, { headers: AUTH })).until('approval')).data as PendingApproval
  return { ...run, approval }
}

/** A run resumed elsewhere, as `runtime.resumeRuns()` hands it to B; settled by the test. */
function resumedHandle(callId: string) {
  let settle!: (result: ToolExecutionResult) => void
  const handle: ResumedRun = { callId, result: new Promise<ToolExecutionResult>((resolve) => (settle = resolve)), cancel: () => {} }
  return { handle, settle: (result: ToolExecutionResult) => settle(result) }
}

const OK: ToolExecutionResult = { isError: false, value: { by: 'B' }, content: [{ type: 'text', text: 'B finished it' }] }
const recordOf = async (store: DurableStore, id: string) => (await createStoreRunRecords(store).get(id)) ?? null
/** A run's one record as the store holds it (its view beside its parked state), without its claim token. */
const storedOf = (record: RunRecordJson): string => {
  const { callId, owner, agent: _a, principal: _p, ...view } = record
  return JSON.stringify({ version: 1, callId, owner, claimedAt: 1, view })
}
const eventKeys = async (store: DurableStore, id: string) => (await store.list(`${RUN_EVENTS_PREFIX}${id}`)).entries.map((e) => e.key)

/** A's run is taken over by B while A is paused at a write, and B finishes it; A then ends its copy (the person denies it there). */
async function takenOverWhilePaused(match: (key: string) => boolean, skip: number) {
  const store = createMemoryStore()
  const paused = pausable(store)
  const a = processOn(paused.store)
  const at = paused.pauseAt(match, skip)
  const run = await waitingRun(a)
  await at.reached
  const b = processOn(store)
  const { handle, settle } = resumedHandle(run.callId)
  expect((await b.runtime.runs.adopt([handle], 0)).adopted).toBe(1)
  settle(OK)
  await until(async () => (await recordOf(store, run.id))?.status === 'done', 'B settles the run')
  const settledByB = await recordOf(store, run.id)
  expect(settledByB).toMatchObject({ status: 'done', owner: b.runtime.runs.owner, result: OK })
  at.release()
  return { store, a, b, run, settledByB, landed: at.landed }
}

describe('/v1/runs records: a process the run was taken from never overwrites its new holder', () => {
  it("A, paused before its snapshot's `running` record, wakes after B finished the run: B's `done` record stands, and A's later end writes nothing", async () => {
    const { store, a, run, settledByB, landed } = await takenOverWhilePaused((key) => key.startsWith('runs/http-run-'), 1)
    expect(await landed).toBe(false)
    expect(await recordOf(store, run.id)).toEqual(settledByB)
    // A's copy ends (denied there): its settled record is not written either, nor a snapshot left behind.
    expect((await a.broker.decide(run.approval.id, { decision: 'deny' })).ok).toBe(true)
    await until(() => runsHeld(a.app)!.live === 0, "A's copy ends")
    await a.runtime.runs.drained()
    expect(await recordOf(store, run.id)).toEqual(settledByB)
    expect(await eventKeys(store, run.id)).toEqual([])
    expect(a.runtime.runs.fenced(run.id)).toBe(true)
  })

  it("A, paused before its snapshot's manifest, wakes after B finished the run (and dropped the snapshot): nothing of A's snapshot is left", async () => {
    const { store, a, run, settledByB, landed } = await takenOverWhilePaused((key) => key.startsWith(RUN_EVENTS_PREFIX) && !key.slice(RUN_EVENTS_PREFIX.length).includes('/'), 0)
    await landed
    expect((await a.broker.decide(run.approval.id, { decision: 'deny' })).ok).toBe(true)
    await until(() => runsHeld(a.app)!.live === 0, "A's copy ends")
    await a.runtime.runs.drained()
    expect(await recordOf(store, run.id)).toEqual(settledByB)
    expect(await eventKeys(store, run.id)).toEqual([])
    expect(a.runtime.runs.fenced(run.id)).toBe(true)
  })

  it('a sweep judging a record lost does not end it when its process wrote it meanwhile', async () => {
    const store = createMemoryStore()
    const paused = pausable(store)
    const c = processOn(paused.store)
    const id = crypto.randomUUID()
    const stale: RunRecordJson = { id, callId: `http-run-${id}`, status: 'running', createdAt: 1, events: { first: 1, last: 1, dropped: 0 }, owner: crypto.randomUUID() }
    await store.put(`runs/http-run-${id}`, storedOf(stale))
    const at = paused.pauseAt((key) => key === `runs/http-run-${id}`)
    const settling = c.runtime.runs.settleIfLost(stale, undefined, 0)
    await at.reached
    // Its process was alive after all: it wrote its end meanwhile.
    const ended: RunRecordJson = { ...stale, status: 'done', settledAt: 2, result: OK }
    await store.put(`runs/http-run-${id}`, storedOf(ended))
    at.release()
    expect(await settling).toBe(false)
    expect(await at.landed).toBe(false)
    expect(await recordOf(store, id)).toEqual(ended)
  })
})
