/**
 * The in-memory session log is a ring bounded by entries and bytes (issue 19, finding 5:
 * `npm start` kept every sub-call's arguments and results forever).
 */
import { describe, expect, it } from 'vitest'
import { DEFAULT_SESSION_LOG_MAX_BYTES, DEFAULT_SESSION_LOG_MAX_ENTRIES, createMemorySessionLog, estimateRetainedBytes } from '../../../src/session-log.js'
import type { CodeDispatchStartEvent, SessionLogEvent } from '../../../src/runtime-types.js'

const startedAt = (event: SessionLogEvent): number => (event as CodeDispatchStartEvent).startedAt

function start(n: number, argument: unknown = {}): SessionLogEvent {
  return { type: 'tool/code-dispatch-start', parentCallId: 'p', subCallId: `p:code:${n}`, name: 'x', arguments: argument as never, startedAt: n }
}

describe('createMemorySessionLog is a bounded ring', () => {
  it('keeps at most maxEntries events, forgetting the oldest first', () => {
    const log = createMemorySessionLog({ maxEntries: 3 })
    for (let i = 1; i <= 10; i++) log.append(start(i))
    expect(log.events.map(startedAt)).toEqual([8, 9, 10])
    expect(log.dropped).toBe(7)
  })

  it('keeps at most maxBytes, forgetting the oldest first, and never keeps an event larger than the cap', () => {
    const log = createMemorySessionLog({ maxBytes: 10_000 })
    for (let i = 1; i <= 10; i++) log.append(start(i, 'x'.repeat(3_000)))
    expect(log.events.length).toBe(3)
    expect(log.events.map(startedAt)).toEqual([8, 9, 10])
    expect(log.bytes).toBeLessThanOrEqual(10_000)
    log.append(start(11, 'y'.repeat(20_000)))
    expect(log.events.map(startedAt)).toEqual([8, 9, 10])
    expect(log.dropped).toBe(8)
  })

  it('is bounded by default: 100 MB of arguments leave at most the default bytes', () => {
    expect(DEFAULT_SESSION_LOG_MAX_ENTRIES).toBe(1_000)
    const log = createMemorySessionLog()
    const big = 'a'.repeat(1024 * 1024)
    for (let i = 0; i < 100; i++) log.append(start(i, { content: big }))
    expect(log.bytes).toBeLessThanOrEqual(DEFAULT_SESSION_LOG_MAX_BYTES)
    expect(log.events.length).toBeLessThan(5)
    for (let i = 0; i < 5_000; i++) log.append(start(i))
    expect(log.events.length).toBe(DEFAULT_SESSION_LOG_MAX_ENTRIES)
  })

  it('estimates a shared-node argument without walking all of it', () => {
    const shared = {}
    const wide = Array.from({ length: 2_000_000 }, () => shared)
    // 8 bytes a value at least: the walk stops just past the limit.
    expect(estimateRetainedBytes(wide, 1000)).toBeLessThan(1100)
    const log = createMemorySessionLog({ maxBytes: 1000 })
    log.append(start(1, wide))
    expect(log.events).toEqual([])
  })

  it('keeps frozen copies, and clear() empties it', () => {
    const log = createMemorySessionLog()
    const event = start(1)
    log.append(event)
    expect(log.events[0]).not.toBe(event)
    expect(Object.isFrozen(log.events[0])).toBe(true)
    log.clear()
    expect([log.events.length, log.bytes, log.dropped]).toEqual([0, 0, 0])
  })

  it('refuses invalid options', () => {
    for (const bad of [{ maxEntries: 0 }, { maxBytes: -1 }, { maxEntries: 1.5 }, { maxBytes: '10' }]) {
      expect(() => createMemorySessionLog(bad as never)).toThrow(/INVALID_OPTIONS|must be a positive integer/)
    }
  })
})
