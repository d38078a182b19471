import { describe, expect, it } from 'vitest'
import { createToolRuntime } from '../../../src/registry/index.js'
import type { ToolsChangedEvent } from '../../../src/runtime-types.js'
import type { CodeRuntime } from '../../../src/code-runtime/contract.js'
import { addTool, call, deferred, echoTool, tick } from './helpers.js'
import { thrownToolError, refusalMessage } from '../../support/refusal.js'
import type { AnyToolDefinition, ToolExecutionResult } from './types.js'
import { DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_PARALLEL_SUB_CALLS, validateRuntimeOptions } from '../../../src/registry/options.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { ToolError } from '../../../src/errors.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { createMemoryStore } from '../../../src/durable/index.js'

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

  it('a concurrency-safe tool is parallel in the global scope and for a string agent id', () => {
    const runtime = createToolRuntime()
    runtime.register(raw('read', { isConcurrencySafe: () => true }))
    expect(runtime.executionMode(call('read'))).toBe('parallel')
    expect(runtime.executionMode(call('read', {}, { agent: 'bob' }))).toBe('parallel')
    runtime.agent('bob')
    expect(runtime.executionMode(call('read', {}, { agent: 'bob' }))).toBe('parallel')
  })

  it('a call with a name or an agent that is not a string is exclusive, even for a safe global tool', () => {
    const runtime = createToolRuntime()
    runtime.register(raw('read', { isConcurrencySafe: () => true }))
    for (const agent of [42, null, {}, ['bob']]) {
      expect(runtime.executionMode(call('read', {}, { agent: agent as never })), JSON.stringify(agent)).toBe('exclusive')
    }
    expect(runtime.executionMode(call(42 as never))).toBe('exclusive')
    expect(runtime.executionMode({ name: undefined, arguments: {} } as never)).toBe('exclusive')
  })

  it('the classifier gets the soft validator’s arguments, else the strict validator’s, else the raw ones', () => {
    const runtime = createToolRuntime()
    const via = (expected: string) => (args: { via?: string }) => args.via === expected
    runtime.register(raw('soft', { softValidateArgs: () => ({ via: 'soft' }), validateArgs: () => ({ via: 'strict' }), isConcurrencySafe: via('soft') }))
    runtime.register(raw('strict', { validateArgs: () => ({ via: 'strict' }), isConcurrencySafe: via('strict') }))
    runtime.register(raw('plain', { isConcurrencySafe: via('raw') }))
    expect(runtime.executionMode(call('soft', { via: 'raw' }))).toBe('parallel')
    expect(runtime.executionMode(call('strict', { via: 'raw' }))).toBe('parallel')
    expect(runtime.executionMode(call('plain', { via: 'raw' }))).toBe('parallel')
    expect(runtime.executionMode(call('plain', { via: 'soft' }))).toBe('exclusive')
  })

  it('a tool without a classifier is exclusive without validating the arguments at all', () => {
    const runtime = createToolRuntime()
    const validated: string[] = []
    runtime.register(
      raw('write', {
        softValidateArgs: (args: unknown) => (validated.push('soft'), args),
        validateArgs: (args: unknown) => (validated.push('strict'), args),
      }),
    )
    expect(runtime.executionMode(call('write', { text: 'x' }))).toBe('exclusive')
    expect(runtime.executionMode(call('missing'))).toBe('exclusive')
    expect(validated).toEqual([])
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

const failureOf = (r: ToolExecutionResult) => (r.isError ? { code: r.error.info?.code, message: r.error.message } : { value: r.value })

/** A raw tool with the given extra members (validators, classifier). */
const raw = (name: string, extra: Record<string, unknown>) => ({ ...echoTool(name), ...extra }) as unknown as AnyToolDefinition

describe('agent scopes: disposal', () => {
  it('an agent’s listeners outlive its registrations: its tools/changed listener hears their removal and the dispose', async () => {
    const runtime = createToolRuntime()
    const agent = runtime.agent('bob')
    const heard: ToolsChangedEvent[] = []
    agent.on('tools/changed', (event) => void heard.push(event))
    agent.register(echoTool('mine'))
    heard.length = 0
    await agent.dispose()
    expect(heard).toEqual([
      { kind: 'unregister', name: 'mine', agent: 'bob' },
      { kind: 'dispose', agent: 'bob' },
    ])
  })

  it('registry disposal disposes every agent: removals announced, tools gone, execute reports the agent disposed', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('g'))
    const agent = runtime.agent('bob')
    agent.register(echoTool('local'))
    const heard: ToolsChangedEvent[] = []
    runtime.on('tools/changed', (event) => void heard.push(event))
    await runtime.dispose()
    expect(heard).toEqual([{ kind: 'unregister', name: 'local', agent: 'bob' }, { kind: 'unregister', name: 'g' }, { kind: 'dispose' }])
    expect(runtime.get('local', 'bob')).toBeUndefined()
    expect(failureOf(await agent.execute(call('local')))).toEqual({ code: 'DISPOSED', message: 'agent scope "bob" is disposed' })
    expect(failureOf(await runtime.execute(call('g')))).toEqual({ code: 'DISPOSED', message: 'the tool runtime is disposed' })
  })

  it('an agent refuses registrations as soon as its registry starts disposing, while calls are still in flight', async () => {
    const gate = deferred<string>()
    const runtime = createToolRuntime()
    runtime.register(echoTool('slow', () => gate.promise))
    const agent = runtime.agent('bob')
    const pending = runtime.execute(call('slow'))
    await tick()
    const disposing = runtime.dispose()
    expect(thrownToolError(() => agent.register(echoTool('late')))).toEqual({ code: 'DISPOSED', message: 'agent scope "bob" is disposed' })
    expect(thrownToolError(() => agent.catalog())).toEqual({ code: 'DISPOSED', message: 'agent scope "bob" is disposed' })
    gate.resolve('done')
    await pending
    await disposing
  })
})

