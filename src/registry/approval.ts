/**
 * The `approval` stage: an `ask` put to whoever decides it — the call's own handler (inherited by
 * nested calls, e.g. the MCP export's elicitation), else the registry's `options.approval`.
 * @module
 */
import { previewOfCall } from '../approvals/preview.js'
import { undeclaredArgumentPaths } from '../approvals/render.js'
import { runSecretOf } from '../durable/call-key.js'
import { deciderOf } from '../telemetry/decider.js'
import { ToolError } from '../errors.js'
import type { ApprovalDecisionEvent, ApprovalOutcome, ApprovalRequestEvent, SessionLogEvent } from '../runtime-types.js'
import type { ApprovalHandler, ApprovalRequest, ToolExecutionResult, ToolExecutionToken } from '../types.js'
import { ABORTED_BEFORE_MESSAGE, messageOf, type PipelineCall } from './call.js'
import { failure } from './results.js'

type Verdict = { readonly kind: 'value'; readonly value: unknown } | { readonly kind: 'error'; readonly error: unknown } | { readonly kind: 'aborted' }

/**
 * The longest a cancelled call waits for a handler that withdraws on abort (an approval
 * broker's) to say its request is gone: a store that hangs must not hold the call forever.
 */
const WITHDRAWAL_WAIT_MS = 5_000

/** Awaits the approval handler, but gives up as soon as the call is cancelled (a human may never answer). */
function awaitApproval(run: () => unknown, signal: AbortSignal, withdraws: boolean): Promise<Verdict> {
  if (signal.aborted) return Promise.resolve({ kind: 'aborted' })
  let pending: Promise<unknown> | undefined
  let cancelled = false
  let timer: ReturnType<typeof setTimeout> | undefined
  return new Promise<Verdict>((resolve) => {
    const onAbort = (): void => {
      if (!withdraws || pending === undefined) return resolve({ kind: 'aborted' })
      cancelled = true
      timer = setTimeout(() => resolve({ kind: 'aborted' }), WITHDRAWAL_WAIT_MS)
    }
    signal.addEventListener('abort', onAbort, { once: true })
    const done = (outcome: Verdict): void => {
      signal.removeEventListener('abort', onAbort)
      clearTimeout(timer)
      resolve(cancelled ? { kind: 'aborted' } : outcome)
    }
    try {
      pending = Promise.resolve(run())
    } catch (error) {
      pending = Promise.reject(error)
    }
    pending.then(
      // Stryker disable next-line StringLiteral: judge() tests only for 'aborted' and 'error'
      (value) => done({ kind: 'value', value }),
      (error: unknown) => done({ kind: 'error', error }),
    )
  })
}

/** The session log is a sink: its failure never reaches the call. */
function log(call: PipelineCall, event: SessionLogEvent): void {
  try {
    // Stryker disable next-line OptionalChaining: without a session log the call throws a TypeError that the catch below swallows
    call.core.options.sessionLog?.append(event)
  } catch {
    // Ignored: see above.
  }
}

/** Holds the call's clock (when it has one to hold). */
function holdClock(call: PipelineCall): () => void {
  const hold = call.input.holdWallClock
  // Stryker disable next-line ConditionalExpression: calling an undefined hold throws a TypeError
  if (hold === undefined) return () => {}
  let release: unknown
  try {
    release = hold()
  } catch {
    // A clock that cannot be held is charged as usual; the approval still goes on.
    return () => {}
  }
  const heldFrom = Date.now()
  return () => {
    call.heldMs += Date.now() - heldFrom
    try {
      // Stryker disable next-line ConditionalExpression: calling a non-function release throws a TypeError that the catch below swallows
      if (typeof release === 'function') release()
    } catch {
      // Releasing is the clock owner's business; the call's outcome is already decided.
    }
  }
}

/** What the verdict means for the call: its result (or `undefined` to go on) and the logged outcome. */
function judge(verdict: Verdict, name: string, reason: string | undefined): { readonly result: ToolExecutionResult | undefined; readonly outcome: ApprovalOutcome } {
  if (verdict.kind === 'aborted') return { result: failure('ABORTED_BEFORE_DISPATCH', ABORTED_BEFORE_MESSAGE), outcome: 'withdrawn' }
  if (verdict.kind === 'error') {
    const error = verdict.error
    // A deliberate denial (the broker's: denied by a person, by timeout, withdrawn) speaks for itself.
    const message =
      error instanceof ToolError && error.code === 'DENIED_BY_APPROVAL' ? error.message : `${name} was denied: the approval handler failed: ${messageOf(error)}`
    return { result: failure('DENIED_BY_APPROVAL', message), outcome: 'deny' }
  }
  if (verdict.value === true) return { result: undefined, outcome: 'allow' }
  const asked = reason === undefined || reason === '' ? '' : ` (the gate asked because: ${reason})`
  return { result: failure('DENIED_BY_APPROVAL', `${name} was denied by the approval handler${asked}`), outcome: 'deny' }
}

