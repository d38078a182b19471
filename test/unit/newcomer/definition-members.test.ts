/**
 * A tool definition's misspelt member is refused, never ignored: `defineTool({ …, caller:
 * ['code'] })` used to register a tool the model could call directly (the member it meant,
 * `callers`, was absent), `timeout: 5_000` left the call without a timeout, and
 * `inputSchema` (MCP's name) failed as `schema spec is not lossless JSON: undefined is not
 * JSON at the schema root`. Members that are no misspelling stay allowed: `execute` and the
 * presenters run with the definition as `this`. And a call without `arguments` says so,
 * naming the member it likely meant (`args`).
 */
import { describe, expect, it } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { thrownToolError as refusal } from '../../support/refusal.js'

const numberOutput = { schema: { type: 'number' }, render: (_a: unknown, v: number) => [{ type: 'text' as const, text: String(v) }] } as const
const spec = { name: 'secret', description: 'code only', parameters: {}, output: numberOutput, execute: () => 42 }
const rawSpec = { ...spec, parameters: { type: 'object', properties: {} } }

describe('a misspelt definition member', () => {
  it('caller for callers: refused by defineTool and register, so no code-only tool is left callable directly', async () => {
    const runtime = createToolRuntime({})
    const byDefine = refusal(() => runtime.register(defineTool({ ...spec, caller: ['code'] } as never)))
    expect(byDefine?.code).toBe('INVALID_DEFINITION')
    expect(byDefine?.message).toMatch(/^tool "secret": unknown member "caller" \(did you mean "callers"\? the members read are name, description, parameters, output, execute, timeoutMs, idempotent, callers, /)
    expect(refusal(() => runtime.register({ ...rawSpec, caller: ['code'] } as never))?.message).toContain('unknown member "caller" (did you mean "callers"?')
    // Nothing was registered: the name is free, and the tool is unknown to a direct call.
    const direct = await runtime.execute({ callId: 'c1', name: 'secret', arguments: {}, signal: AbortSignal.timeout(5_000) })
    expect(direct.isError && direct.error.info?.code).toBe('UNKNOWN_TOOL')
    await runtime.dispose()
  })

  it('each near miss names the member it meant, the output declaration’s too', () => {
    const cases: ReadonlyArray<readonly [Record<string, unknown>, string, string]> = [
      [{ timeout: 5_000 }, 'timeout', 'timeoutMs'],
      [{ timeout_ms: 5_000 }, 'timeout_ms', 'timeoutMs'],
      [{ idempotant: true }, 'idempotant', 'idempotent'],
      [{ Callers: ['code'] }, 'Callers', 'callers'],
      [{ isConcurrentSafe: () => true }, 'isConcurrentSafe', 'isConcurrencySafe'],
      [{ previews: () => 'x' }, 'previews', 'preview'],
      [{ inputSchema: { type: 'object' } }, 'inputSchema', 'parameters'],
      [{ outputSchema: { type: 'number' } }, 'outputSchema', 'output.schema'],
      [{ output: { ...numberOutput, scheme: { type: 'number' } } }, 'output.scheme', 'output.schema'],
      [{ output: { ...numberOutput, presentationMetas: () => null } }, 'output.presentationMetas', 'output.presentationMeta'],
    ]
    for (const [extra, member, meant] of cases) {
      const refused = refusal(() => defineTool({ ...spec, ...extra } as never))
      expect(refused?.code, member).toBe('INVALID_DEFINITION')
      expect(refused?.message, member).toContain(`unknown member "${member}" (did you mean "${meant}"?`)
    }
  })

  it('a missing parameters member is named as missing', () => {
    const { parameters: _dropped, ...noParameters } = spec
    const refused = refusal(() => defineTool(noParameters as never))
    expect(refused).toEqual({ code: 'INVALID_DEFINITION', message: 'tool "secret": parameters is missing (defineTool: a record of parameter specs, {} for none; register: an object JSON Schema)' })
    expect(refusal(() => defineTool({ ...noParameters, inputSchema: {} } as never))?.message).toContain('unknown member "inputSchema" (did you mean "parameters"?')
  })

  it('members that are no misspelling stay: the definition is execute’s this', async () => {
    const runtime = createToolRuntime({})
    runtime.register(
      defineTool({
        ...spec,
        name: 'stateful',
        label: 'from this',
        helper(this: { label: string }) {
          return this.label.length
        },
        execute(this: { helper(): number }) {
          return this.helper()
        },
      } as never),
    )
    class Counter {
      readonly name = 'counter'
      readonly description = 'counts'
      readonly parameters = {}
      readonly output = numberOutput
      readonly step = 2
      execute() {
        return this.step
      }
    }
    runtime.register(defineTool(new Counter() as never))
    const signal = AbortSignal.timeout(5_000)
    expect((await runtime.execute({ callId: 'a', name: 'stateful', arguments: {}, signal })).content).toEqual([{ type: 'text', text: '9' }])
    expect((await runtime.execute({ callId: 'b', name: 'counter', arguments: {}, signal })).content).toEqual([{ type: 'text', text: '2' }])
    await runtime.dispose()
  })
})

describe('an execution input without arguments', () => {
  it('says arguments are missing and names the member it likely meant, still INVALID_ARGS', async () => {
    const runtime = createToolRuntime({})
    runtime.register(defineTool({ ...spec, name: 'add', parameters: { a: { type: 'number' } } }))
    const signal = AbortSignal.timeout(5_000)
    const cases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
      [{ args: { a: 1 } }, 'the execution input has no arguments (it has "args": did you mean "arguments"?): pass arguments, a JSON object ({} for a tool that takes none)'],
      [{ params: { a: 1 } }, 'the execution input has no arguments (it has "params": did you mean "arguments"?): pass arguments, a JSON object ({} for a tool that takes none)'],
      [{}, 'the execution input has no arguments: pass arguments, a JSON object ({} for a tool that takes none)'],
      [{ arguments: { a: 1n } }, 'arguments are not lossless JSON: a BigInt is not JSON at /a'],
    ]
    for (const [extra, message] of cases) {
      const result = await runtime.execute({ callId: 'c', name: 'add', signal, ...extra } as never)
      expect(result.isError && result.error).toEqual({ message, info: { name: 'ToolError', code: 'INVALID_ARGS' } })
    }
    await runtime.dispose()
  })
})
