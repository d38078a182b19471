/**
 * The broker over a `DurableStore` (docs/approvals.md, "Durable approvals"). A call waits
 * on a *watch* (one per open request this process waits for), ended exactly once by a
 * decision (here, or polled from the store), its expiry, its last caller's cancellation or `dispose()`.
 * @module
 */
import type { DurableStore } from '../durable/store.js'
import { argumentsHash } from '../durable/call-key.js'
import { parkedIn } from '../durable/runs.js'
import { ToolError } from '../errors.js'
import { isDeciderRole, noteDecider } from '../telemetry/decider.js'
import type { ApprovalHandler } from '../types.js'
import { createEventFanOut, type EventFanOut } from './_events.js'
import { denial, denialMessage, MAX_TIMER_MS, readRequest, refusalFor, refused, type ResolvedBrokerOptions, type Settlement } from './_request.js'
import { listOpen, sweepSettled } from './_store-list.js'
import { FULL_PASS_EVERY_MS, newMarkerScan, pruneMarkers, scanMarkers, watchFrom, type MarkerScan } from './_store-markers.js'
import { hashOfId, storedFields, type DoneRecord, type StoredSettlement } from './_store-record.js'
import { attach, claim, MAX_WAITING_PER_PRINCIPAL, readDone, readOpen, type Attachment, type OneAtATime } from './_store-wait.js'
import { parseDecision } from './decision.js'
import type { ApprovalDecider, ApprovalDecideResult, ApprovalDecisionInput, ApprovalEvent, ApprovalListing, ApprovalPendingOptions, PendingApproval, PendingApprovals, ApprovalBroker } from './types.js'

export { MAX_LISTED_APPROVALS } from './_store-list.js'
/**
 * The most calls of one principal that may wait for a person: in one broker at once (counted
 * from ask to answer, so calls asking at once cannot pass it together), and open in its
 * store across every process sharing it (_store-wait.ts). Past it a call of that principal
 * is denied at once, unasked.
 */
export { MAX_WAITING_PER_PRINCIPAL }

interface Caller {
  /** The object the handler was called with: the deciding role is noted on it (telemetry). */
  readonly request: unknown
  readonly signal: AbortSignal
  readonly onAbort: () => void
  readonly resolve: (allowed: true) => void
  readonly reject: (error: ToolError) => void
}

interface Watch {
  readonly hash: string
  readonly approval: PendingApproval
  readonly callers: Set<Caller>
  timer: ReturnType<typeof setTimeout> | undefined
  finished: boolean
  /** How it ended, for a caller that joins after (a subscriber acted while hearing `requested`); absent when stopped by dispose. */
  settled?: StoredSettlement
}

interface Context {
  readonly store: DurableStore
  readonly options: ResolvedBrokerOptions
  readonly watches: Map<string, Watch>
  readonly events: EventFanOut<ApprovalEvent>
  disposed: boolean
  /** Store writes started for watches (expiries, withdrawals): `dispose()` waits for them. */
  readonly writes: Set<Promise<void>>
  poll: 'idle' | 'scheduled' | 'running'
  pollTimer: ReturnType<typeof setTimeout> | undefined
  /** Where the poll's listing of settlement markers stands. */
  readonly markers: MarkerScan
  /** When the next poll reads every open watch's settlement key (local time). */
  nextFullPass: number
  /** The last arguments hash queued ({@link hashInOrder}). */
  hashing: Promise<unknown>
  /** How many calls of each principal are asking here now ({@link MAX_WAITING_PER_PRINCIPAL}). */
  readonly waitingBy: Map<string, number>
  /** The last opening of each principal's request queued here (count, open, count key: {@link OneAtATime}). */
  readonly opening: Map<string, Promise<void>>
}

const DISPOSED = 'the approval broker is disposed; nobody can approve this call'

function subject(approval: PendingApproval): string {
  return approval.kind === 'plan' ? 'the program' : approval.name
}

function settlementEvent(approval: PendingApproval, settled: StoredSettlement): ApprovalEvent {
  if (settled.kind !== 'decided') return Object.freeze({ type: settled.kind, approval, at: settled.at })
  const { decision, reason, role, at } = settled
  return Object.freeze({ type: 'decided', approval, decision, ...(reason === undefined ? {} : { reason }), ...(role === undefined ? {} : { role }), at })
}

