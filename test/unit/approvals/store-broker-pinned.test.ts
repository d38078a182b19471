/**
 * The broker over a store (src/approvals/_store-broker.ts) on a memory store that fails or
 * races on cue (test/support/cue-store.ts): how a watch ends (once, whatever raced it), the
 * poll and its store-watch wake-up, a caller that joins a request already ended, and a
 * parked run's request at shutdown. The survivors of the file's mutation run (docs/testing.md).
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { ApprovalBroker, ApprovalBrokerOptions, ApprovalEvent, PendingApproval } from '../../../src/approvals/index.js'
import { doneKey, encodeOpen, hashOfId, markerKey, openKey } from '../../../src/approvals/_store-record.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { ToolError } from '../../../src/errors.js'
import { deciderOf } from '../../../src/telemetry/decider.js'
import { cueStore, type CueOp } from '../../support/cue-store.js'
import { until } from '../../support/poll.js'
import { FIRST_CALL_NUMBERING, parkedState } from '../../support/parked-run.js'

const brokers: ApprovalBroker[] = []
afterEach(async () => {
  vi.useRealTimers()
  vi.restoreAllMocks()
  for (const b of brokers.splice(0)) await b.dispose()
})

function broker(store: DurableStore, options: Omit<ApprovalBrokerOptions, 'store'> = {}): ApprovalBroker {
  const b = createApprovalBroker({ store, pollIntervalMs: 20, ...options })
  brokers.push(b)
  return b
}

/** A promise a test opens when it likes. */
function gate() {
  let open!: () => void
  const opened = new Promise<void>((resolve) => {
    open = resolve
  })
  return { open, opened }
}

let seq = 0
/** Asks `b`'s handler as the registry does; the outcome settled, never an unhandled rejection. */
function ask(b: ApprovalBroker, options: { callId?: string; parentCallId?: string; controller?: AbortController } = {}) {
  const controller = options.controller ?? new AbortController()
  const execution = { callId: options.callId ?? `call-${++seq}`, name: 'pay', arguments: { cents: 5 }, signal: controller.signal }
  const request = { execution, reason: 'moves money', ...(options.parentCallId === undefined ? {} : { parentCallId: options.parentCallId }) }
  const settled = (async () => b.handler(request as never))().then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, code: (error as { code?: string }).code, message: (error as Error).message }),
  )
  return { settled, controller, request }
}

/** The next request `b` announces. */
function nextRequested(b: ApprovalBroker): Promise<PendingApproval> {
  return new Promise((resolve) => {
    const stop = b.subscribe((event) => {
      if (event.type !== 'requested') return
      stop()
      resolve(event.approval)
    })
  })
}

/** Every event `b` emits, as `type id-suffix`. */
function eventsOf(b: ApprovalBroker): ApprovalEvent[] {
  const events: ApprovalEvent[] = []
  b.subscribe((event) => void events.push(event))
  return events
}

const isGet = (op: CueOp, key: string) => op.op === 'get' && op.key === key
/**
 * Marks `approval` settled an hour from now (never pruned, always in a listing's window), so
 * that every poll pass reads its settlement key: what these tests pin is the pass's loop.
 */
const markEveryPass = (store: DurableStore, approval: PendingApproval) => store.put(markerKey(Date.now() + 3_600_000, hashOfId(approval.id)!), '')
const DISPOSED = () => new ToolError('DISPOSED', 'the tool runtime is disposed')

