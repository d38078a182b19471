/**
 * Fencing of durable runs in process (src/durable/runs.ts; issue 38 item 4): a process whose
 * run another one claimed (it was presumed dead) writes nothing more of it and makes no more
 * of its calls; the claimant goes on with the records it finds. Two `DurableRuns` over one
 * cue store stand for two processes; a paused process is one whose writes wait on a cue.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { ParkedRunState } from '../../../src/code-runtime/contract.js'
import { bindRunSecret } from '../../../src/durable/call-key.js'
import { DurableRuns } from '../../../src/durable/runs.js'
import type { DurableSubCall, StoredRun } from '../../../src/durable/runs.js'
import type { JsonValue } from '../../../src/json/json-value.js'
import { cueStore, readJson } from '../../support/cue-store.js'
import { closeProcesses, durableProcess, FIRST_CALL_NUMBERING, parkedState } from '../../support/parked-run.js'

const STATE = parkedState('pay')
const NUMBERING = FIRST_CALL_NUMBERING
const TAKEN = (name: string) => `${name} was not made: another instance took this run over (this one was presumed dead) and goes on with it`

afterEach(closeProcesses)
/** A "process": its runs over one store. */
const process = durableProcess

function parentOf(secret: string): symbol {
  const token = Symbol('run_code')
  bindRunSecret(token, secret)
  return token
}

/** Starts run `callId` in `runs` and parks it. */
async function parked(runs: DurableRuns, callId: string) {
  const run = runs.forRun(callId, undefined, { code: 'c', description: 'd' })
  run.onPark(STATE, NUMBERING)
  await runs.flushed()
  return { ...run, parent: parentOf(run.secret) }
}

/** Claims every run no live process holds (staleMs 0: every other process counts as silent), as the resume loop does. */
async function claimAll(runs: DurableRuns): Promise<string[]> {
  const resumed = await runs.resumeAll(async () => 'resumed', { staleMs: 0 })
  return resumed.map((run) => run.callId)
}

const call = (n: number, parent: symbol, name = 'pay', args: JsonValue = { cents: 5 }): DurableSubCall => ({ callId: `r:code:${n}`, name, arguments: args, parent })