/** The error a denied caller gets (the timeout is the record's own). */
function deniedBy(approval: PendingApproval, settled: Settlement): ToolError {
  return denial(denialMessage(subject(approval), settled, approval.expiresAt - approval.requestedAt))
}

/** Ends a watch once: releases its timer and listeners, tells subscribers, settles its callers. */
function finish(ctx: Context, watch: Watch, settled: StoredSettlement): void {
  if (watch.finished) return
  watch.settled = settled
  release(ctx, watch)
  const callers = [...watch.callers]
  watch.callers.clear()
  for (const caller of callers) caller.signal.removeEventListener('abort', caller.onAbort)
  ctx.events.emit(settlementEvent(watch.approval, settled))
  const allowed = settled.kind === 'decided' && settled.decision === 'allow'
  const role = settled.kind === 'decided' ? settled.role : undefined
  for (const caller of callers) {
    noteDecider(caller.request, role)
    if (allowed) caller.resolve(true)
    else caller.reject(deniedBy(watch.approval, settled))
  }
}

/** Marks a watch ended and lets go of it: its timer, its map entry (unless a newer watch holds the key), the poll once nothing waits. */
function release(ctx: Context, watch: Watch): void {
  watch.finished = true
  clearTimeout(watch.timer)
  if (ctx.watches.get(watch.hash) === watch) ctx.watches.delete(watch.hash)
  if (ctx.watches.size === 0) stopPolling(ctx)
}

/** Tracks a store write nobody awaits (the call it settles has its answer), so that `dispose()` can wait for it to land. */
function track(ctx: Context, write: Promise<void>): Promise<void> {
  ctx.writes.add(write)
  void write.finally(() => ctx.writes.delete(write))
  return write
}

/** Starts {@link settleInStore}, tracked. */
function settleLater(ctx: Context, watch: Watch, settled: StoredSettlement): void {
  void track(ctx, settleInStore(ctx, watch, settled))
}

/** Settles a watch's request in the store as `settled` (unless something else landed first) and ends the watch with what landed. */
async function settleInStore(ctx: Context, watch: Watch, settled: StoredSettlement): Promise<void> {
  let landed: StoredSettlement
  try {
    const claimed = await claim(ctx.store, watch.hash, watch.approval, settled)
    // Not open any more and not settled by anyone: removed from the store behind our back.
    landed = claimed?.record.settled ?? Object.freeze({ kind: 'decided', decision: 'deny', reason: 'the approval request was removed from the store', byDisposal: true, at: Date.now() })
  } catch {
    // The store failed: this process settles its callers all the same (a decision it read
    // stands; an expiry or a withdrawal denies); the record stays for the next reader.
    landed = settled
  }
  finish(ctx, watch, landed)
}

function armExpiry(ctx: Context, watch: Watch): void {
  const delay = Math.min(Math.max(0, watch.approval.expiresAt - Date.now()), MAX_TIMER_MS)
  watch.timer = setTimeout(() => {
    if (watch.finished) return
    // A clamped timer fires early for an expiry further away than the longest timer.
    if (Date.now() < watch.approval.expiresAt) return armExpiry(ctx, watch)
    settleLater(ctx, watch, Object.freeze({ kind: 'expired', at: watch.approval.expiresAt }))
  }, delay)
}

function stopPolling(ctx: Context): void {
  clearTimeout(ctx.pollTimer)
  ctx.pollTimer = undefined
  if (ctx.poll === 'scheduled') ctx.poll = 'idle'
}

function schedulePoll(ctx: Context): void {
  if (ctx.poll !== 'idle' || ctx.watches.size === 0 || ctx.disposed) return
  ctx.poll = 'scheduled'
  ctx.pollTimer = setTimeout(() => void pollOnce(ctx), ctx.options.pollIntervalMs)
}

/**
 * Reads the settlement key of each open watch that a new settlement marker names (every
 * open watch's, once per {@link FULL_PASS_EVERY_MS}); a settlement of its id ends it. A pass
 * without decisions costs one listing, not a read per open request.
 */
