/**
 * Plan approval: before a `run_code` program runs, one request of kind `plan` asks a person about
 * every planned tool whose gate asks.
 * @module
 */
import { planCallsShown } from '../approvals/render-plan.js'
import { ToolError } from '../errors.js'
import { deciderOf } from '../telemetry/decider.js'
import { extractPlan, extractPythonPlan } from '../preflight/plan.js'
import type { PlannedCall, PreflightPlan } from '../preflight/types.js'
import type { PlanApprovalDecisionEvent, PlanApprovalRequestEvent, SessionLogEvent } from '../runtime-types.js'
import { boundPlanForLog } from '../session-log.js'
import type { ApprovalHandler, ApprovalPlan, ApprovalRequest, PreToolDecision, ToolExecution, ToolExecutionToken } from '../types.js'
import { ALLOW_DECISION, messageOf } from './call.js'
import type { RegistryContext } from './context.js'
import { grantPlan } from './approval.js'
import { checkPreDecision } from './policy.js'

/** Whether `handler` takes plan requests (`handler.acceptsPlans === true`). */
export function acceptsPlans(handler: ApprovalHandler | undefined): handler is ApprovalHandler {
  return typeof handler === 'function' && (handler as { acceptsPlans?: unknown }).acceptsPlans === true
}

const EMPTY_ARGS = Object.freeze({})

/**
 * The longest program whose plan is read in the calling thread (no threaded preflight engine), as
 * long as the longest one the compiler is given: a longer one's plan is `dynamic`, so nothing is
 * pre-approved and each call that asks asks on its own.
 */
export const MAX_INLINE_PLAN_CHARS = 16 * 1024

/** How long plan approval waits for a threaded engine's plan before it reads the program as `dynamic`. */
export const PLAN_READ_TIMEOUT_MS = 10_000

/** A plan that could not be read: nothing listed, nothing pre-approved. */
const UNREAD_PLAN: PreflightPlan = Object.freeze({ calls: Object.freeze([]), dynamic: true })

const isPosition = (value: unknown): boolean => typeof value === 'number' && Number.isInteger(value) && value >= 1

/** A plan that crossed from a thread, checked for shape (anything else reads as {@link UNREAD_PLAN}). */
function checkedPlan(value: unknown): PreflightPlan {
  if (typeof value !== 'object' || value === null) return UNREAD_PLAN
  const { calls, dynamic } = value as { calls?: unknown; dynamic?: unknown }
  if (!Array.isArray(calls) || typeof dynamic !== 'boolean') return UNREAD_PLAN
  const checked: PlannedCall[] = []
  for (const c of calls as unknown[]) {
    const { name, line, column } = (typeof c === 'object' && c !== null ? c : {}) as Record<string, unknown>
    if (typeof name !== 'string' || !isPosition(line) || !isPosition(column)) return UNREAD_PLAN
    checked.push(Object.freeze({ name, line: line as number, column: column as number }))
  }
  return Object.freeze({ calls: Object.freeze(checked), dynamic })
}

/** The program's plan, read in the preflight thread when there is one, else in this thread within {@link MAX_INLINE_PLAN_CHARS}. */
async function readPlan(core: PlanApprovalContext, code: string, language: string, signal: AbortSignal): Promise<PreflightPlan> {
  const engine = core.options.preflightEngine
  if (engine === undefined || engine.where !== 'thread') {
    if (code.length > MAX_INLINE_PLAN_CHARS) return UNREAD_PLAN
    return (language === 'python' ? extractPythonPlan(code) : extractPlan(code)).plan
  }
  let timer: ReturnType<typeof setTimeout> | undefined
  let onAbort: (() => void) | undefined
  const gaveUp = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), PLAN_READ_TIMEOUT_MS)
    onAbort = () => resolve(undefined)
    signal.addEventListener('abort', onAbort, { once: true })
  })
  try {
    const answered = engine.analyze({ program: code, language, declarations: undefined }, signal).then((r) => r, () => undefined)
    const result = signal.aborted ? undefined : await Promise.race([answered, gaveUp])
    return checkedPlan(result?.plan)
  } catch {
    return UNREAD_PLAN
  } finally {
    clearTimeout(timer)
    signal.removeEventListener('abort', onAbort!)
  }
}

