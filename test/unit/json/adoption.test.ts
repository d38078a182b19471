/**
 * `JsonAdoption`, the stepped form of `adoptParsedJson`: each step walks at most its budget of
 * values, the root becomes a snapshot only once all of it is frozen, and the outcome equals the
 * one-shot adoption's.
 */
import { describe, expect, it } from 'vitest'
import { JsonAdoption, adoptParsedJson, isJsonSnapshot } from '../../../src/json/lossless.js'

function countFrozen(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0
  let frozen = Object.isFrozen(value) ? 1 : 0
  for (const child of Object.values(value)) frozen += countFrozen(child)
  return frozen
}

const wide = (n: number) => JSON.parse(JSON.stringify({ rows: Array.from({ length: n }, (_, i) => ({ i })) })) as object

describe('JsonAdoption', () => {
  it('walks at most its budget of values a step and records the snapshot only at the end', () => {
    const value = wide(100_000)
    const adoption = new JsonAdoption(value)
    let steps = 0
    let before = 0
    while (!adoption.step(10_000)) {
      steps++
      expect(adoption.visited - before).toBeLessThanOrEqual(10_000)
      before = adoption.visited
      expect(isJsonSnapshot(value)).toBe(false)
      // One container frozen per object walked: never more than the budget allows.
      expect(countFrozen(value)).toBeLessThanOrEqual(adoption.visited)
    }
    // `rows`, its 100,000 objects and the key inside each: 200,001 children walked; the root, `rows` and the 100,000 objects entered and frozen.
    expect(adoption.visited).toBe(400_005)
    expect(steps).toBe(40)
    expect(isJsonSnapshot(value)).toBe(true)
    expect(countFrozen(value)).toBe(100_002)
    expect(adoption.result).toEqual(adoptParsedJson(wide(100_000)))
  })

  it('counts each container it enters: empty objects are frozen at most a budget a step', () => {
    // 99,990 empty objects (the sandbox's widest accepted argument): their children cost nothing, their freezes do.
    const value = JSON.parse(JSON.stringify({ rows: Array.from({ length: 99_990 }, () => ({})) })) as object
    const adoption = new JsonAdoption(value)
    let frozen = 0
    let steps = 0
    while (!adoption.step(10_000)) {
      steps++
      const now = countFrozen(value)
      expect(now - frozen).toBeLessThanOrEqual(10_000)
      frozen = now
    }
    expect(steps).toBeGreaterThanOrEqual(19)
    expect(countFrozen(value)).toBe(99_992)
    expect(isJsonSnapshot(value)).toBe(true)
  })

  it('stops inside one wide array and resumes where it stopped', () => {
    const value = JSON.parse(JSON.stringify(Array.from({ length: 25 }, (_, i) => i))) as number[]
    const adoption = new JsonAdoption(value)
    expect(adoption.step(10)).toBe(false)
    expect(Object.isFrozen(value)).toBe(false)
    expect(adoption.step(10)).toBe(false)
    expect(adoption.step(10)).toBe(true)
    // 25 children, the array entered and frozen.
    expect(adoption.visited).toBe(27)
    expect(adoption.result).toEqual({ nodes: 26, depth: 1 })
    expect(Object.isFrozen(value)).toBe(true)
    // Done is done: a further step changes nothing.
    expect(adoption.step(10)).toBe(true)
    expect(adoption.visited).toBe(27)
  })

  it('refuses a lossy number found in a later step, never recording the value', () => {
    const value = JSON.parse(`[${'1,'.repeat(30)}-0]`) as number[]
    const adoption = new JsonAdoption(value)
    expect(adoption.step(10)).toBe(false)
    expect(adoption.step(100)).toBe(true)
    expect(adoption.result).toBeUndefined()
    expect(isJsonSnapshot(value)).toBe(false)
    expect(adoptParsedJson(JSON.parse('{"a":[1e400]}'))).toBeUndefined()
  })

  it('measures depth and nodes as the one-shot adoption does', () => {
    const text = '{"a":[1,{"b":[[true,null]]}],"c":"x"}'
    const adoption = new JsonAdoption(JSON.parse(text) as object)
    while (!adoption.step(1));
    expect(adoption.result).toEqual(adoptParsedJson(JSON.parse(text)))
    expect(adoption.result).toEqual({ nodes: 12, depth: 5 })
  })
})