async function pollOnce(ctx: Context): Promise<void> {
  ctx.poll = 'running'
  ctx.pollTimer = undefined
  const now = Date.now()
  let due: Watch[]
  if (now >= ctx.nextFullPass) {
    ctx.nextFullPass = now + FULL_PASS_EVERY_MS
    due = [...ctx.watches.values()]
  } else {
    // A failed listing names nothing: the next pass lists again, and the full pass reads everything.
    const named = await scanMarkers(ctx.store, ctx.markers, now).catch(() => new Set<string>())
    due = []
    for (const hash of named) {
      const watch = ctx.watches.get(hash)
      if (watch !== undefined) due.push(watch)
    }
  }
  for (const watch of due) {
    if (watch.finished) continue
    const done = await readDone(ctx.store, watch.hash).catch(() => undefined)
    const record = done?.record
    // A decision from another process: clean up its open record if it died before doing so.
    if (record !== undefined && record.approval.id === watch.approval.id) settleLater(ctx, watch, record.settled)
  }
  await pruneMarkers(ctx.store, ctx.markers, now).catch(() => undefined)
  ctx.poll = 'idle'
  schedulePoll(ctx)
}

/** Adds a caller to the watch of `attachment` (made and armed if this process has none yet); its request's keys were first read at `askedAt`. */
function join(ctx: Context, attachment: Extract<Attachment, { kind: 'wait' }>, signal: AbortSignal, request: unknown, askedAt: number): Promise<boolean> {
  let watch = ctx.watches.get(attachment.hash)
  if (watch === undefined || watch.approval.id !== attachment.approval.id) {
    watch = { hash: attachment.hash, approval: attachment.approval, callers: new Set(), timer: undefined, finished: false }
    // A decision taken since its keys were read may have been listed before the watch existed.
    watchFrom(ctx.markers, askedAt, ctx.watches.size === 0)
    ctx.watches.set(attachment.hash, watch)
    armExpiry(ctx, watch)
    ctx.events.emit(Object.freeze({ type: 'requested', approval: watch.approval }))
    schedulePoll(ctx)
  }
  const joined = watch
  return new Promise<boolean>((resolve, reject) => {
    // Ended while `requested` was delivered (a subscriber decided or disposed): answer, never wait forever.
    if (joined.finished) {
      const settled = joined.settled
      if (settled?.kind === 'decided') noteDecider(request, settled.role)
      if (settled?.kind === 'decided' && settled.decision === 'allow') resolve(true)
      else reject(settled === undefined ? denial(DISPOSED) : deniedBy(joined.approval, settled))
      return
    }
    const caller: Caller = {
      request,
      signal,
      // Block body: an event handler that returns a value draws a warning in workerd.
      onAbort: () => {
        withdraw(ctx, joined, caller)
      },
      resolve,
      reject,
    }
    joined.callers.add(caller)
    signal.addEventListener('abort', caller.onAbort, { once: true })
  })
}

/**
 * A caller was cancelled. While others wait it is denied at once; the last one withdraws the
 * request in the store and is denied once the withdrawal has landed, so a call (and the run
 * it belongs to) ends only after its request has left every listing.
 */
function withdraw(ctx: Context, watch: Watch, caller: Caller): void {
  if (!watch.callers.delete(caller)) return
  caller.signal.removeEventListener('abort', caller.onAbort)
  const settled: StoredSettlement = Object.freeze({ kind: 'withdrawn', at: Date.now() })
  const denied = deniedBy(watch.approval, settled)
  if (watch.callers.size > 0) return caller.reject(denied)
  void track(ctx, withdrawLast(ctx, watch, caller.signal, settled)).finally(() => caller.reject(denied))
}

/** The last caller of a watch was cancelled: withdraws its request (or leaves it for the next process, see below). */
async function withdrawLast(ctx: Context, watch: Watch, signal: AbortSignal, settled: StoredSettlement): Promise<void> {
  const parent = watch.approval.parentCallId
  if (isShutdown(signal.reason) && parent !== undefined) {
    // The tool runtime is shutting down (dispose). A sub-call of a durable run (one parked
    // in this store) is resumed by the next process, which asks again under the same call
    // id and re-attaches: leave its request open. Anything else is withdrawn.
    if (await parkedIn(ctx.store, parent).catch(() => false)) return release(ctx, watch)
  }
  await settleInStore(ctx, watch, settled)
}

/** Whether a call was cancelled because its tool runtime is being disposed (not by its caller). */
function isShutdown(reason: unknown): boolean {
  return reason instanceof ToolError && reason.code === 'DISPOSED'
}

