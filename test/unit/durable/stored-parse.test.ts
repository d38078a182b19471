/**
 * Stored texts are parsed in turn-sliced steps once longer than one turn's bound (the README's
 * rule: nothing untrusted is parsed on the main thread without a bound): a spilled park read
 * back by a resume, an event snapshot's body. On a memory store every store call settles in
 * microtasks, so a timer scheduled before the read runs before it ends only if the parse yields.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { PARSE_AT_ONCE_CHARS } from '../../../src/code-runtime/json-endpoint.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import { createRunEventLog, createStoreRunEvents, getPieces, newPiecesGen } from '../../../src/durable/run-table.js'
import { readStoredRun } from '../../../src/durable/runs.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { parseStoredJson } from '../../../src/durable/stored-json.js'
import { closeProcesses, durableProcess, FIRST_CALL_NUMBERING, parkedState } from '../../support/parked-run.js'

afterEach(closeProcesses)

/** A flag a zero-delay timer set now raises: whether the event loop turned since. */
function timerSetNow(): { readonly ran: boolean } {
  const flag = { ran: false }
  setTimeout(() => (flag.ran = true), 0)
  return flag
}

describe('parseStoredJson', () => {
  it('answers what JSON.parse answers, short and long, and throws a SyntaxError where it throws', async () => {
    const long = JSON.stringify({ rows: Array.from({ length: 20_000 }, (_, i) => ({ i, s: `row ${i}`, f: i / 7, n: null, t: true, e: [], o: {} })), tail: 'x'.repeat(200_000), ['__proto__']: { a: 1 } })
    expect(long.length).toBeGreaterThan(PARSE_AT_ONCE_CHARS)
    for (const text of ['{"a":[1,2,{"b":"c"}]}', '"s"', '7', 'null', long]) expect(await parseStoredJson(text)).toEqual(JSON.parse(text))
    for (const text of ['{', `[${'1,'.repeat(PARSE_AT_ONCE_CHARS)}`, `${long} x`]) await expect(parseStoredJson(text)).rejects.toThrow(SyntaxError)
  })

  it('yields to the event loop while it parses a long text, not for a short one', async () => {
    const short = timerSetNow()
    await parseStoredJson(JSON.stringify({ a: 'x'.repeat(1000) }))
    expect(short.ran).toBe(false)
    const long = timerSetNow()
    await parseStoredJson(JSON.stringify(Array.from({ length: 100_000 }, (_, i) => i)))
    expect(long.ran).toBe(true)
  })
})

describe('a resume reads a spilled park in slices', () => {
  it('a timer scheduled before the resume runs before the park of several MiB is parsed; the park read equals JSON.parse of its pieces', async () => {
    const store = createMemoryStore({ maxValueBytes: 128 * 1024 })
    const a = durableProcess(store)
    // Several MiB of small values (a parse's cost is per value): the waiting call's arguments.
    const rows = Array.from({ length: 250_000 }, (_, i) => ({ i, s: `row ${i}` }))
    const state = { ...parkedState('pay'), calls: [{ id: 1, global: 'tools', name: 'pay', args: { rows } }] }
    a.forRun('big', undefined, { code: 'return await tools.pay({ rows })', description: 'big' }).onPark(state, FIRST_CALL_NUMBERING)
    await a.flushed()
    a.close()
    const record = (await readStoredRun((await store.get('runs/big'))!.value))!
    expect(record.parkPieces!.bytes).toBeGreaterThan(4 * 1024 * 1024)
    const text = (await getPieces(store, `run-parks/big/${record.parkPieces!.gen}.`, record.parkPieces!.pieces, record.parkPieces!.bytes))!

    const b = durableProcess(store)
    const flag = timerSetNow()
    let ranBeforeStart: boolean | undefined
    let resumedState: unknown
    const resumed = await b.resumeAll(
      async (callId, agent, args) => {
        ranBeforeStart = flag.ran
        resumedState = b.forRun(callId, agent, args).resume?.state
      },
      { staleMs: 0 },
    )
    expect(resumed.map((run) => run.callId)).toEqual(['big'])
    await resumed[0]!.result
    // Before: one JSON.parse of the whole park in the resume's turn; the timer ran only after.
    expect(ranBeforeStart).toBe(true)
    expect(resumedState).toEqual((JSON.parse(text) as { state: unknown }).state)
  }, 60_000)
})

describe('an event snapshot is read in slices', () => {
  it('a timer scheduled before the load runs before a body of several hundred KiB is parsed; the frames are those stored', async () => {
    const store = createMemoryStore()
    const events = createStoreRunEvents(store, 8 * 1024 * 1024)
    const log = createRunEventLog(8 * 1024 * 1024)
    for (let i = 0; i < 4000; i++) log.append('progress', { i, note: `step ${i} of the run` })
    expect((await events.put('r', log)).ok).toBe(true)
    const flag = timerSetNow()
    const loaded = await events.load('r')
    // Before: the body was one JSON.parse in the load's turn.
    expect(flag.ran).toBe(true)
    expect(loaded!.frames).toEqual(log.since(0).frames)
  })
})

describe('a spilled park is bounded before any piece is read', () => {
  it('a record naming more pieces or bytes than a park can have is not a record; one at the bounds with its pieces missing costs one read', async () => {
    const store = createMemoryStore()
    const gets: string[] = []
    const counted: DurableStore = { ...store, get: (key) => (gets.push(key), store.get(key)) }
    const gen = newPiecesGen()
    const MAX = 256 * 1024 * 1024
    for (const parkPieces of [{ gen, pieces: 1e9, bytes: 1e9 }, { gen, pieces: 1e9, bytes: MAX }, { gen, pieces: MAX / 1024 + 1, bytes: MAX }, { gen, pieces: 2, bytes: 1024 }, { gen: 'a/b', pieces: 1, bytes: 10 }]) {
      expect(await readStoredRun(JSON.stringify({ version: 1, callId: 'h', parkPieces }))).toBeUndefined()
    }
    await store.put('runs/h', JSON.stringify({ version: 1, callId: 'h', parkPieces: { gen, pieces: MAX / 1024, bytes: MAX } }))
    const b = durableProcess(counted)
    expect(await b.resumeAll(async () => undefined, { staleMs: 0 })).toEqual([])
    expect(gets.filter((key) => key.startsWith('run-parks/'))).toEqual([`run-parks/h/${gen}.0`])
  })
})
