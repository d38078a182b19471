/**
 * `runtime.preflight()`: each allowlisted diagnostic with its line, type quibbles kept
 * as warnings (never errors), what the checker sees (every tool the agent may call, the
 * sandbox globals, no DOM or Node), and the note when the compiler cannot be loaded.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { createInlinePreflightEngine } from '../../../src/preflight/inline-engine.js'
import { loadTypeScript } from '../../../platforms/node/index.js'
import { MAX_CHECKED_CHARS, MAX_CHECKED_DEPTH } from '../../../src/preflight/analyze.js'
import type { PreflightDiagnostic } from '../../../src/preflight/types.js'
import type { ToolRuntime } from '../../../src/runtime-types.js'

const noteTool = defineTool({
  name: 'write_note',
  description: 'Writes a note.',
  parameters: { title: { type: 'string', required: true }, body: { type: 'string', required: true }, pinned: { type: 'boolean' } },
  output: { schema: { type: 'object', properties: { id: { type: 'number' } }, additionalProperties: false }, render: (_a, v) => [{ type: 'text', text: JSON.stringify(v) }] },
  execute: () => ({ id: 1 }),
})
const countTool = defineTool({
  name: 'count_items',
  description: 'Counts items.',
  parameters: { list: { type: 'string', required: true } },
  output: { schema: { type: 'number' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
  execute: () => 3,
})

/** The compiler in this thread (Node's loader): the registry's default engine has none. */
const preflightEngine = createInlinePreflightEngine({ load: loadTypeScript })
const registries: ToolRuntime[] = []
afterAll(async () => {
  for (const r of registries) await r.dispose()
})

function registry(): ToolRuntime {
  const runtime = createToolRuntime({ preflightEngine })
  runtime.register(noteTool)
  runtime.register(countTool)
  registries.push(runtime)
  return runtime
}

const errors = (diagnostics: readonly PreflightDiagnostic[]) => diagnostics.filter((d) => d.severity === 'error').map((d) => `${d.line}:${d.code}`)