/** Answers a call whose request was settled before it asked (a resumed run): the events a waiting call would have caused, then the outcome. */
function answer(ctx: Context, record: DoneRecord, request: unknown): boolean {
  ctx.events.emit(Object.freeze({ type: 'requested', approval: record.approval }))
  ctx.events.emit(settlementEvent(record.approval, record.settled))
  if (record.settled.kind === 'decided') noteDecider(request, record.settled.role)
  if (record.settled.kind === 'decided' && record.settled.decision === 'allow') return true
  throw deniedBy(record.approval, record.settled)
}

/** {@link argumentsHash}, finishing in the order asked (Web Crypto's digests may finish in any order), so requests open in that order. */
function hashInOrder(ctx: Context, value: PendingApproval['arguments']): Promise<string> {
  const next = ctx.hashing.then(() => argumentsHash(value))
  ctx.hashing = next.catch(() => undefined)
  return next
}

/**
 * The secret a call's keys are bound to besides its fields. A run's sub-call: its run's, so
 * the run resumed after a restart finds its request and decision again. A call that carries
 * a principal and no run (a client of the HTTP API or MCP calling a tool directly): a fresh
 * one for each ask. Nothing resumes such a call, and its id may be the client's own choice
 * (`client.<principal>.<id>`), which the client can send again and again: asking again is
 * then a new call that a person decides anew, never an earlier decision replayed (one Allow
 * ran the tool once per repeat, for `retainSettledMs`) nor a share of a request another
 * call of the same id waits on (one Allow ran both). A call without a principal is the
 * host's own, whose ids the host chooses: the same call asked again re-attaches as before.
 */
function bindingSecret(request: ReturnType<typeof readRequest>): string | undefined {
  if (request.runKey !== undefined) return request.runKey
  return request.fields.principal !== undefined && request.fields.kind === 'call' ? `ask.${crypto.randomUUID()}` : undefined
}

/** Runs `body` after this broker's earlier openings of `principal`'s requests have settled: they count the store's keys one at a time. */
function oneAtATime<T>(ctx: Context, principal: string, body: () => Promise<T>): Promise<T> {
  const run = (ctx.opening.get(principal) ?? Promise.resolve()).then(body)
  const settled = run.then(
    () => undefined,
    () => undefined,
  )
  ctx.opening.set(principal, settled)
  void settled.then(() => {
    if (ctx.opening.get(principal) === settled) ctx.opening.delete(principal)
  })
  return run
}

async function ask(ctx: Context, request: ReturnType<typeof readRequest>, asked: unknown): Promise<boolean> {
  const askedAt = Date.now()
  let attachment: Attachment
  try {
    // The broker hashes the arguments itself (a hash it was handed is not trusted), in the order calls asked.
    const fields = { ...request.fields, argumentsHash: await hashInOrder(ctx, request.fields.arguments) }
    const attaching = attach(ctx.store, storedFields(fields), bindingSecret(request), { ...ctx.options, oneAtATime: (principal, body) => oneAtATime(ctx, principal, body) })
    void track(
      ctx,
      attaching.then(
        () => undefined,
        () => undefined,
      ),
    )
    attachment = await attaching
  } catch (error) {
    if (error instanceof ToolError && error.code === 'DENIED_BY_APPROVAL') throw error
    throw denial(`the approval store failed, so nobody could be asked: ${error instanceof Error ? error.message : 'unknown error'}`)
  }
  if (attachment.kind === 'answer') return answer(ctx, attachment.record, asked)
  if (ctx.disposed) throw denial(DISPOSED)
  if (request.signal.aborted) {
    // Cancelled while the store was written: the request it opened is withdrawn (one it re-attached to stays for its owner).
    const settled: StoredSettlement = Object.freeze({ kind: 'withdrawn', at: Date.now() })
    // Tracked: the pipeline stopped waiting for this handler when the call was cancelled.
    if (attachment.created) await track(ctx, claim(ctx.store, attachment.hash, attachment.approval, settled).then(() => undefined, () => undefined))
    throw deniedBy(attachment.approval, settled)
  }
  return join(ctx, attachment, request.signal, asked, askedAt)
}