describe('a run another process claimed: the old holder is fenced off', () => {
  it('its next sub-call is not made (RUN_TAKEN_OVER), writes no record, and every later one is refused without a read', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    const run = await parked(a, 'r')
    const b = process(cues.store)
    expect(await claimAll(b)).toEqual(['r'])
    const claimed = await cues.base.get('runs/r')
    expect(a.taken('r')).toBe(false)
    let ran = 0
    const body = async () => (ran++, 'paid')
    await expect(a.aroundBody(call(2, run.parent), false, body)).rejects.toMatchObject({ code: 'RUN_TAKEN_OVER', message: TAKEN('pay') })
    expect(ran).toBe(0)
    expect(a.taken('r')).toBe(true)
    expect(await cues.base.get('calls/r/2')).toBeUndefined()
    cues.ops.length = 0
    await expect(a.aroundBody(call(3, run.parent, 'refund'), false, body)).rejects.toMatchObject({ code: 'RUN_TAKEN_OVER', message: TAKEN('refund') })
    // A known loss needs no read of the run's record (only the call's own record was read).
    expect(cues.ops.map((o) => `${o.op} ${o.key}`)).toEqual(['get calls/r/3'])
    expect(ran).toBe(0)
    // B's record is whole: A's later park and end write nothing of the run.
    run.onPark(STATE, NUMBERING)
    await a.ended('r')
    await a.flushed()
    expect(await cues.base.get('runs/r')).toEqual(claimed)
    expect(((await readJson(cues.base, 'runs/r')) as StoredRun).owner).toBe(b.owner)
    // Another run of A is not fenced.
    expect(a.taken('s')).toBe(false)
  })

  it('a claim between the started record and the body: the body does not run; the new holder finds the call cut off (INTERRUPTED)', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    const run = await parked(a, 'r')
    const b = process(cues.store)
    cues.after = async (op) => {
      if (op.op === 'put' && op.key === 'calls/r/1') {
        cues.after = undefined
        await claimAll(b)
      }
    }
    let ran = 0
    await expect(a.aroundBody(call(1, run.parent), false, async () => (ran++, 'paid'))).rejects.toMatchObject({ code: 'RUN_TAKEN_OVER' })
    expect(ran).toBe(0)
    expect(await readJson(cues.base, 'calls/r/1')).toMatchObject({ state: 'started', name: 'pay' })
    // B resumes the run with its secret: the call it makes again was cut off, and is not made.
    const resumed = b.forRun('r', undefined, { code: 'c', description: 'd' })
    expect(resumed.secret).toBe(run.secret)
    await expect(b.aroundBody(call(1, parentOf(resumed.secret)), false, async () => (ran++, 'paid'))).rejects.toMatchObject({ code: 'INTERRUPTED' })
    expect(ran).toBe(0)
    // An idempotent tool is made again, once, by B.
    expect(await b.aroundBody(call(1, parentOf(resumed.secret)), true, async () => (ran++, 'paid by b'))).toBe('paid by b')
    expect(ran).toBe(1)
    expect(await readJson(cues.base, 'calls/r/1')).toMatchObject({ state: 'done', value: 'paid by b' })
  })

  it("a call record another process wrote between A's read and A's write is never replaced: RUN_TAKEN_OVER, and A is fenced", async () => {
    const cues = cueStore()
    const a = process(cues.store)
    const run = await parked(a, 'r')
    const theirs = JSON.stringify({ state: 'started', name: 'pay', run: 'their secret' })
    cues.before = async (op) => {
      if (op.op === 'put' && op.key === 'calls/r/1') {
        cues.before = undefined
        expect(op.ifVersion).toBeNull()
        await cues.base.put('calls/r/1', theirs)
      }
    }
    let ran = 0
    await expect(a.aroundBody(call(1, run.parent), false, async () => (ran++, 'paid'))).rejects.toMatchObject({ code: 'RUN_TAKEN_OVER', message: TAKEN('pay') })
    expect(ran).toBe(0)
    expect((await cues.base.get('calls/r/1'))?.value).toBe(theirs)
    expect(a.taken('r')).toBe(true)
    // Fenced: its end leaves the run and its records to whoever took it.
    await a.ended('r')
    expect(await cues.base.get('runs/r')).toBeDefined()
    expect(await cues.base.get('calls/r/1')).toBeDefined()
  })

  it("a re-park that loses its compare-and-set (claimed meanwhile) fences the run: A's next call is refused, B's record stays", async () => {
    const cues = cueStore()
    const a = process(cues.store)
    const run = await parked(a, 'r')
    const b = process(cues.store)
    expect(await claimAll(b)).toEqual(['r'])
    const claimed = await cues.base.get('runs/r')
    run.onPark(STATE, { submitted: 2, calls: [[2, 2]] })
    await a.flushed()
    expect(a.taken('r')).toBe(true)
    expect(await cues.base.get('runs/r')).toEqual(claimed)
    cues.ops.length = 0
    await expect(a.aroundBody(call(2, run.parent), false, async () => 'paid')).rejects.toMatchObject({ code: 'RUN_TAKEN_OVER' })
    expect(cues.ops.some((o) => o.op === 'put')).toBe(false)
  })

  it('each park is compare-and-set on the version the last one wrote: three parks in a row all land', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    const run = a.forRun('r', undefined, { code: 'c', description: 'd' })
    const versions: (string | null)[] = [null]
    for (let n = 1; n <= 3; n++) {
      run.onPark(STATE, { submitted: n, calls: [] })
      await a.flushed()
      expect(((await readJson(cues.base, 'runs/r')) as StoredRun).park!.numbering.submitted).toBe(n)
      versions.push((await cues.base.get('runs/r'))!.version)
    }
    const puts = cues.ops.filter((o) => o.op === 'put' && o.key === 'runs/r')
    expect(puts.map((o) => o.ifVersion)).toEqual(versions.slice(0, 3))
    expect(a.taken('r')).toBe(false)
  })

  it("an end whose conditional delete loses (claimed meanwhile) keeps the record and the call records for the new holder", async () => {
    const cues = cueStore()
    const a = process(cues.store)
    const run = await parked(a, 'r')
    expect(await a.aroundBody(call(1, run.parent), false, async () => 'paid')).toBe('paid')
    const b = process(cues.store)
    expect(await claimAll(b)).toEqual(['r'])
    await a.ended('r')
    expect(a.taken('r')).toBe(true)
    expect(((await readJson(cues.base, 'runs/r')) as StoredRun).owner).toBe(b.owner)
    expect(await readJson(cues.base, 'calls/r/1')).toMatchObject({ state: 'done', value: 'paid' })
    // B's own end removes both.
    b.forRun('r', undefined, { code: 'c', description: 'd' })
    await b.ended('r')
    expect(await cues.base.get('runs/r')).toBeUndefined()
    expect(await cues.base.get('calls/r/1')).toBeUndefined()
  })

  it('an idempotent call made again by the new holder keeps its record: the old holder finishing late does not overwrite it', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    const run = await parked(a, 'r')
    const b = process(cues.store)
    let releaseA: () => void = () => {}
    const slow = new Promise<void>((resolve) => (releaseA = resolve))
    const onA = a.aroundBody(call(1, run.parent), true, async () => (await slow, 'by a'))
    // A's body runs; meanwhile B claims the run and makes the idempotent call itself.
    await new Promise((resolve) => setTimeout(resolve, 0))
    while ((await cues.base.get('calls/r/1')) === undefined) await new Promise((resolve) => setTimeout(resolve, 1))
    expect(await claimAll(b)).toEqual(['r'])
    const mine = b.forRun('r', undefined, { code: 'c', description: 'd' })
    expect(await b.aroundBody(call(1, parentOf(mine.secret)), true, async () => 'by b')).toBe('by b')
    releaseA()
    expect(await onA).toBe('by a')
    expect(await readJson(cues.base, 'calls/r/1')).toMatchObject({ state: 'done', value: 'by b' })
  })

  it('a process the run was taken from, that claims it back later, may write it again', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    const run = await parked(a, 'r')
    const b = process(cues.store)
    await claimAll(b)
    await expect(a.aroundBody(call(1, run.parent), false, async () => 'x')).rejects.toMatchObject({ code: 'RUN_TAKEN_OVER' })
    expect(a.taken('r')).toBe(true)
    // B dies in turn; A's sweep claims the run back.
    b.close()
    expect(await claimAll(a)).toEqual(['r'])
    expect(a.taken('r')).toBe(false)
    const again = a.forRun('r', undefined, { code: 'c', description: 'd' })
    expect(again.resume).toEqual({ state: STATE, numbering: NUMBERING })
    expect(await a.aroundBody(call(1, parentOf(again.secret)), false, async () => 'paid')).toBe('paid')
    expect(await readJson(cues.base, 'calls/r/1')).toMatchObject({ state: 'done', value: 'paid' })
    // Its end, conditional on the version its claim wrote, removes the run.
    await a.ended('r')
    expect(await cues.base.get('runs/r')).toBeUndefined()
    expect(await cues.base.get('calls/r/1')).toBeUndefined()
  })
})

