/**
 * Who may do what over HTTP: route roles, a `run` token's agent, who may read a run, client
 * call id namespaces and the principal of each call in flight.
 *
 * @module
 */
import type { MiddlewareHandler, Context } from 'hono'
import type { PendingApproval } from '../approvals/types.js'
import type { ScopeKey } from '../types.js'
import { hasRole, ROLES } from './auth.js'
import type { Principal, Role } from './auth.js'
import { HttpError } from './http-errors.js'
import { principalOf } from './_middleware.js'

/** Any authenticated principal (the metadata routes: tools, SDK, prompt, catalog). */
export const ANY_ROLE: readonly Role[] = ROLES

/** The request's principal; a route behind the gate always has one, so none is a bug, answered 500. */
export function requestPrincipal(c: Context): Principal {
  const principal = principalOf(c)
  if (principal === undefined) throw new Error('no principal: the route is not behind the gate')
  return principal
}

function roleList(roles: readonly Role[]): string {
  return roles.length === 1 ? `the ${roles[0]} role` : `the ${roles.slice(0, -1).join(', ')} or ${roles.at(-1)} role`
}

/**
 * Refuses, before anything is read, a principal that holds none of `roles` (`admin`
 * holds every role): 403 `FORBIDDEN` naming the missing role and the ones it has.
 */
export function requireRole(roles: readonly Role[]): MiddlewareHandler {
  return async (c, next) => {
    const principal = requestPrincipal(c)
    if (!roles.some((role) => hasRole(principal, role))) {
      throw new HttpError('FORBIDDEN', `${c.req.method} ${c.req.routePath} needs ${roleList(roles)}; this token has ${principal.roles.join(', ')}`)
    }
    await next()
  }
}

/**
 * The agent a request acts for: what it asked, unless its principal is pinned to one
 * (`tokens[].agent`): then that one (when it asked none), and 403 `FORBIDDEN` for another.
 */
export function agentFor(c: Context, requested: ScopeKey | undefined): ScopeKey | undefined {
  const pinned = requestPrincipal(c).agent
  if (pinned === undefined) return requested
  if (requested !== undefined && requested !== pinned) {
    throw new HttpError('FORBIDDEN', `this token acts for agent ${JSON.stringify(pinned)} only, not ${JSON.stringify(requested)}`)
  }
  return pinned
}

/**
 * Whether `principal` may read a run started by `owner` (`undefined`: a record written
 * before runs had principals) for `agent` (`undefined`: the global layer): its own runs,
 * any as `admin`, and with `approve` the runs that asked a person (`asked`: the runs its
 * approvals belong to, also once decided, so a person can follow a decision to its
 * effect), of its pinned agent only when it is pinned to one.
 */
export function canReadRun(principal: Principal, owner: string | undefined, asked: boolean, agent: ScopeKey | undefined): boolean {
  if (principal.roles.includes('admin') || (owner !== undefined && owner === principal.id)) return true
  return asked && hasRole(principal, 'approve') && (principal.agent === undefined || principal.agent === agent)
}

/** Whether `principal` may cancel a run started by `owner`: its own, or any as `admin`. */
export function canCancelRun(principal: Principal, owner: string | undefined): boolean {
  return principal.roles.includes('admin') || (owner !== undefined && owner === principal.id)
}

/** Segments of the ids the server gives a run's sub-calls and plan requests: never part of a client's id. */
const SERVER_SEGMENT = /:(?:code|plan)(?::|$)/

/**
 * A client's `callId` in its principal's namespace, `client.<principal>.<id>`: it can
 * never equal an id the server mints (`http-run-<uuid>`, `http-<uuid>`, `mcp-<uuid>`) or a
 * run's sub-call (`<run>:code:<n>`), and two principals never share one. An id with a
 * `:code:` or `:plan:` segment is refused outright (400): it reads as a run's sub-call.
 */
export function clientCallId(principal: Principal, id: string): string {
  if (SERVER_SEGMENT.test(id)) throw new HttpError('INVALID_REQUEST', 'callId must not contain a ":code:" or ":plan:" segment: those name the server\'s own sub-calls of a run')
  return `client.${principal.id}.${id}`
}
