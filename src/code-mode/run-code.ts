/**
 * `run_code`: the reserved Code Mode transport.
 * @module
 */
import { CodeRunFailedError, ToolArgsError, ToolError } from '../errors.js'
import type { JsonObject, JsonValue } from '../json/json-value.js'
import type { AnyToolDefinition, ContentBlock, ScopeKey, ToolDefinition, ToolRunContext } from '../types.js'
import type { JsonSchemaNode, ObjectJsonSchema } from '../schema/json-schema-node.js'
import { compileJsonSchema } from '../schema/json-schema.js'
import type { CompiledJsonSchema } from '../schema/json-schema.js'
import { runCodeBridge } from './bridge.js'
import { RUN_CODE_TOOL_NAME, type CodeModeRegistry, type RunCodeArgs } from './registry-seam.js'
import { renderRunCodeOutput } from './render-output.js'
import type { RunCodeOutput } from './render-output.js'
import { renderDiagnostics } from '../preflight/preflight.js'
import type { PreflightDiagnostic, PreflightMode, PreflightReport } from '../preflight/types.js'

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

/** The same parameters, worded for a Python code runtime. */
const pythonParameters: ObjectJsonSchema = {
  ...parameters,
  properties: {
    ...parameters.properties,
    code: {
      type: 'string',
      description: 'The program, in Python: the body of an async function. Call tools as `await tools.name(args)`; emit results with `return` and/or `print(...)`.',
    },
  },
}

const outputSchema: JsonSchemaNode = {
  type: 'object',
  properties: {
    logs: { type: 'array', items: { type: 'string' } },
    result: {},
    preflight: { type: 'string' },
  },
  required: ['logs'],
  additionalProperties: false,
}

/** `base` with a `language` choice when the runtime runs more than one language (the model's, first, is the default). */
function withLanguages(base: ObjectJsonSchema, languages: readonly string[]): ObjectJsonSchema {
  if (languages.length < 2) return base
  const language: JsonSchemaNode = { type: 'string', enum: [...languages], description: `The program's language; default ${JSON.stringify(languages[0])}.` }
  return { ...base, properties: { ...base.properties, language } }
}

/**
 * What `run_code` arguments are checked against: {@link parameters}, with `language` naming one
 * of `known` whenever the runtime knows its languages (a one-language runtime presents no
 * `language`, yet takes its own and refuses another by name).
 */
function validationSchema(known: readonly string[]): ObjectJsonSchema {
  if (known.length === 0) return parameters
  return { ...parameters, properties: { ...parameters.properties, language: { type: 'string', enum: [...known] } } }
}

/**
 * A validator of `run_code` arguments; `language` may name any language the runtime runs
 * (`languages`, the model's first). The shared schema validator (`compileJsonSchema`) checks
 * them, so `run_code` words its violations as every other tool does (`missing required
 * property "code"`); the compiled schema is kept while the languages stay the same.
 */
function runCodeArgsValidator(languages: () => readonly string[]): (args: JsonValue) => RunCodeArgs {
  let compiled: { readonly key: string; readonly schema: CompiledJsonSchema } | undefined
  return (args) => {
    const known = languages()
    const key = known.join('\u0000')
    if (compiled === undefined || compiled.key !== key) compiled = { key, schema: compileJsonSchema(validationSchema(known)) }
    const violations = compiled.schema.validate(args)
    if (violations.length > 0) throw new ToolArgsError(violations)
    return args as unknown as RunCodeArgs
  }
}

function contentText(content: readonly ContentBlock[]): string {
  return content
    .map((block) => (block.type === 'text' ? block.text : `[${block.type}]`))
    .join('\n')
}

