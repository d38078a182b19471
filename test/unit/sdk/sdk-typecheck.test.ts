import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { renderTypeScriptSdkBlock } from '../../../src/code-mode/sdk-typescript.js'
import type { SdkToolInput } from '../../../src/code-mode/sdk.js'

/**
 * Type-checks `<sdk block> + <program>` with a real TypeScript program (not
 * transpileModule): the SDK is a global script, the program the body of an async
 * function, exactly as a model writes it.
 */
const libCache = new Map<string, ts.SourceFile | undefined>()

/** What every runtime provides besides the SDK: the console shim (lib.es2022 has no console). */
const RUNTIME_GLOBALS = 'declare const console: { log(...data: unknown[]): void; info(...data: unknown[]): void; warn(...data: unknown[]): void; error(...data: unknown[]): void };'

function check(sdk: string, body: string): string[] {
  const fileName = '/virtual/program.ts'
  const source = `${RUNTIME_GLOBALS}\n${sdk}\n\nasync function __program(): Promise<unknown> {\n${body}\n}\n`
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2022.d.ts'],
    types: [],
    noUnusedLocals: false,
  }
  const host = ts.createCompilerHost(options)
  const original = { getSourceFile: host.getSourceFile, fileExists: host.fileExists, readFile: host.readFile }
  host.getSourceFile = (name, languageVersion, onError, shouldCreate) =>
    name === fileName
      ? ts.createSourceFile(name, source, languageVersion, true)
      : libCache.has(name)
        ? libCache.get(name)
        : (libCache.set(name, original.getSourceFile(name, languageVersion, onError, shouldCreate)), libCache.get(name))
  host.fileExists = (name) => name === fileName || original.fileExists(name)
  host.readFile = (name) => (name === fileName ? source : original.readFile(name))
  const program = ts.createProgram([fileName], options, host)
  return ts
    .getPreEmitDiagnostics(program)
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
}

// Raw constructs outside the subset ($ref, anyOf) are deliberately present: they must degrade, not break.
const tools = [
  {
    name: 'read_file',
    description: 'Read a file. */ not the end',
    parameters: {
      type: 'object',
      additionalProperties: false,
      required: ['path'],
      properties: { path: { type: 'string', description: 'Which file' }, offset: { type: 'integer' }, limit: { type: 'integer' } },
    },
    output: {
      type: 'object',
      additionalProperties: false,
      required: ['lines', 'totalLines'],
      properties: {
        lines: { type: 'array', items: { type: 'object', additionalProperties: false, required: ['n', 'text'], properties: { n: { type: 'integer' }, text: { type: 'string' } } } },
        totalLines: { type: 'integer' },
      },
    },
  },
  {
    name: 'my-tool',
    description: 'An exotic name',
    parameters: { type: 'object', properties: { mode: { enum: ['fast', 'slow'] } } },
    output: { oneOf: [{ type: 'string' }, { type: 'null' }] },
  },
  { name: 'list', description: 'No args', parameters: { type: 'object', additionalProperties: false }, output: { type: 'array', items: { type: 'string' } } },
  { name: 'raw', description: 'Unsupported schemas', parameters: { type: 'object', properties: { x: { $ref: '#' } } }, output: { anyOf: [] } },
  { name: '__proto__', description: 'Prototype name', parameters: { type: 'object' }, output: {} },
] as unknown as SdkToolInput[]

describe('the generated TypeScript SDK type-checks with the TypeScript compiler', () => {
  const sdk = renderTypeScriptSdkBlock(tools)

  it('accepts a correct program', () => {
    const diagnostics = check(
      sdk,
      `
  const file = await tools.read_file({ path: 'src/a.ts', offset: 1 })
  const total: number = file.totalLines
  const texts: string[] = file.lines.map((line) => line.text.toUpperCase() + line.n.toFixed(0))
  const [a, b] = await Promise.all([tools["my-tool"]({ mode: 'fast' }), tools.list()])
  const none = await tools["my-tool"]()
  const raw: unknown = await tools.raw({ x: 1 })
  const proto = await tools.__proto__({ any: { json: [true, null] } })
  try {
    await tools.read_file({ path: 'missing' })
  } catch (error) {
    if (error instanceof ToolCallError) console.log(error.toolName, error.message)
  }
  const name: ToolName = 'my-tool'
  return { total, texts, a: a ?? null, b, none, raw, proto, name }`,
    )
    expect(diagnostics).toEqual([])
  })

  it.each([
    ['a wrongly-typed argument', `await tools.read_file({ path: 42 })`, /number.*not assignable to.*string/],
    ['a missing required argument', `await tools.read_file({})`, /path/],
    ['an omitted argument when one is required', `await tools.read_file()`, /Expected 1 arguments/],
    ['an unknown property on a closed object', `await tools.read_file({ path: 'a', bogus: true })`, /bogus/],
    ['an undeclared property on an object open by default (no additionalProperties)', `await tools.raw({ x: 1, anything: [1, 2] })`, /anything/],
    ['a literal outside the enum', `await tools["my-tool"]({ mode: 'medium' })`, /medium/],
    ['misusing the typed result', `const r = await tools.read_file({ path: 'a' }); const s: string = r.totalLines`, /number.*not assignable to.*string/],
    ['an undeclared tool', `await tools.write_file({ path: 'a' })`, /write_file/],
    ['an unknown ToolName', `const n: ToolName = 'nope'`, /nope/],
  ])('reports %s', (_name, body, pattern) => {
    const diagnostics = check(sdk, body)
    expect(diagnostics.length).toBeGreaterThan(0)
    expect(diagnostics.join('\n')).toMatch(pattern)
  })

  it('type-checks an SDK with deep nesting (inline rendering) and every construct', () => {
    let deep: unknown = { type: 'string' }
    for (let i = 0; i < 40; i++) deep = { type: 'object', properties: { a: deep, 'b-c': { enum: [1, 'x', null] } }, required: ['a'] }
    const block = renderTypeScriptSdkBlock([{ name: 'deep', description: '', parameters: { type: 'object', properties: {} }, output: deep as SdkToolInput['output'] }])
    const access = `(await tools.deep())${'.a'.repeat(40)}`
    expect(check(block, `const s: string = ${access}; return s`)).toEqual([])
    expect(check(block, `const s: number = ${access}; return s`).length).toBeGreaterThan(0)
  })
})
