/**
 * `createApprovalBroker()`: the product around the pipeline's `ask`, one implementation over
 * any `DurableStore` (`_store-broker.ts`; a memory store by default). `createToolRuntime({
 * approvals })` makes one; call it yourself only for your own `approval` handler.
 * @module
 */
import { readBrokerOptions } from './_request.js'
import { createStoredBroker } from './_store-broker.js'
import type { ApprovalBroker, ApprovalBrokerOptions } from './types.js'

export {
  DEFAULT_APPROVAL_POLL_INTERVAL_MS,
  DEFAULT_APPROVAL_RETAIN_SETTLED_MS,
  DEFAULT_APPROVAL_TIMEOUT_MS,
  MAX_PENDING_PLAN_CALLS,
} from './_request.js'
export { MAX_LISTED_APPROVALS } from './_store-broker.js'
export { approvalOfRun } from './_store-list.js'

/**
 * Creates an approval broker over `options.store` (a memory store of its own without one).
 * Its `handler` turns every call a `tools/pre-execute` gate answers with `ask` into a
 * request in the store, listed by `pending()` in every process sharing it, until
 * `decide()` answers it, `timeoutMs` passes (denied, "expired"), or the call's signal
 * aborts (withdrawn). A run's sub-call asked again under the same `callId` and arguments (a
 * run resumed after a restart) re-attaches to its request and decision, as does a host call
 * without a principal; a direct call from a remote client (it carries a principal and no run)
 * asks anew each time, so one Allow runs one call. At most 200 calls of one principal wait
 * in a broker at once (`MAX_WAITING_PER_PRINCIPAL`): past that its call is denied at once,
 * unasked. A decider pinned to an agent (`decide(id, input, { role, agent })`) decides only that
 * agent's requests; another's is `APPROVAL_NOT_FOUND`. Throws `ToolError('INVALID_OPTIONS')`
 * on bad options. Usually made by `createToolRuntime({ approvals })` as `runtime.approvals`.
 *
 * @example
 * ```ts
 * const broker = createApprovalBroker({ timeoutMs: 60_000 })
 * broker.subscribe((event) => {
 *   if (event.type === 'requested') console.log(`approve ${event.approval.name}?\n${event.approval.summary}`)
 * })
 * const [request] = await broker.pending()
 * await broker.decide(request.id, { decision: 'deny', reason: 'not today' })
 * // → the call fails with DENIED_BY_APPROVAL; its message carries "not today"
 * ```
 * @see docs/approvals.md
 */
export function createApprovalBroker(options?: ApprovalBrokerOptions): ApprovalBroker {
  const resolved = readBrokerOptions(options)
  return createStoredBroker(resolved, resolved.store)
}
