/**
 * The HTTP layer's primitives as units, each answer exact: the bearer-token checks and the
 * auth options, the error answers (`HttpError`, its handler and reporter), reading a JSON
 * request body (media type, byte cap declared and actual, UTF-8, JSON, nesting), and the
 * session log hub. Runs in Node and workerd.
 */
import { describe, expect, it } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { resolveAuthOptions } from '../../../src/http/auth.js'
import { reportToConsole, toHttpError } from '../../../src/http/http-errors.js'
import {
  bearerToken,
  createSessionLogHub,
  DEFAULT_MAX_BODY_BYTES,
  digestsEqual,
  HttpError,
  httpErrorHandler,
  httpErrorResponse,
  httpErrorStatus,
  isJsonContentType,
  readJsonBody,
  sha256,
  timingSafeEqualText,
} from '../../../src/http/index.js'
import type { CodeLogEvent } from '../../../src/http/index.js'
import { MAX_BODY_VALUES, resolveMaxBodyBytes, unknownFieldMessage } from '../../../src/http/request-body.js'
import type { SessionLogEvent } from '../../../src/runtime-types.js'
import { createMemorySessionLog } from '../../../src/session-log.js'
import { TOKEN } from './fixtures.js'

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
    expect(await timingSafeEqualText('secret-token', 'secret-token')).toBe(true)
    expect(await timingSafeEqualText('secret-token', 'secret-tokeN')).toBe(false)
    expect(await timingSafeEqualText('secret', 'secret-token')).toBe(false)
  })

  it('compares SHA-256 digests byte by byte, and by length', async () => {
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
    // Every byte counts, the first and the last; so does the length, either way round.
    expect(digestsEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 3]))).toBe(true)
    expect(digestsEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 4]))).toBe(false)
    expect(digestsEqual(new Uint8Array([9, 2, 3]), new Uint8Array([1, 2, 3]))).toBe(false)
    expect(digestsEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2, 0]))).toBe(false)
    expect(digestsEqual(new Uint8Array([1, 2, 0]), new Uint8Array([1, 2]))).toBe(false)
    expect(digestsEqual(new Uint8Array(0), new Uint8Array(0))).toBe(true)
  })

  it('parses bearer credentials only: the token of a Bearer header, any case, surrounding spaces allowed', () => {
    expect(bearerToken('Bearer abc')).toBe('abc')
    expect(bearerToken('bearer   abc  ')).toBe('abc')
    expect(bearerToken('  bEaReR \t abc!#  ')).toBe('abc!#')
    for (const header of [undefined, null, '', 'Bearer', 'Bearer ', 'Basic abc', 'xBearer abc', 'Bearer a b', 'Bearer abc def', 'Bearerabc', 'Token Bearer abc']) {
      expect(bearerToken(header)).toBeUndefined()
    }
  })
})

