/**
 * The JSON-text endpoint of QuickJS sandboxes as a unit: what reaches the host session,
 * adjusted or dropped, and why (JSON `null` where an object is expected, program frames
 * with multi-digit lines or a colon that is not a column, QuickJS's out-of-memory error).
 */
import { describe, expect, it } from 'vitest'
import type { CodeRunFailureKind } from '../../../src/code-runtime/contract.js'
import { JsonWireEndpoint, isOutOfMemory, outOfMemoryMessage } from '../../../src/code-runtime/json-endpoint.js'
import { ARG_BYTES_PER_NODE } from '../../../src/code-runtime/limits.js'
import { MAX_VALUE_DEPTH } from '../../../src/code-runtime/render.js'

function endpoint(memoryMb = 64) {
  const sent: string[] = []
  const failures: Array<[CodeRunFailureKind, string]> = []
  const received: unknown[] = []
  const ep = new JsonWireEndpoint((json) => sent.push(json), (kind, message) => failures.push([kind, message]), memoryMb)
  const listener = (event: { readonly data: unknown }) => received.push(event.data)
  ep.addEventListener('message', listener)
  return { ep, sent, failures, received, listener }
}

describe('JsonWireEndpoint', () => {
  it('sends host messages as JSON text, and throws where JSON cannot carry a value', () => {
    const { ep, sent } = endpoint()
    ep.postMessage({ type: 'reply', id: 1, ok: true, value: [1, 'a'] })
    expect(sent).toEqual(['{"type":"reply","id":1,"ok":true,"value":[1,"a"]}'])
    expect(() => ep.postMessage({ type: 'reply', id: 2, ok: true, value: 1n })).toThrow(TypeError)
  })

  it('hands parsed messages to every listener, until removed; drops text that is not JSON', () => {
    const { ep, received, listener } = endpoint()
    const second: unknown[] = []
    const other = (event: { readonly data: unknown }) => second.push(event.data)
    ep.addEventListener('message', other)
    ep.receive('{"type":"ready"}')
    ep.receive('not json')
    ep.receive('[1,2]')
    ep.receive('7')
    expect(received).toEqual([{ type: 'ready' }, [1, 2], 7])
    expect(second).toEqual(received)
    ep.removeEventListener('message', listener)
    ep.removeEventListener('message', listener)
    ep.receive('"after"')
    expect(received).toHaveLength(3)
    expect(second).toEqual([{ type: 'ready' }, [1, 2], 7, 'after'])
  })

  it('a listener removing itself does not skip the next one', () => {
    const { ep } = endpoint()
    const order: string[] = []
    const first = () => {
      order.push('first')
      ep.removeEventListener('message', first)
    }
    ep.addEventListener('message', first)
    ep.addEventListener('message', () => order.push('second'))
    ep.receive('1')
    expect(order).toEqual(['first', 'second'])
  })

  it('gives a call without arguments an own, enumerable args of undefined', () => {
    const { ep, received } = endpoint()
    ep.receive('{"type":"call","id":1,"global":"tools","name":"a"}')
    const data = received[0] as Record<string, unknown>
    expect(Object.getOwnPropertyDescriptor(data, 'args')).toEqual({ value: undefined, enumerable: true, writable: true, configurable: true })
    ep.receive('{"type":"call","id":2,"global":"tools","name":"a","args":{"x":1}}')
    expect((received[1] as Record<string, unknown>).args).toEqual({ x: 1 })
    ep.receive('{"type":"log","id":3}')
    expect(Object.hasOwn(received[2] as object, 'args')).toBe(false)
  })

  it('turns QuickJS’s out-of-memory error into a worker-exit failure naming the memory', () => {
    const { ep, received, failures } = endpoint(32)
    ep.receive(JSON.stringify({ type: 'done', error: { name: 'InternalError', message: 'out of memory' } }))
    expect(failures).toEqual([['worker-exit', 'out of memory: the program exceeded the 32 MB memory of its QuickJS sandbox']])
    expect(received).toEqual([])
    ep.receive(JSON.stringify({ type: 'done', error: { name: 'InternalError', message: 'stack overflow' } }))
    expect(received).toHaveLength(1)
    expect(isOutOfMemory('InternalError', 'out of memory')).toBe(true)
    expect(isOutOfMemory('Error', 'out of memory')).toBe(false)
    expect(isOutOfMemory('InternalError', 'out of memory!')).toBe(false)
    expect(outOfMemoryMessage(8)).toBe('out of memory: the program exceeded the 8 MB memory of its QuickJS sandbox')
  })

  it('reads only own fields: an inherited type or error changes nothing', () => {
    const { ep, received } = endpoint()
    ep.receive('{"__proto__":{"type":"call"},"id":1}')
    expect(Object.hasOwn(received[0] as object, 'args')).toBe(false)
  })

  it('hands a null message to the listeners as is', () => {
    const { ep, received, failures } = endpoint()
    expect(() => ep.receive('null')).not.toThrow()
    expect(received).toEqual([null])
    expect(failures).toEqual([])
  })

  it('hands a done message with a null error to the listeners unchanged', () => {
    const { ep, received, failures } = endpoint()
    expect(() => ep.receive('{"type":"done","error":null}')).not.toThrow()
    expect(received).toEqual([{ type: 'done', error: null }])
    expect(failures).toEqual([])
  })
})