function makeHandler(ctx: Context): ApprovalHandler & { readonly acceptsPlans: boolean; readonly withdrawsOnAbort: true } {
  const handler = ((request) => {
    if (ctx.disposed) throw denial(DISPOSED)
    let read: ReturnType<typeof readRequest>
    try {
      read = readRequest(request)
    } catch (error) {
      throw denial(`malformed approval request (${error instanceof Error ? error.message : 'unreadable'})`)
    }
    if (read.signal.aborted) throw denial('the call was cancelled before approval was requested')
    const principal = read.fields.principal
    if (principal === undefined) return ask(ctx, read, request)
    // Counted from the ask to its answer, so calls asking at once cannot pass the bound together.
    const waiting = ctx.waitingBy.get(principal) ?? 0
    if (waiting >= MAX_WAITING_PER_PRINCIPAL) {
      throw denial(`${read.fields.name} was not put to a person: principal ${principal} already has ${waiting} calls waiting for one here (at most ${MAX_WAITING_PER_PRINCIPAL}); retry once some are decided`)
    }
    ctx.waitingBy.set(principal, waiting + 1)
    return ask(ctx, read, request).finally(() => {
      const left = (ctx.waitingBy.get(principal) ?? 1) - 1
      if (left > 0) ctx.waitingBy.set(principal, left)
      else ctx.waitingBy.delete(principal)
    })
  }) as ApprovalHandler & { acceptsPlans: boolean; withdrawsOnAbort: true }
  handler.acceptsPlans = ctx.options.plans
  // Its last cancelled caller is denied once the withdrawal has landed in the store: the registry waits for that.
  handler.withdrawsOnAbort = true
  return Object.freeze(handler)
}

/** Whether a decider scoped to `agent` (absent: every agent) may see and decide `approval`. */
function inScope(approval: PendingApproval, agent: string | undefined): boolean {
  return agent === undefined || approval.agent === agent
}

async function decide(ctx: Context, id: string, input: ApprovalDecisionInput, by: ApprovalDecider | undefined): Promise<ApprovalDecideResult> {
  if (typeof id !== 'string') return refused('INVALID_DECISION', `the approval id must be a string (got ${id === null ? 'null' : typeof id})`)
  const parsed = parseDecision(input)
  if (!parsed.ok) return refused('INVALID_DECISION', parsed.message)
  // A scope that is not a string fails closed: never read as "every agent".
  const scope = by?.agent
  if (scope !== undefined && typeof scope !== 'string') return refused('INVALID_DECISION', 'the decider\'s agent must be a string')
  if (ctx.disposed) return refused('BROKER_DISPOSED', 'the approval broker is disposed; every request it held was denied')
  const hash = hashOfId(id)
  if (hash === undefined) return refusalFor(id, undefined)
  const open = await readOpen(ctx.store, hash)
  const approval = open.record?.id === id ? open.record : undefined
  if (approval === undefined) {
    const done = await readDone(ctx.store, hash)
    const settledHere = done.record?.approval.id === id && inScope(done.record.approval, scope)
    return refusalFor(id, settledHere ? done.record!.settled : undefined)
  }
  // Another agent's request, for a decider scoped to one: as unknown as one that never existed.
  if (!inScope(approval, scope)) return refusalFor(id, undefined)
  const now = Date.now()
  const { decision, reason } = parsed.value
  // A role only when it is a label (the HTTP app passes its principal's; a direct caller may pass none).
  const role = isDeciderRole(by?.role) ? by.role : undefined
  const wanted: StoredSettlement =
    now >= approval.expiresAt
      ? Object.freeze({ kind: 'expired', at: approval.expiresAt })
      : Object.freeze({ kind: 'decided', decision, ...(reason === undefined ? {} : { reason }), ...(role === undefined ? {} : { role }), at: now })
  const claimed = await claim(ctx.store, hash, approval, wanted)
  if (claimed === undefined) return refusalFor(id, undefined)
  const watch = ctx.watches.get(hash)
  if (watch !== undefined && watch.approval.id === id) finish(ctx, watch, claimed.record.settled)
  if (!claimed.mine || wanted.kind !== 'decided') return refusalFor(id, claimed.record.settled)
  return Object.freeze({ ok: true, approval, decision, ...(reason === undefined ? {} : { reason }), decidedAt: now })
}

