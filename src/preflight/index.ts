/**
 * Preflight: a Code Mode program's type errors and call plan before anything runs.
 * @module
 */
export { analyzeProgram, MAX_CHECKED_CHARS, MAX_CHECKED_DEPTH } from './analyze.js'
export { createInlinePreflightEngine } from './inline-engine.js'
export type { InlinePreflightEngineOptions, TypeScriptLoad } from './inline-engine.js'
export { extractPlan, extractPythonPlan } from './plan.js'
export type { PlanResult } from './plan.js'
export { MAX_SHOWN_DIAGNOSTICS, DEFAULT_CHECK_TIMEOUT_MS } from './preflight.js'
export { createThreadedPreflightEngine, servePreflightThread } from './threaded-engine.js'
export type { PreflightThread, ThreadedPreflightEngineOptions } from './threaded-engine.js'
export { createTypeScriptChecker } from './typescript-checker.js'
export type { LibReader, TypeScriptChecker, TypeScriptModule } from './typescript-checker.js'
export { MAX_DIAGNOSTIC_MESSAGE_CHARS } from './types.js'
export type {
  PlannedCall,
  PreflightDiagnostic,
  PreflightEngine,
  PreflightEngineRequest,
  PreflightEngineResult,
  PreflightMode,
  PreflightPlan,
  PreflightReport,
  PreflightRequest,
  PreflightSeverity,
  RawDiagnostic,
  ToolSpan,
} from './types.js'
