/**
 * `defineTool()`: a typed tool definition from the schema DSL.
 * @module
 */
import { LosslessJsonError, ToolArgsError, type SchemaViolation } from '../errors.js'
import type { JsonValue } from '../json/json-value.js'
import { snapshotLosslessJson } from '../json/lossless.js'
import type { ToolCallView, ToolResultView } from '../presentation.js'
import type {
  ContentBlock,
  ToolCaller,
  ToolDefinition,
  ToolExecution,
  ToolExecutionResult,
  ToolPreviewContext,
  ToolResultRecord,
  ToolRunContext,
} from '../types.js'
import { parameterSchemaSpecToJsonSchema, valueSchemaSpecToJsonSchema, type ParameterSchemaSpec, type ValueSchemaSpec } from './dsl.js'
import type { InferArgs, InferValue } from './infer.js'
import { compileJsonSchema, type CompiledJsonSchema } from './json-schema.js'
import { readToolDefinition } from './tool-definition.js'

/** The output declaration of a {@link ToolSpec}: a DSL value spec plus pure projectors. */
export interface ToolOutputSpec<Args, O extends ValueSchemaSpec> {
  /** The canonical value's schema, as a DSL value spec (any JSON root). */
  readonly schema: O
  /** Pure projection of the canonical value to model-facing content. */
  render(args: Args, value: InferValue<O>): readonly ContentBlock[]
  /** Pure projection to JSON metadata, computed for direct top-level calls only. */
  presentationMeta?(args: Args, value: InferValue<O>): JsonValue
}

/** What `defineTool()` takes: a tool described with the schema DSL. */
export interface ToolSpec<P extends ParameterSchemaSpec, O extends ValueSchemaSpec> {
  /** The tool's name as models see it. */
  readonly name: string
  /** What the tool does, for the model. */
  readonly description: string
  /** The properties of the (open) parameter object. */
  readonly parameters: P
  /** The mandatory canonical output declaration. */
  readonly output: ToolOutputSpec<InferArgs<P>, O>
  /** The body: receives validated, frozen, typed arguments; returns the canonical value. */
  execute(args: InferArgs<P>, exec: ToolRunContext): Promise<InferValue<O>> | InferValue<O>
  /** Last content-only word on every normalized result (synchronous and total). */
  finalizeContent?(exec: ToolExecution, result: ToolExecutionResult): readonly ContentBlock[] | undefined
  /** How a UI renders a call; `args` is `undefined` when the raw arguments do not validate. */
  presentCall?(args: InferArgs<P> | undefined, rawArgs: JsonValue): ToolCallView | undefined
  /** How a UI renders a result; `args` is `undefined` when the raw arguments do not validate. */
  presentResult?(args: InferArgs<P> | undefined, result: ToolResultRecord, rawArgs: JsonValue): ToolResultView | undefined
  /** Cooperative deadline in ms (positive, finite), enforced by `timeoutPolicy()`. */
  readonly timeoutMs?: number
  /** `true`: running it twice has the effect of running it once; a durable run re-runs a call a crash cut off (docs/durability.md). */
  readonly idempotent?: boolean
  /** Exactly `true` lets this call overlap other safe calls; receives softly validated arguments. */
  isConcurrencySafe?(args: InferArgs<P>): boolean
  /**
   * Who may call the tool: `['native']` (the model directly, never a program), `['code']`
   * (only Code Mode programs, never a wire tool) or both (the default).
   */
  readonly callers?: readonly ToolCaller[]
  /**
   * What a call will do, shown to the person asked to approve it (e.g. a diff against the
   * current file): called only when the call asks, with its validated arguments and a
   * signal that aborts when the call is cancelled or the preview's time is up. Return
   * text (or a promise of it); the registry bounds it in time and bytes, and a throw
   * shows "preview unavailable: <reason>" (docs/approvals.md, "Previews").
   */
  preview?(args: InferArgs<P>, ctx: ToolPreviewContext): string | Promise<string>
}

/** The definition `defineTool()` returns. `Value` is the inferred output type, as JSON. */
export type DefinedTool<P extends ParameterSchemaSpec, O extends ValueSchemaSpec> = ToolDefinition<InferArgs<P>, AsJson<InferValue<O>>>

