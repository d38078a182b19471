/**
 * The approval records a store broker writes and reads back (src/approvals/_store-record.ts)
 * and its bounded listing (_store-list.ts), in process: every field check of a record read
 * from a shared store, the key and id formats, and the listing's bounds (issue 38 item 4).
 */
import { describe, expect, it } from 'vitest'
import { listOpen, MAX_LISTED_APPROVALS, sweepSettled } from '../../../src/approvals/_store-list.js'
import {
  callHash,
  decodeDone,
  decodeOpen,
  doneKey,
  encodeDone,
  encodeOpen,
  hashOfId,
  hashOfKey,
  MAX_APPROVAL_RECORD_BYTES,
  MAX_STORED_ARGUMENTS_BYTES,
  MAX_STORED_ARGUMENTS_DEPTH,
  newApprovalId,
  openKey,
  runOfOpenApproval,
  sameCall,
  storedFields,
} from '../../../src/approvals/_store-record.js'
import type { RequestFields } from '../../../src/approvals/_request.js'
import type { PendingApproval } from '../../../src/approvals/types.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import type { DurableStore } from '../../../src/durable/store.js'

const HASH = '0123456789abcdef0123456789abcdef'
const ID = newApprovalId(HASH)
const ARGS_HASH = 'a'.repeat(64)

function approval(over: Record<string, unknown> = {}): PendingApproval {
  return { id: ID, callId: 'c1', kind: 'call', name: 'pay', arguments: { cents: 5 }, argumentsHash: ARGS_HASH, summary: 'pay 5', requestedAt: 1000, expiresAt: 2000, ...over } as PendingApproval
}
const openText = (over: Record<string, unknown> = {}) => JSON.stringify({ format: 'toolyard-approval/1', approval: approval(over) })
const doneText = (settled: Record<string, unknown>, over: Record<string, unknown> = {}) => JSON.stringify({ format: 'toolyard-approval/1', approval: approval(over), settled })
const PLAN = { codeLength: 10, calls: [{ name: 'pay', line: 1 }], moreCalls: 0, asking: [{ name: 'pay', reason: 'money' }, { name: 'send' }], dynamic: false }

describe('approval ids and keys', () => {
  it('an id is <32 hex>.<uuid>; anything else names no call', () => {
    expect(ID).toMatch(/^[0-9a-f]{32}\.[0-9a-f-]{36}$/)
    expect(hashOfId(ID)).toBe(HASH)
    expect(newApprovalId(HASH)).not.toBe(ID)
    for (const bad of [HASH, `${HASH}.x`, `${HASH.slice(1)}.${ID.slice(33)}`, `${ID}0`, `x${ID}`, `${HASH.toUpperCase()}.${ID.slice(33)}`, `${ID}${' '.repeat(20)}`]) expect(hashOfId(bad)).toBeUndefined()
  })

  it('keys: approvals/open/<hash> and approvals/done/<hash>; hashOfKey reads either, nothing else', () => {
    expect(openKey(HASH)).toBe(`approvals/open/${HASH}`)
    expect(doneKey(HASH)).toBe(`approvals/done/${HASH}`)
    expect(hashOfKey(openKey(HASH))).toBe(HASH)
    expect(hashOfKey(doneKey(HASH))).toBe(HASH)
    for (const bad of [`approvals/other/${HASH}`, HASH, `approvals/open/${HASH}0`, `approvals/open/${HASH.slice(1)}`, `approvals/done/${HASH.toUpperCase()}`]) expect(hashOfKey(bad)).toBeUndefined()
  })

  it('callHash binds every part of the call and the run secret', async () => {
    const fields = { kind: 'call', agent: 'a', callId: 'c', parentCallId: 'p', name: 'pay', argumentsHash: ARGS_HASH } as const
    const base = await callHash(fields, 'secret')
    expect(base).toMatch(/^[0-9a-f]{32}$/)
    expect(await callHash({ ...fields }, 'secret')).toBe(base)
    const variants = [
      callHash({ ...fields, kind: 'plan' }, 'secret'),
      callHash({ ...fields, agent: undefined }, 'secret'),
      callHash({ ...fields, callId: 'd' }, 'secret'),
      callHash({ ...fields, parentCallId: undefined }, 'secret'),
      callHash(fields, undefined),
      callHash(fields, 'other'),
      callHash({ ...fields, name: 'refund' }, 'secret'),
      callHash({ ...fields, argumentsHash: undefined }, 'secret'),
    ]
    const hashes = await Promise.all(variants)
    expect(new Set([base, ...hashes]).size).toBe(hashes.length + 1)
  })
})

