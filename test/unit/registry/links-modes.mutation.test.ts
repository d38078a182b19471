/**
 * The registry's seams, each at the edge a plausible slip would cross: the Code Mode link
 * (which answers of a `tools/code-dispatch-log` listener replace the event, and the link's
 * members without a catalog), `executionMode` (malformed scopes, soft before strict
 * validation, tools without a classifier), the per-scope catalogs (dropped on
 * `tools/changed`, never stale when the tool set changed unannounced, the declared language,
 * the search refusal), agent scopes (listeners outlive registrations, registry disposal, the
 * execute input as given), `runToolCalls` (exclusive and parallel overlap, the policy turn,
 * a `ToolRuntime` not made by `createToolRuntime`, the refusal) and the unscheduled
 * `Schedule` of a plain `execute()`.
 */
import { describe, expect, it } from 'vitest'
import { renderToolDeclaration } from '../../../src/code-mode/sdk.js'
import { createCodeModeLink } from '../../../src/registry/code-mode-link.js'
import { HookBus } from '../../../src/registry/hooks.js'
import { createToolRuntime, runToolCalls } from '../../../src/registry/index.js'
import { validateRuntimeOptions } from '../../../src/registry/options.js'
import { Schedule, UNSCHEDULED, type PipelineSchedule } from '../../../src/registry/schedule.js'
import type { CodeDispatchEvent, SessionLogEvent, ToolCatalog, ToolRuntime, ToolsChangedEvent } from '../../../src/runtime-types.js'
import { thrownToolError } from '../../support/refusal.js'
import { call, codeDispatchEvent, type Deferred, deferred, echoTool, idleCodeRuntime, tick } from './helpers.js'
import type { AnyToolDefinition, ToolExecutionResult } from './types.js'

const failureOf = (r: ToolExecutionResult) => (r.isError ? { code: r.error.info?.code, message: r.error.message } : { value: r.value })

// ───────────────────────── the Code Mode link ─────────────────────────

const original = codeDispatchEvent('big')
const spilled: CodeDispatchEvent = Object.freeze<CodeDispatchEvent>({ ...original, content: [{ type: 'text', text: 'spilled' }] })

/** Runs the waterfall with one listener answering `answer`; what the next listener and the session log receive. */
async function waterfall(answer: unknown): Promise<{ next: unknown[]; appended: SessionLogEvent[] }> {
  const hooks = new HookBus()
  const appended: SessionLogEvent[] = []
  const next: unknown[] = []
  const registry = createCodeModeLink({
    options: validateRuntimeOptions({ sessionLog: { append: (event: SessionLogEvent) => void appended.push(event) } }),
    layers: { bindingNames: () => [] },
    hooks,
    execute: async () => ({ isError: false, value: null, content: [] }),
    executionMode: () => 'parallel',
  })
  hooks.add('tools/code-dispatch-log', () => answer as CodeDispatchEvent, 'a')
  hooks.add('tools/code-dispatch-log', (event) => {
    next.push(event)
    return event
  }, 'a')
  await registry.logDispatch(original)
  return { next, appended }
}

