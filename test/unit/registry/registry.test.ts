import { describe, expect, it } from 'vitest'
import { createToolRuntime } from '../../../src/registry/index.js'
import type { ToolsChangedEvent } from '../../../src/runtime-types.js'
import type { CodeRuntime } from '../../../src/code-runtime/contract.js'
import { addTool, call, deferred, echoTool, tick } from './helpers.js'

const fakeCodeRuntime: CodeRuntime = {
  language: 'typescript',
  isolation: 'test',
  capabilities: { streamsLogs: false, memoryLimit: false, capturesStdio: false },
  run: async () => ({ logs: [] }),
  dispose: async () => {},
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (error) {
    return (error as { code?: string }).code
  }
  return undefined
}

describe('options are validated at construction', () => {
  it.each([
    [{ mode: 'fancy' }, /options.mode/],
    [{ maxParallelSubCalls: 0 }, /maxParallelSubCalls must be a positive integer/],
    [{ maxParallelSubCalls: 1.5 }, /maxParallelSubCalls/],
    [{ maxOutputBytes: -1 }, /maxOutputBytes/],
    [{ maxOutputBytes: Number.POSITIVE_INFINITY }, /maxOutputBytes/],
    [{ toolOrder: 'a' }, /toolOrder must be an array/],
    [{ toolOrder: ['a', 1] }, /toolOrder\[1\]/],
    [{ toolOrder: ['a', 'a'] }, /twice/],
    [{ approval: true }, /approval must be a function/],
    [{ codeRuntime: { language: 'typescript' } }, /codeRuntime/],
    [{ sessionLog: {} }, /sessionLog/],
    [{ bogus: 1 }, /unknown option/],
  ])('%j rejects with INVALID_OPTIONS', (options, message) => {
    expect(() => createToolRuntime(options as never)).toThrow(message)
    expect(codeOf(() => createToolRuntime(options as never))).toBe('INVALID_OPTIONS')
  })

  it('applies defaults and freezes the options', () => {
    const runtime = createToolRuntime()
    expect(runtime.options).toMatchObject({ mode: 'native', maxParallelSubCalls: 10, maxOutputBytes: 64 * 1024 * 1024 })
    expect(Object.isFrozen(runtime.options)).toBe(true)
  })
})

describe('register', () => {
  it('detaches and freezes the definition', () => {
    const runtime = createToolRuntime()
    const def = echoTool() as { description: string; parameters: { properties: Record<string, unknown> } }
    runtime.register(def as never)
    def.description = 'mutated'
    def.parameters.properties.extra = { type: 'string' }
    const stored = runtime.get('echo')!
    expect(stored.description).toBe('echo (echo)')
    expect(Object.keys(stored.parameters.properties!)).toEqual(['text'])
    expect(Object.isFrozen(stored)).toBe(true)
    expect(Object.isFrozen(stored.parameters)).toBe(true)
  })

  it('rejects duplicates within one layer with DUPLICATE_TOOL, but an agent may shadow a global', () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool())
    expect(codeOf(() => runtime.register(echoTool()))).toBe('DUPLICATE_TOOL')
    const agent = runtime.agent('a')
    agent.register(echoTool('echo', () => 'local'))
    expect(codeOf(() => agent.register(echoTool()))).toBe('DUPLICATE_TOOL')
  })

  it('reserves run_code in every layer and mode', () => {
    for (const mode of ['native', 'code', 'both'] as const) {
      const runtime = createToolRuntime({ mode, codeRuntime: fakeCodeRuntime })
      expect(codeOf(() => runtime.register(echoTool('run_code')))).toBe('RESERVED_NAME')
      expect(codeOf(() => runtime.agent('a').register(echoTool('run_code')))).toBe('RESERVED_NAME')
    }
  })

  it.each([
    ['no output', { output: undefined }, 'INVALID_DEFINITION'],
    ['no output.render', { output: { schema: { type: 'string' } } }, 'INVALID_DEFINITION'],
    ['no output.schema', { output: { render: () => [] } }, 'INVALID_DEFINITION'],
    ['unsupported output schema', { output: { schema: { $ref: '#' }, render: () => [] } }, 'INVALID_SCHEMA'],
    ['non-object parameters', { parameters: { type: 'string' } }, 'INVALID_SCHEMA'],
    ['zero timeoutMs', { timeoutMs: 0 }, 'INVALID_DEFINITION'],
    ['negative timeoutMs', { timeoutMs: -5 }, 'INVALID_DEFINITION'],
    ['infinite timeoutMs', { timeoutMs: Number.POSITIVE_INFINITY }, 'INVALID_DEFINITION'],
    ['NaN timeoutMs', { timeoutMs: Number.NaN }, 'INVALID_DEFINITION'],
    ['empty name', { name: '' }, 'INVALID_DEFINITION'],
    ['non-function execute', { execute: 1 }, 'INVALID_DEFINITION'],
    ['non-function isConcurrencySafe', { isConcurrencySafe: true }, 'INVALID_DEFINITION'],
  ])('%s fails at registration', (_label, patch, code) => {
    const runtime = createToolRuntime()
    expect(codeOf(() => runtime.register({ ...echoTool(), ...patch } as never))).toBe(code)
    expect(runtime.schemas()).toEqual([])
  })

  it('every disposer is idempotent and only removes its own registration', () => {
    const runtime = createToolRuntime()
    const dispose = runtime.register(echoTool())
    dispose()
    const again = runtime.register(echoTool('echo', () => 'second'))
    dispose()
    expect(runtime.get('echo')).toBeDefined()
    again()
    again()
    expect(runtime.get('echo')).toBeUndefined()
  })
})

