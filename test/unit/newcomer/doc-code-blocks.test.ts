/**
 * Every TypeScript and JavaScript block of README.md and docs/*.md is accounted for, as the
 * command samples are (test/unit/docs/doc-commands.test.ts): a host-side example compiles
 * against the package (`toolyard`, `toolyard/node`, … mapped to their sources) under the
 * repository's strict options, after a prelude declaring what the surrounding prose gives it
 * (`runtime`, `codeRuntime`, `signal`); a program (what `run_code` runs) parses as the body
 * of an async function; a shape written as prose types is listed as such. Before, nothing
 * read these blocks: an example that stopped compiling (docs/runtimes.md's trusted-code
 * example: `args` is `unknown` there; docs/mcp.md's MCP server used a `runtime` it never
 * created) was found only by a reader. A new block that is none
 * of these, or an entry whose block is gone, fails the check.
 */
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../../../', import.meta.url))
const files = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)]

interface CodeBlock {
  readonly file: string
  /** 1-based line of the opening fence. */
  readonly line: number
  readonly code: string
  /** Its first line: what an entry below is keyed by. */
  readonly key: string
}

/** The ```ts / ```js blocks of one markdown text. */
function findCodeBlocks(file: string, markdown: string): CodeBlock[] {
  const lines = markdown.split('\n')
  const blocks: CodeBlock[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,})\s*(ts|typescript|js|javascript)\s*$/.exec(lines[i]!)
    if (open === null) continue
    let j = i + 1
    while (j < lines.length && !lines[j]!.startsWith(open[1]!)) j++
    const code = lines.slice(i + 1, j).join('\n')
    blocks.push({ file, line: i + 1, code, key: code.split('\n')[0]! })
    i = j
  }
  return blocks
}

/**
 * How a block is accounted for: compiled (with a prelude of declarations), parsed as a
 * program, or not code (with why). `knownBroken`: it does not compile today, and the check
 * asserts it still does not, so the entry goes when the doc is fixed.
 */
type How = { readonly compile: string } | { readonly program: true } | { readonly notCode: string } | { readonly notChecked: string } | { readonly knownBroken: string }

const RUNTIME = "import type { ToolRuntime } from 'toolyard'\ndeclare const runtime: ToolRuntime\n"
const CODE_RUNTIME = "import type { CodeRuntime } from 'toolyard'\ndeclare const codeRuntime: CodeRuntime\n"
const SIGNAL = 'declare const signal: AbortSignal\n'

