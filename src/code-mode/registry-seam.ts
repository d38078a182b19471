/**
 * The seam between Code Mode and the registry: the reserved transport name, what `run_code` needs
 * from the registry that owns it ({@link CodeModeRegistry}) and the arguments it runs with.
 * @module
 */
import type { CodeRuntime, ParkedRunState } from '../code-runtime/contract.js'
import type { DurableRunNumbering } from '../durable/runs.js'
import type { CallSpan } from '../telemetry/telemetry.js'
import type { TraceCarrier } from '../telemetry/types.js'

export type { DurableRunNumbering } from '../durable/runs.js'
import type { CodeDispatchEvent, CodeDispatchStartEvent, CodeLogEvent, ToolCatalog } from '../runtime-types.js'
import type { ScopeKey, ToolExecutionInput, ToolExecutionMode, ToolExecutionResult } from '../types.js'

/** The reserved name of the Code Mode transport. */
export const RUN_CODE_TOOL_NAME = 'run_code'

/** The validated arguments of a `run_code` call. */
export interface RunCodeArgs {
  /** The program: the body of an async function in the code runtime's language. */
  readonly code: string
  /** The model's short summary of what the program does (for UIs and approvals). */
  readonly description: string
  /** The program's language when the runtime runs several (`ToolRuntimeOptions.codeRuntimes`); absent: `codeRuntime`'s. */
  readonly language?: string
}

/**
 * The registry as `run_code` sees it: a narrow view the registry implements and nothing
 * else should (tests implement it with recording fakes).
 */
export interface CodeModeRegistry {
  /**
   * Optional: durable runs (a runtime with a `store`): the `durable` part of each run's
   * request, and word that a run ended. Absent: runs park in memory only.
   */
  readonly durable?: {
    forRun(
      callId: string,
      agent: ScopeKey | undefined,
      args: { readonly code: string; readonly description: string; readonly language?: string },
      /** Who started the run (kept in its record: a resumed run's approvals name it). */
      principal?: string,
      /** The run's span context (kept in its record: a resumed run continues the trace). */
      trace?: TraceCarrier,
    ): {
      onPark(state: ParkedRunState, numbering: DurableRunNumbering): void
      /** The run's secret (kept in its parked state): what binds its sub-calls' records and approvals to it. Absent: the bridge mints one. */
      readonly secret?: string
      readonly resume?: { readonly state: ParkedRunState; readonly numbering: DurableRunNumbering }
    }
    ended(callId: string): Promise<void>
  }
  /** Optional: the span of the live call `token` names (telemetry: a run's events and preflight span). */
  runSpan?(token: symbol): CallSpan | undefined
  /**
   * The code runtime for `language` (absent: the one a model is shown), read at call time;
   * `undefined` (none configured, or none for that language) makes `run_code` fail clearly.
   */
  codeRuntime(language?: string): CodeRuntime | undefined
  /** Optional: every language a program may be written in, the model's first; absent: the code runtime's one. */
  languages?(): readonly string[]
  /** Binding concurrency of one run (validated, ≥ 1): safe calls overlap up to this many. */
  readonly maxParallelSubCalls: number
  /** Cap on the combined serialized logs + completion value (or failure message) of one run. */
  readonly maxOutputBytes: number
  /**
   * The binding names a program of `agent` gets: every tool visible to that agent
   * except `run_code`, sorted by code point.
   */
  bindingNames(agent: ScopeKey | undefined): readonly string[]
  /**
   * Optional: the catalog of what a program of `agent` may call — the same tools as
   * {@link bindingNames} — exposed to the program as the `catalog` global. Absent → no
   * `catalog` global. Called once per run, at its start; cheap while the tool set is
   * unchanged.
   */
  catalog?(agent: ScopeKey | undefined): ToolCatalog
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
   * live streaming). Absent → the code runtime is not asked to stream. Never throws.
   */
  logOutput?(event: CodeLogEvent): void
}