describe('agent scopes: execute', () => {
  it('hands an input that is not an object to the pipeline as it is (no agent is added to it)', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('echo'))
    const agent = runtime.agent('bob')
    for (const input of [null, 'echo', 42]) {
      expect(failureOf(await agent.execute(input as never)), String(input)).toEqual({
        code: 'INVALID_EXECUTION',
        message: 'the execution input must be an object',
      })
    }
    expect(failureOf(await agent.execute(call('echo', { text: 'hi' })))).toEqual({ value: 'hi' })
  })
})

/*
 * `validateRuntimeOptions`: the options in force (defaults, copies, freezing) and every
 * refusal with the message an integrator reads.
 */
function refusal(options: unknown): string | undefined {
  return refusalMessage('INVALID_OPTIONS', () => validateRuntimeOptions(options))
}

describe('validateRuntimeOptions: the options in force', () => {
  it('defaults: native, 10 parallel sub-calls, 64 MiB of output, a 12,000-character SDK budget, preflight warn, nothing else', () => {
    expect(DEFAULT_MAX_PARALLEL_SUB_CALLS).toBe(10)
    expect(DEFAULT_MAX_OUTPUT_BYTES).toBe(67_108_864)
    for (const options of [undefined, {}, { mode: undefined }]) {
      const resolved = validateRuntimeOptions(options)
      expect(resolved).toEqual({ mode: 'native', maxParallelSubCalls: 10, maxOutputBytes: 67_108_864, sdkBudgetChars: 12_000, preflight: 'warn' })
      expect(Object.keys(resolved).sort()).toEqual(['maxOutputBytes', 'maxParallelSubCalls', 'mode', 'preflight', 'sdkBudgetChars'])
      expect(Object.isFrozen(resolved)).toBe(true)
    }
  })

  it('keeps every given option, and freezes a copy of the tool order', () => {
    const codeRuntime = createInProcessRuntime()
    const approval = () => ({ decision: 'allow' as const })
    const sessionLog = { append: () => {} }
    const order = ['b', 'a']
    const resolved = validateRuntimeOptions({ mode: 'both', codeRuntime, approval, sessionLog, maxParallelSubCalls: 1, maxOutputBytes: 5, toolOrder: order })
    expect(resolved).toEqual({ mode: 'both', codeRuntime, approval, sessionLog, maxParallelSubCalls: 1, maxOutputBytes: 5, toolOrder: ['b', 'a'], sdkBudgetChars: 12_000, preflight: 'warn' })
    expect(resolved.codeRuntime).toBe(codeRuntime)
    expect(resolved.approval).toBe(approval)
    expect(resolved.sessionLog).toBe(sessionLog)
    expect(resolved.toolOrder).not.toBe(order)
    expect(Object.isFrozen(resolved.toolOrder)).toBe(true)
    order.push('c')
    expect(resolved.toolOrder).toEqual(['b', 'a'])
    expect(validateRuntimeOptions({ mode: 'code', codeRuntime: createInProcessRuntime() }).mode).toBe('code')
    expect(validateRuntimeOptions({ toolOrder: [] }).toolOrder).toEqual([])
  })

  it('reads the options through their descriptors, never through a getter or get trap', () => {
    let gets = 0
    const options = new Proxy({ mode: 'both', codeRuntime: createInProcessRuntime() }, {
      get(target, key, receiver) {
        gets++
        return Reflect.get(target, key, receiver) as unknown
      },
    })
    expect(validateRuntimeOptions(options).mode).toBe('both')
    expect(gets).toBe(0)
  })

  it('accepts a code runtime whose fields are getters', () => {
    const inner = createInProcessRuntime()
    const viaGetters = {
      get language() {
        return 'typescript'
      },
      get isolation() {
        return 'x'
      },
      get run() {
        return inner.run
      },
      get dispose() {
        return inner.dispose
      },
      get capabilities() {
        return inner.capabilities
      },
    }
    expect(validateRuntimeOptions({ codeRuntime: viaGetters }).codeRuntime).toBe(viaGetters)
  })
})