/** `[file, the start of the block's first line, how]`. */
const ACCOUNTED: ReadonlyArray<readonly [string, string, How]> = [
  // As the README says: the quick start, saved as .ts, type-checks too.
  ['README.md', "import { createToolRuntime, defineTool } from 'toolyard'", { compile: '' }],
  ['docs/agent-loop.md', 'for (const need of', { program: true }],
  ['docs/approvals.md', "import { createToolRuntime } from 'toolyard'\n\nconst runtime = createToolRuntime({ mode: 'both'", {
    compile: `${CODE_RUNTIME}declare const ui: { show(approval: object): void; remove(id: string): void; toast(message: string): void }\ndeclare const id: string\n`,
  }],
  ['docs/approvals.md', "{ type: 'tool/approval-request'", { notCode: 'the two session-log events written as prose types' }],
  ['docs/approvals.md', "const runtime = createToolRuntime({ mode: 'code', codeRuntime, approvals: { plans: true } })", {
    compile: `import { createToolRuntime } from 'toolyard'\nimport { createToolsApp, type ToolsAppOptions } from 'toolyard/http'\n${CODE_RUNTIME}declare const tokens: NonNullable<ToolsAppOptions['tokens']>\n`,
  }],
  ['docs/approvals.md', "import { createToolRuntime } from 'toolyard'\nimport { createFileStore }", { compile: 'declare const token: string\n' }],
  ['docs/approvals.md', 'interface PendingApproval {', { notCode: 'PendingApproval as prose types (its `plan` member lists names without types)' }],
  ['docs/approvals.md', '| { ok: true, approval: PendingApproval', { notCode: "decide()'s answer as prose types" }],
  ['docs/approvals.md', "| { type: 'requested', approval }", { notCode: "the broker's events as prose types" }],
  ['docs/code-mode.md', "import { createToolRuntime } from 'toolyard'", { compile: '' }],
  ['docs/code-mode.md', "const orders = await tools.list_orders({ status: 'open' })", { program: true }],
  ['docs/code-mode.md', "const [hit] = await catalog.search('delete the staging bucket'", { program: true }],
  ['docs/code-mode.md', '{ logs: string[]; result?: JsonValue }', { notCode: "run_code's value as a prose type" }],
  ['docs/code-mode.md', "import { createPreflightWorker } from 'toolyard/node'", { compile: `import { createToolRuntime } from 'toolyard'\n${CODE_RUNTIME}` }],
  ['docs/durability.md', "import { createMemoryStore, type DurableStore } from 'toolyard'", { compile: '' }],
  ['docs/http-api.md', "import { createToolRuntime } from 'toolyard'", { compile: '' }],
  ['docs/integrations.md', "import OpenAI from 'openai'", { compile: RUNTIME + SIGNAL }],
  ['docs/integrations.md', "import { parseOpenAIResponsesToolCalls", {
    compile: `import OpenAI from 'openai'\nimport { runToolCalls } from 'toolyard'\n${RUNTIME}${SIGNAL}declare const openai: OpenAI\n`,
  }],
  ['docs/integrations.md', "import Anthropic from '@anthropic-ai/sdk'", { compile: `import { runToolCalls } from 'toolyard'\n${RUNTIME}${SIGNAL}` }],
  ['docs/integrations.md', "import { generateText, jsonSchema, type ModelMessage } from 'ai'", {
    notChecked: 'the Vercel AI SDK lives in test/vercel-sdk (it declares Node ≥ 22), whose own type tests compile this conversion',
  }],
  ['docs/mcp.md', "import { Client } from '@modelcontextprotocol/sdk/client/index.js'\nimport { StdioClientTransport }", { compile: '' }],
  ['docs/mcp.md', "import { createToolRuntime } from 'toolyard'", { compile: '' }],
  ['docs/mcp.md', "import { Client } from '@modelcontextprotocol/sdk/client/index.js'\nimport { StreamableHTTPClientTransport }", { compile: 'declare const token: string\n' }],
  ['docs/observability.md', "import { metrics, trace } from '@opentelemetry/api'\nconst runtime", { compile: `import { createToolRuntime } from 'toolyard'\n${CODE_RUNTIME}` }],
  ['docs/observability.md', "import { metrics, trace } from '@opentelemetry/api'\nimport worker", {
    compile: "import type { MeterProvider, TracerProvider } from '@opentelemetry/api'\ndeclare const myTracerProvider: TracerProvider\ndeclare const myMeterProvider: MeterProvider\n",
  }],
  ['docs/playground.md', "import { createSandboxRuntime } from 'toolyard/browser'", { compile: "import { createToolRuntime } from 'toolyard'\n" }],
  ['docs/playground.md', "import { createBrowserWorkerRuntime } from 'toolyard/browser'", { compile: "import { createToolRuntime } from 'toolyard'\n" }],
  ['docs/runtimes.md', "import { createToolRuntime } from 'toolyard'", { compile: '' }],
  ['docs/runtimes.md', "import { createNodeWorkerRuntime } from 'toolyard/node'", { compile: '' }],
  ['docs/schema.md', "import { defineTool } from 'toolyard'", { compile: '' }],
  ['docs/testing.md', '// Stryker disable next-line EqualityOperator', { compile: 'declare const a: Uint8Array\ndeclare const b: Uint8Array\nlet diff = 0\n' }],
]

const blocks = files.flatMap((file) => findCodeBlocks(file, readFileSync(join(root, file), 'utf8')))
const entryOf = (block: CodeBlock) =>
  ACCOUNTED.filter(([file, start]) => file === block.file && block.code.startsWith(start)).sort((a, b) => b[1].length - a[1].length)[0]

