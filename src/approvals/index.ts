/**
 * Human approval for `ask` decisions: a broker that holds each asked call as a pending
 * request in a `DurableStore` (memory, or shared by several processes) until a person
 * decides it, it expires, or the call is cancelled. Platform-neutral.
 * @module
 */
export {
  createApprovalBroker,
  DEFAULT_APPROVAL_POLL_INTERVAL_MS,
  DEFAULT_APPROVAL_RETAIN_SETTLED_MS,
  DEFAULT_APPROVAL_TIMEOUT_MS,
  MAX_LISTED_APPROVALS,
  MAX_PENDING_PLAN_CALLS,
} from './broker.js'
export { renderApprovalPlan } from './render-plan.js'
export { runOfOpenApproval } from './_store-record.js'
export { MAX_APPROVAL_REASON_LENGTH } from './decision.js'
export { PREVIEW_TIMEOUT_MS } from './preview.js'
export {
  DEFAULT_APPROVAL_RENDER_BYTES,
  DEFAULT_PREVIEW_RENDER_BYTES,
  renderApprovalArguments,
  renderApprovalPreview,
  undeclaredArgumentPaths,
  type ApprovalRenderOptions,
  type ApprovalRenderTool,
  type RenderedApprovalArguments,
} from './render.js'
export type * from './types.js'
