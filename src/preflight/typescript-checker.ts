/**
 * The type-check itself: one warm `LanguageService` over three in-memory files — the
 * sandbox globals, the SDK declarations of the tools a program may call, and the program
 * wrapped as the body of an async function — plus `lib.es2022.d.ts` and what it
 * references. The compiler module and the lib text are handed in (`ts`, `readLib`), so
 * this file imports no runtime and runs wherever they can be had: inline or in a thread.
 *
 * Warm: lib and globals keep their versions, so their SourceFiles (and the document
 * registry's parse) are reused; the declarations are re-parsed only when their text
 * changes, the program on every check. Only the program file's diagnostics are asked
 * for, so the checker resolves no more of the SDK than the program touches.
 *
 * What a warm check costs is the new type checker TypeScript builds for every changed
 * program (it has no incremental checker): globals merged again, the lib and SDK types a
 * program touches resolved again, then the program itself — about 4 ms of CPU for a
 * 40-line program on an idle core, more with GC. The levers measured against it
 * (`npm run bench:preflight`, "levers"): a plain `createProgram` reusing `oldProgram`
 * and cached SourceFiles instead of the `LanguageService` (no difference); only
 * `lib.es5.d.ts` (about 15% less, but `Map`, `Set`, `Promise`, `Symbol` and every later
 * global would become unknown names, which block: dropped); a larger young generation
 * for the thread (no difference). What is kept besides: the same program against the
 * same SDK is answered from a small cache ({@link MAX_CACHED_RESULTS} per SDK), as
 * `runtime.preflight()` followed by `run_code` of that program, or a model re-sending it,
 * do.
 *
 * @module
 */
import type * as TypeScript from 'typescript'
import { CHECK_WRAP_CLOSE, CHECK_WRAP_OPEN, SANDBOX_GLOBALS_DECLARATIONS } from './environment.js'
import { MAX_DIAGNOSTIC_MESSAGE_CHARS, type RawDiagnostic } from './types.js'

/** The TypeScript compiler module (`import('typescript')`). */
export type TypeScriptModule = typeof TypeScript

/** Reads a lib file of the compiler by its file name (`lib.es2022.d.ts`); `undefined` when absent. */
export type LibReader = (fileName: string) => string | undefined

/** A warm checker: `check(program, declarations)` → raw diagnostics, synchronously. */
export interface TypeScriptChecker {
  check(program: string, declarations: string): readonly RawDiagnostic[]
}

const ROOT = '/toolyard/'
const GLOBALS_FILE = `${ROOT}sandbox-globals.d.ts`
const LIB_DIR = '/lib/'
const DEFAULT_LIB = 'lib.es2022.d.ts'

/** The diagnostics a program can get from the compiler's own options, never worth a model's attention. */
const IGNORED = new Set([
  // "'__toolyard__' is declared but never used" and friends (only with noUnused*; kept off anyway).
  6133,
])

interface FileState {
  version: number
  text: string
}

/**
 * SDKs kept warm at once (one `LanguageService` each, sharing the lib parse): agents with
 * different tool sets alternate without re-parsing each other's SDK (539 KB at 1,000 tools,
 * about a second to parse).
 */
const MAX_WARM_SDKS = 4

/**
 * Checked programs whose diagnostics are kept per warm SDK (the program text is the key;
 * programs the compiler is given are at most 16 KiB, so this holds at most 256 KiB of
 * keys per SDK). A repeat is answered without building a checker.
 */
export const MAX_CACHED_RESULTS = 16

interface WarmService {
  readonly service: TypeScript.LanguageService
  readonly program: FileState
  /** The program's file name in this service. */
  readonly file: string
  /** Recent results by program text, least recently used first. */
  readonly results: Map<string, readonly RawDiagnostic[]>
}

let serviceCount = 0

