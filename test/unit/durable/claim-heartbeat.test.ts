/**
 * A process's claim on a run never precedes its heartbeat: another process that reads the claim
 * finds the claimant alive, so a run left by a dead process goes to exactly one survivor. Found
 * with three instances on PostgreSQL (two-instances, load ~20): B claimed the dead run, its first
 * heartbeat was still in flight, and A, sweeping 78 ms later, judged B dead and claimed over it.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { ParkedRunState } from '../../../src/code-runtime/contract.js'
import { DurableRuns } from '../../../src/durable/runs.js'
import { until } from '../../support/poll.js'
import { cueStore } from '../../support/cue-store.js'
import { FIRST_CALL_NUMBERING, parkedState } from '../../support/parked-run.js'

const STATE = parkedState('ask')
const NUMBERING = FIRST_CALL_NUMBERING
const STALE_MS = 10_000

const instances: DurableRuns[] = []
afterEach(() => {
  for (const runs of instances.splice(0)) runs.close()
})

function instance(store: ConstructorParameters<typeof DurableRuns>[0]): DurableRuns {
  const runs = new DurableRuns(store)
  instances.push(runs)
  return runs
}

/** A store holding run `r`, parked by a process whose heartbeat stopped a minute ago. */
async function leftByADeadProcess() {
  const cues = cueStore()
  const dead = instance(cues.store)
  dead.forRun('r', undefined, { code: 'c', description: 'd' }).onPark(STATE, NUMBERING)
  await dead.flushed()
  dead.close()
  await cues.base.put(`owners/${dead.owner}`, JSON.stringify({ at: Date.now() - 60_000 }))
  return cues
}

describe('two survivors sweeping for a dead process’s run', () => {
  it('while the first claimant’s heartbeat is still being written, the other does not claim over it: one claim in all', async () => {
    const cues = await leftByADeadProcess()

    const b = instance(cues.store)
    const a = instance(cues.store)
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    // B's first heartbeat write is slow (a loaded machine, a slow store).
    cues.before = async (op) => {
      if (op.op === 'put' && op.key === `owners/${b.owner}`) await held
    }
    const bSweep = b.resumeAll(async () => 'resumed', { staleMs: STALE_MS })
    await until(() => cues.ops.some((op) => op.op === 'put' && op.key === `owners/${b.owner}`), "B's heartbeat write")
    const aClaimed = await a.resumeAll(async () => 'resumed', { staleMs: STALE_MS })
    release()
    const bClaimed = await bSweep
    expect(aClaimed.length + bClaimed.length).toBe(1)
  })

  it('a claimant whose heartbeat landed keeps the run from the other sweeper', async () => {
    const cues = await leftByADeadProcess()
    const b = instance(cues.store)
    const a = instance(cues.store)
    expect((await b.resumeAll(async () => 'resumed', { staleMs: STALE_MS })).map((run) => run.callId)).toEqual(['r'])
    expect(await a.resumeAll(async () => 'resumed', { staleMs: STALE_MS })).toEqual([])
  })
})
