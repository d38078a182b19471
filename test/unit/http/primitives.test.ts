import { describe, expect, it } from 'vitest'
import {
  bearerToken,
  createSessionLogHub,
  digestsEqual,
  HttpError,
  httpErrorResponse,
  httpErrorStatus,
  isJsonContentType,
  readJsonBody,
  sha256,
  timingSafeEqualText,
} from '../../../src/http/index.js'
import type { SessionLogEvent } from '../../../src/runtime-types.js'
import { createMemorySessionLog } from '../../../src/session-log.js'

describe('constant-time token comparison', () => {
  it('accepts equal strings and rejects any difference (length, prefix, last byte, unicode)', async () => {
    const secret = 'a'.repeat(31) + 'b'
    expect(await timingSafeEqualText(secret, secret)).toBe(true)
    expect(await timingSafeEqualText(secret, 'a'.repeat(32))).toBe(false)
    expect(await timingSafeEqualText(secret, secret.slice(0, -1))).toBe(false)
    expect(await timingSafeEqualText(secret, `${secret}b`)).toBe(false)
    expect(await timingSafeEqualText('', secret)).toBe(false)
    expect(await timingSafeEqualText('', '')).toBe(true)
    expect(await timingSafeEqualText('é', 'e\u0301')).toBe(false)
  })

  it('compares SHA-256 digests byte by byte', async () => {
    const a = await sha256('token-a')
    const b = await sha256('token-b')
    expect(a).toHaveLength(32)
    expect(digestsEqual(a, a.slice())).toBe(true)
    expect(digestsEqual(a, b)).toBe(false)
    expect(digestsEqual(a, a.slice(0, 31))).toBe(false)
    // A difference in the last byte only still counts (no early exit that stops short).
    const c = a.slice()
    c[31] = (c[31]! + 1) & 0xff
    expect(digestsEqual(a, c)).toBe(false)
    // Known vector: SHA-256("abc").
    const hex = [...(await sha256('abc'))].map((x) => x.toString(16).padStart(2, '0')).join('')
    expect(hex).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
  })

  it('parses bearer credentials only', () => {
    expect(bearerToken('Bearer abc')).toBe('abc')
    expect(bearerToken('bearer   abc  ')).toBe('abc')
    expect(bearerToken('Basic abc')).toBeUndefined()
    expect(bearerToken('Bearer')).toBeUndefined()
    expect(bearerToken('Bearer a b')).toBeUndefined()
    expect(bearerToken(null)).toBeUndefined()
  })
})

describe('error responses', () => {
  it('have one shape and the documented status per code', async () => {
    const response = httpErrorResponse('PAYLOAD_TOO_LARGE', 'too big', { 'X-Extra': '1' })
    expect(response.status).toBe(413)
    expect(response.headers.get('Content-Type')).toMatch(/^application\/json/)
    expect(response.headers.get('X-Extra')).toBe('1')
    expect(await response.json()).toEqual({ error: { code: 'PAYLOAD_TOO_LARGE', message: 'too big' } })
    expect(httpErrorStatus.UNAUTHORIZED).toBe(401)
    expect(httpErrorStatus.FORBIDDEN_HOST).toBe(421)
    expect(httpErrorStatus.UNKNOWN_TOOL).toBe(404)
  })
})