async function probe(core: PlanApprovalContext, run: ToolExecution, name: string, index: number): Promise<PreToolDecision | undefined> {
  const listeners = core.hooks.preExecute.list(run.agent)
  // Stryker disable next-line ConditionalExpression: without listeners the loop below never runs and the ALLOW decision comes back as undefined anyway
  if (listeners.length === 0) return undefined
  const execution: ToolExecution = Object.freeze({
    token: Symbol('toolyard.plan-probe') as ToolExecutionToken,
    callId: `${run.callId}:plan:${index}`,
    name,
    arguments: EMPTY_ARGS,
    signal: run.signal,
    ...(run.agent === undefined ? {} : { agent: run.agent }),
    parent: run.token,
    ...(run.principal === undefined ? {} : { principal: run.principal }),
    planProbe: true as const,
  })
  let decision: PreToolDecision = ALLOW_DECISION
  for (const listener of listeners) {
    let checked: PreToolDecision | undefined
    try {
      checked = checkPreDecision(await listener(decision, execution))
    }
    // Stryker disable next-line BlockStatement: an empty catch leaves checked undefined
    catch {
      return undefined
    }
    if (checked === undefined || checked.kind === 'deny') return undefined
    if (checked.kind === 'ask') decision = checked
  }
  // Stryker disable next-line ConditionalExpression: the one caller keeps a decision only when its kind is 'ask'
  return decision.kind === 'ask' ? decision : undefined
}

function log(core: PlanApprovalContext, event: SessionLogEvent): void {
  try {
    // Stryker disable next-line OptionalChaining: without a session log the TypeError lands in the catch below
    core.options.sessionLog?.append(event)
  } catch {
    // Ignored: the record is lost, the run goes on as decided.
  }
}

function verdictOf(handler: ApprovalHandler, request: ApprovalRequest, signal: AbortSignal): Promise<{ ok: true; value: unknown } | { ok: false; error: unknown }> {
  return new Promise((resolve) => {
    const onAbort = (): void => resolve({ ok: false, error: new ToolError('ABORTED_BEFORE_DISPATCH', 'the run was cancelled while its plan waited for approval') })
    if (signal.aborted) return onAbort()
    // Stryker disable next-line ObjectLiteral,BooleanLiteral: a signal fires 'abort' at most once
    signal.addEventListener('abort', onAbort, { once: true })
    new Promise((inner) => inner(handler(request))).then(
      (value) => resolve({ ok: true, value }),
      (error: unknown) => resolve({ ok: false, error }),
    ).finally(() => signal.removeEventListener('abort', onAbort))
  })
}

/** What `run_code` tells plan approval about the run it is about to start. */
export interface PlanApprovalInput {
  readonly code: string
  readonly description: string
  readonly language: string
  /** The `run_code` call (its body's context). */
  readonly run: ToolExecution
}

/** Plan approval bound to one registry: `approve` resolves to the grant's release, or throws `DENIED_BY_APPROVAL`. */
export type PlanApproval = (input: PlanApprovalInput) => Promise<() => void>

/**
 * What plan approval reads of the registry's context: the options (the session log, the
 * registry's approval handler), the gate's listeners, the live calls (a run's own
 * handler) and the layers (what a program of the agent may call: its view's `code`).
 */
export type PlanApprovalContext = Pick<RegistryContext, 'options' | 'hooks' | 'calls' | 'layers'>

