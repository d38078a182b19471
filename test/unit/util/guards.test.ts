import { describe, expect, it } from 'vitest'
import { isRecord, positiveInteger } from '../../../src/util/guards.js'

const fail = (message: string): never => {
  throw new Error(message)
}

describe('small guards', () => {
  it('isRecord: a non-null, non-array object', () => {
    expect([{}, Object.create(null), new Map()].map(isRecord)).toEqual([true, true, true])
    expect([null, undefined, [], 'x', 1, () => {}].map(isRecord)).toEqual([false, false, false, false, false, false])
  })

  it('positiveInteger: the value, the fallback when undefined, otherwise the named failure', () => {
    expect(positiveInteger('n', 7, 3, fail)).toBe(7)
    expect(positiveInteger('n', undefined, 3, fail)).toBe(3)
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '4', null, {}]) {
      expect(() => positiveInteger('maxThings', bad, 3, fail), String(bad)).toThrow('maxThings must be a positive integer')
    }
  })
})