describe('storedFields: arguments kept only when small and shallow', () => {
  const fields = (args: unknown): RequestFields => ({ kind: 'call', callId: 'c', name: 'pay', arguments: args, summary: 's' }) as unknown as RequestFields
  it('keeps small arguments as they are; leaves out large or deep ones, saying so', () => {
    const small = fields({ a: [1, 'x', null, true] })
    expect(storedFields(small)).toBe(small)
    const omitted = { ...fields(null), argumentsOmitted: true }
    expect(storedFields(fields('x'.repeat(MAX_STORED_ARGUMENTS_BYTES)))).toEqual(omitted)
    expect(storedFields(fields('x'.repeat(MAX_STORED_ARGUMENTS_BYTES - 2)))).toEqual(fields('x'.repeat(MAX_STORED_ARGUMENTS_BYTES - 2)))
    expect(storedFields(fields(Array.from({ length: 700 }, () => 1)))).toEqual(omitted)
    expect(storedFields(fields(Array.from({ length: 600 }, () => 1))).arguments).toHaveLength(600)
    expect(storedFields(fields({ ['k'.repeat(MAX_STORED_ARGUMENTS_BYTES)]: 1 }))).toEqual(omitted)
    expect(storedFields(fields(Array.from({ length: MAX_STORED_ARGUMENTS_BYTES / 2 }, () => [])))).toEqual(omitted)
    expect(storedFields(fields(Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`k${i}`, 1]))))).toEqual(omitted)
    let deep: unknown = 1
    for (let i = 0; i < MAX_STORED_ARGUMENTS_DEPTH; i++) deep = [deep]
    expect(storedFields(fields(deep)).arguments).toEqual(deep)
    expect(storedFields(fields([deep]))).toEqual(omitted)
  })
})