/** Creates the registry's plan approval. */
export function createPlanApproval(core: PlanApprovalContext): PlanApproval {
  return async ({ code, description, language, run }) => {
    const handler = core.calls.liveTokens.get(run.token)?.approval ?? core.options.approval
    // Without a gate nothing can ask: the program is not even read.
    // Stryker disable next-line ConditionalExpression: read anyway, each probe of a gate without listeners answers undefined, so nothing asks and the same no-op release returns
    if (!acceptsPlans(handler) || core.hooks.preExecute.list(run.agent).length === 0) return () => {}
    const plan = await readPlan(core, code, language, run.signal)
    const known = new Set(core.layers.view(run.agent).code.map(({ definition }) => definition.name))
    const calls = plan.calls.filter((c) => known.has(c.name)).map((c) => Object.freeze({ name: c.name, line: c.line, column: c.column }))
    // A call the card cannot show is a call the person did not see: then nothing is pre-approved.
    const hidden = !planCallsShown({ code, calls })
    const dynamic = plan.dynamic || hidden
    const asking: { name: string; reason?: string }[] = []
    for (const name of new Set(calls.map((c) => c.name))) {
      const decision = await probe(core, run, name, asking.length)
      if (decision?.kind === 'ask') asking.push(Object.freeze(decision.reason === undefined ? { name } : { name, reason: decision.reason }))
    }
    if (asking.length === 0) return () => {}
    const approvalPlan: ApprovalPlan = Object.freeze({ code, description, calls: Object.freeze(calls), asking: Object.freeze(asking), dynamic })
    const { token, callId, name, arguments: args, signal, agent, parent, principal } = run
    const execution: ToolExecution = Object.freeze({
      token,
      callId,
      name,
      arguments: args,
      signal,
      ...(agent === undefined ? {} : { agent }),
      ...(parent === undefined ? {} : { parent }),
      // Who asked: the person sees it, and the broker counts the plan against its principal's bound.
      ...(principal === undefined ? {} : { principal }),
    })
    const why = hidden ? ' (and its calls cannot all be shown)' : plan.dynamic ? ' (and reaches tools by computed names)' : ''
    const reason = `the program calls ${asking.length === 1 ? 'a tool that asks' : `${asking.length} tools that ask`}${why}`
    const request: ApprovalRequest = Object.freeze({ kind: 'plan' as const, execution, plan: approvalPlan, reason })
    const about = { parentCallId: callId, subCallId: `${callId}:plan`, name, ...(agent === undefined ? {} : { agent }) }
    const requestedAt = Date.now()
    const span = core.calls.liveTokens.get(token)?.span
    span?.approvalRequested(reason, 'plan')
    const asked: PlanApprovalRequestEvent = { type: 'tool/plan-approval-request', ...about, ...boundPlanForLog(approvalPlan), reason, requestedAt }
    log(core, asked)
    const decided = (decision: PlanApprovalDecisionEvent['decision'], granted: readonly string[], message?: string): void => {
      const decidedAt = Date.now()
      span?.approvalDecided(decision, decidedAt - requestedAt, { kind: 'plan', role: deciderOf(request) })
      const event: PlanApprovalDecisionEvent = { type: 'tool/plan-approval-decision', ...about, decision, ...(message === undefined ? {} : { message }), granted: Object.freeze([...granted]), requestedAt, decidedAt, waitedMs: decidedAt - requestedAt }
      log(core, event)
    }
    const verdict = await verdictOf(handler, request, signal)
    if (!verdict.ok) {
      const error = verdict.error
      if (error instanceof ToolError && error.code === 'ABORTED_BEFORE_DISPATCH') {
        decided('withdrawn', [], error.message)
        throw error
      }
      const said = error instanceof ToolError && error.code === 'DENIED_BY_APPROVAL' ? error.message : `the approval handler failed: ${messageOf(error)}`
      const denied = new ToolError('DENIED_BY_APPROVAL', `the program's plan was denied before anything ran (${said})`)
      decided('deny', [], denied.message)
      throw denied
    }
    if (verdict.value !== true) {
      const denied = new ToolError('DENIED_BY_APPROVAL', "the program's plan was denied by the approval handler before anything ran")
      decided('deny', [], denied.message)
      throw denied
    }
    // A program that reaches tools by computed names, or whose calls the card could not all
    // show, gets no pre-approval: which call site a call came from cannot be told at run time.
    const granted = dynamic ? [] : asking.map((a) => a.name)
    decided('allow', granted)
    // Stryker disable next-line ConditionalExpression: an empty grant pre-approves nothing
    return granted.length === 0 ? () => {} : grantPlan(token, granted)
  }
}
