/**
 * The durable core (src/durable/runs.ts) in process: key segments, heartbeats, park and end
 * writes, the exactly-once wrapper and the resume sweep, on a memory store that fails or
 * races on cue and "processes" that die by being dropped (issue 38 item 4).
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { bindRunSecret } from '../../../src/durable/call-key.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import { beatWithin, DurableRuns, HEARTBEAT_MS, parkedIn, readStoredRun, runKeySegment } from '../../../src/durable/runs.js'
import type { StoredRun } from '../../../src/durable/runs.js'
import type { DurableStore, StorePutResult, StoreWriteOptions } from '../../../src/durable/store.js'
import type { ParkedRunState } from '../../../src/code-runtime/contract.js'
import type { JsonValue } from '../../../src/json/json-value.js'
import { FIRST_CALL_NUMBERING, parkedState } from '../../support/parked-run.js'
import { until } from '../../support/poll.js'

afterEach(() => {
  vi.useRealTimers()
})

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const STATE = parkedState('pay')
const NUMBERING = FIRST_CALL_NUMBERING

const PARK_KEYS = new Set(['code', 'description', 'language', 'state', 'numbering', 'secret', 'trace'])

/** A stored run record as a process writes it on park; `extra`'s parked-state fields go to `park`, the others to the record. */
function stored(callId: string, extra: Record<string, unknown> = {}): StoredRun {
  const park: Record<string, unknown> = { code: 'return 1', description: 'd', state: STATE, numbering: NUMBERING, secret: 's-' + callId }
  const top: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(extra)) (PARK_KEYS.has(key) ? park : top)[key] = value
  return { version: 1, callId, ...top, park } as unknown as StoredRun
}

/** A memory store whose operations can be made to fail, or to run a step first, on cue; it logs writes. */
function cueStore() {
  const base = createMemoryStore()
  const writes: string[] = []
  const cues = {
    get: undefined as ((key: string) => Promise<void> | void) | undefined,
    put: undefined as ((key: string, value: string, options?: StoreWriteOptions) => Promise<void> | void) | undefined,
    list: undefined as ((prefix: string) => Promise<void> | void) | undefined,
  }
  const store: DurableStore = {
    get: async (key) => (await cues.get?.(key), base.get(key)),
    list: async (prefix, options) => (await cues.list?.(prefix), base.list(prefix, options)),
    put: async (key, value, options): Promise<StorePutResult> => {
      await cues.put?.(key, value, options)
      writes.push(`put ${key}`)
      return base.put(key, value, options)
    },
    delete: async (key, options) => {
      writes.push(`delete ${key}`)
      return base.delete(key, options)
    },
  }
  return { store, base, writes, cues }
}

async function read(store: DurableStore, key: string): Promise<unknown> {
  const entry = await store.get(key)
  return entry === undefined ? undefined : JSON.parse(entry.value)
}

/** The `parent` token of a run's sub-calls, bound to the run's secret as the bridge does. */
function parentOf(secret: string): symbol {
  const token = Symbol('run_code')
  bindRunSecret(token, secret)
  return token
}

/** Starts run `callId` on `runs` and parks it: its sub-calls are recorded from now on. */
async function parkedRun(runs: DurableRuns, callId: string) {
  const run = runs.forRun(callId, undefined, { code: 'c', description: 'd' })
  run.onPark(STATE, NUMBERING)
  await runs.flushed()
  return { ...run, parent: parentOf(run.secret) }
}

describe('runKeySegment', () => {
  it('keeps a safe id of 1 to 80 characters; hashes anything else with a fixed, stored format', () => {
    expect(runKeySegment('run-1:code:2')).toBe('run-1:code:2')
    expect(runKeySegment('A-z0.9_~:@=+-')).toBe('A-z0.9_~:@=+-')
    expect(runKeySegment('x'.repeat(80))).toBe('x'.repeat(80))
    // Stored keys: the hash may never change, or runs parked before an upgrade are orphaned.
    expect(runKeySegment('x'.repeat(81))).toBe('h-1j3ft1j-tcqtc7-81')
    expect(runKeySegment('a/b')).toBe('h-g8wk3l-19r6jh3-3')
    expect(runKeySegment('.')).toBe('h-by08hd-dkbev5-1')
    expect(runKeySegment('..')).toBe('h-19ggirx-xu7rrv-2')
    expect(runKeySegment('')).toBe('h-ztntfp-9zloz-0')
    expect(runKeySegment('é')).toBe('h-tz86ys-bd0y6a-1')
    expect(runKeySegment('...')).toBe('...')
    expect(runKeySegment('a b')).toMatch(/^h-[0-9a-z]+-[0-9a-z]+-3$/)
    expect(runKeySegment('x/a')).not.toBe(runKeySegment('a/x'))
  })
})

