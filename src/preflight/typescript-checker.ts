/**
 * The type-check itself: a `ts.createProgram` over three in-memory files — the sandbox globals, the
 * SDK declarations of the tools a program may call, and the program wrapped as the body of an async
 * function — plus `lib.es2022.d.ts` and what it references.
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
const SDK_FILE = `${ROOT}tools-sdk.d.ts`
const PROGRAM_FILE = `${ROOT}program.ts`
const LIB_DIR = '/lib/'
const DEFAULT_LIB = 'lib.es2022.d.ts'

/** The diagnostics a program can get from the compiler's own options, never worth a model's attention. */
const IGNORED = new Set([
  // "'__toolyard__' is declared but never used" and friends (only with noUnused*; kept off anyway).
  6133,
])

/** SDKs kept warm at once (each its parsed declarations and its last program, sharing the lib parse). */
const MAX_WARM_SDKS = 4

/**
 * Checked programs whose diagnostics are kept per warm SDK (the program text is the key; programs
 * the compiler is given are at most 16 KiB, so this holds at most 256 KiB of keys per SDK).
 */
export const MAX_CACHED_RESULTS = 16

/**
 * A result with more diagnostics than this is not kept: a hostile 16 KiB program can
 * draw thousands (each message up to 600 characters), and the cache must not hold
 * megabytes per entry. Real programs have a handful.
 */
export const MAX_CACHED_DIAGNOSTICS = 64

interface WarmSdk {
  readonly declarations: TypeScript.SourceFile
  /** The last program built against this SDK: the next one reuses its structure. */
  last: TypeScript.Program | undefined
  readonly results: Map<string, readonly RawDiagnostic[]>
}

/** Moves `key` to the most recently used end of `map` (inserting `value` when absent), evicting the oldest beyond `max`. */
function touch<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  if (map.has(key)) map.delete(key)
  else if (map.size >= max) map.delete(map.keys().next().value as string)
  map.set(key, value)
}

/** Creates a warm checker. */
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
  const parse = (name: string, text: string): TypeScript.SourceFile => ts.createSourceFile(name, text, ts.ScriptTarget.ES2022, true)
  // Lib files and the globals: parsed once, shared by every SDK's programs (a missing lib file is remembered too).
  const shared = new Map<string, TypeScript.SourceFile | undefined>()
  const sharedFile = (name: string): TypeScript.SourceFile | undefined => {
    if (!shared.has(name)) {
      const text = name === GLOBALS_FILE ? SANDBOX_GLOBALS_DECLARATIONS : name.startsWith(LIB_DIR) ? readLib(name.slice(LIB_DIR.length)) : undefined
      shared.set(name, text === undefined ? undefined : parse(name, text))
    }
    return shared.get(name)
  }
  const sdks = new Map<string, WarmSdk>()
  const sdkFor = (declarations: string): WarmSdk => {
    const warm = sdks.get(declarations) ?? { declarations: parse(SDK_FILE, declarations), last: undefined, results: new Map() }
    touch(sdks, declarations, warm, MAX_WARM_SDKS)
    return warm
  }
  const diagnose = (warm: WarmSdk, program: string): readonly RawDiagnostic[] => {
    const programFile = parse(PROGRAM_FILE, CHECK_WRAP_OPEN + program + CHECK_WRAP_CLOSE)
    const fileOf = (name: string): TypeScript.SourceFile | undefined => (name === PROGRAM_FILE ? programFile : name === SDK_FILE ? warm.declarations : sharedFile(name))
    const host: TypeScript.CompilerHost = {
      getSourceFile: fileOf,
      getDefaultLibFileName: () => `${LIB_DIR}${DEFAULT_LIB}`,
      writeFile: () => {},
      getCurrentDirectory: () => ROOT,
      getCanonicalFileName: (name) => name,
      useCaseSensitiveFileNames: () => true,
      getNewLine: () => '\n',
      fileExists: (name) => fileOf(name) !== undefined,
      readFile: (name) => fileOf(name)?.text,
    }
    const built = ts.createProgram({ rootNames: [GLOBALS_FILE, SDK_FILE, PROGRAM_FILE], options, host, ...(warm.last === undefined ? {} : { oldProgram: warm.last }) })
    warm.last = built
    const found = [...built.getSyntacticDiagnostics(programFile), ...built.getSemanticDiagnostics(programFile)]
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
      const warm = sdkFor(declarations)
      const result = warm.results.get(program) ?? diagnose(warm, program)
      if (result.length <= MAX_CACHED_DIAGNOSTICS) touch(warm.results, program, result, MAX_CACHED_RESULTS)
      return result
    },
  }
}
