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

interface FileState {
  version: number
  text: string
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
  const files = new Map<string, FileState>([
    [GLOBALS_FILE, { version: 1, text: SANDBOX_GLOBALS_DECLARATIONS }],
    [SDK_FILE, { version: 1, text: '' }],
    [PROGRAM_FILE, { version: 1, text: '' }],
  ])
  const libs = new Map<string, string | undefined>()
  const lib = (path: string): string | undefined => {
    if (!path.startsWith(LIB_DIR)) return undefined
    const name = path.slice(LIB_DIR.length)
    if (!libs.has(name)) libs.set(name, readLib(name))
    return libs.get(name)
  }
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
  const service = ts.createLanguageService(host, ts.createDocumentRegistry())
  const update = (path: string, next: string): void => {
    const state = files.get(path)!
    if (state.text === next) return
    state.text = next
    state.version++
  }
  return {
    check(program, declarations) {
      update(SDK_FILE, declarations)
      update(PROGRAM_FILE, CHECK_WRAP_OPEN + program + CHECK_WRAP_CLOSE)
      const found = [...service.getSyntacticDiagnostics(PROGRAM_FILE), ...service.getSemanticDiagnostics(PROGRAM_FILE)]
      const out: RawDiagnostic[] = []
      for (const d of found) {
        if (IGNORED.has(d.code) || d.category === ts.DiagnosticCategory.Suggestion || d.category === ts.DiagnosticCategory.Message) continue
        let message = ts.flattenDiagnosticMessageText(d.messageText, '\n')
        if (message.length > MAX_DIAGNOSTIC_MESSAGE_CHARS) message = `${message.slice(0, MAX_DIAGNOSTIC_MESSAGE_CHARS - 1)}…`
        const start = Math.max(0, Math.min(program.length, (d.start ?? CHECK_WRAP_OPEN.length) - CHECK_WRAP_OPEN.length))
        out.push({ start, code: d.code, message })
      }
      return out
    },
  }
}
