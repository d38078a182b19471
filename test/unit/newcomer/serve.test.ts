/**
 * `serve()` regressions: failures that happen before the app sees a request (a Host
 * header the adapter cannot parse, bytes that are not HTTP) used to answer an empty 400
 * instead of the documented `{ "error": { "code", "message" } }` body.
 */
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serve } from '../../../platforms/node/index.js'
import type { ServedApp } from '../../../platforms/node/index.js'
import { createFixture } from '../http/fixtures.js'

/** Sends raw bytes and collects everything the server answers until it closes. */
function raw(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let answer = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => (answer += chunk))
    socket.on('end', () => resolve(answer))
    socket.on('close', () => resolve(answer))
    socket.on('error', reject)
    socket.write(bytes)
  })
}

function parse(answer: string): { status: number; headers: string; body: unknown } {
  const split = answer.indexOf('\r\n\r\n')
  const head = answer.slice(0, split)
  let body = answer.slice(split + 4)
  if (/transfer-encoding: chunked/i.test(head)) {
    // One chunk is enough for these small bodies.
    const lines = body.split('\r\n')
    body = lines[1] ?? ''
  }
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), headers: head, body: JSON.parse(body) as unknown }
}

describe('serve(): every answer has the documented error body', () => {
  const fixture = createFixture()
  let server: ServedApp

  beforeAll(async () => {
    server = await serve(fixture.app, { port: 0 })
  })
  afterAll(async () => {
    await server.close()
    await fixture.runtime.dispose()
  })

  it.each([
    ['an empty Host', 'Host: '],
    ['a Host with userinfo', 'Host: a@127.0.0.1'],
    ['a Host with a path', 'Host: 127.0.0.1/x'],
  ])('answers %s with 421 FORBIDDEN_HOST and a JSON body', async (_label, hostLine) => {
    const port = server.port
    const answer = await raw(port, `GET /v1/health HTTP/1.1\r\n${hostLine}${hostLine.endsWith('Host: ') ? '' : `:${port}`}\r\nConnection: close\r\n\r\n`)
    const { status, headers, body } = parse(answer)
    expect(status).toBe(421)
    expect(headers).toMatch(/content-type: application\/json/i)
    expect(body).toEqual({ error: { code: 'FORBIDDEN_HOST', message: expect.any(String) } })
  })

  it('answers an HTTP/1.1 request without any Host header with 421 FORBIDDEN_HOST (not Node’s empty 400)', async () => {
    const { status, body } = parse(await raw(server.port, 'GET /v1/health HTTP/1.1\r\nConnection: close\r\n\r\n'))
    expect(status).toBe(421)
    expect(body).toEqual({ error: { code: 'FORBIDDEN_HOST', message: expect.any(String) } })
  })

  it('answers a request target with a backslash with 404 NOT_FOUND and a JSON body', async () => {
    const { status, body } = parse(await raw(server.port, `GET /v1\\health HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nConnection: close\r\n\r\n`))
    expect(status).toBe(404)
    expect(body).toEqual({ error: { code: 'NOT_FOUND', message: expect.any(String) } })
  })

  it('answers bytes that are not HTTP with 400 INVALID_REQUEST and a JSON body', async () => {
    const answer = await raw(server.port, 'GARBAGE\r\n\r\n')
    const { status, body } = parse(answer)
    expect(status).toBe(400)
    expect(body).toEqual({ error: { code: 'INVALID_REQUEST', message: 'the request is not well-formed HTTP' } })
  })

  it('answers oversized headers with 431 REQUEST_HEADERS_TOO_LARGE and a JSON body', async () => {
    const answer = await raw(server.port, `GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nX-Big: ${'a'.repeat(40_000)}\r\n\r\n`)
    const { status, body } = parse(answer)
    expect(status).toBe(431)
    expect(body).toEqual({ error: { code: 'REQUEST_HEADERS_TOO_LARGE', message: expect.any(String) } })
  })

  it('still serves well-formed requests on the same server', async () => {
    const response = await fetch(`${server.url}/v1/health`)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ status: 'ok' })
  })
})
