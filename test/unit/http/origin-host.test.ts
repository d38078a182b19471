/**
 * The same-origin check compares the `Origin` with the validated `Host`, not with the
 * request target (issue 19, finding 11): an absolute-form request
 * `GET http://evil.example/v1/tools` with an allowed `Host` and `Origin: http://evil.example`
 * used to answer 200.
 */
import { request as httpRequest } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serve } from '../../../platforms/node/index.js'
import type { ServedApp } from '../../../platforms/node/index.js'
import { createMcpApp } from '../../../src/mcp/index.js'
import { AUTH, TOKEN, createFixture, errorOf } from './fixtures.js'

/** A raw GET whose request target may be absolute-form (fetch always sends origin-form). */
function rawGet(port: number, target: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: target, method: 'GET', headers }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (body += chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('same-origin is decided by the Host header', () => {
  const fixture = createFixture()
  fixture.app.route('/mcp', createMcpApp(fixture.runtime, { token: TOKEN }))
  let server: ServedApp
  beforeAll(async () => {
    server = await serve(fixture.app, { port: 0 })
  })
  afterAll(async () => {
    await server.close()
    await fixture.runtime.dispose()
  })

  it('refuses an absolute-form request whose target names the foreign origin', async () => {
    const host = `127.0.0.1:${server.port}`
    const forged = await rawGet(server.port, 'http://evil.example/v1/tools', { ...AUTH, Host: host, Origin: 'http://evil.example' })
    expect(forged.status).toBe(403)
    expect(JSON.parse(forged.body)).toEqual({ error: { code: 'FORBIDDEN_ORIGIN', message: 'cross-origin requests from this origin are not allowed' } })
    // The MCP endpoint shares the check.
    const mcp = await rawGet(server.port, 'http://evil.example/mcp', { ...AUTH, Host: host, Origin: 'http://evil.example' })
    expect(mcp.status).toBe(403)
    // The server's own origin is still same-origin, whatever the target says.
    const own = await rawGet(server.port, 'http://evil.example/v1/tools', { ...AUTH, Host: host, Origin: `http://${host}` })
    expect(own.status).toBe(200)
    const plain = await rawGet(server.port, '/v1/tools', { ...AUTH, Host: host, Origin: `http://${host}` })
    expect(plain.status).toBe(200)
  })

  it('in-process: the Host header wins over the URL; without one the URL is the origin', async () => {
    const forged = await fixture.app.request('http://evil.example/v1/tools', { headers: { ...AUTH, Host: 'localhost:8787', Origin: 'http://evil.example' } })
    expect(forged.status).toBe(403)
    expect((await errorOf(forged)).code).toBe('FORBIDDEN_ORIGIN')
    const own = await fixture.app.request('http://evil.example/v1/tools', { headers: { ...AUTH, Host: 'localhost:8787', Origin: 'http://localhost:8787' } })
    expect(own.status).toBe(200)
    // Default ports are the same origin written two ways.
    const defaultPort = await fixture.app.request('http://localhost/v1/tools', { headers: { ...AUTH, Host: 'localhost:80', Origin: 'http://localhost' } })
    expect(defaultPort.status).toBe(200)
    const noHost = await fixture.app.request('http://localhost/v1/tools', { headers: { ...AUTH, Origin: 'http://localhost' } })
    expect(noHost.status).toBe(200)
  })

  it('a Host that is not a host name matches no origin', async () => {
    for (const host of ['evil.example/x', 'evil.example@localhost', 'localhost:99999', '']) {
      const response = await fixture.app.request('http://localhost/v1/tools', { headers: { ...AUTH, Host: host, Origin: 'http://evil.example' } })
      expect(response.status, host).toBe(403)
    }
  })
})
