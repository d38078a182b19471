/**
 * A settlement's decider role as a store broker keeps it (src/approvals/_store-record.ts):
 * read back, refused when malformed or on a kind that has none (docs/testing.md).
 */
import { describe, expect, it } from 'vitest'
import { decodeDone, encodeDone, newApprovalId } from '../../../src/approvals/_store-record.js'
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
