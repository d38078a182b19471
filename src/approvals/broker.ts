/**
 * `createApprovalBroker()`: the product around the pipeline's `ask`. Its `handler` turns
 * each asked call into a pending request a person can list and answer (over HTTP, in the
 * playground, over MCP), and settles the call exactly once: allowed, denied with the
 * person's reason, expired after `timeoutMs`, withdrawn when the call is cancelled, or
 * denied when the broker is disposed. Web standards only (`crypto.randomUUID`,
 * `setTimeout`, `AbortSignal`).
 *
 * @module
 */
import { ToolError } from '../errors.js'
import type { ApprovalHandler } from '../types.js'
import { createEventFanOut } from './_events.js'
import { denial, denialMessage, readBrokerOptions, readRequest, refusalFor, refused, type ResolvedBrokerOptions, type Settlement } from './_request.js'
import { createStoredBroker } from './_store-broker.js'
import { parseDecision } from './decision.js'
import type {
  ApprovalBroker,
  ApprovalBrokerOptions,
  ApprovalDecideResult,
  ApprovalDecisionInput,
  ApprovalEvent,
  PendingApproval,
  StoredApprovalBroker,
  StoredApprovalBrokerOptions,
} from './types.js'

export {
  DEFAULT_APPROVAL_POLL_INTERVAL_MS,
  DEFAULT_APPROVAL_RETAIN_SETTLED_MS,
  DEFAULT_APPROVAL_TIMEOUT_MS,
  MAX_PENDING_PLAN_CALLS,
} from './_request.js'
export { MAX_LISTED_APPROVALS } from './_store-broker.js'

/**
 * How many settled ids the broker remembers, so a late `decide()` hears "expired" or
 * "already decided" instead of a bare "not found". Bounded, oldest forgotten first: a
 * long-lived server must not grow with every request it ever saw.
 */
const REMEMBERED_SETTLEMENTS = 1000

interface OpenRequest {
  readonly approval: PendingApproval
  readonly signal: AbortSignal
  readonly onAbort: () => void
  readonly timer: ReturnType<typeof setTimeout>
  readonly allow: () => void
  readonly deny: (message: string) => void
}

/**
 * Creates an approval broker. Plug its `handler` into `createToolRuntime({ approval })`;
 * then every call a `tools/pre-execute` gate answers with `ask` waits in `pending()`
 * until `decide()` answers it, `timeoutMs` passes (denied, "expired"), or the call's
 * signal aborts (withdrawn). Throws `ToolError('INVALID_OPTIONS')` on bad options.
 *
 * With `store` (a `DurableStore`), the requests live in the store: every process whose
 * broker shares it lists and decides them, and a call asked again under the same
 * `callId` (a run resumed after a restart) re-attaches to its request. `pending()` and
 * `decide()` then answer promises: see {@link StoredApprovalBroker} and docs/approvals.md,
 * "Durable approvals".
 *
 * @example
 * ```ts
 * const broker = createApprovalBroker({ timeoutMs: 60_000 })
 * const runtime = createToolRuntime({ approval: broker.handler })
 * runtime.on('tools/pre-execute', (d, exec) => (exec.name === 'pay' ? { kind: 'ask', reason: 'moves money' } : d))
 * broker.subscribe((event) => {
 *   if (event.type === 'requested') console.log(`approve ${event.approval.name}?\n${event.approval.summary}`)
 * })
 * const [request] = broker.pending()
 * broker.decide(request.id, { decision: 'deny', reason: 'not today' })
 * // → the call fails with DENIED_BY_APPROVAL; its message carries "not today"
 * ```
 * @see docs/approvals.md
 */
export function createApprovalBroker(options: StoredApprovalBrokerOptions): StoredApprovalBroker
export function createApprovalBroker(options?: ApprovalBrokerOptions): ApprovalBroker
export function createApprovalBroker(options?: ApprovalBrokerOptions | StoredApprovalBrokerOptions): ApprovalBroker | StoredApprovalBroker {
  const resolved = readBrokerOptions(options)
  return resolved.store === undefined ? createMemoryBroker(resolved) : createStoredBroker(resolved, resolved.store)
}

