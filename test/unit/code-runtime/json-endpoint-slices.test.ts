/**
 * The JSON endpoint adopts a call's arguments at most ADOPT_SLICE_NODES values a turn (issue 34
 * item 6: a 100,000-value argument held the host for one 30-40 ms turn): turns are counted by a
 * macrotask probe, not a clock. Later messages wait in order; a settled session drops the rest.
 */
import { describe, expect, it } from 'vitest'
import { ADOPT_SLICE_NODES, JsonWireEndpoint, MAX_HELD_CHARS, PARSE_AT_ONCE_CHARS } from '../../../src/code-runtime/json-endpoint.js'
import { ARG_BYTES_PER_NODE } from '../../../src/code-runtime/limits.js'
import { adoptParsedJson, isJsonSnapshot } from '../../../src/json/lossless.js'
import type { WireMessageEvent } from '../../../src/code-runtime/wire.js'

const nextTurn = () => new Promise<void>((resolve) => setTimeout(resolve, 0))

function endpoint() {
  const events: Array<{ event: WireMessageEvent; turn: number }> = []
  const ep = new JsonWireEndpoint(() => undefined, () => undefined, 64)
  let turn = 0
  const listener = (event: WireMessageEvent) => events.push({ event, turn })
  ep.addEventListener('message', listener)
  /** Counts macrotasks until `until` holds (bounded, so a lost message fails instead of hanging). */
  const turns = async (until: () => boolean, most = 1000): Promise<number> => {
    while (!until() && turn < most) {
      await nextTurn()
      turn++
    }
    return turn
  }
  return { ep, events, listener, turns }
}

const bigCall = (id: number, n: number) => JSON.stringify({ type: 'call', id, global: 'tools', name: 'write', args: { rows: Array.from({ length: n }, (_, i) => ({ i })) } })