/** `toolyard`, `toolyard/node`, …: each export's types mapped to its source (`dist/src/index.d.ts` → `src/index.ts`). */
function packagePaths(): Record<string, string[]> {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; exports: Record<string, string | { types?: string }> }
  const paths: Record<string, string[]> = {}
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    if (typeof target !== 'object' || target.types === undefined) continue
    paths[pkg.name + subpath.slice(1)] = [join(root, target.types.replace(/^\.\/dist\//, '').replace(/\.d\.ts$/, '.ts'))]
  }
  return paths
}

/** The compiler's errors for each compiled block (its prelude's lines are not counted in its line numbers). */
function compileBlocks(toCompile: ReadonlyArray<{ readonly block: CodeBlock; readonly prelude: string }>): string[][] {
  const config = ts.parseJsonConfigFileContent(ts.readConfigFile(join(root, 'tsconfig.json'), (p) => ts.sys.readFile(p)).config, ts.sys, root)
  const options: ts.CompilerOptions = { ...config.options, noEmit: true, declaration: false, declarationMap: false, sourceMap: false, paths: packagePaths() }
  // Files at the repository's root: a block's relative import (`./platforms/edge/worker.js`) reads from there.
  const virtual = new Map(toCompile.map(({ block, prelude }, i) => [join(root, `__doc-block-${i}.ts`), `${prelude}${block.code}\nexport {}\n`]))
  const host = ts.createCompilerHost(options)
  const { getSourceFile, fileExists, readFile } = host
  host.fileExists = (name) => virtual.has(name) || fileExists.call(host, name)
  host.readFile = (name) => virtual.get(name) ?? readFile.call(host, name)
  host.getSourceFile = (name, version, onError, create) => {
    const text = virtual.get(name)
    return text === undefined ? getSourceFile.call(host, name, version, onError, create) : ts.createSourceFile(name, text, version)
  }
  const program = ts.createProgram({ rootNames: [...virtual.keys()], options, host })
  return [...virtual.keys()].map((name, i) => {
    const preludeLines = toCompile[i]!.prelude.split('\n').length - 1
    const source = program.getSourceFile(name)!
    return [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)].map((d) => {
      const at = d.start === undefined ? '' : `line ${source.getLineAndCharacterOfPosition(d.start).line + 1 - preludeLines}: `
      return `${at}error TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`
    })
  })
}

describe('the TypeScript blocks of README.md and docs/', () => {
  it('finds the blocks (the extractor works)', () => {
    expect(blocks.length).toBeGreaterThan(25)
    expect(blocks.some((b) => b.file === 'README.md')).toBe(true)
  })

  it('every block is accounted for, and every entry still has its block', () => {
    const unaccounted = blocks.filter((b) => entryOf(b) === undefined).map((b) => `${b.file}:${b.line} ${b.key}`)
    expect(unaccounted, 'a new block: add it to ACCOUNTED (compile with a prelude, program, or not code)').toEqual([])
    const stale = ACCOUNTED.filter(([file, start]) => !blocks.some((b) => b.file === file && b.code.startsWith(start))).map(([file, start]) => `${file}: ${start}`)
    expect(stale).toEqual([])
  })

  it('each program parses as the body of an async function', () => {
    for (const block of blocks.filter((b) => 'program' in entryOf(b)![2])) {
      const source = ts.createSourceFile('program.ts', `async function program() {\n${block.code}\n}`, ts.ScriptTarget.ES2022, false, ts.ScriptKind.TS)
      const errors = (source as unknown as { parseDiagnostics: ts.Diagnostic[] }).parseDiagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
      expect(errors, `${block.file}:${block.line}`).toEqual([])
    }
  })

  it('each host-side example compiles against the package under the repository’s options; a known broken one still fails', () => {
    /** `broken`: the error a known broken block still fails with (`error TS18046`). */
    const toCompile = blocks.flatMap((block): Array<{ block: CodeBlock; prelude: string; broken: string | false }> => {
      const how = entryOf(block)![2]
      if ('compile' in how) return [{ block, prelude: how.compile, broken: false }]
      if ('knownBroken' in how) return [{ block, prelude: '', broken: how.knownBroken.split(':')[0]! }]
      return []
    })
    const results = compileBlocks(toCompile)
    toCompile.forEach(({ block, broken }, i) => {
      const where = `${block.file}:${block.line}`
      if (broken === false) expect(results[i], where).toEqual([])
      // Still broken, and for the reason recorded (not some other failure hiding behind it).
      else expect(results[i]!.some((error) => error.includes(broken)), `${where} no longer fails with ${broken}: ${JSON.stringify(results[i])}`).toBe(true)
    })
  }, 120_000)
})
