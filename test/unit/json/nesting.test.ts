/**
 * How deep a value nests (src/json/nesting.ts): exact level counts, every container kind,
 * shared and cyclic references, and 200,000 levels without recursion.
 */
import { describe, expect, it } from 'vitest'
import { nestsDeeperThan } from '../../../src/json/nesting.js'

describe('nestsDeeperThan', () => {
  const chain = (levels: number, leaf: unknown = 1): unknown => {
    let v = leaf
    for (let i = 0; i < levels; i++) v = [v]
    return v
  }

  it('counts container levels exactly: a scalar is 0, [1] is 1', () => {
    expect(nestsDeeperThan(1, 0)).toBe(false)
    expect(nestsDeeperThan('x'.repeat(10), 0)).toBe(false)
    expect(nestsDeeperThan([], 0)).toBe(true)
    expect(nestsDeeperThan([1], 1)).toBe(false)
    expect(nestsDeeperThan(chain(100), 100)).toBe(false)
    expect(nestsDeeperThan(chain(101), 100)).toBe(true)
    expect(nestsDeeperThan({ a: { b: { c: 1 } } }, 3)).toBe(false)
    expect(nestsDeeperThan({ a: { b: { c: {} } } }, 3)).toBe(true)
  })

  it('walks map keys and values and set items; binary data, dates and regexps add nothing', () => {
    expect(nestsDeeperThan(new Map([[chain(3), 1]]), 3)).toBe(true)
    expect(nestsDeeperThan(new Map([[1, chain(3)]]), 3)).toBe(true)
    expect(nestsDeeperThan(new Map([[1, chain(2)]]), 3)).toBe(false)
    expect(nestsDeeperThan(new Set([chain(3)]), 3)).toBe(true)
    expect(nestsDeeperThan(new Set([chain(2)]), 3)).toBe(false)
    expect(nestsDeeperThan({ a: new Uint8Array(8), b: new ArrayBuffer(8), c: new Date(0), d: /x/ }, 1)).toBe(false)
  })

  it('finds the deepest path to a shared container, even when it first meets it shallow', () => {
    const shared = chain(2)
    // The walk pops `shared` first (at level 1), then reaches it again four levels down.
    const root = [chain(3, shared), shared]
    expect(nestsDeeperThan(root, 6)).toBe(false)
    expect(nestsDeeperThan(root, 5)).toBe(true)
  })

  it('a cycle adds no depth (JSON refuses it elsewhere), but what hangs below it counts; a getter is never run', () => {
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    cyclic.list = [cyclic, [cyclic]]
    expect(nestsDeeperThan(cyclic, 3)).toBe(false)
    expect(nestsDeeperThan(cyclic, 2)).toBe(true)
    cyclic.deep = chain(5)
    expect(nestsDeeperThan(cyclic, 5)).toBe(true)
    expect(nestsDeeperThan(cyclic, 6)).toBe(false)
    let ran = false
    const withGetter = Object.defineProperty({}, 'deep', { enumerable: true, get: () => ((ran = true), chain(10)) })
    expect(nestsDeeperThan(withGetter, 2)).toBe(false)
    expect(ran).toBe(false)
  })

  it('walks a value 200,000 levels deep without recursion', () => {
    expect(nestsDeeperThan(chain(200_000), 199_999)).toBe(true)
    expect(nestsDeeperThan(chain(200_000), 200_000)).toBe(false)
  })
})
