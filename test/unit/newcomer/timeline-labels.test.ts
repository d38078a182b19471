/**
 * The playground timeline never cuts a bar's label: a short bar's label goes beside it
 * (demo/playground/timeline.ts). What the page draws is checked in Chromium by the e2e
 * suite; this pins the placement rule.
 */
import { describe, expect, it } from 'vitest'
import { labelPlacement } from '../../../demo/playground/timeline.js'

describe('timeline label placement', () => {
  it('inside a bar of at least 40 % of the track', () => {
    expect(labelPlacement(0, 100)).toEqual({ where: 'inside' })
    expect(labelPlacement(30, 40)).toEqual({ where: 'inside' })
  })

  it('after a short bar that ends in the left part of the track', () => {
    expect(labelPlacement(0, 0.3)).toEqual({ where: 'after', style: 'left:calc(0.3% + 4px)' })
    expect(labelPlacement(20, 40 - 1e-9).where).toBe('after')
    expect(labelPlacement(50, 10)).toEqual({ where: 'after', style: 'left:calc(60% + 4px)' })
  })

  it('before a short bar that ends in the right part, so the label stays inside the track', () => {
    expect(labelPlacement(95, 5)).toEqual({ where: 'before', style: 'right:calc(5% + 4px)' })
    expect(labelPlacement(55, 10)).toEqual({ where: 'before', style: 'right:calc(45% + 4px)' })
  })
})
