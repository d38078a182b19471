import { describe, expect, it } from 'vitest'
import type { ToolsChangedEvent } from '../../../src/runtime-types.js'
import { detachToolDefinition, type RegisteredTool } from '../../../src/schema/tool-definition.js'
import { ToolLayers } from '../../../src/registry/layers.js'
import { echoTool, thrownCode as codeOf } from './helpers.js'

const tool = (name: string): RegisteredTool => detachToolDefinition(echoTool(name))

function layers(defaultMode: 'native' | 'code' | 'both' = 'native') {
  const events: ToolsChangedEvent[] = []
  const transport = tool('run_code_stand_in')
  const value = new ToolLayers({ defaultMode, transport: () => transport, onChange: (e) => void events.push(e) })
  return { layers: value, events, transport }
}

describe('ToolLayers (on its own, no runtime)', () => {
  it('resolves an agent tool over a global of the same name, for that agent only', () => {
    const { layers: l } = layers()
    const global = tool('echo')
    const local = tool('echo')
    l.add(undefined, global)
    l.openAgent('a')
    l.openAgent('b')
    l.add('a', local)
    expect(l.resolve('echo', 'a')).toBe(local)
    expect(l.resolve('echo', 'b')).toBe(global)
    expect(l.resolve('echo', undefined)).toBe(global)
    expect(l.visibleTools('a')).toEqual([local])
  })

  it('refuses a duplicate within one layer, and its undo removes only its own registration', () => {
    const { layers: l, events } = layers()
    const first = tool('echo')
    const undo = l.add(undefined, first)
    expect(codeOf(() => l.add(undefined, tool('echo')))).toBe('DUPLICATE_TOOL')
    undo()
    const second = tool('echo')
    l.add(undefined, second)
    undo()
    expect(l.resolve('echo', undefined)).toBe(second)
    expect(events.map((e) => e.kind)).toEqual(['register', 'unregister', 'register'])
  })

  it('masks hide globals from one agent; allow and deny intersect; the mask undo restores them', () => {
    const { layers: l } = layers()
    for (const name of ['a', 'b', 'c']) l.add(undefined, tool(name))
    l.openAgent('x')
    const allow = l.restrict('x', { allow: ['a', 'b'] })
    l.restrict('x', { deny: ['b'] })
    expect(l.visibleTools('x').map((t) => t.definition.name)).toEqual(['a'])
    expect(l.resolve('c', 'x')).toBeUndefined()
    allow()
    expect(l.visibleTools('x').map((t) => t.definition.name)).toEqual(['a', 'c'])
  })

  it.each([
    ['no filter', null],
    ['both allow and deny', { allow: ['a'], deny: ['a'] }],
    ['an empty list', { allow: [] }],
    ['run_code', { deny: ['run_code'] }],
    ['an unknown global', { deny: ['zzz'] }],
    ['a non-string name', { deny: [1] }],
  ])('restrict refuses %s with INVALID_SCOPE_OPERATION', (_label, filter) => {
    const { layers: l } = layers()
    l.add(undefined, tool('a'))
    l.openAgent('x')
    expect(codeOf(() => l.restrict('x', filter as never))).toBe('INVALID_SCOPE_OPERATION')
  })

  it('run_code resolves (and is listed) only where the presentation is not native', () => {
    const { layers: l, transport } = layers('native')
    l.add(undefined, tool('echo'))
    l.openAgent('coder')
    l.presentAs('coder', 'code')
    expect(l.resolve('run_code', undefined)).toBeUndefined()
    expect(l.resolve('run_code', 'coder')).toBe(transport)
    expect(l.schemas(undefined).map((s) => s.name)).toEqual(['echo'])
    expect(l.schemas('coder').map((s) => s.name)).toEqual(['echo', 'run_code_stand_in'])
    expect(codeOf(() => l.presentAs('coder', 'both'))).toBe('INVALID_SCOPE_OPERATION')
    expect(codeOf(() => l.presentAs('coder', 'weird' as never))).toBe('INVALID_SCOPE_OPERATION')
  })

  it('binding names are sorted by code point, not by UTF-16 unit', () => {
    const { layers: l } = layers()
    // U+FF5E sorts after U+1F600 in UTF-16 units (0xFF5E > 0xD83D) but before it by code point.
    for (const name of ['\u{1F600}', '\uFF5E', 'b', 'a']) l.add(undefined, tool(name))
    expect(l.bindingNames(undefined)).toEqual(['a', 'b', '\uFF5E', '\u{1F600}'])
    expect(Object.isFrozen(l.bindingNames(undefined))).toBe(true)
  })

  it('a closed agent layer no longer resolves, but the undo of its registrations still announces them', () => {
    const { layers: l, events } = layers()
    l.openAgent('a')
    const undo = l.add('a', tool('local'))
    l.closeAgent('a')
    expect(l.resolve('local', 'a')).toBeUndefined()
    undo()
    expect(events).toEqual([
      { kind: 'register', name: 'local', agent: 'a' },
      { kind: 'unregister', name: 'local', agent: 'a' },
    ])
    expect(codeOf(() => l.add('a', tool('again')))).toBe('DISPOSED')
  })

  it('caches one frozen wire schema per registration', () => {
    const { layers: l } = layers()
    const t = tool('echo')
    l.add(undefined, t)
    expect(l.schemaOf(t)).toBe(l.schemaOf(t))
    expect(Object.isFrozen(l.schemaOf(t))).toBe(true)
    expect(Object.keys(l.schemaOf(t))).toEqual(['name', 'description', 'parameters'])
  })

  it('a wire schema carries `callers` only when they are restricted', () => {
    const { layers: l } = layers()
    const restricted = detachToolDefinition({ ...echoTool('codeOnly'), callers: ['code'] })
    const both = detachToolDefinition({ ...echoTool('both'), callers: ['native', 'code'] })
    l.add(undefined, restricted)
    l.add(undefined, both)
    expect(l.schemaOf(restricted)).toEqual({ name: 'codeOnly', description: 'echo (codeOnly)', parameters: restricted.definition.parameters, callers: ['code'] })
    expect(Object.keys(l.schemaOf(both))).toEqual(['name', 'description', 'parameters'])
  })

  it('a second call of a mask undo removes nothing more, but announces again', () => {
    const { layers: l, events } = layers()
    for (const name of ['a', 'b']) l.add(undefined, tool(name))
    l.openAgent('x')
    const denyA = l.restrict('x', { deny: ['a'] })
    const denyB = l.restrict('x', { deny: ['b'] })
    denyA()
    denyA()
    // The mask on b is still in force.
    expect(l.visibleTools('x').map((t) => t.definition.name)).toEqual(['a'])
    denyB()
    expect(l.visibleTools('x').map((t) => t.definition.name)).toEqual(['a', 'b'])
    expect(events.slice(2)).toEqual([
      { kind: 'restrict', agent: 'x' },
      { kind: 'restrict', agent: 'x' },
      { kind: 'unrestrict', agent: 'x' },
      { kind: 'unrestrict', agent: 'x' },
      { kind: 'unrestrict', agent: 'x' },
    ])
  })

  it('the global layer announces without an agent; a presentation undo announces and restores the default', () => {
    const { layers: l, events } = layers('both')
    const undo = l.add(undefined, tool('g'))
    undo()
    l.openAgent('x')
    const unpresent = l.presentAs('x', 'native')
    expect(l.presentation('x')).toBe('native')
    unpresent()
    expect(l.presentation('x')).toBe('both')
    expect(events).toEqual([
      { kind: 'register', name: 'g' },
      { kind: 'unregister', name: 'g' },
      { kind: 'present-as', agent: 'x' },
      { kind: 'present-as', agent: 'x' },
    ])
    // No `agent` key at all on a global change (toEqual would accept one set to undefined).
    expect(events.slice(0, 2).map((event) => Object.keys(event))).toEqual([['kind', 'name'], ['kind', 'name']])
  })

  it('re-opening an open agent starts it over with an empty layer', () => {
    const { layers: l } = layers()
    l.openAgent('a')
    l.add('a', tool('mine'))
    l.presentAs('a', 'code')
    expect(l.resolve('mine', 'a')).toBeDefined()
    l.openAgent('a')
    expect(l.resolve('mine', 'a')).toBeUndefined()
    expect(l.presentation('a')).toBe('native')
  })

  it('an operation on an agent with no open layer is DISPOSED, naming the agent', () => {
    const { layers: l } = layers()
    l.add(undefined, tool('g'))
    for (const operation of [() => l.add('ghost', tool('x')), () => l.restrict('ghost', { deny: ['g'] }), () => l.presentAs('ghost', 'code')]) {
      expect(operation).toThrow(expect.objectContaining({ code: 'DISPOSED', message: 'agent scope "ghost" is disposed' }))
    }
  })
})