describe('parkedIn and beatWithin', () => {
  it('parkedIn: whether runs/<segment> holds a parked state', async () => {
    const store = createMemoryStore()
    expect(await parkedIn(store, 'a/b')).toBe(false)
    await store.put(`runs/${runKeySegment('a/b')}`, JSON.stringify({ version: 1, callId: 'a/b', view: { id: 'x', status: 'running', createdAt: 1, events: {} } }))
    expect(await parkedIn(store, 'a/b')).toBe(false)
    await store.put(`runs/${runKeySegment('a/b')}`, JSON.stringify(stored('a/b')))
    expect(await parkedIn(store, 'a/b')).toBe(true)
  })

  it('beatWithin: a fresh { at } only; stale, absent, oversized, foreign or unparsable values are not alive', async () => {
    const store = createMemoryStore()
    expect(await beatWithin(store, 'owners/p', 60_000)).toBe(false)
    await store.put('owners/p', JSON.stringify({ at: Date.now() }))
    expect(await beatWithin(store, 'owners/p', 60_000)).toBe(true)
    await store.put('owners/p', JSON.stringify({ at: Date.now() - 60_000 }))
    expect(await beatWithin(store, 'owners/p', 60_000)).toBe(false)
    expect(await beatWithin(store, 'owners/p', 120_000)).toBe(true)
    const padded = (n: number) => {
      const head = JSON.stringify({ at: Date.now(), pad: '' })
      return JSON.stringify({ at: Date.now(), pad: 'x'.repeat(n - head.length) })
    }
    expect(padded(256)).toHaveLength(256)
    await store.put('owners/p', padded(256))
    expect(await beatWithin(store, 'owners/p', 60_000)).toBe(true)
    await store.put('owners/p', padded(257))
    expect(await beatWithin(store, 'owners/p', 60_000)).toBe(false)
    for (const foreign of ['{"at":"1"}', 'null', '{}', 'not json', '[1]']) {
      await store.put('owners/p', foreign)
      expect(await beatWithin(store, 'owners/p', 60_000)).toBe(false)
    }
  })
})

describe('DurableRuns: heartbeat and liveness', () => {
  it('one heartbeat per process: written now and every HEARTBEAT_MS, never twice per tick, stopped by close()', async () => {
    vi.useFakeTimers()
    const { store, writes } = cueStore()
    const runs = new DurableRuns(store)
    expect(runs.owner).toMatch(UUID)
    expect(runs.store).toBe(store)
    runs.beat()
    runs.beat()
    await runs.flushed()
    const key = `put owners/${runs.owner}`
    expect(writes).toEqual([key])
    expect(await runs.alive(runs.owner, 1000)).toBe(true)
    await vi.advanceTimersByTimeAsync(HEARTBEAT_MS - 1)
    expect(writes).toEqual([key])
    await vi.advanceTimersByTimeAsync(1)
    await runs.flushed()
    expect(writes).toEqual([key, key])
    runs.close()
    runs.beat()
    await vi.advanceTimersByTimeAsync(HEARTBEAT_MS * 3)
    await runs.flushed()
    expect(writes).toEqual([key, key])
    expect(HEARTBEAT_MS).toBe(5000)
  })

  it('a closed process never starts a heartbeat', async () => {
    const { store, writes } = cueStore()
    const runs = new DurableRuns(store)
    runs.close()
    runs.beat()
    await runs.flushed()
    expect(writes).toEqual([])
  })

  it('alive: only a process id (a UUID) with a fresh beat; any other owner text is no process', async () => {
    const store = createMemoryStore()
    const runs = new DurableRuns(store)
    await store.put('owners/not-a-process', JSON.stringify({ at: Date.now() }))
    expect(await runs.alive('not-a-process', 60_000)).toBe(false)
    const other = crypto.randomUUID()
    expect(await runs.alive(other, 60_000)).toBe(false)
    await store.put(`owners/${other}`, JSON.stringify({ at: Date.now() }))
    expect(await runs.alive(other, 60_000)).toBe(true)
    expect(await runs.alive(`${other}x`, 60_000)).toBe(false)
    expect(await runs.alive(`x${other}`, 60_000)).toBe(false)
    await store.put(`owners/${other}`, JSON.stringify({ at: Date.now() - 60_000 }))
    expect(await runs.alive(other, 60_000)).toBe(false)
  })
})

