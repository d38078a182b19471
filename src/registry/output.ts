/**
 * The stages after dispatch: normalizing what wrappers and body produced through the tool's output
 * declaration, and the `tools/post-execute` waterfall.
 * @module
 */
import { formatViolations } from '../errors.js'
import type { JsonValue } from '../json/json-value.js'
import { snapshotLosslessJson } from '../json/lossless.js'
import type { PostExecuteListener } from '../runtime-types.js'
import type { RegisteredTool } from '../schema/tool-definition.js'
import type { AdditionalContext, ContentBlock, PostToolDecision, ToolExecutionResult, ToolFailure } from '../types.js'
import { ABORTED_BEFORE_MESSAGE, ABORTED_MESSAGE, messageOf, type PipelineCall } from './call.js'
import { failure, snapshotContent, snapshotContexts, success, withContent, withContexts } from './results.js'

/** A value projected through an output declaration, or why it could not be. */
type Materialized =
  | { readonly ok: true; readonly value: JsonValue; readonly content: readonly ContentBlock[]; readonly meta: JsonValue | undefined }
  | { readonly ok: false; readonly message: string }

/** Snapshot → `output.schema` → `render` → `presentationMeta` (top-level calls only). */
function materialize(registered: RegisteredTool, args: unknown, raw: unknown, topLevel: boolean): Materialized {
  const definition = registered.definition
  let value: JsonValue
  try {
    value = snapshotLosslessJson(raw)
  } catch (error) {
    return { ok: false, message: `the value is not lossless JSON: ${messageOf(error)}` }
  }
  const violations = registered.validateOutput(value)
  if (violations.length > 0) return { ok: false, message: formatViolations('the value does not match the output schema', violations) }
  let content: readonly ContentBlock[]
  try {
    content = snapshotContent(definition.output.render(args, value), 'output.render()')
  } catch (error) {
    return { ok: false, message: `output.render failed: ${messageOf(error)}` }
  }
  let meta: JsonValue | undefined
  const presentationMeta = definition.output.presentationMeta
  if (topLevel && presentationMeta !== undefined) {
    try {
      const produced: unknown = presentationMeta.call(definition.output, args, value)
      meta = produced === undefined ? undefined : snapshotLosslessJson(produced)
    } catch (error) {
      return { ok: false, message: `output.presentationMeta failed: ${messageOf(error)}` }
    }
  }
  return { ok: true, value, content, meta }
}

/** Cancellation replaces only a success: ABORTED after the body started, ABORTED_BEFORE_DISPATCH otherwise. */
function cancelSuccess(call: PipelineCall, result: ToolExecutionResult): ToolExecutionResult {
  if (result.isError || !call.life.aborted) return result
  const contexts = result.additionalContexts ?? []
  const outcome = call.outcome
  // Stryker disable next-line OptionalChaining: cancelSuccess runs only in the output and post-execute stages
  return outcome?.kind === 'value' && outcome.bodyInvoked
    ? failure('ABORTED', ABORTED_MESSAGE, contexts)
    : failure('ABORTED_BEFORE_DISPATCH', ABORTED_BEFORE_MESSAGE, contexts)
}

/** The `output` stage: the dispatched value normalized into a result (or `INVALID_OUTPUT`). */
export function outputStage(call: PipelineCall): undefined {
  const outcome = call.outcome!
  let result: ToolExecutionResult
  if (outcome.kind === 'failure') result = outcome.result
  else {
    const projected = materialize(call.registered!, call.typedArgs, outcome.value, call.topLevel)
    result = projected.ok
      ? success(projected.value, projected.content, projected.meta, call.toolContexts)
      : failure('INVALID_OUTPUT', `${call.execution.name} returned an invalid output: ${projected.message}`, call.toolContexts)
  }
  call.result = cancelSuccess(call, result)
  return undefined
}

function isPostDecision(value: unknown): value is PostToolDecision {
  if (typeof value !== 'object' || value === null) return false
  const kind = (value as { kind?: unknown }).kind
  return kind === 'accept' || kind === 'block'
}

const ACCEPT: PostToolDecision = Object.freeze({ kind: 'accept' as const })

/** The `post-execute` stage: the waterfall over the normalized result of a dispatched call. */
export function postExecuteStage(call: PipelineCall): undefined | Promise<undefined> {
  const result = call.result!
  // Stryker disable next-line OptionalChaining: every failure the pipeline holds was built by failure()
  if (result.isError && result.error.info?.code === 'ABORTED_BEFORE_DISPATCH') return undefined
  const listeners = call.core.hooks.postExecute.list(call.agent)
  if (listeners.length === 0) {
    call.result = cancelSuccess(call, result)
    return undefined
  }
  return runPostExecute(call, listeners, result).then((decided) => {
    call.result = cancelSuccess(call, decided)
    return undefined
  })
}

async function runPostExecute(call: PipelineCall, listeners: readonly PostExecuteListener[], result: ToolExecutionResult): Promise<ToolExecutionResult> {
  let decision: PostToolDecision = ACCEPT
  for (const listener of listeners) {
    let next: unknown
    try {
      next = await listener(decision, call.execution, result)
    } catch (error) {
      return policyFailure(call.toolContexts, `a tools/post-execute listener failed: ${messageOf(error)}`)
    }
    if (!isPostDecision(next)) return policyFailure(call.toolContexts, 'a tools/post-execute listener returned a malformed decision')
    decision = next
    // A block is final: later listeners cannot turn it back into an accept.
    if (decision.kind === 'block') break
  }
  try {
    return applyDecision(call, decision, result)
  } catch (error) {
    return policyFailure(call.toolContexts, `a tools/post-execute decision is malformed: ${messageOf(error)}`)
  }
}

function policyFailure(contexts: readonly AdditionalContext[], message: string): ToolFailure {
  return failure('POST_POLICY_FAILED', message, contexts)
}

function applyDecision(call: PipelineCall, decision: PostToolDecision, result: ToolExecutionResult): ToolExecutionResult {
  const toolContexts = call.toolContexts
  if (decision.kind === 'block') {
    const feedback = (decision as { feedback?: unknown }).feedback
    if (typeof feedback !== 'string') return policyFailure(toolContexts, 'a block decision needs string feedback')
    // A block keeps only the contexts it supplies itself: the tool's deferred ones are dropped.
    const contexts = decision.additionalContexts === undefined ? [] : snapshotContexts(decision.additionalContexts, 'block.additionalContexts')
    return failure('BLOCKED', feedback, contexts)
  }
  const decided = decision.additionalContexts === undefined ? [] : snapshotContexts(decision.additionalContexts, 'accept.additionalContexts')
  const contexts = [...toolContexts, ...decided]
  const hasContent = decision.content !== undefined
  const hasValue = decision.value !== undefined
  if (hasContent && hasValue) return policyFailure(toolContexts, 'an accept decision may replace content or value, never both')
  if (hasValue) {
    if (result.isError) return policyFailure(toolContexts, 'an accept decision cannot give a failed result a value')
    const projected = materialize(call.registered!, call.typedArgs, decision.value, call.topLevel)
    if (!projected.ok) return policyFailure(toolContexts, `the replacement value is invalid: ${projected.message}`)
    return success(projected.value, projected.content, projected.meta, contexts)
  }
  if (hasContent) return withContexts(withContent(result, snapshotContent(decision.content, 'accept.content')), contexts)
  return contexts.length === toolContexts.length ? result : withContexts(result, contexts)
}