describe('resolveAuthOptions', () => {
  const fail = (message: string): never => {
    throw new Error(message)
  }
  // The resolved options without the principal set (its own tests are in principals.test.ts).
  const auth = (options: object) => {
    try {
      const { notConfigured } = resolveAuthOptions(options, fail)
      return { notConfigured }
    } catch (error) {
      return (error as Error).message
    }
  }

  it('needs a token, auth: false or notConfigured', () => {
    expect(auth({})).toBe('a token is required (or pass auth: false explicitly to disable authentication)')
    expect(auth({ notConfigured: false })).toBe('a token is required (or pass auth: false explicitly to disable authentication)')
    expect(auth({ auth: false })).toEqual({ notConfigured: undefined })
    expect(auth({ token: TOKEN })).toEqual({ notConfigured: undefined })
  })

  it('turns notConfigured into the 503 message', () => {
    expect(auth({ notConfigured: true })).toEqual({ notConfigured: 'this server is not configured (no API token was provided)' })
    expect(auth({ notConfigured: 'set TOOLYARD_TOKEN' })).toEqual({ notConfigured: 'set TOOLYARD_TOKEN' })
    for (const notConfigured of ['', 0, 1, {}]) expect(auth({ notConfigured })).toBe('notConfigured must be a boolean or a non-empty string')
  })

  it('refuses auth values other than false, and token together with auth: false', () => {
    for (const value of [true, 'off', 0]) expect(auth({ token: TOKEN, auth: value })).toBe('auth accepts only false')
    expect(auth({ token: TOKEN, auth: false })).toBe('give either token or auth: false, not both')
  })

  it('takes 16 to 4096 printable ASCII characters as a token', () => {
    const bad = 'token must be 16–4096 printable ASCII characters without spaces'
    expect(auth({ token: 'x'.repeat(16) })).toEqual({ notConfigured: undefined })
    expect(auth({ token: '!'.repeat(4096) })).toEqual({ notConfigured: undefined })
    for (const token of ['x'.repeat(15), 'x'.repeat(4097), ` ${'x'.repeat(16)}`, `${'x'.repeat(16)} `, `${'x'.repeat(8)} ${'x'.repeat(8)}`, `${'x'.repeat(16)}é`, `é${'x'.repeat(16)}`, 12345678901234567890]) {
      expect(auth({ token })).toBe(bad)
    }
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

  it('map the runtime’s configuration failures and hide everything else', () => {
    const http = new HttpError('NOT_FOUND', 'x')
    expect(toHttpError(http)).toBe(http)
    expect(toHttpError(new ToolError('ASSEMBLY_FAILED', 'a listener threw'))).toMatchObject({ code: 'ASSEMBLY_FAILED', message: 'a listener threw', status: 409 })
    expect(toHttpError(new ToolError('DISPOSED', 'gone'))).toMatchObject({ code: 'SHUTTING_DOWN', message: 'the tool runtime was disposed', status: 503 })
    expect(toHttpError(new ToolError('INVALID_OPTIONS', 'x'))).toMatchObject({ code: 'INTERNAL', message: 'internal error', status: 500 })
    expect(toHttpError(Object.assign(new Error('x'), { code: 'ASSEMBLY_FAILED' }))).toMatchObject({ code: 'INTERNAL' })
    expect(toHttpError(Object.assign(new Error('x'), { code: 'DISPOSED' }))).toMatchObject({ code: 'INTERNAL' })
    expect(http.name).toBe('HttpError')
  })

  it('are reported only when internal, with the request', async () => {
    const reported: unknown[] = []
    const handler = httpErrorHandler((error, request) => reported.push([error, request.url]))
    const c = { req: { raw: new Request('http://x.local/v1/p') } } as never
    const boom = new Error('boom')
    const response = handler(boom, c) as Response
    expect(response.status).toBe(500)
    expect(reported).toEqual([[boom, 'http://x.local/v1/p']])
    handler(new HttpError('NOT_FOUND', 'n'), c)
    expect(reported).toHaveLength(1)
  })

  it('the console reporter names the method and path', () => {
    const lines: unknown[][] = []
    const original = console.error
    console.error = (...args: unknown[]) => lines.push(args)
    try {
      const error = new Error('e')
      reportToConsole(error, new Request('http://x.local/v1/run?q=1', { method: 'POST' }))
      expect(lines).toEqual([['toolyard: internal error answering POST /v1/run:', error]])
    } finally {
      console.error = original
    }
  })
})

describe('reading a JSON body', () => {
  const post = (body: BodyInit | null, headers: Record<string, string> = { 'Content-Type': 'application/json' }): Request =>
    new Request('http://x/', { method: 'POST', body, headers, ...(body instanceof ReadableStream ? { duplex: 'half' } : {}) } as RequestInit)

  /** What `readJsonBody` answers for `request`: `{ value }`, or the HttpError's code, status and message. */
  async function answer(request: Request, max = 64): Promise<unknown> {
    try {
      return { value: await readJsonBody(request, max) }
    } catch (error) {
      expect(error).toBeInstanceOf(HttpError)
      const e = error as HttpError
      return { code: e.code, status: e.status, message: e.message }
    }
  }

  it('a body whose stream fails while it is read (the client went away) is 400 INVALID_REQUEST, not an internal error', async () => {
    const broken = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"a":'))
      },
      pull(controller) {
        controller.error(new TypeError('socket closed'))
      },
    })
    expect(await answer(post(broken))).toEqual({ code: 'INVALID_REQUEST', status: 400, message: 'the request body did not arrive whole: the connection failed while it was read' })
  })

  /** A body stream of `chunks` that records whether it was cancelled. */
  function streamOf(chunks: Uint8Array[]) {
    const state = { cancelled: false, pulled: 0 }
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = chunks[state.pulled++]
        if (next === undefined) controller.close()
        else controller.enqueue(next)
      },
      cancel() {
        state.cancelled = true
      },
    })
    return { stream, state }
  }

  it('recognizes application/json with any case, spacing and parameters, and a UTF-8 charset only', () => {
    for (const header of ['application/json', ' Application/JSON ', 'Application/JSON; charset=UTF-8', 'application/json; charset=utf-8', 'application/json;charset=UTF8', 'application/json; charset="utf-8"', 'application/json; charset= "UTF-8" ', 'application/json; foo=bar', 'application/json; Charset=utf-8; v=1']) {
      expect([header, isJsonContentType(header)]).toEqual([header, true])
    }
  })

  it('refuses other types, other charsets, and a charset without a value', () => {
    for (const header of [null, undefined, '', 'text/plain', 'application/jsonx', 'application/jsonp', 'application/x-www-form-urlencoded', 'application/json-patch+json', 'application/json; charset=latin1', 'application/json; charset=ut"f-8', 'application/json; charset', 'application/json; foo=bar; charset=utf-16']) {
      expect([header, isJsonContentType(header)]).toEqual([header, false])
    }
  })

  it('caps a body at 1 MiB by default and keeps a positive integer cap', () => {
    const fail = (message: string): never => {
      throw new Error(message)
    }
    expect(DEFAULT_MAX_BODY_BYTES).toBe(1_048_576)
    expect(resolveMaxBodyBytes(undefined, fail)).toBe(1_048_576)
    expect(resolveMaxBodyBytes(null, fail)).toBe(1_048_576)
    expect(resolveMaxBodyBytes(7, fail)).toBe(7)
    expect(() => resolveMaxBodyBytes(0, fail)).toThrow('maxBodyBytes must be a positive integer')
  })

  it('parses a well-formed body, a UTF-8 BOM dropped', async () => {
    expect(await readJsonBody(post('{"a":[1,2]}'), 100)).toEqual({ a: [1, 2] })
    expect(await answer(post('{"a":[1,"é"]}'))).toEqual({ value: { a: [1, 'é'] } })
    expect(await answer(post(new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('{"b":2}')])))).toEqual({ value: { b: 2 } })
  })

  it('refuses a body nesting deeper than 128 levels with 400 (its answer would overflow recursive code); 128 is accepted', async () => {
    const nest = (levels: number) => '['.repeat(levels) + ']'.repeat(levels)
    expect(await answer(post(nest(128)), 1_000)).toMatchObject({ value: expect.any(Array) })
    expect(await answer(post(nest(129)), 1_000)).toEqual({ code: 'INVALID_JSON_BODY', status: 400, message: 'the request body nests deeper than 128 levels' })
    expect(await answer(post(`{"arguments":${nest(500_000)}}`), 2 * 1024 * 1024)).toEqual({ code: 'INVALID_JSON_BODY', status: 400, message: 'the request body nests deeper than 128 levels' })
  })

  it('refuses a body holding more than 100,000 JSON values with 400 before parsing it (the host parses, checks and snapshots each; 1 MiB of `{},` is 350,000); 100,000 is accepted', async () => {
    const values = (count: number) => '[' + '0,'.repeat(count - 2) + '0]'
    expect(MAX_BODY_VALUES).toBe(100_000)
    expect(await answer(post(values(100_000)), 1_048_576)).toMatchObject({ value: expect.any(Array) })
    const refused = { code: 'INVALID_JSON_BODY', status: 400, message: 'the request body holds more than 100000 JSON values (object keys count); send fewer values per request, or data as one string' }
    expect(await answer(post(values(100_001)), 1_048_576)).toEqual(refused)
    expect(await answer(post('{"arguments":{"x":[' + '{},'.repeat(349_000) + '{}]}}'), 1_048_576)).toEqual(refused)
    expect(await answer(post('{' + Array.from({ length: 50_001 }, (_, i) => `"k${i}":0`).join(',') + '}'), 1_048_576)).toEqual(refused)
    // Text that is not JSON is refused as such, within the same bound.
    expect(await answer(post('[' + '0,'.repeat(200_000)), 1_048_576)).toEqual(refused)
  })

  it('refuses another media type with 415', async () => {
    expect(await answer(post('{}', { 'Content-Type': 'text/plain' }))).toEqual({ code: 'UNSUPPORTED_MEDIA_TYPE', status: 415, message: 'the request body must be application/json' })
  })

  it('accepts exactly the cap and refuses one byte more while reading, cancelling the stream', async () => {
    const exact = '"' + 'x'.repeat(8) + '"'
    expect(await answer(post(exact), 10)).toEqual({ value: 'x'.repeat(8) })
    const unread = Array.from({ length: 8 }, () => new TextEncoder().encode('never read'))
    const over = streamOf([new TextEncoder().encode('"xxxx'), new TextEncoder().encode('xxxxx"'), ...unread])
    expect(await answer(post(over.stream), 10)).toEqual({ code: 'PAYLOAD_TOO_LARGE', status: 413, message: 'the request body exceeds 10 bytes' })
    expect(over.state.cancelled).toBe(true)
    // It stops at the chunk that crosses the cap. Node's Request hands chunks through as
    // they are read; workerd's pulls one more chunk ahead into its own body stream.
    expect(over.state.pulled).toBeLessThanOrEqual(3)
  })

  it('trusts a declared Content-Length only to refuse early, as digits (spaces trimmed)', async () => {
    const declared = (length: string, body = '{"k":1}') => answer(post(body, { 'Content-Type': 'application/json', 'Content-Length': length }), 10)
    const tooLarge = { code: 'PAYLOAD_TOO_LARGE', status: 413, message: 'the request body exceeds 10 bytes' }
    expect(await declared('11')).toEqual(tooLarge)
    expect(await declared(' 11 ')).toEqual(tooLarge)
    expect(await declared('10')).toEqual({ value: { k: 1 } })
    // Not a plain decimal: ignored, the bytes decide.
    expect(await declared('1e3')).toEqual({ value: { k: 1 } })
    expect(await declared('0x20')).toEqual({ value: { k: 1 } })
    expect(await declared('-20')).toEqual({ value: { k: 1 } })
  })

  it('cancels the body it refuses on the declared length', async () => {
    const body = streamOf([new TextEncoder().encode('{}')])
    const request = post(body.stream, { 'Content-Type': 'application/json', 'Content-Length': '999' })
    expect(await answer(request, 10)).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' })
    expect(body.state.cancelled).toBe(true)
  })

  it('refuses bytes that are not UTF-8, even when the replacement would be valid JSON', async () => {
    expect(await answer(post(new Uint8Array([0x22, 0xff, 0x22])))).toEqual({ code: 'INVALID_JSON_BODY', status: 400, message: 'the request body is not valid UTF-8' })
  })

  it('refuses text that is not JSON, quoting the parser, and an empty or absent body', async () => {
    const parserMessage = (text: string) => {
      try {
        JSON.parse(text)
      } catch (error) {
        return (error as Error).message
      }
      return ''
    }
    expect(await answer(post('{"a":'))).toEqual({ code: 'INVALID_JSON_BODY', status: 400, message: `the request body is not valid JSON: ${parserMessage('{"a":')}` })
    expect(await answer(post(''))).toEqual({ code: 'INVALID_JSON_BODY', status: 400, message: `the request body is not valid JSON: ${parserMessage('')}` })
    expect(await answer(post(null))).toEqual({ code: 'INVALID_JSON_BODY', status: 400, message: `the request body is not valid JSON: ${parserMessage('')}` })
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

describe('unknown body fields: the message names the first one and the expected field it most likely meant', () => {
  const FIELDS = ['arguments', 'callId', 'agent']
  const message = (key: string, allowed: readonly string[] = FIELDS) => unknownFieldMessage({ [key]: 1 }, allowed, 'the body')
  const expected = (allowed: readonly string[] = FIELDS) => `expected: ${allowed.join(', ')})`

  it('nothing to say when every key is expected; else the first unknown key, in key order', () => {
    expect(unknownFieldMessage({}, FIELDS, 'the body')).toBeUndefined()
    expect(unknownFieldMessage({ arguments: 1, agent: 2 }, FIELDS, 'the body')).toBeUndefined()
    expect(unknownFieldMessage({ agent: 1, zz: 2, yy: 3 }, FIELDS, 'the body')).toBe(`unknown field "zz" in the body (${expected()}`)
  })

  it('an abbreviation of an expected field (same first letter, its letters in order, at least 3 of them) suggests it', () => {
    expect(message('args')).toBe(`unknown field "args" in the body (did you mean "arguments"? ${expected()}`)
    expect(message('arg')).toBe(`unknown field "arg" in the body (did you mean "arguments"? ${expected()}`)
    // Two letters are too few; another first letter, or a letter it lacks, is no abbreviation (and too far to be a typo).
    expect(message('ar')).toBe(`unknown field "ar" in the body (${expected()}`)
    expect(message('rgs')).toBe(`unknown field "rgs" in the body (${expected()}`)
    expect(message('agz')).toBe(`unknown field "agz" in the body (${expected()}`)
    expect(message('cde', ['code'])).toBe(`unknown field "cde" in the body (did you mean "code"? ${expected(['code'])}`)
  })

  it('a field at most two edits away (substituted, inserted, deleted letters; any case) is suggested, the first of the closest; three edits are not', () => {
    expect(message('xgent')).toBe(`unknown field "xgent" in the body (did you mean "agent"? ${expected()}`)
    expect(message('xyent')).toBe(`unknown field "xyent" in the body (did you mean "agent"? ${expected()}`)
    expect(message('xyznt')).toBe(`unknown field "xyznt" in the body (${expected()}`)
    expect(message('agentt')).toBe(`unknown field "agentt" in the body (did you mean "agent"? ${expected()}`)
    expect(message('gent')).toBe(`unknown field "gent" in the body (did you mean "agent"? ${expected()}`)
    expect(message('agnet')).toBe(`unknown field "agnet" in the body (did you mean "agent"? ${expected()}`)
    expect(message('abcd', ['ab'])).toBe(`unknown field "abcd" in the body (did you mean "ab"? ${expected(['ab'])}`)
    expect(message('ab', ['xy'])).toBe(`unknown field "ab" in the body (did you mean "xy"? ${expected(['xy'])}`)
    expect(message('callid')).toBe(`unknown field "callid" in the body (did you mean "callId"? ${expected()}`)
    expect(message('CALLID')).toBe(`unknown field "CALLID" in the body (did you mean "callId"? ${expected()}`)
    expect(message('cone', ['code', 'mode', 'node'])).toBe(`unknown field "cone" in the body (did you mean "code"? ${expected(['code', 'mode', 'node'])}`)
    expect(message('kode', ['mode', 'code'])).toBe(`unknown field "kode" in the body (did you mean "mode"? ${expected(['mode', 'code'])}`)
  })

  it('an empty key gets no suggestion; a key longer than 64 characters is cut in the message and gets none either', () => {
    expect(message('', ['id', 'to'])).toBe(`unknown field "" in the body (${expected(['id', 'to'])}`)
    const field = 'a'.repeat(64)
    expect(message(`b${'a'.repeat(63)}`, [field])).toBe(`unknown field "b${'a'.repeat(63)}" in the body (did you mean "${field}"? ${expected([field])}`)
    expect(message('a'.repeat(65), [field])).toBe(`unknown field "${field}"… (65 characters) in the body (${expected([field])}`)
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

  const log = (parentCallId: string): CodeLogEvent => ({ type: 'tool/code-log', parentCallId, entry: { source: 'console', level: 'log', text: parentCallId } })

  it('forwards before delivering, still delivers when forwarding throws (and reports the throw), and contains a subscriber’s throw', () => {
    const order: string[] = []
    const seen: string[] = []
    const hub = createSessionLogHub({
      forward: {
        append: () => {
          order.push('forward')
          throw new Error('sink down')
        },
      },
    })
    hub.subscribe(() => {
      order.push('throwing')
      throw new Error('listener bug')
    })
    hub.subscribe((e) => {
      order.push('next')
      seen.push(e.parentCallId)
    })
    expect(() => hub.append(start('x', 1))).toThrow('sink down')
    expect(order).toEqual(['forward', 'throwing', 'next'])
    expect(seen).toEqual(['x'])
  })

  it('keeps delivering to the other subscribers of a run when one unsubscribes', () => {
    const hub = createSessionLogHub()
    const got: string[] = []
    const first = hub.subscribe(() => got.push('first'), { parentCallId: 'p' })
    hub.subscribe(() => got.push('second'), { parentCallId: 'p' })
    first()
    first()
    hub.appendLog(log('p'))
    expect(got).toEqual(['second'])
    expect(hub.subscriberCount).toBe(1)
  })

  it('counts runs with live subscriptions (not the every-event ones); a run’s entry goes with its last subscription', () => {
    const hub = createSessionLogHub()
    const offAll = hub.subscribe(() => {})
    expect(hub.runCount).toBe(0)
    const offP1 = hub.subscribe(() => {}, { parentCallId: 'p' })
    const offP2 = hub.subscribe(() => {}, { parentCallId: 'p' })
    const offQ = hub.subscribe(() => {}, { parentCallId: 'q' })
    expect(hub.runCount).toBe(2)
    expect(hub.subscriberCount).toBe(4)
    offP1()
    expect(hub.runCount).toBe(2)
    offP2()
    offP2()
    expect(hub.runCount).toBe(1)
    offQ()
    offAll()
    expect(hub.runCount).toBe(0)
    expect(hub.subscriberCount).toBe(0)
  })

  it('the same listener subscribed twice is two subscriptions: it hears each event twice until both are gone', () => {
    const hub = createSessionLogHub()
    const got: string[] = []
    const listener = (e: { parentCallId: string }): void => void got.push(e.parentCallId)
    const one = hub.subscribe(listener, { parentCallId: 'p' })
    hub.subscribe(listener, { parentCallId: 'p' })
    hub.appendLog(log('p'))
    expect(got).toEqual(['p', 'p'])
    one()
    hub.appendLog(log('p'))
    expect(got).toEqual(['p', 'p', 'p'])
    expect(hub.subscriberCount).toBe(1)
  })

  it('a run subscribed again after its last subscriber left still gets its events', () => {
    const hub = createSessionLogHub()
    const got: string[] = []
    hub.subscribe(() => got.push('a'), { parentCallId: 'p' })()
    hub.subscribe(() => got.push('b'), { parentCallId: 'p' })
    hub.appendLog(log('p'))
    hub.appendLog(log('q'))
    expect(got).toEqual(['b'])
  })
})
