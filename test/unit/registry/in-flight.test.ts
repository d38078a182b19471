import { describe, expect, it } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { InFlightCalls, UNTRACKED } from '../../../src/registry/in-flight.js'
import { tick } from './helpers.js'

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
