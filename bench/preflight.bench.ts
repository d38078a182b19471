/**
 * `npm run bench:preflight`: what a preflight costs (docs/code-mode.md, "Preflight").
 * - the first check (compiler load and lib parse included), inline and in the Node thread;
 * - warm p50/p95 of a 40-line program against the demo tools and against the generated
 *   1,000-tool registry (test/fixtures/large-registry.ts), inline and in the thread;
 * - the longest the host's event loop was held during the first check (inline vs thread);
 * - the memory the checker holds (heap and RSS growth of this process, inline);
 * - the levers (same process, checks interleaved so load drifts hit each alike): the
 *   shipped checker (a plain `createProgram` with `oldProgram` and SourceFiles parsed
 *   once) against a `LanguageService` per SDK (the first design), and against
 *   `lib.es5.d.ts` only (what a minimal lib could save at most); and a repeat of the same
 *   program (answered from the cache). `--levers` prints only this table.
 * - the host's longest stall while six 256 KiB programs go through plan approval at once
 *   (`bench/_plan-stall.ts`; `--plans` prints only this table).
 * Figures are printed, never asserted; on a loaded machine read the `min` beside the p50. Targets (issue 22): warm ≤ 30 ms at 13 tools,
 * ≤ 100 ms at 1,000.
 *
 * @module
 */
import { createDemoTools } from '../demo/tools/index.js'
import { createPreflightWorker, loadTypeScript } from '../platforms/node/index.js'
import { renderTypeScriptSdkBlock } from '../src/code-mode/sdk-typescript.js'
import type { SdkToolInput } from '../src/code-mode/sdk-common.js'
import { createInlinePreflightEngine } from '../src/preflight/inline-engine.js'
import { createTypeScriptChecker, type LibReader, type TypeScriptModule } from '../src/preflight/typescript-checker.js'
import { CHECK_WRAP_CLOSE, CHECK_WRAP_OPEN, SANDBOX_GLOBALS_DECLARATIONS } from '../src/preflight/environment.js'
import type * as TypeScript from 'typescript'
import type { PreflightEngine } from '../src/preflight/types.js'
import { LARGE_REGISTRY } from '../test/fixtures/large-registry.js'
import { readFileSync } from 'node:fs'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { createRequire } from 'node:module'
import { createQuickJsRuntime } from '../platforms/quickjs/index.js'
import { createToolRuntime } from '../src/registry/index.js'
import type { ToolRuntimeOptions } from '../src/runtime-types.js'
import { printTable, summarize, type TableRow } from './_stats.js'
import { planStall } from './_plan-stall.js'

const WARM_SAMPLES = 40
/** Checks per lever (interleaved). */
const LEVER_SAMPLES = 150
// A collectable heap for the memory figures, without a node flag: `gc` exposed to a new context.
setFlagsFromString('--expose-gc')
const collect = runInNewContext('gc') as () => void
/** `npm run bench:preflight -- --levers`: only the levers table. */
const ONLY_LEVERS = process.argv.includes('--levers')
/** `npm run bench:preflight -- --plans`: only the plan-approval stall table. */
const ONLY_PLANS = process.argv.includes('--plans')

const demoInputs: SdkToolInput[] = createDemoTools().tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters, output: t.output.schema }))
const largeInputs: SdkToolInput[] = LARGE_REGISTRY.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters, output: t.output }))

/** A 40-line program in the shape models write: reads, a loop, a few calls, a result. */
function program(names: readonly string[]): string {
  const lines = [
    'const started = performance.now()',
    'const seen: Record<string, number> = {}',
    'const errors: string[] = []',
  ]
  for (let i = 0; lines.length < 36; i++) {
    const name = names[i % names.length]!
    lines.push(`try {`, `  const r${i} = await tools.${name}({} as any)`, `  seen[${JSON.stringify(name)}] = JSON.stringify(r${i}).length`, `} catch (e) { errors.push(String(e)) }`)
  }
  lines.push('const total = Object.values(seen).reduce((a, b) => a + b, 0)', 'console.log(total, errors.length)', 'return { total, ms: performance.now() - started }')
  return lines.slice(0, 40).join('\n')
}

const demoProgram = program(demoInputs.map((t) => t.name))
const largeProgram = program(largeInputs.slice(0, 9).map((t) => t.name))

