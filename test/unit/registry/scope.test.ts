import { describe, expect, it } from 'vitest'
import { AgentScopes, type ScopeParts } from '../../../src/registry/agents.js'
import { HookBus } from '../../../src/registry/hooks.js'
import { InFlightCalls } from '../../../src/registry/in-flight.js'
import { ToolLayers } from '../../../src/registry/layers.js'
import { PromptSections } from '../../../src/registry/prompt-sections.js'
import { RegistrationScope } from '../../../src/registry/scope.js'
import { ScopedList } from '../../../src/registry/scoped-list.js'
import { detachToolDefinition } from '../../../src/schema/tool-definition.js'
import type { ToolGuard } from '../../../src/types.js'
import { echoTool } from './helpers.js'

describe('RegistrationScope (on its own, no runtime)', () => {
  it('owns undos: each public disposer runs its undo once; disposal runs the rest, listeners last', () => {
    const scope = new RegistrationScope('a', () => false)
    const undone: string[] = []
    const tool = scope.own(() => undone.push('tool'))
    scope.own(() => undone.push('listener'), true)
    scope.own(() => undone.push('guard'))
    tool()
    tool()
    expect(undone).toEqual(['tool'])
    scope.disposeRegistrations()
    expect(undone).toEqual(['tool', 'guard'])
    scope.disposeListeners()
    scope.disposeRegistrations()
    expect(undone).toEqual(['tool', 'guard', 'listener'])
  })

  it('assertLive throws DISPOSED once the scope or its runtime is disposed, naming which', () => {
    let runtimeDisposed = false
    const agent = new RegistrationScope('a', () => runtimeDisposed)
    const global = new RegistrationScope(undefined, () => runtimeDisposed)
    expect(() => agent.assertLive()).not.toThrow()
    agent.disposed = true
    expect(() => agent.assertLive()).toThrow('agent scope "a" is disposed')
    runtimeDisposed = true
    expect(() => global.assertLive()).toThrow(expect.objectContaining({ code: 'DISPOSED', message: 'the tool runtime is disposed' }))
  })
})

