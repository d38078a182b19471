/**
 * Scope operations through the public API: registration, masks, presentation, hooks and
 * disposal, each refusal with its code and message, and the `tools/changed` events and
 * resolution each operation produces.
 */
import { describe, expect, it } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { thrownToolError } from '../../support/refusal.js'

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
