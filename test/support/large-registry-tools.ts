/**
 * The generated 1,000-tool registry (test/fixtures/large-registry.ts) as tool
 * definitions a registry accepts: the fixture's name, description and schemas, and a
 * body that says it is a stand-in. Platform-neutral, for the Node, workerd and Chromium
 * suites and the token-economy bench.
 *
 * @module
 */
import { ToolError } from '../../src/errors.js'
import type { AnyToolDefinition, Disposer } from '../../src/types.js'
import type { LargeRegistryTool } from '../fixtures/large-registry.js'

/** A definition over a fixture tool; its body fails unless `execute` is given. */
export function largeRegistryDefinition(tool: LargeRegistryTool, execute?: AnyToolDefinition['execute']): AnyToolDefinition {
  return {
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    output: { schema: tool.output, render: (_args: unknown, value: unknown) => [{ type: 'text', text: JSON.stringify(value) }] },
    execute:
      execute ??
      (() => {
        throw new ToolError('TOOL_FAILED', `${tool.name} is a generated stand-in with no body`)
      }),
  } as AnyToolDefinition
}

/** Registers `tools` in `scope`; the disposer unregisters them all. */
export function registerLargeRegistry(scope: { register(definition: AnyToolDefinition): Disposer }, tools: readonly LargeRegistryTool[]): Disposer {
  const disposers = tools.map((tool) => scope.register(largeRegistryDefinition(tool)))
  return () => {
    for (const dispose of disposers.reverse()) dispose()
  }
}