/** A service over the globals, one SDK text (fixed) and the program file (edited per check). */
function createWarmService(
  ts: TypeScriptModule,
  options: TypeScript.CompilerOptions,
  registry: TypeScript.DocumentRegistry,
  lib: (path: string) => string | undefined,
  declarations: string,
): WarmService {
  // Names unique to this service: the shared registry keys documents by name and version.
  const id = ++serviceCount
  const SDK_FILE = `${ROOT}tools-sdk-${id}.d.ts`
  const PROGRAM_FILE = `${ROOT}program-${id}.ts`
  const program: FileState = { version: 1, text: '' }
  const files = new Map<string, FileState>([
    [GLOBALS_FILE, { version: 1, text: SANDBOX_GLOBALS_DECLARATIONS }],
    [SDK_FILE, { version: 1, text: declarations }],
    [PROGRAM_FILE, program],
  ])
  const text = (path: string): string | undefined => files.get(path)?.text ?? lib(path)
  const host: TypeScript.LanguageServiceHost = {
    getCompilationSettings: () => options,
    getScriptFileNames: () => [GLOBALS_FILE, SDK_FILE, PROGRAM_FILE],
    getScriptVersion: (path) => String(files.get(path)?.version ?? 0),
    getScriptSnapshot: (path) => {
      const content = text(path)
      return content === undefined ? undefined : ts.ScriptSnapshot.fromString(content)
    },
    getCurrentDirectory: () => ROOT,
    getDefaultLibFileName: () => `${LIB_DIR}${DEFAULT_LIB}`,
    fileExists: (path) => text(path) !== undefined,
    readFile: (path) => text(path),
  }
  return { service: ts.createLanguageService(host, registry), program, file: PROGRAM_FILE, results: new Map() }
}

/**
 * Creates a warm checker. Options: ES2022, `strict` off (null checks and implicit any
 * are quibbles a running program does not care about), no module resolution, no types
 * packages: the program sees exactly the declared environment.
 */
export function createTypeScriptChecker(ts: TypeScriptModule, readLib: LibReader): TypeScriptChecker {
  const options: TypeScript.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    lib: [DEFAULT_LIB],
    strict: false,
    noImplicitAny: false,
    strictNullChecks: false,
    noEmit: true,
    noResolve: true,
    types: [],
    skipLibCheck: true,
    skipDefaultLibCheck: true,
    allowJs: false,
  }
  const libs = new Map<string, string | undefined>()
  const lib = (path: string): string | undefined => {
    if (!path.startsWith(LIB_DIR)) return undefined
    const name = path.slice(LIB_DIR.length)
    if (!libs.has(name)) libs.set(name, readLib(name))
    return libs.get(name)
  }
  // One registry for every warm service: lib and globals are parsed once, whatever the SDK.
  const registry = ts.createDocumentRegistry()
  const services = new Map<string, WarmService>()
  const serviceFor = (declarations: string): WarmService => {
    let warm = services.get(declarations)
    if (warm !== undefined) {
      // Most recently used last: the first entry is the one to evict.
      services.delete(declarations)
    } else {
      warm = createWarmService(ts, options, registry, lib, declarations)
      if (services.size >= MAX_WARM_SDKS) {
        const [oldest, evicted] = services.entries().next().value as [string, WarmService]
        services.delete(oldest)
        evicted.service.dispose()
      }
    }
    services.set(declarations, warm)
    return warm
  }
  const diagnose = (warm: WarmService, program: string): readonly RawDiagnostic[] => {
    const wrapped = CHECK_WRAP_OPEN + program + CHECK_WRAP_CLOSE
    if (warm.program.text !== wrapped) {
      warm.program.text = wrapped
      warm.program.version++
    }
    const found = [...warm.service.getSyntacticDiagnostics(warm.file), ...warm.service.getSemanticDiagnostics(warm.file)]
    const out: RawDiagnostic[] = []
    for (const d of found) {
      if (IGNORED.has(d.code) || d.category === ts.DiagnosticCategory.Suggestion || d.category === ts.DiagnosticCategory.Message) continue
      let message = ts.flattenDiagnosticMessageText(d.messageText, '\n')
      if (message.length > MAX_DIAGNOSTIC_MESSAGE_CHARS) message = `${message.slice(0, MAX_DIAGNOSTIC_MESSAGE_CHARS - 1)}…`
      const start = Math.max(0, Math.min(program.length, (d.start ?? CHECK_WRAP_OPEN.length) - CHECK_WRAP_OPEN.length))
      out.push(Object.freeze({ start, code: d.code, message }))
    }
    return Object.freeze(out)
  }
  return {
    check(program, declarations) {
      const warm = serviceFor(declarations)
      let result = warm.results.get(program)
      // Most recently used last, as for the services.
      if (result !== undefined) warm.results.delete(program)
      else {
        result = diagnose(warm, program)
        if (warm.results.size >= MAX_CACHED_RESULTS) warm.results.delete(warm.results.keys().next().value as string)
      }
      warm.results.set(program, result)
      return result
    },
  }
}
