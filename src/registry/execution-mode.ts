/**
 * The scheduling class of one call (`ToolRuntime.executionMode`): `parallel` only when the
 * definition the call resolves to answers exactly `true` from `isConcurrencySafe` for softly
 * validated arguments.
 * @module
 */
import { snapshotLosslessJson } from '../json/lossless.js'
import type { ToolExecutionInput, ToolExecutionMode } from '../types.js'
import type { RegistryContext } from './context.js'

/** Classifies `input` against what it resolves to in the agent's view. Never throws. */
export function executionModeOf(
  { layers }: Pick<RegistryContext, 'layers'>,
  input: Pick<ToolExecutionInput, 'name' | 'arguments' | 'agent'>,
): ToolExecutionMode {
  try {
    const name: unknown = input.name
    const agent: unknown = input.agent
    if (typeof name !== 'string' || (agent !== undefined && typeof agent !== 'string')) return 'exclusive'
    const tool = layers.view(agent).resolve(name)
    // Stryker disable next-line OptionalChaining: for an unknown tool the TypeError lands in the catch below
    const classify = tool?.definition.isConcurrencySafe
    if (tool === undefined || classify === undefined) return 'exclusive'
    const definition = tool.definition
    const args = snapshotLosslessJson(input.arguments)
    let typed: unknown
    if (definition.softValidateArgs !== undefined) typed = definition.softValidateArgs(args)
    else if (definition.validateArgs !== undefined) typed = definition.validateArgs(args)
    else typed = args
    if (typed === undefined) return 'exclusive'
    return classify.call(definition, typed) === true ? 'parallel' : 'exclusive'
  } catch {
    // Unreadable input, non-lossless arguments, a throwing validator or classifier: fail closed.
    return 'exclusive'
  }
}
