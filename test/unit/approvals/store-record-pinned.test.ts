/**
 * A settlement's decider role as a store broker keeps it (src/approvals/_store-record.ts):
 * read back, refused when malformed or on a kind that has none (docs/testing.md).
 */
import { describe, expect, it } from 'vitest'
import { decodeDone, decodeOpen, encodeDone, newApprovalId } from '../../../src/approvals/_store-record.js'
import type { PendingApproval } from '../../../src/approvals/types.js'

const HASH = '0123456789abcdef0123456789abcdef'
const approval = { id: newApprovalId(HASH), callId: 'c1', kind: 'call', name: 'pay', arguments: { cents: 5 }, argumentsHash: 'a'.repeat(64), summary: 'pay 5', requestedAt: 1000, expiresAt: 2000 } as PendingApproval
const doneText = (settled: Record<string, unknown>) => JSON.stringify({ format: 'toolyard-approval/1', approval, settled })

describe('decodeDone: the decider role', () => {
  it('a decision keeps its role through the store', () => {
    const settled = { kind: 'decided', decision: 'allow', role: 'ops', at: 1500 } as const
    expect(decodeDone(encodeDone({ approval, settled }), HASH)?.settled).toEqual(settled)
    expect(decodeDone(doneText({ kind: 'decided', decision: 'deny', at: 1500 }), HASH)?.settled).toEqual({ kind: 'decided', decision: 'deny', at: 1500 })
  })

  it('a role that is not a label, or a role on an expiry or a withdrawal, makes the record malformed', () => {
    expect(decodeDone(doneText({ kind: 'decided', decision: 'allow', role: 'not a label!', at: 1500 }), HASH)).toBeUndefined()
    expect(decodeDone(doneText({ kind: 'decided', decision: 'allow', role: 7, at: 1500 }), HASH)).toBeUndefined()
    expect(decodeDone(doneText({ kind: 'expired', role: 'ops', at: 1500 }), HASH)).toBeUndefined()
    expect(decodeDone(doneText({ kind: 'withdrawn', role: 'ops', at: 1500 }), HASH)).toBeUndefined()
    expect(decodeDone(doneText({ kind: 'other', decision: 'allow', at: 1500 }), HASH)).toBeUndefined()
  })
})

const openText = (over: Record<string, unknown>) => JSON.stringify({ format: 'toolyard-approval/1', approval: { ...approval, ...over } })

describe('decodeOpen: bounds and shapes pinned', () => {
  it('an id that is not a string is refused, even an array whose text is a valid id', () => {
    expect(decodeOpen(openText({}), HASH)?.id).toBe(approval.id)
    expect(decodeOpen(openText({ id: [approval.id] }), HASH)).toBeUndefined()
  })

  it('a plan\'s ask without a reason is read back without a reason key', () => {
    const plan = { codeLength: 10, calls: [{ name: 'pay', line: 1 }], moreCalls: 0, asking: [{ name: 'pay', reason: 'money' }, { name: 'send' }], dynamic: false }
    const read = decodeOpen(openText({ kind: 'plan', plan }), HASH)
    expect(read?.plan?.asking.map((ask) => Object.keys(ask))).toEqual([['name', 'reason'], ['name']])
  })

  it('reads a record of up to 72 KiB of text (64 KiB + 8 KiB of slack), not one character more', () => {
    const LIMIT = 64 * 1024 + 8 * 1024
    const sized = (length: number) => openText({ summary: 'x'.repeat(length - openText({ summary: '' }).length) })
    expect(sized(LIMIT)).toHaveLength(LIMIT)
    expect(decodeOpen(sized(LIMIT), HASH)?.summary).toHaveLength(LIMIT - openText({ summary: '' }).length)
    expect(decodeOpen(sized(LIMIT + 1), HASH)).toBeUndefined()
  })
})
