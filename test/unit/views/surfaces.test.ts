/**
 * Issue 20, item 2: every surface that shows or calls tools agrees with the agent's view
 * (`runtime.view(agent)`): the catalog (`runtime.schemas`/`get`), prompt assembly, the
 * `catalog` a program searches, `GET /v1/tools` and `/v1/sdk`, MCP `tools/list`, the
 * provider adapters, `POST /v1/run`, `agent.view()`, and the pipeline itself (a model's
 * direct call, a program's call).
 * Agents cover native-only, code-only, unrestricted, hidden (masked) and own tools under
 * each presentation mode. Node only: the program calls run in the QuickJS sandbox engine
 * (inline), whose wasm workerd loads only as a compiled module.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { RUN_CODE_TOOL_NAME } from '../../../src/code-mode/registry-seam.js'
import { createToolsApp } from '../../../src/http/index.js'
import { createMcpApp } from '../../../src/mcp/index.js'
import { toAnthropicTools, toOpenAIChatTools, toOpenAIResponsesTools, toVercelTools } from '../../../src/providers/index.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import type { AgentToolView } from '../../../src/runtime-types.js'
import type { AnyToolDefinition, ToolCaller, ToolPresentationMode } from '../../../src/types.js'
import { call, echoTool } from '../registry/helpers.js'

const TOKEN = 'view-surfaces-token-0123456789'
const AUTH = { Authorization: `Bearer ${TOKEN}` }

const tool = (name: string, callers?: ToolCaller[]): AnyToolDefinition => ({ ...echoTool(name), ...(callers === undefined ? {} : { callers }) })

// Names no description or SDK keyword contains, so a name in the SDK text is a declaration.
const GLOBALS = ['t_plain', 't_native_only', 't_code_only', 't_hidden'] as const
const ALL_NAMES = [...GLOBALS, 't_own', 't_missing', RUN_CODE_TOOL_NAME]

const codeRuntime = createQuickJsRuntime()
const runtime = createToolRuntime({ mode: 'both', codeRuntime, preflight: 'off' })
runtime.register(tool('t_plain'))
runtime.register(tool('t_native_only', ['native']))
runtime.register(tool('t_code_only', ['code']))
runtime.register(tool('t_hidden'))

/** The agents: one per presentation mode, with masks and an own tool; `undefined` is the global layer. */
const AGENTS: readonly (string | undefined)[] = ['a_native', 'a_code', 'a_both', 'a_allow', undefined, 'a_no_layer']
const declare = (id: string, mode: ToolPresentationMode | undefined, setup: (agent: ReturnType<typeof runtime.agent>) => void) => {
  const agent = runtime.agent(id)
  if (mode !== undefined) agent.presentAs(mode)
  setup(agent)
}
declare('a_native', 'native', (a) => void a.restrict({ deny: ['t_hidden'] }))
declare('a_code', 'code', (a) => {
  a.restrict({ deny: ['t_hidden'] })
  a.register(tool('t_own', ['code']))
})
declare('a_both', 'both', (a) => void a.register(tool('t_own')))
declare('a_allow', undefined, (a) => void a.restrict({ allow: ['t_code_only', 't_native_only'] }))

const app = createToolsApp(runtime, { token: TOKEN })
afterAll(async () => {
  await runtime.dispose()
  await codeRuntime.dispose()
})

const names = (list: readonly { readonly name: string }[]) => list.map((t) => t.name)
const query = (agent: string | undefined) => (agent === undefined ? '' : `?agent=${agent}`)