describe('AgentScopes built from the scopes’ part of the context (ScopeParts), no runtime', () => {
  /** A context with real layers, hooks, guards, sections and calls, and a recording pipeline entry. */
  function parts() {
    const transport = detachToolDefinition(echoTool('run_code_stand_in'))
    const received: unknown[][] = []
    const hooks = new HookBus()
    const context: ScopeParts = {
      // Layer changes reach tools/changed listeners, as in a runtime.
      layers: new ToolLayers({ defaultMode: 'native', transport: () => transport, onChange: (event) => hooks.emitChanged(event) }),
      hooks,
      guards: new ScopedList<ToolGuard>(),
      sections: new PromptSections(),
      calls: new InFlightCalls(),
      isDisposed: () => false,
      execute: async (...args: unknown[]) => (received.push(args), { isError: false, value: null, content: [] }),
      assemble: () => {
        throw new Error('not used here')
      },
      catalog: () => {
        throw new Error('not used here')
      },
    }
    return { context, received }
  }

  it('agent.execute hands the pipeline its input with the agent set and says whether its scope is disposed; a caller’s extra argument goes nowhere', async () => {
    const { context, received } = parts()
    const agents = new AgentScopes(context)
    const agent = agents.get('a1')
    const input = { callId: 'c1', name: 'x', arguments: {}, signal: new AbortController().signal }
    await (agent.execute as (...args: unknown[]) => Promise<unknown>)(input, { scopeDisposed: false, schedule: { phase: () => Promise.reject(new Error('never')) } })
    await agent.dispose()
    await agent.execute(input)
    expect(received).toEqual([
      [{ ...input, agent: 'a1' }, { scopeDisposed: false }],
      [{ ...input, agent: 'a1' }, { scopeDisposed: true }],
    ])
  })

  it('agent.view() is the layers’ view of the agent (its public face), and throws DISPOSED once the agent is disposed', async () => {
    const { context } = parts()
    const agent = new AgentScopes(context).get('a1')
    agent.register(echoTool('mine'))
    expect(agent.view()).toBe(context.layers.view('a1').public)
    expect(agent.view().canCall('mine', 'native')).toBe(true)
    await agent.dispose()
    expect(() => agent.view()).toThrow(expect.objectContaining({ code: 'DISPOSED' }))
  })

  it('get opens one agent per id, the same facade until it is disposed; an id must be a non-empty string', async () => {
    const { context } = parts()
    const agents = new AgentScopes(context)
    const global = context.layers.view(undefined)
    const agent = agents.get('a1')
    expect(agents.get('a1')).toBe(agent)
    expect(agent.id).toBe('a1')
    expect(Object.isFrozen(agent)).toBe(true)
    expect(context.layers.view('a1')).not.toBe(global)
    const disposing = agent.dispose()
    expect(agent.dispose()).toBe(disposing)
    await disposing
    expect(context.layers.view('a1')).toBe(context.layers.view(undefined))
    expect(agents.get('a1')).not.toBe(agent)
    for (const id of ['', 7, undefined]) {
      expect(() => agents.get(id as never)).toThrow(expect.objectContaining({ code: 'INVALID_SCOPE_OPERATION', message: 'runtime.agent(id) needs a non-empty string id' }))
    }
  })

  it('a disposed agent refuses every operation with DISPOSED, naming itself', async () => {
    const { context } = parts()
    context.layers.add(undefined, detachToolDefinition(echoTool('g')))
    const agent = new AgentScopes(context).get('a1')
    await agent.dispose()
    const operations: [string, () => unknown][] = [
      ['register', () => agent.register(echoTool('x'))],
      ['guard', () => agent.guard(() => undefined)],
      ['on', () => agent.on('tools/changed', () => {})],
      ['section', () => agent.section({ id: 's', order: 1, text: '' })],
      ['restrict', () => agent.restrict({ deny: ['g'] })],
      ['presentAs', () => agent.presentAs('code')],
      ['preflightMode', () => agent.preflightMode('block')],
      ['get', () => agent.get('g')],
      ['schemas', () => agent.schemas()],
      ['view', () => agent.view()],
      ['assemble', () => agent.assemble()],
      ['catalog', () => agent.catalog()],
    ]
    for (const [label, operation] of operations) {
      let thrown: unknown
      try {
        operation()
      } catch (error) {
        thrown = error
      }
      expect([label, (thrown as { code?: unknown })?.code, (thrown as Error | undefined)?.message]).toEqual([label, 'DISPOSED', 'agent scope "a1" is disposed'])
    }
  })

  it('a live agent reads and registers through its own layer', () => {
    const { context } = parts()
    context.layers.add(undefined, detachToolDefinition(echoTool('g')))
    context.layers.add(undefined, detachToolDefinition(echoTool('h')))
    const agent = new AgentScopes(context).get('a1')
    agent.register(echoTool('mine'))
    agent.restrict({ deny: ['h'] })
    agent.presentAs('code')
    expect(agent.get('mine')?.name).toBe('mine')
    expect(agent.get('h')).toBeUndefined()
    expect(agent.schemas().map((s) => s.name)).toEqual(['g', 'mine', 'run_code_stand_in'])
    expect(context.layers.presentation('a1')).toBe('code')
    const guard: ToolGuard = () => undefined
    agent.guard(guard)
    expect(context.guards.list('a1')).toEqual([guard])
    expect(context.guards.list(undefined)).toEqual([])
    agent.section({ id: 's', order: 1, text: 'hi' })
    expect(context.sections.list('a1').map((s) => s.section)).toEqual([{ id: 's', order: 1, text: 'hi' }])
    expect(context.sections.list(undefined)).toEqual([])
  })

  it('preflightMode: declared once per agent, checked, undone by its disposer', () => {
    const { context } = parts()
    const agents = new AgentScopes(context)
    const agent = agents.get('a1')
    expect(agents.preflightMode('a1')).toBeUndefined()
    expect(agents.preflightMode(undefined)).toBeUndefined()
    for (const bad of ['loud', 3, undefined]) {
      expect(() => agent.preflightMode(bad as never)).toThrow(expect.objectContaining({ code: 'INVALID_SCOPE_OPERATION', message: `preflightMode(mode) needs 'off', 'warn' or 'block' (got ${JSON.stringify(String(bad))})` }))
    }
    const undo = agent.preflightMode('block')
    expect(agents.preflightMode('a1')).toBe('block')
    expect(agents.preflightMode('a2')).toBeUndefined()
    expect(() => agent.preflightMode('off')).toThrow(expect.objectContaining({ code: 'INVALID_SCOPE_OPERATION', message: `agent "a1" already declared its preflight mode ('block')` }))
    undo()
    expect(agents.preflightMode('a1')).toBeUndefined()
    agent.preflightMode('warn')
    expect(agents.preflightMode('a1')).toBe('warn')
  })

  it('a new agent of an id whose old agent is still being disposed starts with no preflight mode and declares its own', async () => {
    const { context } = parts()
    const agents = new AgentScopes(context)
    const old = agents.get('a1')
    old.preflightMode('block')
    const disposing = old.dispose()
    // The id is free again at once (as its layer is); the old agent's registrations are undone once its calls settled.
    const fresh = agents.get('a1')
    expect(fresh).not.toBe(old)
    expect(agents.preflightMode('a1')).toBeUndefined()
    fresh.preflightMode('off')
    expect(agents.preflightMode('a1')).toBe('off')
    await disposing
    expect(agents.preflightMode('a1')).toBe('off')
  })

  it('the disposal of an agent that disposeAll already forgot leaves a newer agent of the same id alone', async () => {
    const { context } = parts()
    const agents = new AgentScopes(context)
    const fresh = agents.get('a1')
    // disposeAll forgets every agent; a later disposal of one of them touches nothing newer.
    agents.disposeAll()
    const newest = agents.get('a1')
    newest.register(echoTool('mine'))
    await fresh.dispose()
    expect(agents.get('a1')).toBe(newest)
    expect(newest.get('mine')?.name).toBe('mine')
  })

  it('an agent disposal undoes its registrations, announces the disposal, then drops its listeners', async () => {
    const { context } = parts()
    const agent = new AgentScopes(context).get('a1')
    const heard: unknown[] = []
    const global: unknown[] = []
    context.hooks.add('tools/changed', (event) => void global.push(event), undefined)
    agent.on('tools/changed', (event) => void heard.push(event))
    agent.register(echoTool('mine'))
    await agent.dispose()
    const expected = [
      { kind: 'register', name: 'mine', agent: 'a1' },
      { kind: 'unregister', name: 'mine', agent: 'a1' },
      { kind: 'dispose', agent: 'a1' },
    ]
    expect(heard).toEqual(expected)
    expect(global).toEqual(expected)
    context.hooks.emitChanged({ kind: 'dispose' })
    expect(heard).toHaveLength(3)
  })

  it('disposeAll marks every agent disposed, undoes registrations before listeners, and closes their layers', async () => {
    const { context, received } = parts()
    const agents = new AgentScopes(context)
    const one = agents.get('a1')
    const two = agents.get('a2')
    const heard: unknown[] = []
    one.on('tools/changed', (event) => void heard.push(event))
    one.register(echoTool('x'))
    two.register(echoTool('y'))
    agents.disposeAll()
    expect(heard).toEqual([
      { kind: 'register', name: 'x', agent: 'a1' },
      { kind: 'register', name: 'y', agent: 'a2' },
      { kind: 'unregister', name: 'x', agent: 'a1' },
    ])
    expect(context.layers.view('a1')).toBe(context.layers.view(undefined))
    expect(context.layers.view('a2')).toBe(context.layers.view(undefined))
    expect(() => two.register(echoTool('z'))).toThrow('agent scope "a2" is disposed')
    await one.execute({ callId: 'c', name: 'x', arguments: {}, signal: new AbortController().signal })
    expect(received.at(-1)?.[1]).toEqual({ scopeDisposed: true })
    expect(agents.get('a1')).not.toBe(one)
  })
})
