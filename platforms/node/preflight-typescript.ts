/**
 * The TypeScript compiler for Node's preflight engines: `import('typescript')` (an optional peer
 * dependency) and its lib files read through the compiler's own `ts.sys`.
 * @module
 */
import type { LibReader, TypeScriptModule } from '../../src/preflight/typescript-checker.js'
import type { TypeScriptLoad } from '../../src/preflight/inline-engine.js'

/**
 * Loads `typescript` (once per call: engines cache the result) and a reader of its lib files next
 * to `getDefaultLibFilePath`.
 * @example
 * ```ts
 * const runtime = createToolRuntime({ preflight: 'block', preflightEngine: createInlinePreflightEngine({ load: loadTypeScript }) })
 * ```
 */
export async function loadTypeScript(): Promise<TypeScriptLoad> {
  const loaded = (await import('typescript')) as TypeScriptModule & { default?: TypeScriptModule }
  const ts: TypeScriptModule = typeof loaded.createProgram === 'function' ? loaded : (loaded.default as TypeScriptModule)
  const sys = ts.sys as TypeScriptModule['sys'] | undefined
  if (sys === undefined || typeof ts.createProgram !== 'function') throw new Error('the compiler has no file system to read its lib files from')
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
