import { request as httpRequest } from 'node:http'
import { connect } from 'node:net'
import type { Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createNodeWorkerRuntime, serve } from '../../../platforms/node/index.js'
import type { ServedApp } from '../../../platforms/node/index.js'
import type { ToolExecutionResult } from '../../../src/types.js'
import { AUTH, DOCUMENTED_BODY_LIMIT, JSON_AUTH, createFixture, echoOfBytes, errorOf, parseSse } from './fixtures.js'
import { until } from '../../support/poll.js'

/** A raw request, so the Host header can be anything (fetch does not let us set it). */
function rawGet(port: number, path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method: 'GET', headers }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (body += chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('serve() over loopback', () => {
  const codeRuntime = createNodeWorkerRuntime({ prespawn: 2 })
  const fixture = createFixture({ mode: 'both', codeRuntime })
  let server: ServedApp

  beforeAll(async () => {
    server = await serve(fixture.app, { port: 0, allowedHosts: ['toolyard.internal:8080'] })
  })
  afterAll(async () => {
    await server.close()
    await fixture.runtime.dispose()
    await codeRuntime.dispose()
  })

  it('listens on 127.0.0.1 and serves the app', async () => {
    expect(server.port).toBeGreaterThan(0)
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`)
    const response = await fetch(`${server.url}/v1/tools`, { headers: AUTH })
    expect(response.status).toBe(200)
    const viaLocalhost = await rawGet(server.port, '/v1/health', { Host: `localhost:${server.port}` })
    expect(viaLocalhost.status).toBe(200)
    const viaAllowed = await rawGet(server.port, '/v1/health', { Host: 'toolyard.internal:8080' })
    expect(viaAllowed.status).toBe(200)
  })

  it('refuses a foreign Host header (DNS rebinding) with 421 FORBIDDEN_HOST', async () => {
    for (const host of ['evil.example', `evil.example:${server.port}`, `127.0.0.1:${server.port + 1}`, 'localhost', '127.0.0.1.evil.example']) {
      const response = await rawGet(server.port, '/v1/health', { Host: host })
      expect(response.status, host).toBe(421)
      expect(JSON.parse(response.body)).toEqual({ error: { code: 'FORBIDDEN_HOST', message: expect.any(String) } })
    }
    // Even with the right token: the check comes first.
    const withToken = await rawGet(server.port, '/v1/tools', { ...AUTH, Host: 'evil.example' })
    expect(withToken.status).toBe(421)
  })

  it('streams a run over a real socket and aborts it when the client disconnects', async () => {
    const streamed = await fetch(`${server.url}/v1/run`, {
      method: 'POST',
      headers: { ...JSON_AUTH, Accept: 'text/event-stream' },
      body: JSON.stringify({ code: 'const r = await tools.echo({ text: "x" }); return r.text', description: 'one call' }),
    })
    const events = parseSse(await streamed.text())
    expect(events.map((e) => e.event)).toEqual(['start', 'dispatch-start', 'dispatch', 'result'])

    fixture.wait.reset()
    const client = new AbortController()
    const pending = fetch(`${server.url}/v1/run`, {
      method: 'POST',
      headers: JSON_AUTH,
      body: JSON.stringify({ code: 'await tools.wait({}); return 1', description: 'hang' }),
      signal: client.signal,
    })
    await fixture.wait.started
    const before = fixture.wait.aborted
    client.abort()
    await expect(pending).rejects.toThrow()
    // The server noticed the closed connection and aborted the run's sub-call.
    await until(() => fixture.wait.aborted > before)
    await until(() => fixture.inFlight === 0)
  })

  it('reads a body of exactly the default limit and refuses one byte more with 413, declared or chunked', async () => {
    const execute = (body: BodyInit) =>
      fetch(`${server.url}/v1/tools/echo/execute`, { method: 'POST', headers: JSON_AUTH, body, ...(body instanceof ReadableStream ? { duplex: 'half' } : {}) } as RequestInit)
    // fetch sends a string with its Content-Length: the declared size is checked before reading.
    const exactly = await execute(echoOfBytes(DOCUMENTED_BODY_LIMIT))
    expect(exactly.status).toBe(200)
    expect(((await exactly.json()) as ToolExecutionResult).isError).toBe(false)
    const over = await execute(echoOfBytes(DOCUMENTED_BODY_LIMIT + 1))
    expect(over.status).toBe(413)
    expect((await errorOf(over)).code).toBe('PAYLOAD_TOO_LARGE')
    // A stream goes out chunked, without a Content-Length: the cap holds while reading. Its bytes
    // are queued at once: a Blob's stream reads them asynchronously, and at load 20 its last write
    // came after the server had answered 413 and closed the connection (EPIPE, no answer read).
    const chunked = (text: string) =>
      new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(text))
          controller.close()
        },
      })
    expect((await execute(chunked(echoOfBytes(DOCUMENTED_BODY_LIMIT)))).status).toBe(200)
    const chunkedOver = await execute(chunked(echoOfBytes(DOCUMENTED_BODY_LIMIT + 1)))
    expect(chunkedOver.status).toBe(413)
    expect((await errorOf(chunkedOver)).code).toBe('PAYLOAD_TOO_LARGE')
  })

  it('serves 200 concurrent mixed requests with no failure and no leaked run', async () => {
    const kinds = ['tools', 'sdk', 'execute', 'fail', 'unauthorized', 'run', 'prompt', 'unknown'] as const
    const one = async (i: number): Promise<string | undefined> => {
      const kind = kinds[i % kinds.length]!
      switch (kind) {
        case 'tools': {
          const r = await fetch(`${server.url}/v1/tools`, { headers: AUTH })
          const names = ((await r.json()) as { tools: { name: string }[] }).tools.map((t) => t.name)
          return r.status === 200 && names.includes('echo') && names.includes('wait') ? undefined : `tools ${r.status} ${names.join()}`
        }
        case 'sdk': {
          const r = await fetch(`${server.url}/v1/sdk`, { headers: AUTH })
          return r.status === 200 && (await r.text()).includes('echo') ? undefined : `sdk ${r.status}`
        }
        case 'prompt': {
          const r = await fetch(`${server.url}/v1/prompt`, { headers: AUTH })
          return r.status === 200 ? (await r.arrayBuffer(), undefined) : `prompt ${r.status}`
        }
        case 'execute': {
          const r = await fetch(`${server.url}/v1/tools/echo/execute`, { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ arguments: { text: `n${i}` } }) })
          const result = (await r.json()) as ToolExecutionResult
          return r.status === 200 && !result.isError && (result.value as { text: string }).text === `n${i}` ? undefined : `execute ${r.status}`
        }
        case 'fail': {
          const r = await fetch(`${server.url}/v1/tools/fail/execute`, { method: 'POST', headers: JSON_AUTH, body: '{"arguments":{}}' })
          const result = (await r.json()) as ToolExecutionResult
          return r.status === 200 && result.isError && result.error.info?.code === 'TOOL_FAILED' ? undefined : `fail ${r.status}`
        }
        case 'unauthorized': {
          const r = await fetch(`${server.url}/v1/tools`)
          return r.status === 401 ? (await r.arrayBuffer(), undefined) : `unauthorized ${r.status}`
        }
        case 'unknown': {
          const r = await fetch(`${server.url}/v1/tools/nope/execute`, { method: 'POST', headers: JSON_AUTH, body: '{}' })
          return r.status === 404 ? (await r.arrayBuffer(), undefined) : `unknown ${r.status}`
        }
        case 'run': {
          const r = await fetch(`${server.url}/v1/run`, {
            method: 'POST',
            headers: JSON_AUTH,
            body: JSON.stringify({ code: `const r = await tools.echo({ text: 'r${i}' }); return r.text`, description: 'load' }),
          })
          const result = (await r.json()) as ToolExecutionResult
          return r.status === 200 && !result.isError && (result.value as { result: string }).result === `r${i}` ? undefined : `run ${r.status} ${JSON.stringify(result).slice(0, 200)}`
        }
      }
    }
    const outcomes = await Promise.all(Array.from({ length: 200 }, (_, i) => one(i).catch((error: unknown) => `threw ${String(error)}`)))
    expect(outcomes.filter((o) => o !== undefined)).toEqual([])
    expect(fixture.inFlight).toBe(0)
    expect(fixture.hub.subscriberCount).toBe(0)
  })
})

describe('serve(): a client that disconnects from /v1/run aborts its run', () => {
  const codeRuntime = createNodeWorkerRuntime({ prespawn: 1 })
  afterAll(() => codeRuntime.dispose())

  it.each([
    ['a JSON run', undefined],
    ['an event stream', 'text/event-stream'],
  ])('%s: the run signal fires and the program ends with abort', async (_label, accept) => {
    const fixture = createFixture({ mode: 'both', codeRuntime })
    // The signal run_code's body runs under, as the pipeline hands it over.
    const runSignals = new Map<string, AbortSignal>()
    fixture.runtime.on('tools/execute', (execution, next) => {
      if (execution.name === 'run_code') runSignals.set(execution.callId, execution.signal)
      return next()
    })
    const server = await serve(fixture.app, { port: 0 })
    try {
      const client = new AbortController()
      const pending = fetch(`${server.url}/v1/run`, {
        method: 'POST',
        headers: { ...JSON_AUTH, ...(accept === undefined ? {} : { Accept: accept }) },
        body: JSON.stringify({ code: 'await tools.wait({}); return 1', description: 'hang until the client leaves' }),
        signal: client.signal,
      })
      if (accept !== undefined) {
        // The stream is open: its first frame arrived before the client leaves.
        const response = await pending
        const first = await response.body!.getReader().read()
        expect(new TextDecoder().decode(first.value)).toMatch(/^event: start\n/)
      }
      await fixture.wait.started
      const [callId, signal] = [...runSignals][0]!
      expect(signal.aborted).toBe(false)
      client.abort()
      if (accept === undefined) await expect(pending).rejects.toThrow()
      const settled = await until(() => fixture.results.find((r) => r.callId === callId))
      expect(signal.aborted).toBe(true)
      expect(fixture.wait.aborted).toBe(1)
      expect(settled.result.isError && settled.result.error.info?.code).toBe('CODE_RUN_FAILED')
      expect(settled.result.isError && settled.result.error.message).toMatch(/^code run failed \(abort\)/)
      await until(() => fixture.inFlight === 0 && fixture.hub.subscriberCount === 0)
    } finally {
      await server.close()
      await fixture.runtime.dispose()
    }
  })
})

describe('serve() options', () => {
  it('rejects bad options with INVALID_OPTIONS', async () => {
    const { app } = createFixture()
    await expect(serve(app, { port: -1 })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
    await expect(serve(app, { port: 1.5 })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
    await expect(serve(app, { allowedHosts: ['a b'] })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
    await expect(serve({} as never)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
    await expect(serve(app, { requestTimeoutMs: 0 })).rejects.toThrow('serve: requestTimeoutMs must be a positive integer (ms)')
    await expect(serve(app, { requestTimeoutMs: 1_000, headersTimeoutMs: 1_001 })).rejects.toThrow('serve: headersTimeoutMs must be a positive integer (ms), at most requestTimeoutMs')
    await expect(serve(app, { headersTimeoutMs: 0.5 })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
    await expect(serve(app, { maxConnections: 0 })).rejects.toThrow('serve: maxConnections must be a positive integer')
  })

  it('answers a request whose body trickles in past requestTimeoutMs with 408 REQUEST_TIMEOUT and closes it', async () => {
    const { app } = createFixture()
    const server = await serve(app, { port: 0, requestTimeoutMs: 1_500, headersTimeoutMs: 1_000 })
    const logged: unknown[][] = []
    const errorLog = vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void logged.push(args))
    try {
      // One byte a few hundred ms apart: each arrives long before any idle timeout would fire.
      const { answer, elapsedMs: elapsed } = await trickle(
        server.port,
        `POST /v1/tools/echo/execute HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nAuthorization: ${AUTH.Authorization}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`,
        ' ',
      )
      expect(answer).toMatch(/^HTTP\/1\.1 408 /)
      expect(answer).toContain('"code":"REQUEST_TIMEOUT"')
      // Node checks the timeout every second here, not every 30 s (its default period).
      expect(elapsed).toBeGreaterThanOrEqual(1_400)
      expect(elapsed).toBeLessThan(15_000)
      // The app's body read failed when the request was cut off: a client's doing, not an internal error.
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(logged.filter((args) => String(args[0]).includes('internal error'))).toEqual([])
    } finally {
      errorLog.mockRestore()
      await server.close()
    }
  })

  it('answers headers that never finish past headersTimeoutMs with 408 REQUEST_TIMEOUT', async () => {
    const { app } = createFixture()
    const server = await serve(app, { port: 0, requestTimeoutMs: 5_000, headersTimeoutMs: 1_000 })
    try {
      const { answer } = await trickle(server.port, `GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nX-Slow: a`, 'a')
      expect(answer).toMatch(/^HTTP\/1\.1 408 /)
      expect(answer).toContain('"code":"REQUEST_TIMEOUT"')
    } finally {
      await server.close()
    }
  })

  it('closes a connection past maxConnections at once, and takes new ones when others end', async () => {
    const { app } = createFixture()
    const server = await serve(app, { port: 0, maxConnections: 2 })
    const open = () => connectRaw(server.port)
    try {
      const first = await open()
      const second = await open()
      // Both held by the server: a third is closed without being read.
      const third = await open()
      let thirdAnswer = ''
      third.on('data', (chunk: Buffer) => (thirdAnswer += chunk.toString()))
      await new Promise((resolve) => third.once('close', resolve))
      expect(thirdAnswer).toBe('')
      expect(first.destroyed || second.destroyed).toBe(false)
      first.destroy()
      second.destroy()
      // Once they are gone, the server answers again.
      let status = 0
      await until(async () => (status = await fetch(`${server.url}/v1/health`).then((response) => response.status, () => 0)) === 200, () => `GET /v1/health to answer 200 (last: ${status})`, 20_000, 20)
      expect(status).toBe(200)
    } finally {
      await server.close()
    }
  })

  it('close() ends a connection that never sent a request instead of waiting for the client', async () => {
    const { app } = createFixture()
    const server = await serve(app, { port: 0 })
    const socket = connect(server.port, '127.0.0.1')
    // The server may end it with a reset: either way it is closed, which is what is asserted.
    socket.on('error', () => undefined)
    await new Promise((resolve) => socket.once('connect', resolve))
    const ended = new Promise((resolve) => socket.once('close', resolve))
    // Node keeps such a connection until the headers timeout (10 s by default): beyond the 5 s waited here.
    const outcome = await Promise.race([server.close().then(() => 'closed'), new Promise((resolve) => setTimeout(resolve, 5_000, 'still waiting'))])
    expect(outcome).toBe('closed')
    await ended
  })

  it('fails to start on a port in use, and close() is idempotent', async () => {
    const { app } = createFixture()
    const first = await serve(app, { port: 0 })
    await expect(serve(app, { port: first.port })).rejects.toThrow(/EADDRINUSE/)
    await first.close()
    await first.close()
    await expect(fetch(`${first.url}/v1/health`)).rejects.toThrow()
  })
})

/** A raw connection to the server on `port`, once connected (errors ignored: the server may reset it). */
async function connectRaw(port: number): Promise<Socket> {
  const socket = connect(port, '127.0.0.1')
  socket.on('error', () => undefined)
  await new Promise((resolve) => socket.once('connect', resolve))
  return socket
}

/**
 * Sends `head`, then `drip` every 300 ms, until the server closes the connection; resolves
 * with all the server answered and how long the connection lived after `head`.
 */
async function trickle(port: number, head: string, drip: string): Promise<{ answer: string; elapsedMs: number }> {
  const socket = await connectRaw(port)
  let answer = ''
  socket.setEncoding('utf8')
  socket.on('data', (chunk: string) => (answer += chunk))
  const closed = new Promise((resolve) => socket.once('close', resolve))
  const startedAt = performance.now()
  socket.write(head)
  const timer = setInterval(() => socket.writable && socket.write(drip), 300)
  await closed
  clearInterval(timer)
  return { answer, elapsedMs: performance.now() - startedAt }
}
