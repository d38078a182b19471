/**
 * Reading a JSON request body as a unit: the media type it accepts, the byte cap (declared
 * and actual), the UTF-8 and JSON checks, with the exact answers.
 */
import { describe, expect, it } from 'vitest'
import { HttpError } from '../../../src/http/http-errors.js'
import { DEFAULT_MAX_BODY_BYTES, isJsonContentType, readJsonBody, resolveMaxBodyBytes } from '../../../src/http/request-body.js'

const post = (body: BodyInit | null, headers: Record<string, string> = { 'Content-Type': 'application/json' }) =>
  new Request('http://test.local/v1/x', { method: 'POST', body, headers, ...(body instanceof ReadableStream ? { duplex: 'half' } : {}) } as RequestInit)

async function answer(request: Request, max = 64): Promise<unknown> {
  try {
    return { value: await readJsonBody(request, max) }
  } catch (error) {
    expect(error).toBeInstanceOf(HttpError)
    const e = error as HttpError
    return { code: e.code, status: e.status, message: e.message }
  }
}

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

describe('isJsonContentType', () => {
  it('accepts application/json with any case, spacing and parameters, and a UTF-8 charset only', () => {
    for (const header of ['application/json', ' Application/JSON ', 'application/json; charset=utf-8', 'application/json;charset=UTF8', 'application/json; charset="utf-8"', 'application/json; charset= "UTF-8" ', 'application/json; foo=bar', 'application/json; Charset=utf-8; v=1']) {
      expect([header, isJsonContentType(header)]).toEqual([header, true])
    }
  })

  it('refuses other types, other charsets, and a charset without a value', () => {
    for (const header of [null, undefined, '', 'text/plain', 'application/jsonx', 'application/json-patch+json', 'application/json; charset=latin1', 'application/json; charset=ut"f-8', 'application/json; charset', 'application/json; foo=bar; charset=utf-16']) {
      expect([header, isJsonContentType(header)]).toEqual([header, false])
    }
  })
})

describe('resolveMaxBodyBytes', () => {
  it('defaults to 1 MiB and keeps a positive integer', () => {
    const fail = (message: string): never => {
      throw new Error(message)
    }
    expect(DEFAULT_MAX_BODY_BYTES).toBe(1_048_576)
    expect(resolveMaxBodyBytes(undefined, fail)).toBe(1_048_576)
    expect(resolveMaxBodyBytes(null, fail)).toBe(1_048_576)
    expect(resolveMaxBodyBytes(7, fail)).toBe(7)
    expect(() => resolveMaxBodyBytes(0, fail)).toThrow('maxBodyBytes must be a positive integer')
  })
})

describe('readJsonBody', () => {
  it('parses a JSON body, a UTF-8 BOM dropped', async () => {
    expect(await answer(post('{"a":[1,"é"]}'))).toEqual({ value: { a: [1, 'é'] } })
    expect(await answer(post(new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('{"b":2}')])))).toEqual({ value: { b: 2 } })
  })

  it('refuses a body nesting deeper than 128 levels with 400 (its answer would overflow recursive code); 128 is accepted', async () => {
    const nest = (levels: number) => '['.repeat(levels) + ']'.repeat(levels)
    expect(await answer(post(nest(128)), 1_000)).toMatchObject({ value: expect.any(Array) })
    expect(await answer(post(nest(129)), 1_000)).toEqual({ code: 'INVALID_JSON_BODY', status: 400, message: 'the request body nests deeper than 128 levels' })
    expect(await answer(post(`{"arguments":${nest(500_000)}}`), 2 * 1024 * 1024)).toEqual({ code: 'INVALID_JSON_BODY', status: 400, message: 'the request body nests deeper than 128 levels' })
  })

  it('refuses another media type with 415', async () => {
    expect(await answer(post('{}', { 'Content-Type': 'text/plain' }))).toEqual({ code: 'UNSUPPORTED_MEDIA_TYPE', status: 415, message: 'the request body must be application/json' })
  })

  it('accepts exactly the cap and refuses one byte more while reading, cancelling the stream', async () => {
    const exact = '"' + 'x'.repeat(8) + '"'
    expect(await answer(post(exact), 10)).toEqual({ value: 'x'.repeat(8) })
    const over = streamOf([new TextEncoder().encode('"xxxx'), new TextEncoder().encode('xxxxx"'), new TextEncoder().encode('never read')])
    expect(await answer(post(over.stream), 10)).toEqual({ code: 'PAYLOAD_TOO_LARGE', status: 413, message: 'the request body exceeds 10 bytes' })
    expect(over.state.cancelled).toBe(true)
    expect(over.state.pulled).toBeLessThan(3)
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
})
