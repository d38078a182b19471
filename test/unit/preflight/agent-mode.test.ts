/**
 * An agent's own preflight mode (`runtime.agent(id).preflightMode(mode)`) wins over the
 * runtime's `preflight` option for that agent's programs, and only for them; its disposer
 * (or the agent's disposal) gives the agent the runtime's mode back.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { afterAll, describe, expect, it } from 'vitest'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { loadTypeScript } from '../../../platforms/node/index.js'
import { createInlinePreflightEngine } from '../../../src/preflight/inline-engine.js'
import type { PreflightMode } from '../../../src/preflight/types.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ToolRuntime } from '../../../src/runtime-types.js'
import type { ToolExecutionResult } from '../../../src/types.js'

const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))
const codeRuntime = createQuickJsRuntime({ computeMs: 20_000, maxWallMs: 60_000, wasmModule })
const engine = createInlinePreflightEngine({ load: loadTypeScript })
const registries: ToolRuntime[] = []
afterAll(async () => {
  for (const r of registries) await r.dispose()
  await codeRuntime.dispose()
})

/** Line 1 writes (a side effect), line 2 misspells the tool: under 'block' nothing runs, otherwise the write happens. */
const HALF_DONE = 'await tools.write_note({ title: "a" })\nawait tools.write_notes({ title: "b" })'

function setup(preflight: PreflightMode) {
  const effects = { writes: 0 }
  const runtime = createToolRuntime({ mode: 'code', codeRuntime, preflight, preflightEngine: engine })
  registries.push(runtime)
  runtime.register(
    defineTool({
      name: 'write_note',
      description: 'Writes a note (a side effect).',
      parameters: { title: { type: 'string', required: true } },
      output: { schema: { type: 'number' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
      execute: async () => ++effects.writes,
    }),
  )
  const run = (agent?: string): Promise<ToolExecutionResult> => {
    const input = { callId: `c${Math.random()}`, name: 'run_code', arguments: { code: HALF_DONE, description: 'test' }, signal: new AbortController().signal }
    return agent === undefined ? runtime.execute(input) : runtime.agent(agent).execute(input)
  }
  return { runtime, run, effects }
}

const errorCode = (result: ToolExecutionResult): unknown => (result.isError ? (result.error.info as { code?: unknown } | undefined)?.code : undefined)

describe('per-agent preflight mode', () => {
  it("an agent's 'block' refuses its program (nothing runs) while the runtime's 'off' still runs everyone else's", async () => {
    const { runtime, run, effects } = setup('off')
    runtime.agent('careful').preflightMode('block')
    const refused = await run('careful')
    expect(errorCode(refused)).toBe('PREFLIGHT_FAILED')
    expect(effects.writes).toBe(0)
    // The global layer and an agent that declared nothing keep the runtime's 'off': the write happens, then the run fails.
    expect(errorCode(await run())).toBe('CODE_RUN_FAILED')
    expect(errorCode(await run('other'))).toBe('CODE_RUN_FAILED')
    expect(effects.writes).toBe(2)
  })

  it("an agent's 'off' runs its program under a runtime whose option is 'block'", async () => {
    const { runtime, run, effects } = setup('block')
    runtime.agent('trusting').preflightMode('off')
    expect(errorCode(await run())).toBe('PREFLIGHT_FAILED')
    expect(effects.writes).toBe(0)
    expect(errorCode(await run('trusting'))).toBe('CODE_RUN_FAILED')
    expect(effects.writes).toBe(1)
  })

  it('the disposer and the agent disposal give the runtime mode back', async () => {
    const { runtime, run, effects } = setup('off')
    const undo = runtime.agent('a').preflightMode('block')
    expect(errorCode(await run('a'))).toBe('PREFLIGHT_FAILED')
    undo()
    expect(errorCode(await run('a'))).toBe('CODE_RUN_FAILED')
    expect(effects.writes).toBe(1)
    runtime.agent('b').preflightMode('block')
    await runtime.agent('b').dispose()
    // A new agent of the same id starts with the runtime's mode.
    expect(errorCode(await run('b'))).toBe('CODE_RUN_FAILED')
    expect(effects.writes).toBe(2)
  })

  it('is declared once per agent scope, with a mode the runtime option also accepts', () => {
    const { runtime } = setup('warn')
    const agent = runtime.agent('once')
    expect(() => agent.preflightMode('loud' as PreflightMode)).toThrow(expect.objectContaining({ code: 'INVALID_SCOPE_OPERATION' }))
    agent.preflightMode('block')
    expect(() => agent.preflightMode('off')).toThrow(/already declared its preflight mode \('block'\)/)
  })
})