describe('finish: a watch ends once, whatever raced it', () => {
  it('a decision polled twice while a slow store settles it: one decided event, one answer', async () => {
    const cues = cueStore()
    const a = broker(cues.store)
    const b = broker(cues.base)
    const events = eventsOf(a)
    const requested = nextRequested(a)
    const call = ask(a)
    const approval = await requested
    const hash = hashOfId(approval.id)!
    const held = gate()
    let holding = 0
    // Every claim's read of the open key waits: the poll goes on and finds the decision again.
    cues.before = async (op) => {
      if (!isGet(op, openKey(hash))) return
      holding++
      await held.opened
    }
    expect(await b.decide(approval.id, { decision: 'allow' })).toMatchObject({ ok: true })
    await until(() => holding >= 2, 'two claims of the polled decision')
    held.open()
    expect(await call.settled).toEqual({ ok: true, value: true })
    await new Promise((resolve) => setTimeout(resolve, 60))
    expect(events.map((e) => e.type)).toEqual(['requested', 'decided'])
  })

  it("a late end of a watch the process replaced (same call, new request) leaves the new watch in place", async () => {
    const cues = cueStore()
    const a = broker(cues.store, { timeoutMs: 60_000 })
    const first = nextRequested(a)
    const old = ask(a, { callId: 'same' })
    const oldRequest = await first
    const hash = hashOfId(oldRequest.id)!
    // Removed behind the broker's back (no settlement): the same call asked again opens a new request.
    await cues.base.delete(openKey(hash))
    const second = nextRequested(a)
    const renewed = ask(a, { callId: 'same' })
    const newRequest = await second
    expect(newRequest.id).not.toBe(oldRequest.id)
    expect(hashOfId(newRequest.id)).toBe(hash)
    // The old caller gives up: its watch ends (its request is gone from the store).
    const ended = eventsOf(a)
    old.controller.abort()
    expect(await old.settled).toMatchObject({ ok: false, code: 'DENIED_BY_APPROVAL' })
    // Its request was gone from the store: it ends as denied by the server, saying so.
    await until(() => ended.length === 1, 'the old watch ended')
    expect(ended[0]).toMatchObject({ type: 'decided', approval: { id: oldRequest.id }, decision: 'deny', reason: 'the approval request was removed from the store' })
    // The new watch is still this process's: a decision here reaches its caller at once.
    expect(await a.decide(newRequest.id, { decision: 'allow' })).toMatchObject({ ok: true })
    expect(await renewed.settled).toEqual({ ok: true, value: true })
  })

  it('a caller whose watch ended releases its abort listener; the deciding role is noted on its request', async () => {
    const a = broker(cueStore().store)
    const requested = nextRequested(a)
    const call = ask(a)
    const approval = await requested
    const removed = vi.spyOn(call.controller.signal, 'removeEventListener')
    expect(await a.decide(approval.id, { decision: 'allow' }, { role: 'approve' })).toMatchObject({ ok: true })
    expect(await call.settled).toEqual({ ok: true, value: true })
    expect(removed).toHaveBeenCalledWith('abort', expect.any(Function))
    expect(deciderOf(call.request)).toBe('approve')
  })

  it('a denial with a role notes it; an expiry notes none', async () => {
    // The denial waits on the default 5-minute expiry; only the second broker's request may expire.
    const a = broker(cueStore().store)
    const requested = nextRequested(a)
    const denied = ask(a)
    const approval = await requested
    expect(await a.decide(approval.id, { decision: 'deny', reason: 'no' }, { role: 'admin' })).toMatchObject({ ok: true })
    expect(await denied.settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'pay was denied by a person: no' })
    expect(deciderOf(denied.request)).toBe('admin')
    const expired = ask(broker(cueStore().store, { timeoutMs: 400 }))
    expect(await expired.settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'pay was denied by timeout: nobody decided within 400 ms' })
    expect(deciderOf(expired.request)).toBeUndefined()
  })

  it('one of two watches ends: the other is still polled and hears a decision taken elsewhere', async () => {
    const cues = cueStore()
    const a = broker(cues.store)
    const b = broker(cues.base)
    const r1 = nextRequested(a)
    const one = ask(a)
    const first = await r1
    const r2 = nextRequested(a)
    const two = ask(a)
    const second = await r2
    expect(await a.decide(first.id, { decision: 'allow' })).toMatchObject({ ok: true })
    expect(await one.settled).toEqual({ ok: true, value: true })
    expect(await b.decide(second.id, { decision: 'allow' })).toMatchObject({ ok: true })
    expect(await two.settled).toEqual({ ok: true, value: true })
  })
})

