/**
 * What the page needs from "where code runs": this tab (the registry and a Web Worker
 * runtime in the page) or the server (the HTTP API). Both serve the same demo tools.
 *
 * @module
 */
import type { PendingApproval } from '../../src/approvals/types.js'
import type { CodeLogEntry } from '../../src/code-runtime/contract.js'
import type { ApprovalSettledData } from '../../src/http/_approvals.js'
import type { JsonValue } from '../../src/json/json-value.js'
import type { CodeDispatchEvent, CodeDispatchStartEvent } from '../../src/runtime-types.js'
import type { ToolExecutionResult, ToolPresentationMode } from '../../src/types.js'

/** Budgets a run asks for (honoured in the tab; the server keeps its own). */
export interface RunBudgets {
  readonly computeMs: number
  readonly maxWallMs: number
}

/** A call waits for a person (the demo's writing tools ask), and how that ended. */
export interface ApprovalListener {
  /** A call of this run (or this native call) waits for Allow / Deny. */
  approval(request: PendingApproval): void
  /** It was decided, expired or withdrawn. */
  approvalSettled(settled: ApprovalSettledData): void
}

/** Live events of one run. */
export interface RunListener extends ApprovalListener {
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

/** The languages a playground program is written in. */
export type ProgramLanguage = 'typescript' | 'python'

/** One place code can run. */
export interface Backend {
  readonly where: 'tab' | 'server'
  /** Runs `code`, written in `language`, through `run_code` with the agent of `mode`. Never rejects for program failures. */
  run(code: string, language: ProgramLanguage, mode: ToolPresentationMode, budgets: RunBudgets, listener: RunListener, signal: AbortSignal): Promise<RunOutcome>
  /** Calls one tool directly (native presentation); `approvals` hears about it waiting for a person. */
  execute(name: string, args: JsonValue, mode: ToolPresentationMode, signal: AbortSignal, approvals?: ApprovalListener): Promise<ToolExecutionResult>
  /** Answers a pending approval (Allow / Deny). Rejects with a message when it was refused (expired, already decided…). */
  decide(id: string, decision: 'allow' | 'deny'): Promise<void>
}

/** The failure kind of a `run_code` result (`exception | timeout | abort | worker-exit`), if it is one. */
export function failureKind(result: ToolExecutionResult): string | undefined {
  if (!result.isError) return undefined
  const match = /code run failed \((exception|timeout|abort|worker-exit)\)/.exec(result.error.message)
  return match?.[1]
}