describe('scopes: shadowing, restrict, get and schemas', () => {
  it('an agent tool shadows a global for that agent only', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('echo', () => 'global'))
    const a = runtime.agent('a')
    a.register(echoTool('echo', () => 'local'))
    const ra = await a.execute(call('echo'))
    const rb = await runtime.execute(call('echo', {}, { agent: 'b' }))
    const rg = await runtime.execute(call('echo'))
    expect([ra, rb, rg].map((r) => (r.isError ? 'err' : r.value))).toEqual(['local', 'global', 'global'])
    expect(runtime.schemas('a').map((s) => s.name)).toEqual(['echo'])
    expect(runtime.get('echo', 'a')!.execute).not.toBe(runtime.get('echo')!.execute)
  })

  it('restrict is agent-only', () => {
    const runtime = createToolRuntime()
    expect((runtime as unknown as { restrict?: unknown }).restrict).toBeUndefined()
    expect((runtime as unknown as { presentAs?: unknown }).presentAs).toBeUndefined()
  })

  it('allow masks exclude later names; deny masks admit later unnamed globals; masks intersect; locals merge afterwards', () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('a'))
    runtime.register(echoTool('b'))
    runtime.register(echoTool('c'))
    const allowAgent = runtime.agent('allow')
    allowAgent.restrict({ allow: ['a', 'b'] })
    const denyAgent = runtime.agent('deny')
    denyAgent.restrict({ deny: ['a'] })
    runtime.register(echoTool('later'))
    expect(allowAgent.schemas().map((s) => s.name)).toEqual(['a', 'b'])
    expect(denyAgent.schemas().map((s) => s.name)).toEqual(['b', 'c', 'later'])
    // Intersection: allow {a,b} ∩ deny {b} = {a}
    const undo = allowAgent.restrict({ deny: ['b'] })
    expect(allowAgent.schemas().map((s) => s.name)).toEqual(['a'])
    undo()
    expect(allowAgent.schemas().map((s) => s.name)).toEqual(['a', 'b'])
    // A local tool is visible whatever the masks say, after the globals.
    allowAgent.register(echoTool('mine'))
    expect(allowAgent.schemas().map((s) => s.name)).toEqual(['a', 'b', 'mine'])
    expect(allowAgent.get('c')).toBeUndefined()
    expect(runtime.get('c', 'allow')).toBeUndefined()
    expect(runtime.get('c')).toBeDefined()
  })

  it('a restricted-away global is UNKNOWN_TOOL for that agent', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('a'))
    runtime.register(echoTool('b'))
    runtime.agent('x').restrict({ deny: ['a'] })
    const result = await runtime.agent('x').execute(call('a'))
    expect(result.isError && result.error.info?.code).toBe('UNKNOWN_TOOL')
  })

  it.each<[unknown, string]>([
    [{ allow: [] }, 'empty'],
    [{ deny: ['nope'] }, 'unknown'],
    [{ deny: ['mine'] }, 'local'],
    [{ deny: ['run_code'] }, 'reserved'],
    [{ allow: ['a'], deny: ['a'] }, 'both'],
    [{}, 'neither'],
    [{ allow: [1] }, 'non-string'],
  ])('restrict(%j) rejects (%s)', (filter: unknown) => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('a'))
    const agent = runtime.agent('x')
    agent.register(echoTool('mine'))
    expect(codeOf(() => agent.restrict(filter as never))).toBe('INVALID_SCOPE_OPERATION')
  })

  it('presentAs records the agent presentation once; the catalog keeps every tool', () => {
    const runtime = createToolRuntime({ codeRuntime: fakeCodeRuntime })
    runtime.register(echoTool('a'))
    const agent = runtime.agent('x')
    const undo = agent.presentAs('code')
    expect(runtime.presentation('x')).toBe('code')
    expect(runtime.presentation()).toBe('native')
    expect(runtime.presentation('y')).toBe('native')
    expect(codeOf(() => agent.presentAs('both'))).toBe('INVALID_SCOPE_OPERATION')
    expect(codeOf(() => agent.presentAs('weird' as never))).toBe('INVALID_SCOPE_OPERATION')
    expect(agent.schemas().map((s) => s.name)).toEqual(['a', 'run_code'])
    undo()
    expect(runtime.presentation('x')).toBe('native')
    expect(agent.schemas().map((s) => s.name)).toEqual(['a'])
    agent.presentAs('both')
    expect(runtime.presentation('x')).toBe('both')
  })

  it('runtime.agent(id) returns the same object until disposed', async () => {
    const runtime = createToolRuntime()
    const a = runtime.agent('a')
    expect(runtime.agent('a')).toBe(a)
    await a.dispose()
    expect(runtime.agent('a')).not.toBe(a)
    expect(codeOf(() => a.register(echoTool()))).toBe('DISPOSED')
    const result = await a.execute(call('echo'))
    expect(result.isError && result.error.info?.code).toBe('DISPOSED')
    expect(codeOf(() => runtime.agent(''))).toBe('INVALID_SCOPE_OPERATION')
  })
})

