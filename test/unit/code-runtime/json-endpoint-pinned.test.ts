/**
 * The held-messages bound of the JSON endpoint (MAX_HELD_CHARS, src/code-runtime/json-endpoint.ts):
 * its edge, and its count across deliveries, a second large call and a settled session. The
 * survivors of the file's mutation run (docs/testing.md).
 */
import { describe, expect, it } from 'vitest'
import { JsonWireEndpoint, MAX_HELD_CHARS } from '../../../src/code-runtime/json-endpoint.js'
import type { WireMessageEvent } from '../../../src/code-runtime/wire.js'

const nextTurn = () => new Promise<void>((resolve) => setTimeout(resolve, 0))
const bigCall = (id: number, n: number) => JSON.stringify({ type: 'call', id, global: 'tools', name: 'write', args: { rows: Array.from({ length: n }, (_, i) => ({ i })) } })
/** One MiB of text that is not JSON: held like any message, dropped at once when handled. */
const MIB = 'x'.repeat(1024 * 1024)
const MIBS_AT_BOUND = MAX_HELD_CHARS / MIB.length

function endpoint() {
  const failures: string[] = []
  const events: WireMessageEvent[] = []
  const ep = new JsonWireEndpoint(() => undefined, (kind) => failures.push(kind), 64)
  const listener = (event: WireMessageEvent) => events.push(event)
  ep.addEventListener('message', listener)
  const ids = () => events.map((event) => (event.data as { id?: number; type: string }).id ?? (event.data as { type: string }).type)
  /** Waits turn by turn until `until` holds (bounded, so a lost message fails instead of hanging). */
  const turns = async (until: () => boolean) => {
    for (let i = 0; i < 500 && !until(); i++) await nextTurn()
    return until()
  }
  return { ep, failures, events, listener, ids, turns }
}

function hold(ep: JsonWireEndpoint, mibs: number): void {
  for (let i = 0; i < mibs; i++) ep.receive(MIB)
}

describe('JsonWireEndpoint: the held bound', () => {
  it('exactly MAX_HELD_CHARS held is allowed; one character more fails the run', async () => {
    const at = endpoint()
    at.ep.receive(bigCall(1, 100_000))
    expect(MIBS_AT_BOUND).toBe(32)
    hold(at.ep, MIBS_AT_BOUND)
    expect(at.failures).toEqual([])
    expect(await at.turns(() => at.events.length === 1)).toBe(true)
    expect(at.ids()).toEqual([1])

    const over = endpoint()
    over.ep.receive(bigCall(1, 100_000))
    hold(over.ep, MIBS_AT_BOUND)
    over.ep.receive('y')
    expect(over.failures).toEqual(['exception'])
  })

  it('the count starts again once the large call is delivered: a second large call may hold as much', async () => {
    const { ep, failures, ids, turns } = endpoint()
    ep.receive(bigCall(1, 100_000))
    hold(ep, 20)
    expect(await turns(() => ids().length === 1)).toBe(true)
    ep.receive(bigCall(2, 100_000))
    hold(ep, 20)
    ep.receive('{"type":"ready"}')
    expect(failures).toEqual([])
    expect(await turns(() => ids().length === 3)).toBe(true)
    expect(ids()).toEqual([1, 2, 'ready'])
  })

  it('messages held again behind a second large call (itself held) still count: past the bound with them, the run fails', async () => {
    const { ep, failures, ids, turns } = endpoint()
    ep.receive(bigCall(1, 100_000))
    ep.receive(bigCall(2, 100_000))
    hold(ep, 20)
    expect(failures).toEqual([])
    // Call 1 delivered, call 2 being adopted: the 20 MiB behind it are held again, and counted (20 + 12 MiB is the bound).
    expect(await turns(() => ids().length === 1)).toBe(true)
    hold(ep, 12)
    expect(failures).toEqual([])
    ep.receive('y')
    expect(failures).toEqual(['exception'])
  })

  it('a settled session drops what it held and its count: a later session on the endpoint may hold as much', async () => {
    const { ep, failures, listener, ids, turns } = endpoint()
    ep.receive(bigCall(1, 100_000))
    hold(ep, 20)
    ep.removeEventListener('message', listener)
    for (let i = 0; i < 30; i++) await nextTurn()
    ep.addEventListener('message', listener)
    ep.receive(bigCall(2, 100_000))
    hold(ep, 20)
    expect(failures).toEqual([])
    expect(await turns(() => ids().length === 1)).toBe(true)
    expect(ids()).toEqual([2])
  })

  it('a session that settled stops the adoption at the next turn: a listener added after that never gets the dropped call', async () => {
    const { ep, listener, ids } = endpoint()
    ep.receive(bigCall(1, 100_000))
    ep.removeEventListener('message', listener)
    // The adoption's next turn runs first and finds nobody listening.
    await nextTurn()
    ep.addEventListener('message', listener)
    for (let i = 0; i < 40; i++) await nextTurn()
    expect(ids()).toEqual([])
  })

  it('a session that settles on a held message hears nothing after it, not even an out-of-memory report', async () => {
    const failures: string[] = []
    const events: WireMessageEvent[] = []
    const ep = new JsonWireEndpoint(() => undefined, (kind) => failures.push(kind), 64)
    const listener = (event: WireMessageEvent) => {
      events.push(event)
      if ((event.data as { type: string }).type === 'done') ep.removeEventListener('message', listener)
    }
    ep.addEventListener('message', listener)
    ep.receive(bigCall(1, 100_000))
    ep.receive('{"type":"done","ok":true,"value":1}')
    ep.receive('{"type":"done","ok":false,"error":{"name":"InternalError","message":"out of memory"}}')
    for (let i = 0; i < 200 && events.length < 2; i++) await nextTurn()
    for (let i = 0; i < 5; i++) await nextTurn()
    expect(events.map((event) => (event.data as { type: string }).type)).toEqual(['call', 'done'])
    expect(failures).toEqual([])
  })
})