describe('the poll', () => {
  it('a waiting call holds one poll timer however many calls wait; a poll that finds every watch ended schedules none', async () => {
    vi.useFakeTimers()
    const cues = cueStore()
    const a = createApprovalBroker({ store: cues.store, timeoutMs: 60_000, pollIntervalMs: 100 })
    brokers.push(a)
    const r1 = nextRequested(a)
    const one = ask(a)
    const first = await r1
    const r2 = nextRequested(a)
    const two = ask(a)
    const second = await r2
    await markEveryPass(cues.base, first)
    // Two expiry timers, one poll timer.
    expect(vi.getTimerCount()).toBe(3)
    await vi.advanceTimersByTimeAsync(250)
    expect(vi.getTimerCount()).toBe(3)
    // The poll is running (its read held) when the last watches end through this process.
    const held = gate()
    let holding = false
    cues.before = async (op) => {
      if (op.op !== 'get' || op.key !== doneKey(hashOfId(first.id)!) || holding) return
      holding = true
      await held.opened
    }
    await vi.advanceTimersByTimeAsync(100)
    expect(holding).toBe(true)
    cues.before = undefined
    expect(await a.decide(first.id, { decision: 'allow' })).toMatchObject({ ok: true })
    expect(await a.decide(second.id, { decision: 'deny' })).toMatchObject({ ok: true })
    expect((await one.settled).ok).toBe(true)
    expect((await two.settled).ok).toBe(false)
    // A new call asks while that pass is still running: still one poll timer once the pass ends.
    const r3 = nextRequested(a)
    const three = ask(a)
    const third = await r3
    held.open()
    await vi.advanceTimersByTimeAsync(0)
    expect(vi.getTimerCount()).toBe(2)
    expect(await a.decide(third.id, { decision: 'allow' })).toMatchObject({ ok: true })
    expect((await three.settled).ok).toBe(true)
    await vi.advanceTimersByTimeAsync(0)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('a watch that ended while the poll was reading is not read again in that pass', async () => {
    const cues = cueStore()
    const a = broker(cues.store)
    const r1 = nextRequested(a)
    ask(a)
    const first = await r1
    const r2 = nextRequested(a)
    const two = ask(a)
    const second = await r2
    await markEveryPass(cues.base, first)
    await markEveryPass(cues.base, second)
    const held = gate()
    let holding = false
    cues.before = async (op) => {
      if (op.op !== 'get' || op.key !== doneKey(hashOfId(first.id)!) || holding) return
      holding = true
      await held.opened
    }
    await until(() => holding, 'a poll reading the first watch')
    cues.before = undefined
    expect(await a.decide(second.id, { decision: 'allow' })).toMatchObject({ ok: true })
    expect(await two.settled).toEqual({ ok: true, value: true })
    const from = cues.ops.length
    held.open()
    await until(() => cues.ops.slice(from).some((op) => isGet(op, doneKey(hashOfId(first.id)!))), 'the next poll')
    // The pass that was held went on to the second watch, ended meanwhile: no read of its key.
    const passRest = cues.ops.slice(from)
    const nextFirst = passRest.findIndex((op) => isGet(op, doneKey(hashOfId(first.id)!)))
    expect(passRest.slice(0, nextFirst).filter((op) => isGet(op, doneKey(hashOfId(second.id)!)))).toEqual([])
  })

  it('a failed read in a poll is skipped: the poll goes on and hears the decision later', async () => {
    const cues = cueStore()
    const a = broker(cues.store)
    const b = broker(cues.base)
    const requested = nextRequested(a)
    const call = ask(a)
    const approval = await requested
    await markEveryPass(cues.base, approval)
    let failed = 0
    cues.before = (op) => {
      if (isGet(op, doneKey(hashOfId(approval.id)!)) && failed < 3) {
        failed++
        throw new Error('store down')
      }
    }
    await until(() => failed === 3, 'three failed polls')
    expect(await b.decide(approval.id, { decision: 'allow' })).toMatchObject({ ok: true })
    expect(await call.settled).toEqual({ ok: true, value: true })
  })

  it("a kept settlement of the call's earlier (withdrawn) request does not end the call's new request", async () => {
    const cues = cueStore()
    const a = broker(cues.store)
    const b = broker(cues.base)
    const r1 = nextRequested(a)
    const first = ask(a, { callId: 'again' })
    const withdrawn = await r1
    first.controller.abort()
    expect(await first.settled).toMatchObject({ ok: false, code: 'DENIED_BY_APPROVAL' })
    const r2 = nextRequested(a)
    const second = ask(a, { callId: 'again' })
    const renewed = await r2
    expect(renewed.id).not.toBe(withdrawn.id)
    expect(await cues.base.get(doneKey(hashOfId(renewed.id)!))).toBeDefined()
    // Several polls read the withdrawal under the key: none of them settles the new request.
    const from = cues.ops.length
    await until(() => cues.ops.slice(from).filter((op) => isGet(op, doneKey(hashOfId(renewed.id)!))).length >= 3, 'three polls')
    expect((await b.pending()).map((p) => p.id)).toEqual([renewed.id])
    expect(await b.decide(renewed.id, { decision: 'allow' })).toMatchObject({ ok: true })
    expect(await second.settled).toEqual({ ok: true, value: true })
  })
})

/** `base` announcing every write under `approvals/done/` to its watchers, as PostgreSQL's LISTEN/NOTIFY does. */
function watchable(base: DurableStore) {
  const watchers = new Set<(key: string) => void>()
  const store = {
    get: (key: string) => base.get(key),
    list: (prefix: string, options?: Parameters<DurableStore['list']>[1]) => base.list(prefix, options),
    delete: (key: string, options?: Parameters<DurableStore['delete']>[1]) => base.delete(key, options),
    put: async (key: string, value: string, options?: Parameters<DurableStore['put']>[2]) => {
      const result = await base.put(key, value, options)
      for (const onChange of watchers) onChange(key)
      return result
    },
    watch: (_prefix: string, onChange: (key: string) => void) => {
      watchers.add(onChange)
      return () => void watchers.delete(onChange)
    },
  }
  return { store, notify: (key: string) => [...watchers].forEach((onChange) => onChange(key)), watchers }
}

describe("the store's change notices", () => {
  it('a notice wakes a scheduled poll in place of its timer: still one poll timer after', async () => {
    vi.useFakeTimers()
    const cues = cueStore()
    const w = watchable(cues.store)
    const a = createApprovalBroker({ store: w.store, timeoutMs: 60_000, pollIntervalMs: 1_000 })
    brokers.push(a)
    const requested = nextRequested(a)
    const call = ask(a)
    const approval = await requested
    await markEveryPass(cues.base, approval)
    expect(vi.getTimerCount()).toBe(2)
    const from = cues.ops.length
    w.notify(doneKey('0'.repeat(32)))
    await vi.advanceTimersByTimeAsync(0)
    // Polled at once (before the interval), and the poll rescheduled: one expiry timer, one poll timer.
    expect(cues.ops.slice(from).filter((op) => isGet(op, doneKey(hashOfId(approval.id)!)))).toHaveLength(1)
    expect(vi.getTimerCount()).toBe(2)
    await vi.advanceTimersByTimeAsync(999)
    expect(cues.ops.slice(from).filter((op) => isGet(op, doneKey(hashOfId(approval.id)!)))).toHaveLength(1)
    await vi.advanceTimersByTimeAsync(1)
    expect(cues.ops.slice(from).filter((op) => isGet(op, doneKey(hashOfId(approval.id)!)))).toHaveLength(2)
    await a.decide(approval.id, { decision: 'allow' })
    expect(await call.settled).toEqual({ ok: true, value: true })
  })

  it('a notice while a poll runs starts no second pass; a notice with nothing waiting reads nothing', async () => {
    const cues = cueStore()
    const w = watchable(cues.store)
    const a = broker(w.store, { pollIntervalMs: 600_000 })
    w.notify(doneKey('0'.repeat(32)))
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(cues.ops).toEqual([])
    const requested = nextRequested(a)
    const call = ask(a)
    const approval = await requested
    await markEveryPass(cues.base, approval)
    const key = doneKey(hashOfId(approval.id)!)
    const held = gate()
    let holding = false
    cues.before = async (op) => {
      if (!isGet(op, key) || holding) return
      holding = true
      await held.opened
    }
    const from = cues.ops.length
    w.notify(doneKey('0'.repeat(32)))
    await until(() => holding, 'the woken poll reading')
    w.notify(doneKey('1'.repeat(32)))
    w.notify(doneKey('2'.repeat(32)))
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(cues.ops.slice(from).filter((op) => isGet(op, key))).toHaveLength(1)
    held.open()
    cues.before = undefined
    await a.decide(approval.id, { decision: 'allow' })
    expect(await call.settled).toEqual({ ok: true, value: true })
  })
})

describe('joining a request that already ended', () => {
  it('a subscriber disposes the broker while hearing `requested`: the caller is denied (disposed), never left waiting', async () => {
    const cues = cueStore()
    const a = broker(cues.store)
    a.subscribe((event) => {
      if (event.type === 'requested') void a.dispose()
    })
    const call = ask(a)
    expect(await call.settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'the approval broker is disposed; nobody can approve this call' })
    expect(deciderOf(call.request)).toBeUndefined()
    // The request stays open in the store for another process.
    expect((await broker(cues.base).pending())).toHaveLength(1)
  })

  it('a second caller of a request this process already waits on shares its watch and its answer', async () => {
    const cues = cueStore()
    const a = broker(cues.store)
    const events = eventsOf(a)
    const requested = nextRequested(a)
    const one = ask(a, { callId: 'shared' })
    const approval = await requested
    const two = ask(a, { callId: 'shared' })
    await until(() => cues.ops.filter((op) => isGet(op, openKey(hashOfId(approval.id)!))).length >= 2, 'the second attach')
    await new Promise((resolve) => setTimeout(resolve, 5))
    // A third caller cancelled while others wait: denied at once, the request stays.
    const three = ask(a, { callId: 'shared' })
    await until(() => cues.ops.filter((op) => isGet(op, openKey(hashOfId(approval.id)!))).length >= 3, 'the third attach')
    await new Promise((resolve) => setTimeout(resolve, 5))
    three.controller.abort()
    expect(await three.settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'the approval request for pay was withdrawn: the call was cancelled' })
    expect(await cues.base.get(doneKey(hashOfId(approval.id)!))).toBeUndefined()
    expect(await a.decide(approval.id, { decision: 'allow' }, { role: 'approve' })).toMatchObject({ ok: true })
    expect([await one.settled, await two.settled]).toEqual([{ ok: true, value: true }, { ok: true, value: true }])
    expect(deciderOf(two.request)).toBe('approve')
    expect(events.map((e) => e.type)).toEqual(['requested', 'decided'])
  })
})

