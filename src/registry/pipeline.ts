/**
 * The execution pipeline: one call in, one deep-frozen result out, as an ordered table of named
 * stages grouped in three phases and driven by one loop (like hono's `compose`).
 * @module
 */
import { toErrorData } from '../errors.js'
import type { ToolCaller, ToolExecutionResult } from '../types.js'
import { ABORTED_BEFORE_MESSAGE, PipelineCall, messageOf, parseInput, type PipelineCore } from './call.js'
import { dispatch } from './dispatch.js'
import { UNTRACKED } from './in-flight.js'
import { outputStage, postExecuteStage } from './output.js'
import { approvalStage, guardsStage, preExecuteStage } from './policy.js'
import { failure, failureFromError, snapshotContent, withContent } from './results.js'
import type { ExecuteHow } from './context.js'
import type { CallSpan } from '../telemetry/telemetry.js'
import { Schedule, UNSCHEDULED, type DispatchBreak, type PipelinePhase } from './schedule.js'
import { quoteName } from '../util/unknown-field.js'

export type { PipelineCore } from './call.js'

export { codeOnlyToolMessage, nativeOnlyToolMessage, routeBackMessage } from './view.js'

/** What a stage answers: `undefined` to go on, or the result that ends the call. */
type StageAnswer = ToolExecutionResult | undefined

interface Stage {
  readonly name: string
  run(call: PipelineCall): StageAnswer | Promise<StageAnswer>
}

const noop = (): void => {}

/** The last look at cancellation before the next phase (and, last of all, before dispatch). */
function notAborted(call: PipelineCall): StageAnswer {
  return call.life.aborted ? failure('ABORTED_BEFORE_DISPATCH', ABORTED_BEFORE_MESSAGE) : undefined
}

/** A direct call counts as the model's (`native`). */
function callerOf(call: PipelineCall): ToolCaller {
  return call.topLevel ? 'native' : 'code'
}

/** The policy phase's stages, in order: everything that may refuse the call before it runs. */
const POLICY: readonly Stage[] = [
  {
    name: 'input',
    run: (call) => (call.input.ok ? undefined : failure('INVALID_EXECUTION', call.input.message)),
  },
  {
    name: 'live',
    run: (call) => {
      if (call.scopeDisposed) return failure('DISPOSED', `agent scope ${JSON.stringify(call.agent)} is disposed`)
      return call.core.isDisposed() ? failure('DISPOSED', 'the tool runtime is disposed') : undefined
    },
  },
  {
    // Before resolution and policy, so nothing observes or approves a call that can only fail.
    name: 'code-only',
    run: (call) => {
      const refusal = call.core.layers.view(call.agent).routeBack(call.execution.name, callerOf(call))
      return refusal === undefined ? undefined : failure('UNKNOWN_TOOL', refusal)
    },
  },
  {
    name: 'resolve',
    run: (call) => {
      call.registered = call.core.layers.view(call.agent).resolve(call.execution.name)
      return call.registered === undefined ? failure('UNKNOWN_TOOL', `unknown tool ${quoteName(call.execution.name)}`) : undefined
    },
  },
  {
    name: 'callers',
    run: (call) => {
      const refusal = call.core.layers.view(call.agent).callerRefusal(call.registered!, callerOf(call))
      return refusal === undefined ? undefined : failure('UNKNOWN_TOOL', refusal)
    },
  },
  {
    // After resolution, so the tool's finalizeContent sees invalid arguments too; before any policy.
    name: 'arguments',
    run: (call) => {
      if (call.argsError !== undefined) return failure('INVALID_ARGS', call.argsError)
      const validate = call.registered!.definition.validateArgs
      if (validate === undefined) return undefined
      try {
        call.typedArgs = validate(call.execution.arguments)
        return undefined
      } catch (error) {
        return failure('INVALID_ARGS', messageOf(error), [], toErrorData(error).name)
      }
    },
  },
  { name: 'not-aborted', run: notAborted },
  { name: 'pre-execute', run: preExecuteStage },
  { name: 'not-aborted', run: notAborted },
  { name: 'guards', run: guardsStage },
  { name: 'approval', run: approvalStage },
  // The last check before dispatch: a guard or the gate may have aborted the call's signal.
  { name: 'not-aborted', run: notAborted },
]

/** Wrappers + body (in the batch pool when there is one: the schedule's dispatch turn). */
async function dispatchStage(call: PipelineCall): Promise<StageAnswer> {
  const wrappers = call.core.hooks.execute.list(call.agent)
  call.outcome = await dispatch(call.execution, call.life, call.registered!, call.typedArgs, call.toolContexts, wrappers)
  return undefined
}

/** A dispatch turn the batch scheduler abandoned (the body never ran) or broke after starting. */
function dispatchBroken(call: PipelineCall, broke: DispatchBreak): void {
  const result = broke.started ? failureFromError(broke.error, 'TOOL_FAILED', call.toolContexts) : failure('ABORTED_BEFORE_DISPATCH', ABORTED_BEFORE_MESSAGE)
  call.outcome = { kind: 'failure', result }
}

/** finalizeContent: the resolved tool's last, content-only word on every result (exactly once). */
function finalizeContent(call: PipelineCall): undefined {
  const definition = call.registered?.definition
  const finalize = definition?.finalizeContent
  if (finalize === undefined) return undefined
  try {
    const replaced: unknown = finalize.call(definition, call.execution, call.result!)
    // Stryker disable next-line StringLiteral: the label only names the culprit in snapshotContent's error
    if (replaced !== undefined) call.result = withContent(call.result!, snapshotContent(replaced, 'finalizeContent()'))
  } catch {
    // finalizeContent must be total; a throw (or malformed content) keeps the previous content.
  }
  return undefined
}

