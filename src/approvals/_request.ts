/**
 * The broker's reading of its options and of the requests the registry hands its handler,
 * the words a denied call hears, and the refusals `decide()` answers. Private to `approvals/`.
 *
 * @module
 */
import { createMemoryStore } from '../durable/memory-store.js'
import type { DurableStore } from '../durable/store.js'
import { ToolError } from '../errors.js'
import { snapshotLosslessJson } from '../json/lossless.js'
import type { ApprovalPlan } from '../types.js'
import { renderApprovalArguments, renderApprovalPreview } from './render.js'
import { renderApprovalPlan } from './render-plan.js'
import type {
  ApprovalBrokerOptions,
  ApprovalDecideErrorCode,
  ApprovalDecideRefused,
  ApprovalVerdict,
  PendingApproval,
  PendingPlan,
} from './types.js'

/** The default `timeoutMs`: 5 minutes. */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 5 * 60 * 1000

/** Node, browsers and workerd turn a longer delay into an (almost) immediate timer. */
export const MAX_TIMER_MS = 2_147_483_647

/** How a request ended: decided (by a person, or denied by the server), expired or withdrawn. */
export type Settlement =
  | { readonly kind: 'decided'; readonly decision: ApprovalVerdict; readonly reason?: string; readonly byDisposal?: true; readonly role?: string }
  | { readonly kind: 'expired' }
  | { readonly kind: 'withdrawn' }

/** What a request shows, read from the registry's ask: everything of a `PendingApproval` but its id and times. */
export type RequestFields = Omit<PendingApproval, 'id' | 'requestedAt' | 'expiresAt'>

/** What the call that was denied hears: who (or what) denied it, and why. */
export function denialMessage(name: string, settlement: Settlement, timeoutMs: number): string {
  if (settlement.kind === 'expired') return `${name} was denied by timeout: nobody decided within ${timeoutMs} ms`
  if (settlement.kind === 'withdrawn') return `the approval request for ${name} was withdrawn: the call was cancelled`
  if (settlement.byDisposal === true) return `${name} was denied by the server: ${settlement.reason ?? 'the approval broker was disposed'}`
  const { reason } = settlement
  return `${name} was denied by a person${reason === undefined || reason === '' ? ' (no reason given)' : `: ${reason}`}`
}

/** Default `pollIntervalMs`: how often a waiting call looks for a decision taken in another process. */
export const DEFAULT_APPROVAL_POLL_INTERVAL_MS = 250

/** Default `retainSettledMs`: how long a settled record is kept for a resumed call (24 hours). */
export const DEFAULT_APPROVAL_RETAIN_SETTLED_MS = 24 * 60 * 60 * 1000

/** The options of `createApprovalBroker`, read and checked once. */
export interface ResolvedBrokerOptions {
  readonly timeoutMs: number
  readonly plans: boolean
  readonly store: DurableStore
  readonly pollIntervalMs: number
  readonly retainSettledMs: number
}

const OPTION_KEYS = new Set(['timeoutMs', 'plans', 'store', 'pollIntervalMs', 'retainSettledMs'])

/** Reads `createApprovalBroker`'s options; throws `ToolError('INVALID_OPTIONS')` on anything malformed. */
export function readBrokerOptions(options: unknown): ResolvedBrokerOptions {
  try {
    return checkOptions(options)
  } catch (error) {
    if (error instanceof ToolError) throw error
    // Options that throw when inspected (a Proxy, a getter) fail as options, not with their own error.
    throw new ToolError('INVALID_OPTIONS', 'createApprovalBroker options could not be read')
  }
}

function invalid(message: string): ToolError {
  return new ToolError('INVALID_OPTIONS', `createApprovalBroker ${message}`)
}

function readMs(value: unknown, what: string, fallback: number, min: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value <= 0 || value > MAX_TIMER_MS) {
    throw invalid(`${what} must be a positive finite number of milliseconds${min > 1 ? ` of at least ${min}` : ''}, at most ${MAX_TIMER_MS} (got ${String(value)})`)
  }
  return value
}

function readStore(value: unknown): DurableStore {
  // A broker of its own in this process: its requests live as long as it does.
  if (value === undefined) return createMemoryStore()
  const store = value as Partial<Record<keyof DurableStore, unknown>> | null
  if (typeof store !== 'object' || store === null || !(['get', 'put', 'delete', 'list'] as const).every((m) => typeof store[m] === 'function')) {
    throw invalid('store must be a DurableStore (get, put, delete, list): createMemoryStore(), createFileStore(dir)…')
  }
  return value as DurableStore
}

function checkOptions(options: unknown): ResolvedBrokerOptions {
  const given = options === undefined ? {} : options
  if (typeof given !== 'object' || given === null || Array.isArray(given)) throw invalid('options must be an object')
  for (const key of Object.keys(given)) if (!OPTION_KEYS.has(key)) throw new ToolError('INVALID_OPTIONS', `createApprovalBroker: unknown option ${JSON.stringify(key)}`)
  const read = given as Partial<ApprovalBrokerOptions>
  if (read.plans !== undefined && typeof read.plans !== 'boolean') throw invalid(`plans must be a boolean (got ${typeof read.plans})`)
  const store = readStore(read.store)
  return {
    timeoutMs: readMs(read.timeoutMs, 'timeoutMs', DEFAULT_APPROVAL_TIMEOUT_MS, 0),
    plans: read.plans === true,
    store,
    pollIntervalMs: readMs(read.pollIntervalMs, 'pollIntervalMs', DEFAULT_APPROVAL_POLL_INTERVAL_MS, 10),
    retainSettledMs: readMs(read.retainSettledMs, 'retainSettledMs', DEFAULT_APPROVAL_RETAIN_SETTLED_MS, 0),
  }
}