describe("a parked run's request at shutdown", () => {
  /** A store with `runs/<parent>` holding a parked state, as a parked durable run leaves it. */
  async function parkedStore(parent: string) {
    const cues = cueStore()
    await cues.base.put(`runs/${parent}`, JSON.stringify({ version: 1, callId: parent, park: { code: 'c', description: 'd', state: parkedState('pay'), numbering: FIRST_CALL_NUMBERING } }))
    return cues
  }

  it('the tool runtime shuts down under a sub-call of a parked run: its request stays open for the next process, nothing is settled', async () => {
    vi.useFakeTimers()
    const cues = await parkedStore('run-1')
    const a = createApprovalBroker({ store: cues.store, timeoutMs: 60_000 })
    brokers.push(a)
    const events = eventsOf(a)
    const requested = nextRequested(a)
    const call = ask(a, { parentCallId: 'run-1' })
    const approval = await requested
    call.controller.abort(DISPOSED())
    expect(await call.settled).toMatchObject({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'the approval request for pay was withdrawn: the call was cancelled' })
    await vi.advanceTimersByTimeAsync(0)
    // Neither its expiry timer nor the poll is left; the request is open, unsettled.
    expect(vi.getTimerCount()).toBe(0)
    expect(await cues.base.get(openKey(hashOfId(approval.id)!))).toBeDefined()
    expect(await cues.base.get(doneKey(hashOfId(approval.id)!))).toBeUndefined()
    expect(events.map((e) => e.type)).toEqual(['requested'])
    // Asked again under the same call (the resumed run), it re-attaches to the same request.
    const again = nextRequested(a)
    const resumed = ask(a, { parentCallId: 'run-1', callId: (call.request.execution as { callId: string }).callId })
    expect((await again).id).toBe(approval.id)
    await a.decide(approval.id, { decision: 'allow' })
    expect(await resumed.settled).toEqual({ ok: true, value: true })
  })

  const withdrawnCases: [string, string | undefined, unknown, (cues: ReturnType<typeof cueStore>) => void][] = [
    ['a plain cancellation of a parked run\'s sub-call', 'run-1', undefined, () => {}],
    ['a shutdown under a sub-call of a run that is not parked here', 'run-other', DISPOSED(), () => {}],
    ['a shutdown under a call with no parent run', undefined, DISPOSED(), () => {}],
    ['a shutdown with another ToolError code', 'run-1', new ToolError('TOOL_TIMEOUT', 'late'), () => {}],
    ['a shutdown reason that only looks like one', 'run-1', { code: 'DISPOSED' }, () => {}],
    [
      'a shutdown whose parked-run read fails',
      'run-1',
      DISPOSED(),
      (cues) => {
        cues.before = (op) => {
          if (op.op === 'get' && op.key.startsWith('runs/')) throw new Error('store down')
        }
      },
    ],
  ]
  for (const [title, parent, reason, arrange] of withdrawnCases) {
    it(`${title}: the request is withdrawn in the store`, async () => {
      const cues = await parkedStore('run-1')
      const a = broker(cues.store)
      const requested = nextRequested(a)
      const call = ask(a, parent === undefined ? {} : { parentCallId: parent })
      const approval = await requested
      arrange(cues)
      const from = cues.ops.length
      call.controller.abort(reason)
      expect(await call.settled).toMatchObject({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'the approval request for pay was withdrawn: the call was cancelled' })
      expect(await cues.base.get(openKey(hashOfId(approval.id)!))).toBeUndefined()
      expect(JSON.parse((await cues.base.get(doneKey(hashOfId(approval.id)!)))!.value)).toMatchObject({ settled: { kind: 'withdrawn' } })
      // The parked-run key is read only for a shutdown under a parent run.
      const readsRun = cues.ops.slice(from).some((op) => op.op === 'get' && op.key.startsWith('runs/'))
      expect(readsRun).toBe(parent !== undefined && reason instanceof ToolError && reason.code === 'DISPOSED')
    })
  }
})