describe('DurableRuns: park and end', () => {
  it('a park writes the whole record under runs/<segment>, claimed by this process, and starts the heartbeat', async () => {
    const store = createMemoryStore()
    const runs = new DurableRuns(store)
    const trace = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }
    const run = runs.forRun('a/b', 'agent-1', { code: 'return 1', description: 'd' }, 'alice', trace)
    expect(run.secret).toMatch(UUID)
    expect('resume' in run).toBe(false)
    expect(await store.get(`runs/${runKeySegment('a/b')}`)).toBeUndefined()
    const before = Date.now()
    run.onPark(STATE, NUMBERING)
    await runs.flushed()
    const record = (await read(store, `runs/${runKeySegment('a/b')}`)) as StoredRun
    expect(record.claimedAt).toBeGreaterThanOrEqual(before)
    expect(record.claimedAt).toBeLessThanOrEqual(Date.now())
    expect(record).toEqual({ version: 1, callId: 'a/b', agent: 'agent-1', principal: 'alice', park: { code: 'return 1', description: 'd', state: STATE, numbering: NUMBERING, secret: run.secret, trace }, owner: runs.owner, claimedAt: record.claimedAt, claim: record.claim })
    expect(record.claim).toMatch(UUID)
    expect(await runs.alive(runs.owner, 60_000)).toBe(true)
  })

  it('without agent, principal or trace, the record holds no such keys', async () => {
    const store = createMemoryStore()
    const runs = new DurableRuns(store)
    runs.forRun('r', undefined, { code: 'c', description: 'd' }).onPark(STATE, NUMBERING)
    await runs.flushed()
    const record = (await read(store, 'runs/r')) as Record<string, unknown>
    expect(Object.keys(record).sort()).toEqual(['callId', 'claim', 'claimedAt', 'owner', 'park', 'version'])
  })

  it('ended: a parked run leaves no record and none of its call records (all pages), other runs keep theirs', async () => {
    const { store, base } = cueStore()
    const runs = new DurableRuns(store)
    await parkedRun(runs, 'a')
    for (let n = 1; n <= 1002; n++) await base.put(`calls/a/${n}`, '{}')
    await base.put('calls/ab/1', '{}')
    await base.put('runs/ab', '{}')
    await runs.ended('a')
    expect(await base.get('runs/a')).toBeUndefined()
    expect((await base.list('calls/a/', { limit: 1000 })).entries).toEqual([])
    expect(await base.get('calls/ab/1')).toBeDefined()
    expect(await base.get('runs/ab')).toBeDefined()
  })

  it('ended: a run that never parked writes nothing; a process shutting down leaves its parked runs for the next', async () => {
    const { store, writes, base } = cueStore()
    const runs = new DurableRuns(store)
    runs.forRun('never', undefined, { code: 'c', description: 'd' })
    await base.put('runs/never', '{}')
    await runs.ended('never')
    expect(writes).toEqual([])
    expect(await base.get('runs/never')).toBeDefined()
    await parkedRun(runs, 'kept')
    runs.close()
    await runs.ended('kept')
    await runs.flushed()
    expect(await base.get('runs/kept')).toBeDefined()
  })

  it("a park's write never lands after its end's delete (one ordered queue per run); a failed write does not stop the next", async () => {
    const { store, cues, base } = cueStore()
    const runs = new DurableRuns(store)
    const run = runs.forRun('r', undefined, { code: 'c', description: 'd' })
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    let failNext = true
    cues.put = async (key) => {
      if (key !== 'runs/r') return
      if (failNext) {
        failNext = false
        throw new Error('disk full')
      }
      await held
    }
    run.onPark(STATE, NUMBERING)
    run.onPark(STATE, NUMBERING)
    const ended = runs.ended('r')
    let done = false
    void ended.then(() => (done = true))
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(done).toBe(false)
    release()
    await ended
    await runs.flushed()
    expect(await base.get('runs/r')).toBeUndefined()
  })

  it("a run's end and flushed() wait for its last park still held by its gate, after an earlier park landed", async () => {
    const { store, base } = cueStore()
    const runs = new DurableRuns(store)
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    const gates = [Promise.resolve(), held]
    runs.parkAfter(() => gates.shift())
    const run = runs.forRun('r', undefined, { code: 'c', description: 'd' })
    run.onPark(STATE, NUMBERING)
    run.onPark(STATE, NUMBERING)
    // The first park lands; the second waits for its gate (its run's event snapshot).
    await until(async () => (await base.get('runs/r')) !== undefined)
    await new Promise((resolve) => setTimeout(resolve, 5))
    let ended = false
    let flushed = false
    const end = runs.ended('r').then(() => (ended = true))
    void runs.flushed().then(() => (flushed = true))
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect({ ended, flushed }).toEqual({ ended: false, flushed: false })
    release()
    await end
    await runs.flushed()
    expect(await base.get('runs/r')).toBeUndefined()
  })

  it('flushed() waits for writes queued while it waits', async () => {
    const { store, cues, base } = cueStore()
    const runs = new DurableRuns(store)
    const run = runs.forRun('r', undefined, { code: 'c', description: 'd' })
    let step = 0
    cues.put = async (key) => {
      if (key === 'runs/r' && step++ === 0) {
        await new Promise((resolve) => setTimeout(resolve, 1))
        runs.forRun('s', undefined, { code: 'c', description: 'd' }).onPark(STATE, NUMBERING)
      }
    }
    run.onPark(STATE, NUMBERING)
    await runs.flushed()
    expect(await base.get('runs/r')).toBeDefined()
    expect(await base.get('runs/s')).toBeDefined()
  })
})

