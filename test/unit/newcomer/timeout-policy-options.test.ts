/**
 * `timeoutPolicy({ defaultTimeout: 5 })` was accepted silently: every tool without its own
 * `timeoutMs` then ran with no deadline at all. Like every other factory's options, a name it does
 * not read is refused (`INVALID_OPTIONS`), naming the closest one (docs/errors.md).
 */
import { describe, expect, it } from 'vitest'
import { timeoutPolicy } from '../../../src/timeout-policy.js'
import { thrownToolError as refusal } from '../../support/refusal.js'

describe('timeoutPolicy: an option name it does not read is refused', () => {
  it('suggests defaultTimeoutMs for defaultTimeout', () => {
    expect(refusal(() => timeoutPolicy({ defaultTimeout: 5 } as never))).toEqual({
      code: 'INVALID_OPTIONS',
      message: 'timeoutPolicy: unknown option "defaultTimeout" (did you mean "defaultTimeoutMs"? known: defaultTimeoutMs)',
    })
  })

  it('names an unrelated option without a suggestion', () => {
    expect(refusal(() => timeoutPolicy({ retries: 3 } as never))?.message).toBe('timeoutPolicy: unknown option "retries" (known: defaultTimeoutMs)')
  })

  it('still takes the option it reads, and no options', () => {
    expect(typeof timeoutPolicy({ defaultTimeoutMs: 5 })).toBe('function')
    expect(typeof timeoutPolicy()).toBe('function')
    expect(typeof timeoutPolicy({})).toBe('function')
  })
})