describe('validateRuntimeOptions: refusals', () => {
  it('options that are not an object, with what they were', () => {
    expect(refusal(null)).toBe('createToolRuntime options must be an object (got null)')
    expect(refusal([])).toBe('createToolRuntime options must be an object (got an array)')
    expect(refusal('native')).toBe('createToolRuntime options must be an object (got "native")')
    expect(refusal(3)).toBe('createToolRuntime options must be an object (got 3)')
    expect(refusal(true)).toBe('createToolRuntime options must be an object (got true)')
    expect(refusal(() => {})).toBe('createToolRuntime options must be an object (got function)')
  })

  it('unknown options, listing the known ones', () => {
    expect(refusal({ modes: 'both' })).toBe('unknown option "modes" (known: mode, codeRuntime, codeRuntimes, approval, approvals, sessionLog, maxParallelSubCalls, maxOutputBytes, toolOrder, sdkBudgetChars, preflight, preflightEngine, store, telemetry, runs)')
  })

  it('accessors, and options that throw when read', () => {
    expect(refusal({ get mode() {
      return 'both'
    } })).toBe('options.mode must be a data property, not a getter/setter')
    const keysThrow = new Proxy({}, {
      ownKeys() {
        throw new Error('no keys')
      },
    })
    expect(refusal(keysThrow)).toBe('createToolRuntime options could not be read (no keys)')
    // Object.keys reads each descriptor once; the copy reads it again, and that read throws.
    let calls = 0
    const descriptorThrows = new Proxy({ mode: 'both' }, {
      getOwnPropertyDescriptor(target, key) {
        if (++calls > 1) throw 'odd'
        return Reflect.getOwnPropertyDescriptor(target, key)
      },
    })
    expect(refusal(descriptorThrows)).toBe('options.mode could not be read (odd)')
    const keysThrowValue = new Proxy({}, {
      ownKeys() {
        throw 42
      },
    })
    expect(refusal(keysThrowValue)).toBe('createToolRuntime options could not be read (42)')
  })

  it('skips a key whose descriptor vanished between listing and reading', () => {
    let calls = 0
    const vanishing = new Proxy({ mode: 'both' }, {
      getOwnPropertyDescriptor(target, key) {
        return ++calls > 1 ? undefined : Reflect.getOwnPropertyDescriptor(target, key)
      },
    })
    expect(validateRuntimeOptions(vanishing).mode).toBe('native')
  })

  it('a mode other than the three', () => {
    expect(refusal({ mode: 'hybrid' })).toBe(`options.mode must be 'native', 'code' or 'both' (got "hybrid")`)
    expect(refusal({ mode: 1 })).toBe(`options.mode must be 'native', 'code' or 'both' (got 1)`)
    expect(refusal({ mode: ['both'] })).toBe(`options.mode must be 'native', 'code' or 'both' (got an array)`)
  })

  it('a code runtime missing a field, or throwing when read', () => {
    const inner = createInProcessRuntime()
    const base = { language: 'typescript', isolation: 'x', run: inner.run, dispose: inner.dispose, capabilities: inner.capabilities }
    expect(refusal({ codeRuntime: 'worker' })).toBe('options.codeRuntime must be a CodeRuntime object (got "worker")')
    expect(refusal({ codeRuntime: null })).toBe('options.codeRuntime must be a CodeRuntime object (got null)')
    expect(refusal({ codeRuntime: { ...base, language: '' } })).toBe('options.codeRuntime.language must be a non-empty string')
    expect(refusal({ codeRuntime: { ...base, language: 1 } })).toBe('options.codeRuntime.language must be a non-empty string')
    expect(refusal({ codeRuntime: { ...base, isolation: undefined } })).toBe('options.codeRuntime.isolation must be a string')
    expect(refusal({ codeRuntime: { ...base, run: 'run' } })).toBe('options.codeRuntime.run must be a function')
    expect(refusal({ codeRuntime: { ...base, dispose: undefined } })).toBe('options.codeRuntime.dispose must be a function')
    expect(refusal({ codeRuntime: { ...base, capabilities: null } })).toBe('options.codeRuntime.capabilities must be an object')
    expect(refusal({ codeRuntime: { ...base, capabilities: 'all' } })).toBe('options.codeRuntime.capabilities must be an object')
    expect(refusal({ codeRuntime: base })).toBeUndefined()
    const throwing = { ...base, get language(): string {
      throw new Error('getter broke')
    } }
    expect(refusal({ codeRuntime: throwing })).toBe('options.codeRuntime could not be read (getter broke)')
    const throwingValue = { ...base, get run(): never {
      throw 'nope'
    } }
    expect(refusal({ codeRuntime: throwingValue })).toBe('options.codeRuntime could not be read (nope)')
  })

  it('an approval that is not a function', () => {
    expect(refusal({ approval: 'ask' })).toBe('options.approval must be a function (got "ask")')
    expect(refusal({ approval: {} })).toBe('options.approval must be a function (got object)')
  })

  it('a session log without append, or throwing when read', () => {
    for (const sessionLog of [null, 'log', {}, { append: 'x' }]) expect(refusal({ sessionLog })).toBe('options.sessionLog must be an object with an append(event) method')
    const throwing = { get append(): never {
      throw new Error('boom')
    } }
    expect(refusal({ sessionLog: throwing })).toBe('options.sessionLog could not be read (boom)')
  })

  it('limits that are not positive integers', () => {
    for (const value of [0, -1, 1.5, '2', Number.MAX_SAFE_INTEGER + 2, null]) {
      expect(refusal({ maxParallelSubCalls: value })).toBe(`options.maxParallelSubCalls must be a positive integer (got ${value === null ? 'null' : typeof value === 'string' ? `"${value}"` : String(value)})`)
      expect(refusal({ maxOutputBytes: value })).toMatch(/^options\.maxOutputBytes must be a positive integer \(got /)
    }
    expect(validateRuntimeOptions({ maxParallelSubCalls: 1, maxOutputBytes: 1 })).toMatchObject({ maxParallelSubCalls: 1, maxOutputBytes: 1 })
  })

  it('a tool order that is not a list of distinct names', () => {
    expect(refusal({ toolOrder: 'a,b' })).toBe('options.toolOrder must be an array of tool names (got "a,b")')
    // eslint-disable-next-line no-sparse-arrays
    expect(refusal({ toolOrder: ['a', , 'b'] })).toBe('options.toolOrder[1] is missing (sparse array)')
    expect(refusal({ toolOrder: ['a', ''] })).toBe('options.toolOrder[1] must be a non-empty string (got "")')
    expect(refusal({ toolOrder: [3] })).toBe('options.toolOrder[0] must be a non-empty string (got 3)')
    expect(refusal({ toolOrder: ['a', 'b', 'a'] })).toBe('options.toolOrder names "a" twice')
  })

  it('a session log that is a function, even one with an append method', () => {
    const logFunction = Object.assign(() => {}, { append: () => {} })
    expect(refusal({ sessionLog: logFunction })).toBe('options.sessionLog must be an object with an append(event) method')
  })

  it('an SDK budget that is neither a positive integer nor Infinity', () => {
    for (const value of [0, -1, 1.5, Number.NaN, Number.NEGATIVE_INFINITY, '12000', null]) {
      expect(refusal({ sdkBudgetChars: value }), String(value)).toBe(`options.sdkBudgetChars must be a positive integer or Infinity (got ${value === null ? 'null' : typeof value === 'string' ? `"${value}"` : String(value)})`)
    }
    for (const value of [1, 2, 12_000, Number.POSITIVE_INFINITY]) expect(validateRuntimeOptions({ sdkBudgetChars: value }).sdkBudgetChars).toBe(value)
  })

  it('a preflight mode other than the three', () => {
    expect(refusal({ preflight: 'loud' })).toBe(`options.preflight must be 'off', 'warn' or 'block' (got "loud")`)
    expect(refusal({ preflight: 5 })).toBe(`options.preflight must be 'off', 'warn' or 'block' (got 5)`)
    expect(refusal({ preflight: ['off'] })).toBe(`options.preflight must be 'off', 'warn' or 'block' (got an array)`)
    for (const preflight of ['off', 'warn', 'block']) expect(validateRuntimeOptions({ preflight }).preflight).toBe(preflight)
  })

  it('a preflight engine without analyze() and dispose(), or throwing when read', () => {
    const message = 'options.preflightEngine must be a PreflightEngine (an object with analyze() and dispose())'
    const analyze = async () => ({ plan: { calls: [], dynamic: false }, spans: [], diagnostics: [], notes: [] })
    const dispose = async () => {}
    for (const preflightEngine of [null, 'engine', {}, { analyze }, { dispose }, { analyze: 'x', dispose }, { analyze, dispose: 'x' }, Object.assign(() => {}, { analyze, dispose })]) {
      expect(refusal({ preflightEngine }), String(preflightEngine)).toBe(message)
    }
    const engine = { analyze, dispose }
    expect(validateRuntimeOptions({ preflightEngine: engine }).preflightEngine).toBe(engine)
    const throwing = { dispose, get analyze(): never {
      throw new Error('engine broke')
    } }
    expect(refusal({ preflightEngine: throwing })).toBe('options.preflightEngine could not be read (engine broke)')
  })

  it('a store without get, put, delete and list, or throwing when read', () => {
    const message = 'options.store must be a DurableStore (an object with get, put, delete and list: createMemoryStore(), createFileStore(dir))'
    const fn = async () => undefined
    const full = { get: fn, put: fn, delete: fn, list: fn }
    for (const missing of ['get', 'put', 'delete', 'list']) {
      expect(refusal({ store: { ...full, [missing]: 'x' } }), missing).toBe(message)
    }
    for (const store of [null, 'store', {}, Object.assign(() => {}, full)]) expect(refusal({ store }), String(store)).toBe(message)
    expect(validateRuntimeOptions({ store: full }).store).toBe(full)
    const memory = createMemoryStore()
    expect(validateRuntimeOptions({ store: memory }).store).toBe(memory)
    const throwing = { ...full, get list(): never {
      throw new Error('store broke')
    } }
    expect(refusal({ store: throwing })).toBe('options.store could not be read (store broke)')
  })
})

/*
 * Scope operations through the public API: registration, masks, presentation, hooks and
 * disposal, each refusal with its code and message, and the `tools/changed` events and
 * resolution each operation produces.
 */
const tool = (name: string, description = `${name} tool`) =>
  defineTool({ name, description, parameters: {}, output: { schema: { type: 'null' }, render: () => [] }, execute: () => null })

const failure = thrownToolError

describe('registration', () => {
  it('refuses run_code, duplicates per layer, and a guard that is not a function', () => {
    const runtime = createToolRuntime()
    runtime.register(tool('a'))
    expect(failure(() => runtime.register({ ...tool('x'), name: 'run_code' }))).toEqual({ code: 'RESERVED_NAME', message: '`run_code` is reserved for the Code Mode transport and cannot be registered' })
    expect(failure(() => runtime.register(tool('a')))).toEqual({ code: 'DUPLICATE_TOOL', message: 'a tool named "a" is already registered in the global layer' })
    const agent = runtime.agent('bob')
    agent.register(tool('a', 'shadow'))
    expect(failure(() => agent.register(tool('a')))).toEqual({ code: 'DUPLICATE_TOOL', message: 'a tool named "a" is already registered in agent "bob"' })
    expect(failure(() => runtime.guard('deny' as never))).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'guard(fn) needs a function' })
    expect(failure(() => agent.guard(null as never))).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'guard(fn) needs a function' })
    expect(failure(() => runtime.agent(''))).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'runtime.agent(id) needs a non-empty string id' })
    expect(failure(() => runtime.agent(1 as never))).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'runtime.agent(id) needs a non-empty string id' })
  })

  it('a definition whose name cannot be read, or that is no object, is refused as INVALID_DEFINITION (the name check never throws first)', () => {
    const runtime = createToolRuntime()
    const unreadable = Object.defineProperty({ ...tool('x') }, 'name', {
      enumerable: true,
      get(): never {
        throw new Error('name broke')
      },
    })
    expect(failure(() => runtime.register(unreadable))).toEqual({ code: 'INVALID_DEFINITION', message: 'name must be a data property, not an accessor' })
    expect(failure(() => runtime.register(null as never))).toEqual({ code: 'INVALID_DEFINITION', message: 'a tool definition must be an object' })
  })

  it('an agent tool shadows the global one for that agent only; unregistering restores it', () => {
    const runtime = createToolRuntime()
    runtime.register(tool('a', 'global'))
    const agent = runtime.agent('bob')
    const undo = agent.register(tool('a', 'local'))
    expect(agent.get('a')?.description).toBe('local')
    expect(runtime.get('a', 'bob')?.description).toBe('local')
    expect(runtime.get('a')?.description).toBe('global')
    expect(runtime.get('a', 'alice')?.description).toBe('global')
    undo()
    undo()
    expect(agent.get('a')?.description).toBe('global')
    expect(runtime.agent('bob')).toBe(agent)
  })

  it('announces each change on tools/changed, with the agent when there is one', () => {
    const runtime = createToolRuntime()
    const events: unknown[] = []
    runtime.on('tools/changed', (event) => void events.push(event))
    const undoGlobal = runtime.register(tool('g'))
    const agent = runtime.agent('bob')
    const undoLocal = agent.register(tool('l'))
    const unrestrict = agent.restrict({ deny: ['g'] })
    const unpresent = agent.presentAs('native')
    unpresent()
    unrestrict()
    undoLocal()
    undoGlobal()
    expect(events).toEqual([
      { kind: 'register', name: 'g' },
      { kind: 'register', name: 'l', agent: 'bob' },
      { kind: 'restrict', agent: 'bob' },
      { kind: 'present-as', agent: 'bob' },
      { kind: 'present-as', agent: 'bob' },
      { kind: 'unrestrict', agent: 'bob' },
      { kind: 'unregister', name: 'l', agent: 'bob' },
      { kind: 'unregister', name: 'g' },
    ])
  })
})

