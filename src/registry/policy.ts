/**
 * The policy stages of the pipeline, in their order: the `tools/pre-execute` gate (a waterfall
 * where the strictest decision wins and a denial is final), the monotonic guards (before approval,
 * so a guard-denied call never reaches a human), and approval for an `ask`.
 * @module
 */
import type { PreExecuteListener } from '../runtime-types.js'
import type { PreToolDecision, ToolExecutionResult } from '../types.js'
import { approve } from './approval.js'
import { ALLOW_DECISION, messageOf, type PipelineCall } from './call.js'
import { failure } from './results.js'

type PreRank = 0 | 1 | 2
const PRE_RANK: Record<PreToolDecision['kind'], PreRank> = { allow: 0, ask: 1, deny: 2 }

/** A listener's answer, copied and frozen (the next listener receives it), or undefined when malformed. */
export function checkPreDecision(value: unknown): PreToolDecision | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const kind = (value as { kind?: unknown }).kind
  if (kind === 'allow') return ALLOW_DECISION
  if (kind === 'deny') {
    const reason = (value as { reason?: unknown }).reason
    return typeof reason === 'string' ? Object.freeze({ kind: 'deny', reason }) : undefined
  }
  if (kind === 'ask') {
    const reason = (value as { reason?: unknown }).reason
    if (reason !== undefined && typeof reason !== 'string') return undefined
    return Object.freeze(reason === undefined ? { kind: 'ask' } : { kind: 'ask', reason })
  }
  return undefined
}

/** `tools/pre-execute`: the strictest decision wins; a denial ends the waterfall. */
export function preExecuteStage(call: PipelineCall): ToolExecutionResult | undefined | Promise<ToolExecutionResult | undefined> {
  const listeners = call.core.hooks.preExecute.list(call.agent)
  return listeners.length === 0 ? undefined : runPreExecute(call, listeners)
}

async function runPreExecute(call: PipelineCall, listeners: readonly PreExecuteListener[]): Promise<ToolExecutionResult | undefined> {
  for (const listener of listeners) {
    let next: unknown
    try {
      next = await listener(call.decision, call.execution)
    } catch (error) {
      return failure('DENIED_BY_GATE', `a tools/pre-execute listener failed (denied): ${messageOf(error)}`)
    }
    const checked = checkPreDecision(next)
    if (checked === undefined) return failure('DENIED_BY_GATE', 'a tools/pre-execute listener returned a malformed decision (denied)')
    if (PRE_RANK[checked.kind] >= PRE_RANK[call.decision.kind]) call.decision = checked
    const decision = call.decision
    if (decision.kind === 'deny') return failure('DENIED_BY_GATE', decision.reason === '' ? 'denied by policy' : decision.reason)
  }
  return undefined
}

/** Guards: monotonic (any verdict denies); run before approval so a denied call never reaches a human. */
export function guardsStage(call: PipelineCall): ToolExecutionResult | undefined {
  for (const guard of call.core.guards.list(call.agent)) {
    let verdict: unknown
    try {
      verdict = guard(call.execution)
    } catch (error) {
      return failure('DENIED_BY_GUARD', `a guard failed (denied): ${messageOf(error)}`)
    }
    if (verdict === undefined) continue
    return failure('DENIED_BY_GUARD', typeof verdict === 'string' ? (verdict === '' ? 'denied by a guard' : verdict) : 'a guard returned a non-string verdict (denied)')
  }
  return undefined
}

/** Approval for an `ask` (`approval.ts`): absent handler, refusal or failure deny; cancellation while waiting aborts. */
export function approvalStage(call: PipelineCall): ToolExecutionResult | undefined | Promise<ToolExecutionResult | undefined> {
  return call.decision.kind === 'ask' ? approve(call, call.decision.reason) : undefined
}
