/**
 * The broker's store side in process (issue 38 item 4): finding or opening a call's
 * request (`attach`) and settling it (`claim`) against a store that fails, holds garbage,
 * or races another writer on cue. Every outcome is pinned: answer, wait, or STORE_BUSY.
 */
import { describe, expect, it } from 'vitest'
import type { RequestFields } from '../../../src/approvals/_request.js'
import { attach, claim, deleteQuietly, readDone, readOpen } from '../../../src/approvals/_store-wait.js'
import { callHash, DONE_PREFIX, doneKey, encodeDone, encodeOpen, newApprovalId, openKey, type StoredSettlement } from '../../../src/approvals/_store-record.js'
import type { PendingApproval } from '../../../src/approvals/types.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import type { DurableStore, StoreWriteOptions } from '../../../src/durable/store.js'

const OPTIONS = { timeoutMs: 60_000, retainSettledMs: 3_600_000 }

function fields(over: Partial<RequestFields> = {}): RequestFields {
  return { kind: 'call', callId: 'c1', name: 'pay', arguments: { cents: 1 }, argumentsHash: 'a'.repeat(64), summary: 'cents: 1', ...over } as RequestFields
}

/** A memory store whose writes a test intercepts: `onPut` runs first and may answer for the store. */
function scripted() {
  const real = createMemoryStore()
  const log: string[] = []
  type OnPut = ((key: string, options: StoreWriteOptions | undefined) => Promise<{ ok: boolean } | undefined> | undefined) | undefined
  type OnDelete = ((key: string) => Promise<void> | undefined) | undefined
  let onPut: OnPut
  let onDelete: OnDelete
  const store: DurableStore = {
    get: (key) => real.get(key),
    list: (prefix, options) => real.list(prefix, options),
    async put(key, value, options) {
      log.push(`put ${key.split('/')[1]}`)
      const answer = await onPut?.(key, options)
      if (answer !== undefined) return answer as Awaited<ReturnType<DurableStore['put']>>
      return real.put(key, value, options)
    },
    async delete(key, options) {
      log.push(`delete ${key.split('/')[1]}`)
      await onDelete?.(key)
      return real.delete(key, options)
    },
  }
  return {
    store,
    real,
    log,
    get onPut(): OnPut {
      return onPut
    },
    set onPut(fn: OnPut) {
      onPut = fn
    },
    get onDelete(): OnDelete {
      return onDelete
    },
    set onDelete(fn: OnDelete) {
      onDelete = fn
    },
  }
}

async function hashOf(f: RequestFields): Promise<string> {
  return callHash(f, undefined)
}

function approvalOf(hash: string, f: RequestFields, over: Partial<PendingApproval> = {}): PendingApproval {
  const now = Date.now()
  return Object.freeze({ id: newApprovalId(hash), ...f, requestedAt: now, expiresAt: now + 60_000, ...over }) as PendingApproval
}

const allow = (at = Date.now()): StoredSettlement => Object.freeze({ kind: 'decided', decision: 'allow', at })
const withdrawn = (at = Date.now()): StoredSettlement => Object.freeze({ kind: 'withdrawn', at })