describe('masks', () => {
  const setup = () => {
    const runtime = createToolRuntime()
    for (const name of ['a', 'b', 'c']) runtime.register(tool(name))
    const agent = runtime.agent('bob')
    agent.register(tool('local'))
    return { runtime, agent }
  }

  it('allow and deny intersect, and apply to that agent only', () => {
    const { runtime, agent } = setup()
    agent.restrict({ allow: ['a', 'b'] })
    expect(agent.schemas().map((s) => s.name)).toEqual(['a', 'b', 'local'])
    const undo = agent.restrict({ deny: ['b'] })
    expect(agent.schemas().map((s) => s.name)).toEqual(['a', 'local'])
    expect(agent.get('b')).toBeUndefined()
    expect(runtime.schemas().map((s) => s.name)).toEqual(['a', 'b', 'c'])
    undo()
    expect(agent.schemas().map((s) => s.name)).toEqual(['a', 'b', 'local'])
  })

  it('refuses malformed filters, local and unknown names, and run_code', () => {
    const { agent } = setup()
    const refuse = (filter: unknown) => failure(() => agent.restrict(filter as never))
    expect(refuse(null)).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'restrict(filter) needs { allow: [...] } or { deny: [...] }' })
    expect(refuse('a')).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'restrict(filter) needs { allow: [...] } or { deny: [...] }' })
    expect(refuse({})).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'restrict(filter) needs exactly one of allow / deny' })
    expect(refuse({ allow: ['a'], deny: ['b'] })).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'restrict(filter) needs exactly one of allow / deny' })
    expect(refuse({ allow: [] })).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'restrict({ allow }) needs a non-empty array of tool names' })
    expect(refuse({ deny: 'a' })).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'restrict({ deny }) needs a non-empty array of tool names' })
    expect(refuse({ deny: [1] })).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'restrict({ deny }) names must be strings' })
    expect(refuse({ allow: ['run_code'] })).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: '`run_code` is reserved and cannot be restricted' })
    expect(refuse({ allow: ['local'] })).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: '"local" is local to agent "bob"; masks apply to global tools only' })
    expect(refuse({ deny: ['nope'] })).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'restrict({ deny }) names an unknown global tool "nope"' })
  })
})

