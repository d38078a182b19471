/**
 * The playground's bound on what a run draws (issue 34 item 6): whatever the number of
 * sub-calls, the set drawn is the first MAX_DRAWN_CALLS plus the calls that asked a person
 * (the 9,000th included) and the cards the user opened; the summary of the rest counts every
 * call exactly once, from counts kept as the events come. The page's own figures (a
 * 10,000-call flood in Chromium) are test/e2e/playground-flood.e2e.test.ts.
 */
import { describe, expect, it } from 'vitest'
import type { SubCallRecord } from '../../../demo/playground/cards.js'
import { callState, hiddenText, MAX_DRAWN_CALLS, RunCalls } from '../../../demo/playground/run-calls.js'
import { axisSpan, growingSpan } from '../../../demo/playground/timeline.js'

const record = (i: number): SubCallRecord => ({ subCallId: `c${i}`, name: 'get_product', arguments: { id: 'P012' }, start: i, mode: 'parallel' })

describe('RunCalls', () => {
  it('draws the first MAX_DRAWN_CALLS of a 10,000-call run and counts the rest', () => {
    const calls = new RunCalls()
    for (let i = 0; i < 10_000; i++) calls.start(record(i))
    expect(calls.size).toBe(10_000)
    expect(calls.inFlight).toBe(10_000)
    expect(calls.drawn().map((r) => r.subCallId)).toEqual(Array.from({ length: MAX_DRAWN_CALLS }, (_, i) => `c${i}`))
    expect(calls.hidden()).toEqual({ count: 10_000 - MAX_DRAWN_CALLS, running: 10_000 - MAX_DRAWN_CALLS, done: 0, failed: 0, denied: 0 })
    for (let i = 0; i < 10_000; i++) {
      calls.settle(`c${i}`, i % 1000 === 999 ? { durationMs: 1, isError: true, error: { message: 'no', code: 'NOT_FOUND' } } : { durationMs: 1, isError: false, content: [] })
    }
    expect(calls.inFlight).toBe(0)
    expect(calls.latest).toBe(10_000)
    // c999, c1999, … c9999 failed: ten, none of them among the first 200.
    const hidden = calls.hidden()
    expect(hidden).toEqual({ count: 9_800, running: 0, done: 9_790, failed: 10, denied: 0 })
    expect(hiddenText(hidden)).toBe('9,800 more sub-calls: 9,790 done, 10 failed')
  })

  it('draws a call that asked a person whatever its place, and keeps it drawn once it is decided', () => {
    const calls = new RunCalls()
    for (let i = 0; i < 9_500; i++) calls.start(record(i))
    const asking = calls.get('c8999')!
    asking.approval = { id: 'a1', state: 'pending' } as SubCallRecord['approval']
    calls.keep('c8999')
    expect(callState(asking)).toBe('waiting')
    expect(calls.drawn().at(-1)).toBe(asking)
    expect(calls.drawn()).toHaveLength(MAX_DRAWN_CALLS + 1)
    // Kept past the first: in submission order, whatever order they were kept in.
    calls.keep('c300')
    expect(calls.drawn().slice(MAX_DRAWN_CALLS).map((r) => r.subCallId)).toEqual(['c300', 'c8999'])
    asking.approval!.state = 'deny'
    calls.settle('c8999', { durationMs: 5, isError: true, error: { message: 'denied', code: 'DENIED_BY_APPROVAL' } })
    expect(callState(asking)).toBe('denied')
    expect(calls.drawn()).toContain(asking)
    // Drawn calls are not in the summary: 9,500 − 202 hidden, all running.
    expect(calls.hidden()).toEqual({ count: 9_298, running: 9_298, done: 0, failed: 0, denied: 0 })
    // Keeping a call among the first, or an unknown one, changes nothing.
    calls.keep('c3')
    calls.keep('nope')
    expect(calls.drawn()).toHaveLength(MAX_DRAWN_CALLS + 2)
  })

  it('counts a call once: a repeated start or settlement moves no count', () => {
    const calls = new RunCalls(2)
    for (let i = 0; i < 5; i++) calls.start(record(i))
    calls.start(record(4))
    calls.settle('c4', { durationMs: 1, isError: true, error: { message: 'x' } })
    calls.settle('c4', { durationMs: 2, isError: false, content: [] })
    expect(calls.settle('unknown', { durationMs: 1, isError: false })).toBeUndefined()
    expect(calls.size).toBe(5)
    expect(calls.inFlight).toBe(4)
    expect(calls.hidden()).toEqual({ count: 3, running: 2, done: 1, failed: 0, denied: 0 })
    expect(hiddenText(calls.hidden())).toBe('3 more sub-calls: 1 done, 2 running')
  })
})

describe('the timeline axis while a run goes on', () => {
  it('covers the latest moment, at most about a fifth longer, and changes a few dozen times over a 10 s run, not every frame', () => {
    let changes = 0
    let last = 0
    for (let t = 1; t <= 10_000; t += 16) {
      const span = axisSpan(t)
      expect(span).toBeGreaterThanOrEqual(t)
      expect(span).toBeLessThanOrEqual(t * 1.21)
      if (span !== last) changes++
      last = span
    }
    // 625 frames at 60 per second: each change moves every settled bar, the others move none.
    expect(changes).toBeLessThan(60)
  })
})

describe('the timeline axis while a flood goes on (redrawn every 200 ms)', () => {
  it('covers the latest moment, fills more than 40 % of the track, and changes log2(length) times, not at every redraw', () => {
    let half = 0
    let grown = 0
    let lastHalf = 0
    let span = 0
    for (let t = 1; t <= 30_000; t += 200) {
      const next = growingSpan(t, span)
      expect(next).toBeGreaterThanOrEqual(t)
      expect(next).toBeLessThan(t * 2 * 1.21)
      if (next !== span) grown++
      span = next
      const fitted = axisSpan(t)
      if (fitted !== lastHalf) half++
      lastHalf = fitted
    }
    // 150 redraws over 30 s: each change moves every drawn bar. Half a tick step (the page
    // before) changes at 34 of them, every 2nd to 5th; doubling from 1 ms to 30 s, under 15.
    expect(half).toBeGreaterThan(30)
    expect(grown).toBeLessThanOrEqual(Math.ceil(Math.log2(30_000)))
    expect(grown * 2).toBeLessThan(half)
    // A length already past the latest moment holds; none is given (0) fits as axisSpan.
    expect(growingSpan(900, 1_000)).toBe(1_000)
    expect(growingSpan(700, 0)).toBe(axisSpan(700))
  })
})