/** `T` as a `JsonValue` (every inferred value is one; this only tells the compiler so, cheaply). */
type AsJson<T> = [T] extends [JsonValue] ? T : JsonValue

function checkArgs(compiled: CompiledJsonSchema, args: unknown): JsonValue {
  let snapshot: JsonValue
  try {
    snapshot = snapshotLosslessJson(args)
  } catch (error) {
    if (error instanceof LosslessJsonError) {
      throw new ToolArgsError([{ path: error.path, message: error.message.replace(/ at [^ ]*$| at the root$/, '') }], { cause: error })
    }
    throw error
  }
  const violations: SchemaViolation[] = compiled.validate(snapshot)
  if (violations.length > 0) throw new ToolArgsError(violations)
  return snapshot
}

/**
 * Validates `args` against a parameter spec and returns them typed (as a frozen
 * lossless snapshot). Defaults are never applied.
 *
 * @throws {ToolArgsError} (code `INVALID_ARGS`) listing every path-qualified violation.
 * @throws {SchemaError} when the spec itself is invalid.
 *
 * @example
 * ```ts
 * const args = validateArgs({ path: { type: 'string', required: true } }, { path: '/x' })
 * args.path // string
 * ```
 */
export function validateArgs<const P extends ParameterSchemaSpec>(parameters: P, args: unknown): InferArgs<P> {
  return checkArgs(compileJsonSchema(parameterSchemaSpecToJsonSchema(parameters)), args) as unknown as InferArgs<P>
}

/**
 * Builds a typed tool definition. At definition time the parameter spec becomes
 * `parameters` (an open object JSON Schema) and the output spec becomes
 * `output.schema`; a bad spec throws `SchemaError`, a malformed definition
 * `ToolError` with code `INVALID_DEFINITION`. The returned definition carries strict
 * `validateArgs` (throws `ToolArgsError`) and `softValidateArgs` (returns
 * `undefined`, never throws); its `execute` validates arguments it has not seen
 * validated, so the body only ever receives valid, frozen arguments. Presenters and
 * `isConcurrencySafe` receive softly validated arguments, so old logged arguments
 * never crash a replay.
 *
 * @example
 * ```ts
 * const readFile = defineTool({
 *   name: 'read_file',
 *   description: 'Read a file from disk.',
 *   parameters: {
 *     path: { type: 'string', required: true, description: 'Absolute file path' },
 *     offset: { type: 'number' },
 *   },
 *   output: { schema: { type: 'string' }, render: (_args, value) => [{ type: 'text', text: value }] },
 *   execute: (args) => `contents of ${args.path}`,
 * })
 * ```
 */
export function defineTool<const P extends ParameterSchemaSpec, const O extends ValueSchemaSpec>(
  spec: ToolSpec<P, O>,
): DefinedTool<P, O> {
  // The implementation works on erased types: relating the generic inferred types to
  // each other inside a generic body makes the checker expand them without end.
  return buildDefinition(spec as unknown as LooseToolSpec) as unknown as DefinedTool<P, O>
}

/** A {@link ToolSpec} with its argument and value types erased. */
type LooseArgs = JsonValue
type LooseToolSpec = ToolSpec<ParameterSchemaSpec, ValueSchemaSpec> & {
  readonly output: ToolOutputSpec<LooseArgs, ValueSchemaSpec> & {
    render(args: LooseArgs, value: JsonValue): readonly ContentBlock[]
    presentationMeta?(args: LooseArgs, value: JsonValue): JsonValue
  }
  execute(args: LooseArgs, exec: ToolRunContext): Promise<JsonValue> | JsonValue
  presentCall?(args: LooseArgs | undefined, rawArgs: JsonValue): ToolCallView | undefined
  presentResult?(args: LooseArgs | undefined, result: ToolResultRecord, rawArgs: JsonValue): ToolResultView | undefined
  isConcurrencySafe?(args: LooseArgs): boolean
  preview?(args: LooseArgs, ctx: ToolPreviewContext): string | Promise<string>
}