describe('presentation', () => {
  it('an agent declares its mode once; the runtime mode is the default; run_code joins the catalog outside native', () => {
    const runtime = createToolRuntime({ mode: 'native', codeRuntime: createInProcessRuntime() })
    runtime.register(tool('a'))
    const agent = runtime.agent('bob')
    expect(runtime.presentation('bob')).toBe('native')
    const undo = agent.presentAs('code')
    expect(runtime.presentation('bob')).toBe('code')
    expect(runtime.presentation()).toBe('native')
    expect(agent.schemas().map((s) => s.name)).toEqual(['a', 'run_code'])
    expect(runtime.schemas().map((s) => s.name)).toEqual(['a'])
    expect(failure(() => agent.presentAs('both'))).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: `agent "bob" already declared its presentation ('code')` })
    undo()
    expect(runtime.presentation('bob')).toBe('native')
    expect(failure(() => agent.presentAs('hybrid' as never))).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: `presentAs(mode) needs 'native', 'code' or 'both' (got "hybrid")` })
    expect(failure(() => agent.presentAs(3 as never))).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: `presentAs(mode) needs 'native', 'code' or 'both' (got "3")` })
    const both = createToolRuntime({ mode: 'both', codeRuntime: createInProcessRuntime() })
    expect(both.schemas().map((s) => s.name)).toEqual(['run_code'])
    expect(both.schemas()[0]).toBe(both.schemas()[0])
  })
})