/** The longest gap between 1 ms timer ticks while `work` runs: how long the host's event loop was held. */
async function maxLoopGap<T>(work: () => Promise<T>): Promise<{ value: T; gap: number; ms: number }> {
  let last = performance.now()
  let gap = 0
  const ticker = setInterval(() => {
    const now = performance.now()
    gap = Math.max(gap, now - last)
    last = now
  }, 1)
  const started = performance.now()
  const value = await work()
  const ms = performance.now() - started
  clearInterval(ticker)
  gap = Math.max(gap, performance.now() - last)
  return { value, gap, ms }
}

async function warm(engine: PreflightEngine, code: string, declarations: string): Promise<number[]> {
  const samples: number[] = []
  for (let i = 0; i < WARM_SAMPLES; i++) {
    const started = performance.now()
    await engine.analyze({ program: `${code}\n// ${i}`, language: 'typescript', declarations })
    samples.push(performance.now() - started)
  }
  return samples
}

/** The summary plus the fastest sample: on a shared, loaded machine the minimum is the closest to an idle core's figure. */
function withMin(samples: readonly number[]) {
  return { ...summarize(samples), min: Math.min(...samples) }
}

async function measure(label: string, engine: PreflightEngine): Promise<TableRow[]> {
  const demoDeclarations = renderTypeScriptSdkBlock(demoInputs)
  const largeDeclarations = renderTypeScriptSdkBlock(largeInputs)
  const first = await maxLoopGap(() => engine.analyze({ program: demoProgram, language: 'typescript', declarations: demoDeclarations }))
  const demo = withMin(await warm(engine, demoProgram, demoDeclarations))
  const switchLarge = performance.now()
  await engine.analyze({ program: largeProgram, language: 'typescript', declarations: largeDeclarations })
  const largeFirst = performance.now() - switchLarge
  const large = withMin(await warm(engine, largeProgram, largeDeclarations))
  return [
    { engine: label, case: `first check (compiler load), ${demoInputs.length} tools`, 'ms': first.ms, 'host loop held (max ms)': first.gap },
    { engine: label, case: `warm p50 / p95, ${demoInputs.length} tools`, 'ms': `${demo.median.toFixed(1)} / ${demo.p95.toFixed(1)} (min ${demo.min.toFixed(1)})`, 'host loop held (max ms)': label === 'inline' ? 'whole check' : '-' },
    { engine: label, case: `first check of a new SDK, ${largeInputs.length} tools (${largeDeclarations.length} chars)`, 'ms': largeFirst, 'host loop held (max ms)': '-' },
    { engine: label, case: `warm p50 / p95, ${largeInputs.length} tools`, 'ms': `${large.median.toFixed(1)} / ${large.p95.toFixed(1)} (min ${large.min.toFixed(1)})`, 'host loop held (max ms)': '-' },
  ]
}

/**
 * What `'warn'` costs a run: run_code latency of a short program on the inline QuickJS
 * runtime with preflight off, with `'warn'` and the Node thread engine (checking
 * alongside the run), and with `'block'` (checking first).
 */
async function runCost(): Promise<TableRow[]> {
  const require = createRequire(import.meta.url)
  const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))
  const codeRuntime = createQuickJsRuntime({ wasmModule })
  const engine = createPreflightWorker()
  const code = "const files = await tools.list_files({})\nconsole.log(JSON.stringify(files).length)\nreturn 1"
  const rows: TableRow[] = []
  for (const [label, options] of [
    ['off', { preflight: 'off' }],
    ["'warn', thread engine", { preflight: 'warn', preflightEngine: engine }],
    ["'block', thread engine", { preflight: 'block', preflightEngine: engine }],
  ] as const satisfies readonly (readonly [string, Pick<ToolRuntimeOptions, 'preflight' | 'preflightEngine'>])[]) {
    const runtime = createToolRuntime({ mode: 'code', codeRuntime, ...options })
    for (const tool of createDemoTools().tools) runtime.register(tool)
    // Warm: the compiler is loaded and the SDK parsed before timing.
    await runtime.preflight({ code })
    const samples: number[] = []
    for (let i = 0; i < WARM_SAMPLES; i++) {
      const started = performance.now()
      const result = await runtime.execute({ callId: `b${i}`, name: 'run_code', arguments: { code: `${code}\n// ${i}`, description: 'bench' }, signal: new AbortController().signal })
      if (result.isError) throw new Error(result.error.message)
      samples.push(performance.now() - started)
    }
    const summary = withMin(samples)
    rows.push({ preflight: label, 'run_code p50 ms': summary.median, 'p95 ms': summary.p95, 'min ms': summary.min })
    await runtime.dispose()
  }
  await engine.dispose()
  await codeRuntime.dispose()
  return rows
}

