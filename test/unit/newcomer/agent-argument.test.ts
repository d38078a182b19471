/**
 * `runtime.assemble(5)` answered the global layer's prompt and tools: a non-string agent
 * was read as "no agent" by every runtime method that takes one (brief s55 polish, item 4).
 * One check (`checkAgent`, src/registry/scope.ts) now refuses it in each of them with
 * `INVALID_SCOPE_OPERATION`, as `runtime.agent(5)` already was; `execute` and `preflight`
 * keep refusing theirs as malformed input (`INVALID_EXECUTION`).
 */
import { describe, expect, it } from 'vitest'
import { createToolRuntime } from '../../../src/registry/index.js'
import { thrownToolError } from '../../support/refusal.js'
import { echoTool } from '../http/fixtures.js'

describe('a non-string agent is refused, never read as the global layer', () => {
  it('assemble, view, catalog, schemas, presentation and get refuse 5, null and an object, naming the method', () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool)
    const methods: [string, (agent: never) => unknown][] = [
      ['assemble', (agent) => runtime.assemble(agent)],
      ['view', (agent) => runtime.view(agent)],
      ['catalog', (agent) => runtime.catalog(agent)],
      ['schemas', (agent) => runtime.schemas(agent)],
      ['presentation', (agent) => runtime.presentation(agent)],
      ['get', (agent) => runtime.get('echo', agent)],
    ]
    for (const [name, call] of methods) {
      // Before: assemble(5) → the global prompt, with echo listed; get('echo', 5) → echo.
      expect(thrownToolError(() => call(5 as never)), name).toEqual({
        code: 'INVALID_SCOPE_OPERATION',
        message: `runtime.${name}(agent): the agent must be an agent id (a string), or absent for the global layer (got number)`,
      })
      expect(thrownToolError(() => call(null as never))?.message, name).toMatch(/\(got null\)$/)
      expect(thrownToolError(() => call({ id: 'alice' } as never))?.message, name).toMatch(/\(got object\)$/)
      // A string and absence keep their meaning.
      expect(thrownToolError(() => call('alice' as never)), name).toBeUndefined()
      expect(thrownToolError(() => call(undefined as never)), name).toBeUndefined()
    }
    expect(runtime.assemble().tools.map((tool) => tool.name)).toEqual(['echo'])
  })

  it('the entries that read the agent from their input say so as malformed input, as before', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool)
    expect(thrownToolError(() => runtime.agent(5 as never))?.code).toBe('INVALID_SCOPE_OPERATION')
    const result = await runtime.execute({ callId: 'c', name: 'echo', arguments: { text: 'x' }, agent: 5 as never, signal: new AbortController().signal })
    expect(result.isError && result.error.info).toMatchObject({ code: 'INVALID_EXECUTION' })
    await expect(runtime.preflight({ code: 'return 1', agent: 5 as never })).rejects.toMatchObject({ code: 'INVALID_EXECUTION' })
    await runtime.dispose()
  })
})
