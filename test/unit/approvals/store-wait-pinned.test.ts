/**
 * `attach` and `claim` (src/approvals/_store-wait.ts) against a real memory store raced on
 * cue (test/support/cue-store.ts): the survivors of the file's mutation run (docs/testing.md).
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { RequestFields } from '../../../src/approvals/_request.js'
import { attach, claim } from '../../../src/approvals/_store-wait.js'
import { callHash, decodeOpen, doneKey, encodeDone, encodeOpen, newApprovalId, openKey, type StoredSettlement } from '../../../src/approvals/_store-record.js'
import type { PendingApproval } from '../../../src/approvals/types.js'
import { cueStore } from '../../support/cue-store.js'

afterEach(() => {
  vi.restoreAllMocks()
})

const OPTIONS = { timeoutMs: 60_000, retainSettledMs: 3_600_000 }

function fields(over: Partial<RequestFields> = {}): RequestFields {
  return { kind: 'call', callId: 'c1', name: 'pay', arguments: { cents: 1 }, argumentsHash: 'a'.repeat(64), summary: 'cents: 1', ...over } as RequestFields
}

function approvalOf(hash: string, over: Partial<PendingApproval> = {}): PendingApproval {
  const now = Date.now()
  return Object.freeze({ id: newApprovalId(hash), ...fields(), requestedAt: now, expiresAt: now + 60_000, ...over }) as PendingApproval
}

const allow = (at = Date.now()): StoredSettlement => Object.freeze({ kind: 'decided', decision: 'allow', at })

async function openIn(store: { get(key: string): Promise<{ value: string } | undefined> }, hash: string): Promise<PendingApproval | undefined> {
  const entry = await store.get(openKey(hash))
  return entry === undefined ? undefined : decodeOpen(entry.value, hash)
}

describe('claim: the open record it removes', () => {
  it('a settled request whose key now holds a newer request of the same call: the newer one stays open', async () => {
    const cues = cueStore()
    const hash = await callHash(fields(), undefined)
    const old = approvalOf(hash)
    const newer = approvalOf(hash)
    const settled = allow()
    await cues.base.put(doneKey(hash), encodeDone({ approval: old, settled }))
    await cues.base.put(openKey(hash), encodeOpen(newer)!)
    expect(await claim(cues.store, hash, old, allow())).toEqual({ record: { approval: old, settled }, mine: false })
    expect((await openIn(cues.base, hash))?.id).toBe(newer.id)
    expect(cues.ops.filter((op) => op.op === 'delete')).toEqual([])
  })
})

describe('attach: outcomes pinned on a real store', () => {
  it('an open record beside its own decided settlement, past retention: answered from the settlement, not asked anew', async () => {
    const cues = cueStore()
    const hash = await callHash(fields(), undefined)
    const found = approvalOf(hash)
    const settled = allow(Date.now() - 10_000)
    await cues.base.put(openKey(hash), encodeOpen(found)!)
    await cues.base.put(doneKey(hash), encodeDone({ approval: found, settled }))
    expect(await attach(cues.store, fields(), undefined, { ...OPTIONS, retainSettledMs: 0 })).toEqual({ kind: 'answer', hash, record: { approval: found, settled } })
    expect(await cues.base.get(openKey(hash))).toBeUndefined()
  })

  it('a request asked again at exactly its expiresAt is expired (settled and answered), not waited on', async () => {
    const cues = cueStore()
    const hash = await callHash(fields(), undefined)
    const found = approvalOf(hash, { requestedAt: 1_000, expiresAt: 5_000 })
    await cues.base.put(openKey(hash), encodeOpen(found)!)
    vi.spyOn(Date, 'now').mockReturnValue(5_000)
    expect(await attach(cues.store, fields(), undefined, OPTIONS)).toEqual({ kind: 'answer', hash, record: { approval: found, settled: { kind: 'expired', at: 5_000 } } })
    vi.spyOn(Date, 'now').mockReturnValue(4_999)
    const cues2 = cueStore()
    await cues2.base.put(openKey(hash), encodeOpen(found)!)
    expect(await attach(cues2.store, fields(), undefined, OPTIONS)).toEqual({ kind: 'wait', hash, approval: found, created: false })
  })

  it('an expired request removed behind its back while it is being expired: a new request is opened', async () => {
    const cues = cueStore()
    const hash = await callHash(fields(), undefined)
    const found = approvalOf(hash, { requestedAt: 1, expiresAt: 2 })
    await cues.base.put(openKey(hash), encodeOpen(found)!)
    let openReads = 0
    cues.before = async (op) => {
      // The second read of the open key is claim's: another process removed the record just before it.
      if (op.op === 'get' && op.key === openKey(hash) && ++openReads === 2) await cues.base.delete(openKey(hash))
    }
    const attached = await attach(cues.store, fields(), undefined, OPTIONS)
    expect(attached).toMatchObject({ kind: 'wait', hash, created: true })
    expect(attached.kind === 'wait' && attached.approval.id).not.toBe(found.id)
    expect((await openIn(cues.base, hash))?.id).toBe(attached.kind === 'wait' ? attached.approval.id : undefined)
  })

  it('another process opens the same call between the read and the write: its request is kept (compare-and-set), and waited on', async () => {
    const cues = cueStore()
    const hash = await callHash(fields(), undefined)
    const theirs = approvalOf(hash)
    cues.before = async (op) => {
      if (op.op !== 'put') return
      cues.before = undefined
      await cues.base.put(openKey(hash), encodeOpen(theirs)!)
    }
    expect(await attach(cues.store, fields(), undefined, OPTIONS)).toEqual({ kind: 'wait', hash, approval: theirs, created: false })
    expect((await openIn(cues.base, hash))?.id).toBe(theirs.id)
    expect(cues.ops.filter((op) => op.op === 'put')).toEqual([{ op: 'put', key: openKey(hash), ifVersion: null }])
  })
})
