/**
 * `run_code` under `createToolRuntime({ preflight })`: `'block'` answers the allowlisted
 * mistakes as PREFLIGHT_FAILED and runs nothing (a side-effect counter stays 0);
 * `'warn'` runs and appends them; quibbles never block and are never shown; `'off'`
 * and the default `'warn'` without an engine run as before.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { afterAll, describe, expect, it } from 'vitest'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { loadTypeScript } from '../../../platforms/node/index.js'
import { createInlinePreflightEngine } from '../../../src/preflight/inline-engine.js'
import type { PreflightEngine } from '../../../src/preflight/types.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ToolRuntime, ToolRuntimeOptions } from '../../../src/runtime-types.js'
import type { ToolExecutionResult } from '../../../src/types.js'

const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))
const codeRuntime = createQuickJsRuntime({ computeMs: 20_000, maxWallMs: 60_000, wasmModule })
const registries: ToolRuntime[] = []
afterAll(async () => {
  for (const r of registries) await r.dispose()
  await codeRuntime.dispose()
})

function setup(options: Pick<ToolRuntimeOptions, 'preflight' | 'preflightEngine'>, hooks: { beforeWrite?: () => Promise<void> } = {}) {
  const effects = { writes: 0 }
  const runtime = createToolRuntime({ mode: 'code', codeRuntime, ...options })
  registries.push(runtime)
  runtime.register(
    defineTool({
      name: 'write_note',
      description: 'Writes a note (a side effect).',
      parameters: { title: { type: 'string', required: true }, body: { type: 'string', required: true } },
      output: { schema: { type: 'number' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
      async execute() {
        await hooks.beforeWrite?.()
        return ++effects.writes
      },
    }),
  )
  const run = (code: string): Promise<ToolExecutionResult> =>
    runtime.execute({ callId: `c${Math.random()}`, name: 'run_code', arguments: { code, description: 'test' }, signal: new AbortController().signal })
  return { runtime, run, effects }
}

const text = (result: ToolExecutionResult): string => result.content.map((b) => (b.type === 'text' ? b.text : '')).join('\n')
const engine = createInlinePreflightEngine({ load: loadTypeScript })

/** Line 1 writes (a side effect), line 2 misspells the tool: the run fails after the write. */
const HALF_DONE = 'await tools.write_note({ title: "a", body: "b" })\nawait tools.write_notes({ title: "a", body: "b" })\nawait tools.write_note({ title: 5, body: "b" })'

describe("run_code with preflight: 'block'", () => {
  it('answers the mistakes with their lines and runs nothing', async () => {
    const { run, effects } = setup({ preflight: 'block', preflightEngine: engine })
    const result = await run(HALF_DONE)
    expect(result.isError).toBe(true)
    if (!result.isError) return
    expect(result.error.info).toMatchObject({ code: 'PREFLIGHT_FAILED' })
    expect(text(result)).toMatch(/nothing ran/)
    expect(text(result)).toMatch(/line 2, column 13: TS2551 tools\.write_notes is not a tool this program can call; did you mean tools\.write_note\?/)
    expect(text(result)).toMatch(/line 3, column 26: TS2322 Type 'number' is not assignable to type 'string'/)
    expect(effects.writes).toBe(0)
  })

  it('shows at most 5 mistakes and counts the rest', async () => {
    const { run, effects } = setup({ preflight: 'block', preflightEngine: engine })
    const code = Array.from({ length: 8 }, (_, i) => `await tools.nope${i}()`).join('\n')
    const result = await run(`await tools.write_note({ title: "a", body: "b" })\n${code}`)
    expect(text(result)).toMatch(/found 8 problems:/)
    expect(text(result).match(/TS2339/g)).toHaveLength(5)
    expect(text(result)).toMatch(/\(and 3 more\)/)
    expect(effects.writes).toBe(0)
  })

  it('never blocks on type quibbles, and runs a correct program', async () => {
    const { run, effects } = setup({ preflight: 'block', preflightEngine: engine })
    const result = await run('const s: string = 5 as unknown as string\nconst o = {}\no.n = 1\nfunction f(x) { return x }\nreturn await tools.write_note({ title: f("t"), body: `b${s}` })')
    expect(result.isError, text(result)).toBe(false)
    expect(text(result)).toBe('1')
    expect(effects.writes).toBe(1)
  })

  it('runs when the check is unavailable (an info note never blocks)', async () => {
    const unavailable = createInlinePreflightEngine({ load: () => Promise.reject(new Error('no compiler here')) })
    const { run, effects } = setup({ preflight: 'block', preflightEngine: unavailable })
    const result = await run('return await tools.write_note({ title: "t", body: "b" })')
    expect(result.isError).toBe(false)
    expect(effects.writes).toBe(1)
  })

  it('blocks a syntax error before the code runtime sees it', async () => {
    const { run } = setup({ preflight: 'block', preflightEngine: engine })
    const result = await run('await tools.write_note({ title: "t", body: "b" }')
    expect(result.isError && result.error.info).toMatchObject({ code: 'PREFLIGHT_FAILED' })
    expect(text(result)).toMatch(/SYNTAX/)
  })
})

