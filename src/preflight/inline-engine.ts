/**
 * The core's preflight engine: the TypeScript compiler a platform's loader supplies, loaded lazily
 * (on the first check, once per loader) and run in the calling thread.
 * @module
 */
import { analyzeProgram, unavailableNote } from './analyze.js'
import { createTypeScriptChecker, type LibReader, type TypeScriptChecker, type TypeScriptModule } from './typescript-checker.js'
import type { PreflightDiagnostic, PreflightEngine } from './types.js'

/** What a compiler loader supplies: the module and a reader of its lib files. */
export interface TypeScriptLoad {
  readonly ts: TypeScriptModule
  readonly readLib: LibReader
}

/** Options of {@link createInlinePreflightEngine}. */
export interface InlinePreflightEngineOptions {
  /** Loads the compiler (called once, on the first check). */
  readonly load?: () => Promise<TypeScriptLoad>
}

const noCompiler = (): Promise<TypeScriptLoad> => Promise.reject(new Error('no TypeScript compiler was given to this runtime'))

/** Resolves to the warm checker or to the note explaining why there is none; starts loading on first use. */
export function lazyChecker(load: () => Promise<TypeScriptLoad>): () => Promise<TypeScriptChecker | PreflightDiagnostic> {
  let pending: Promise<TypeScriptChecker | PreflightDiagnostic> | undefined
  return () =>
    (pending ??= load().then(
      ({ ts, readLib }) => createTypeScriptChecker(ts, readLib),
      (error: unknown) => unavailableNote(error instanceof Error ? error.message : String(error)),
    ))
}

/** One engine per loader: the compiler and its lib parse are loaded once and kept warm. */
const engines = new WeakMap<() => Promise<TypeScriptLoad>, PreflightEngine>()

/**
 * Creates an engine that checks in the calling thread, with the compiler `load` supplies
 * (one engine per loader, shared). Without a loader — the registry's default, and the
 * only choice at the edge, whose Worker bundle cannot hold the compiler — every check
 * answers the plan and one `CHECK_UNAVAILABLE` note saying type-checking is unavailable.
 *
 * @example
 * ```ts
 * import { loadTypeScript } from 'toolyard/node'
 * const runtime = createToolRuntime({ mode: 'code', codeRuntime, preflightEngine: createInlinePreflightEngine({ load: loadTypeScript }) })
 * ```
 */
export function createInlinePreflightEngine(options?: InlinePreflightEngineOptions): PreflightEngine {
  const load = options?.load ?? noCompiler
  const existing = engines.get(load)
  if (existing !== undefined) return existing
  const checker = lazyChecker(load)
  const engine: PreflightEngine = {
    where: 'inline',
    analyze: async (request) => analyzeProgram(request, request.language === 'python' || request.declarations === undefined ? unavailableNote('not needed') : await checker()),
    dispose: async () => {},
  }
  engines.set(load, engine)
  return engine
}