/** A call that asks may carry only the parameters its tool declares. */
function undeclaredRefusal(call: PipelineCall): ToolExecutionResult | undefined {
  // Stryker disable next-line OptionalChaining: the resolve stage ends a call whose tool is unknown
  const parameters = call.registered?.definition.parameters
  const paths = undeclaredArgumentPaths(parameters, call.execution.arguments, 5)
  if (paths.length === 0) return undefined
  // Stryker disable next-line OptionalChaining: parameters is always a registration's { type
  const declared = [...Object.keys((parameters as { properties?: object } | undefined)?.properties ?? {})]
  const message =
    `${call.execution.name} asks for approval, so its arguments may carry only its declared parameters: ` +
    `${paths.map((p) => JSON.stringify(p)).join(', ')} ${paths.length === 1 ? 'is' : 'are'} not declared` +
    ` (declared: ${declared.length === 0 ? 'none' : declared.join(', ')})`
  return failure('INVALID_ARGS', message, [], 'ToolArgsError')
}

/**
 * The tools a person pre-approved through a program's plan, keyed by the token of the
 * run's `run_code` call (unforgeable, and gone with the run: `grantPlan`'s release).
 */
const planGrants = new Map<ToolExecutionToken, ReadonlySet<string>>()

/** Pre-approves `names` for the sub-calls of the run whose `run_code` call is `run`; returns the release (call it when the run settles). */
export function grantPlan(run: ToolExecutionToken, names: readonly string[]): () => void {
  const granted = new Set(names)
  planGrants.set(run, granted)
  return () => {
    if (planGrants.get(run) === granted) planGrants.delete(run)
  }
}

/** Approval for an `ask`: absent handler, refusal or failure deny; cancellation while waiting aborts. */
export async function approve(call: PipelineCall, reason: string | undefined): Promise<ToolExecutionResult | undefined> {
  const refused = undeclaredRefusal(call)
  if (refused !== undefined) return refused
  // A direct sub-call of a run whose plan a person allowed: the gate and the guards ran; nobody is asked again.
  if (planGrants.get(call.execution.parent as ToolExecutionToken)?.has(call.execution.name) === true) return undefined
  const handler: ApprovalHandler | undefined = call.approval ?? call.core.options.approval
  const why = reason === undefined || reason === '' ? '' : ` (${reason})`
  const { execution, parentCallId } = call
  if (handler === undefined) return failure('DENIED_BY_APPROVAL', `${execution.name} was denied by policy: it needs approval${why} and no approval handler is configured`)
  // Stryker disable next-line OptionalChaining: the resolve stage ends a call whose tool is unknown
  const parameters = call.registered?.definition.parameters
  // What the call will do, from the tool itself (bounded in time and bytes; never blocks the request).
  const definition = call.registered?.definition
  // Stryker disable next-line ConditionalExpression: only skips an await
  const preview = definition?.preview === undefined ? undefined : await previewOfCall(definition, execution, call.life.signal())
  // What a stored decision is bound to besides the ids and arguments (a broker over a store hashes them): a sub-call's run secret.
  const runKey = execution.parent === undefined ? undefined : runSecretOf(execution.parent)
  const request: ApprovalRequest = Object.freeze({
    execution,
    ...(preview === undefined ? {} : { preview }),
    // Stryker disable next-line ConditionalExpression: a registration's parameters are always a detached { type: 'object' } schema
    ...(parameters === undefined ? {} : { parameters }),
    ...(reason === undefined ? {} : { reason }),
    ...(parentCallId === undefined ? {} : { parentCallId }),
    ...(runKey === undefined ? {} : { runKey }),
  })
  const requestedAt = Date.now()
  call.span?.approvalRequested(reason)
  // The session log is the record of Code Mode runs: it hears about a run's sub-calls.
  const about =
    parentCallId === undefined
      ? undefined
      : { parentCallId, subCallId: execution.callId, name: execution.name, ...(execution.agent === undefined ? {} : { agent: execution.agent }) }
  if (about !== undefined) {
    const asked: ApprovalRequestEvent = {
      type: 'tool/approval-request',
      ...about,
      arguments: execution.arguments,
      ...(reason === undefined ? {} : { reason }),
      requestedAt,
    }
    log(call, asked)
  }
  const release = holdClock(call)
  let verdict: Verdict
  try {
    verdict = await awaitApproval(() => handler(request), call.life.signal(), (handler as { withdrawsOnAbort?: unknown }).withdrawsOnAbort === true)
  } finally {
    release()
  }
  const { result, outcome } = judge(verdict, execution.name, reason)
  call.span?.approvalDecided(outcome, Date.now() - requestedAt, { role: deciderOf(request) })
  if (about === undefined) return result
  const decidedAt = Date.now()
  const decided: ApprovalDecisionEvent = {
    type: 'tool/approval-decision',
    ...about,
    decision: outcome,
    // Stryker disable next-line OptionalChaining,ConditionalExpression: reached only for a 'deny' outcome
    ...(outcome === 'deny' && result?.isError === true ? { message: result.error.message } : {}),
    requestedAt,
    decidedAt,
    waitedMs: decidedAt - requestedAt,
  }
  log(call, decided)
  return result
}
