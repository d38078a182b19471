import { describe, expect, it } from 'vitest'
import { HOOK_NAMES, HookBus } from '../../../src/registry/hooks.js'
import type { ToolsChangedEvent } from '../../../src/runtime-types.js'

describe('HookBus (on its own, no runtime)', () => {
  it('lists global listeners first, then the agent’s, each in registration order', () => {
    const bus = new HookBus()
    const names: string[] = []
    const listener = (name: string) => () => (names.push(name), undefined)
    bus.add('tools/result', listener('agent-1'), 'a')
    bus.add('tools/result', listener('global-1'), undefined)
    bus.add('tools/result', listener('global-2'), undefined)
    bus.add('tools/result', listener('other-agent'), 'b')
    for (const l of bus.result.list('a')) l(undefined as never, undefined as never)
    expect(names).toEqual(['global-1', 'global-2', 'agent-1'])
  })

  it('refuses unknown hooks and non-function listeners with INVALID_SCOPE_OPERATION', () => {
    const bus = new HookBus()
    expect(() => bus.add('tools/nope' as never, (() => {}) as never, undefined)).toThrow(expect.objectContaining({ code: 'INVALID_SCOPE_OPERATION' }))
    expect(() => bus.add('tools/result', 'x' as never, undefined)).toThrow(expect.objectContaining({ code: 'INVALID_SCOPE_OPERATION' }))
  })

  it('accepts exactly the documented hook names, and the remover removes', () => {
    const bus = new HookBus()
    for (const hook of HOOK_NAMES) {
      const remove = bus.add(hook, (() => undefined) as never, undefined)
      remove()
    }
    expect([...HOOK_NAMES].sort()).toEqual([
      'system-prompt/assemble',
      'tools/changed',
      'tools/code-dispatch-log',
      'tools/execute',
      'tools/post-execute',
      'tools/pre-execute',
      'tools/result',
    ])
    expect(bus.result.list(undefined)).toEqual([])
  })

  it('tools/changed reaches every listener of every scope with a frozen event; a throwing one is contained', () => {
    const bus = new HookBus()
    const seen: ToolsChangedEvent[] = []
    bus.add('tools/changed', () => {
      throw new Error('observer broke')
    }, undefined)
    bus.add('tools/changed', (e) => void seen.push(e), 'some-agent')
    bus.emitChanged({ kind: 'register', name: 'x' })
    expect(seen).toEqual([{ kind: 'register', name: 'x' }])
    expect(Object.isFrozen(seen[0])).toBe(true)
  })
})