describe('the fence is the claim in the record, not its version', () => {
  it("the holder's record rewritten under its own owner and claim (a new version) does not fence it: its sub-call runs, its park and end land", async () => {
    const cues = cueStore()
    const a = process(cues.store)
    const run = await parked(a, 'r')
    const rewrite = async () => {
      const entry = (await cues.base.get('runs/r'))!
      const put = await cues.base.put('runs/r', entry.value)
      expect(put.ok && put.version !== entry.version).toBe(true)
    }
    // What the holder's own view writes do to the version (one record per run).
    await rewrite()
    let ran = 0
    expect(await a.aroundBody(call(1, run.parent), false, async () => (ran++, 'paid'))).toBe('paid')
    expect(ran).toBe(1)
    expect(a.taken('r')).toBe(false)
    await rewrite()
    expect(await a.holds('r')).toBe(true)
    await rewrite()
    run.onPark(STATE, { submitted: 2, calls: [[2, 2]] })
    await a.flushed()
    expect(((await readJson(cues.base, 'runs/r')) as StoredRun).park!.numbering.submitted).toBe(2)
    await rewrite()
    await a.ended('r')
    expect(await cues.base.get('runs/r')).toBeUndefined()
    expect(await cues.base.get('calls/r/1')).toBeUndefined()
  })

  it('each start and each claim mints its own token; a record naming the holder with another token fences it', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    const run = await parked(a, 'r')
    const mine = ((await readJson(cues.base, 'runs/r')) as StoredRun).claim
    expect(mine).toMatch(/^[0-9a-f-]{36}$/)
    const b = process(cues.store)
    await claimAll(b)
    const theirs = ((await readJson(cues.base, 'runs/r')) as StoredRun).claim
    expect(theirs).toMatch(/^[0-9a-f-]{36}$/)
    expect(theirs).not.toBe(mine)
    // B's record with A's owner put back but B's token: still not A's claim.
    const record = (await readJson(cues.base, 'runs/r')) as StoredRun
    await cues.base.put('runs/r', JSON.stringify({ ...record, owner: a.owner }))
    await expect(a.aroundBody(call(1, run.parent), false, async () => 'paid')).rejects.toMatchObject({ code: 'RUN_TAKEN_OVER' })
    expect(await a.holds('r')).toBe(false)
  })
})

