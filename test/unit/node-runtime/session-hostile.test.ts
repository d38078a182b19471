import { describe, expect, it } from 'vitest'
import type { CodeBindingFunction, CodeRunRequest } from '../../../src/code-runtime/contract.js'
import { CodeRunSession, prepareRun } from '../../../src/code-runtime/host-session.js'
import { DEFAULT_CODE_RUN_LIMITS } from '../../../src/code-runtime/limits.js'
import type { CodeRunLimits } from '../../../src/code-runtime/limits.js'
import { parseWorkerMessage } from '../../../src/code-runtime/wire.js'
import type { WireEndpoint } from '../../../src/code-runtime/wire.js'

/**
 * The shared host session against a hostile peer: the test plays the sandbox on the
 * other end of a real MessageChannel (web standard) and sends what a compromised
 * bootstrap could.
 */
function webEndpoint(port: MessagePort): WireEndpoint {
  return {
    postMessage: (m) => port.postMessage(m),
    addEventListener: (t, l) => port.addEventListener(t, l as (e: MessageEvent) => void),
    removeEventListener: (t, l) => port.removeEventListener(t, l as (e: MessageEvent) => void),
    start: () => port.start(),
  }
}

function harness(functions: Record<string, CodeBindingFunction>, limits: Partial<CodeRunLimits> = {}, extra: Partial<CodeRunRequest> = {}) {
  const channel = new MessageChannel()
  const received: unknown[] = []
  channel.port2.onmessage = (event) => {
    received.push(event.data)
  }
  let terminated = 0
  const prepared = prepareRun({ program: 'x', bindings: [{ global: 'tools', functions }], ...extra })
  if (!prepared.ok) throw new Error(prepared.message)
  const session = new CodeRunSession(prepared.run, 'x', { ...DEFAULT_CODE_RUN_LIMITS, ...limits }, {
    endpoint: webEndpoint(channel.port1),
    terminate: () => {
      terminated++
    },
  })
  session.start()
  const send = (m: unknown) => channel.port2.postMessage(m)
  // A pause, then message hops: on a loaded machine a timer can fire before messages that
  // were already posted are delivered (timers run before message delivery in a loop turn);
  // each hop through a fresh channel lets one more turn deliver what is pending.
  const hop = () => new Promise<void>((resolve) => {
    const c = new MessageChannel()
    c.port1.onmessage = () => {
      c.port1.close()
      resolve()
    }
    c.port2.postMessage(0)
  })
  const tick = async () => {
    await new Promise((resolve) => setTimeout(resolve, 30))
    for (let i = 0; i < 5; i++) await hop()
  }
  const close = () => {
    channel.port1.close()
    channel.port2.close()
  }
  return { session, send, tick, received, close, terminations: () => terminated }
}

describe('parseWorkerMessage', () => {
  it.each([
    ['a number', 42],
    ['null', null],
    ['a string', 'done'],
    ['an array', [{ type: 'done' }]],
    ['an unknown tag', { type: 'exec', code: '1' }],
    ['a log with extra keys (cap bypass)', { type: 'log', source: 'console', level: 'log', text: 'x', bytes: 0 }],
    ['a log from a forged source', { type: 'log', source: 'stdout', level: 'log', text: 'x' }],
    ['a log with an unknown level', { type: 'log', source: 'console', level: 'fatal', text: 'x' }],
    ['a log with non-string text', { type: 'log', source: 'console', level: 'log', text: { length: 1 } }],
    ['a done with extra keys', { type: 'done', value: 1, logs: [] }],
    ['a done with value and error', { type: 'done', value: 1, error: { name: 'E', message: 'm' } }],
    ['a done with a malformed error', { type: 'done', error: { name: 1, message: 'm' } }],
    ['a done with a non-string rendering', { type: 'done', value: 1, rendered: true }],
    ['a call with a fractional id', { type: 'call', id: 1.5, global: 'tools', name: 'a', args: 1 }],
    ['a call with id 0', { type: 'call', id: 0, global: 'tools', name: 'a', args: 1 }],
    ['a call with a non-string name', { type: 'call', id: 1, global: 'tools', name: 7, args: 1 }],
    ['a call missing args', { type: 'call', id: 1, global: 'tools', name: 'a' }],
    ['an object with an accessor', Object.defineProperty({ type: 'ready' }, 'x', { get: () => 1, enumerable: true })],
    ['an object with a symbol key', { type: 'ready', [Symbol('s')]: 1 }],
    ['a class instance', new (class Msg { type = 'ready' })()],
  ])('rejects %s', (_what, data) => {
    expect(parseWorkerMessage(data).ok).toBe(false)
  })

  it('accepts the exact shapes, own keys only', () => {
    expect(parseWorkerMessage({ type: 'ready' })).toEqual({ ok: true, message: { type: 'ready' } })
    expect(parseWorkerMessage({ type: 'call', id: 3, global: 'tools', name: '__proto__', args: { a: 1 } })).toEqual({
      ok: true,
      message: { type: 'call', id: 3, global: 'tools', name: '__proto__', args: { a: 1 } },
    })
    expect(parseWorkerMessage({ type: 'done' })).toEqual({ ok: true, message: { type: 'done' } })
    const inherited = Object.create({ type: 'ready' }) as object
    expect(parseWorkerMessage(inherited).ok).toBe(false)
    const nullProto = Object.assign(Object.create(null) as object, { type: 'done', value: 2 })
    expect(parseWorkerMessage(nullProto)).toEqual({ ok: true, message: { type: 'done', value: 2 } })
  })
})