describe('runtime.preflight: the allowlist', () => {
  const runtime = registry()

  it.each([
    ['an unknown tool (TS2551, with the closest names)', 'const a = 1\nawait tools.count_itmes({ list: "x" })', '2:TS2551', /^tools\.count_itmes is not a tool this program can call; did you mean tools\.count_items\?$/],
    ['an unknown tool (TS2339)', 'const a = 1\n\nawait tools.frobnicate({})', '3:TS2339', /^tools\.frobnicate is not a tool this program can call; find tools with catalog\.search/],
    ['an unknown property of a tool result (TS2339)', 'const n = 1\nconst r = await tools.write_note({ title: "t", body: "b" })\nconsole.log((await tools.write_note({ title: "t", body: r.idd })).id)', '3:TS2339', /Property 'idd' does not exist/],
    ['a wrong argument type (TS2322 on args)', 'const n = 1\nawait tools.write_note({ title: "t", body: 5 })', '2:TS2322', /number.*string/],
    ['a wrong argument (TS2345)', 'await tools.count_items("x")', '1:TS2345', /not assignable/],
    ['a missing required property (TS2345, missing variant)', '\nawait tools.write_note({ title: "t" })', '2:TS2345', /'body' is missing/],
    ['a missing argument (TS2554)', 'await tools.count_items()', '1:TS2554', /Expected 1 arguments/],
    ['too many arguments (TS2554)', 'await tools.count_items({ list: "x" }, 2)', '1:TS2554', /Expected 1 arguments, but got 2/],
    ['an unknown name (TS2304)', 'const x = 1\nconst fs = readFileSync("a.txt")', '2:TS2304', /readFileSync/],
    ['a Node global the sandbox lacks (TS2591)', 'const x = 1\nconst fs = require("fs")', '2:TS2591', /require/],
    ['an unknown name with a suggestion (TS2552)', 'const items = [1]\nconsole.log(itemz)', '2:TS2552', /Did you mean 'items'/],
    ['a mistyped destructured tool (TS2339)', 'const { count_itemz } = tools\nawait count_itemz({ list: "x" })', '1:TS2339', /count_itemz/],
  ])('%s', async (_label, code, expected, message) => {
    const report = await runtime.preflight({ code })
    expect(errors(report.diagnostics)).toEqual([expected])
    expect(report.diagnostics.find((d) => d.severity === 'error')!.message).toMatch(message)
  })

  it('reports the columns of the program itself, line 1 included (the wrapper is not counted)', async () => {
    const report = await runtime.preflight({ code: 'await tools.nope()' })
    expect(report.diagnostics[0]).toMatchObject({ line: 1, column: 13, code: 'TS2339', severity: 'error' })
  })

  it('keeps type quibbles as warnings: never errors', async () => {
    const code = [
      'const s: string = 5 as unknown as string',
      'const o = {}',
      'o.total = 1',
      'const n: number = "3"',
      'function f(x) { return x.y }',
      'const m = "a-b".match(/-/)',
      'console.log(m[0], f(1), s, n)',
      'return await tools.count_items({ list: "x" })',
    ].join('\n')
    const report = await runtime.preflight({ code })
    expect(errors(report.diagnostics)).toEqual([])
    expect(report.diagnostics.filter((d) => d.severity === 'warning').map((d) => `${d.line}:${d.code}`)).toEqual(['3:TS2339', '4:TS2322'])
  })

  it('accepts a correct program using the sandbox globals and catalog, and gives its plan', async () => {
    const code = [
      'const started = performance.now()',
      'const id = crypto.randomUUID()',
      'const url = new URL("https://example.com/a?b=1")',
      'const bytes = new TextEncoder().encode(btoa("x"))',
      'await new Promise((resolve) => setTimeout(resolve, 1))',
      'const hits = await catalog.search("count", { limit: 3 })',
      'const note = await tools.write_note({ title: url.searchParams.get("b") ?? "", body: id, pinned: true })',
      'console.log(hits.map((h) => h.name), bytes.length, structuredClone({ a: 1 }), performance.now() - started)',
      'return { id: note.id, n: await tools.count_items({ list: "x" }) }',
    ].join('\n')
    const report = await runtime.preflight({ code })
    expect(report.diagnostics.filter((d) => d.severity !== 'info')).toEqual([])
    expect(report.plan, JSON.stringify(report.plan)).toEqual({ calls: [{ name: 'write_note', line: 7, column: 20 }, { name: 'count_items', line: 9, column: 32 }], dynamic: false })
    expect(report.ms).toBeGreaterThan(0)
  })

  it('flags DOM and Node names the sandbox does not have', async () => {
    const report = await runtime.preflight({ code: 'document.title = "x"\nprocess.exit(1)\nconst b = Buffer.from("x")' })
    expect(errors(report.diagnostics)).toEqual(['1:TS2584', '2:TS2591', '3:TS2591'])
  })

  it('checks against every tool of the agent, whatever form its prompt SDK took', async () => {
    const small = createToolRuntime({ sdkBudgetChars: 200, preflightEngine })
    registries.push(small)
    small.register(noteTool)
    small.agent('a1').register(countTool)
    expect(errors((await small.preflight({ code: 'await tools.count_items({ list: "x" })', agent: 'a1' })).diagnostics)).toEqual([])
    expect(errors((await small.preflight({ code: 'await tools.count_items({ list: "x" })' })).diagnostics)).toEqual(['1:TS2339'])
  })

  it('answers a syntax error and a hostile program as error diagnostics without type-checking them', async () => {
    const syntax = await runtime.preflight({ code: 'await tools.count_items({ list: "x" }' })
    expect(syntax.diagnostics).toHaveLength(1)
    expect(syntax.diagnostics[0]).toMatchObject({ code: 'SYNTAX', severity: 'error' })
    const deep = await runtime.preflight({ code: `${'('.repeat(300)}1${')'.repeat(300)}` })
    expect(deep.diagnostics[0]).toMatchObject({ code: 'PROGRAM_BOUND', severity: 'error' })
  })

  it('refuses a request without a string code', async () => {
    await expect(runtime.preflight({ code: 5 } as never)).rejects.toMatchObject({ code: 'INVALID_EXECUTION' })
  })
})