describe('JsonWireEndpoint: arguments adopted in slices', () => {
  it('adopts a 100,000-object argument over several turns, never more than a slice of values in one', async () => {
    const { ep, events, turns } = endpoint()
    const text = bigCall(1, 100_000)
    ep.receive(text)
    // Without slices the call was delivered inside receive(), all 200,001 values frozen in that turn.
    expect(events).toHaveLength(0)
    const at = await turns(() => events.length > 0)
    expect(at).toBeGreaterThanOrEqual(Math.ceil(200_001 / ADOPT_SLICE_NODES) - 1)
    const { event } = events[0]!
    const args = (event.data as { args: object }).args
    expect(isJsonSnapshot(args)).toBe(true)
    // The weight is the one-shot adoption's: the text plus the per-node charge.
    const once = adoptParsedJson((JSON.parse(text) as { args: unknown }).args)!
    expect(event.checkedArgBytes).toBe(text.length + ARG_BYTES_PER_NODE * once.nodes)
  })

  it('holds the messages that follow a large call until it is delivered, then hands them over in order', async () => {
    const { ep, events, turns } = endpoint()
    ep.receive('{"type":"call","id":1,"global":"tools","name":"a"}')
    ep.receive(bigCall(2, 30_000))
    ep.receive('{"type":"call","id":3,"global":"tools","name":"b","args":{"x":1}}')
    ep.receive(bigCall(4, 30_000))
    ep.receive('not json')
    ep.receive('{"type":"done","ok":true,"value":5}')
    expect(events.map(({ event }) => (event.data as { id?: number }).id)).toEqual([1])
    await turns(() => events.length === 5)
    expect(events.map(({ event }) => (event.data as { id?: number; type: string }).id ?? (event.data as { type: string }).type)).toEqual([1, 2, 3, 4, 'done'])
    // Each large call took more than one turn, and nothing overtook it.
    const turnOf = (id: number) => events.find(({ event }) => (event.data as { id?: number }).id === id)!.turn
    expect(turnOf(2)).toBeGreaterThan(0)
    expect(turnOf(4)).toBeGreaterThan(turnOf(2))
    expect(events[4]!.turn).toBe(turnOf(4))
    expect(events[0]!.event.checkedArgBytes).toBe(0)
  })

  it('shares one slice between the calls of a turn: a second large call in the same turn waits', async () => {
    const { ep, events } = endpoint()
    // A row `{ i }` costs 4 units of a slice: its visit, its entry, its key, its freeze.
    const half = Math.floor(ADOPT_SLICE_NODES / 4 / 2)
    ep.receive(bigCall(1, half))
    expect(events).toHaveLength(1)
    ep.receive(bigCall(2, half + 10))
    expect(events).toHaveLength(1)
    await new Promise<void>((resolve) => setTimeout(resolve, 0))
    await new Promise<void>((resolve) => setTimeout(resolve, 0))
    expect(events).toHaveLength(2)
  })

  it('drops the adoption and every held message once the session has settled', async () => {
    const { ep, events, listener, turns } = endpoint()
    ep.receive(bigCall(1, 50_000))
    ep.receive('{"type":"done","ok":true,"value":1}')
    ep.removeEventListener('message', listener)
    await turns(() => false, 30)
    expect(events).toHaveLength(0)
    // A new listener (a later session on the same endpoint never happens, but nothing is left to leak).
    ep.addEventListener('message', listener)
    ep.receive('{"type":"ready"}')
    expect(events.map(({ event }) => event.data)).toEqual([{ type: 'ready' }])
  })

  it('a lossy number found after the first slice still reaches the session unweighed, in order', async () => {
    const { ep, events, turns } = endpoint()
    ep.receive(`{"type":"call","id":1,"global":"t","name":"n","args":[${'1,'.repeat(ADOPT_SLICE_NODES * 2)}-0]}`)
    ep.receive('{"type":"call","id":2,"global":"t","name":"n","args":[]}')
    await turns(() => events.length === 2)
    expect(events[0]!.event.checkedArgBytes).toBeUndefined()
    expect((events[1]!.event.data as { id: number }).id).toBe(2)
  })

  it('bounds what it holds behind a large call: a flood past MAX_HELD_CHARS fails the run, nothing more is kept or delivered', async () => {
    const failures: Array<{ kind: string; message: string }> = []
    const events: WireMessageEvent[] = []
    const ep = new JsonWireEndpoint(() => undefined, (kind, message) => failures.push({ kind, message }), 64)
    ep.addEventListener('message', (event) => events.push(event))
    ep.receive(bigCall(1, 100_000))
    // One string object sent again and again: the test holds 1 M characters, the endpoint counts every copy.
    const log = JSON.stringify({ type: 'log', level: 'log', text: 'x'.repeat(1_000_000) })
    for (let i = 0; i < MAX_HELD_CHARS / log.length + 2; i++) ep.receive(log)
    expect(failures).toEqual([{ kind: 'exception', message: expect.stringMatching(/^the program sent more than 33554432 characters of messages while the host was still reading a large call's arguments/) }])
    for (let i = 0; i < 20; i++) await nextTurn()
    // The large call was never delivered, nor anything held behind it.
    expect(events).toEqual([])
  })

  it('parses a message longer than PARSE_AT_ONCE_CHARS over several turns (a large result too), the same value JSON.parse makes', async () => {
    const { ep, events, turns } = endpoint()
    const text = JSON.stringify({ type: 'done', ok: true, value: Array.from({ length: 100_000 }, (_, i) => ({ i, s: 'x' })) })
    expect(text.length).toBeGreaterThan(PARSE_AT_ONCE_CHARS)
    ep.receive(text)
    // Parsed in one JSON.parse, the 300,001 values were read inside receive().
    expect(events).toHaveLength(0)
    const at = await turns(() => events.length > 0)
    expect(at).toBeGreaterThanOrEqual(Math.ceil(300_001 / ADOPT_SLICE_NODES) - 1)
    expect(events[0]!.event.data).toStrictEqual(JSON.parse(text))
  })

  it('drops a long message that is not JSON once its parse fails, and hands over what was held behind it, in order', async () => {
    const { ep, events, turns } = endpoint()
    ep.receive(`[${'{},'.repeat(PARSE_AT_ONCE_CHARS)}{}`)
    ep.receive('{"type":"call","id":2,"global":"tools","name":"b"}')
    ep.receive(bigCall(3, 40_000))
    ep.receive('{"type":"done","ok":true,"value":4}')
    expect(events).toHaveLength(0)
    await turns(() => events.length === 3)
    expect(events.map(({ event }) => (event.data as { id?: number; value?: number }).id ?? (event.data as { value: number }).value)).toEqual([2, 3, 4])
    expect(events[1]!.turn).toBeGreaterThan(events[0]!.turn)
  })
})

describe('JsonWireEndpoint: empty containers in a large call’s arguments', () => {
  const emptiesCall = (n: number) => JSON.stringify({ type: 'call', id: 1, global: 'tools', name: 'take', args: { objects: new Array(n).fill({}), arrays: new Array(n).fill([]), one: [{ a: {} }] } })

  it('are one frozen object (one array) per message: 100,000 `{}` are not 100,000 objects on the host', async () => {
    const { ep, events, turns } = endpoint()
    const text = emptiesCall(50_000)
    expect(text.length).toBeGreaterThan(PARSE_AT_ONCE_CHARS)
    ep.receive(text)
    await turns(() => events.length > 0)
    const { event } = events[0]!
    const args = (event.data as { args: { objects: object[]; arrays: unknown[][]; one: [{ a: object }] } }).args
    expect(isJsonSnapshot(args)).toBe(true)
    expect(new Set(args.objects).size).toBe(1)
    expect(new Set(args.arrays).size).toBe(1)
    expect(args.one[0].a).toBe(args.objects[0])
    expect(Object.isFrozen(args.objects[0]) && Object.isFrozen(args.arrays[0])).toBe(true)
    expect(Object.getPrototypeOf(args.objects[0])).toBe(Object.prototype)
    expect(Array.isArray(args.arrays[0]) && args.arrays[0].length === 0).toBe(true)
    // Counted and weighed as the distinct values JSON.parse makes: the same nodes, depth and weight.
    const once = adoptParsedJson((JSON.parse(text) as { args: unknown }).args)!
    expect(event.checkedArgBytes).toBe(text.length + ARG_BYTES_PER_NODE * once.nodes)
    // Two messages never share: each parse has its own.
    ep.receive(text)
    await turns(() => events.length > 1)
    expect((events[1]!.event.data as { args: { objects: object[] } }).args.objects[0]).not.toBe(args.objects[0])
  })

  it('outside a call’s arguments (a large result, a log) stay distinct and unfrozen, as JSON.parse makes them', async () => {
    const { ep, events, turns } = endpoint()
    ep.receive(JSON.stringify({ type: 'done', value: new Array(30_000).fill({}) }))
    await turns(() => events.length > 0)
    const value = (events[0]!.event.data as { value: object[] }).value
    expect(value[0]).not.toBe(value[1])
    expect(Object.isFrozen(value[0])).toBe(false)
  })

  it('a shared empty container still counts for the depth: 101 levels ending in `[]` are refused, 100 are not', async () => {
    const { ep, events, turns } = endpoint()
    const call = (id: number, levels: number) => `{"type":"call","id":${id},"global":"tools","name":"take","args":[${'['.repeat(levels - 2)}[]${']'.repeat(levels - 2)},"${'x'.repeat(PARSE_AT_ONCE_CHARS)}"]}`
    ep.receive(call(1, 101))
    ep.receive(call(2, 100))
    await turns(() => events.length > 1)
    // No checked weight: refused for its nesting past MAX_VALUE_DEPTH (100), counted from the arguments' root.
    expect(events[0]!.event.checkedArgBytes).toBeUndefined()
    expect(events[1]!.event.checkedArgBytes).toBeGreaterThan(0)
  })
})