describe('reading a JSON body', () => {
  const post = (body: BodyInit | null, headers: Record<string, string> = { 'Content-Type': 'application/json' }): Request =>
    new Request('http://x/', { method: 'POST', body, headers, ...(body instanceof ReadableStream ? { duplex: 'half' } : {}) } as RequestInit)

  it('recognizes application/json with a UTF-8 charset only', () => {
    expect(isJsonContentType('application/json')).toBe(true)
    expect(isJsonContentType('Application/JSON; charset=UTF-8')).toBe(true)
    expect(isJsonContentType('application/json; charset="utf-8"')).toBe(true)
    expect(isJsonContentType('application/json; charset=latin1')).toBe(false)
    expect(isJsonContentType('text/plain')).toBe(false)
    expect(isJsonContentType('application/jsonp')).toBe(false)
    expect(isJsonContentType('application/x-www-form-urlencoded')).toBe(false)
    expect(isJsonContentType(undefined)).toBe(false)
  })

  it('parses a well-formed body', async () => {
    expect(await readJsonBody(post('{"a":[1,2]}'), 100)).toEqual({ a: [1, 2] })
  })

  /** The status and code `readJsonBody` throws for `request`, or `[200, '']` when it parses. */
  const outcomeOf = async (request: Request, max = 100): Promise<[number, string]> => {
    try {
      await readJsonBody(request, max)
      return [200, '']
    } catch (error) {
      if (!(error instanceof HttpError)) throw error
      const body = (await error.getResponse().json()) as { error: { code: string } }
      return [error.status, body.error.code]
    }
  }

  it('answers 415, 400 (syntax, empty, bad UTF-8) and 413', async () => {
    expect(await outcomeOf(post('{}', { 'Content-Type': 'text/plain' }))).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE'])
    expect(await outcomeOf(post('{"a":'))).toEqual([400, 'INVALID_JSON_BODY'])
    expect(await outcomeOf(post(''))).toEqual([400, 'INVALID_JSON_BODY'])
    expect(await outcomeOf(post(new Uint8Array([0x7b, 0xff, 0x7d])))).toEqual([400, 'INVALID_JSON_BODY'])
    expect(await outcomeOf(post(JSON.stringify({ a: 'x'.repeat(200) })))).toEqual([413, 'PAYLOAD_TOO_LARGE'])
  })

  it('accepts a body of exactly the cap and refuses one byte more, streamed or declared', async () => {
    const exactly = `"${'x'.repeat(98)}"` // 100 bytes of JSON
    expect(await outcomeOf(post(exactly))).toEqual([200, ''])
    expect(await outcomeOf(post(`${exactly} `))).toEqual([413, 'PAYLOAD_TOO_LARGE'])
    const chunked = (text: string) =>
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (const ch of text) controller.enqueue(new TextEncoder().encode(ch))
          controller.close()
        },
      })
    expect(await outcomeOf(post(chunked(exactly)))).toEqual([200, ''])
    expect(await outcomeOf(post(chunked(`${exactly} `)))).toEqual([413, 'PAYLOAD_TOO_LARGE'])
  })

  it('enforces the cap while reading, whatever Content-Length claims', async () => {
    let pulled = 0
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++
        controller.enqueue(new Uint8Array(64).fill(0x20))
      },
    })
    expect(await outcomeOf(post(endless, { 'Content-Type': 'application/json', 'Content-Length': '2' }), 1000)).toEqual([413, 'PAYLOAD_TOO_LARGE'])
    // It stopped reading soon after the cap instead of draining the stream.
    expect(pulled).toBeLessThan(40)
  })

  it('rejects a declared Content-Length over the cap before reading', async () => {
    let pulled = 0
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++
        controller.enqueue(new TextEncoder().encode('{}'))
        controller.close()
      },
    })
    expect(await outcomeOf(post(body, { 'Content-Type': 'application/json', 'Content-Length': '5000' }))).toEqual([413, 'PAYLOAD_TOO_LARGE'])
    // The Request constructor may pull once to start the stream; the reader never did.
    expect(pulled).toBeLessThanOrEqual(1)
  })
})

describe('session log hub', () => {
  const start = (parent: string, n: number): SessionLogEvent => ({
    type: 'tool/code-dispatch-start',
    parentCallId: parent,
    subCallId: `${parent}:code:${n}`,
    name: 't',
    arguments: {},
    startedAt: 0,
  })

  it('forwards every event and fans out to matching subscribers only', () => {
    const memory = createMemorySessionLog()
    const hub = createSessionLogHub({ forward: memory })
    const all: string[] = []
    const onlyA: string[] = []
    const offAll = hub.subscribe((e) => all.push(e.parentCallId))
    const offA = hub.subscribe((e) => onlyA.push(e.type === 'tool/code-log' ? 'log' : e.subCallId), { parentCallId: 'a' })
    expect(hub.subscriberCount).toBe(2)
    hub.append(start('a', 1))
    hub.append(start('b', 1))
    hub.appendLog({ type: 'tool/code-log', parentCallId: 'a', entry: { source: 'console', level: 'log', text: 'hi' } })
    expect(all).toEqual(['a', 'b', 'a'])
    expect(onlyA).toEqual(['a:code:1', 'log'])
    // Console lines are live-only; the durable log keeps the session events.
    expect(memory.events.map((e) => e.subCallId)).toEqual(['a:code:1', 'b:code:1'])
    offA()
    offA()
    offAll()
    expect(hub.subscriberCount).toBe(0)
    hub.append(start('a', 2))
    expect(onlyA).toHaveLength(2)
  })

  it('contains a throwing subscriber and survives unsubscribe during delivery', () => {
    const hub = createSessionLogHub()
    const seen: number[] = []
    let off2 = (): void => {}
    hub.subscribe(() => {
      off2()
      throw new Error('boom')
    })
    off2 = hub.subscribe(() => seen.push(2))
    hub.subscribe(() => seen.push(3), { parentCallId: 'p' })
    expect(() => hub.append(start('p', 1))).not.toThrow()
    expect(seen).toEqual([2, 3])
    hub.append(start('p', 2))
    expect(seen).toEqual([2, 3, 3])
  })

  it('still delivers when the forward sink throws, and reports the throw', () => {
    const hub = createSessionLogHub({
      forward: {
        append() {
          throw new Error('disk full')
        },
      },
    })
    const seen: string[] = []
    hub.subscribe((e) => seen.push(e.parentCallId))
    expect(() => hub.append(start('x', 1))).toThrow('disk full')
    expect(seen).toEqual(['x'])
  })
})
