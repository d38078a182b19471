/**
 * The sandbox-thread protocol (src/code-runtime/sandbox-protocol.ts) as a unit: which
 * thread events parse, and the layout of the shared signal slots.
 */
import { describe, expect, it } from 'vitest'
import { BUSY_SLOT, MAX_PROGRAM_CHARS, SEGMENT_SLOT, SIGNALS_BYTES, STOP_SLOT, epochNow, parseThreadEvent, programTooLong } from '../../../src/code-runtime/sandbox-protocol.js'

describe('the sandbox-thread protocol', () => {
  it('parses the three thread events and nothing else', () => {
    expect(parseThreadEvent({ type: 'ready', extra: 1 })).toEqual({ type: 'ready' })
    expect(parseThreadEvent({ type: 'ended', run: 3 })).toEqual({ type: 'ended', run: 3 })
    expect(parseThreadEvent({ type: 'ended', run: '3' })).toBeUndefined()
    for (const kind of ['exception', 'timeout', 'abort', 'worker-exit'] as const) {
      expect(parseThreadEvent({ type: 'failed', run: 1, kind, message: 'm' })).toEqual({ type: 'failed', run: 1, kind, message: 'm' })
    }
    expect(parseThreadEvent({ type: 'failed', run: 1, kind: 'overloaded', message: 'm' })).toBeUndefined()
    expect(parseThreadEvent({ type: 'failed', run: 1, kind: 'timeout', message: 2 })).toBeUndefined()
    expect(parseThreadEvent({ type: 'failed', run: 'x', kind: 'timeout', message: 'm' })).toBeUndefined()
    expect(parseThreadEvent({ type: 'failed', run: 1, kind: 5, message: 'm' })).toBeUndefined()
    for (const data of [null, undefined, 'ready', 1, {}, { type: 'boot' }]) expect(parseThreadEvent(data)).toBeUndefined()
  })

  it('parses park-refused, replayed and parked events only with their fields of the right types', () => {
    expect(parseThreadEvent({ type: 'park-refused', run: 4, extra: 1 })).toEqual({ type: 'park-refused', run: 4 })
    expect(parseThreadEvent({ type: 'park-refused', run: '4' })).toBeUndefined()
    expect(parseThreadEvent({ type: 'replayed', run: 5, busyMs: 1.5, extra: 1 })).toEqual({ type: 'replayed', run: 5, busyMs: 1.5 })
    expect(parseThreadEvent({ type: 'replayed', run: '5', busyMs: 1.5 })).toBeUndefined()
    expect(parseThreadEvent({ type: 'replayed', run: 5, busyMs: '1.5' })).toBeUndefined()
    expect(parseThreadEvent({ type: 'replayed', run: 5 })).toBeUndefined()
    const parked = { journal: { inputs: ['{"type":"run"}', 3], reads: [1.5, 'x'], ops: 'nd', calls: ['tools.a#1'] }, clockMs: 12, timers: [[1, 50]] }
    expect(parseThreadEvent({ type: 'parked', run: 6, parked, extra: 1 })).toEqual({ type: 'parked', run: 6, parked })
    expect(parseThreadEvent({ type: 'parked', run: '6', parked })).toBeUndefined()
    expect(parseThreadEvent({ type: 'parked', run: 6, parked: { ...parked, clockMs: '12' } })).toBeUndefined()
    expect(parseThreadEvent({ type: 'parked', run: 6 })).toBeUndefined()
  })

  it('lays the shared signals out as three 8-byte slots, and reads the epoch clock', () => {
    expect([STOP_SLOT, BUSY_SLOT, SEGMENT_SLOT, SIGNALS_BYTES]).toEqual([0, 1, 2, 24])
    // timeOrigin + now() is monotonic and drifts from the wall clock in a long-lived process
    // (10 ms after ~30 min of a loaded CI worker): it must read epoch milliseconds, not match Date.
    const before = Date.now()
    const now = epochNow()
    expect(now).toBeGreaterThanOrEqual(before - 1000)
    expect(now).toBeLessThanOrEqual(Date.now() + 1000)
  })

  it('accepts a program of exactly MAX_PROGRAM_CHARS code units and refuses one more, naming both lengths', () => {
    expect(MAX_PROGRAM_CHARS).toBe(262_144)
    expect(programTooLong('')).toBeUndefined()
    expect(programTooLong('x'.repeat(MAX_PROGRAM_CHARS))).toBeUndefined()
    // Code units, not characters: an astral character counts twice.
    expect(programTooLong('😀'.repeat(MAX_PROGRAM_CHARS / 2))).toBeUndefined()
    expect(programTooLong(`${'😀'.repeat(MAX_PROGRAM_CHARS / 2)}x`)).toBe(
      'SyntaxError: the program is 262145 characters long; at most 262144 are accepted: pass data through tool calls instead of embedding it, or split the work into several runs',
    )
    expect(programTooLong('x'.repeat(MAX_PROGRAM_CHARS + 1))).toBe(
      'SyntaxError: the program is 262145 characters long; at most 262144 are accepted: pass data through tool calls instead of embedding it, or split the work into several runs',
    )
  })
})
