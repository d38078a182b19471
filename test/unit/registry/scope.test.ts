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
    const context: ScopeParts = {
      layers: new ToolLayers({ defaultMode: 'native', transport: () => transport, onChange: () => {} }),
      hooks: new HookBus(),
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
})