function buildDefinition(spec: LooseToolSpec): ToolDefinition<LooseArgs, JsonValue> {
  const members = readToolDefinition(spec)
  const { name, description, timeoutMs, idempotent, callers } = members
  const output = members.output as LooseToolSpec['output']
  const render = members.render as LooseToolSpec['output']['render']
  const presentationMeta = members.presentationMeta as LooseToolSpec['output']['presentationMeta']
  const execute = members.execute as LooseToolSpec['execute']
  const finalizeContent = members.functions.finalizeContent as LooseToolSpec['finalizeContent']
  const presentCall = members.functions.presentCall as LooseToolSpec['presentCall']
  const presentResult = members.functions.presentResult as LooseToolSpec['presentResult']
  const isConcurrencySafe = members.functions.isConcurrencySafe as LooseToolSpec['isConcurrencySafe']
  const preview = members.functions.preview as LooseToolSpec['preview']
  const parameterSpec = members.parameters
  const outputSpec = members.outputSchema

  type Args = LooseArgs
  type Value = JsonValue
  const parameters = parameterSchemaSpecToJsonSchema(parameterSpec as ParameterSchemaSpec)
  const outputSchema = valueSchemaSpecToJsonSchema(outputSpec as ValueSchemaSpec)
  const compiled = compileJsonSchema(parameters)
  /** Argument snapshots this definition has validated: `execute` skips re-checking them. */
  const validated = new WeakSet<object>()

  const strict = (args: unknown): Args => {
    // WeakSet#has is false for a primitive: no type guard needed.
    // Stryker disable next-line ConditionalExpression: a cache; forced false it re-validates with the same verdict
    if (validated.has(args as object)) return args as Args
    const checked = checkArgs(compiled, args)
    // Stryker disable next-line ConditionalExpression,LogicalOperator,EqualityOperator,StringLiteral: an object schema's arguments always snapshot to an object
    if (typeof checked === 'object' && checked !== null) validated.add(checked)
    return checked as Args
  }
  const soft = (args: unknown): Args | undefined => {
    try {
      // Stryker disable next-line ConditionalExpression: a cache; forced false it re-validates with the same verdict
      if (validated.has(args as object)) return args as Args
      return compiled.isValid(args) ? strict(args) : undefined
    } catch {
      // Soft validation never throws: presenters and classifiers get undefined for anything invalid.
      return undefined
    }
  }

  const definition: ToolDefinition<Args, Value> = {
    name,
    description,
    parameters,
    output: Object.freeze({
      schema: outputSchema,
      render: (args: Args, value: Value) => render.call(output, args, value),
      ...(presentationMeta === undefined
        ? {}
        : { presentationMeta: (args: Args, value: Value) => presentationMeta.call(output, args, value) }),
    }),
    execute: (args: Args, exec: ToolRunContext) => execute.call(spec, strict(args), exec) as Promise<Value> | Value,
    validateArgs: strict,
    softValidateArgs: soft,
    ...(finalizeContent === undefined ? {} : { finalizeContent: (exec: ToolExecution, result: ToolExecutionResult) => finalizeContent.call(spec, exec, result) }),
    ...(presentCall === undefined
      ? {}
      : {
          presentCall: (_args: Args | undefined, rawArgs: JsonValue) => {
            try {
              return presentCall.call(spec, soft(rawArgs), rawArgs)
            } catch {
              // A presenter is a UI nicety: its throw means "no custom view", never a failed call.
              return undefined
            }
          },
        }),
    ...(presentResult === undefined
      ? {}
      : {
          presentResult: (_args: Args | undefined, result: ToolResultRecord, rawArgs: JsonValue) => {
            try {
              return presentResult.call(spec, soft(rawArgs), result, rawArgs)
            } catch {
              // As for presentCall: the default view is used.
              return undefined
            }
          },
        }),
    // Strict: a preview only ever sees arguments that would reach the body.
    ...(preview === undefined ? {} : { preview: (args: Args, ctx: ToolPreviewContext) => preview.call(spec, strict(args), ctx) }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    ...(idempotent ? { idempotent } : {}),
    ...(callers === undefined ? {} : { callers }),
    ...(isConcurrencySafe === undefined
      ? {}
      : {
          isConcurrencySafe: (args: Args) => {
            const checked = soft(args)
            if (checked === undefined) return false
            try {
              return isConcurrencySafe.call(spec, checked) === true
            } catch {
              // A throwing classifier fails closed: the call runs exclusive.
              return false
            }
          },
        }),
  }
  return Object.freeze(definition)
}
