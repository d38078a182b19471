import { describe, expect, it } from 'vitest'
import { RegistrationScope } from '../../../src/registry/scope.js'

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