/** The one error a denied call gets: `DENIED_BY_APPROVAL` with `message`. */
export function denial(message: string): ToolError {
  return new ToolError('DENIED_BY_APPROVAL', message)
}

/** A principal label (non-secret, bounded), as the registry reads it on the execution input. */
export const PRINCIPAL_LABEL = /^[A-Za-z0-9_-]{1,64}$/

function optionalString(value: unknown, what: string): string | undefined {
  if (value === undefined || typeof value === 'string') return value
  throw new TypeError(`${what} must be a string`)
}

/**
 * Reads what the registry asks (`ApprovalRequest`) into the fields of a pending request.
 * `parentCallId` is read when the registry passes it (see docs/approvals.md). Throws on
 * anything malformed: the handler is public, so it may be called with anything.
 */
export function readRequest(request: unknown): { readonly fields: RequestFields; readonly signal: AbortSignal; readonly runKey?: string } {
  if (typeof request !== 'object' || request === null) throw new TypeError('the request is not an object')
  const { execution, parentCallId: parent, reason: why, kind, runKey: run } = request as Record<string, unknown>
  const runKey = optionalString(run, 'runKey')
  if (typeof execution !== 'object' || execution === null) throw new TypeError('the request carries no execution')
  const { callId, name, signal, agent: scope, principal: who } = execution as Record<string, unknown>
  if (typeof callId !== 'string' || typeof name !== 'string') throw new TypeError('the execution has no string callId and name')
  if (!(signal instanceof AbortSignal)) throw new TypeError('the execution has no AbortSignal')
  const parentCallId = optionalString(parent, 'parentCallId')
  const agent = optionalString(scope, 'agent')
  const principal = optionalString(who, 'principal')
  if (principal !== undefined && !PRINCIPAL_LABEL.test(principal)) throw new TypeError('principal must be 1–64 of A-Z a-z 0-9 _ -')
  const reason = optionalString(why, 'reason')
  // Read as a data property only; the renderer reads the schema defensively too.
  const descriptor = Object.getOwnPropertyDescriptor(request, 'parameters')
  const parameters: unknown = descriptor !== undefined && 'value' in descriptor ? descriptor.value : undefined
  const args = snapshotLosslessJson((execution as { arguments?: unknown }).arguments)
  if (kind !== undefined && kind !== 'call' && kind !== 'plan') throw new TypeError('kind must be call or plan')
  const plan = kind === 'plan' ? readPlan((request as { plan?: unknown }).plan) : undefined
  const previewed = Object.getOwnPropertyDescriptor(request, 'preview')
  // Rendered again: the handler is public, so a caller's preview is bounded and escaped here too.
  const preview = previewed === undefined ? undefined : renderApprovalPreview('value' in previewed ? previewed.value : undefined)
  const fields: RequestFields = {
    callId,
    ...(parentCallId === undefined ? {} : { parentCallId }),
    ...(agent === undefined ? {} : { agent }),
    ...(principal === undefined ? {} : { principal }),
    kind: plan === undefined ? 'call' : 'plan',
    name,
    // Already a frozen snapshot when the registry asks (then reused as is); copied otherwise.
    arguments: args,
    // The one rendering every surface shows (docs/approvals.md "What a person sees").
    summary: plan === undefined ? renderApprovalArguments({ name, parameters }, args).text : renderApprovalPlan(plan),
    ...(plan === undefined ? {} : { plan: pendingPlan(plan) }),
    ...(preview === undefined ? {} : { preview }),
    ...(reason === undefined ? {} : { reason }),
  }
  return { fields, signal, ...(runKey === undefined ? {} : { runKey }) }
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

/** A plan as `pending()` lists it: its calls capped at {@link MAX_PENDING_PLAN_CALLS}, the program itself only in the summary. */
export function pendingPlan(plan: ApprovalPlan): PendingPlan {
  return Object.freeze({
    codeLength: plan.code.length,
    calls: Object.freeze(plan.calls.slice(0, MAX_PENDING_PLAN_CALLS).map((c) => Object.freeze({ name: c.name, line: c.line }))),
    moreCalls: Math.max(0, plan.calls.length - MAX_PENDING_PLAN_CALLS),
    asking: Object.freeze(plan.asking.slice(0, MAX_PENDING_PLAN_CALLS)),
    dynamic: plan.dynamic,
  })
}

/** A frozen refusal of `decide()`. */
export function refused(code: ApprovalDecideErrorCode, message: string): ApprovalDecideRefused {
  return Object.freeze({ ok: false, code, message })
}

/** The most characters of an id a refusal quotes: no id a broker makes is longer. */
const MAX_QUOTED_ID = 80

/** What `decide()` answers for an id that is not open: not found, or how it settled. */
export function refusalFor(id: string, settlement: Settlement | undefined): ApprovalDecideRefused {
  // The id is the client's text (a URL segment, up to the header limit): a refusal quotes
  // no more of it than a real id holds.
  const which = id.length <= MAX_QUOTED_ID ? `approval ${JSON.stringify(id)}` : `approval ${JSON.stringify(id.slice(0, MAX_QUOTED_ID)).slice(0, -1)}…" (${id.length} characters)`
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

