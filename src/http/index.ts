/**
 * `toolyard/http`: the Hono app serving a tool runtime over HTTP, the session-log hub
 * that lets it stream Code Mode sub-calls, and the error vocabulary of the API.
 *
 * @module
 */
export { createToolsApp } from './app.js'
export type { ToolsAppCorsOptions, ToolsAppOptions, ToolsListBody } from './app.js'
export { createSessionLogHub } from './session-log-hub.js'
export type {
  CodeLogEvent,
  SessionLogHub,
  SessionLogHubEvent,
  SessionLogHubListener,
  SessionLogHubOptions,
  SessionLogSubscribeOptions,
} from './session-log-hub.js'
export { httpErrorResponse, httpErrorStatus } from './http-errors.js'
export type { HttpErrorBody, HttpErrorCode } from './http-errors.js'
export { bearerToken, digestsEqual, sha256, timingSafeEqualText } from './auth.js'
export { isJsonContentType, readJsonBody } from './request-body.js'
export type { JsonBodyOutcome } from './request-body.js'