/** What `run_code` needs for preflight: the mode in force and a check that never rejects. */
export interface RunCodePreflight {
  /** The mode in force for a program of `agent` (an agent's own declaration wins over the runtime's option). */
  mode(agent: ScopeKey | undefined): PreflightMode
  /**
   * Whether `'warn'` checks at all: only with an engine the integrator chose
   * (`preflightEngine`); the default one has no compiler, and a plan alone tells the
   * model nothing. `'block'` always asks the engine (an unavailable check never blocks).
   */
  warnChecks(): boolean
  check(code: string, agent: ScopeKey | undefined, language: string, signal: AbortSignal): Promise<PreflightReport>
  /**
   * Optional: plan approval (docs/approvals.md, "Plan approval"). Asks once for the
   * program's planned tools that ask, before it runs; resolves to the release of the
   * pre-approval (called when the run settles) or rejects with `DENIED_BY_APPROVAL`.
   */
  approvePlan?(input: { readonly code: string; readonly description: string; readonly language: string; readonly run: ToolRunContext }): Promise<() => void>
}

/**
 * How long a failed run waits for a check still in progress under `'warn'`: a failure is
 * when the diagnostics help most (the run-time error of `tools.count_itmes(…)` is the
 * symptom; the diagnostic names the line). A successful run never waits.
 */
export const WARN_WAIT_ON_FAILURE_MS = 2_000

/**
 * How long a successful run that ended before its check waits for it under `'warn'`: a
 * warm check takes tens of ms, a quick program less, and without the wait the same
 * program read differently from one send to the next (docs/code-mode.md, "Preflight").
 */
export const WARN_WAIT_ON_SUCCESS_MS = 250

async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms)))])
  clearTimeout(timer)
}

/**
 * The diagnostics a failed run shows: without the check's own syntax or bound refusal when the run
 * failed on that very text (both come from the same stripper: the message would be shown twice).
 */
function notesFor(error: CodeRunFailedError, diagnostics: readonly PreflightDiagnostic[]): readonly PreflightDiagnostic[] {
  if (!error.message.startsWith('code run failed (exception): SyntaxError')) return diagnostics
  return diagnostics.filter((d) => d.code !== 'SYNTAX' && d.code !== 'PROGRAM_BOUND')
}

const WARN_HEADING = 'Preflight (type-check against the tools SDK, before the run) found'
const BLOCK_HEADING = "preflight: 'block' refused the program; nothing ran. The type-check against the tools SDK found"

/** A failed run's error with the preflight text added after its message (before the captured output). */
function withNotes(error: CodeRunFailedError, notes: string): CodeRunFailedError {
  const prefix = `code run failed (${error.kind}): `
  const captured = error.logs.length > 0 ? `\nCaptured output:\n${error.logs.join('\n')}` : ''
  if (!error.message.startsWith(prefix) || !error.message.endsWith(captured)) return error
  const inner = error.message.slice(prefix.length, error.message.length - captured.length)
  return new CodeRunFailedError(error.kind, `${inner}\n\n${notes}`, error.logs, { cause: error })
}

/** Runs the program once its plan is approved (when plan approval applies). */
async function runApproved(registry: CodeModeRegistry, preflight: RunCodePreflight | undefined, args: RunCodeArgs, exec: ToolRunContext): Promise<RunCodeOutput> {
  const language = registry.codeRuntime(args.language)?.language
  if (preflight?.approvePlan === undefined || language === undefined) return runCodeBridge(registry, args, exec)
  const release = await preflight.approvePlan({ code: args.code, description: args.description, language, run: exec })
  try {
    return await runCodeBridge(registry, args, exec)
  } finally {
    release()
  }
}

/** The check, as a `toolyard.preflight` child span of the run's (its diagnostics count and plan size). */
async function checkTraced(registry: CodeModeRegistry, preflight: RunCodePreflight, code: string, exec: ToolRunContext, language: string, mode: PreflightMode): Promise<PreflightReport> {
  const span = registry.runSpan?.(exec.token)?.startChild('toolyard.preflight', { 'toolyard.preflight.mode': mode })
  const report = preflight.check(code, exec.agent, language, exec.signal)
  if (span === undefined) return report
  try {
    const r = await report
    span.setAttributes({
      'toolyard.preflight.diagnostics': r.diagnostics.length,
      'toolyard.preflight.errors': r.diagnostics.filter((d) => d.severity === 'error').length,
      'toolyard.preflight.plan_calls': r.plan.calls.length,
      'toolyard.preflight.plan_dynamic': r.plan.dynamic,
    })
    return r
  } finally {
    span.end()
  }
}