describe('the Code Mode link: the code-dispatch-log waterfall', () => {
  it('a complete tool/code-dispatch answer replaces the event for the next listener and the session log', async () => {
    const { next, appended } = await waterfall(spilled)
    expect(next).toEqual([spilled])
    expect(appended).toEqual([spilled])
  })

  it('an answer that is not an object (nothing, null, text) keeps the event as it was', async () => {
    for (const answer of [undefined, null, 'spilled', 7]) {
      const { next, appended } = await waterfall(answer)
      expect(next, String(answer)).toEqual([original])
      expect(appended, String(answer)).toEqual([original])
    }
  })

  it('a function carrying every field of the event is not an event: the event is kept', async () => {
    // A function's own `name` is read-only: define every field instead of assigning it.
    const impostor = () => spilled
    for (const [key, value] of Object.entries(spilled)) Object.defineProperty(impostor, key, { value, enumerable: true })
    expect((impostor as unknown as CodeDispatchEvent).name).toBe('echo')
    const { next, appended } = await waterfall(impostor)
    expect(next).toEqual([original])
    expect(appended[0]).toBe(original)
  })

  it('an answer missing any one required field (or with it of the wrong type) keeps the event', async () => {
    const broken: Record<string, Partial<Record<keyof CodeDispatchEvent, unknown>>> = {
      type: { type: 'tool/code-dispatch-start' },
      subCallId: { subCallId: 1 },
      parentCallId: { parentCallId: undefined },
      name: { name: null },
      isError: { isError: 'false' },
      content: { content: 'spilled' },
    }
    for (const [field, override] of Object.entries(broken)) {
      const { next, appended } = await waterfall({ ...spilled, ...override })
      expect(next, field).toEqual([original])
      expect(appended, field).toEqual([original])
      expect(appended[0], field).toBe(original)
    }
  })
})

describe('the Code Mode link: its members', () => {
  const make = (catalog?: (agent: string | undefined) => ToolCatalog) =>
    createCodeModeLink({
      options: validateRuntimeOptions({}),
      layers: { bindingNames: () => [] },
      hooks: new HookBus(),
      execute: async () => ({ isError: false, value: null, content: [] }),
      executionMode: () => 'exclusive',
      ...(catalog === undefined ? {} : { catalog }),
    })

  it('offers a catalog member only when the registry gives one', () => {
    const without = make()
    expect(Object.hasOwn(without, 'catalog')).toBe(false)
    expect(Object.keys(without).sort()).toEqual([
      'bindingNames',
      'codeRuntime',
      'execute',
      'executionMode',
      'logDispatch',
      'logDispatchStart',
      'maxOutputBytes',
      'maxParallelSubCalls',
    ])
    const catalog = createToolRuntime().catalog()
    const of = (_agent: string | undefined) => catalog
    expect(make(of).catalog).toBe(of)
  })
})

// ───────────────────────── execution modes ─────────────────────────

/** A raw tool with the given extra members (validators, classifier). */
const raw = (name: string, extra: Record<string, unknown>) => ({ ...echoTool(name), ...extra }) as unknown as AnyToolDefinition

describe('executionMode', () => {
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

// ───────────────────────── catalogs ─────────────────────────


describe('runtime.catalog: one catalog per tool set', () => {
  it('a global change heard on tools/changed drops every scope’s catalog, even when undone before the next read', () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('a'))
    const agent = runtime.agent('bob')
    const global = runtime.catalog()
    const ofAgent = agent.catalog()
    runtime.register(echoTool('b'))()
    const globalAfter = runtime.catalog()
    const agentAfter = agent.catalog()
    expect(globalAfter).not.toBe(global)
    expect(agentAfter).not.toBe(ofAgent)
    expect([globalAfter.size, agentAfter.size]).toEqual([1, 1])
    // Until the next change, every read shares it.
    expect(runtime.catalog()).toBe(globalAfter)
    expect(agent.catalog()).toBe(agentAfter)
  })

  it('an agent’s change drops only that agent’s catalog', () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('a'))
    const agent = runtime.agent('bob')
    const other = runtime.agent('eve')
    const global = runtime.catalog()
    const ofAgent = agent.catalog()
    const ofOther = other.catalog()
    agent.restrict({ deny: ['a'] })()
    expect(agent.catalog()).not.toBe(ofAgent)
    expect(runtime.catalog()).toBe(global)
    expect(other.catalog()).toBe(ofOther)
  })

  it('a disposing agent’s tool set changes before tools/changed says so: a longer set is not served the old catalog', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('first'))
    runtime.register(echoTool('second'))
    const agent = runtime.agent('narrow')
    agent.restrict({ allow: ['first'] })
    expect(agent.catalog().size).toBe(1)
    // The layer closes at once; the dispose event comes after quiescence.
    const disposed = agent.dispose()
    const now = runtime.catalog('narrow')
    expect(now.size).toBe(2)
    expect(now.describe('second')).toBe(runtime.catalog().describe('second'))
    await disposed
  })

  it('… nor is a set of the same size with other tools', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('shared'))
    const agent = runtime.agent('own')
    agent.register(echoTool('mine'))
    agent.restrict({ deny: ['shared'] })
    expect(agent.catalog().size).toBe(1)
    expect(agent.catalog().describe('mine')).toBeDefined()
    const disposed = agent.dispose()
    const now = runtime.catalog('own')
    expect(now.size).toBe(1)
    expect(now.describe('mine')).toBeUndefined()
    expect(now.describe('shared')).toBe(runtime.catalog().describe('shared'))
    await disposed
  })
})