describe('encodeOpen / decodeOpen', () => {
  it('round-trips a call and a plan as frozen copies', () => {
    const call = approval({ agent: 'ag', parentCallId: 'run-1', principal: 'alice', preview: 'p', reason: 'why' })
    const text = encodeOpen(call)!
    const read = decodeOpen(text, HASH)!
    expect(read).toEqual(call)
    expect(Object.isFrozen(read)).toBe(true)
    const plan = approval({ kind: 'plan', plan: PLAN })
    const readPlan = decodeOpen(encodeOpen(plan)!, HASH)!
    expect(readPlan).toEqual(plan)
    expect(Object.isFrozen(readPlan.plan)).toBe(true)
    expect(Object.isFrozen(readPlan.plan!.calls[0])).toBe(true)
    expect(decodeOpen(encodeOpen(approval({ arguments: null, argumentsOmitted: true }))!, HASH)).toMatchObject({ argumentsOmitted: true, arguments: null })
    const minimal = decodeOpen(openText({ argumentsHash: undefined }), HASH)!
    expect(Object.keys(minimal).sort()).toEqual(['arguments', 'callId', 'expiresAt', 'id', 'kind', 'name', 'requestedAt', 'summary'])
  })

  it('encodeOpen refuses a record over 64 KiB of UTF-8 (characters that take 3 bytes counted as 3)', () => {
    const head = encodeOpen(approval({ summary: '' }))!.length
    expect(encodeOpen(approval({ summary: 'x'.repeat(MAX_APPROVAL_RECORD_BYTES - head) }))).toBeDefined()
    expect(encodeOpen(approval({ summary: 'x'.repeat(MAX_APPROVAL_RECORD_BYTES - head + 1) }))).toBeUndefined()
    const wide = Math.floor((MAX_APPROVAL_RECORD_BYTES - head) / 3)
    expect(encodeOpen(approval({ summary: '€'.repeat(wide) }))).toBeDefined()
    expect(encodeOpen(approval({ summary: '€'.repeat(wide + 1) }))).toBeUndefined()
    expect(encodeOpen(approval({ summary: '€'.repeat(Math.floor(MAX_APPROVAL_RECORD_BYTES / 3) - head) }))).toBeDefined()
  })

  it('refuses a record that is not one: format, shape, size, nesting, extra keys, another hash', () => {
    expect(decodeOpen(openText(), HASH.replace('0', '1'))).toBeUndefined()
    for (const bad of [
      'not json',
      'null',
      '[]',
      JSON.stringify({ format: 'toolyard-approval/2', approval: approval() }),
      JSON.stringify({ format: 'toolyard-approval/1', approval: approval(), extra: 1 }),
      JSON.stringify({ format: 'toolyard-approval/1', approval: [] }),
      JSON.stringify({ format: 'toolyard-approval/1' }),
      openText({ summary: 'x'.repeat(MAX_APPROVAL_RECORD_BYTES + 8 * 1024) }),
      openText({ arguments: Array.from({ length: 40_000 }, () => 0) }),
    ]) {
      expect(decodeOpen(bad, HASH)).toBeUndefined()
    }
    const nest = (levels: number) => {
      let deep: unknown = 1
      for (let i = 0; i < levels; i++) deep = [deep]
      return deep
    }
    let accepted = 0
    while (decodeOpen(openText({ arguments: nest(accepted + 1) }), HASH) !== undefined) accepted++
    // The record's own levels on top of the arguments' cap.
    expect(accepted).toBeGreaterThanOrEqual(MAX_STORED_ARGUMENTS_DEPTH)
    expect(accepted).toBeLessThanOrEqual(MAX_STORED_ARGUMENTS_DEPTH + 6)
    expect(decodeOpen(openText({ arguments: Array.from({ length: 30_000 }, () => 0) }), HASH)).toBeDefined()
  })

  it('refuses each malformed field of the approval', () => {
    const bad: Record<string, unknown>[] = [
      { id: 1 },
      { id: newApprovalId(HASH.replace('0', '1')) },
      { callId: 1 },
      { name: null },
      { summary: 2 },
      { parentCallId: 1 },
      { agent: 1 },
      { reason: 1 },
      { principal: 'a b' },
      { principal: 1 },
      { principal: 'x'.repeat(65) },
      { preview: 1 },
      { preview: 'x'.repeat(4097) },
      { kind: 'other' },
      { requestedAt: -1 },
      { requestedAt: 1.5 },
      { expiresAt: '2000' },
      { expiresAt: 999 },
      { argumentsOmitted: false, arguments: null },
      { argumentsOmitted: true },
      { argumentsHash: 'abc' },
      { arguments: undefined },
      { plan: PLAN },
      { kind: 'plan' },
      { surprise: 1 },
    ]
    for (const over of bad) expect(decodeOpen(openText(over), HASH), JSON.stringify(over).slice(0, 80)).toBeUndefined()
    // A value JSON cannot carry back as it is (negative zero) is no argument.
    expect(decodeOpen(openText().replace('"cents":5', '"cents":-0'), HASH)).toBeUndefined()
    expect(decodeOpen(openText({ preview: 'x'.repeat(4096), principal: 'x'.repeat(64), expiresAt: 1000 }), HASH)).toBeDefined()
  })

  it('refuses each malformed field of a plan', () => {
    const plans: unknown[] = [
      null,
      [],
      { ...PLAN, extra: 1 },
      { ...PLAN, codeLength: -1 },
      { ...PLAN, moreCalls: 1.5 },
      { ...PLAN, dynamic: 'no' },
      { ...PLAN, calls: {} },
      { ...PLAN, asking: {} },
      { ...PLAN, calls: Array.from({ length: 101 }, () => ({ name: 'a', line: 1 })) },
      { ...PLAN, asking: Array.from({ length: 101 }, () => ({ name: 'a' })) },
      { ...PLAN, calls: [null] },
      { ...PLAN, calls: [{ name: 1, line: 1 }] },
      { ...PLAN, calls: [{ name: 'a', line: -1 }] },
      { ...PLAN, calls: [{ name: 'a', line: 1, x: 1 }] },
      { ...PLAN, asking: [null] },
      { ...PLAN, asking: [{ name: 1 }] },
      { ...PLAN, asking: [{ name: 'a', reason: 1 }] },
      { ...PLAN, asking: [{ name: 'a', x: 1 }] },
    ]
    for (const plan of plans) expect(decodeOpen(openText({ kind: 'plan', plan }), HASH), JSON.stringify(plan).slice(0, 80)).toBeUndefined()
    const full = { ...PLAN, calls: Array.from({ length: 100 }, () => ({ name: 'a', line: 0 })), asking: Array.from({ length: 100 }, () => ({ name: 'a' })) }
    expect(decodeOpen(openText({ kind: 'plan', plan: full }), HASH)?.plan?.calls).toHaveLength(100)
  })
})