describe('hooks', () => {
  it('refuses unknown hooks and listeners that are not functions', () => {
    const runtime = createToolRuntime()
    expect(failure(() => runtime.on('tools/nope' as never, (() => {}) as never))).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'unknown hook "tools/nope"' })
    expect(failure(() => runtime.on(Symbol.iterator as never, (() => {}) as never))).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'unknown hook "Symbol(Symbol.iterator)"' })
    expect(failure(() => runtime.on('tools/result', 'listener' as never))).toEqual({ code: 'INVALID_SCOPE_OPERATION', message: 'on("tools/result", listener) needs a function' })
  })
})

describe('disposal', () => {
  it('a disposed agent and a disposed runtime refuse new registrations, naming themselves', async () => {
    const runtime = createToolRuntime()
    const agent = runtime.agent('bob')
    await agent.dispose()
    expect(failure(() => agent.register(tool('a')))).toEqual({ code: 'DISPOSED', message: 'agent scope "bob" is disposed' })
    expect(failure(() => agent.section({ id: 's', order: 1, text: '' }))).toEqual({ code: 'DISPOSED', message: 'agent scope "bob" is disposed' })
    expect(runtime.agent('bob')).not.toBe(agent)
    await runtime.dispose()
    expect(failure(() => runtime.register(tool('a')))).toEqual({ code: 'DISPOSED', message: 'the tool runtime is disposed' })
    expect(failure(() => runtime.on('tools/result', () => {}))).toEqual({ code: 'DISPOSED', message: 'the tool runtime is disposed' })
  })

  it('disposing an agent removes its tools, masks and presentation', async () => {
    const runtime = createToolRuntime({ codeRuntime: createInProcessRuntime() })
    runtime.register(tool('g'))
    const agent = runtime.agent('bob')
    agent.register(tool('l'))
    agent.restrict({ deny: ['g'] })
    agent.presentAs('code')
    await agent.dispose()
    expect(runtime.schemas('bob').map((s) => s.name)).toEqual(['g'])
    expect(runtime.presentation('bob')).toBe('native')
  })

  it('disposal aborts the scope’s in-flight calls with a DISPOSED reason and waits for them', async () => {
    const reasons: unknown[] = []
    const waiting = (onStart: () => void) =>
      defineTool({
        name: 'wait',
        description: '',
        parameters: {},
        output: { schema: { type: 'null' }, render: () => [] },
        execute: (_args, exec) =>
          new Promise<null>((_resolve, reject) => {
            onStart()
            exec.signal.addEventListener('abort', () => {
              reasons.push(exec.signal.reason)
              setTimeout(() => reject(exec.signal.reason), 5)
            })
          }),
      })
    const runtime = createToolRuntime()
    const agent = runtime.agent('bob')
    let started!: () => void
    const running = new Promise<void>((resolve) => (started = resolve))
    agent.register(waiting(() => started()))
    let settled = false
    const pending = agent.execute({ callId: 'c', name: 'wait', arguments: {}, signal: new AbortController().signal }).then((r) => ((settled = true), r))
    await running
    await agent.dispose()
    expect(settled).toBe(true)
    const result = await pending
    expect(result.isError && result.error.info?.code).toBe('ABORTED')
    expect(reasons[0]).toBeInstanceOf(ToolError)
    expect([(reasons[0] as ToolError).code, (reasons[0] as Error).message]).toEqual(['DISPOSED', 'agent scope "bob" was disposed'])
    const after = await agent.execute({ callId: 'd', name: 'wait', arguments: {}, signal: new AbortController().signal })
    expect(after.isError && after.error).toEqual({ message: 'agent scope "bob" is disposed', info: { name: 'ToolError', code: 'DISPOSED' } })

    const global = createToolRuntime()
    let go!: () => void
    const begun = new Promise<void>((resolve) => (go = resolve))
    global.register(waiting(() => go()))
    const call = global.execute({ callId: 'g', name: 'wait', arguments: {}, signal: new AbortController().signal })
    await begun
    await global.dispose()
    expect((await call).isError).toBe(true)
    expect([(reasons[1] as ToolError).code, (reasons[1] as Error).message]).toEqual(['DISPOSED', 'the tool runtime was disposed'])
    const later = await global.execute({ callId: 'h', name: 'wait', arguments: {}, signal: new AbortController().signal })
    expect(later.isError && later.error).toEqual({ message: 'the tool runtime is disposed', info: { name: 'ToolError', code: 'DISPOSED' } })
  }, 5_000)
})