describe('runtime.preflight where the compiler cannot be loaded (the edge)', () => {
  it('without an engine (the default: the core holds no compiler), answers the plan and the unavailable note', async () => {
    const runtime = createToolRuntime()
    registries.push(runtime)
    runtime.register(countTool)
    const report = await runtime.preflight({ code: 'await tools.count_itmes({})' })
    expect(report.plan.calls.map((c) => c.name)).toEqual(['count_itmes'])
    expect(report.diagnostics).toEqual([expect.objectContaining({ code: 'CHECK_UNAVAILABLE', severity: 'info', message: expect.stringMatching(/no TypeScript compiler was given/) })])
  })

  it('returns the plan and one info note saying type-checking is unavailable', async () => {
    const engine = createInlinePreflightEngine({ load: () => Promise.reject(new Error('no module named typescript')) })
    const runtime = createToolRuntime({ preflightEngine: engine })
    registries.push(runtime)
    runtime.register(countTool)
    const report = await runtime.preflight({ code: 'await tools.count_itmes({})\nawait tools.count_items({ list: 1 })' })
    expect(report.plan.calls.map((c) => c.name)).toEqual(['count_itmes', 'count_items'])
    expect(report.diagnostics).toEqual([
      { line: 1, column: 1, code: 'CHECK_UNAVAILABLE', message: expect.stringMatching(/type-checking is unavailable in this runtime \(no module named typescript\)/), severity: 'info' },
    ])
  })
})

describe('runtime.preflight across agents with different tool sets', () => {
  it('checks each program against its own agent, alternating (one warm SDK each)', async () => {
    const runtime = createToolRuntime({ preflightEngine })
    registries.push(runtime)
    runtime.agent('notes').register(noteTool)
    runtime.agent('counts').register(countTool)
    for (let round = 0; round < 3; round++) {
      expect(errors((await runtime.preflight({ code: 'await tools.write_note({ title: "t", body: "b" })', agent: 'notes' })).diagnostics)).toEqual([])
      expect(errors((await runtime.preflight({ code: 'await tools.write_note({ title: "t", body: "b" })', agent: 'counts' })).diagnostics)).toEqual(['1:TS2339'])
      expect(errors((await runtime.preflight({ code: 'await tools.count_items({ list: "x" })', agent: 'counts' })).diagnostics)).toEqual([])
      expect(errors((await runtime.preflight({ code: 'await tools.count_items({ list: "x" })', agent: 'notes' })).diagnostics)).toEqual(['1:TS2339'])
    }
  })
})

describe('runtime.preflight: what reaches the compiler is bounded', () => {
  it('gives a program over the check bounds its plan and a CHECK_SKIPPED note, without type-checking it', async () => {
    const runtime = registry()
    const long = `${'await tools.count_items({ list: "x" })\n'.repeat(Math.ceil(MAX_CHECKED_CHARS / 39))}await tools.nope()`
    const report = await runtime.preflight({ code: long })
    expect(report.plan.calls.at(-1)).toMatchObject({ name: 'nope' })
    expect(report.diagnostics).toEqual([expect.objectContaining({ code: 'CHECK_SKIPPED', severity: 'info', message: expect.stringMatching(/characters long \(at most 16384 are type-checked\)/) })])
    const deep = await runtime.preflight({ code: `await tools.nope()\nconst a = ${'['.repeat(MAX_CHECKED_DEPTH + 1)}${']'.repeat(MAX_CHECKED_DEPTH + 1)}` })
    expect(deep.diagnostics).toEqual([expect.objectContaining({ code: 'CHECK_SKIPPED', message: expect.stringMatching(/nested 65 levels deep/) })])
    const atBound = await runtime.preflight({ code: `await tools.nope()\nconst a = ${'['.repeat(MAX_CHECKED_DEPTH)}${']'.repeat(MAX_CHECKED_DEPTH)}` })
    expect(errors(atBound.diagnostics)).toEqual(['1:TS2339'])
  })
})

describe('runtime.preflight of a Python code runtime', () => {
  it('gives the plan only, with a note that no type-check runs', async () => {
    // A code runtime is only read for its language here: preflight never runs the program.
    const python = { language: 'python', isolation: 'none', capabilities: {}, run: () => Promise.reject(new Error('not run')), dispose: async () => {} }
    const runtime = createToolRuntime({ mode: 'code', codeRuntime: python as never, preflightEngine })
    registries.push(runtime)
    runtime.register(countTool)
    const report = await runtime.preflight({ code: 'n = await tools.count_itmes(list="x")\nf = getattr(tools, name)' })
    expect(report.plan).toEqual({ calls: [{ name: 'count_itmes', line: 1, column: 17 }], dynamic: true })
    expect(report.diagnostics).toEqual([expect.objectContaining({ code: 'CHECK_SKIPPED', severity: 'info' })])
  })
})
