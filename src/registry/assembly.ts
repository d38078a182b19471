/**
 * Prompt assembly: the static sections of a scope plus the registry's tool contribution for the
 * scope's presentation mode, ordered by `toolOrder`, then handed through the
 * `system-prompt/assemble` waterfall, whose result is authoritative.
 * @module
 */
import { hasSdkRenderer } from '../code-mode/sdk.js'
import { ToolError, toErrorData } from '../errors.js'
import type { PromptAssembly, PromptSection } from '../runtime-types.js'
import type { ScopeKey, ToolSchema } from '../types.js'
import type { RegistryContext } from './context.js'
import { CODE_ONLY_SECTION, SDK_SECTION, type StoredSection } from './prompt-sections.js'

export { CODE_ONLY_SECTION, SDK_SECTION } from './prompt-sections.js'

/** The text of the `tools:code-only` rule under `code`. */
export const CODE_ONLY_TEXT =
  '## Calling tools\n\n' +
  'Only `run_code` may be called directly. Every other tool listed in the SDK below is ' +
  'callable only from inside a `run_code` program, as `await tools.name(args)`; a direct ' +
  'call to any of them fails.'

/** What assembly reads of the registry's context. */
export type AssemblyCore = Pick<RegistryContext, 'options' | 'layers' | 'sections' | 'hooks' | 'sdkText'>

function fail(message: string, cause?: unknown): never {
  // Stryker disable next-line ConditionalExpression: ToolError itself drops a cause that is undefined (errors.ts)
  throw new ToolError('ASSEMBLY_FAILED', message, cause === undefined ? undefined : { cause })
}

/** Assembles the prompt for `agent` (the global layer when undefined). */
export function assemblePrompt(core: AssemblyCore, agent: ScopeKey | undefined): PromptAssembly {
  const view = core.layers.view(agent)
  const mode = view.mode
  const stored: StoredSection[] = [...core.sections.list(agent)]
  // Stryker disable next-line ArithmeticOperator: user sections count their seq from 0
  let seq = Number.MAX_SAFE_INTEGER - 2

  // The view decides the wire tools (what the model may call directly, then `run_code` where
  // presented).
  let tools: ToolSchema[] = [...view.wireTools]
  if (view.presentsRunCode) {
    const codeRuntime = core.options.codeRuntime
    if (codeRuntime === undefined) {
      fail(`presentation '${mode}' needs options.codeRuntime, and none is configured: pass createToolRuntime({ codeRuntime }) (e.g. createSandboxRuntime() from 'toolyard/node'), or present 'native' (options.mode, or the agent's presentAs)`)
    }
    const language = codeRuntime.language
    if (!hasSdkRenderer(language)) fail(`presentation '${mode}': no Code Mode SDK renderer for language ${JSON.stringify(String(language))}`)
    let sdk: string
    try {
      sdk = core.sdkText(agent, language)
    } catch (error) {
      if (error instanceof ToolError && error.code === 'ASSEMBLY_FAILED') throw error
      fail(`rendering the Code Mode SDK failed: ${toErrorData(error).message}`, error)
    }
    // Stryker disable next-line UpdateOperator: either way above every user section's seq
    stored.push({ section: Object.freeze({ ...SDK_SECTION, text: sdk }), seq: seq++ })
    // The rule exists only where it holds: under `both` every tool is also direct, and an
    // empty section would still be listed to every listener and prompt consumer.
    // Stryker disable next-line UpdateOperator: either way above every user section's seq
    if (mode === 'code') stored.push({ section: Object.freeze({ ...CODE_ONLY_SECTION, text: CODE_ONLY_TEXT }), seq: seq++ })
  }

  const order = core.options.toolOrder
  // Stryker disable next-line ConditionalExpression,EqualityOperator: an empty toolOrder names nothing
  if (order !== undefined && order.length > 0) {
    const byName = new Map(tools.map((tool) => [tool.name, tool]))
    const first: ToolSchema[] = []
    for (const name of order) {
      const tool = byName.get(name)
      if (tool === undefined) fail(`options.toolOrder names ${JSON.stringify(name)}, which presentation '${mode}' does not contribute here`)
      first.push(tool)
      byName.delete(name)
    }
    tools = [...first, ...tools.filter((tool) => byName.has(tool.name))]
  }

  stored.sort((a, b) => a.section.order - b.section.order || a.seq - b.seq)
  let assembly: PromptAssembly = Object.freeze({
    sections: Object.freeze(stored.map((s) => s.section)),
    tools: Object.freeze(tools),
    mode,
  })

  const context = Object.freeze(agent === undefined ? {} : { agent })
  for (const listener of core.hooks.assemble.list(agent)) {
    let next: unknown
    try {
      next = listener(assembly, context)
    } catch (error) {
      fail(`a system-prompt/assemble listener failed: ${toErrorData(error).message}`, error)
    }
    assembly = checkAssembly(next)
  }
  return assembly
}

function checkAssembly(value: unknown): PromptAssembly {
  if (typeof value !== 'object' || value === null) fail('a system-prompt/assemble listener returned no assembly')
  const { sections, tools, mode } = value as Record<string, unknown>
  if (!Array.isArray(sections) || !Array.isArray(tools)) fail('a system-prompt/assemble listener returned an assembly without sections and tools arrays')
  if (mode !== 'native' && mode !== 'code' && mode !== 'both') fail('a system-prompt/assemble listener returned an assembly with an invalid mode')
  const checkedSections = sections.map((s: unknown, i) => {
    const section = s as Partial<PromptSection> | null
    if (typeof section !== 'object' || section === null || typeof section.id !== 'string' || typeof section.text !== 'string' || typeof section.order !== 'number') {
      fail(`a system-prompt/assemble listener returned a malformed section at index ${i}`)
    }
    return Object.freeze({ id: section.id, order: section.order, text: section.text })
  })
  const checkedTools = tools.map((t: unknown, i) => {
    const tool = t as Partial<ToolSchema> | null
    if (typeof tool !== 'object' || tool === null || typeof tool.name !== 'string' || typeof tool.description !== 'string' || typeof tool.parameters !== 'object' || tool.parameters === null) {
      fail(`a system-prompt/assemble listener returned a malformed tool at index ${i}`)
    }
    return Object.isFrozen(tool) ? (tool as ToolSchema) : Object.freeze({ name: tool.name, description: tool.description, parameters: tool.parameters })
  })
  return Object.freeze({ sections: Object.freeze(checkedSections), tools: Object.freeze(checkedTools), mode })
}
