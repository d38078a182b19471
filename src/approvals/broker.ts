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
import { snapshotLosslessJson } from '../json/lossless.js'
import type { ApprovalHandler, ApprovalPlan } from '../types.js'
import { createEventFanOut } from './_events.js'
import { parseDecision } from './decision.js'
import { renderApprovalArguments } from './render.js'
import { renderApprovalPlan } from './render-plan.js'
import type {
  ApprovalBroker,
  ApprovalBrokerOptions,
  ApprovalDecideErrorCode,
  ApprovalDecideRefused,
  ApprovalDecideResult,
  ApprovalDecisionInput,
  ApprovalEvent,
  ApprovalVerdict,
  PendingApproval,
  PendingPlan,
} from './types.js'

/** The default `timeoutMs`: 5 minutes. */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 5 * 60 * 1000

/** Node, browsers and workerd turn a longer delay into an (almost) immediate timer. */
const MAX_TIMER_MS = 2_147_483_647

/**
 * How many settled ids the broker remembers, so a late `decide()` hears "expired" or
 * "already decided" instead of a bare "not found". Bounded, oldest forgotten first: a
 * long-lived server must not grow with every request it ever saw.
 */
const REMEMBERED_SETTLEMENTS = 1000

type Settlement =
  | { readonly kind: 'decided'; readonly decision: ApprovalVerdict; readonly reason?: string; readonly byDisposal?: true }
  | { readonly kind: 'expired' }
  | { readonly kind: 'withdrawn' }

interface OpenRequest {
  readonly approval: PendingApproval
  readonly signal: AbortSignal
  readonly onAbort: () => void
  readonly timer: ReturnType<typeof setTimeout>
  readonly allow: () => void
  readonly deny: (message: string) => void
}

type RequestFields = Omit<PendingApproval, 'id' | 'requestedAt' | 'expiresAt'>

/** What the call that was denied hears: who (or what) denied it, and why. */
function denialMessage(name: string, settlement: Settlement, timeoutMs: number): string {
  if (settlement.kind === 'expired') return `${name} was denied by timeout: nobody decided within ${timeoutMs} ms`
  if (settlement.kind === 'withdrawn') return `the approval request for ${name} was withdrawn: the call was cancelled`
  if (settlement.byDisposal === true) return `${name} was denied by the server: ${settlement.reason ?? 'the approval broker was disposed'}`
  const { reason } = settlement
  return `${name} was denied by a person${reason === undefined || reason === '' ? ' (no reason given)' : `: ${reason}`}`
}

const OPTION_KEYS = new Set(['timeoutMs', 'plans'])

function readTimeoutMs(options: unknown): number {
  try {
    return checkTimeoutMs(options)
  } catch (error) {
    if (error instanceof ToolError) throw error
    // Options that throw when inspected (a Proxy, a getter) fail as options, not with their own error.
    throw new ToolError('INVALID_OPTIONS', 'createApprovalBroker options could not be read')
  }
}

function checkTimeoutMs(options: unknown): number {
  if (options === undefined) return DEFAULT_APPROVAL_TIMEOUT_MS
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ToolError('INVALID_OPTIONS', 'createApprovalBroker options must be an object')
  }
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key)) throw new ToolError('INVALID_OPTIONS', `createApprovalBroker: unknown option ${JSON.stringify(key)}`)
  }
  const plans = (options as ApprovalBrokerOptions).plans
  if (plans !== undefined && typeof plans !== 'boolean') throw new ToolError('INVALID_OPTIONS', `createApprovalBroker plans must be a boolean (got ${typeof plans})`)
  const value = (options as ApprovalBrokerOptions).timeoutMs
  if (value === undefined) return DEFAULT_APPROVAL_TIMEOUT_MS
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > MAX_TIMER_MS) {
    throw new ToolError(
      'INVALID_OPTIONS',
      `createApprovalBroker timeoutMs must be a positive finite number of milliseconds, at most ${MAX_TIMER_MS} (got ${String(value)})`,
    )
  }
  return value
}

function denial(message: string): ToolError {
  return new ToolError('DENIED_BY_APPROVAL', message)
}

function optionalString(value: unknown, what: string): string | undefined {
  if (value === undefined || typeof value === 'string') return value
  throw new TypeError(`${what} must be a string`)
}

/**
 * Reads what the registry asks (`ApprovalRequest`) into the fields of a pending request.
 * `parentCallId` is read when the registry passes it (see docs/approvals.md). Throws on
 * anything malformed: the handler is public, so it may be called with anything.
 */
