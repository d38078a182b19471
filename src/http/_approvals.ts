/**
 * Approvals over HTTP: `GET /v1/approvals`, `POST /v1/approvals/:id`, and a run's approval
 * events forwarded into its `/v1/run` stream. The broker owns every request.
 *
 * @module
 */
import type { Context, Handler } from 'hono'
import { approvalOfRun } from '../approvals/broker.js'
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

/** Which requests a listing keeps: an agent's, a run's (its `run_code` call id). */
export interface ListedFor {
  readonly agent?: string | undefined
  readonly run?: string | undefined
}

/** The most listings of one broker reading the store at once, whatever their filters. */
export const MAX_LISTINGS_AT_ONCE = 2

interface Slot {
  running?: Promise<ApprovalsListed>
  queued?: Promise<ApprovalsListed>
}

/** A broker's listings: per filter, the one running and the one queued behind it; the turns taken. */
interface Listings {
  readonly byFilter: Map<string, Slot>
  active: number
  readonly waiting: (() => void)[]
}

const listings = new WeakMap<ApprovalBroker, Listings>()

/** Runs `list` in its turn (first come, first served). */
async function inTurn<T>(state: Listings, list: () => Promise<T>): Promise<T> {
  if (state.active >= MAX_LISTINGS_AT_ONCE) await new Promise<void>((resolve) => state.waiting.push(resolve))
  else state.active++
  try {
    return await list()
  } finally {
    const next = state.waiting.shift()
    if (next === undefined) state.active--
    else next()
  }
}

/**
 * `broker.pending(filter)` with its listing's `truncated`. A caller arriving while a listing
 * of its filter runs joins the one queued behind it (never an older answer), and at most
 * {@link MAX_LISTINGS_AT_ONCE} listings read at once (each reads up to 1,000 records and
 * 8 MiB). The broker filters while it reads; here again for a broker that ignores it.
 */
export function listPending(broker: ApprovalBroker, filter: ListedFor = {}): Promise<ApprovalsListed> {
  let state = listings.get(broker)
  if (state === undefined) listings.set(broker, (state = { byFilter: new Map(), active: 0, waiting: [] }))
  const shared = state
  const { agent, run } = filter
  const name = JSON.stringify([agent ?? null, run ?? null])
  let slot = shared.byFilter.get(name)
  if (slot === undefined) shared.byFilter.set(name, (slot = {}))
  const own = slot
  if (own.queued !== undefined) return own.queued
  const options = { ...(agent === undefined ? {} : { agent }), ...(run === undefined ? {} : { run }) }
  const start = (): Promise<ApprovalsListed> => {
    const listed = inTurn(shared, () => broker.pending(agent === undefined && run === undefined ? undefined : options)).then((found) => ({
      approvals: found.filter((approval) => (agent === undefined || approval.agent === agent) && (run === undefined || approvalOfRun(approval, run))),
        truncated: (found.listing as ApprovalListing | undefined)?.truncated === true,
    }))
    own.running = listed
    const clear = (): void => {
      if (own.running === listed) own.running = undefined
      if (own.running === undefined && own.queued === undefined && shared.byFilter.get(name) === own) shared.byFilter.delete(name)
    }
    void listed.then(clear, clear)
    return listed
  }
  if (own.running === undefined) return start()
  const queued = own.running.then(
    () => undefined,
    () => undefined,
  ).then(() => {
    own.queued = undefined
    return start()
  })
  own.queued = queued
  return queued
}

/**
 * `GET /v1/approvals[?agent=]`: the open requests (of the agent `agentOf` reads, as every
 * route does), oldest first, each with its `principal`; `truncated: true` when the listing
 * stopped at a bound (docs/http-api.md).
 */
export function listApprovals(broker: ApprovalBroker, agentOf: (c: Context) => string | undefined): Handler {
  return async (c) => {
    const { approvals, truncated } = await listPending(broker, { agent: agentOf(c) })
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

export { approvalOfRun }

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