describe('CodeRunSession against a hostile peer', () => {
  it('sends start first, then ignores junk and keeps working', async () => {
    const h = harness({ a: async () => 'A' })
    for (const junk of [1, 'x', null, [], { type: 'nope' }, { type: 'reply', id: 1, ok: true, value: 1 }]) h.send(junk)
    h.send({ type: 'call', id: 1, global: 'tools', name: 'a', args: null })
    await h.tick()
    expect(h.received[0]).toMatchObject({ type: 'start', program: 'x', namespaces: [{ global: 'tools', names: ['a'] }] })
    expect(h.received[1]).toEqual({ type: 'reply', id: 1, ok: true, value: 'A' })
    h.send({ type: 'done', value: 7 })
    expect((await h.session.result).value).toBe(7)
    h.close()
  })

  it('rejects unknown names, never consults prototypes, and dispatches __proto__ as a plain name', async () => {
    const calls: string[] = []
    const h = harness({ ['__proto__']: async () => calls.push('proto'), plain: async () => calls.push('plain') })
    h.send({ type: 'call', id: 1, global: 'tools', name: 'toString', args: null })
    h.send({ type: 'call', id: 2, global: 'tools', name: 'constructor', args: null })
    h.send({ type: 'call', id: 3, global: 'Object', name: 'keys', args: null })
    h.send({ type: 'call', id: 4, global: 'tools', name: '__proto__', args: null })
    h.send({ type: 'call', id: 5, global: 'tools', name: 'hasOwnProperty', args: null })
    await h.tick()
    const replies = h.received.slice(1) as { id: number; ok: boolean; message?: string }[]
    expect(replies.filter((r) => !r.ok).map((r) => r.id).sort()).toEqual([1, 2, 3, 5])
    expect(replies.find((r) => r.id === 1)?.message).toMatch(/unknown binding tools\["toString"\]/)
    expect(calls).toEqual(['proto'])
    h.send({ type: 'done' })
    await h.session.result
    h.close()
  })

  it('drops duplicate and replayed ids instead of dispatching twice', async () => {
    let count = 0
    const h = harness({ a: async () => ++count })
    h.send({ type: 'call', id: 5, global: 'tools', name: 'a', args: 1 })
    h.send({ type: 'call', id: 5, global: 'tools', name: 'a', args: 1 })
    h.send({ type: 'call', id: 2, global: 'tools', name: 'a', args: 1 })
    await h.tick()
    expect(count).toBe(1)
    h.send({ type: 'done' })
    await h.session.result
    h.close()
  })

  it('enforces the log cap host-side whatever the peer claims', async () => {
    const h = harness({}, { maxLogBytes: 50 })
    for (let i = 0; i < 20; i++) h.send({ type: 'log', source: 'console', level: 'log', text: 'y'.repeat(10) })
    h.send({ type: 'log', source: 'console', level: 'log', text: 'z'.repeat(1_000_000) })
    h.send({ type: 'done', value: 'v' })
    const result = await h.session.result
    const kept = result.logs.map((l) => l.text.replace(/… \[log truncated.*$/, ''))
    expect(kept.join('\n').length).toBeLessThanOrEqual(50)
    expect(result.logs.at(-1)?.text).toMatch(/truncated: maxLogBytes of 50 bytes reached/)
    h.close()
  })

  it('settles once: a second done, late logs and late calls are dropped, replies after settlement never sent', async () => {
    let release!: (v: unknown) => void
    const slowCalls: number[] = []
    const h = harness({
      slow: () => {
        slowCalls.push(1)
        return new Promise((resolve) => {
          release = resolve
        })
      },
    })
    h.send({ type: 'call', id: 1, global: 'tools', name: 'slow', args: null })
    await h.tick()
    h.send({ type: 'done', value: 'first' })
    h.send({ type: 'done', value: 'second' })
    h.send({ type: 'log', source: 'console', level: 'log', text: 'late' })
    h.send({ type: 'call', id: 2, global: 'tools', name: 'slow', args: null })
    const result = await h.session.result
    expect(result.value).toBe('first')
    expect(result.logs).toEqual([])
    expect(h.session.signal.aborted).toBe(true)
    release('too late')
    await h.session.bindingsSettled()
    await h.tick()
    expect(slowCalls).toHaveLength(1)
    expect(h.received.filter((m) => (m as { type: string }).type === 'reply')).toEqual([])
    expect(h.terminations()).toBe(1)
    h.close()
  })

  it('a forged done with an oversized value is capped host-side', async () => {
    const h = harness({}, { maxValueBytes: 64 })
    h.send({ type: 'done', value: { rows: Array.from({ length: 500 }, (_, i) => i) } })
    const result = await h.session.result
    expect(typeof result.value).toBe('string')
    expect(result.value as string).toMatch(/value truncated: larger than maxValueBytes of 64 bytes/)
    h.close()
  })

  it('a non-cloneable binding result becomes a rejection, not a crash', async () => {
    const h = harness({ fn: async () => () => 1 })
    h.send({ type: 'call', id: 1, global: 'tools', name: 'fn', args: null })
    await h.tick()
    expect(h.received[1]).toMatchObject({ type: 'reply', id: 1, ok: false, message: expect.stringMatching(/cannot be sent/) })
    h.send({ type: 'done' })
    await h.session.result
    h.close()
  })
})
