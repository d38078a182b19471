/**
 * Approvals over HTTP: `GET /v1/approvals`, `POST /v1/approvals/:id`, and a run's approval
 * events forwarded into its `/v1/run` stream. The broker owns every request.
 *
 * @module
 */
import type { Handler } from 'hono'
import type { ApprovalBroker, ApprovalDecideErrorCode, ApprovalEvent, ApprovalListing, ApprovalVerdict, PendingApproval } from '../approvals/types.js'
import { hasRole } from './auth.js'
import { HttpError, type HttpErrorCode } from './http-errors.js'
import { requestPrincipal } from './_principals.js'
import { readJsonBody } from './request-body.js'

/** The `decide()` refusal codes are HTTP error codes of the same name (400, 404, 409, 503). */
const REFUSAL: Readonly<Record<ApprovalDecideErrorCode, HttpErrorCode>> = {
  INVALID_DECISION: 'INVALID_DECISION',
  APPROVAL_NOT_FOUND: 'APPROVAL_NOT_FOUND',
  APPROVAL_EXPIRED: 'APPROVAL_EXPIRED',
  APPROVAL_WITHDRAWN: 'APPROVAL_WITHDRAWN',
  APPROVAL_ALREADY_DECIDED: 'APPROVAL_ALREADY_DECIDED',
  BROKER_DISPOSED: 'BROKER_DISPOSED',
}

/** One listing of a broker's open requests, and whether it stopped at a bound (some requests are not in it). */
export interface ApprovalsListed {
  readonly approvals: readonly PendingApproval[]
  readonly truncated: boolean
}

/** A broker's listings under way: per agent filter (`''`: every agent), the one running and the one queued behind it (which every later caller joins). */
const listings = new WeakMap<ApprovalBroker, Map<string, { running?: Promise<ApprovalsListed>; queued?: Promise<ApprovalsListed> }>>()

/**
 * `broker.pending({ agent })` with its own listing's `truncated`, one listing of a broker
 * and agent at a time: a caller arriving while one runs joins the single listing queued
 * behind it (started after it asked: never an older answer), so concurrent `GET
 * /v1/approvals` cost at most two listings, not one each (each reads up to 1,000 records
 * and 8 MiB). `agent` is filtered by the broker while it reads the store (other agents'
 * requests cannot crowd it out of the 500), and here again for a broker of the caller's
 * own making that ignores the option.
 */
export function listPending(broker: ApprovalBroker, agent?: string): Promise<ApprovalsListed> {
  let perAgent = listings.get(broker)
  if (perAgent === undefined) listings.set(broker, (perAgent = new Map()))
  const name = agent === undefined ? '' : `agent:${agent}`
  let state = perAgent.get(name)
  if (state === undefined) perAgent.set(name, (state = {}))
  const slot = state
  if (slot.queued !== undefined) return slot.queued
  const start = (): Promise<ApprovalsListed> => {
    const run = broker.pending(agent === undefined ? undefined : { agent }).then((listed) => ({
      approvals: agent === undefined ? listed : listed.filter((approval) => approval.agent === agent),
      // The listing's own facts; a broker of the caller's own making may give none: then nothing says it was cut.
      truncated: (listed.listing as ApprovalListing | undefined)?.truncated === true,
    }))
    slot.running = run
    const clear = (): void => {
      if (slot.running === run) slot.running = undefined
      if (slot.running === undefined && slot.queued === undefined && perAgent.get(name) === slot) perAgent.delete(name)
    }
    void run.then(clear, clear)
    return run
  }
  if (slot.running === undefined) return start()
  const queued = slot.running.then(
    () => undefined,
    () => undefined,
  ).then(() => {
    slot.queued = undefined
    return start()
  })
  slot.queued = queued
  return queued
}

/**
 * `GET /v1/approvals`: the open requests, oldest first, each with the `principal` whose
 * call opened it as the broker recorded it (the execution's; a run's for its sub-calls),
 * and `truncated: true` when the listing stopped at a bound (500 requests, 1,000 records or
 * 8 MiB read), so a person knows that requests are waiting unseen.
 */
export function listApprovals(broker: ApprovalBroker): Handler {
  return async (c) => {
    // A token pinned to an agent acts for it only: it lists (and decides) that agent's requests alone, filtered within the listing's bounds.
    const { approvals, truncated } = await listPending(broker, requestPrincipal(c).agent)
    // Present only when cut, as a store listing's `cursor`: a whole listing keeps its shape.
    return c.json(truncated ? { approvals, truncated: true } : { approvals })
  }
}

/** `POST /v1/approvals/:id`: one decision; the broker reads the body strictly, so any JSON is passed on as is. */
export function decideApproval(broker: ApprovalBroker, maxBodyBytes: number): Handler {
  return async (c) => {
    const body = await readJsonBody(c.req.raw, maxBodyBytes)
    // The role that let this principal decide (the route needs `approve`; `admin` holds it): what telemetry says decided, never the token or id.
    const principal = requestPrincipal(c)
    const role = principal.roles.includes('approve') ? 'approve' : hasRole(principal, 'approve') ? 'admin' : undefined
    // A pinned token decides only its agent's requests (another's answers 404, as unknown).
    const scope = principal.agent === undefined ? {} : { agent: principal.agent }
    const answer = await broker.decide(c.req.param('id') as string, body as never, role === undefined ? undefined : { role, ...scope })
    if (!answer.ok) throw new HttpError(REFUSAL[answer.code], answer.message)
    return c.json(answer)
  }
}

/** The data of an `approval-settled` stream event. */
export interface ApprovalSettledData {
  /** The request's id (as in the `approval` event). */
  readonly id: string
  /** The asking sub-call. */
  readonly callId: string
  readonly outcome: ApprovalVerdict | 'expired' | 'withdrawn'
  /** The person's reason, for a decision that gave one. */
  readonly reason?: string
  /** Epoch ms. */
  readonly at: number
}

function settled(event: Exclude<ApprovalEvent, { type: 'requested' }>): ApprovalSettledData {
  const base = { id: event.approval.id, callId: event.approval.callId, at: event.at }
  if (event.type !== 'decided') return { ...base, outcome: event.type }
  // Stryker disable next-line ConditionalExpression: this object only travels as JSON, where a reason: undefined is dropped
  return { ...base, outcome: event.decision, ...(event.reason === undefined ? {} : { reason: event.reason }) }
}

/** Whether `approval` is one of run `runCallId`'s: its plan request (by `callId`), or a sub-call's (by `parentCallId`). */
export function approvalOfRun(approval: PendingApproval, runCallId: string): boolean {
  return approval.kind === 'plan' ? approval.callId === runCallId : approval.parentCallId === runCallId
}

/**
 * Forwards the broker's events about `runCallId`'s own sub-calls (matched by
 * `parentCallId`) and its plan request (kind `plan`, matched by `callId`) to `send`: `approval` with the pending request (its `id` is what
 * `POST /v1/approvals/:id` takes), `approval-settled` when it is decided, expires or is
 * withdrawn. Returns the unsubscribe (the stream calls it when the run settles).
 */
export function forwardApprovals(broker: ApprovalBroker | undefined, runCallId: string, send: (event: string, data: unknown) => void): () => void {
  if (broker === undefined) return () => {}
  return broker.subscribe((event) => {
    if (!approvalOfRun(event.approval, runCallId)) return
    if (event.type === 'requested') send('approval', event.approval)
    else send('approval-settled', settled(event))
  })
}