describe('executionMode', () => {
  const classified = (isConcurrencySafe: unknown) => ({ ...addTool('calc'), isConcurrencySafe }) as never

  it('is parallel only on an exact true from the classifier, given softly validated args', () => {
    const seen: unknown[] = []
    const runtime = createToolRuntime()
    runtime.register({
      ...addTool('calc'),
      isConcurrencySafe: (args: unknown) => {
        seen.push(args)
        return true
      },
    })
    expect(runtime.executionMode({ name: 'calc', arguments: { a: 1, b: 2 } })).toBe('parallel')
    expect(seen).toEqual([{ a: 1, b: 2 }])
    // Invalid args never reach the classifier.
    expect(runtime.executionMode({ name: 'calc', arguments: { a: 'x' } })).toBe('exclusive')
    expect(seen).toHaveLength(1)
  })

  it.each([
    ['truthy non-true', () => 1],
    ['false', () => false],
    ['undefined', () => undefined],
    ['throwing', () => {
      throw new Error('boom')
    }],
  ])('%s → exclusive', (_label, fn) => {
    const runtime = createToolRuntime()
    runtime.register(classified(fn))
    expect(runtime.executionMode({ name: 'calc', arguments: { a: 1, b: 2 } })).toBe('exclusive')
  })

  it('unknown, hidden, undeclared and non-JSON arguments → exclusive', () => {
    const runtime = createToolRuntime()
    runtime.register(classified(() => true))
    runtime.register(echoTool('plain'))
    runtime.agent('x').restrict({ deny: ['calc'] })
    expect(runtime.executionMode({ name: 'nope', arguments: {} })).toBe('exclusive')
    expect(runtime.executionMode({ name: 'calc', arguments: { a: 1, b: 2 }, agent: 'x' })).toBe('exclusive')
    expect(runtime.executionMode({ name: 'plain', arguments: {} })).toBe('exclusive')
    expect(runtime.executionMode({ name: 'calc', arguments: { a: 1, b: 2n } })).toBe('exclusive')
    expect(runtime.executionMode(null as never)).toBe('exclusive')
  })
})