describe('DurableRuns.aroundBody: exactly once', () => {
  const sub = (callId: string, parent: symbol | undefined, over: { name?: string; agent?: string; arguments?: JsonValue } = {}) => ({
    callId,
    name: over.name ?? 'pay',
    ...(over.agent === undefined ? {} : { agent: over.agent }),
    arguments: over.arguments ?? { cents: 5 },
    ...(parent === undefined ? {} : { parent }),
  })

  it("records a parked run's sub-call started, then done with its value; a replay gets the value, the body does not run again", async () => {
    const { store, base, writes } = cueStore()
    const runs = new DurableRuns(store)
    const run = await parkedRun(runs, 'r')
    let ran = 0
    let seen: unknown
    const body = async () => {
      ran++
      seen = await read(base, 'calls/r/1')
      return { paid: 5 }
    }
    writes.length = 0
    expect(await runs.aroundBody(sub('r:code:1', run.parent), false, body)).toEqual({ paid: 5 })
    expect(writes).toEqual(['put calls/r/1', 'put calls/r/1'])
    const started = seen as Record<string, unknown>
    expect(started).toEqual({ state: 'started', name: 'pay', args: expect.stringMatching(/^[0-9a-f]{64}$/), run: run.secret })
    expect(await read(base, 'calls/r/1')).toEqual({ ...started, state: 'done', value: { paid: 5 } })
    expect(await runs.aroundBody(sub('r:code:1', run.parent), false, body)).toEqual({ paid: 5 })
    expect(ran).toBe(1)
  })

  it('the agent is part of the record; a done record without a value answers null', async () => {
    const { store, base } = cueStore()
    const runs = new DurableRuns(store)
    const run = await parkedRun(runs, 'r')
    await runs.aroundBody(sub('r:code:2', run.parent, { agent: 'bob' }), false, async () => null)
    const record = (await read(base, 'calls/r/2')) as Record<string, unknown>
    expect(record.agent).toBe('bob')
    const { value: _v, ...noValue } = record
    await base.put('calls/r/2', JSON.stringify(noValue))
    expect(await runs.aroundBody(sub('r:code:2', run.parent, { agent: 'bob' }), false, async () => 'ran')).toBeNull()
  })

  it('calls that are not a parked run\'s own sub-calls run as they are, with no record', async () => {
    const { store, writes } = cueStore()
    const runs = new DurableRuns(store)
    const run = await parkedRun(runs, 'r')
    const fresh = runs.forRun('fresh', undefined, { code: 'c', description: 'd' })
    writes.length = 0
    const body = async () => 'ran'
    for (const callId of ['r', 'r:code:0', 'r:code:01', 'r:code:x', 'r:code:', ':code:1', 'r:code:12345678901234567', 'other:code:1']) {
      expect(await runs.aroundBody(sub(callId, run.parent), false, body)).toBe('ran')
    }
    // Not parked yet: nothing to replay.
    expect(await runs.aroundBody(sub('fresh:code:1', parentOf(fresh.secret)), false, body)).toBe('ran')
    // Named from outside the run: no parent, or another run's.
    expect(await runs.aroundBody(sub('r:code:1', undefined), false, body)).toBe('ran')
    expect(await runs.aroundBody(sub('r:code:1', parentOf('another secret')), false, body)).toBe('ran')
    expect(await runs.aroundBody(sub('r:code:1', Symbol('unbound')), false, body)).toBe('ran')
    expect(writes).toEqual([])
    // The longest number and a run id holding ":code:" itself are sub-calls.
    expect(await runs.aroundBody(sub('r:code:1234567890123456', run.parent), false, body)).toBe('ran')
    expect(writes).toEqual(['put calls/r/1234567890123456', 'put calls/r/1234567890123456'])
    const nested = await parkedRun(runs, 'a:code:b')
    writes.length = 0
    await runs.aroundBody(sub('a:code:b:code:3', nested.parent), false, body)
    expect(writes).toEqual([`put calls/${runKeySegment('a:code:b')}/3`, `put calls/${runKeySegment('a:code:b')}/3`])
  })

  it('a run that has ended records nothing more (its secret is gone)', async () => {
    const { store, writes } = cueStore()
    const runs = new DurableRuns(store)
    const run = await parkedRun(runs, 'r')
    await runs.ended('r')
    writes.length = 0
    expect(await runs.aroundBody(sub('r:code:1', run.parent), false, async () => 'ran')).toBe('ran')
    expect(writes).toEqual([])
  })

  it('a call cut off by a crash (started): INTERRUPTED, its body not run, unless its tool is idempotent', async () => {
    const { store, base } = cueStore()
    const runs = new DurableRuns(store)
    const run = await parkedRun(runs, 'r')
    let ran = 0
    await expect(
      runs.aroundBody(sub('r:code:1', run.parent), false, async () => {
        throw new Error('the process died here')
      }),
    ).rejects.toThrow('the process died here')
    const started = await read(base, 'calls/r/1')
    expect(started).toMatchObject({ state: 'started' })
    const error = await runs.aroundBody(sub('r:code:1', run.parent), false, async () => (ran++, 'again')).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'INTERRUPTED', message: 'pay was running when its process stopped; it may or may not have taken effect, and it is not run again (its tool is not idempotent)' })
    expect(ran).toBe(0)
    expect(await runs.aroundBody(sub('r:code:1', run.parent), true, async () => (ran++, 'again'))).toBe('again')
    expect(ran).toBe(1)
    expect(await read(base, 'calls/r/1')).toMatchObject({ state: 'done', value: 'again' })
  })

  it('a value the store refuses leaves the call started: returned now, INTERRUPTED after a crash, never run twice', async () => {
    const { store, cues, base } = cueStore()
    const runs = new DurableRuns(store)
    const run = await parkedRun(runs, 'r')
    cues.put = (_key, value) => {
      if (value.includes('"done"')) throw new Error('STORE_VALUE_TOO_LARGE')
    }
    expect(await runs.aroundBody(sub('r:code:1', run.parent), false, async () => 'big')).toBe('big')
    expect(await read(base, 'calls/r/1')).toMatchObject({ state: 'started' })
  })

  it('a record of another tool, agent, arguments or run, or one that is unreadable: REPLAY_DIVERGED, naming what differs', async () => {
    const { store, base } = cueStore()
    const runs = new DurableRuns(store)
    const run = await parkedRun(runs, 'r')
    await runs.aroundBody(sub('r:code:1', run.parent, { agent: 'bob' }), false, async () => 'v')
    const record = (await read(base, 'calls/r/1')) as Record<string, unknown>
    const text = (what: string, now = 'pay') => `the run's call 1 replayed as ${now}, but its record holds ${what}: the program did not replay as it ran (it branched on something live, like the clock), so this call was not made`
    const diverged = async (over: Parameters<typeof sub>[2], stored: unknown) => {
      await base.put('calls/r/1', typeof stored === 'string' ? stored : JSON.stringify(stored))
      return runs.aroundBody(sub('r:code:1', run.parent, { agent: 'bob', ...over }), false, async () => 'ran').catch((e: unknown) => e)
    }
    expect(await diverged({ name: 'refund' }, record)).toMatchObject({ code: 'REPLAY_DIVERGED', message: text('a call of pay', 'refund') })
    expect(await diverged({}, { ...record, agent: 'eve' })).toMatchObject({ code: 'REPLAY_DIVERGED', message: text('a call by agent "eve"') })
    const { agent: _a, ...noAgent } = record
    expect(await diverged({}, noAgent)).toMatchObject({ code: 'REPLAY_DIVERGED', message: text('a call by agent null') })
    expect(await diverged({ arguments: { cents: 6 } }, record)).toMatchObject({ code: 'REPLAY_DIVERGED', message: text('a call of pay with other arguments') })
    expect(await diverged({}, { ...record, run: 'another secret' })).toMatchObject({ code: 'REPLAY_DIVERGED', message: text('a record of another run under the same call id') })
    for (const unreadable of ['not json', 'null', '7', JSON.stringify({ ...record, state: 'half' }), JSON.stringify({ ...record, name: 3 })]) {
      expect(await diverged({}, unreadable)).toMatchObject({ code: 'REPLAY_DIVERGED', message: text('an unreadable record') })
    }
    // The record is left as it was: nothing was run under it.
    expect(await read(base, 'calls/r/1')).toEqual({ ...record, name: 3 })
    expect(await diverged({}, { ...record, state: 'started' })).toMatchObject({ code: 'INTERRUPTED' })
  })
})

