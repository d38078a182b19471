import type { AnyToolDefinition, ToolResultRecord, ToolRunContext } from '../../../src/types.js'

/** A minimal run context for calling a definition's execute directly. */
export function runContext(name: string, args: unknown): ToolRunContext {
  return {
    token: Symbol('test') as ToolRunContext['token'],
    callId: 'test-call',
    name,
    arguments: args as ToolRunContext['arguments'],
    signal: new AbortController().signal,
    deferContext: () => {},
  }
}

/** Calls a tool the way the pipeline would: strict validation, then execute. */
export async function call(tools: readonly AnyToolDefinition[], name: string, args: unknown): Promise<{ value: unknown; record: ToolResultRecord; tool: AnyToolDefinition }> {
  const tool = byName(tools, name)
  const validated = tool.validateArgs!(args as never)
  const value = await tool.execute(validated, runContext(name, args))
  const record: ToolResultRecord = { isError: false, content: tool.output.render(validated, value) }
  return { value, record, tool }
}

export function byName(tools: readonly AnyToolDefinition[], name: string): AnyToolDefinition {
  const tool = tools.find((t) => t.name === name)
  if (tool === undefined) throw new Error(`no tool ${name}`)
  return tool
}

export function text(record: ToolResultRecord): string {
  return record.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
}
