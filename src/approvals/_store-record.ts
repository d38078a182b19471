/**
 * How a store broker keeps a request: its keys (one hash of the call), its ids and its JSON
 * records, checked like any input when read back. Private (docs/approvals.md).
 *
 * @module
 */
import { hashParts, isArgumentsHash } from '../durable/call-key.js'
import type { DurableStore } from '../durable/store.js'
import type { JsonValue } from '../json/json-value.js'
import { adoptParsedJson } from '../json/lossless.js'
import { nestsDeeperThan } from '../json/nesting.js'
import { scanJsonText } from '../json/scan.js'
import { isDeciderRole } from '../telemetry/decider.js'
import { MAX_PENDING_PLAN_CALLS, PRINCIPAL_LABEL, type RequestFields, type Settlement } from './_request.js'
import { MAX_APPROVAL_REASON_LENGTH } from './decision.js'
import type { PendingApproval, PendingPlan } from './types.js'

/** Prefix of every key the broker writes. */
export const APPROVAL_KEY_PREFIX = 'approvals/'
/** Prefix of the open requests' keys. */
export const OPEN_PREFIX = `${APPROVAL_KEY_PREFIX}open/`
/** Prefix of the settled requests' keys. */
export const DONE_PREFIX = `${APPROVAL_KEY_PREFIX}done/`
/** Prefix of the settlement markers: `<epoch ms, 9 base-36 digits>-<hash>`, so they list in time order (_store-markers.ts). */
export const SETTLED_PREFIX = `${APPROVAL_KEY_PREFIX}settled/`

/** The largest record written or read, in UTF-8 bytes: a record holds what `pending()` shows, and that is bounded. */
export const MAX_APPROVAL_RECORD_BYTES = 64 * 1024
/** The largest `arguments` kept in a record (JSON bytes, counted without serializing); larger ones are left out. */
export const MAX_STORED_ARGUMENTS_BYTES = 16 * 1024
/** The deepest `arguments` kept in a record. */
export const MAX_STORED_ARGUMENTS_DEPTH = 64
/** JSON values a record may hold before it is parsed (a 64 KiB record of `[]` holds 32,768). */
const MAX_RECORD_NODES = 40_000
/** Nesting a record may have before it is parsed: the arguments' levels plus the record's own. */
const MAX_RECORD_DEPTH = MAX_STORED_ARGUMENTS_DEPTH + 6

const FORMAT = 'toolyard-approval/1'
const HASH = /^[0-9a-f]{32}$/
const ID = /^([0-9a-f]{32})\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** A settlement as the store keeps it: how, and when (epoch ms). */
export type StoredSettlement = Settlement & { readonly at: number }

/** A settled request: the request as it was open, and how it ended. */
export interface DoneRecord {
  readonly approval: PendingApproval
  readonly settled: StoredSettlement
}

/** What binds a stored request to one call (a decision answers only a call that matches every part). */
export type CallBinding = Pick<RequestFields, 'kind' | 'agent' | 'callId' | 'parentCallId' | 'name' | 'argumentsHash'>

/**
 * The hash that names a call's keys: SHA-256 of the call's binding and its run's secret,
 * 32 hex digits. The same call asked again (a resumed run re-issues its calls with their
 * ids, arguments and secret) gets the same keys; the same id with other arguments, another
 * tool, another agent, or from outside the run (no secret, or another) does not.
 */
export function callHash(fields: CallBinding, runKey: string | undefined): Promise<string> {
  const { kind, agent, callId, parentCallId, name, argumentsHash } = fields
  return hashParts([kind, agent ?? null, callId, parentCallId ?? null, runKey ?? null, name, argumentsHash ?? null], 32)
}

/** The key of a call's open request. */
export const openKey = (hash: string): string => `${OPEN_PREFIX}${hash}`
/** The key of a call's settlement. */
export const doneKey = (hash: string): string => `${DONE_PREFIX}${hash}`

/** Base-36 digits of a marker's time: 36^9 ms reach the year 5138, so every time has the same width and keys sort by time. */
const TIME_DIGITS = 9
const MARKER = /^([0-9a-z]{9})-([0-9a-f]{32})$/

/** `at` (epoch ms) as a marker's fixed-width time. */
export const markerTime = (at: number): string => Math.max(0, Math.floor(at)).toString(36).padStart(TIME_DIGITS, '0')
/** The key of the marker saying that the call of `hash` was settled at `at` (epoch ms, the writer's clock). */
export const markerKey = (at: number, hash: string): string => `${SETTLED_PREFIX}${markerTime(at)}-${hash}`