describe('DurableRuns.resumeAll: each left run to exactly one process', () => {
  type Started = { callId: string; agent: string | undefined; args: unknown; signal: AbortSignal; principal: string | undefined; trace: unknown }
  function starter() {
    const started: Started[] = []
    const start = async (callId: string, agent: string | undefined, args: unknown, signal: AbortSignal, principal: string | undefined, trace?: unknown) => {
      started.push({ callId, agent, args, signal, principal, trace })
      return `result of ${callId}`
    }
    return { started, start }
  }

  it('claims a parked run (owner and claimedAt, compare-and-set), resumes it from its state with its secret, and beats', async () => {
    const { store, base } = cueStore()
    const trace = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate: 'k=v' }
    await base.put('runs/r', JSON.stringify(stored('r', { agent: 'ag', principal: 'alice', trace })))
    const runs = new DurableRuns(store)
    const { started, start } = starter()
    const before = Date.now()
    const resumed = await runs.resumeAll(start, { staleMs: 60_000 })
    expect(resumed.map((run) => [run.callId, run.agent])).toEqual([['r', 'ag']])
    expect(await resumed[0]!.result).toBe('result of r')
    expect(started).toEqual([{ callId: 'r', agent: 'ag', args: { code: 'return 1', description: 'd' }, signal: expect.any(AbortSignal), principal: 'alice', trace }])
    const claimed = (await read(base, 'runs/r')) as StoredRun
    expect(claimed.owner).toBe(runs.owner)
    expect(claimed.claimedAt).toBeGreaterThanOrEqual(before)
    expect(await runs.alive(runs.owner, 60_000)).toBe(true)
    // The resuming run_code call picks up the state, numbering and secret, once.
    const again = runs.forRun('r', 'ag', { code: 'return 1', description: 'd' })
    expect(again.resume).toEqual({ state: STATE, numbering: NUMBERING })
    expect(again.secret).toBe('s-r')
    expect('resume' in runs.forRun('r', 'ag', { code: 'return 1', description: 'd' })).toBe(false)
    expect(started[0]!.signal.aborted).toBe(false)
    resumed[0]!.cancel('stop')
    expect(started[0]!.signal.aborted).toBe(true)
    expect(started[0]!.signal.reason).toBe('stop')
  })

  it('a resumed run is durable at once: its sub-calls are recorded before it parks again', async () => {
    const { store, base } = cueStore()
    await base.put('runs/r', JSON.stringify(stored('r')))
    const runs = new DurableRuns(store)
    await runs.resumeAll(starter().start)
    const run = runs.forRun('r', undefined, { code: 'return 1', description: 'd' })
    expect(run.secret).toBe('s-r')
    await runs.aroundBody({ callId: 'r:code:1', name: 'pay', arguments: {}, parent: parentOf(run.secret) }, false, async () => 'v')
    expect(await read(base, 'calls/r/1')).toMatchObject({ state: 'done', value: 'v' })
  })

  it('a record from before run secrets resumes with a new secret', async () => {
    const { store, base } = cueStore()
    const { secret: _s, ...old } = stored('r').park!
    await base.put('runs/r', JSON.stringify({ ...stored('r'), park: old }))
    const runs = new DurableRuns(store)
    await runs.resumeAll(starter().start)
    expect(runs.forRun('r', undefined, { code: 'c', description: 'd' }).secret).toMatch(UUID)
  })

  it('leaves runs held by this process or a live one; takes those of a silent, unknown or foreign owner (default staleMs 30 s)', async () => {
    const { store, base } = cueStore()
    const runs = new DurableRuns(store)
    const live = crypto.randomUUID()
    const recent = crypto.randomUUID()
    const silent = crypto.randomUUID()
    await base.put(`owners/${live}`, JSON.stringify({ at: Date.now() }))
    await base.put(`owners/${recent}`, JSON.stringify({ at: Date.now() - 20_000 }))
    await base.put(`owners/${silent}`, JSON.stringify({ at: Date.now() - 40_000 }))
    await base.put('runs/mine', JSON.stringify(stored('mine', { owner: runs.owner })))
    await base.put('runs/live', JSON.stringify(stored('live', { owner: live })))
    await base.put('runs/recent', JSON.stringify(stored('recent', { owner: recent })))
    await base.put('runs/silent', JSON.stringify(stored('silent', { owner: silent })))
    await base.put('runs/gone', JSON.stringify(stored('gone', { owner: crypto.randomUUID() })))
    await base.put('runs/foreign', JSON.stringify(stored('foreign', { owner: 'not-a-process' })))
    const { started, start } = starter()
    const resumed = await runs.resumeAll(start)
    expect(resumed.map((run) => run.callId).sort()).toEqual(['foreign', 'gone', 'silent'])
    expect(started.map((run) => run.callId).sort()).toEqual(['foreign', 'gone', 'silent'])
    expect(((await read(base, 'runs/live')) as StoredRun).owner).toBe(live)
    // A shorter staleMs makes the recent one silent.
    const second = await new DurableRuns(store).resumeAll(start, { staleMs: 10_000 })
    // (the others are now held by the first, which beats)
    expect(second.map((run) => run.callId)).toEqual(['recent'])
  })

  it('skips records it cannot read, that are not runs, or that sit under another key; the sweep goes on past them', async () => {
    const { store, base, cues } = cueStore()
    await base.put('runs/a', JSON.stringify(stored('a')))
    await base.put('runs/b-broken', 'not json')
    await base.put('runs/c-moved', JSON.stringify(stored('elsewhere')))
    await base.put('runs/d-down', JSON.stringify(stored('d-down')))
    await base.put('runs/e', JSON.stringify(stored('e')))
    cues.get = (key) => {
      if (key === 'runs/d-down') throw new Error('storage error')
    }
    const runs = new DurableRuns(store)
    const resumed = await runs.resumeAll(starter().start)
    expect(resumed.map((run) => run.callId)).toEqual(['a', 'e'])
    expect(((await read(base, 'runs/c-moved')) as StoredRun).owner).toBeUndefined()
  })

  it('a record deleted between the listing and its read is skipped', async () => {
    const { store, base, cues } = cueStore()
    await base.put('runs/a', JSON.stringify(stored('a')))
    await base.put('runs/b', JSON.stringify(stored('b')))
    cues.list = async () => void (await base.delete('runs/a'))
    const resumed = await new DurableRuns(store).resumeAll(starter().start)
    expect(resumed.map((run) => run.callId)).toEqual(['b'])
  })

  it('two processes racing on one store: the claim is compare-and-set, so each run is resumed once', async () => {
    const { store, base, cues } = cueStore()
    await base.put('runs/a', JSON.stringify(stored('a')))
    await base.put('runs/b', JSON.stringify(stored('b')))
    const first = new DurableRuns(store)
    const second = new DurableRuns(store)
    const one = starter()
    const two = starter()
    // The second process claims each run between the first's read and its write.
    cues.put = async (key, _value, options) => {
      if (key.startsWith('runs/') && options?.ifVersion !== undefined && cues.put !== undefined) {
        const hook = cues.put
        cues.put = undefined
        await second.resumeAll(two.start)
        cues.put = hook
      }
    }
    const firstResumed = await first.resumeAll(one.start)
    cues.put = undefined
    expect(firstResumed).toEqual([])
    expect(two.started.map((run) => run.callId).sort()).toEqual(['a', 'b'])
    expect(((await read(base, 'runs/a')) as StoredRun).owner).toBe(second.owner)
    // A claim that lost the race sets no resume state.
    expect('resume' in first.forRun('a', undefined, { code: 'c', description: 'd' })).toBe(false)
  })

  it('pages through the store: every left run is found past the first page of 100', async () => {
    const { store, base } = cueStore()
    for (let i = 0; i < 205; i++) await base.put(`runs/r${String(i).padStart(3, '0')}`, JSON.stringify(stored(`r${String(i).padStart(3, '0')}`)))
    const resumed = await new DurableRuns(store).resumeAll(starter().start, { staleMs: 0 })
    expect(resumed).toHaveLength(205)
    expect(new Set(resumed.map((run) => run.callId)).size).toBe(205)
  })

  it('a "process" that dies (dropped, no heartbeat) leaves its parked run to the next one, which resumes it once', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] })
    const store = createMemoryStore()
    const dead = new DurableRuns(store)
    dead.forRun('r', undefined, { code: 'c', description: 'd' }).onPark(STATE, NUMBERING)
    await dead.flushed()
    // The process dies: its heartbeat stops (nothing else happens to the store).
    dead.close()
    const next = new DurableRuns(store)
    expect(await next.resumeAll(starter().start, { staleMs: 30_000 })).toEqual([])
    vi.advanceTimersByTime(30_000)
    const resumed = await next.resumeAll(starter().start, { staleMs: 30_000 })
    expect(resumed.map((run) => run.callId)).toEqual(['r'])
    const third = new DurableRuns(store)
    expect(await third.resumeAll(starter().start, { staleMs: 30_000 })).toEqual([])
  })
})