describe('tools/changed and disposal', () => {
  it('notifies every registry change, unfiltered by scope', () => {
    const runtime = createToolRuntime({ codeRuntime: fakeCodeRuntime })
    const global: ToolsChangedEvent[] = []
    const fromAgent: ToolsChangedEvent[] = []
    runtime.on('tools/changed', (e) => global.push(e))
    runtime.agent('other').on('tools/changed', (e) => fromAgent.push(e))
    runtime.on('tools/changed', () => {
      throw new Error('observer failure is contained')
    })
    runtime.register(echoTool('g'))
    runtime.register(echoTool('gone'))()
    const agent = runtime.agent('a')
    agent.register(echoTool('l'))
    agent.restrict({ deny: ['g'] })
    agent.presentAs('code')
    expect(global.map((e) => `${e.kind}:${e.agent ?? ''}:${e.name ?? ''}`)).toEqual([
      'register::g',
      'register::gone',
      'unregister::gone',
      'register:a:l',
      'restrict:a:',
      'present-as:a:',
    ])
    expect(fromAgent).toEqual(global)
  })

  it('agent.dispose disposes everything registered through it and awaits its in-flight calls', async () => {
    const runtime = createToolRuntime()
    const events: string[] = []
    runtime.on('tools/changed', (e) => events.push(`${e.kind}:${e.agent ?? ''}`))
    const release = deferred()
    let bodyDone = false
    const agent = runtime.agent('a')
    agent.register(
      echoTool('slow', async (_args, exec) => {
        await Promise.race([release.promise, new Promise((resolve) => exec.signal.addEventListener('abort', resolve))])
        await tick()
        bodyDone = true
        return 'done'
      }),
    )
    agent.guard(() => undefined)
    agent.on('tools/result', () => {})
    const pending = agent.execute(call('slow'))
    await tick()
    await agent.dispose()
    expect(bodyDone).toBe(true)
    const result = await pending
    expect(result.isError && result.error.info?.code).toBe('ABORTED')
    expect(runtime.get('slow', 'a')).toBeUndefined()
    expect(events).toContain('unregister:a')
    expect(events.at(-1)).toBe('dispose:a')
  })

  it('runtime.dispose aborts in-flight executions, awaits them and disposes everything', async () => {
    const runtime = createToolRuntime()
    let bodyDone = false
    runtime.register(
      echoTool('slow', async (_args, exec) => {
        await new Promise((resolve) => exec.signal.addEventListener('abort', resolve))
        await tick()
        bodyDone = true
        return 'late'
      }),
    )
    const pending = runtime.execute(call('slow'))
    await tick()
    await runtime.dispose()
    expect(bodyDone).toBe(true)
    expect((await pending).isError).toBe(true)
    expect(runtime.schemas()).toEqual([])
    expect(codeOf(() => runtime.register(echoTool()))).toBe('DISPOSED')
    const after = await runtime.execute(call('slow'))
    expect(after.isError && after.error.info?.code).toBe('DISPOSED')
    await runtime.dispose()
  })
})
