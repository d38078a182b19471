/**
 * What the page needs from "where code runs": this tab (the registry and a Web Worker
 * runtime in the page) or the server (the HTTP API). Both serve the same demo tools.
 *
 * @module
 */
import type { CodeLogEntry } from '../../src/code-runtime/contract.js'
import type { JsonValue } from '../../src/json/json-value.js'
import type { CodeDispatchEvent, CodeDispatchStartEvent } from '../../src/runtime-types.js'
import type { ToolExecutionResult, ToolPresentationMode } from '../../src/types.js'

/** Budgets a run asks for (honoured in the tab; the server keeps its own). */
export interface RunBudgets {
  readonly computeMs: number
  readonly maxWallMs: number
}

/** Live events of one run. */
export interface RunListener {
  log(entry: CodeLogEntry): void
  dispatchStart(event: CodeDispatchStartEvent): void
  dispatch(event: CodeDispatchEvent): void
}

/** A settled run as the page shows it. */
export interface RunOutcome {
  readonly result: ToolExecutionResult
  /** Measured by the runtime when it ran in the tab; absent for server runs. */
  readonly stats?: { readonly wallMs: number; readonly computeMs: number }
  /** Whether console lines were streamed live (else the page shows the result's logs). */
  readonly streamedLogs: boolean
}

/** One place code can run. */
export interface Backend {
  readonly where: 'tab' | 'server'
  /** Runs `code` through `run_code` with the agent of `mode`. Never rejects for program failures. */
  run(code: string, mode: ToolPresentationMode, budgets: RunBudgets, listener: RunListener, signal: AbortSignal): Promise<RunOutcome>
  /** Calls one tool directly (native presentation). */
  execute(name: string, args: JsonValue, mode: ToolPresentationMode, signal: AbortSignal): Promise<ToolExecutionResult>
}

/** The failure kind of a `run_code` result (`exception | timeout | abort | worker-exit`), if it is one. */
export function failureKind(result: ToolExecutionResult): string | undefined {
  if (!result.isError) return undefined
  const match = /code run failed \((exception|timeout|abort|worker-exit)\)/.exec(result.error.message)
  return match?.[1]
}