describe('encodeDone / decodeDone', () => {
  it('round-trips each kind of settlement', () => {
    for (const settled of [{ kind: 'expired', at: 5 }, { kind: 'withdrawn', at: 5 }, { kind: 'decided', decision: 'allow', at: 5 }, { kind: 'decided', decision: 'deny', reason: 'no', byDisposal: true, at: 5 }] as const) {
      const read = decodeDone(encodeDone({ approval: approval(), settled }), HASH)!
      expect(read).toEqual({ approval: approval(), settled })
      expect(Object.isFrozen(read)).toBe(true)
      expect(Object.isFrozen(read.settled)).toBe(true)
    }
    expect(Object.keys(decodeDone(doneText({ kind: 'decided', decision: 'deny', at: 0 }), HASH)!.settled)).toEqual(['kind', 'decision', 'at'])
    expect(decodeDone(doneText({ kind: 'decided', decision: 'deny', reason: 'x'.repeat(2000), at: 0 }), HASH)).toBeDefined()
  })

  it('refuses a settlement that is not one, or a malformed approval beside it', () => {
    const settlements: unknown[] = [
      null,
      { kind: 'expired' },
      { kind: 'expired', at: -1 },
      { kind: 'expired', at: 1, decision: 'allow' },
      { kind: 'withdrawn', at: 1, reason: 'x' },
      { kind: 'withdrawn', at: 1, byDisposal: true },
      { kind: 'other', at: 1 },
      { kind: 'decided', decision: 'maybe', at: 1 },
      { kind: 'decided', at: 1 },
      { kind: 'decided', decision: 'allow', byDisposal: false, at: 1 },
      { kind: 'decided', decision: 'allow', reason: 1, at: 1 },
      { kind: 'decided', decision: 'allow', reason: 'x'.repeat(2001), at: 1 },
      { kind: 'decided', decision: 'allow', at: 1, extra: true },
    ]
    for (const settled of settlements) expect(decodeDone(doneText(settled as Record<string, unknown>), HASH), JSON.stringify(settled)).toBeUndefined()
    expect(decodeDone(doneText({ kind: 'expired', at: 1 }, { id: 1 }), HASH)).toBeUndefined()
    expect(decodeDone(JSON.stringify({ format: 'toolyard-approval/1', approval: approval(), settled: { kind: 'expired', at: 1 }, extra: 1 }), HASH)).toBeUndefined()
    expect(decodeDone('nope', HASH)).toBeUndefined()
  })
})