/**
 * `approvals` frozen, carrying `listing` as a property that is not enumerable: each
 * `pending()` answers its own listing's facts (a shared `lastListing` could be another
 * caller's), while JSON and deep equality still see the array alone.
 */
function withListing(approvals: readonly PendingApproval[], listing: ApprovalListing): PendingApprovals {
  const list = [...approvals]
  Object.defineProperty(list, 'listing', { value: listing, enumerable: false })
  return Object.freeze(list) as PendingApprovals
}

/** Creates the broker over `store` (options already validated by `createApprovalBroker`). */
export function createStoredBroker(options: ResolvedBrokerOptions, store: DurableStore): ApprovalBroker {
  const now = Date.now()
  const ctx: Context = {
    store,
    options,
    watches: new Map(),
    events: createEventFanOut(),
    disposed: false,
    writes: new Set(),
    poll: 'idle',
    pollTimer: undefined,
    markers: newMarkerScan(now),
    nextFullPass: now + FULL_PASS_EVERY_MS,
    hashing: Promise.resolve(),
    waitingBy: new Map(),
    opening: new Map(),
  }
  // A store that announces changes (PostgreSQL's LISTEN/NOTIFY) wakes a scheduled poll at once; the timer stays the fallback.
  const watchable = store as DurableStore & { watch?: (prefix: string, onChange: (key: string) => void) => () => void }
  const unwatch = typeof watchable.watch === 'function' ? watchable.watch('approvals/done/', () => {
    if (ctx.poll !== 'scheduled') return
    stopPolling(ctx)
    void pollOnce(ctx)
  }) : undefined
  let lastListing: ApprovalListing = Object.freeze({ examined: 0, malformed: 0, truncated: false })
  let sweepAfter: string | undefined
  return Object.freeze({
    handler: makeHandler(ctx),
    timeoutMs: options.timeoutMs,
    pollIntervalMs: options.pollIntervalMs,
    retainSettledMs: options.retainSettledMs,
    get lastListing() {
      return lastListing
    },
    async pending(listOptions?: ApprovalPendingOptions) {
      // An agent that is not a string fails closed: never read as "every agent".
      const agent: unknown = listOptions?.agent
      if (agent !== undefined && typeof agent !== 'string') throw new ToolError('INVALID_OPTIONS', "pending({ agent }): the agent must be a string")
      const run: unknown = listOptions?.run
      if (run !== undefined && typeof run !== 'string') throw new ToolError('INVALID_OPTIONS', "pending({ run }): the run must be a string (its run_code call id)")
      if (ctx.disposed) return withListing([], Object.freeze({ examined: 0, malformed: 0, truncated: false }))
      const result = await listOpen(store, options.retainSettledMs, agent, run)
      lastListing = result.listing
      // One page of settled records per listing: bounded work that keeps the store from growing.
      sweepAfter = await sweepSettled(store, sweepAfter, options.retainSettledMs).catch(() => undefined)
      // Markers are pruned here too: a process that only lists and decides (an operator's console) keeps them bounded as well.
      await pruneMarkers(store, ctx.markers, Date.now()).catch(() => undefined)
      return withListing(result.approvals, result.listing)
    },
    decide: (id: string, input: ApprovalDecisionInput, by?: ApprovalDecider) => decide(ctx, id, input, by),
    subscribe(listener: (event: ApprovalEvent) => void) {
      if (typeof listener !== 'function') throw new ToolError('INVALID_OPTIONS', 'subscribe(listener): listener must be a function')
      return ctx.events.add(listener)
    },
    get subscriberCount() {
      return ctx.events.size
    },
    async dispose() {
      if (ctx.disposed) return
      ctx.disposed = true
      stopPolling(ctx)
      unwatch?.()
      const reason = 'the approval broker was disposed; the request stays open in the store for another process'
      for (const watch of [...ctx.watches.values()]) {
        watch.finished = true
        clearTimeout(watch.timer)
        for (const caller of watch.callers) {
          caller.signal.removeEventListener('abort', caller.onAbort)
          caller.reject(deniedBy(watch.approval, { kind: 'decided', decision: 'deny', reason, byDisposal: true }))
        }
      }
      ctx.watches.clear()
      ctx.events.close()
      // Withdrawals and expiries already started land before the process may exit.
      while (ctx.writes.size > 0) await Promise.allSettled([...ctx.writes])
    },
  })
}
