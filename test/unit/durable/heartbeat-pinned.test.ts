/**
 * The process heartbeat of src/durable/runs.ts and RunService.hold() (cb2829d: a record naming
 * this process is written only after its first beat landed), on a store whose writes are held on
 * cue (test/support/cue-store.ts). The survivors of the change's mutation run (docs/testing.md).
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { resolveRunServiceOptions, RunService } from '../../../src/durable/run-service.js'
import { DurableRuns, HEARTBEAT_MS } from '../../../src/durable/runs.js'
import { cueStore, type CueStore } from '../../support/cue-store.js'
import { FIRST_CALL_NUMBERING, parkedState } from '../../support/parked-run.js'
import { until } from '../../support/poll.js'

const instances: DurableRuns[] = []
afterEach(() => {
  vi.useRealTimers()
  for (const runs of instances.splice(0)) runs.close()
})

function instance(store: CueStore['store']): DurableRuns {
  const runs = new DurableRuns(store)
  instances.push(runs)
  return runs
}

/** Holds every write of `owners/<owner>` until `release()`. */
function holdBeats(cues: CueStore, owner: () => string) {
  let release!: () => void
  const held = new Promise<void>((resolve) => (release = resolve))
  cues.before = async (op) => {
    if (op.op === 'put' && op.key === `owners/${owner()}`) await held
  }
  return release
}

const puts = (cues: CueStore, prefix: string) => cues.ops.filter((op) => op.op === 'put' && op.key.startsWith(prefix))
const settledYet = (promise: Promise<unknown>) => {
  let settled = false
  void promise.then(() => (settled = true))
  return () => settled
}

describe('beat(): resolves once the first beat landed', () => {
  it('pending while the first owners write is held; a second beat() meanwhile writes nothing more and waits for the same write', async () => {
    const cues = cueStore()
    const runs = instance(cues.store)
    const release = holdBeats(cues, () => runs.owner)
    const first = settledYet(runs.beat())
    await until(() => puts(cues, 'owners/').length === 1, 'the first beat write')
    const second = settledYet(runs.beat())
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect([first(), second()]).toEqual([false, false])
    expect(puts(cues, 'owners/')).toHaveLength(1)
    release()
    await until(() => first() && second(), 'both resolved')
    expect(JSON.parse((await cues.base.get(`owners/${runs.owner}`))!.value)).toEqual({ at: expect.any(Number) })
    // Beating already: answered at once, no write.
    await runs.beat()
    expect(puts(cues, 'owners/')).toHaveLength(1)
  })

  it('beats again every HEARTBEAT_MS until close(); after close() beat() resolves at once and writes nothing', async () => {
    vi.useFakeTimers()
    const cues = cueStore()
    const runs = instance(cues.store)
    await runs.beat()
    expect(puts(cues, 'owners/')).toHaveLength(1)
    await vi.advanceTimersByTimeAsync(HEARTBEAT_MS)
    expect(puts(cues, 'owners/')).toHaveLength(2)
    expect(vi.getTimerCount()).toBe(1)
    runs.close()
    expect(vi.getTimerCount()).toBe(0)
    await runs.beat()
    await vi.advanceTimersByTimeAsync(HEARTBEAT_MS * 2)
    expect(puts(cues, 'owners/')).toHaveLength(2)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('a failed beat write still resolves beat() (the heartbeat goes on)', async () => {
    const cues = cueStore()
    const runs = instance(cues.store)
    cues.before = (op) => {
      if (op.op === 'put') throw new Error('store down')
    }
    await expect(runs.beat()).resolves.toBeUndefined()
  })
})

describe('records naming this process wait for its first beat', () => {
  it("a park's record is written only after the first beat landed", async () => {
    const cues = cueStore()
    const runs = instance(cues.store)
    const release = holdBeats(cues, () => runs.owner)
    runs.forRun('r', undefined, { code: 'c', description: 'd' }).onPark(parkedState('ask'), FIRST_CALL_NUMBERING)
    await until(() => puts(cues, 'owners/').length === 1, 'the beat write')
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(puts(cues, 'runs/')).toEqual([])
    release()
    await runs.flushed()
    expect(cues.ops.filter((op) => op.op === 'put').map((op) => op.key.split('/')[0])).toEqual(['owners', 'runs'])
    expect(JSON.parse((await cues.base.get('runs/r'))!.value)).toMatchObject({ owner: runs.owner })
  })

  it("resumeAll's claim of a dead process's run is written only after the claimant's first beat landed", async () => {
    const cues = cueStore()
    const dead = instance(cues.store)
    dead.forRun('r', undefined, { code: 'c', description: 'd' }).onPark(parkedState('ask'), FIRST_CALL_NUMBERING)
    await dead.flushed()
    dead.close()
    await cues.base.put(`owners/${dead.owner}`, JSON.stringify({ at: Date.now() - 60_000 }))
    const survivor = instance(cues.store)
    const release = holdBeats(cues, () => survivor.owner)
    const from = cues.ops.length
    const sweep = survivor.resumeAll(async () => 'resumed', { staleMs: 10_000 })
    await until(() => cues.ops.slice(from).some((op) => op.op === 'put' && op.key === `owners/${survivor.owner}`), 'the beat write')
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(cues.ops.slice(from).filter((op) => op.op === 'put' && op.key === 'runs/r')).toEqual([])
    release()
    expect((await sweep).map((run) => run.callId)).toEqual(['r'])
    expect(JSON.parse((await cues.base.get('runs/r'))!.value)).toMatchObject({ owner: survivor.owner })
  })

  it('RunService.hold() resolves once the first beat landed; without a store at once', async () => {
    const cues = cueStore()
    const runs = instance(cues.store)
    const service = new RunService(cues.store, runs, async () => [], resolveRunServiceOptions({ resumeEveryMs: 0 }))
    const release = holdBeats(cues, () => runs.owner)
    const held = settledYet(service.hold())
    await until(() => puts(cues, 'owners/').length === 1, 'the beat write')
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(held()).toBe(false)
    release()
    await until(held, 'hold() resolved')
    const bare = new RunService(undefined, undefined, async () => [], resolveRunServiceOptions(undefined))
    await expect(bare.hold()).resolves.toBeUndefined()
  })
})