describe('readStoredRun: a record that is not one is skipped, never trusted', () => {
  const valid = stored('r', { agent: 'a', principal: 'p', owner: 'o', claimedAt: 1 })
  const text = (over: Record<string, unknown>) => JSON.stringify(stored('r', { agent: 'a', principal: 'p', owner: 'o', claimedAt: 1, ...over }))

  it('reads a valid record as it is', async () => {
    expect(await readStoredRun(JSON.stringify(valid))).toEqual(valid)
    expect(await readStoredRun(text({ principal: 'x'.repeat(64), secret: 's'.repeat(64) }))).toMatchObject({ principal: 'x'.repeat(64) })
  })

  it('refuses each malformed field', async () => {
    for (const bad of ['not json', 'null', '"r"', text({ version: 2 }), text({ callId: 1 }), text({ code: null }), text({ description: 2 })]) expect(await readStoredRun(bad)).toBeUndefined()
    for (const over of [{ agent: 1 }, { principal: 1 }, { principal: 'a b' }, { principal: 'x'.repeat(65) }, { principal: '' }, { secret: 1 }, { secret: 's'.repeat(65) }]) {
      expect(await readStoredRun(text(over))).toBeUndefined()
    }
    for (const over of [{ state: { ...STATE, version: 2 } }, { state: null }, { numbering: null }, { numbering: 'n' }, { numbering: { submitted: -1, calls: [] } }, { numbering: { submitted: 1.5, calls: [] } }, { numbering: { submitted: '1', calls: [] } }]) {
      expect(await readStoredRun(text(over))).toBeUndefined()
    }
    for (const calls of [{}, [[1]], [[1, 2, 3]], [[1, -1]], [[-1, 1]], [['1', 1]], [1]]) {
      expect(await readStoredRun(text({ numbering: { submitted: 1, calls } }))).toBeUndefined()
    }
    expect(await readStoredRun(text({ numbering: { submitted: 0, calls: [[0, 0]] } }))).toBeDefined()
  })

  it('with a trace context: a valid one is kept, one that is not (or whose tracestate is over 512) is dropped; the rest is still checked', async () => {
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    expect((await readStoredRun(text({ trace: { traceparent, tracestate: 'x'.repeat(512) } })))?.park?.trace).toEqual({ traceparent, tracestate: 'x'.repeat(512) })
    expect((await readStoredRun(text({ trace: { traceparent } })))?.park?.trace).toEqual({ traceparent })
    const dropped = await readStoredRun(text({ trace: { traceparent, tracestate: 'x'.repeat(513) } }))
    expect(dropped).toBeDefined()
    expect('trace' in dropped!.park!).toBe(false)
    const foreign = await readStoredRun(text({ trace: 'x' }))
    expect(foreign).toEqual(valid)
    // A record with a trace is no less a record: its state and numbering are checked too.
    expect(await readStoredRun(text({ trace: { traceparent }, state: null }))).toBeUndefined()
    expect(await readStoredRun(text({ trace: { traceparent }, numbering: { submitted: -1, calls: [] } }))).toBeUndefined()
  })
})