describe('a resumed run, ended by the process that resumed it', () => {
  it('leaves no record of it, even though it never parked in that process', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    const run = await parked(a, 'r')
    await a.aroundBody(call(1, run.parent), false, async () => 'paid')
    a.close()
    const b = process(cues.store)
    expect(await claimAll(b)).toEqual(['r'])
    b.forRun('r', undefined, { code: 'c', description: 'd' })
    await b.ended('r')
    const deletes = cues.ops.filter((o) => o.op === 'delete')
    expect(deletes.map((o) => o.key)).toEqual(['runs/r', 'calls/r/1'])
    // The run's delete is conditional on the version B's claim wrote.
    expect(deletes[0]!.ifVersion).toMatch(/^[0-9]+$/)
    expect((await cues.base.list('runs/')).entries).toEqual([])
    expect((await cues.base.list('calls/')).entries).toEqual([])
  })

  it('a run cancelled in the sweep gets the abort reason; each resumed run has its own signal', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    await parked(a, 'r')
    await parked(a, 's')
    const b = process(cues.store)
    const signals: AbortSignal[] = []
    const resumed = await b.resumeAll(async (_id, _agent, _args, signal) => void signals.push(signal), { staleMs: 0 })
    expect(resumed.map((r) => r.callId)).toEqual(['r', 's'])
    resumed[0]!.cancel('enough')
    expect(signals.map((s) => s.aborted)).toEqual([true, false])
    expect(signals[0]!.reason).toBe('enough')
  })
})

describe("a run's language survives its park", () => {
  it('is stored with the run, handed to the resumed run_code call, absent when not given; a stored one over 32 characters is no record', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    a.forRun('py', undefined, { code: 'c', description: 'd', language: 'python' }).onPark(STATE, NUMBERING)
    a.forRun('ts', undefined, { code: 'c', description: 'd' }).onPark(STATE, NUMBERING)
    await a.flushed()
    expect(((await readJson(cues.base, 'runs/py')) as StoredRun).park!.language).toBe('python')
    expect('language' in ((await readJson(cues.base, 'runs/ts')) as object)).toBe(false)
    const args: unknown[] = []
    const b = process(cues.store)
    await b.resumeAll(async (_id, _agent, given) => void args.push(given), { staleMs: 0 })
    expect(args).toEqual([{ code: 'c', description: 'd', language: 'python' }, { code: 'c', description: 'd' }])
    expect('language' in (args[1] as object)).toBe(false)
    const record = (await readJson(cues.base, 'runs/py')) as StoredRun
    await cues.base.delete('runs/ts')
    for (const [language, ok] of [['x'.repeat(32), true], ['x'.repeat(33), false], [7, false]] as const) {
      await cues.base.put('runs/py', JSON.stringify({ ...record, park: { ...record.park, language }, owner: undefined }))
      const found = await process(cues.store).resumeAll(async () => undefined, { staleMs: 0 })
      expect(found.map((r) => r.callId)).toEqual(ok ? ['py'] : [])
    }
  })
})

describe('the sweep and the end at their bounds', () => {
  it('a sweep pages through more than 100 records, and leaves the runs this process parked itself', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    const ids = Array.from({ length: 101 }, (_, i) => `r${String(i).padStart(3, '0')}`)
    for (const id of ids) a.forRun(id, undefined, { code: 'c', description: 'd' }).onPark(STATE, NUMBERING)
    await a.flushed()
    // Its own runs, even with every process counted as silent: not its to resume.
    expect(await a.resumeAll(async () => undefined, { staleMs: 0 })).toEqual([])
    const b = process(cues.store)
    expect((await b.resumeAll(async () => undefined, { staleMs: 0 })).map((r) => r.callId)).toEqual(ids)
    expect(cues.ops.filter((o) => o.op === 'list' && o.key === 'runs/').length).toBe(4)
  })

  it('an end whose delete loses four compare-and-sets in a row (same-claim rewrites) gives up: the record and call records stay', async () => {
    const cues = cueStore()
    const a = process(cues.store)
    const run = await parked(a, 'r')
    expect(await a.aroundBody(call(1, run.parent), false, async () => 'paid')).toBe('paid')
    let deletes = 0
    cues.before = async (op) => {
      if (op.op === 'delete' && op.key === 'runs/r') {
        deletes++
        await cues.base.put('runs/r', (await cues.base.get('runs/r'))!.value)
      }
    }
    await a.ended('r')
    cues.before = undefined
    expect(deletes).toBe(4)
    expect(await cues.base.get('runs/r')).toBeDefined()
    expect(await readJson(cues.base, 'calls/r/1')).toMatchObject({ state: 'done' })
  })
})