if (!ONLY_LEVERS && !ONLY_PLANS) {
  collect()
  const before = process.memoryUsage()
  const inlineRows = await measure('inline', createInlinePreflightEngine({ load: loadTypeScript }))
  collect()
  const after = process.memoryUsage()
  const worker = createPreflightWorker()
  const threadRows = await measure('thread', worker)
  await worker.dispose()

  printTable([...inlineRows, ...threadRows], `preflight: a 40-line program (${demoProgram.split('\n').length} lines), ${WARM_SAMPLES} warm samples each`)
  printTable(
    [
      { what: 'heap growth (compiler + warm checker, both SDKs)', MB: (after.heapUsed - before.heapUsed) / 1e6 },
      { what: 'RSS growth', MB: (after.rss - before.rss) / 1e6 },
      ...(await checkerHeld()),
    ],
    'memory the inline checker holds (this process)',
  )
  printTable(await runCost(), "what preflight costs a run_code call (3-line program, inline QuickJS, demo tools)")
}
if (!ONLY_PLANS) printTable(await levers(), `levers: warm check of the 40-line program, ${LEVER_SAMPLES} checks each, interleaved (CPU = this process's CPU time per check)`)
if (!ONLY_LEVERS) printTable(await planStall(), 'plan approval: six 256 KiB programs at once, every request denied (host stall = longest gap of a 5 ms timer)')


/** A checker on a plain `ts.createProgram` with `lib` only (the shipped checker is this with `lib.es2022.d.ts`): the minimal-lib lever. */
function programChecker(ts: TypeScriptModule, readLib: LibReader, lib: string): (code: string, declarations: string) => unknown {
  const cache = new Map<string, TypeScript.SourceFile>()
  const options: TypeScript.CompilerOptions = { target: ts.ScriptTarget.ES2022, lib: [lib], strict: false, noEmit: true, noResolve: true, types: [], skipLibCheck: true, skipDefaultLibCheck: true }
  const sdkNames = new Map<string, string>()
  let old: TypeScript.Program | undefined
  return (code, declarations) => {
    let sdk = sdkNames.get(declarations)
    if (sdk === undefined) sdkNames.set(declarations, (sdk = `/t/sdk-${sdkNames.size}.d.ts`))
    const texts = new Map([['/t/globals.d.ts', SANDBOX_GLOBALS_DECLARATIONS], [sdk, declarations], ['/t/program.ts', CHECK_WRAP_OPEN + code + CHECK_WRAP_CLOSE]])
    const read = (f: string): string | undefined => texts.get(f) ?? (f.startsWith('/lib/') ? readLib(f.slice(5)) : undefined)
    const host: TypeScript.CompilerHost = {
      getSourceFile(fileName) {
        if (fileName === '/t/program.ts') return ts.createSourceFile(fileName, read(fileName)!, ts.ScriptTarget.ES2022, true)
        let file = cache.get(fileName)
        const text = file === undefined ? read(fileName) : undefined
        if (file === undefined && text !== undefined) cache.set(fileName, (file = ts.createSourceFile(fileName, text, ts.ScriptTarget.ES2022, true)))
        return file
      },
      getDefaultLibFileName: () => `/lib/${lib}`,
      writeFile: () => {},
      getCurrentDirectory: () => '/t/',
      getCanonicalFileName: (f) => f,
      useCaseSensitiveFileNames: () => true,
      getNewLine: () => '\n',
      fileExists: (f) => read(f) !== undefined,
      readFile: read,
    }
    const built = ts.createProgram({ rootNames: ['/t/globals.d.ts', sdk, '/t/program.ts'], options, host, ...(old === undefined ? {} : { oldProgram: old }) })
    old = built
    const file = built.getSourceFile('/t/program.ts')!
    return [...built.getSyntacticDiagnostics(file), ...built.getSemanticDiagnostics(file)]
  }
}