function readRequest(request: unknown): { readonly fields: RequestFields; readonly signal: AbortSignal } {
  if (typeof request !== 'object' || request === null) throw new TypeError('the request is not an object')
  const { execution, parentCallId: parent, reason: why, kind } = request as Record<string, unknown>
  if (typeof execution !== 'object' || execution === null) throw new TypeError('the request carries no execution')
  const { callId, name, signal, agent: scope } = execution as Record<string, unknown>
  if (typeof callId !== 'string' || typeof name !== 'string') throw new TypeError('the execution has no string callId and name')
  if (!(signal instanceof AbortSignal)) throw new TypeError('the execution has no AbortSignal')
  const parentCallId = optionalString(parent, 'parentCallId')
  const agent = optionalString(scope, 'agent')
  const reason = optionalString(why, 'reason')
  // Read as a data property only; the renderer reads the schema defensively too.
  const descriptor = Object.getOwnPropertyDescriptor(request, 'parameters')
  const parameters: unknown = descriptor !== undefined && 'value' in descriptor ? descriptor.value : undefined
  const args = snapshotLosslessJson((execution as { arguments?: unknown }).arguments)
  if (kind !== undefined && kind !== 'call' && kind !== 'plan') throw new TypeError('kind must be call or plan')
  const plan = kind === 'plan' ? readPlan((request as { plan?: unknown }).plan) : undefined
  const fields: RequestFields = {
    callId,
    ...(parentCallId === undefined ? {} : { parentCallId }),
    ...(agent === undefined ? {} : { agent }),
    kind: plan === undefined ? 'call' : 'plan',
    name,
    // Already a frozen snapshot when the registry asks (then reused as is); copied otherwise.
    arguments: args,
    // The one rendering every surface shows (docs/approvals.md "What a person sees").
    summary: plan === undefined ? renderApprovalArguments({ name, parameters }, args).text : renderApprovalPlan(plan),
    ...(plan === undefined ? {} : { plan: pendingPlan(plan) }),
    ...(reason === undefined ? {} : { reason }),
  }
  return { fields, signal }
}

/** Planned calls a pending plan lists (the summary shows the program itself, bounded). */
export const MAX_PENDING_PLAN_CALLS = 100

function readList<T>(value: unknown, what: string, read: (item: Record<string, unknown>) => T): T[] {
  if (!Array.isArray(value)) throw new TypeError(`${what} must be an array`)
  return value.map((item: unknown) => {
    if (typeof item !== 'object' || item === null) throw new TypeError(`${what} holds a non-object`)
    return Object.freeze(read(item as Record<string, unknown>))
  })
}

/** Reads a plan request's `plan` (the handler is public: anything may arrive). */
function readPlan(value: unknown): ApprovalPlan {
  if (typeof value !== 'object' || value === null) throw new TypeError('a plan request carries no plan')
  const { code, description, calls, asking, dynamic } = value as Record<string, unknown>
  if (typeof code !== 'string' || typeof description !== 'string' || typeof dynamic !== 'boolean') throw new TypeError('the plan has no string code and description and boolean dynamic')
  const call = (c: Record<string, unknown>) => {
    if (typeof c.name !== 'string' || typeof c.line !== 'number' || typeof c.column !== 'number') throw new TypeError('a planned call has no name, line and column')
    return { name: c.name, line: c.line, column: c.column }
  }
  const ask = (a: Record<string, unknown>) => {
    if (typeof a.name !== 'string') throw new TypeError('an asking tool has no name')
    return { name: a.name, ...(typeof a.reason === 'string' ? { reason: a.reason } : {}) }
  }
  return { code, description, calls: readList(calls, 'plan.calls', call), asking: readList(asking, 'plan.asking', ask), dynamic }
}

function pendingPlan(plan: ApprovalPlan): PendingPlan {
  return Object.freeze({
    codeLength: plan.code.length,
    calls: Object.freeze(plan.calls.slice(0, MAX_PENDING_PLAN_CALLS).map((c) => Object.freeze({ name: c.name, line: c.line }))),
    moreCalls: Math.max(0, plan.calls.length - MAX_PENDING_PLAN_CALLS),
    asking: Object.freeze(plan.asking.slice(0, MAX_PENDING_PLAN_CALLS)),
    dynamic: plan.dynamic,
  })
}

function refused(code: ApprovalDecideErrorCode, message: string): ApprovalDecideRefused {
  return Object.freeze({ ok: false, code, message })
}

function refusalFor(id: string, settlement: Settlement | undefined): ApprovalDecideRefused {
  const which = `approval ${JSON.stringify(id)}`
  switch (settlement?.kind) {
    case undefined:
      return refused('APPROVAL_NOT_FOUND', `${which} is not pending (unknown id)`)
    case 'expired':
      return refused('APPROVAL_EXPIRED', `${which} expired before this decision; the call was denied`)
    case 'withdrawn':
      return refused('APPROVAL_WITHDRAWN', `${which} was withdrawn: the call was cancelled`)
    case 'decided':
      return refused('APPROVAL_ALREADY_DECIDED', `${which} was already decided (${settlement.decision})`)
  }
}

/**
 * Creates an approval broker. Plug its `handler` into `createToolRuntime({ approval })`;
 * then every call a `tools/pre-execute` gate answers with `ask` waits in `pending()`
 * until `decide()` answers it, `timeoutMs` passes (denied, "expired"), or the call's
 * signal aborts (withdrawn). Throws `ToolError('INVALID_OPTIONS')` on bad options.
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
export function createApprovalBroker(options?: ApprovalBrokerOptions): ApprovalBroker {
  const timeoutMs = readTimeoutMs(options)
  // Read after validation (readTimeoutMs checked the whole options object).
  const plans = (options as ApprovalBrokerOptions | undefined)?.plans === true
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
  }) as ApprovalHandler & { acceptsPlans: boolean }
  // The registry sends plan requests only to a handler that says it reads them.
  handler.acceptsPlans = plans
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