/** Runs the program under the preflight mode in force (see {@link RunCodePreflight}). */
async function runWithPreflight(registry: CodeModeRegistry, preflight: RunCodePreflight | undefined, args: RunCodeArgs, exec: ToolRunContext): Promise<RunCodeOutput> {
  const mode = preflight?.mode(exec.agent) ?? 'off'
  const language = registry.codeRuntime(args.language)?.language
  // Python gets a plan only: nothing a model would read changes, so the run goes as is.
  if (preflight === undefined || mode === 'off' || language === undefined || language === 'python') return runApproved(registry, preflight, args, exec)
  if (mode === 'warn' && !preflight.warnChecks()) return runApproved(registry, preflight, args, exec)
  if (mode === 'block') {
    const report = await checkTraced(registry, preflight, args.code, exec, language, mode).catch(() => undefined)
    const text = report === undefined ? undefined : renderDiagnostics(report.diagnostics, BLOCK_HEADING)
    if (text !== undefined) throw new ToolError('PREFLIGHT_FAILED', text)
    return runApproved(registry, preflight, args, exec)
  }
  // 'warn': the check runs alongside the program; a run that ends first waits for it a little.
  let report: PreflightReport | undefined
  const checked = checkTraced(registry, preflight, args.code, exec, language, mode).then(
    (r) => (report = r),
    // A check never rejects by contract; one that does is a hint lost, not a run failed.
    () => undefined,
  )
  try {
    const output = await runApproved(registry, preflight, args, exec)
    if (report === undefined) await within(checked, WARN_WAIT_ON_SUCCESS_MS)
    const text = report === undefined ? undefined : renderDiagnostics(report.diagnostics, WARN_HEADING)
    return text === undefined ? output : { ...output, preflight: text }
  } catch (error) {
    if (!(error instanceof CodeRunFailedError) || error.kind !== 'exception') throw error
    await within(checked, WARN_WAIT_ON_FAILURE_MS)
    const text = report === undefined ? undefined : renderDiagnostics(notesFor(error, report.diagnostics), WARN_HEADING)
    throw text === undefined ? error : withNotes(error, text)
  }
}

/**
 * Creates the `run_code` definition bound to `registry`. Raw (not `defineTool`): it owns
 * its argument validation (`INVALID_ARGS` through `ToolArgsError`) and declares the
 * canonical output `{ logs: string[], result?: JsonValue }`.
 *
 * With `preflight`, the program is checked first (`'block'`: allowlisted mistakes are
 * answered as `PREFLIGHT_FAILED` and nothing runs) or alongside the run (`'warn'`: the
 * mistakes are appended to what the model reads; see docs/code-mode.md, "Preflight").
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
export function createRunCodeTool(registry: CodeModeRegistry, preflight?: RunCodePreflight): AnyToolDefinition {
  // A bare registry (no code runtime yet) gets the TypeScript wording.
  const python = typeof registry.codeRuntime === 'function' && registry.codeRuntime()?.language === 'python'
  const languages = (): readonly string[] => registry.languages?.() ?? []
  const validateRunCodeArgs = runCodeArgsValidator(languages)
  const definition: ToolDefinition<RunCodeArgs, JsonObject> = {
    name: RUN_CODE_TOOL_NAME,
    description: python
      ? 'Run a Python program that calls the available tools through the `tools` SDK. Only what the program prints or returns comes back.'
      : 'Run a program that calls the available tools through the `tools` SDK. Only what the ' + 'program prints or returns comes back.',
    parameters: withLanguages(python ? pythonParameters : parameters, languages()),
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
      return (await runWithPreflight(registry, preflight, args, exec)) as unknown as JsonObject
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