/** The time and hash a marker key names, or `undefined` for a key that is not one. */
export function readMarkerKey(key: string): { readonly at: number; readonly hash: string } | undefined {
  const match = key.startsWith(SETTLED_PREFIX) ? MARKER.exec(key.slice(SETTLED_PREFIX.length)) : null
  return match === null ? undefined : { at: parseInt(match[1]!, 36), hash: match[2]! }
}

/**
 * Prefix of the keys that count each principal's open requests across every process sharing
 * the store: `approvals/by/<principal>/<expiry, 9 base-36 digits>-<hash>`, empty values
 * (_store-wait.ts, `MAX_WAITING_PER_PRINCIPAL`). At most 13 + 64 + 1 + 9 + 1 + 32 = 120 characters.
 */
export const BY_PRINCIPAL_PREFIX = `${APPROVAL_KEY_PREFIX}by/`
/** The key counting the open request of `hash`, opened for `principal`, expiring at `expiresAt` (epoch ms). */
export const principalKey = (principal: string, expiresAt: number, hash: string): string => `${BY_PRINCIPAL_PREFIX}${principal}/${markerTime(expiresAt)}-${hash}`

/**
 * Prefix of the keys that order the open requests by expiry for `pending()`:
 * `approvals/exp/<expiry, 9 base-36 digits>-<hash>`, empty values, written after the open
 * record and removed before it (_store-list.ts). The open keys list in hash order.
 */
export const BY_EXPIRY_PREFIX = `${APPROVAL_KEY_PREFIX}exp/`
/** The key placing the open request of `hash`, expiring at `expiresAt` (epoch ms), in the listing's order. */
export const expiryKey = (expiresAt: number, hash: string): string => `${BY_EXPIRY_PREFIX}${markerTime(expiresAt)}-${hash}`

/** The expiry and hash an expiry key names, or `undefined` for a key that is not one. */
export function readExpiryKey(key: string): { readonly at: number; readonly hash: string } | undefined {
  const match = key.startsWith(BY_EXPIRY_PREFIX) ? MARKER.exec(key.slice(BY_EXPIRY_PREFIX.length)) : null
  return match === null ? undefined : { at: parseInt(match[1]!, 36), hash: match[2]! }
}

/** A fresh approval id for the call of `hash`: `<hash>.<uuid>`. */
export function newApprovalId(hash: string): string {
  return `${hash}.${crypto.randomUUID()}`
}

/** The call hash inside an approval id, or `undefined` when `id` is not one this broker makes. */
export function hashOfId(id: string): string | undefined {
  return id.length <= 80 ? ID.exec(id)?.[1] : undefined
}

/** The hash a key of either prefix names, or `undefined`. */
export function hashOfKey(key: string): string | undefined {
  const hash = key.startsWith(OPEN_PREFIX) ? key.slice(OPEN_PREFIX.length) : key.startsWith(DONE_PREFIX) ? key.slice(DONE_PREFIX.length) : ''
  return HASH.test(hash) ? hash : undefined
}

/** Whether `value` serializes to at most `maxBytes` of JSON, counted without serializing (strings by their length, a bound below UTF-8). */
function jsonFits(value: unknown, maxBytes: number): boolean {
  let bytes = 0
  const stack: unknown[] = [value]
  while (stack.length > 0) {
    const item = stack.pop()
    if (typeof item === 'string') bytes += item.length + 2
    else if (typeof item !== 'object' || item === null) bytes += 24
    else if (Array.isArray(item)) {
      bytes += 2 + item.length
      for (const child of item) stack.push(child)
    } else {
      for (const [key, child] of Object.entries(item)) {
        bytes += key.length + 4
        stack.push(child)
      }
      bytes += 2
    }
    if (bytes > maxBytes) return false
  }
  return true
}

/** The fields as a record keeps them: `arguments` only when small and shallow enough, else `null` with `argumentsOmitted`. */
export function storedFields(fields: RequestFields): RequestFields {
  const keep = !nestsDeeperThan(fields.arguments, MAX_STORED_ARGUMENTS_DEPTH) && jsonFits(fields.arguments, MAX_STORED_ARGUMENTS_BYTES)
  if (keep) return fields
  const { arguments: _dropped, ...rest } = fields
  return { ...rest, arguments: null, argumentsOmitted: true }
}

const encoder = new TextEncoder()

/**
 * Whether `text` is at most {@link MAX_APPROVAL_RECORD_BYTES} UTF-8 bytes. Encodes only
 * when the answer is in doubt: a UTF-16 unit is 1 to 3 UTF-8 bytes, so a text of at most a
 * third of the cap fits whatever it holds, and one longer than the cap never does.
 */
