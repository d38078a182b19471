/**
 * `serve()` takes its listen-failure handler off the server once it listens (found by mutation
 * testing, stop 54): `off('error', reject)` was handed a function that was never added (the
 * handler was an arrow around `reject`), so the handler stayed and swallowed the server's next
 * `'error'` in silence.
 */
import { Server } from 'node:net'
import { describe, expect, it } from 'vitest'
import { serve } from '../../../platforms/node/serve.js'

describe('serve() once listening', () => {
  it("leaves no listen-failure handler on the server's 'error' event", async () => {
    const servers: Server[] = []
    const listen = Server.prototype.listen
    // The http.Server serve() creates is a net.Server: note it as it listens.
    Server.prototype.listen = function (this: Server, ...args: unknown[]) {
      servers.push(this)
      return (listen as (...a: unknown[]) => Server).apply(this, args)
    } as typeof listen
    let served: Awaited<ReturnType<typeof serve>> | undefined
    try {
      served = await serve({ fetch: () => new Response('ok') }, { port: 0 })
    } finally {
      Server.prototype.listen = listen
    }
    try {
      expect(servers).toHaveLength(1)
      expect(servers[0]!.listenerCount('error')).toBe(0)
      expect(await (await fetch(served.url)).text()).toBe('ok')
    } finally {
      await served.close()
    }
  })
})
