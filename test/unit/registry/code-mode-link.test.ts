import { describe, expect, it } from 'vitest'
import { createCodeModeLink } from '../../../src/registry/code-mode-link.js'
import { HookBus } from '../../../src/registry/hooks.js'
import { validateRuntimeOptions } from '../../../src/registry/options.js'
import type { CodeDispatchEvent, SessionLogEvent, SessionLogSink } from '../../../src/runtime-types.js'
import { codeDispatchEvent } from './helpers.js'

function link(sessionLog?: SessionLogSink) {
  const hooks = new HookBus()
  const options = validateRuntimeOptions(sessionLog === undefined ? {} : { sessionLog })
  const registry = createCodeModeLink({
    options,
    layers: { bindingNames: (agent) => Object.freeze(agent === 'a' ? ['x', 'y'] : []) },
    hooks,
    execute: async () => ({ isError: false, value: 1, content: [] }),
    executionMode: () => 'parallel',
  })
  return { registry, hooks }
}

describe('the Code Mode link (the registry as run_code sees it)', () => {
  it('passes the options and the layers through', () => {
    const { registry } = link()
    expect(registry.maxParallelSubCalls).toBe(10)
    expect(registry.maxOutputBytes).toBe(64 * 1024 * 1024)
    expect(registry.codeRuntime()).toBeUndefined()
    expect(registry.bindingNames('a')).toEqual(['x', 'y'])
  })

  it("runs the agent's code-dispatch-log waterfall, keeping the event when a listener throws or answers garbage", async () => {
    const events: SessionLogEvent[] = []
    const { registry, hooks } = link({ append: (e) => void events.push(e) })
    hooks.add('tools/code-dispatch-log', (e) => ({ ...e, content: [{ type: 'text', text: 'spilled' }] }), 'a')
    hooks.add('tools/code-dispatch-log', () => {
      throw new Error('spill policy broke')
    }, undefined)
    hooks.add('tools/code-dispatch-log', () => ({ type: 'nonsense' }) as never, 'a')
    hooks.add('tools/code-dispatch-log', (e) => ({ ...e, content: [{ type: 'text', text: 'other agent' }] }), 'b')
    await registry.logDispatch(codeDispatchEvent('big'))
    expect(events).toHaveLength(1)
    expect((events[0] as CodeDispatchEvent).content).toEqual([{ type: 'text', text: 'spilled' }])
  })

  it('a throwing session log never reaches the program; live lines go only to a sink that takes them', async () => {
    const throwing: SessionLogSink = {
      append: () => {
        throw new Error('disk full')
      },
    }
    const { registry } = link(throwing)
    expect(() =>
      registry.logDispatchStart({ type: 'tool/code-dispatch-start', parentCallId: 'p', subCallId: 'p:code:1', name: 'x', arguments: {}, startedAt: 0 }),
    ).not.toThrow()
    await expect(registry.logDispatch(codeDispatchEvent('x'))).resolves.toBeUndefined()
    expect(registry.logOutput).toBeUndefined()

    const lines: unknown[] = []
    const streaming = link({
      append: () => {},
      appendLog: (e) => {
        lines.push(e.entry.text)
        throw new Error('socket closed')
      },
    })
    expect(() => streaming.registry.logOutput?.({ type: 'tool/code-log', parentCallId: 'p', entry: { source: 'console', text: 'hi' } })).not.toThrow()
    expect(lines).toEqual(['hi'])
  })
})
