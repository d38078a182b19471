/**
 * The core's preflight engine: the TypeScript compiler loaded lazily (`import()` on the
 * first check, once per process) and run in the calling thread. Where the compiler
 * cannot be loaded (the edge: it does not fit a Worker's size limit; a browser page
 * without its lib files) every check answers the plan and one `info` note saying that
 * type-checking is unavailable — never an error.
 *
 * In the calling thread a check holds that thread for its duration (see docs/code-mode.md,
 * "Preflight", for the figures); on Node, `createPreflightWorker()` from `toolyard/node`
 * runs the same analysis in a `worker_threads` thread instead.
 *
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
  /** Loads the compiler; default: `import('typescript')` and its lib files through `ts.sys`. */
  readonly load?: () => Promise<TypeScriptLoad>
}

/** The package name, held in a variable so bundlers leave the import to run time (the compiler is optional). */
const TYPESCRIPT_PACKAGE = 'typescript'

/**
 * Loads `typescript` and reads lib files next to `getDefaultLibFilePath` through the
 * compiler's own `ts.sys` (present where the compiler has a file system: Node).
 */
export async function loadTypeScript(): Promise<TypeScriptLoad> {
  const loaded = (await import(/* @vite-ignore */ TYPESCRIPT_PACKAGE)) as TypeScriptModule & { default?: TypeScriptModule }
  const ts: TypeScriptModule = typeof loaded.createLanguageService === 'function' ? loaded : (loaded.default as TypeScriptModule)
  const sys = ts.sys as TypeScriptModule['sys'] | undefined
  if (sys === undefined || typeof ts.createLanguageService !== 'function') throw new Error('the compiler has no file system to read its lib files from')
  const libPath = ts.getDefaultLibFilePath({}).replaceAll('\\', '/')
  const dir = libPath.slice(0, libPath.lastIndexOf('/'))
  const readLib: LibReader = (name) => {
    if (!/^lib\.[a-z0-9.]+\.d\.ts$/.test(name)) return undefined
    try {
      return sys.readFile(`${dir}/${name}`)
    } catch {
      return undefined
    }
  }
  // Without its lib the compiler would report every built-in as unknown: that is "unavailable", not a check.
  if (readLib('lib.es2022.d.ts') === undefined) throw new Error("the compiler's lib files cannot be read")
  return { ts, readLib }
}

/** Resolves to the warm checker or to the note explaining why there is none; starts loading on first use. */
export function lazyChecker(load: () => Promise<TypeScriptLoad>): () => Promise<TypeScriptChecker | PreflightDiagnostic> {
  let pending: Promise<TypeScriptChecker | PreflightDiagnostic> | undefined
  return () =>
    (pending ??= load().then(
      ({ ts, readLib }) => createTypeScriptChecker(ts, readLib),
      (error: unknown) => unavailableNote(error instanceof Error ? error.message : String(error)),
    ))
}

let shared: PreflightEngine | undefined

/**
 * Creates an engine that checks in the calling thread. Without options it is one
 * engine per process (the compiler and its lib parse are loaded once and kept warm).
 *
 * @example
 * ```ts
 * const runtime = createToolRuntime({ mode: 'code', codeRuntime, preflightEngine: createInlinePreflightEngine() })
 * ```
 */
export function createInlinePreflightEngine(options?: InlinePreflightEngineOptions): PreflightEngine {
  if (options?.load === undefined && shared !== undefined) return shared
  const checker = lazyChecker(options?.load ?? loadTypeScript)
  const engine: PreflightEngine = {
    where: 'inline',
    analyze: async (request) => analyzeProgram(request, request.language === 'python' || request.declarations === undefined ? unavailableNote('not needed') : await checker()),
    dispose: async () => {},
  }
  if (options?.load === undefined) shared = engine
  return engine
}
