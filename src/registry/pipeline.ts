/**
 * The execution pipeline: one call in, one deep-frozen result out, as an ordered table
 * of named stages driven by one loop (like hono's `compose`). A stage either lets the
 * call go on (returns `undefined`) or ends it with a result; whatever happens, the tail
 * stages then run exactly once: `finalizeContent`, then `tools/result`.
 *
 * ```
 * policy-turn → input → live → code-only → resolve → callers → arguments → not-aborted
 *   → pre-execute → not-aborted → guards → approval → not-aborted
 *   → dispatch (tools/execute wrappers → body) → output → post-execute
 *   ⇒ tail: tail-turn → finalize-content → publish
 * ```
 *
 * The pipeline never rejects and never returns while a body it started is still
 * running. docs/pipeline.md has the full rules; the table below is their order.
 *
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
import { Schedule, UNSCHEDULED, type PipelineSchedule } from './schedule.js'

export type { PipelineCore } from './call.js'

export { codeOnlyToolMessage, nativeOnlyToolMessage, routeBackMessage } from './view.js'

/** What a stage answers: `undefined` to go on, or the result that ends the call. */
type StageAnswer = ToolExecutionResult | undefined

/** One named step of the pipeline. */
interface Stage {
  readonly name: string
  run(call: PipelineCall): StageAnswer | Promise<StageAnswer>
}

const noop = (): void => {}
const goOn = (): undefined => undefined

/** The last look at cancellation before the next phase (and, last of all, before dispatch). */
function notAborted(call: PipelineCall): StageAnswer {
  return call.life.aborted ? failure('ABORTED_BEFORE_DISPATCH', ABORTED_BEFORE_MESSAGE) : undefined
}

/** A direct call counts as the model's (`native`); a nested one (a live parent) as a program's (`code`). */
function callerOf(call: PipelineCall): ToolCaller {
  return call.topLevel ? 'native' : 'code'
}

/** The stages up to the result, in order. */
const STAGES: readonly Stage[] = [
  {
    // A batch (runToolCalls) runs policy phases one call at a time, in model order.
    name: 'policy-turn',
    run: (call) => (call.sched.scheduled ? call.sched.beforePolicy().then(goOn) : undefined),
  },
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
    // The agent's view decides this stage and the next two (one lookup, cached per change).
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
      return call.registered === undefined ? failure('UNKNOWN_TOOL', `unknown tool ${JSON.stringify(call.execution.name)}`) : undefined
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
      if (call.argsError !== undefined) return failure('INVALID_ARGS', `arguments are not lossless JSON: ${messageOf(call.argsError.error)}`)
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
  { name: 'dispatch', run: dispatchStage },
  { name: 'output', run: outputStage },
  { name: 'post-execute', run: postExecuteStage },
]

/** The tail: runs exactly once for every call, whichever stage ended it. */
const TAIL: readonly Stage[] = [
  {
    name: 'tail-turn',
    run: (call) => {
      call.sched.afterPolicy()
      const pending = call.sched.beforeTail()
      return pending === undefined ? undefined : pending.then(goOn)
    },
  },
  { name: 'finalize-content', run: finalizeContent },
  { name: 'publish', run: publish },
]

/** Wrappers + body, through the batch scheduler when there is one; then the tail's turn. */
async function dispatchStage(call: PipelineCall): Promise<StageAnswer> {
  const { sched, registered } = call
  sched.afterPolicy()
  let started = false
  try {
    call.outcome = await sched.dispatch(() => {
      started = true
      return dispatch(call.execution, call.life, registered!, call.typedArgs, call.toolContexts, call.core.hooks.execute.list(call.agent))
    })
  } catch (error) {
    // Only a scheduler that abandoned the call (or broke after starting it) gets here.
    call.outcome = {
      kind: 'failure',
      result: started ? failureFromError(error, 'TOOL_FAILED', call.toolContexts) : failure('ABORTED_BEFORE_DISPATCH', ABORTED_BEFORE_MESSAGE),
    }
  }
  const pending = sched.beforeTail()
  if (pending !== undefined) await pending
  return undefined
}

/** finalizeContent: the resolved tool's last, content-only word on every result (exactly once). */
function finalizeContent(call: PipelineCall): undefined {
  const definition = call.registered?.definition
  const finalize = definition?.finalizeContent
  if (finalize === undefined) return undefined
  try {
    const replaced: unknown = finalize.call(definition, call.execution, call.result!)
    // Stryker disable next-line StringLiteral: the label only names the culprit in snapshotContent's error, which the catch below swallows
    if (replaced !== undefined) call.result = withContent(call.result!, snapshotContent(replaced, 'finalizeContent()'))
  } catch {
    // finalizeContent must be total; a throw (or malformed content) keeps the previous content.
  }
  return undefined
}

/** `tools/result`: observe-only; a throwing or rejecting observer changes nothing. */
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
  call.sched.afterTail()
  return undefined
}

/** Drives `call` through the table, then the tail. */
async function runStages(call: PipelineCall): Promise<ToolExecutionResult> {
  for (const stage of STAGES) {
    const answer = stage.run(call)
    const ended = answer instanceof Promise ? await answer : answer
    if (ended !== undefined) {
      call.result = ended
      break
    }
  }
  for (const stage of TAIL) {
    const answer = stage.run(call)
    if (answer instanceof Promise) await answer
  }
  return call.result!
}

/**
 * Runs one call through the whole pipeline. Never rejects; always publishes exactly one
 * frozen result to `tools/result` before resolving with it.
 */
export async function executePipeline(
  core: PipelineCore,
  raw: unknown,
  schedule?: PipelineSchedule,
  scopeDisposed = false,
): Promise<ToolExecutionResult> {
  const sched = schedule === undefined ? UNSCHEDULED : new Schedule(schedule)
  const input = parseInput(raw)
  // Stryker disable next-line LogicalOperator: parseInput answers ok only with an AbortSignal and never has a signal otherwise, so `||` selects the same inputs
  const tracked = input.ok && input.signal !== undefined ? core.calls.track(input.signal, input.agent) : undefined
  let token: symbol | undefined
  try {
    const call = new PipelineCall(core, sched, input, tracked ?? UNTRACKED, scopeDisposed)
    token = call.execution.token
    core.calls.liveTokens.set(token, { callId: call.execution.callId, approval: call.approval })
    return await runStages(call)
  } catch (error) {
    // Unreachable by design (every stage contains its own failures); kept so the promise never rejects.
    return failureFromError(error, 'TOOL_FAILED', [], 'internal pipeline error: ')
  } finally {
    if (token !== undefined) core.calls.liveTokens.delete(token)
    tracked?.release()
    sched.afterPolicy()
    sched.afterTail()
  }
}
