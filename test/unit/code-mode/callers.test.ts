/**
 * Per-tool callers (`callers: ['native']`, `['code']`, both) in every surface: the
 * definition validator, `schemas()`, prompt assembly (wire tools and SDK), the pipeline
 * (a direct call of a code-only tool, a program's call of a native-only one, on the
 * real sandbox runtime), the HTTP app (`/v1/tools`, `/v1/sdk`, execute) and the
 * provider converters. The MCP export is covered in test/unit/mcp/elicitation.test.ts.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { createToolsApp } from '../../../src/http/index.js'
import { toAnthropicTools, toOpenAIChatTools, toOpenAIResponsesTools, toVercelTools } from '../../../src/providers/index.js'
import { allowsCaller, createToolRuntime, defineTool, ToolError } from '../../../src/index.js'
import type { ToolCaller, ToolExecutionResult } from '../../../src/index.js'

const codeRuntime = createSandboxRuntime({ memoryMb: 32 })
afterAll(() => codeRuntime.dispose())

const TOKEN = 'callers-token-0123456789abcdef'

function tool(name: string, callers?: readonly ToolCaller[]) {
  return defineTool({
    name,
    description: `${name} (test)`,
    parameters: { n: { type: 'number' } },
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    execute: () => `${name} ran`,
    ...(callers === undefined ? {} : { callers }),
  })
}

/** A registry with `both_ok` (default), `native_only` and `code_only`, and agents per presentation. */
function registry() {
  const runtime = createToolRuntime({ mode: 'both', codeRuntime })
  runtime.register(tool('both_ok'))
  runtime.register(tool('native_only', ['native']))
  runtime.register(tool('code_only', ['code']))
  runtime.register(tool('both_explicit', ['code', 'native']))
  for (const mode of ['native', 'code', 'both'] as const) runtime.agent(mode).presentAs(mode)
  return runtime
}

const sdkOf = (runtime: ReturnType<typeof registry>, agent: string) => runtime.assemble(agent).sections.find((s) => s.id === 'tools:sdk')!.text

function codeOf(result: ToolExecutionResult): string {
  return result.isError ? String(result.error.info?.code) : 'OK'
}

describe('callers: the definition', () => {
  it('keeps a valid declaration (frozen) on the registered definition; defineTool and register agree', () => {
    const runtime = registry()
    expect(runtime.get('code_only')!.callers).toEqual(['code'])
    expect(Object.isFrozen(runtime.get('code_only')!.callers)).toBe(true)
    expect(runtime.get('both_ok')!.callers).toBeUndefined()
    expect(allowsCaller(runtime.get('native_only')!, 'code')).toBe(false)
    expect(allowsCaller(runtime.get('both_ok')!, 'code')).toBe(true)
  })

  it.each([
    ['an empty array', []],
    ['an unknown caller', ['model']],
    ['a duplicate', ['code', 'code']],
    ['a string', 'code'],
    ['three entries', ['code', 'native', 'code']],
    ['a hole', [, 'code']], // eslint-disable-line no-sparse-arrays
  ])('refuses %s with INVALID_DEFINITION, in defineTool and in register', (_what, callers) => {
    const spec = {
      name: 'bad_callers',
      description: 'x',
      parameters: {},
      output: { schema: { type: 'string' as const }, render: () => [] },
      execute: () => 'x',
      callers: callers as never,
    }
    expect(() => defineTool(spec)).toThrow(ToolError)
    expect(() => defineTool(spec)).toThrow(/callers must be a non-empty array of distinct 'native' \/ 'code'/)
    const raw = { ...tool('raw_bad'), callers: callers as never }
    expect(() => createToolRuntime().register(raw)).toThrow(/callers must be a non-empty array/)
  })

  it('refuses callers given as an accessor (never run)', () => {
    let read = false
    const definition = Object.defineProperty({ ...tool('getter') }, 'callers', {
      get: () => {
        read = true
        return ['code']
      },
      enumerable: true,
    })
    expect(() => createToolRuntime().register(definition)).toThrow(/callers must be a data property/)
    expect(read).toBe(false)
  })
})