describe('JsonWireEndpoint: a call’s arguments weighed once', () => {
  /** The events the endpoint hands on, whole. */
  function events() {
    const ep = new JsonWireEndpoint(() => {}, () => {}, 64)
    const seen: Array<{ readonly data: unknown; readonly checkedArgBytes?: number }> = []
    ep.addEventListener('message', (event) => seen.push(event))
    return { ep, seen }
  }
  const nested = (levels: number) => `${'['.repeat(levels)}1${']'.repeat(levels)}`

  it('weighs a call’s arguments as their message’s text plus ARG_BYTES_PER_NODE per value, and freezes them', () => {
    expect(ARG_BYTES_PER_NODE).toBe(64)
    const { ep, seen } = events()
    const json = '{"type":"call","id":1,"global":"tools","name":"a","args":{"x":[1,"a"]}}'
    ep.receive(json)
    // The object, its key, the array and its two items: five values.
    expect(seen[0]).toEqual({ data: JSON.parse(json), checkedArgBytes: json.length + 64 * 5 })
    expect(Object.isFrozen((seen[0]!.data as { args: object }).args)).toBe(true)
    const bare = '{"type":"call","id":2,"global":"tools","name":"a"}'
    ep.receive(bare)
    expect(seen[1]!.checkedArgBytes).toBe(0)
  })

  it('leaves the weighing to the session for arguments nested deeper than MAX_VALUE_DEPTH or holding a number JSON snapshots refuse', () => {
    expect(MAX_VALUE_DEPTH).toBe(100)
    const { ep, seen } = events()
    const at = `{"type":"call","id":1,"global":"tools","name":"a","args":${nested(100)}}`
    ep.receive(at)
    expect(seen[0]!.checkedArgBytes).toBe(at.length + 64 * 101)
    ep.receive(`{"type":"call","id":2,"global":"tools","name":"a","args":${nested(101)}}`)
    ep.receive('{"type":"call","id":3,"global":"tools","name":"a","args":[1e400]}')
    for (const event of seen.slice(1)) {
      expect(Object.hasOwn(event, 'checkedArgBytes')).toBe(false)
      expect((event.data as { type: string }).type).toBe('call')
    }
  })

  it('weighs only calls: other messages, and an args field on them, carry no weight', () => {
    const { ep, seen } = events()
    ep.receive('{"type":"log","id":1,"args":[1,2]}')
    ep.receive('{"type":"done","value":1}')
    ep.receive('[1]')
    expect(seen.map((event) => Object.hasOwn(event, 'checkedArgBytes'))).toEqual([false, false, false])
    expect(seen[0]!.data).toEqual({ type: 'log', id: 1, args: [1, 2] })
  })

  it('parses nothing once nobody listens: a late out-of-memory report does not fail the run again', () => {
    const failures: string[] = []
    const ep = new JsonWireEndpoint(() => {}, (_kind, message) => failures.push(message), 64)
    const listener = () => {}
    ep.addEventListener('message', listener)
    ep.removeEventListener('message', listener)
    ep.receive(JSON.stringify({ type: 'done', error: { name: 'InternalError', message: 'out of memory' } }))
    expect(failures).toEqual([])
  })
})

describe('JsonWireEndpoint: program frames', () => {
  const stackOf = (stack: string): string => {
    const { ep, received } = endpoint()
    ep.receive(JSON.stringify({ type: 'done', error: { name: 'Error', message: 'm', stack } }))
    return (received[0] as { error: { stack: string } }).error.stack
  }

  it('remaps the program frames of a done error, with or without a column', () => {
    const { ep, received } = endpoint()
    ep.receive(JSON.stringify({ type: 'done', error: { name: 'E', message: 'm', stack: 'at f (<input>:5:7)\nat g (<input>:3)\nat h (<input>:1:2)\nat native' } }))
    expect((received[0] as { error: { stack: string } }).error.stack).toBe('at f (program.ts:3:7)\nat g (program.ts:1)\nat h (program.ts:1:2)\nat native')
    ep.receive(JSON.stringify({ type: 'done', error: { name: 'E', message: 'm' } }))
    expect((received[1] as { error: object }).error).toEqual({ name: 'E', message: 'm' })
    ep.receive(JSON.stringify({ type: 'log', error: { stack: '<input>:5:7' } }))
    expect((received[2] as { error: { stack: string } }).error.stack).toBe('<input>:5:7')
  })

  it('shifts a multi-digit line by the two wrapper lines, keeping a multi-digit column', () => {
    expect(stackOf('at f (<input>:12:34)\nat g (<input>:102)')).toBe('at f (program.ts:10:34)\nat g (program.ts:100)')
  })

  it('remaps every frame, even after a colon that is not followed by a column', () => {
    expect(stackOf('<input>:5: not a column\n    at f (<input>:7:1)')).toBe('program.ts:3: not a column\n    at f (program.ts:5:1)')
  })
})