/** The first design: one `LanguageService` per SDK over a shared document registry, the program file's version bumped per check. */
function languageServiceChecker(ts: TypeScriptModule, readLib: LibReader): (code: string, declarations: string) => unknown {
  const options: TypeScript.CompilerOptions = { target: ts.ScriptTarget.ES2022, lib: ['lib.es2022.d.ts'], strict: false, noEmit: true, noResolve: true, types: [], skipLibCheck: true, skipDefaultLibCheck: true }
  const registry = ts.createDocumentRegistry()
  const services = new Map<string, (code: string) => unknown>()
  return (code, declarations) => {
    let check = services.get(declarations)
    if (check === undefined) {
      const id = services.size
      const program = { version: 1, text: '' }
      const files = new Map([['/t/globals.d.ts', { version: 1, text: SANDBOX_GLOBALS_DECLARATIONS }], [`/t/sdk-${id}.d.ts`, { version: 1, text: declarations }], [`/t/program-${id}.ts`, program]])
      const text = (f: string): string | undefined => files.get(f)?.text ?? (f.startsWith('/lib/') ? readLib(f.slice(5)) : undefined)
      const service = ts.createLanguageService(
        {
          getCompilationSettings: () => options,
          getScriptFileNames: () => [...files.keys()],
          getScriptVersion: (f) => String(files.get(f)?.version ?? 0),
          getScriptSnapshot: (f) => {
            const content = text(f)
            return content === undefined ? undefined : ts.ScriptSnapshot.fromString(content)
          },
          getCurrentDirectory: () => '/t/',
          getDefaultLibFileName: () => '/lib/lib.es2022.d.ts',
          fileExists: (f) => text(f) !== undefined,
          readFile: text,
        },
        registry,
      )
      services.set(
        declarations,
        (check = (source: string) => {
          program.text = CHECK_WRAP_OPEN + source + CHECK_WRAP_CLOSE
          program.version++
          return [...service.getSyntacticDiagnostics(`/t/program-${id}.ts`), ...service.getSemanticDiagnostics(`/t/program-${id}.ts`)]
        }),
      )
    }
    return check(code)
  }
}

async function levers(): Promise<TableRow[]> {
  const { ts, readLib } = await loadTypeScript()
  const shipped = createTypeScriptChecker(ts, readLib)
  const variants: [string, (code: string, declarations: string, i: number) => unknown][] = [
    ['shipped: createProgram + oldProgram, SourceFiles parsed once', (code, d, i) => shipped.check(`${code}\n// ${i}`, d)],
    ['a LanguageService per SDK (the first design)', ((c) => (code: string, d: string, i: number) => c(`${code}\n// ${i}`, d))(languageServiceChecker(ts, readLib))],
    ['lib.es5.d.ts only (unsafe: Map, Set, Promise… unknown)', ((c) => (code: string, d: string, i: number) => c(`${code}\n// ${i}`, d))(programChecker(ts, readLib, 'lib.es5.d.ts'))],
    ['shipped, the same program again (cache)', (code, d) => shipped.check(code, d)],
  ]
  const rows: TableRow[] = []
  for (const [label, inputs, code] of [[`${demoInputs.length} tools`, demoInputs, demoProgram], [`${largeInputs.length} tools`, largeInputs, largeProgram]] as const) {
    const declarations = renderTypeScriptSdkBlock(inputs)
    for (const [, run] of variants) for (let i = 0; i < 30; i++) run(code, declarations, -1 - i)
    const wall = variants.map(() => [] as number[])
    const cpu = variants.map(() => [] as number[])
    for (let i = 0; i < LEVER_SAMPLES; i++) {
      for (let k = 0; k < variants.length; k++) {
        const j = (i + k) % variants.length
        const cpu0 = process.cpuUsage()
        const started = performance.now()
        variants[j]![1](code, declarations, i)
        wall[j]!.push(performance.now() - started)
        const used = process.cpuUsage(cpu0)
        cpu[j]!.push((used.user + used.system) / 1000)
      }
    }
    variants.forEach(([name], j) => {
      const w = withMin(wall[j]!)
      rows.push({ tools: label, lever: name, 'wall p50 ms': w.median, 'min ms': w.min, 'CPU p50 ms': summarize(cpu[j]!).median })
    })
  }
  return rows
}

/** The heap a warm checker keeps (the compiler module already loaded): lib parsed, then each SDK's declarations and last program. */
async function checkerHeld(): Promise<TableRow[]> {
  const { ts, readLib } = await loadTypeScript()
  const heap = (): number => {
    collect()
    return process.memoryUsage().heapUsed
  }
  const start = heap()
  const checker = createTypeScriptChecker(ts, readLib)
  checker.check(demoProgram, renderTypeScriptSdkBlock(demoInputs))
  const demo = heap()
  checker.check(largeProgram, renderTypeScriptSdkBlock(largeInputs))
  const large = heap()
  // Kept alive until measured.
  checker.check('return 1', renderTypeScriptSdkBlock(demoInputs))
  return [
    { what: `a new checker after one check, ${demoInputs.length} tools (lib + globals + SDK + last program)`, MB: (demo - start) / 1e6 },
    { what: `then the ${largeInputs.length}-tool SDK warm too (its declarations + last program)`, MB: (large - demo) / 1e6 },
  ]
}
