/**
 * `serve({ hostname })` refuses a hostname it cannot bind in the options' words (stop 53,
 * known item): before, `'not a host'` reached `listen()` and answered Node's bare
 * `getaddrinfo ENOTFOUND`. The class: a hostname that is not an address or a DNS name is
 * refused before anything listens; one that does not resolve, or is not this machine's
 * address, is `INVALID_OPTIONS` naming it; a port in use is still Node's `EADDRINUSE`.
 */
import dns from 'node:dns'
import { afterEach, describe, expect, it } from 'vitest'
import { Hono } from 'hono'
import { serve } from '../../../platforms/node/serve.js'

const app = new Hono().get('/', (c) => c.text('ok'))

const realLookup = dns.lookup
afterEach(() => {
  dns.lookup = realLookup
})

/** Makes the lookup `listen()` does answer `code` for every name (what a resolver says is not up to the test machine). */
function lookupFails(code: string): void {
  dns.lookup = ((hostname: string, options: unknown, callback?: (error: Error) => void) => {
    const done = (typeof options === 'function' ? options : callback) as (error: Error) => void
    process.nextTick(() => done(Object.assign(new Error(`getaddrinfo ${code} ${hostname}`), { code, hostname })))
  }) as typeof dns.lookup
}

describe('serve: the hostname', () => {
  it.each(['not a host', 'a/b', 'exa mple.com', '[::1]', '-lead.example', 'x'.repeat(300), 'host:8787', ''])('%j is not an address or a host name: INVALID_OPTIONS before listening', async (hostname) => {
    await expect(serve(app, { hostname, port: 0 })).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: expect.stringMatching(/^serve: hostname must be an IP address/) })
  })

  it.each([[7, 'number'], [['127.0.0.1'], 'object'], [true, 'boolean']])('%j is not a string: INVALID_OPTIONS saying its type, before listening', async (hostname, type) => {
    await expect(serve(app, { hostname: hostname as never, port: 0 })).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
      message: `serve: hostname must be an IP address (127.0.0.1, ::1, 0.0.0.0) or a host name of letters, digits, hyphens and dots (got ${type})`,
    })
  })

  it('the refused hostname is quoted in the message, cut at 64 characters', async () => {
    const refusal = (hostname: string) => serve(app, { hostname, port: 0 }).then(() => 'served', (error: Error) => error.message.replace(/^.*\(got (.*)\)$/s, '$1'))
    // 64 characters (a leading hyphen is not a host name): quoted whole.
    const sixtyFour = `-${'a'.repeat(63)}`
    expect(await refusal(sixtyFour)).toBe(JSON.stringify(sixtyFour))
    expect(await refusal(`${sixtyFour}b`)).toBe(JSON.stringify(`${sixtyFour}…`))
    expect(await refusal('x'.repeat(300))).toBe(JSON.stringify(`${'x'.repeat(64)}…`))
    expect(await refusal('not a host')).toBe('"not a host"')
  })

  it('an IPv6 address is an address, not refused as malformed (::1 serves where this machine has it)', async () => {
    const outcome = await serve(app, { hostname: '::1', port: 0 }).then(
      async (served) => {
        await served.close()
        return 'served'
      },
      (error: Error) => error.message,
    )
    expect(outcome).not.toMatch(/hostname must be/)
  })

  it.each(['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME'])('the resolver answers %s: INVALID_OPTIONS naming the hostname and the code', async (code) => {
    lookupFails(code)
    await expect(serve(app, { hostname: 'db.internal.example', port: 0 })).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
      message: `serve: hostname "db.internal.example" does not resolve to an address of this machine (${code})`,
    })
  })

  it('names at the edges of the rule: one-character labels, a trailing dot, 253 characters are host names (then looked up); 254, a 64-character label are not', async () => {
    lookupFails('ENOTFOUND')
    const verdict = (hostname: string) =>
      serve(app, { hostname, port: 0 }).then(
        () => 'served',
        (error: Error) => (/does not resolve/.test(error.message) ? 'looked up' : /hostname must be/.test(error.message) ? 'malformed' : error.message),
      )
    const label = (n: number) => 'a'.repeat(n)
    const longest = [label(63), label(63), label(63), label(61)].join('.')
    expect(longest).toHaveLength(253)
    for (const hostname of ['a', 'a.b', 'ab.c', 'a.bc', 'x-1.example.', longest, `${longest}.`, `${label(63)}.example`]) expect(await verdict(hostname), hostname).toBe('looked up')
    for (const hostname of [`${longest}a`, `${label(64)}.example`, 'a..b', 'a-.example', 'a.-b', '.a']) expect(await verdict(hostname), hostname).toBe('malformed')
  })

  it('a resolver error of another kind is passed on as it is', async () => {
    lookupFails('ESERVFAIL')
    const refused = await serve(app, { hostname: 'db.internal.example', port: 0 }).then(() => undefined, (error: Error & { code?: string }) => error)
    expect(refused).toBeInstanceOf(Error)
    expect([refused!.code, refused!.message]).toEqual(['ESERVFAIL', 'getaddrinfo ESERVFAIL db.internal.example'])
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