describe('attach: find the call\'s request, or open one', () => {
  it('opens a request on an empty store, and the same call re-attaches to it (same id, not created)', async () => {
    const { store } = scripted()
    const first = await attach(store, fields(), undefined, OPTIONS)
    expect(first).toMatchObject({ kind: 'wait', created: true })
    if (first.kind !== 'wait') throw new Error('unreachable')
    expect(first.approval.id.startsWith(`${first.hash}.`)).toBe(true)
    expect(first.approval.expiresAt - first.approval.requestedAt).toBe(60_000)
    expect((await readOpen(store, first.hash)).record).toEqual(first.approval)
    const again = await attach(store, fields(), undefined, OPTIONS)
    expect(again).toEqual({ kind: 'wait', hash: first.hash, approval: first.approval, created: false })
  })

  it('a record of another call under the key is a collision: denied, nothing opened', async () => {
    const { store } = scripted()
    const hash = await hashOf(fields())
    await store.put(openKey(hash), encodeOpen(approvalOf(hash, fields({ name: 'other' })))!)
    await expect(attach(store, fields(), undefined, OPTIONS)).rejects.toMatchObject({ code: 'DENIED_BY_APPROVAL', message: expect.stringContaining('collides with another call') })
    // A record without an arguments hash (written before calls were bound) collides too.
    await store.put(openKey(hash), encodeOpen(approvalOf(hash, fields({ argumentsHash: undefined })))!)
    await expect(attach(store, fields(), undefined, OPTIONS)).rejects.toMatchObject({ code: 'DENIED_BY_APPROVAL' })
  })

  it('garbage under the open key is removed and a request opened', async () => {
    const { store, log } = scripted()
    const hash = await hashOf(fields())
    await store.put(openKey(hash), '{not json')
    const found = await attach(store, fields(), undefined, OPTIONS)
    expect(found).toMatchObject({ kind: 'wait', created: true })
    // Then its expiry key, the listing's order (brief s54 "listing").
    expect(log).toEqual(['put open', 'delete open', 'put open', 'put exp'])
  })

  it('an open record whose settlement exists (its process died in between): answered from the settlement, the open record removed', async () => {
    const { store } = scripted()
    const hash = await hashOf(fields())
    const approval = approvalOf(hash, fields())
    await store.put(openKey(hash), encodeOpen(approval)!)
    await store.put(doneKey(hash), encodeDone({ approval, settled: allow() }))
    const found = await attach(store, fields(), undefined, OPTIONS)
    expect(found).toMatchObject({ kind: 'answer', hash, record: { approval: { id: approval.id }, settled: { kind: 'decided', decision: 'allow' } } })
    expect(await store.get(openKey(hash))).toBeUndefined()
  })

  it('an open record whose settlement is a withdrawal: removed, and the call asks anew (another id)', async () => {
    const { store } = scripted()
    const hash = await hashOf(fields())
    const approval = approvalOf(hash, fields())
    await store.put(openKey(hash), encodeOpen(approval)!)
    await store.put(doneKey(hash), encodeDone({ approval, settled: withdrawn() }))
    const found = await attach(store, fields(), undefined, OPTIONS)
    expect(found).toMatchObject({ kind: 'wait', created: true })
    if (found.kind === 'wait') expect(found.approval.id).not.toBe(approval.id)
  })

  it('an expired open request is settled as expired (at its own expiry) and answered', async () => {
    const { store } = scripted()
    const hash = await hashOf(fields())
    const approval = approvalOf(hash, fields(), { requestedAt: 1, expiresAt: 2 })
    await store.put(openKey(hash), encodeOpen(approval)!)
    const found = await attach(store, fields(), undefined, OPTIONS)
    expect(found).toMatchObject({ kind: 'answer', record: { settled: { kind: 'expired', at: 2 } } })
    expect(await store.get(openKey(hash))).toBeUndefined()
  })

  it('a kept settlement of the same call answers within retainSettledMs; past it, or a withdrawal, asks anew', async () => {
    const { store } = scripted()
    const hash = await hashOf(fields())
    const approval = approvalOf(hash, fields())
    await store.put(doneKey(hash), encodeDone({ approval, settled: allow() }))
    expect(await attach(store, fields(), undefined, OPTIONS)).toMatchObject({ kind: 'answer', record: { approval: { id: approval.id } } })
    const old = await store.get(doneKey(hash))
    await store.put(doneKey(hash), encodeDone({ approval, settled: allow(Date.now() - OPTIONS.retainSettledMs) }), { ifVersion: old!.version })
    expect(await attach(store, fields(), undefined, OPTIONS)).toMatchObject({ kind: 'wait', created: true })
  })

  it('a kept withdrawal does not answer: the call asks again', async () => {
    const { store } = scripted()
    const hash = await hashOf(fields())
    await store.put(doneKey(hash), encodeDone({ approval: approvalOf(hash, fields()), settled: withdrawn() }))
    expect(await attach(store, fields(), undefined, OPTIONS)).toMatchObject({ kind: 'wait', created: true })
  })

  it('a kept settlement of another call under the key never answers this one', async () => {
    const { store } = scripted()
    const hash = await hashOf(fields())
    await store.put(doneKey(hash), encodeDone({ approval: approvalOf(hash, fields({ name: 'other' })), settled: allow() }))
    expect(await attach(store, fields(), undefined, OPTIONS)).toMatchObject({ kind: 'wait', created: true })
  })

  it('loses the race to open: re-reads and waits on the winner\'s request', async () => {
    const s = scripted()
    const hash = await hashOf(fields())
    const theirs = approvalOf(hash, fields())
    s.onPut = async (key, options) => {
      s.onPut = undefined
      // Another process opens the same call's request between our read and our write.
      await s.real.put(key, encodeOpen(theirs)!, options)
      return { ok: false }
    }
    expect(await attach(s.store, fields(), undefined, OPTIONS)).toEqual({ kind: 'wait', hash, approval: theirs, created: false })
  })

  it('a store that never lets a write land: STORE_BUSY after a bounded number of tries', async () => {
    const s = scripted()
    let puts = 0
    s.onPut = async () => {
      puts++
      return { ok: false }
    }
    await expect(attach(s.store, fields(), undefined, OPTIONS)).rejects.toMatchObject({ code: 'STORE_BUSY', message: expect.stringContaining('could not be opened') })
    expect(puts).toBe(8)
  })

  it('a request too large for a record is denied, not opened', async () => {
    const { store } = scripted()
    await expect(attach(store, fields({ summary: 'x'.repeat(70_000) }), undefined, OPTIONS)).rejects.toMatchObject({ code: 'DENIED_BY_APPROVAL', message: expect.stringContaining('too large to keep') })
    expect((await store.list('approvals/')).entries).toEqual([])
  })

  it('a store that fails: the failure is the caller\'s (no request half-opened)', async () => {
    const s = scripted()
    s.onPut = () => Promise.reject(new Error('disk gone'))
    await expect(attach(s.store, fields(), undefined, OPTIONS)).rejects.toThrow('disk gone')
    expect((await s.real.list('approvals/')).entries).toEqual([])
  })
})