describe('callers: schemas and assembly', () => {
  it('schemas() marks restricted tools with callers and leaves the others with their three fields', () => {
    const schemas = registry().schemas()
    const byName = Object.fromEntries(schemas.map((s) => [s.name, s]))
    expect(byName.native_only!.callers).toEqual(['native'])
    expect(byName.code_only!.callers).toEqual(['code'])
    expect(Object.keys(byName.both_ok!).sort()).toEqual(['description', 'name', 'parameters'])
    expect(Object.keys(byName.both_explicit!).sort()).toEqual(['description', 'name', 'parameters'])
  })

  it('a code-only tool is never a wire tool; a native-only tool is never in the SDK', () => {
    const runtime = registry()
    expect(runtime.assemble('native').tools.map((t) => t.name)).toEqual(['both_ok', 'native_only', 'both_explicit'])
    expect(runtime.assemble('both').tools.map((t) => t.name)).toEqual(['both_ok', 'native_only', 'both_explicit', 'run_code'])
    expect(runtime.assemble('code').tools.map((t) => t.name)).toEqual(['run_code'])
    for (const agent of ['code', 'both']) {
      const sdk = sdkOf(runtime, agent)
      expect(sdk).toContain('code_only')
      expect(sdk).toContain('both_ok')
      expect(sdk).not.toContain('native_only')
    }
  })
})

describe('callers: the pipeline', () => {
  it('a direct call of a code-only tool is UNKNOWN_TOOL with a hint to call it from run_code (no policy runs)', async () => {
    const runtime = registry()
    const gated: string[] = []
    runtime.on('tools/pre-execute', (decision, execution) => (gated.push(execution.name), decision))
    const result = await runtime.execute({ callId: 'd1', name: 'code_only', arguments: {}, signal: new AbortController().signal, agent: 'both' })
    expect(codeOf(result)).toBe('UNKNOWN_TOOL')
    expect(result.isError && result.error.message).toBe("`code_only` is callable only from inside a `run_code` program (its callers are ['code'])")
    expect(gated).toEqual([])
    expect(codeOf(await runtime.execute({ callId: 'd2', name: 'native_only', arguments: {}, signal: new AbortController().signal }))).toBe('OK')
  })

  it('a program calls a code-only tool; calling a native-only one rejects with a ToolCallError it can catch (sandbox runtime)', async () => {
    const runtime = registry()
    const result = await runtime.execute({
      callId: 'p1',
      name: 'run_code',
      agent: 'both',
      signal: new AbortController().signal,
      arguments: {
        description: 'callers',
        code: `const ok = await tools.code_only({})
          try { await tools.native_only({}) } catch (e) { return { ok, name: e.name, tool: e.toolName, message: e.message } }
          return 'reached native_only?'`,
      },
    })
    expect(result.isError).toBe(false)
    expect((result as unknown as { value: { result: unknown } }).value.result).toEqual({
      ok: 'code_only ran',
      name: 'ToolCallError',
      tool: 'native_only',
      message: "`native_only` cannot be called from a program: it is offered to the model as a native tool only (its callers are ['native'])",
    })
  })
})

describe('callers: HTTP and provider formats', () => {
  it('/v1/tools shows callers, /v1/sdk leaves native-only tools out, and executing a code-only tool is 404 UNKNOWN_TOOL', async () => {
    const app = createToolsApp(registry(), { token: TOKEN })
    const auth = { Authorization: `Bearer ${TOKEN}` }
    const list = (await (await app.request('/v1/tools?agent=both', { headers: auth })).json()) as { tools: { name: string; callers?: string[] }[] }
    expect(list.tools.find((t) => t.name === 'code_only')!.callers).toEqual(['code'])
    expect(list.tools.find((t) => t.name === 'native_only')!.callers).toEqual(['native'])
    expect('callers' in list.tools.find((t) => t.name === 'both_ok')!).toBe(false)
    const one = (await (await app.request('/v1/tools/code_only', { headers: auth })).json()) as { tool: { callers?: string[] } }
    expect(one.tool.callers).toEqual(['code'])
    const sdk = await (await app.request('/v1/sdk?agent=both', { headers: auth })).text()
    expect(sdk).toContain('code_only')
    expect(sdk).not.toContain('native_only')
    const executed = await app.request('/v1/tools/code_only/execute', { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: '{}' })
    expect(executed.status).toBe(404)
    expect(((await executed.json()) as { error: { code: string; message: string } }).error).toEqual({
      code: 'UNKNOWN_TOOL',
      message: "`code_only` is callable only from inside a `run_code` program (its callers are ['code'])",
    })
  })

  it('the provider converters never offer a code-only tool, even from the catalog (schemas())', () => {
    const schemas = registry().schemas('native')
    const expected = ['both_ok', 'native_only', 'both_explicit']
    expect(toOpenAIChatTools(schemas).map((t) => t.function.name)).toEqual(expected)
    expect(toOpenAIResponsesTools(schemas).map((t) => t.name)).toEqual(expected)
    expect(toAnthropicTools(schemas).map((t) => t.name)).toEqual(expected)
    expect(Object.keys(toVercelTools(schemas, { jsonSchema: (s) => s }))).toEqual(expected)
  })
})
