/**
 * A run's journal: everything that entered its QuickJS VM, in order.
 * @module
 */

import type { ParkedRunState, ParkedVm, RunJournal } from './contract.js'

export type { ParkedRunState, ParkedVm, RunJournal } from './contract.js'

/** The most UTF-16 code units a journal keeps (messages, readings and call keys together). */
export const MAX_JOURNAL_CHARS = 4 * 1024 * 1024

/**
 * A run parks only if replaying it could cost this many times the compute it has been
 * charged and still fit its replay budget (`maxReplayMs`): the meter is a clock, and a
 * replay on a loaded machine measured slower than the original (1.2× and more at a load
 * of 13 to 24 on 2 cores), and a replay stopped by the budget drops a decided call's result.
 */
export const REPLAY_MARGIN = 2

/**
 * The message of a resume refused or stopped by the run's replay budget (`maxReplayMs`): each
 * resume replays the whole journal in a fresh VM, and that compute is the host's.
 */
export function replayBudgetMessage(leftMs: number, expectedMs?: number): string {
  const left = Math.max(0, Math.round(leftMs))
  return expectedMs === undefined
    ? `replay budget exhausted: replaying the parked run's journal took more than the ${left} ms of maxReplayMs it had left`
    : `replay budget exhausted: resuming would replay about ${Math.round(expectedMs)} ms of the run's compute, and ${left} ms of maxReplayMs are left`
}

/** The one-character code of each journaled service. */
export const READ_CODES = { now: 'n', date: 'd', rand: 'r', random: 'b' } as const

/** An empty journal. */
export function newJournal(): RunJournal {
  return { inputs: [], reads: [], ops: '', calls: [] }
}

/**
 * The key a call is journaled under: its binding's name and a 32-bit FNV-1a hash of its whole
 * message (id, binding and arguments).
 */
export function callKey(json: string): string {
  let hash = 0x811c9dc5
  for (let i = 0; i < json.length; i++) {
    hash ^= json.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  const name = /"global":("(?:[^"\\]|\\.){0,200}"),"name":("(?:[^"\\]|\\.){0,200}")/.exec(json.slice(0, 512))
  const label = name === null ? 'call' : `${JSON.parse(name[1]!) as string}.${JSON.parse(name[2]!) as string}`
  return `${label}#${(hash >>> 0).toString(36)}`
}

/**
 * Whether a parked run's waiting call is the one its journal recorded: the key of the message the
 * VM would have posted for it (id, binding, name and arguments, as the VM's JSON) is among the
 * journal's calls.
 */
export function journalHoldsCall(journal: RunJournal, call: { readonly id: number; readonly global: string; readonly name: string; readonly args: unknown }): boolean {
  let json: string | undefined
  try {
    json = JSON.stringify({ type: 'call', id: call.id, global: call.global, name: call.name, args: call.args })
  } catch {
    return false
  }
  return json !== undefined && journal.calls.includes(callKey(json))
}

/** Checks a parked VM that came back from a store or a peer: the shape only (its content is the host's own record). */
export function isParkedVm(value: unknown): value is ParkedVm {
  if (typeof value !== 'object' || value === null) return false
  const v = value as Partial<ParkedVm>
  const j = v.journal as Partial<RunJournal> | undefined
  return (
    typeof v.clockMs === 'number' &&
    Array.isArray(v.timers) &&
    v.timers.every((t) => Array.isArray(t) && t.length === 2 && typeof t[0] === 'number' && typeof t[1] === 'number') &&
    typeof j === 'object' &&
    j !== null &&
    Array.isArray(j.inputs) &&
    j.inputs.every((x) => typeof x === 'string' || typeof x === 'number') &&
    Array.isArray(j.reads) &&
    j.reads.every((x) => typeof x === 'string' || typeof x === 'number') &&
    typeof j.ops === 'string' &&
    j.ops.length === j.reads.length &&
    Array.isArray(j.calls) &&
    j.calls.every((x) => typeof x === 'string')
  )
}

/** Checks a parked run's state that came back from a store: the shape only, linear in its size. */
export function isParkedRunState(value: unknown): value is ParkedRunState {
  if (typeof value !== 'object' || value === null) return false
  const v = value as Record<string, unknown>
  const num = (x: unknown): boolean => typeof x === 'number' && Number.isFinite(x) && x >= 0
  return (
    v.version === 1 &&
    isParkedVm(v.vm) &&
    Array.isArray(v.logs) &&
    v.logs.every((l) => typeof l === 'object' && l !== null && typeof (l as { text?: unknown }).text === 'string') &&
    num(v.logBytes) &&
    typeof v.logTruncated === 'boolean' &&
    num(v.busyMs) &&
    num(v.wallMs) &&
    num(v.lastCallId) &&
    (v.replayMs === undefined || num(v.replayMs)) &&
    Array.isArray(v.calls) &&
    v.calls.every((c) => {
      const call = c as Record<string, unknown> | null
      return typeof call === 'object' && call !== null && num(call.id) && typeof call.global === 'string' && typeof call.name === 'string'
    })
  )
}

/** The UTF-16 code units a journal holds (what {@link MAX_JOURNAL_CHARS} counts). */
export function journalChars(journal: RunJournal): number {
  let chars = 0
  for (const input of journal.inputs) chars += typeof input === 'string' ? input.length + 1 : 9
  for (const read of journal.reads) chars += typeof read === 'string' ? read.length + 1 : 9
  for (const call of journal.calls) chars += call.length + 1
  return chars
}
