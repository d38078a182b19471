/**
 * `run_code`: the reserved Code Mode transport. A raw tool definition whose body hands
 * the model's program to the configured `CodeRuntime` and routes every `tools.x()`
 * binding call back into the registry's pipeline (see `bridge.ts`). The registry
 * creates it with a {@link CodeModeHost}, its narrow view of the registry.
 *
 * @module
 */
import { ToolArgsError } from '../errors.js'
import type { SchemaViolation } from '../errors.js'
import type { CodeRuntime } from '../code-runtime/contract.js'
import type { JsonObject, JsonValue } from '../json/json-value.js'
import type { CodeDispatchEvent, CodeDispatchStartEvent, CodeLogEvent } from '../runtime-types.js'
import type {
  AnyToolDefinition,
  ContentBlock,
  ScopeKey,
  ToolDefinition,
  ToolExecutionInput,
  ToolExecutionMode,
  ToolExecutionResult,
} from '../types.js'
import type { JsonSchemaNode, ObjectJsonSchema } from '../schema/json-schema-node.js'
import { runCodeBridge } from './bridge.js'
import { renderRunCodeOutput } from './render-output.js'
import type { RunCodeOutput } from './render-output.js'

export type { RunCodeOutput } from './render-output.js'

/** The reserved name of the Code Mode transport. */
export const RUN_CODE_TOOL_NAME = 'run_code'

/** The validated arguments of a `run_code` call. */
export interface RunCodeArgs {
  /** The program: the body of an async function in the runtime's language. */
  readonly code: string
  /** The model's short summary of what the program does (for UIs and approvals). */
  readonly description: string
}

/**
 * What `run_code` needs from the registry that owns it. The registry implements it;
 * nothing else should.
 */
export interface CodeModeHost {
  /** The configured sandbox, read at call time; `undefined` makes `run_code` fail clearly. */
  codeRuntime(): CodeRuntime | undefined
  /** Binding concurrency of one run (validated, ≥ 1): safe calls overlap up to this many. */
  readonly maxParallelSubCalls: number
  /** Cap on the combined serialized logs + completion value (or failure message) of one run. */
  readonly maxOutputBytes: number
  /**
   * The binding names a program of `agent` gets: every tool visible to that agent
   * except `run_code`, sorted by code point.
   */
  bindingNames(agent: ScopeKey | undefined): readonly string[]
  /** Runs one sub-call through the whole pipeline (`ToolRuntime.execute`). Never rejects. */
  execute(input: ToolExecutionInput): Promise<ToolExecutionResult>
  /** The scheduling class of one sub-call (`ToolRuntime.executionMode`). */
  executionMode(input: Pick<ToolExecutionInput, 'name' | 'arguments' | 'agent'>): ToolExecutionMode
  /** Appends a `tool/code-dispatch-start` event to the session log. Never throws. */
  logDispatchStart(event: CodeDispatchStartEvent): void
  /**
   * Runs the `tools/code-dispatch-log` waterfall over a settled sub-call's event (a
   * spill policy may replace oversized content), then appends the result to the
   * session log. Never throws: a failing listener keeps the event as it was.
   */
  logDispatch(event: CodeDispatchEvent): Promise<void>
  /**
   * Optional: receives each console line of a running program as it is written (for
   * live streaming). Absent → the runtime is not asked to stream. Never throws.
   */
  logOutput?(event: CodeLogEvent): void
}

const parameters: ObjectJsonSchema = {
  type: 'object',
  properties: {
    code: {
      type: 'string',
      description:
        'The program: the body of an async function. Call tools as `await tools.name(args)`; ' +
        'emit results with `return` and/or `console.log(...)`.',
    },
    description: {
      type: 'string',
      description: 'A short summary of what the program does.',
    },
  },
  required: ['code', 'description'],
  additionalProperties: false,
}

const outputSchema: JsonSchemaNode = {
  type: 'object',
  properties: {
    logs: { type: 'array', items: { type: 'string' } },
    result: {},
  },
  required: ['logs'],
  additionalProperties: false,
}

function validateRunCodeArgs(args: JsonValue): RunCodeArgs {
  const violations: SchemaViolation[] = []
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    throw new ToolArgsError([{ path: '', message: 'expected an object with `code` and `description`' }])
  }
  const record = args as JsonObject
  for (const key of ['code', 'description'] as const) {
    if (!Object.hasOwn(record, key)) violations.push({ path: `/${key}`, message: 'is required' })
    else if (typeof record[key] !== 'string') violations.push({ path: `/${key}`, message: 'must be a string' })
  }
  for (const key of Object.keys(record)) {
    if (key !== 'code' && key !== 'description') {
      violations.push({ path: `/${escapePointer(key)}`, message: 'is not allowed (additionalProperties: false)' })
    }
  }
  if (violations.length > 0) throw new ToolArgsError(violations)
  return args as unknown as RunCodeArgs
}

function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1')
}

function contentText(content: readonly ContentBlock[]): string {
  return content
    .map((block) => (block.type === 'text' ? block.text : `[${block.type}]`))
    .join('\n')
}

/**
 * Creates the `run_code` definition bound to `host`. Raw (not `defineTool`): it owns
 * its argument validation (`INVALID_ARGS` through `ToolArgsError`) and declares the
 * canonical output `{ logs: string[], result?: JsonValue }`.
 *
 * The body never returns while a sub-call it started is still running; a failed run
 * throws `CodeRunFailedError` (code `CODE_RUN_FAILED`), which the pipeline renders as
 * `Error: code run failed (<kind>): <message>` plus the captured output.
 *
 * @example
 * ```ts
 * const tool = createRunCodeTool(host) // registered by the registry under non-native modes
 * ```
 */
export function createRunCodeTool(host: CodeModeHost): AnyToolDefinition {
  const definition: ToolDefinition<RunCodeArgs, JsonObject> = {
    name: RUN_CODE_TOOL_NAME,
    description:
      'Run a program that calls the available tools through the `tools` SDK. Only what the ' +
      'program prints or returns comes back.',
    parameters,
    output: {
      schema: outputSchema,
      render: (_args, value) => [{ type: 'text', text: renderRunCodeOutput(value as unknown as RunCodeOutput) }],
      presentationMeta: (_args, value) => {
        const output = value as unknown as RunCodeOutput
        return {
          logLines: Array.isArray(output.logs) ? output.logs.length : 0,
          hasResult: output.result !== undefined,
        }
      },
    },
    validateArgs: validateRunCodeArgs,
    softValidateArgs: (args) => {
      try {
        return validateRunCodeArgs(args)
      } catch {
        return undefined
      }
    },
    async execute(args, exec) {
      return (await runCodeBridge(host, args, exec)) as unknown as JsonObject
    },
    presentCall: (args, rawArgs) => ({
      card: 'generic',
      kind: 'execute',
      title: 'Run code',
      rawInput: args === undefined ? rawArgs : args.code,
      ...(args === undefined || args.description === '' ? {} : { content: args.description }),
    }),
    presentResult: (args, result) => ({
      card: 'generic',
      title: args === undefined || args.description === '' ? 'Run code' : args.description,
      content: contentText(result.content),
    }),
  }
  return definition
}
