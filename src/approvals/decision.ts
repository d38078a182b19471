/**
 * Strict reading of a decision body from a person's client: exactly
 * `{ decision: 'allow' | 'deny', reason?: string }`, read through descriptors (no getter runs).
 *
 * @module
 */
import type { ApprovalDecisionInput } from './types.js'

/** The longest `reason` a decision may carry: it reaches the model verbatim. */
export const MAX_APPROVAL_REASON_LENGTH = 2000

const FIELDS = new Set(['decision', 'reason'])

/** A decision body that was read successfully, or why it was refused. */
export type ParsedDecision = { readonly ok: true; readonly value: ApprovalDecisionInput } | { readonly ok: false; readonly message: string }

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value
}

/** A data property's value, or why it cannot be read as one (an accessor is refused unrun). */
function ownData(body: object, key: string): { readonly value: unknown } | string {
  const descriptor = Object.getOwnPropertyDescriptor(body, key)
  if (descriptor === undefined) return { value: undefined }
  if (!('value' in descriptor)) return `"${key}" must be a plain data property, not an accessor`
  return { value: descriptor.value }
}

function readBody(body: unknown): ParsedDecision {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { ok: false, message: `the decision must be an object { decision, reason? } (got ${show(body)})` }
  }
  const proto = Object.getPrototypeOf(body)
  if (proto !== Object.prototype && proto !== null) return { ok: false, message: 'the decision must be a plain object' }
  for (const key of Object.keys(body)) {
    if (!FIELDS.has(key)) return { ok: false, message: `unknown field ${JSON.stringify(key)} (allowed: decision, reason)` }
  }
  const decision = ownData(body, 'decision')
  if (typeof decision === 'string') return { ok: false, message: decision }
  if (decision.value !== 'allow' && decision.value !== 'deny') {
    return { ok: false, message: `"decision" must be "allow" or "deny" (got ${show(decision.value)})` }
  }
  const reason = ownData(body, 'reason')
  if (typeof reason === 'string') return { ok: false, message: reason }
  if (reason.value === undefined) return { ok: true, value: Object.freeze({ decision: decision.value }) }
  if (typeof reason.value !== 'string') return { ok: false, message: `"reason" must be a string (got ${show(reason.value)})` }
  if (reason.value.length > MAX_APPROVAL_REASON_LENGTH) {
    return { ok: false, message: `"reason" is too long (${reason.value.length} characters; at most ${MAX_APPROVAL_REASON_LENGTH})` }
  }
  return { ok: true, value: Object.freeze({ decision: decision.value, reason: reason.value }) }
}

/**
 * Reads a decision body strictly: a plain object whose own enumerable keys are only
 * `decision` (exactly `'allow'` or `'deny'`) and optionally `reason` (a string of at
 * most {@link MAX_APPROVAL_REASON_LENGTH} characters; `undefined` counts as absent).
 * Never throws: a body that throws while inspected (a hostile Proxy) is refused too.
 *
 * @example
 * ```ts
 * parseDecision({ decision: 'deny', reason: 'not this file' }) // { ok: true, value: … }
 * parseDecision({ decision: 'yes' }) // { ok: false, message: '"decision" must be "allow" or "deny" (got "yes")' }
 * ```
 */
export function parseDecision(body: unknown): ParsedDecision {
  try {
    return readBody(body)
  } catch {
    // The thrown value is the caller's too: reading its message could throw again.
    return { ok: false, message: 'the decision could not be read (inspecting it threw)' }
  }
}