describe('runtime.catalog: language and refusals', () => {
  it('declares in TypeScript when the code runtime’s language has no renderer (and without a code runtime)', () => {
    const cobol = createToolRuntime({ codeRuntime: idleCodeRuntime('cobol') })
    cobol.register(echoTool('echo'))
    const catalog = cobol.catalog()
    expect(catalog.language).toBe('typescript')
    const definition = cobol.get('echo')!
    const declaration = renderToolDeclaration(
      { name: 'echo', description: definition.description, parameters: definition.parameters, output: definition.output.schema },
      'typescript',
    )
    expect(catalog.describe('echo')).toBe(declaration)
    expect(catalog.search('echo')[0]!.declaration).toBe(declaration)
    expect(createToolRuntime().catalog().language).toBe('typescript')
    expect(createToolRuntime({ codeRuntime: idleCodeRuntime('python') }).catalog().language).toBe('python')
  })

  it('refuses a query that is not a string with INVALID_OPTIONS naming its type', () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('echo'))
    const catalog = runtime.catalog()
    expect(thrownToolError(() => catalog.search(7 as unknown as string))).toEqual({
      code: 'INVALID_OPTIONS',
      message: 'catalog.search: query must be a string (got number)',
    })
    expect(thrownToolError(() => catalog.search(null as unknown as string))).toEqual({
      code: 'INVALID_OPTIONS',
      message: 'catalog.search: query must be a string (got object)',
    })
  })
})

// ───────────────────────── agent scopes ─────────────────────────

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

// ───────────────────────── runToolCalls ─────────────────────────

/** A runtime with a concurrency-safe `safe` and an exclusive `solo` tool whose bodies wait on per-text gates. */
function gatedRuntime() {
  const runtime = createToolRuntime()
  const started: string[] = []
  const gates = new Map<string, Deferred>()
  const body = async (args: { text?: string }) => {
    const text = args.text ?? ''
    started.push(text)
    const gate = deferred()
    gates.set(text, gate)
    await gate.promise
    return text
  }
  runtime.register(raw('safe', { execute: body, isConcurrencySafe: () => true }))
  runtime.register(raw('solo', { execute: body }))
  return { runtime, started, release: (text: string) => gates.get(text)!.resolve() }
}

const values = (results: ToolExecutionResult[]) => results.map((r) => (r.isError ? r.error.message : r.value))

