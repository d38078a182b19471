/**
 * The two-layer listener list (src/registry/scoped-list.ts) as a unit: order, removal from
 * either layer (once, and only the removed entry), snapshots that stay put, and the
 * bounded snapshot cache.
 */
import { describe, expect, it } from 'vitest'
import { ScopedList } from '../../../src/registry/scoped-list.js'

describe('ScopedList', () => {
  it('lists global entries, then the agent\'s, each in registration order; an unknown agent sees the global ones', () => {
    const list = new ScopedList<string>()
    expect(list.list(undefined)).toEqual([])
    list.add('g1', undefined)
    list.add('a1', 'a')
    list.add('g2', undefined)
    list.add('b1', 'b')
    list.add('a2', 'a')
    expect(list.list(undefined)).toEqual(['g1', 'g2'])
    expect(list.list('a')).toEqual(['g1', 'g2', 'a1', 'a2'])
    expect(list.list('b')).toEqual(['g1', 'g2', 'b1'])
    expect(list.list('nobody')).toEqual(['g1', 'g2'])
    expect(list.all()).toEqual(['g1', 'g2', 'a1', 'a2', 'b1'])
  })

  it('removes exactly the removed entry from its layer, even when the same value was added twice', () => {
    const list = new ScopedList<string>()
    const g = list.add('same', undefined)
    list.add('same', undefined)
    const a = list.add('x', 'a')
    list.add('y', 'a')
    g()
    expect(list.list(undefined)).toEqual(['same'])
    a()
    expect(list.list('a')).toEqual(['same', 'y'])
    expect(list.all()).toEqual(['same', 'y'])
  })

  it('a remover works once: calling it again removes nothing else and keeps the count right', () => {
    const list = new ScopedList<string>()
    const first = list.add('one', undefined)
    list.add('two', undefined)
    first()
    first()
    // Had the second call counted, the count would reach zero and every read answer empty.
    expect(list.list(undefined)).toEqual(['two'])
    const scoped = list.add('three', 'a')
    list.add('four', 'a')
    scoped()
    scoped()
    expect(list.list('a')).toEqual(['two', 'four'])
  })

  it('an agent whose last entry goes is forgotten; a remover after that is harmless', () => {
    const list = new ScopedList<string>()
    const only = list.add('solo', 'a')
    list.add('other', 'b')
    only()
    expect(list.list('a')).toEqual([])
    expect(list.all()).toEqual(['other'])
    const again = list.add('back', 'a')
    expect(list.list('a')).toEqual(['back'])
    again()
    again()
    expect(list.all()).toEqual(['other'])
  })

  it('all() lists agents in first-use order, where an agent that was emptied and used again counts as new', () => {
    const list = new ScopedList<string>()
    list.add('a1', 'a')()
    list.add('b1', 'b')
    list.add('a2', 'a')
    expect(list.all()).toEqual(['b1', 'a2'])
  })

  it('a removed agent entry leaves the global layer alone, and a removed global entry every agent layer', () => {
    const list = new ScopedList<string>()
    const global = list.add('g', undefined)
    const scoped = list.add('s', 'a')
    scoped()
    expect(list.list(undefined)).toEqual(['g'])
    list.add('s2', 'a')
    global()
    expect(list.list('a')).toEqual(['s2'])
  })

  it('returns frozen snapshots that later changes never touch, and the same snapshot until a change', () => {
    const list = new ScopedList<string>()
    list.add('a', undefined)
    const before = list.list(undefined)
    expect(Object.isFrozen(before)).toBe(true)
    expect(list.list(undefined)).toBe(before)
    const remove = list.add('b', undefined)
    expect(before).toEqual(['a'])
    const after = list.list(undefined)
    expect(after).toEqual(['a', 'b'])
    remove()
    expect(after).toEqual(['a', 'b'])
    expect(list.list(undefined)).toEqual(['a'])
    expect(Object.isFrozen(list.list('agent'))).toBe(true)
  })

  it('with no entries at all, every read returns one shared empty snapshot (nothing allocated on the hot path)', () => {
    const list = new ScopedList<string>()
    expect(list.list(undefined)).toBe(list.list('agent'))
    list.add('x', 'agent')()
    expect(list.list('other')).toBe(list.list(undefined))
  })

  it('keeps answering right after more than 256 agents were read (the cache is bounded, not wrong)', () => {
    const list = new ScopedList<string>()
    list.add('g', undefined)
    for (let i = 0; i < 300; i++) list.add(`v${i}`, `agent-${i}`)
    for (let i = 0; i < 300; i++) expect(list.list(`agent-${i}`)).toEqual(['g', `v${i}`])
    for (let i = 0; i < 300; i++) expect(list.list(`agent-${i}`)).toEqual(['g', `v${i}`])
  })
})