/** The broker that holds its requests in this process (no `store`): unchanged since before stores. */
function createMemoryBroker({ timeoutMs, plans }: ResolvedBrokerOptions): ApprovalBroker {
  const open = new Map<string, OpenRequest>()
  const remembered = new Map<string, Settlement>()
  const events = createEventFanOut<ApprovalEvent>()
  let disposed = false

  const remember = (id: string, settlement: Settlement): void => {
    remembered.set(id, settlement)
    if (remembered.size > REMEMBERED_SETTLEMENTS) remembered.delete(remembered.keys().next().value as string)
  }

  /**
   * The one way out of `open`: releases the timer and the abort listener, tells
   * subscribers, settles the call. Returns when it happened (epoch ms).
   */
  const settle = (entry: OpenRequest, settlement: Settlement): number => {
    const { approval } = entry
    open.delete(approval.id)
    clearTimeout(entry.timer)
    entry.signal.removeEventListener('abort', entry.onAbort)
    remember(approval.id, settlement)
    const at = Date.now()
    if (settlement.kind === 'decided') {
      const { decision, reason } = settlement
      events.emit(Object.freeze({ type: 'decided', approval, decision, ...(reason === undefined ? {} : { reason }), at }))
      if (decision === 'allow') {
        entry.allow()
        return at
      }
    } else events.emit(Object.freeze({ type: settlement.kind, approval, at }))
    entry.deny(denialMessage(approval.kind === 'plan' ? 'the program' : approval.name, settlement, timeoutMs))
    return at
  }

  const handler = ((request) => {
    if (disposed) throw denial('the approval broker is disposed; nobody can approve this call')
    let read: ReturnType<typeof readRequest>
    try {
      read = readRequest(request)
    } catch (error) {
      throw denial(`malformed approval request (${error instanceof Error ? error.message : 'unreadable'})`)
    }
    // The pipeline never asks for a cancelled call; a direct caller might.
    if (read.signal.aborted) throw denial('the call was cancelled before approval was requested')
    return new Promise<boolean>((resolve, reject) => {
      const requestedAt = Date.now()
      const approval: PendingApproval = Object.freeze({
        id: crypto.randomUUID(),
        ...read.fields,
        requestedAt,
        expiresAt: requestedAt + timeoutMs,
      })
      const entry: OpenRequest = {
        approval,
        signal: read.signal,
        // Block bodies: an event handler that returns a value draws a warning in workerd.
        onAbort: () => {
          settle(entry, { kind: 'withdrawn' })
        },
        timer: setTimeout(() => {
          settle(entry, { kind: 'expired' })
        }, timeoutMs),
        allow: () => resolve(true),
        deny: (message) => reject(denial(message)),
      }
      open.set(approval.id, entry)
      read.signal.addEventListener('abort', entry.onAbort, { once: true })
      events.emit(Object.freeze({ type: 'requested', approval }))
    })
  }) as ApprovalHandler & { acceptsPlans: boolean; withdrawsOnAbort: true }
  // The registry sends plan requests only to a handler that says it reads them.
  handler.acceptsPlans = plans
  // A cancelled call's request leaves pending() before the handler settles: the registry may wait for it.
  handler.withdrawsOnAbort = true
  Object.freeze(handler)

  // Both parameters are checked at run time: they come from people's clients, whatever the static type says.
  const decide = (id: string, input: ApprovalDecisionInput): ApprovalDecideResult => {
    if (typeof id !== 'string') return refused('INVALID_DECISION', `the approval id must be a string (got ${id === null ? 'null' : typeof id})`)
    const parsed = parseDecision(input)
    if (!parsed.ok) return refused('INVALID_DECISION', parsed.message)
    if (disposed) return refused('BROKER_DISPOSED', 'the approval broker is disposed; every request it held was denied')
    const entry = open.get(id)
    if (entry === undefined) return refusalFor(id, remembered.get(id))
    const { decision, reason } = parsed.value
    const decidedAt = settle(entry, { kind: 'decided', decision, ...(reason === undefined ? {} : { reason }) })
    return Object.freeze({ ok: true, approval: entry.approval, decision, ...(reason === undefined ? {} : { reason }), decidedAt })
  }

  return Object.freeze({
    handler,
    timeoutMs,
    pending: () => Object.freeze([...open.values()].map((entry) => entry.approval)),
    decide,
    subscribe(listener: (event: ApprovalEvent) => void) {
      if (typeof listener !== 'function') throw new ToolError('INVALID_OPTIONS', 'subscribe(listener): listener must be a function')
      // After dispose nothing is emitted again; the fan-out refuses to hold the listener.
      return events.add(listener)
    },
    get subscriberCount() {
      return events.size
    },
    dispose() {
      if (disposed) return
      disposed = true
      const reason = 'the approval broker was disposed before anyone decided'
      for (const entry of [...open.values()]) settle(entry, { kind: 'decided', decision: 'deny', reason, byDisposal: true })
      remembered.clear()
      events.close()
    },
  })
}