describe('sameCall and runOfOpenApproval', () => {
  it('sameCall: every part of the binding equal, and an arguments hash present', () => {
    const a = approval({ agent: 'ag', parentCallId: 'p' })
    const fields = { kind: 'call', agent: 'ag', callId: 'c1', parentCallId: 'p', name: 'pay', argumentsHash: ARGS_HASH } as const
    expect(sameCall(a, fields)).toBe(true)
    for (const over of [{ kind: 'plan' }, { agent: 'x' }, { callId: 'x' }, { parentCallId: 'x' }, { name: 'x' }, { argumentsHash: 'b'.repeat(64) }] as const) {
      expect(sameCall(a, { ...fields, ...over } as typeof fields)).toBe(false)
    }
    expect(sameCall(approval({ agent: 'ag', parentCallId: 'p', argumentsHash: undefined }), { ...fields, argumentsHash: undefined } as never)).toBe(false)
  })

  it('runOfOpenApproval: a call\'s parent run, a plan\'s own call id, nothing for an unknown, malformed or foreign id', async () => {
    const store = createMemoryStore()
    expect(await runOfOpenApproval(store, ID)).toBeUndefined()
    await store.put(openKey(HASH), openText({ parentCallId: 'run-1' }))
    expect(await runOfOpenApproval(store, ID)).toBe('run-1')
    expect(await runOfOpenApproval(store, 'not-an-id')).toBeUndefined()
    await store.put(openKey(HASH), openText({ kind: 'plan', plan: PLAN, callId: 'run-2' }))
    expect(await runOfOpenApproval(store, ID)).toBe('run-2')
    await store.put(openKey(HASH), 'garbage')
    expect(await runOfOpenApproval(store, ID)).toBeUndefined()
  })
})

/** A hash for record `i` (32 hex digits). */
const hashOf = (i: number) => i.toString(16).padStart(32, '0')
const openOf = (i: number, over: Record<string, unknown> = {}) => JSON.stringify({ format: 'toolyard-approval/1', approval: approval({ id: newApprovalId(hashOf(i)), ...over }) })

