/**
 * The preflight seam: what `runtime.preflight()` answers ({@link PreflightReport}) and the {@link
 * PreflightEngine} that produces the plan and the raw diagnostics.
 * @module
 */

/** How much a diagnostic matters. `error`: an allowlisted mistake (unknown tool, wrong argument…) that `'block'` refuses and `'warn'` shows. `warning`: any other type error (never shown to the model, never blocks). `info`: a note about the check itself (unavailable, timed out). */
export type PreflightSeverity = 'error' | 'warning' | 'info'

/** One finding, positioned in the program's own text (1-based line and column). */
export interface PreflightDiagnostic {
  /** 1-based line in the program. */
  readonly line: number
  /** 1-based column (UTF-16 code units) in the program. */
  readonly column: number
  /** `TS2339`-style for compiler diagnostics; `SYNTAX`, `PROGRAM_BOUND`, `CHECK_UNAVAILABLE`, `CHECK_TIMEOUT` otherwise. */
  readonly code: string
  /** What is wrong, as the compiler or the bound says it (at most {@link MAX_DIAGNOSTIC_MESSAGE_CHARS} characters). */
  readonly message: string
  readonly severity: PreflightSeverity
}

/** One static tool reference of a program. */
export interface PlannedCall {
  /** The tool's name. */
  readonly name: string
  /** 1-based line of the reference in the program. */
  readonly line: number
  /** 1-based column of the reference in the program. */
  readonly column: number
}

/** The tools a program can call, read from its text without running it. */
export interface PreflightPlan {
  /** Every static reference (`tools.x(…)`, `tools?.x(…)`, `tools['x'](…)`, a destructured or aliased binding), in source order. */
  readonly calls: readonly PlannedCall[]
  /** `true` when the program may reach tools the list cannot name: a computed name, an alias indexed by a variable, `tools` escaping as a value, or text that could not be parsed. */
  readonly dynamic: boolean
}

/** The answer of `runtime.preflight()`. */
export interface PreflightReport {
  /** Findings, in source order; `info` notes about the check come last. */
  readonly diagnostics: readonly PreflightDiagnostic[]
  readonly plan: PreflightPlan
  /** Wall-clock milliseconds the preflight took (engine load included on a first check). */
  readonly ms: number
}

/** What `runtime.preflight()` accepts. */
export interface PreflightRequest {
  /** The program: the body of an async function, as `run_code` receives it. */
  readonly code: string
  /** Check against what this agent may call from code (default: the global layer). */
  readonly agent?: string
}

/** `createToolRuntime({ preflight })`: what `run_code` does with a program before and while it runs. */
export type PreflightMode = 'off' | 'warn' | 'block'

/**
 * A span of the program that references a tool (a call from its callee to its closing
 * parenthesis, or a destructured name), in program offsets: the diagnostics about
 * arguments and members that matter are those inside one.
 */
export interface ToolSpan {
  readonly start: number
  readonly end: number
}

/** A compiler diagnostic before filtering, positioned by program offset. */
export interface RawDiagnostic {
  /** Offset in the program (clamped to its text). */
  readonly start: number
  /** The compiler's number (`2339`). */
  readonly code: number
  readonly message: string
}

/** What an engine is asked. */
export interface PreflightEngineRequest {
  readonly program: string
  /** `typescript`, `javascript` or `python` (a code runtime's `language`); python gets the plan only. */
  readonly language: string
  /** The declarations the program is checked against (the SDK block of every tool it may call); `undefined` → plan only. */
  readonly declarations: string | undefined
}

/** What an engine answers: the plan, the tool spans, and the compiler's diagnostics or why there are none. */
export interface PreflightEngineResult {
  readonly plan: PreflightPlan
  readonly spans: readonly ToolSpan[]
  /** Compiler diagnostics (`undefined` when no type-check ran: see `notes`). */
  readonly diagnostics: readonly RawDiagnostic[] | undefined
  /** Diagnostics that are already final: syntax errors, bounds, an unavailable or timed-out check. */
  readonly notes: readonly PreflightDiagnostic[]
}

/** The seam a platform fills: given a program, produce its plan and its compiler diagnostics. */
export interface PreflightEngine {
  /** Where the work runs, for docs and tests: `inline` (the calling thread) or `thread`. */
  readonly where: 'inline' | 'thread'
  analyze(request: PreflightEngineRequest, signal?: AbortSignal): Promise<PreflightEngineResult>
  /** Releases a thread or a warm compiler. */
  dispose(): Promise<void>
}

/** The longest message a diagnostic carries; the compiler's elaborations of large types are cut. */
export const MAX_DIAGNOSTIC_MESSAGE_CHARS = 600