describe('the one pipeline entry: the public execute takes the input only', () => {
  it('a second argument to runtime.execute (a forged scope state or batch schedule) is ignored', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool())
    const forged = runtime.execute as (...args: unknown[]) => Promise<ToolExecutionResult>
    const never = { phase: () => Promise.reject(new Error('a forged schedule was asked')) }
    const result = await forged(call('echo', { text: 'hi' }), { scopeDisposed: true, schedule: never })
    expect(result).toMatchObject({ isError: false, value: 'hi' })
  })
})

describe('runtime.preflight: what it checks a program against', () => {
  /** An engine that records what it is asked and finds nothing. */
  function recordingEngine() {
    const asked: { program: string; language: string; declarations: string | undefined }[] = []
    const engine = {
      where: 'inline' as const,
      analyze: async (request: { program: string; language: string; declarations: string | undefined }) => {
        asked.push(request)
        return { plan: { calls: [], dynamic: false }, spans: [], diagnostics: [], notes: [] }
      },
      dispose: async () => {},
    }
    return { engine, asked }
  }

  it('refuses a request without string code, or with a non-string agent, with INVALID_EXECUTION and its message', async () => {
    const { engine, asked } = recordingEngine()
    const runtime = createToolRuntime({ preflightEngine: engine })
    const refused = async (request: unknown) => {
      try {
        await runtime.preflight(request as never)
      } catch (error) {
        expect(error).toBeInstanceOf(ToolError)
        return `${(error as ToolError).code}: ${(error as Error).message}`
      }
      return 'accepted'
    }
    const noCode = 'INVALID_EXECUTION: preflight({ code, agent? }): code must be a string'
    expect(await refused(undefined)).toBe(noCode)
    expect(await refused(null)).toBe(noCode)
    expect(await refused('await tools.add({})')).toBe(noCode)
    expect(await refused({ code: 7 })).toBe(noCode)
    expect(await refused({ code: 'x', agent: 7 })).toBe('INVALID_EXECUTION: preflight({ code, agent? }): agent must be a string')
    expect(asked).toEqual([])
    expect(await refused({ code: 'x', agent: 'a' })).toBe('accepted')
    expect(await refused({ code: 'x' })).toBe('accepted')
    await runtime.dispose()
    expect(await refused({ code: 'x' })).toBe('DISPOSED: the tool runtime is disposed')
    expect(asked).toHaveLength(2)
  })

  it("checks against the SDK of every tool the agent may call from code (name, description, parameters, output) in the code runtime's language", async () => {
    const { engine, asked } = recordingEngine()
    const runtime = createToolRuntime({ preflightEngine: engine })
    runtime.register(addTool())
    runtime.agent('a').register(echoTool('shout'))
    const report = await runtime.preflight({ code: 'await tools.add({ a: 1, b: 2 })' })
    expect(report).toMatchObject({ diagnostics: [], plan: { calls: [], dynamic: false } })
    await runtime.preflight({ code: 'x', agent: 'a' })
    expect(asked.map((r) => [r.program, r.language])).toEqual([
      ['await tools.add({ a: 1, b: 2 })', 'typescript'],
      ['x', 'typescript'],
    ])
    const [global, agent] = asked.map((r) => r.declarations ?? '')
    expect(global).toContain('/** adds */\n  add(args: ToolArgsMap["add"]): Promise<ToolOutputMap["add"]>;')
    expect(global).toContain('"add": {\n    a: number;\n    b: number;')
    expect(global).toContain('interface ToolOutputMap {\n  "add": number;\n}')
    expect(global).not.toContain('shout')
    expect(agent).toContain('/** echo (shout) */\n  shout(args?: ToolArgsMap["shout"]): Promise<ToolOutputMap["shout"]>;')
    expect(agent).toContain('"shout": string;')

    const python = recordingEngine()
    const pythonRuntime = createToolRuntime({ mode: 'code', codeRuntime: { ...fakeCodeRuntime, language: 'python' }, preflightEngine: python.engine })
    await pythonRuntime.preflight({ code: 'x' })
    expect(python.asked).toEqual([{ program: 'x', language: 'python', declarations: undefined }])
  })
})

describe('runtime.resumeRuns', () => {
  it('resumes nothing without a store or with an empty one, and refuses once the runtime is disposed', async () => {
    const plain = createToolRuntime()
    expect(await plain.resumeRuns()).toEqual([])
    const stored = createToolRuntime({ store: createMemoryStore() })
    expect(await stored.resumeRuns({ staleMs: 1 })).toEqual([])
    for (const runtime of [plain, stored]) {
      await runtime.dispose()
      await expect(runtime.resumeRuns()).rejects.toMatchObject({ code: 'DISPOSED', message: 'the tool runtime is disposed' })
    }
  })

  it('a registry with a store still runs a plain call once, through its durable wrapper', async () => {
    let runs = 0
    const runtime = createToolRuntime({ store: createMemoryStore() })
    runtime.register(echoTool('echo', (args) => `${++runs}:${args.text}`))
    expect(await runtime.execute(call('echo', { text: 'hi' }))).toMatchObject({ isError: false, value: '1:hi' })
    expect(runs).toBe(1)
    await runtime.dispose()
  })
})