/** `tools/result`: observe-only. */
function publish(call: PipelineCall): undefined {
  for (const listener of call.core.hooks.result.list(call.agent)) {
    try {
      const returned: unknown = listener(call.execution, call.result!)
      if (typeof returned === 'object' && returned !== null && typeof (returned as { then?: unknown }).then === 'function') {
        ;(returned as Promise<unknown>).then(noop, noop)
      }
    } catch {
      // Observers never change an outcome.
    }
  }
  return undefined
}

/** One phase of a call: one turn of a batch schedule. */
interface Phase {
  readonly name: PipelinePhase
  readonly stages: readonly Stage[]
  /** Run whichever stage ended the call (their answers are ignored). */
  readonly always: readonly Stage[]
  readonly broken?: (call: PipelineCall, broke: DispatchBreak) => void
}

const PHASES: readonly Phase[] = [
  { name: 'policy', stages: POLICY, always: [] },
  { name: 'dispatch', stages: [{ name: 'dispatch', run: dispatchStage }], always: [], broken: dispatchBroken },
  {
    name: 'tail',
    stages: [
      { name: 'output', run: outputStage },
      { name: 'post-execute', run: postExecuteStage },
    ],
    // Exactly once for every call, whichever stage ended it.
    always: [
      { name: 'finalize-content', run: finalizeContent },
      { name: 'publish', run: publish },
    ],
  },
]

function ended(call: PipelineCall, answer: StageAnswer): boolean {
  if (answer === undefined) return false
  call.result = answer
  return true
}

/**
 * Runs `stages` from `index`, synchronously until a stage answers with a promise (a call whose
 * stages are all synchronous takes no tick).
 */
function runStages(call: PipelineCall, stages: readonly Stage[], index: number, ending: boolean): Promise<undefined> | undefined {
  for (let i = index; i < stages.length; i++) {
    const answer = stages[i]!.run(call)
    if (answer instanceof Promise) return answer.then((settled) => (ending && ended(call, settled) ? undefined : runStages(call, stages, i + 1, ending)))
    if (ending && ended(call, answer)) return undefined
  }
  return undefined
}

/** One phase: its stages while the call goes on, then its `always` stages. */
function runPhase(call: PipelineCall, phase: Phase, going: boolean): Promise<undefined> | undefined {
  const steps = going ? runStages(call, phase.stages, 0, true) : undefined
  // Stryker disable next-line BooleanLiteral: every `always` stage (finalizeContent, publish) answers undefined
  return steps === undefined ? runStages(call, phase.always, 0, false) : steps.then(() => runStages(call, phase.always, 0, false))
}

/** Drives `call` through the phases: the one place the schedule is called, once per phase. */
async function runPhases(call: PipelineCall, sched: Schedule): Promise<ToolExecutionResult> {
  for (const phase of PHASES) {
    const going = call.result === undefined
    if (!going && phase.always.length === 0) continue
    const turn = sched.phase(phase.name, () => runPhase(call, phase, going))
    const broke = turn === undefined ? undefined : await turn
    // Stryker disable next-line OptionalChaining: only a dispatch turn answers a DispatchBreak (schedule.ts)
    if (broke !== undefined) phase.broken?.(call, broke)
  }
  return call.result!
}

/** Ends the call's span with what the call came to (a value no body produced is a replay: a durable run's record). */
function endSpan(call: PipelineCall, span: CallSpan, result: ToolExecutionResult): void {
  const definition = call.registered?.definition
  const outcome = call.outcome
  span.end({
    result,
    description: definition?.description,
    parameters: definition?.parameters,
    arguments: call.execution.arguments,
    agent: call.agent,
    replayed: outcome?.kind === 'value' && !outcome.bodyInvoked,
    heldMs: call.heldMs,
  })
}

/** Runs one call through the whole pipeline. */
export async function executePipeline(core: PipelineCore, raw: unknown, how: ExecuteHow = {}): Promise<ToolExecutionResult> {
  const sched = how.schedule === undefined ? UNSCHEDULED : new Schedule(how.schedule)
  const input = parseInput(raw)
  // Stryker disable next-line LogicalOperator: parseInput answers ok only with an AbortSignal and never has a signal otherwise
  const tracked = input.ok && input.signal !== undefined ? core.calls.track(input.signal, input.agent) : undefined
  let token: symbol | undefined
  try {
    const call = new PipelineCall(core, input, tracked ?? UNTRACKED, how.scopeDisposed === true)
    token = call.execution.token
    const telemetry = core.telemetry
    if (telemetry !== undefined) call.span = telemetry.startCall({ name: call.execution.name, callId: call.execution.callId, caller: callerOf(call), parent: call.parentSpan, trace: input.trace })
    core.calls.liveTokens.set(token, { callId: call.execution.callId, approval: call.approval, span: call.span, principal: call.execution.principal })
    const result = await runPhases(call, sched)
    if (call.span !== undefined) endSpan(call, call.span, result)
    return result
  } catch (error) {
    // Unreachable by design (every stage contains its own failures); kept so the promise never rejects.
    return failureFromError(error, 'TOOL_FAILED', [], 'internal pipeline error: ')
  } finally {
    if (token !== undefined) core.calls.liveTokens.delete(token)
    tracked?.release()
    sched.settle()
  }
}
