/**
 * `toolyard/http`: the Hono app serving a tool runtime over HTTP, the session-log hub
 * that lets it stream Code Mode sub-calls, and the error vocabulary of the API.
 *
 * @module
 */
export { createToolsApp } from './app.js'
export type { ToolsAppOptions, ToolsListBody } from './app.js'
export type { CorsOptions, ServerOptions } from './_server-options.js'
export { createSessionLogHub } from './session-log-hub.js'
export type {
  CodeLogEvent,
  SessionLogHub,
  SessionLogHubEvent,
  SessionLogHubListener,
  SessionLogHubOptions,
  SessionLogSubscribeOptions,
} from './session-log-hub.js'
export type { ApprovalSettledData } from './_approvals.js'
export { runsHeld } from './_runs.js'
export type { RunApproval, RunBody } from './_runs.js'
export { DEFAULT_MAX_EVENT_BYTES_PER_RUN, DEFAULT_MAX_RUNS, DEFAULT_MAX_RUN_TABLE_BYTES, DEFAULT_RUN_RETENTION_MS } from '../durable/run-table.js'
export type { RunRecordJson, RunStatus, RunTableHeld, RunTableOptions, StoredRunStatus } from '../durable/run-table.js'
export { HttpError, httpErrorHandler, httpErrorResponse, httpErrorStatus } from './http-errors.js'
export type { HttpErrorBody, HttpErrorCode, InternalErrorReporter } from './http-errors.js'
export { bearerToken, digestsEqual, ROLES, sha256, timingSafeEqualText } from './auth.js'
export type { AuthOptions, Principal, Role, TokenOptions } from './auth.js'
export { DEFAULT_MAX_BODY_BYTES, isJsonContentType, readJsonBody } from './request-body.js'
export { DEFAULT_MAX_STREAM_BACKLOG_BYTES, DEFAULT_STREAM_WRITE_TIMEOUT_MS } from './_sse-sender.js'