describe("run_code with preflight: 'warn'", () => {
  it('runs the program and appends the mistakes once the check finished first', async () => {
    // The tool waits until the (real) check has answered, so the run settles after it.
    let checked!: () => void
    const done = new Promise<void>((resolve) => (checked = resolve))
    const signalling: PreflightEngine = { where: 'inline', analyze: async (request) => engine.analyze(request).finally(checked), dispose: async () => {} }
    const { run, effects } = setup({ preflight: 'warn', preflightEngine: signalling }, { beforeWrite: () => done })
    const result = await run('const n: number = await tools.write_note({ title: "a", body: "b" })\nconsole.log("wrote", n)\nconst unused = () => tools.write_note({ title: "x" })')
    expect(result.isError, text(result)).toBe(false)
    expect(effects.writes).toBe(1)
    expect(text(result)).toMatch(/^wrote 1\n\nPreflight \(type-check against the tools SDK, before the run\) found 1 problem:\n {2}line 3, column 39: TS2345/)
    if (!result.isError) expect(result.value).toMatchObject({ logs: ['wrote 1'], preflight: expect.stringMatching(/TS2345/) })
  })

  it('appends the mistakes to a failed run (waiting for the check), after the run-time error', async () => {
    const { run, effects } = setup({ preflight: 'warn', preflightEngine: engine })
    const result = await run(HALF_DONE)
    expect(result.isError).toBe(true)
    expect(effects.writes).toBe(1)
    expect(text(result)).toMatch(/write_notes[\s\S]*Preflight \(type-check against the tools SDK, before the run\) found 2 problems:\n {2}line 2, column 13: TS2551/)
  })

  it('shows nothing for quibbles', async () => {
    const { run } = setup({ preflight: 'warn', preflightEngine: engine })
    await engine.analyze({ program: '1', language: 'typescript', declarations: '' })
    const result = await run('const o = {}\no.n = 1\nconst s: string = 5 as unknown as string\nreturn s')
    expect(text(result)).toBe('5')
  })

  it('without an engine (the default), runs as before: no check is paid for', async () => {
    const { run, runtime } = setup({})
    expect(runtime.options.preflight).toBe('warn')
    const result = await run(HALF_DONE)
    expect(text(result)).not.toMatch(/Preflight/)
  })
})

describe("run_code with preflight: 'off'", () => {
  it('runs as before, even with an engine', async () => {
    const { run, effects } = setup({ preflight: 'off', preflightEngine: engine })
    const result = await run(HALF_DONE)
    expect(effects.writes).toBe(1)
    expect(text(result)).not.toMatch(/Preflight/)
  })
})

describe('createToolRuntime: the preflight options', () => {
  it('refuses an unknown mode and a malformed engine', () => {
    expect(() => createToolRuntime({ preflight: 'strict' as never })).toThrow(/options.preflight must be 'off', 'warn' or 'block' \(got "strict"\)/)
    expect(() => createToolRuntime({ preflightEngine: {} as never })).toThrow(/options.preflightEngine must be a PreflightEngine/)
  })
})