describe('asking while the store is written', () => {
  it('cancelled while its request was being opened: the request it opened is withdrawn, the call denied', async () => {
    const cues = cueStore()
    const a = broker(cues.store)
    const controller = new AbortController()
    cues.before = (op) => {
      if (op.op === 'put' && op.key.startsWith('approvals/open/')) controller.abort()
    }
    const call = ask(a, { controller })
    expect(await call.settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'the approval request for pay was withdrawn: the call was cancelled' })
    const [put] = cues.ops.filter((op) => op.op === 'put' && op.key.startsWith('approvals/open/'))
    const hash = put!.key.slice('approvals/open/'.length)
    expect(await cues.base.get(openKey(hash))).toBeUndefined()
    expect(JSON.parse((await cues.base.get(doneKey(hash)))!.value)).toMatchObject({ settled: { kind: 'withdrawn' } })
  })

  it("cancelled while re-attaching to another process's request: that request stays open for its owner", async () => {
    const cues = cueStore()
    const owner = broker(cues.base)
    const requested = nextRequested(owner)
    const theirs = ask(owner, { callId: 'shared' })
    const approval = await requested
    const a = broker(cues.store)
    const controller = new AbortController()
    cues.before = (op) => {
      if (op.op === 'get' && op.key === openKey(hashOfId(approval.id)!)) controller.abort()
    }
    const call = ask(a, { callId: 'shared', controller })
    expect(await call.settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'the approval request for pay was withdrawn: the call was cancelled' })
    expect(cues.ops.filter((op) => op.op !== 'get')).toEqual([])
    expect((await owner.pending()).map((p) => p.id)).toEqual([approval.id])
    await owner.decide(approval.id, { decision: 'allow' })
    expect(await theirs.settled).toEqual({ ok: true, value: true })
  })

  it('disposed while its request was being opened: denied (disposed); dispose() resolves only once that write landed', async () => {
    const cues = cueStore()
    const a = broker(cues.store)
    const held = gate()
    let holding = false
    cues.before = async (op) => {
      if (op.op !== 'put') return
      holding = true
      await held.opened
    }
    const call = ask(a)
    await until(() => holding, 'the open write')
    let disposed = false
    const disposing = a.dispose().then(() => {
      disposed = true
    })
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(disposed).toBe(false)
    held.open()
    await disposing
    expect(await call.settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'the approval broker is disposed; nobody can approve this call' })
    // The request stays open in the store for another process.
    expect(await broker(cues.base).pending()).toHaveLength(1)
  })

  it('a store failing with a non-Error: denied saying the store failed (unknown error)', async () => {
    const cues = cueStore()
    cues.before = () => {
      throw 'gone'
    }
    expect(await ask(broker(cues.store)).settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'the approval store failed, so nobody could be asked: unknown error' })
  })

  it('a request answered from its settlement (a resumed call): requested then decided, the role noted; a kept denial denies', async () => {
    const cues = cueStore()
    const first = broker(cues.store)
    const r1 = nextRequested(first)
    const asked = ask(first, { callId: 'resumed' })
    const approval = await r1
    await first.decide(approval.id, { decision: 'allow', reason: 'ok' }, { role: 'approve' })
    expect(await asked.settled).toEqual({ ok: true, value: true })
    const a = broker(cues.store)
    const events = eventsOf(a)
    const again = ask(a, { callId: 'resumed' })
    expect(await again.settled).toEqual({ ok: true, value: true })
    expect(deciderOf(again.request)).toBe('approve')
    expect(events).toEqual([
      { type: 'requested', approval },
      { type: 'decided', approval, decision: 'allow', reason: 'ok', role: 'approve', at: expect.any(Number) },
    ])
    const r2 = nextRequested(first)
    const other = ask(first, { callId: 'denied-once' })
    const second = await r2
    await first.decide(second.id, { decision: 'deny' })
    expect(await other.settled).toMatchObject({ ok: false })
    const denied = ask(a, { callId: 'denied-once' })
    expect(await denied.settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'pay was denied by a person (no reason given)' })
    expect(deciderOf(denied.request)).toBeUndefined()
    expect(events.slice(2).map((e) => e.type)).toEqual(['requested', 'decided'])
    expect('role' in events[3]! || 'reason' in events[3]!).toBe(false)
  })
})

