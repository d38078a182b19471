/**
 * A minimal `CodeModeRegistry` for the bridge's unit tests: tools are plain async
 * functions, results follow the pipeline's result shapes, and every host call is
 * recorded. The integration suite replaces it with the real registry.
 */
import type { CodeModeRegistry } from '../../../../src/code-mode/registry-seam.js'
import type { CodeRuntime } from '../../../../src/code-runtime/contract.js'
import type { JsonValue } from '../../../../src/json/json-value.js'
import type { SessionLogEvent } from '../../../../src/runtime-types.js'
import type {
  AdditionalContext,
  ToolExecutionInput,
  ToolExecutionMode,
  ToolExecutionResult,
  ToolExecutionToken,
  ToolRunContext,
} from '../../../../src/types.js'

/** What a test tool returns: a value, or a failure message; plus optional contexts. */
export type TestToolOutcome =
  | { readonly value: JsonValue; readonly contexts?: readonly AdditionalContext[] }
  | { readonly error: string; readonly code?: string; readonly contexts?: readonly AdditionalContext[] }

/** A test tool. */
export interface TestTool {
  readonly mode?: ToolExecutionMode
  run(args: JsonValue, input: ToolExecutionInput): Promise<TestToolOutcome> | TestToolOutcome
}

/** The recording host. */
export interface TestHost extends CodeModeRegistry {
  readonly inputs: ToolExecutionInput[]
  readonly events: SessionLogEvent[]
}

/** Options of {@link createTestHost}. */
export interface TestHostOptions {
  readonly runtime: CodeRuntime | undefined
  readonly maxParallelSubCalls?: number
  readonly maxOutputBytes?: number
}

/** Creates a host over `tools`. */
export function createTestHost(tools: Record<string, TestTool>, options: TestHostOptions): TestHost {
  const inputs: ToolExecutionInput[] = []
  const events: SessionLogEvent[] = []
  return {
    inputs,
    events,
    codeRuntime: () => options.runtime,
    maxParallelSubCalls: options.maxParallelSubCalls ?? 10,
    maxOutputBytes: options.maxOutputBytes ?? 64 * 1024 * 1024,
    bindingNames: () => Object.keys(tools).sort(),
    executionMode: ({ name }) => tools[name]?.mode ?? 'exclusive',
    logDispatchStart: (event) => {
      events.push(event)
    },
    logDispatch: async (event) => {
      events.push(event)
    },
    async execute(input) {
      inputs.push(input)
      const tool = Object.hasOwn(tools, input.name) ? tools[input.name] : undefined
      if (tool === undefined) return failure(`unknown tool ${input.name}`, 'UNKNOWN_TOOL')
      let outcome: TestToolOutcome
      try {
        outcome = await tool.run(input.arguments as JsonValue, input)
      } catch (error) {
        return failure(error instanceof Error ? error.message : String(error), 'TOOL_FAILED')
      }
      if ('error' in outcome) return failure(outcome.error, outcome.code ?? 'TOOL_FAILED', outcome.contexts)
      const result: ToolExecutionResult = {
        isError: false,
        value: outcome.value,
        content: [{ type: 'text', text: JSON.stringify(outcome.value) }],
        ...(outcome.contexts === undefined ? {} : { additionalContexts: outcome.contexts }),
      }
      return Object.freeze(result)
    },
  }
}

function failure(message: string, code: string, contexts?: readonly AdditionalContext[]): ToolExecutionResult {
  const result: ToolExecutionResult = {
    isError: true,
    error: { message, info: { name: 'ToolError', code } },
    content: [{ type: 'text', text: `Error: ${message}` }],
    ...(contexts === undefined ? {} : { additionalContexts: contexts }),
  }
  return Object.freeze(result)
}

/** A run context as the registry would hand `run_code`'s body. */
export function runContext(
  signal: AbortSignal = new AbortController().signal,
  callId = 'call-1',
): ToolRunContext & { readonly deferred: AdditionalContext[] } {
  const deferred: AdditionalContext[] = []
  return {
    token: Symbol('outer') as ToolExecutionToken,
    callId,
    name: 'run_code',
    arguments: {},
    signal,
    agent: 'agent-a',
    deferContext: (context) => {
      deferred.push(context)
    },
    deferred,
  }
}

/** A promise with its resolvers. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}