describe('claim: settle a request once', () => {
  async function opened() {
    const s = scripted()
    const found = await attach(s.store, fields(), undefined, OPTIONS)
    if (found.kind !== 'wait') throw new Error('unreachable')
    s.log.length = 0
    // Object.assign keeps the hooks' accessors (a spread would copy their values).
    return Object.assign(s, { hash: found.hash, approval: found.approval })
  }

  it('writes a settlement marker, the settlement with compare-and-set, then removes the open record: mine', async () => {
    const { store, hash, approval, log } = await opened()
    const settled = allow()
    expect(await claim(store, hash, approval, settled)).toEqual({ record: { approval, settled }, mine: true })
    // The marker first: a crash after it leaves no settlement a poll's listing would miss. The expiry key goes before the open record.
    expect(log).toEqual(['put settled', 'put done', 'delete exp', 'delete open'])
    expect((await readDone(store, hash)).record).toEqual({ approval, settled })
    expect(await store.get(openKey(hash))).toBeUndefined()
    // Claimed again (a second decision): what landed, not mine; nothing written.
    log.length = 0
    expect(await claim(store, hash, approval, withdrawn())).toEqual({ record: { approval, settled }, mine: false })
    expect(log).toEqual([])
  })

  it('a settlement that landed but left its open record (a crash in between): the leftover is removed, not mine', async () => {
    const { store, real, hash, approval } = await opened()
    const settled = allow()
    await real.put(doneKey(hash), encodeDone({ approval, settled }))
    expect(await claim(store, hash, approval, withdrawn())).toEqual({ record: { approval, settled }, mine: false })
    expect(await store.get(openKey(hash))).toBeUndefined()
  })

  it('loses the race to another settlement of the same request: answers theirs', async () => {
    const s = await opened()
    const theirs = allow()
    s.onPut = async (key, options) => {
      if (!key.startsWith(DONE_PREFIX)) return undefined
      s.onPut = undefined
      await s.real.put(key, encodeDone({ approval: s.approval, settled: theirs }), options)
      return { ok: false }
    }
    expect(await claim(s.store, s.hash, s.approval, withdrawn())).toEqual({ record: { approval: s.approval, settled: theirs }, mine: false })
  })

  it('a request no longer open anywhere (removed behind our back): undefined; one settled meanwhile: what landed', async () => {
    const { store, real, hash, approval } = await opened()
    await real.delete(openKey(hash))
    expect(await claim(store, hash, approval, allow())).toBeUndefined()
    // Settled by another process between our two reads.
    const s = await opened()
    const settled = allow()
    let reads = 0
    const racing: DurableStore = {
      ...s.store,
      async get(key) {
        if (key === openKey(s.hash) && reads++ === 0) {
          await s.real.put(doneKey(s.hash), encodeDone({ approval: s.approval, settled }))
          await s.real.delete(openKey(s.hash))
        }
        return s.real.get(key)
      },
    }
    expect(await claim(racing, s.hash, s.approval, withdrawn())).toEqual({ record: { approval: s.approval, settled }, mine: false })
  })

  it('a settlement of an earlier request of the same call (withdrawn) is overwritten while ours is open', async () => {
    const { store, real, hash, approval } = await opened()
    const earlier = approvalOf(hash, fields())
    await real.put(doneKey(hash), encodeDone({ approval: earlier, settled: withdrawn() }))
    const settled = allow()
    expect(await claim(store, hash, approval, settled)).toEqual({ record: { approval, settled }, mine: true })
  })

  it('writers that keep winning: STORE_BUSY naming the approval, after a bounded number of tries', async () => {
    const s = await opened()
    let puts = 0
    s.onPut = async (key) => {
      if (!key.startsWith(DONE_PREFIX)) return undefined
      puts++
      return { ok: false }
    }
    await expect(claim(s.store, s.hash, s.approval, allow())).rejects.toMatchObject({ code: 'STORE_BUSY', message: expect.stringContaining(JSON.stringify(s.approval.id)) })
    expect(puts).toBe(8)
  })

  it('a failing delete of the open record is left for the next reader; the settlement stands', async () => {
    const s = await opened()
    s.onDelete = () => Promise.reject(new Error('disk gone'))
    const settled = allow()
    expect(await claim(s.store, s.hash, s.approval, settled)).toEqual({ record: { approval: s.approval, settled }, mine: true })
    expect(await s.real.get(openKey(s.hash))).toBeDefined()
  })
})

