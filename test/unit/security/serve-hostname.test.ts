/**
 * `serve({ hostname })` refuses a hostname it cannot bind in the options' words (stop 53,
 * known item): before, `'not a host'` reached `listen()` and answered Node's bare
 * `getaddrinfo ENOTFOUND`. The class: a hostname that is not an address or a DNS name is
 * refused before anything listens; one that does not resolve, or is not this machine's
 * address, is `INVALID_OPTIONS` naming it; a port in use is still Node's `EADDRINUSE`.
 */
import { describe, expect, it } from 'vitest'
import { Hono } from 'hono'
import { serve } from '../../../platforms/node/serve.js'

const app = new Hono().get('/', (c) => c.text('ok'))

describe('serve: the hostname', () => {
  it.each(['not a host', 'a/b', 'exa mple.com', '[::1]', '-lead.example', 'x'.repeat(300), 'host:8787', ''])('%j is not an address or a host name: INVALID_OPTIONS before listening', async (hostname) => {
    await expect(serve(app, { hostname, port: 0 })).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: expect.stringMatching(/^serve: hostname must be an IP address/) })
  })

  it('a name that does not resolve is INVALID_OPTIONS naming it, not ENOTFOUND', async () => {
    const refused = serve(app, { hostname: 'no-such-host.invalid', port: 0 })
    await expect(refused).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: expect.stringMatching(/^serve: hostname "no-such-host\.invalid" does not resolve to an address of this machine \((ENOTFOUND|EAI_AGAIN|EAI_NONAME)\)$/) })
  })

  it('an address that is not this machine is INVALID_OPTIONS (EADDRNOTAVAIL)', async () => {
    // 192.0.2.1: TEST-NET-1, documentation only, never a local address.
    await expect(serve(app, { hostname: '192.0.2.1', port: 0 })).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: 'serve: hostname "192.0.2.1" is not an address of this machine (EADDRNOTAVAIL)' })
  })

  it('names and addresses that bind still serve; a port in use is still EADDRINUSE', async () => {
    for (const hostname of ['127.0.0.1', 'localhost']) {
      const served = await serve(app, { hostname, port: 0 })
      expect((await fetch(`http://127.0.0.1:${served.port}/`)).status).toBe(200)
      const busy = serve(app, { hostname: '127.0.0.1', port: served.port })
      if (hostname === '127.0.0.1') await expect(busy).rejects.toThrow(/EADDRINUSE/)
      else await busy.then((s) => s.close(), () => undefined)
      await served.close()
    }
  })
})