describe('runToolCalls: scheduling', () => {
  it('exclusive calls run one at a time, in model order', async () => {
    const { runtime, started, release } = gatedRuntime()
    const batch = runToolCalls(runtime, [call('solo', { text: 'a' }), call('solo', { text: 'b' })])
    await tick()
    await tick()
    expect(started).toEqual(['a'])
    release('a')
    await tick()
    await tick()
    expect(started).toEqual(['a', 'b'])
    release('b')
    expect(values(await batch)).toEqual(['a', 'b'])
  })

  it('consecutive concurrency-safe calls overlap', async () => {
    const { runtime, started, release } = gatedRuntime()
    const batch = runToolCalls(runtime, [call('safe', { text: 'c' }), call('safe', { text: 'd' })])
    await tick()
    await tick()
    expect(started).toEqual(['c', 'd'])
    release('d')
    release('c')
    expect(values(await batch)).toEqual(['c', 'd'])
  })

  it('policy phases take turns: a later call’s pre-execute gate waits for the earlier call’s', async () => {
    const { runtime, release } = gatedRuntime()
    const gated: string[] = []
    const first = deferred()
    runtime.on('tools/pre-execute', async (decision, execution) => {
      gated.push(execution.callId)
      if (execution.callId === 'A') await first.promise
      return decision
    })
    const batch = runToolCalls(runtime, [call('safe', { text: 'a' }, { callId: 'A' }), call('safe', { text: 'b' }, { callId: 'B' })])
    await tick()
    await tick()
    expect(gated).toEqual(['A'])
    first.resolve()
    await tick()
    await tick()
    expect(gated).toEqual(['A', 'B'])
    release('a')
    release('b')
    expect(values(await batch)).toEqual(['a', 'b'])
  })
})

describe('runToolCalls: other runtimes and refusals', () => {
  it('a ToolRuntime not made by createToolRuntime still gets one result per call, in model order', async () => {
    const seen: string[] = []
    const foreign = {
      executionMode: (input: { callId: string }) => {
        if (input.callId === 'thrower') throw new Error('classifier broke')
        return 'parallel'
      },
      execute: async (input: { callId: string }) => {
        seen.push(input.callId)
        return { isError: false, value: input.callId, content: [] }
      },
    } as unknown as ToolRuntime
    const results = await runToolCalls(foreign, [call('x', {}, { callId: 'one' }), call('x', {}, { callId: 'thrower' }), call('x', {}, { callId: 'three' })])
    expect(results).toEqual([
      { isError: false, value: 'one', content: [] },
      { isError: false, value: 'thrower', content: [] },
      { isError: false, value: 'three', content: [] },
    ])
    expect(seen).toEqual(['one', 'thrower', 'three'])
  })

  it('refuses a batch that is not an array (INVALID_OPTIONS, with its message)', async () => {
    await expect(runToolCalls(createToolRuntime(), 'x' as never)).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
      message: 'runToolCalls expects an array of calls',
    })
  })
})

// ───────────────────────── the schedule of a plain execute ─────────────────────────

describe('Schedule', () => {
  it('unscheduled: not scheduled, and no tail turn to wait for (not even a tick)', () => {
    expect(UNSCHEDULED.scheduled).toBe(false)
    expect(UNSCHEDULED.beforeTail()).toBeUndefined()
    const own = new Schedule(undefined)
    expect(own.scheduled).toBe(false)
    expect(own.beforeTail()).toBeUndefined()
    expect(() => {
      own.afterPolicy()
      own.afterTail()
    }).not.toThrow()
  })

  it('scheduled: the tail turn is the inner one, asked once; each release reaches the inner schedule once', async () => {
    const calls: string[] = []
    const inner: PipelineSchedule = {
      beforePolicy: async () => void calls.push('beforePolicy'),
      afterPolicy: () => void calls.push('afterPolicy'),
      dispatch: (task) => task(),
      beforeTail: async () => void calls.push('beforeTail'),
      afterTail: () => void calls.push('afterTail'),
    }
    const schedule = new Schedule(inner)
    expect(schedule.scheduled).toBe(true)
    await schedule.beforePolicy()
    schedule.afterPolicy()
    schedule.afterPolicy()
    const wait = schedule.beforeTail()
    expect(wait).toBeInstanceOf(Promise)
    expect(schedule.beforeTail()).toBe(wait)
    await wait
    schedule.afterTail()
    schedule.afterTail()
    expect(calls).toEqual(['beforePolicy', 'afterPolicy', 'beforeTail', 'afterTail'])
  })
})