describe('reads and quiet deletes', () => {
  it('a record that does not decode reads as no record, at its version', async () => {
    const { store } = scripted()
    const hash = await hashOf(fields())
    await store.put(openKey(hash), 'garbage')
    await store.put(doneKey(hash), 'garbage')
    const [open, done] = await Promise.all([readOpen(store, hash), readDone(store, hash)])
    expect([open.record, done.record]).toEqual([undefined, undefined])
    expect(typeof open.version).toBe('string')
    expect(typeof done.version).toBe('string')
    expect(await readOpen(store, '0'.repeat(32))).toEqual({ version: undefined, record: undefined })
  })

  it('deleteQuietly deletes only at the version read, never without one, and swallows failures', async () => {
    const s = scripted()
    await s.store.put('approvals/open/x', 'v1')
    await deleteQuietly(s.store, 'approvals/open/x', undefined)
    expect(s.log).toEqual(['put open'])
    await deleteQuietly(s.store, 'approvals/open/x', 'not-the-version')
    expect(await s.store.get('approvals/open/x')).toBeDefined()
    const { version } = (await s.store.get('approvals/open/x'))!
    s.onDelete = () => Promise.reject(new Error('disk gone'))
    await deleteQuietly(s.store, 'approvals/open/x', version)
    s.onDelete = undefined
    await deleteQuietly(s.store, 'approvals/open/x', version)
    expect(await s.store.get('approvals/open/x')).toBeUndefined()
  })
})