function fitsRecord(text: string): boolean {
  if (text.length > MAX_APPROVAL_RECORD_BYTES) return false
  return text.length * 3 <= MAX_APPROVAL_RECORD_BYTES || encoder.encode(text).length <= MAX_APPROVAL_RECORD_BYTES
}

/** Serializes an open request; `undefined` when it is larger than {@link MAX_APPROVAL_RECORD_BYTES}. */
export function encodeOpen(approval: PendingApproval): string | undefined {
  const text = JSON.stringify({ format: FORMAT, approval })
  return fitsRecord(text) ? text : undefined
}

/** Serializes a settlement (the open request it settles was at most the cap; a reason adds at most 2,000 characters). */
export function encodeDone(record: DoneRecord): string {
  return JSON.stringify({ format: FORMAT, approval: record.approval, settled: record.settled })
}

/** Parses a record's text within the bounds, or `undefined`. */
function parseBounded(text: string): Record<string, unknown> | undefined {
  // Characters, not bytes: what bounds the parser's work is the text's length.
  if (text.length > MAX_APPROVAL_RECORD_BYTES + 8 * 1024) return undefined
  const scan = scanJsonText(text, 0, text.length, MAX_RECORD_NODES, MAX_RECORD_DEPTH)
  if (scan.nodes > MAX_RECORD_NODES || scan.depth > MAX_RECORD_DEPTH) return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return undefined
  }
  return isPlainRecord(parsed) && parsed.format === FORMAT ? parsed : undefined
}

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function hasOnly(value: Record<string, unknown>, allowed: ReadonlySet<string>): boolean {
  return Object.keys(value).every((key) => allowed.has(key))
}

const isTime = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0
const isCount = isTime
const optionalString = (value: unknown): boolean => value === undefined || typeof value === 'string'

/** A rendered preview is at most 4,096 UTF-8 bytes: never more characters than that. */
const MAX_STORED_PREVIEW_CHARS = 4096

const APPROVAL_KEYS = new Set(['id', 'callId', 'parentCallId', 'agent', 'principal', 'kind', 'name', 'arguments', 'argumentsHash', 'argumentsOmitted', 'summary', 'preview', 'plan', 'reason', 'requestedAt', 'expiresAt'])
const PLAN_KEYS = new Set(['codeLength', 'calls', 'moreCalls', 'asking', 'dynamic'])

function readPlan(value: unknown): PendingPlan | undefined {
  if (!isPlainRecord(value) || !hasOnly(value, PLAN_KEYS)) return undefined
  const { codeLength, calls, moreCalls, asking, dynamic } = value
  if (!isCount(codeLength) || !isCount(moreCalls) || typeof dynamic !== 'boolean') return undefined
  if (!Array.isArray(calls) || calls.length > MAX_PENDING_PLAN_CALLS || !Array.isArray(asking) || asking.length > MAX_PENDING_PLAN_CALLS) return undefined
  const planned: { readonly name: string; readonly line: number }[] = []
  for (const call of calls as unknown[]) {
    if (!isPlainRecord(call) || typeof call.name !== 'string' || !isCount(call.line) || Object.keys(call).length !== 2) return undefined
    planned.push(Object.freeze({ name: call.name, line: call.line }))
  }
  const asks: { readonly name: string; readonly reason?: string }[] = []
  for (const ask of asking as unknown[]) {
    if (!isPlainRecord(ask) || typeof ask.name !== 'string' || !optionalString(ask.reason) || !hasOnly(ask, new Set(['name', 'reason']))) return undefined
    asks.push(Object.freeze({ name: ask.name, ...(ask.reason === undefined ? {} : { reason: ask.reason as string }) }))
  }
  return Object.freeze({ codeLength, calls: Object.freeze(planned), moreCalls, asking: Object.freeze(asks), dynamic })
}