describe('decide()', () => {
  it('a role is kept only when it is a label; none when absent', async () => {
    const cues = cueStore()
    const a = broker(cues.store)
    const events = eventsOf(a)
    for (const by of [{ role: 'Not A Label' }, undefined, { role: 'approve' }]) {
      const requested = nextRequested(a)
      const call = ask(a)
      const approval = await requested
      const answer = await a.decide(approval.id, { decision: 'allow' }, by as never)
      expect(answer).toEqual({ ok: true, approval, decision: 'allow', decidedAt: expect.any(Number) })
      expect('reason' in answer).toBe(false)
      expect(await call.settled).toEqual({ ok: true, value: true })
      const stored = JSON.parse((await cues.base.get(doneKey(hashOfId(approval.id)!)))!.value) as { settled: Record<string, unknown> }
      expect(stored.settled.role).toBe(by?.role === 'approve' ? 'approve' : undefined)
    }
    const decided = events.filter((e) => e.type === 'decided')
    expect(decided.map((e) => ('role' in e ? e.role : '-'))).toEqual(['-', '-', 'approve'])
  })

  it('at exactly expiresAt a decision is refused as expired; one millisecond before it is taken', async () => {
    const cues = cueStore()
    const a = broker(cues.store, { timeoutMs: 60_000 })
    const r1 = nextRequested(a)
    const late = ask(a)
    const first = await r1
    const now = vi.spyOn(Date, 'now').mockReturnValue(first.expiresAt)
    expect(await a.decide(first.id, { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_EXPIRED' })
    now.mockRestore()
    expect(await late.settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'pay was denied by timeout: nobody decided within 60000 ms' })
    const r2 = nextRequested(a)
    const inTime = ask(a)
    const second = await r2
    vi.spyOn(Date, 'now').mockReturnValue(second.expiresAt - 1)
    expect(await a.decide(second.id, { decision: 'allow' })).toMatchObject({ ok: true, decidedAt: second.expiresAt - 1 })
    vi.restoreAllMocks()
    expect(await inTime.settled).toEqual({ ok: true, value: true })
  })

  it('a request removed from the store between the read and the settlement: not found, and its caller keeps waiting', async () => {
    const cues = cueStore()
    const a = broker(cues.store)
    const requested = nextRequested(a)
    const call = ask(a)
    const approval = await requested
    const hash = hashOfId(approval.id)!
    let reads = 0
    cues.after = async (op) => {
      // decide's own read of the open key went through; then another process removes it.
      if (isGet(op, openKey(hash)) && ++reads === 1) await cues.base.delete(openKey(hash))
    }
    expect(await a.decide(approval.id, { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_NOT_FOUND' })
    cues.after = undefined
    let answered = false
    void call.settled.then(() => (answered = true))
    await new Promise((resolve) => setTimeout(resolve, 60))
    expect(answered).toBe(false)
    call.controller.abort()
    expect(await call.settled).toMatchObject({ ok: false, code: 'DENIED_BY_APPROVAL' })
  })

  it('losing to a decision from another process: refused with what landed, and the caller here gets that verdict', async () => {
    const cues = cueStore()
    const a = broker(cues.store, { pollIntervalMs: 600_000 })
    const b = broker(cues.base)
    const requested = nextRequested(a)
    const call = ask(a)
    const approval = await requested
    const hash = hashOfId(approval.id)!
    let raced = false
    cues.after = async (op) => {
      // After decide read the request open, the other process's denial lands.
      if (isGet(op, openKey(hash)) && !raced) {
        raced = true
        expect(await b.decide(approval.id, { decision: 'deny', reason: 'theirs' })).toMatchObject({ ok: true })
      }
    }
    expect(await a.decide(approval.id, { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_ALREADY_DECIDED', message: expect.stringContaining('(deny)') })
    expect(await call.settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'pay was denied by a person: theirs' })
  })
})

describe('dispose() and pending()', () => {
  it('dispose() waits for a write that started while it waited for earlier ones (a poll that read a decision just before)', async () => {
    const cues = cueStore()
    const a = broker(cues.store)
    const b = broker(cues.base)
    const r1 = nextRequested(a)
    const one = ask(a, { callId: 'one' })
    const h1 = hashOfId((await r1).id)!
    const r2 = nextRequested(a)
    const two = ask(a, { callId: 'two' })
    const second = await r2
    const h2 = hashOfId(second.id)!
    const [pollRead, withdrawal, lateClaim] = [gate(), gate(), gate()]
    const held = { poll: false, withdrawal: false, lateClaim: false }
    cues.after = async (op) => {
      // A poll's read that found the decision is held until the broker is being disposed.
      if (held.poll || !isGet(op, doneKey(h2)) || (await cues.base.get(doneKey(h2))) === undefined) return
      held.poll = true
      await pollRead.opened
    }
    cues.before = async (op) => {
      if (op.op === 'put' && op.key === doneKey(h1)) {
        held.withdrawal = true
        await withdrawal.opened
      }
      if (held.poll && !held.lateClaim && isGet(op, openKey(h2))) {
        held.lateClaim = true
        await lateClaim.opened
      }
    }
    expect(await b.decide(second.id, { decision: 'allow' })).toMatchObject({ ok: true })
    await until(() => held.poll, 'a poll holding the decision it read')
    one.controller.abort()
    await until(() => held.withdrawal, 'the withdrawal write')
    let disposed = false
    const disposing = a.dispose().then(() => {
      disposed = true
    })
    expect(await two.settled).toMatchObject({ ok: false, code: 'DENIED_BY_APPROVAL', message: expect.stringContaining('the approval broker was disposed') })
    pollRead.open()
    await until(() => held.lateClaim, "the poll's settlement write, started after dispose()")
    withdrawal.open()
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(disposed).toBe(false)
    lateClaim.open()
    await disposing
    expect(await one.settled).toMatchObject({ ok: false, code: 'DENIED_BY_APPROVAL' })
  })

  it('pending() sweeps one page of settled records per listing, continuing from its cursor', async () => {
    const cues = cueStore()
    const a = broker(cues.store, { retainSettledMs: 1 })
    await a.pending()
    // Then one page of markers, at most once per prune interval.
    // The listing: its walk of expiry keys, its list of the expired ones (keys only), its scan of open records (brief s54 "listing").
    const listing = ['list approvals/exp/', 'list approvals/exp/', 'list approvals/open/']
    expect(cues.ops.map((op) => `${op.op} ${op.key}`)).toEqual([...listing, 'list approvals/done/', 'list approvals/settled/'])
    cues.ops.length = 0
    await a.pending()
    expect(cues.ops.map((op) => `${op.op} ${op.key}`)).toEqual([...listing, 'list approvals/done/'])
  })
})

describe('how a watch ends, more ways', () => {
  it('expiry of a request removed from the store behind its back: the caller is denied by the server, saying so', async () => {
    // Fake time: the record is gone before the expiry fires, and the poll never runs first.
    vi.useFakeTimers()
    const cues = cueStore()
    const a = broker(cues.store, { timeoutMs: 400, pollIntervalMs: 600_000 })
    const requested = nextRequested(a)
    const call = ask(a)
    const approval = await requested
    await cues.base.delete(openKey(hashOfId(approval.id)!))
    await vi.advanceTimersByTimeAsync(400)
    expect(await call.settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'pay was denied by the server: the approval request was removed from the store' })
  })

  it('expiry over a store that fails: the caller is denied by timeout all the same, the record left for the next reader', async () => {
    // Fake time: the store fails before the expiry fires, and the poll never runs first.
    vi.useFakeTimers()
    const cues = cueStore()
    const a = broker(cues.store, { timeoutMs: 400, pollIntervalMs: 600_000 })
    const events = eventsOf(a)
    const requested = nextRequested(a)
    const call = ask(a)
    const approval = await requested
    cues.before = () => {
      throw new Error('store down')
    }
    await vi.advanceTimersByTimeAsync(400)
    expect(await call.settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'pay was denied by timeout: nobody decided within 400 ms' })
    expect(events.map((e) => e.type)).toEqual(['requested', 'expired'])
    expect(await cues.base.get(openKey(hashOfId(approval.id)!))).toBeDefined()
  })

  it('an expiry timer that fires before expiresAt (the clock went back) is armed again, not taken as the expiry', async () => {
    vi.useFakeTimers()
    const cues = cueStore()
    const a = createApprovalBroker({ store: cues.store, timeoutMs: 1_000, pollIntervalMs: 600_000 })
    brokers.push(a)
    const requested = nextRequested(a)
    const call = ask(a)
    const approval = await requested
    vi.setSystemTime(Date.now() - 5_000)
    await vi.advanceTimersByTimeAsync(1_000)
    expect(await cues.base.get(doneKey(hashOfId(approval.id)!))).toBeUndefined()
    expect(await a.decide(approval.id, { decision: 'allow' })).toMatchObject({ ok: true })
    expect(await call.settled).toEqual({ ok: true, value: true })
  })

  it('dispose(): a waiting caller hears that the server denied it and why; a second dispose() does nothing more', async () => {
    const cues = cueStore()
    const w = watchable(cues.store)
    let unwatched = 0
    const watch = w.store.watch
    w.store.watch = (prefix, onChange) => {
      const stop = watch(prefix, onChange)
      return () => (unwatched++, stop())
    }
    const a = broker(w.store)
    const requested = nextRequested(a)
    const call = ask(a)
    await requested
    await a.dispose()
    expect(await call.settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'pay was denied by the server: the approval broker was disposed; the request stays open in the store for another process' })
    await a.dispose()
    expect(unwatched).toBe(1)
    // Cancelled after the disposal: the request it left open stays open for another process.
    call.controller.abort()
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(await broker(cues.base).pending()).toHaveLength(1)
    expect(cues.ops.filter((op) => op.op === 'put' && op.key.startsWith('approvals/done/'))).toEqual([])
  })
})

describe('asking and deciding, more refusals', () => {
  it("a record of another call under the call's key: the collision denial reaches the caller as it is", async () => {
    const cues = cueStore()
    const a = broker(cues.store)
    const requested = nextRequested(a)
    const first = ask(a, { callId: 'col' })
    const approval = await requested
    first.controller.abort()
    await first.settled
    const hash = hashOfId(approval.id)!
    await cues.base.delete(doneKey(hash))
    await cues.base.put(openKey(hash), encodeOpen({ ...approval, name: 'other' })!)
    expect(await ask(a, { callId: 'col' }).settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'the approval request collides with another call in the store (same key hash); it was not asked' })
  })

  it('a store where no write lands (STORE_BUSY): denied saying the store failed, with its words', async () => {
    const cues = cueStore()
    const store: DurableStore = { ...cues.store, put: async () => ({ ok: false }) as never }
    expect(await ask(broker(store)).settled).toEqual({ ok: false, code: 'DENIED_BY_APPROVAL', message: 'the approval store failed, so nobody could be asked: the approval request could not be opened: other writers kept changing its key' })
  })

  it('an id that names no key is refused without reading the store', async () => {
    const cues = cueStore()
    expect(await broker(cues.store).decide('x', { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_NOT_FOUND' })
    expect(cues.ops).toEqual([])
  })

  it("a decision here on another process's newer request of a call this process waits on (older request) does not answer its caller", async () => {
    const cues = cueStore()
    const a = broker(cues.store)
    const requested = nextRequested(a)
    const mine = ask(a, { callId: 'both' })
    const older = await requested
    await cues.base.delete(openKey(hashOfId(older.id)!))
    const b = broker(cues.base)
    const theirsOpened = nextRequested(b)
    const theirs = ask(b, { callId: 'both' })
    const newer = await theirsOpened
    expect(hashOfId(newer.id)).toBe(hashOfId(older.id))
    expect(await a.decide(newer.id, { decision: 'allow' })).toMatchObject({ ok: true })
    expect(await theirs.settled).toEqual({ ok: true, value: true })
    let answered = false
    void mine.settled.then(() => (answered = true))
    await new Promise((resolve) => setTimeout(resolve, 60))
    expect(answered).toBe(false)
    mine.controller.abort()
    expect(await mine.settled).toMatchObject({ ok: false, code: 'DENIED_BY_APPROVAL' })
  })

  it("an earlier request's id never decides the call's newer request under the same key", async () => {
    const cues = cueStore()
    const a = broker(cues.store)
    const r1 = nextRequested(a)
    const first = ask(a, { callId: 'twice' })
    const old = await r1
    first.controller.abort()
    await first.settled
    const r2 = nextRequested(a)
    const second = ask(a, { callId: 'twice' })
    const renewed = await r2
    expect(await a.decide(old.id, { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_WITHDRAWN' })
    // Its record gone too (settled, then swept): still not the newer one's.
    await cues.base.delete(doneKey(hashOfId(old.id)!))
    expect(await a.decide(old.id, { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_NOT_FOUND' })
    expect((await a.pending()).map((p) => p.id)).toEqual([renewed.id])
    await a.decide(renewed.id, { decision: 'deny' })
    expect(await second.settled).toMatchObject({ ok: false, code: 'DENIED_BY_APPROVAL' })
  })
})
