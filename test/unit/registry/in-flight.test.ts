import { describe, expect, it, afterEach, vi } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { InFlightCalls, UNTRACKED } from '../../../src/registry/in-flight.js'
import { tick, call } from './helpers.js'

describe('InFlightCalls (on its own, no runtime)', () => {
  it("a call's signal follows the caller, and keeps the caller's own reason", () => {
    const calls = new InFlightCalls()
    const caller = new AbortController()
    const call = calls.track(caller.signal, undefined)
    const signal = call.signal()
    expect(call.signal()).toBe(signal)
    const reason = new Error('caller cancelled')
    caller.abort(reason)
    expect(call.aborted).toBe(true)
    expect(signal.aborted).toBe(true)
    expect(call.reason).toBe(reason)
  })

  it("quiesce aborts only that agent's calls and resolves once they are released", async () => {
    const calls = new InFlightCalls()
    const mine = calls.track(new AbortController().signal, 'a')
    const other = calls.track(new AbortController().signal, 'b')
    const reason = new ToolError('DISPOSED', 'agent scope "a" was disposed')
    let settled = false
    const quiet = calls.quiesce(reason, 'a').then(() => (settled = true))
    expect(mine.aborted).toBe(true)
    expect(mine.reason).toBe(reason)
    expect(other.aborted).toBe(false)
    await tick()
    expect(settled).toBe(false)
    mine.release()
    await quiet
    expect(settled).toBe(true)
  })

  it('quiesce without an agent aborts every call; a released call is no longer waited for', async () => {
    const calls = new InFlightCalls()
    const done = calls.track(new AbortController().signal, undefined)
    done.release()
    const running = calls.track(new AbortController().signal, 'x')
    const quiet = calls.quiesce(new ToolError('DISPOSED', 'the tool runtime was disposed'))
    expect(done.aborted).toBe(false)
    expect(running.aborted).toBe(true)
    running.release()
    await quiet
  })

  it('a signal read after disposal is already aborted with the disposal reason', () => {
    const calls = new InFlightCalls()
    const call = calls.track(new AbortController().signal, 'a')
    const reason = new ToolError('DISPOSED', 'gone')
    void calls.quiesce(reason, 'a')
    expect(call.signal().aborted).toBe(true)
    expect(call.signal().reason).toBe(reason)
    call.release()
  })

  it('disposal first, then the caller: the reason is the disposal\'s whether or not the signal was read in between', () => {
    for (const readBefore of [true, false]) {
      const calls = new InFlightCalls()
      const caller = new AbortController()
      const record = calls.track(caller.signal, 'a')
      if (readBefore) record.signal()
      const disposal = new ToolError('DISPOSED', 'scope disposed')
      void calls.quiesce(disposal, 'a')
      caller.abort(new Error('client went away'))
      expect(record.reason, `read before: ${readBefore}`).toBe(disposal)
      expect(record.signal().reason, `read before: ${readBefore}`).toBe(disposal)
      record.release()
    }
  })

  it('an untracked call is never aborted and makes a fresh signal on demand', () => {
    expect(UNTRACKED.aborted).toBe(false)
    expect(UNTRACKED.signal().aborted).toBe(false)
    expect(() => UNTRACKED.release()).not.toThrow()
  })
})

afterEach(() => {
  vi.useRealTimers()
})

describe('the in-flight record: reason, release, settlement', () => {
  it('once the signal exists, reason is the signal\'s: a disposal then a caller abort keeps the disposal\'s reason', () => {
    const calls = new InFlightCalls()
    const caller = new AbortController()
    const record = calls.track(caller.signal, 'a')
    const signal = record.signal()
    const disposed = new ToolError('DISPOSED', 'agent scope "a" was disposed')
    void calls.quiesce(disposed, 'a')
    caller.abort(new Error('caller gave up'))
    expect(signal.reason).toBe(disposed)
    expect(record.reason).toBe(disposed)
    record.release()
  })

  it("aborted and reason agree from the caller's first abort listener on, whenever the call's own signal follows", () => {
    const calls = new InFlightCalls()
    const caller = new AbortController()
    const record = calls.track(caller.signal, undefined)
    const signal = record.signal()
    const seen: unknown[] = []
    // In Node the call's signal is not aborted yet at this point (workerd aborts it first).
    // A block body: an event handler's return value is ignored, and workerd warns about one.
    caller.signal.addEventListener('abort', () => {
      seen.push(record.aborted, record.reason)
    })
    const reason = new Error('caller cancelled')
    caller.abort(reason)
    expect(seen).toEqual([true, reason])
    expect(signal.reason).toBe(reason)
    record.release()
  })

  it('a call released before its caller aborts: aborted and reason still say what the caller did', () => {
    const calls = new InFlightCalls()
    const caller = new AbortController()
    const record = calls.track(caller.signal, undefined)
    const signal = record.signal()
    record.release()
    const reason = new Error('too late')
    caller.abort(reason)
    expect(signal.aborted).toBe(false)
    expect([record.aborted, record.reason]).toEqual([true, reason])
  })

  it('the first disposal wins: a second one (agent, then registry) does not change the reason', () => {
    const calls = new InFlightCalls()
    const record = calls.track(new AbortController().signal, 'a')
    const first = new ToolError('DISPOSED', 'agent scope "a" was disposed')
    void calls.quiesce(first, 'a')
    void calls.quiesce(new ToolError('DISPOSED', 'the tool runtime was disposed'))
    expect(record.reason).toBe(first)
    expect(record.signal().reason).toBe(first)
    record.release()
  })

  it('a released call stops following its caller, whether its signal was read before or after', () => {
    const calls = new InFlightCalls()
    const caller = new AbortController()
    const early = calls.track(caller.signal, undefined)
    const earlySignal = early.signal()
    early.release()
    const late = calls.track(caller.signal, undefined)
    late.release()
    const lateSignal = late.signal()
    caller.abort(new Error('too late'))
    expect(earlySignal.aborted).toBe(false)
    expect(lateSignal.aborted).toBe(false)
  })

  it('a call released by its own abort listener (settling as it is disposed) does not hold up quiesce', async () => {
    const calls = new InFlightCalls()
    const record = calls.track(new AbortController().signal, 'a')
    record.signal().addEventListener('abort', () => record.release())
    const quiet = calls.quiesce(new ToolError('DISPOSED', 'agent scope "a" was disposed'), 'a').then(() => 'quiet')
    expect(await Promise.race([quiet, tick().then(() => 'still waiting')])).toBe('quiet')
  })

  it('a call released by an earlier call\'s abort listener does not hold up quiesce either', async () => {
    const calls = new InFlightCalls()
    const first = calls.track(new AbortController().signal, undefined)
    const second = calls.track(new AbortController().signal, undefined)
    first.signal().addEventListener('abort', () => {
      first.release()
      second.release()
    })
    const quiet = calls.quiesce(new ToolError('DISPOSED', 'the tool runtime was disposed')).then(() => 'quiet')
    expect(await Promise.race([quiet, tick().then(() => 'still waiting')])).toBe('quiet')
  })
})
