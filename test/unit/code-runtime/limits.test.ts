/**
 * The code-run limit validators (src/code-runtime/limits.ts) as units: the defaults, and
 * every bound of every option, each refusal with the exact message an integrator reads.
 */
import { describe, expect, it } from 'vitest'
import { CODE_RUN_LIMIT_KEYS, DEFAULT_CODE_RUN_LIMITS, MAX_TIMER_MS, checkOptionsObject, integerOption, readCodeRunLimits } from '../../../src/code-runtime/limits.js'
import { refusalMessage } from '../../support/refusal.js'

describe('code-run limits', () => {
  const invalid = (fn: () => unknown): string | undefined => refusalMessage('INVALID_OPTIONS', fn)

  it('the defaults and the timer ceiling', () => {
    expect(DEFAULT_CODE_RUN_LIMITS).toEqual({ computeMs: 60_000, maxWallMs: 600_000, maxLogBytes: 65_536, maxValueBytes: 32_768 })
    expect(Object.isFrozen(DEFAULT_CODE_RUN_LIMITS)).toBe(true)
    expect(MAX_TIMER_MS).toBe(2 ** 31 - 1)
    expect(CODE_RUN_LIMIT_KEYS).toEqual(['computeMs', 'maxWallMs', 'maxLogBytes', 'maxValueBytes', 'maxPendingArgBytes'])
  })

  it('integerOption: absent → fallback; an integer within [min, max] kept; anything else refused with what it was', () => {
    expect(integerOption({}, 'n', 7, 1, 10, 'f')).toBe(7)
    expect(integerOption({ n: 1 }, 'n', 7, 1, 10, 'f')).toBe(1)
    expect(integerOption({ n: 10 }, 'n', 7, 1, 10, 'f')).toBe(10)
    expect(invalid(() => integerOption({ n: 0 }, 'n', 7, 1, 10, 'f'))).toBe('f: options.n must be an integer from 1 to 10 (got 0)')
    expect(invalid(() => integerOption({ n: 11 }, 'n', 7, 1, 10, 'f'))).toBe('f: options.n must be an integer from 1 to 10 (got 11)')
    expect(invalid(() => integerOption({ n: 2.5 }, 'n', 7, 1, 10, 'f'))).toBe('f: options.n must be an integer from 1 to 10 (got 2.5)')
    expect(invalid(() => integerOption({ n: true }, 'n', 7, 1, 10, 'f'))).toBe('f: options.n must be an integer from 1 to 10 (got true)')
    expect(invalid(() => integerOption({ n: '5' }, 'n', 7, 1, 10, 'f'))).toBe('f: options.n must be an integer from 1 to 10 (got "5")')
    expect(invalid(() => integerOption({ n: 'x'.repeat(41) }, 'n', 7, 1, 10, 'f'))).toBe(`f: options.n must be an integer from 1 to 10 (got "${'x'.repeat(40)}…")`)
    expect(invalid(() => integerOption({ n: 'x'.repeat(40) }, 'n', 7, 1, 10, 'f'))).toBe(`f: options.n must be an integer from 1 to 10 (got "${'x'.repeat(40)}")`)
    expect(invalid(() => integerOption({ n: null }, 'n', 7, 1, 10, 'f'))).toBe('f: options.n must be an integer from 1 to 10 (got null)')
    expect(invalid(() => integerOption({ n: {} }, 'n', 7, 1, 10, 'f'))).toBe('f: options.n must be an integer from 1 to 10 (got object)')
  })

  it('checkOptionsObject: absent → {}, a plain object of known keys, anything else refused', () => {
    expect(checkOptionsObject(undefined, ['a'], 'f')).toEqual({})
    const given = { a: 1 }
    expect(checkOptionsObject(given, ['a', 'b'], 'f')).toBe(given)
    expect(invalid(() => checkOptionsObject(null, ['a'], 'f'))).toBe('f: options must be an object (got null)')
    expect(invalid(() => checkOptionsObject([], ['a'], 'f'))).toBe('f: options must be an object (got object)')
    expect(invalid(() => checkOptionsObject(5, ['a'], 'f'))).toBe('f: options must be an object (got 5)')
    expect(invalid(() => checkOptionsObject({ a: 1, c: 2 }, ['a', 'b'], 'f'))).toBe('f: unknown option "c" (known: a, b)')
  })

  it('readCodeRunLimits: each limit with its own bounds', () => {
    expect(readCodeRunLimits({}, 'f')).toEqual({ ...DEFAULT_CODE_RUN_LIMITS, maxPendingArgBytes: 32 * 1024 * 1024 })
    expect(Object.isFrozen(readCodeRunLimits({}, 'f'))).toBe(true)
    const max = readCodeRunLimits({ computeMs: MAX_TIMER_MS, maxWallMs: MAX_TIMER_MS, maxLogBytes: 2 ** 30, maxValueBytes: 2 ** 30, maxPendingArgBytes: 2 ** 30 }, 'f')
    expect(max).toEqual({ computeMs: MAX_TIMER_MS, maxWallMs: MAX_TIMER_MS, maxLogBytes: 2 ** 30, maxValueBytes: 2 ** 30, maxPendingArgBytes: 2 ** 30 })
    const min = { computeMs: 1, maxWallMs: 1, maxLogBytes: 1, maxValueBytes: 1, maxPendingArgBytes: 1024 }
    expect(readCodeRunLimits(min, 'f')).toEqual(min)
    expect(invalid(() => readCodeRunLimits({ maxPendingArgBytes: 1023 }, 'f'))).toBe(`f: options.maxPendingArgBytes must be an integer from 1024 to ${2 ** 30} (got 1023)`)
    expect(invalid(() => readCodeRunLimits({ computeMs: MAX_TIMER_MS + 1 }, 'f'))).toBe(`f: options.computeMs must be an integer from 1 to ${MAX_TIMER_MS} (got ${MAX_TIMER_MS + 1})`)
    expect(invalid(() => readCodeRunLimits({ maxWallMs: 0 }, 'f'))).toBe(`f: options.maxWallMs must be an integer from 1 to ${MAX_TIMER_MS} (got 0)`)
    expect(invalid(() => readCodeRunLimits({ maxLogBytes: 2 ** 30 + 1 }, 'f'))).toBe(`f: options.maxLogBytes must be an integer from 1 to ${2 ** 30} (got ${2 ** 30 + 1})`)
    expect(invalid(() => readCodeRunLimits({ maxValueBytes: 0 }, 'f'))).toBe(`f: options.maxValueBytes must be an integer from 1 to ${2 ** 30} (got 0)`)
  })
})
