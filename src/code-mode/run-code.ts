/**
 * `run_code`: the reserved Code Mode transport. A raw tool definition whose body hands
 * the model's program to the configured `CodeRuntime` and routes every `tools.x()`
 * binding call back into the registry's pipeline (see `bridge.ts`). The registry
 * creates it with a {@link CodeModeRegistry}, its narrow view of the registry.
 *
 * @module
 */
import { ToolArgsError } from '../errors.js'
import type { SchemaViolation } from '../errors.js'
import type { JsonObject, JsonValue } from '../json/json-value.js'
import type { AnyToolDefinition, ContentBlock, ToolDefinition } from '../types.js'
import type { JsonSchemaNode, ObjectJsonSchema } from '../schema/json-schema-node.js'
import { runCodeBridge } from './bridge.js'
import { RUN_CODE_TOOL_NAME, type CodeModeRegistry, type RunCodeArgs } from './registry-seam.js'
import { renderRunCodeOutput } from './render-output.js'
import type { RunCodeOutput } from './render-output.js'

export type { RunCodeOutput } from './render-output.js'
export { RUN_CODE_TOOL_NAME, type CodeModeRegistry, type RunCodeArgs } from './registry-seam.js'

/**
 * The former name of {@link CodeModeRegistry}, kept so existing imports compile.
 *
 * @deprecated Use `CodeModeRegistry`: "host" now means only the trusted side of a
 * sandbox boundary (docs/architecture.md, vocabulary).
 */
export type CodeModeHost = CodeModeRegistry

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
 * Creates the `run_code` definition bound to `registry`. Raw (not `defineTool`): it owns
 * its argument validation (`INVALID_ARGS` through `ToolArgsError`) and declares the
 * canonical output `{ logs: string[], result?: JsonValue }`.
 *
 * The body never returns while a sub-call it started is still running; a failed run
 * throws `CodeRunFailedError` (code `CODE_RUN_FAILED`), which the pipeline renders as
 * `Error: code run failed (<kind>): <message>` plus the captured output.
 *
 * @example
 * ```ts
 * const tool = createRunCodeTool(registry) // the registry creates it for non-native modes
 * ```
 */
export function createRunCodeTool(registry: CodeModeRegistry): AnyToolDefinition {
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
        // Soft validation answers "not valid" instead of throwing (presenters, classifiers).
        return undefined
      }
    },
    async execute(args, exec) {
      return (await runCodeBridge(registry, args, exec)) as unknown as JsonObject
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