/** Checks an approval read from the store and returns a deep-frozen copy, or `undefined`. */
function readApproval(value: unknown, hash: string): PendingApproval | undefined {
  if (!isPlainRecord(value) || !hasOnly(value, APPROVAL_KEYS)) return undefined
  const { id, callId, parentCallId, agent, kind, name, argumentsOmitted, summary, reason, requestedAt, expiresAt } = value
  if (typeof id !== 'string' || hashOfId(id) !== hash) return undefined
  if (typeof callId !== 'string' || typeof name !== 'string' || typeof summary !== 'string') return undefined
  if (!optionalString(parentCallId) || !optionalString(agent) || !optionalString(reason)) return undefined
  const principal = value.principal
  if (principal !== undefined && (typeof principal !== 'string' || !PRINCIPAL_LABEL.test(principal))) return undefined
  const preview = value.preview
  if (preview !== undefined && (typeof preview !== 'string' || preview.length > MAX_STORED_PREVIEW_CHARS)) return undefined
  if (kind !== 'call' && kind !== 'plan') return undefined
  if (!isTime(requestedAt) || !isTime(expiresAt) || expiresAt < requestedAt) return undefined
  if (argumentsOmitted !== undefined && (argumentsOmitted !== true || value.arguments !== null)) return undefined
  const bound = value.argumentsHash
  if (bound !== undefined && !isArgumentsHash(bound)) return undefined
  const args = value.arguments
  if (args === undefined || adoptParsedJson(args) === undefined) return undefined
  const plan = kind === 'plan' ? readPlan(value.plan) : undefined
  if ((kind === 'plan') !== (plan !== undefined) || (kind === 'call' && value.plan !== undefined)) return undefined
  return Object.freeze({
    id,
    callId,
    ...(parentCallId === undefined ? {} : { parentCallId: parentCallId as string }),
    ...(agent === undefined ? {} : { agent: agent as string }),
    ...(principal === undefined ? {} : { principal }),
    kind,
    name,
    arguments: args as JsonValue,
    ...(bound === undefined ? {} : { argumentsHash: bound }),
    ...(argumentsOmitted === true ? { argumentsOmitted: true as const } : {}),
    summary,
    ...(preview === undefined ? {} : { preview }),
    ...(plan === undefined ? {} : { plan }),
    ...(reason === undefined ? {} : { reason: reason as string }),
    requestedAt,
    expiresAt,
  })
}

function readSettlement(value: unknown): StoredSettlement | undefined {
  if (!isPlainRecord(value) || !hasOnly(value, new Set(['kind', 'decision', 'reason', 'byDisposal', 'role', 'at'])) || !isTime(value.at)) return undefined
  const { kind, decision, reason, byDisposal, role, at } = value
  if (kind === 'expired' || kind === 'withdrawn') {
    return decision === undefined && reason === undefined && byDisposal === undefined && role === undefined ? Object.freeze({ kind, at }) : undefined
  }
  if (kind !== 'decided' || (decision !== 'allow' && decision !== 'deny') || (byDisposal !== undefined && byDisposal !== true)) return undefined
  if (reason !== undefined && (typeof reason !== 'string' || reason.length > MAX_APPROVAL_REASON_LENGTH)) return undefined
  if (role !== undefined && !isDeciderRole(role)) return undefined
  return Object.freeze({
    kind,
    decision,
    ...(reason === undefined ? {} : { reason }),
    ...(byDisposal === true ? { byDisposal: true as const } : {}),
    ...(role === undefined ? {} : { role }),
    at,
  })
}

/** Reads an open request stored under the key of `hash`; `undefined` when malformed. */
export function decodeOpen(text: string, hash: string): PendingApproval | undefined {
  const record = parseBounded(text)
  if (record === undefined || !hasOnly(record, new Set(['format', 'approval']))) return undefined
  return readApproval(record.approval, hash)
}

/**
 * The run an open request in `store` belongs to (a plan's own call id, a call's
 * `parentCallId`), or `undefined` for an unknown, settled or malformed one: routes a
 * decision to the process or object that runs it (the edge Worker).
 */
export async function runOfOpenApproval(store: DurableStore, id: string): Promise<string | undefined> {
  const hash = hashOfId(id)
  const open = hash === undefined ? undefined : await store.get(OPEN_PREFIX + hash)
  const approval = open === undefined ? undefined : decodeOpen(open.value, hash!)
  return approval?.kind === 'plan' ? approval.callId : approval?.parentCallId
}

/** Reads a settlement stored under the key of `hash`; `undefined` when malformed. */
export function decodeDone(text: string, hash: string): DoneRecord | undefined {
  const record = parseBounded(text)
  if (record === undefined || !hasOnly(record, new Set(['format', 'approval', 'settled']))) return undefined
  const approval = readApproval(record.approval, hash)
  const settled = readSettlement(record.settled)
  return approval === undefined || settled === undefined ? undefined : Object.freeze({ approval, settled })
}

/**
 * Whether a stored approval is the one `fields` ask for: every part of the binding is
 * equal (the key hash could collide; the fields cannot). A record without an arguments
 * hash (written before decisions were bound to arguments) answers no call.
 */
export function sameCall(approval: PendingApproval, fields: CallBinding): boolean {
  return (
    approval.kind === fields.kind &&
    approval.callId === fields.callId &&
    approval.agent === fields.agent &&
    approval.parentCallId === fields.parentCallId &&
    approval.name === fields.name &&
    approval.argumentsHash !== undefined &&
    approval.argumentsHash === fields.argumentsHash
  )
}
