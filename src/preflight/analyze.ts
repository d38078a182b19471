/**
 * One engine-side analysis: the plan (bounded: `plan.ts`), then — for a TypeScript or JavaScript
 * program the bounds accepted, when a checker is at hand — the compiler's diagnostics.
 * @module
 */
import { extractPlan, extractPythonPlan } from './plan.js'
import type { TypeScriptChecker } from './typescript-checker.js'
import type { PreflightDiagnostic, PreflightEngineRequest, PreflightEngineResult } from './types.js'

/**
 * The largest program the compiler is given: 16 KiB (a model's program is a few KB; a 40-line one
 * is about 1.5 KB).
 */
export const MAX_CHECKED_CHARS = 16 * 1024

/**
 * The deepest bracket nesting the compiler is given: nested literals make it infer
 * nested types (250 levels of `[` took 4 s on a loaded machine); real programs nest a
 * dozen levels.
 */
export const MAX_CHECKED_DEPTH = 64

/** An `info` note about the check itself (positioned at the program's start). */
export function checkNote(code: string, message: string): PreflightDiagnostic {
  return Object.freeze({ line: 1, column: 1, code, message, severity: 'info' as const })
}

/** The note of a runtime where the compiler cannot be loaded (the edge: it does not fit a Worker's size limit). */
export function unavailableNote(reason: string): PreflightDiagnostic {
  return checkNote('CHECK_UNAVAILABLE', `type-checking is unavailable in this runtime (${reason}); the plan was still extracted`)
}

/**
 * Analyzes one program. Never throws for anything the program contains: a compiler crash becomes a
 * note.
 */
export function analyzeProgram(request: PreflightEngineRequest, checker: TypeScriptChecker | PreflightDiagnostic): PreflightEngineResult {
  if (request.language === 'python') {
    const { plan, spans, refusal } = extractPythonPlan(request.program)
    const notes = refusal === undefined ? [checkNote('CHECK_SKIPPED', 'Python programs get a plan only: no type-check runs')] : [refusal]
    return { plan, spans, diagnostics: undefined, notes }
  }
  const { plan, spans, refusal, depth = 0 } = extractPlan(request.program)
  if (refusal !== undefined) return { plan, spans, diagnostics: undefined, notes: [refusal] }
  if (request.declarations === undefined) return { plan, spans, diagnostics: undefined, notes: [] }
  if (request.program.length > MAX_CHECKED_CHARS || depth > MAX_CHECKED_DEPTH) {
    const what = request.program.length > MAX_CHECKED_CHARS ? `${request.program.length} characters long (at most ${MAX_CHECKED_CHARS} are type-checked)` : `nested ${depth} levels deep (at most ${MAX_CHECKED_DEPTH} are type-checked)`
    return { plan, spans, diagnostics: undefined, notes: [checkNote('CHECK_SKIPPED', `the program is ${what}; it was not type-checked, its plan was still extracted`)] }
  }
  if (!('check' in checker)) return { plan, spans, diagnostics: undefined, notes: [checker] }
  try {
    return { plan, spans, diagnostics: checker.check(request.program, request.declarations), notes: [] }
  } catch (error) {
    return { plan, spans, diagnostics: undefined, notes: [checkNote('CHECK_FAILED', `the type-check failed: ${error instanceof Error ? error.message : String(error)}`)] }
  }
}
