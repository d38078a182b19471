/**
 * Who decided an approval, as telemetry may say it: the role of the deciding principal
 * (`approve`, `admin`), never a token or a principal id. The broker notes it per request.
 * @module
 */

/** Roles a decision may be attributed to: a short lower-case label, nothing a client wrote. */
const ROLE = /^[a-z]{1,16}$/

/** The role that decided each request object the registry handed a handler (gone with the request). */
const deciders = new WeakMap<object, string>()

/** Whether `role` is a label a decision may carry (a stored settlement is read back through this). */
export function isDeciderRole(role: unknown): role is string {
  return typeof role === 'string' && ROLE.test(role)
}

/** Notes that `role` decided `request` (the object the approval handler was called with); anything else is ignored. */
export function noteDecider(request: unknown, role: string | undefined): void {
  if (typeof request === 'object' && request !== null && isDeciderRole(role)) deciders.set(request, role)
}

/** The role that decided `request`, when the handler's broker noted one. */
export function deciderOf(request: object): string | undefined {
  return deciders.get(request)
}