async function getJson(path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await app.request(path, { headers: AUTH })
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

/** What a program of `agent` may call: each tool tried from one `run_code` program. */
async function programCalls(agent: string | undefined): Promise<Record<string, boolean>> {
  const program = `const out = {}
for (const name of ${JSON.stringify(ALL_NAMES)}) {
  try { await tools[name]({ text: 'x' }); out[name] = true } catch { out[name] = false }
}
return out`
  const result = await runtime.execute(call(RUN_CODE_TOOL_NAME, { code: program, description: 'try every tool' }, agent === undefined ? {} : { agent }))
  if (result.isError) throw new Error(`the probe program failed: ${result.error.message}`)
  return (result.value as { result: Record<string, boolean> }).result
}

describe('every surface agrees with runtime.view(agent)', () => {
  it('the views themselves: who sees what, and who may call it natively or from code', () => {
    const view = (agent: string) => runtime.view(agent)
    expect(names(view('a_native').tools)).toEqual(['t_plain', 't_native_only', 't_code_only'])
    expect(names(view('a_native').native)).toEqual(['t_plain', 't_native_only'])
    expect(view('a_native').presentsRunCode).toBe(false)
    expect(names(view('a_code').native)).toEqual([])
    expect(names(view('a_code').code)).toEqual(['t_plain', 't_code_only', 't_own'])
    expect(names(view('a_code').wireTools)).toEqual([RUN_CODE_TOOL_NAME])
    expect(names(view('a_both').wireTools)).toEqual(['t_plain', 't_native_only', 't_hidden', 't_own', RUN_CODE_TOOL_NAME])
    expect(names(view('a_allow').tools)).toEqual(['t_native_only', 't_code_only'])
    // An agent without a layer reads the global view (the same object: nothing is built per made-up name).
    expect(runtime.view('a_no_layer')).toBe(runtime.view())
    expect(view('a_code').canCall(RUN_CODE_TOOL_NAME, 'native')).toBe(true)
    expect(view('a_code').canCall(RUN_CODE_TOOL_NAME, 'code')).toBe(false)
    expect(view('a_native').canCall(RUN_CODE_TOOL_NAME, 'native')).toBe(false)
    expect(view('a_both').canCall('t_native_only', 'code')).toBe(false)
    expect(view('a_both').canCall('t_code_only', 'native')).toBe(false)
    expect(view('a_native').canCall('t_hidden', 'native')).toBe(false)
    expect(view('a_both').get('t_missing')).toBeUndefined()
    expect(Object.isFrozen(view('a_both'))).toBe(true)
    expect(Object.isFrozen(view('a_both').code)).toBe(true)
  })

  it('the view is a snapshot: a change gives a new view with the new answer', () => {
    const before = runtime.view('a_both')
    const undo = runtime.agent('a_both').register(tool('t_later'))
    const after = runtime.view('a_both')
    expect(after).not.toBe(before)
    expect(before.get('t_later')).toBeUndefined()
    expect(after.canCall('t_later', 'native')).toBe(true)
    undo()
    expect(runtime.view('a_both').get('t_later')).toBeUndefined()
  })

  it("agent.view() is runtime.view(id): the same object, before and after a change; a disposed agent's view() throws DISPOSED", async () => {
    for (const id of ['a_native', 'a_code', 'a_both', 'a_allow']) expect(runtime.agent(id).view(), id).toBe(runtime.view(id))
    const agent = runtime.agent('a_short_lived')
    agent.presentAs('code')
    const before = agent.view()
    expect(before.mode).toBe('code')
    agent.register(tool('t_short'))
    expect(agent.view()).not.toBe(before)
    expect(agent.view()).toBe(runtime.view('a_short_lived'))
    expect(agent.view().canCall('t_short', 'code')).toBe(true)
    await agent.dispose()
    expect(() => agent.view()).toThrow(expect.objectContaining({ code: 'DISPOSED' }))
    // Gone with its layer: the name reads the global view again.
    expect(runtime.view('a_short_lived')).toBe(runtime.view())
  })

  it('a provider adapter given neither a schema list nor a view refuses it (INVALID_OPTIONS)', () => {
    for (const input of [{}, null, { wireTools: 'x' }]) {
      expect(() => toOpenAIChatTools(input as never)).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
    }
  })

  for (const agent of AGENTS) {
    describe(`agent ${agent ?? '(global layer)'}`, () => {
      const view = (): AgentToolView => runtime.view(agent)

      it('runtime.schemas, runtime.get, runtime.presentation', () => {
        expect(runtime.schemas(agent)).toEqual(view().schemas)
        expect(runtime.presentation(agent)).toBe(view().mode)
        for (const name of ALL_NAMES) expect(runtime.get(name, agent)).toBe(view().get(name))
      })

      it('prompt assembly and the catalog a program searches', () => {
        const assembly = runtime.assemble(agent)
        expect(assembly.mode).toBe(view().mode)
        expect(assembly.tools).toEqual(view().wireTools)
        const catalog = runtime.catalog(agent)
        expect(catalog.size).toBe(view().code.length)
        for (const name of ALL_NAMES) expect(catalog.describe(name) !== undefined, name).toBe(view().canCall(name, 'code'))
      })

      it('GET /v1/tools, /v1/tools/:name and /v1/sdk', async () => {
        const list = await getJson(`/v1/tools${query(agent)}`)
        expect(list.body.mode).toBe(view().mode)
        expect(list.body.tools).toEqual(view().schemas)
        for (const name of ALL_NAMES) {
          const one = await getJson(`/v1/tools/${name}${query(agent)}`)
          expect(one.status, name).toBe(names(view().schemas).includes(name) ? 200 : 404)
        }
        const sdk = await (await app.request(`/v1/sdk${query(agent)}`, { headers: AUTH })).text()
        // The SDK's instructions name run_code; every other name appears only as a declaration.
        for (const name of ALL_NAMES.filter((n) => n !== RUN_CODE_TOOL_NAME)) expect(sdk.includes(name), name).toBe(view().canCall(name, 'code'))
      })

      it('POST /v1/run runs exactly where the view presents run_code (404 UNKNOWN_TOOL elsewhere, before anything runs)', async () => {
        const response = await app.request('/v1/run', {
          method: 'POST',
          headers: { ...AUTH, 'Content-Type': 'application/json' },
          body: JSON.stringify({ code: 'return 1', description: 'one', ...(agent === undefined ? {} : { agent }) }),
        })
        const body = (await response.json()) as Record<string, unknown>
        if (view().canCall(RUN_CODE_TOOL_NAME, 'native')) {
          expect(response.status).toBe(200)
          expect(body).toMatchObject({ isError: false })
        } else {
          expect(response.status).toBe(404)
          expect(body).toEqual({ error: { code: 'UNKNOWN_TOOL', message: 'unknown tool "run_code"' } })
        }
      })

      it('MCP tools/list', async () => {
        const mcp = createMcpApp(runtime, { auth: false, ...(agent === undefined ? {} : { agent }) })
        const response = await mcp.request('/', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        })
        const listed = ((await response.json()) as { result: { tools: { name: string; inputSchema: unknown }[] } }).result.tools
        expect(names(listed)).toEqual(names(view().wireTools))
        expect(listed.map((t) => t.inputSchema)).toEqual(view().wireTools.map((t) => t.parameters))
      })

      it('the provider adapters, from the view and from the assembly or the whole catalog', () => {
        const wire = names(view().wireTools)
        const assembled = runtime.assemble(agent).tools
        expect(toOpenAIChatTools(view()).map((t) => t.function.name)).toEqual(wire)
        expect(toOpenAIChatTools(assembled).map((t) => t.function.name)).toEqual(wire)
        expect(toOpenAIResponsesTools(view()).map((t) => t.name)).toEqual(wire)
        expect(toAnthropicTools(assembled).map((t) => t.name)).toEqual(wire)
        expect(Object.keys(toVercelTools(view(), { jsonSchema: (schema) => schema }))).toEqual(wire)
        // A plain list is held to the view's rule: no tool whose callers exclude `native`.
        expect(toAnthropicTools(runtime.schemas(agent)).map((t) => t.name)).toEqual(names(view().schemas.filter((s) => s.callers?.includes('native') ?? true)))
      })

      it("the pipeline: a model's direct call and a program's call succeed exactly where the view says", async () => {
        for (const name of ALL_NAMES) {
          if (name === RUN_CODE_TOOL_NAME) continue
          const result = await runtime.execute(call(name, { text: 'x' }, agent === undefined ? {} : { agent }))
          expect(result.isError ? result.error.info?.code : 'ok', name).toBe(view().canCall(name, 'native') ? 'ok' : 'UNKNOWN_TOOL')
        }
        if (!view().presentsRunCode) {
          const refused = await runtime.execute(call(RUN_CODE_TOOL_NAME, { code: 'return 1', description: 'one' }, agent === undefined ? {} : { agent }))
          expect(refused.isError && refused.error.info?.code).toBe('UNKNOWN_TOOL')
          return
        }
        const called = await programCalls(agent)
        for (const name of ALL_NAMES) expect(called[name], name).toBe(view().canCall(name, 'code'))
      })
    })
  }
})