describe('listOpen: bounded, oldest first, garbage counted', () => {
  it('lists the unexpired requests oldest first (then by id), counts what it read and what was malformed, removes stale ones past retention', async () => {
    const now = Date.now()
    const store = createMemoryStore()
    await store.put(openKey(hashOf(1)), openOf(1, { requestedAt: now - 10, expiresAt: now + 60_000 }))
    await store.put(openKey(hashOf(2)), openOf(2, { requestedAt: now - 20, expiresAt: now + 60_000 }))
    await store.put(openKey(hashOf(3)), openOf(3, { requestedAt: now - 10, expiresAt: now + 60_000 }))
    await store.put(openKey(hashOf(4)), openOf(4, { requestedAt: now - 10_000, expiresAt: now - 5000 }))
    await store.put(openKey(hashOf(5)), openOf(5, { requestedAt: now - 10_000, expiresAt: now - 1000 }))
    await store.put(openKey(hashOf(6)), 'garbage')
    await store.put('approvals/open/not-a-hash', openOf(7))
    const result = await listOpen(store, 3000)
    expect(result.approvals.map((a) => hashOfId(a.id))).toEqual([hashOf(2), hashOf(1), hashOf(3)])
    expect(result.listing).toEqual({ examined: 7, malformed: 2, truncated: false })
    expect(Object.isFrozen(result.approvals)).toBe(true)
    expect(Object.isFrozen(result.listing)).toBe(true)
    // Past expiry and retention: removed. Past expiry within retention: kept, not listed.
    expect(await store.get(openKey(hashOf(4)))).toBeUndefined()
    expect(await store.get(openKey(hashOf(5)))).toBeDefined()
    expect(await store.get(openKey(hashOf(6)))).toBeDefined()
  })

  it('a record the store cannot read counts as malformed; one removed since the listing is skipped, uncounted as malformed', async () => {
    const base = createMemoryStore()
    const now = Date.now()
    await base.put(openKey(hashOf(1)), openOf(1, { expiresAt: now + 60_000 }))
    await base.put(openKey(hashOf(2)), openOf(2, { expiresAt: now + 60_000 }))
    await base.put(openKey(hashOf(3)), openOf(3, { expiresAt: now + 60_000 }))
    const store: DurableStore = {
      ...base,
      get: async (key) => {
        if (key === openKey(hashOf(1))) throw new Error('corrupt')
        if (key === openKey(hashOf(2))) return undefined
        return base.get(key)
      },
    }
    const result = await listOpen(store, 0)
    expect(result.approvals.map((a) => hashOfId(a.id))).toEqual([hashOf(3)])
    expect(result.listing).toEqual({ examined: 3, malformed: 1, truncated: false })
  })

  it('reads at most 1,000 records (truncated), across pages', async () => {
    const store = createMemoryStore()
    const now = Date.now()
    for (let i = 0; i < 1001; i++) await store.put(openKey(hashOf(i)), i % 2 === 0 ? 'garbage' : openOf(i, { expiresAt: now + 60_000 }))
    const result = await listOpen(store, 0)
    expect(result.listing).toEqual({ examined: 1000, malformed: 500, truncated: true })
    expect(result.approvals).toHaveLength(500)
    await store.delete(openKey(hashOf(1000)))
    expect((await listOpen(store, 0)).listing).toEqual({ examined: 1000, malformed: 500, truncated: false })
  })

  it(`returns at most ${MAX_LISTED_APPROVALS} (the oldest), truncated`, async () => {
    const store = createMemoryStore()
    const now = Date.now()
    for (let i = 0; i < MAX_LISTED_APPROVALS + 1; i++) await store.put(openKey(hashOf(i)), openOf(i, { requestedAt: now - i, expiresAt: now + 60_000 }))
    const result = await listOpen(store, 0)
    expect(result.approvals).toHaveLength(MAX_LISTED_APPROVALS)
    expect(result.listing.truncated).toBe(true)
    expect(hashOfId(result.approvals[0]!.id)).toBe(hashOf(MAX_LISTED_APPROVALS))
    await store.delete(openKey(hashOf(0)))
    expect((await listOpen(store, 0)).listing.truncated).toBe(false)
  })

  it('stops at 8 MiB of record text (truncated); what it read is listed', async () => {
    const store = createMemoryStore({ maxValueBytes: 2 * 1024 * 1024 })
    const now = Date.now()
    for (let i = 0; i < 5; i++) await store.put(openKey(hashOf(i)), i < 4 ? 'x'.repeat(2 * 1024 * 1024) : openOf(i, { expiresAt: now + 60_000 }))
    const result = await listOpen(store, 0)
    expect(result.listing).toEqual({ examined: 4, malformed: 4, truncated: true })
  })

  it('removes at most 50 stale records per listing', async () => {
    const store = createMemoryStore()
    const now = Date.now()
    for (let i = 0; i < 60; i++) await store.put(openKey(hashOf(i)), openOf(i, { requestedAt: now - 10_000, expiresAt: now - 5000 }))
    await listOpen(store, 0)
    expect((await store.list('approvals/open/', { limit: 1000 })).entries).toHaveLength(10)
  })
})

describe('sweepSettled: one page of settled records past retention', () => {
  it('removes settled records past retention, keeps newer and malformed ones, and walks the prefix page by page', async () => {
    const store = createMemoryStore()
    const now = Date.now()
    const done = (i: number, at: number) => JSON.stringify({ format: 'toolyard-approval/1', approval: approval({ id: newApprovalId(hashOf(i)) }), settled: { kind: 'expired', at } })
    for (let i = 0; i < 55; i++) await store.put(doneKey(hashOf(i)), done(i, now - 10_000))
    await store.put(doneKey(hashOf(55)), done(55, now))
    await store.put(doneKey(hashOf(56)), 'garbage')
    await store.put('approvals/done/not-a-hash', done(57, 0))
    const next = await sweepSettled(store, undefined, 5000)
    expect(next).toBeDefined()
    expect((await store.list('approvals/done/', { limit: 1000 })).entries).toHaveLength(8)
    const last = await sweepSettled(store, next, 5000)
    expect(last).toBeUndefined()
    const left = (await store.list('approvals/done/', { limit: 1000 })).entries.map((entry) => entry.key)
    expect(left).toEqual([doneKey(hashOf(55)), doneKey(hashOf(56)), 'approvals/done/not-a-hash'])
  })
})
