/**
 * Nothing keyed by run, call, approval or stream outlives its owner (issue 19, "What to
 * build" 4): after 1,000 runs through every route that starts `run_code` — JSON, event
 * streams (read to the end, or cancelled mid-run by the client), the direct route, MCP
 * with and without an eliciting session — every such map of src/http and src/mcp is empty.
 */
import { describe, expect, it } from 'vitest'
import { mcpAppHeld } from '../../../src/mcp/server.js'
import { JSON_AUTH, askingPayFixture, sseFrames } from './fixtures.js'
import { until } from '../../support/poll.js'

const RUNS = 1_000

describe('after 1,000 runs', () => {
  it('the hub, the broker and the MCP channel hold nothing', async () => {
    const { broker, mcp, ...fixture } = askingPayFixture()
    // A person who answers every request at once (alternating allow and deny).
    let decided = 0
    const person = broker.subscribe((event) => {
      if (event.type === 'requested') queueMicrotask(() => broker.decide(event.approval.id, { decision: decided++ % 2 === 0 ? 'allow' : 'deny' }))
    })
    const mcpPost = (body: unknown, headers: Record<string, string> = {}) =>
      fixture.app.request('/mcp', { method: 'POST', headers: { ...JSON_AUTH, Accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(body) })
    const init = await mcpPost({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: { elicitation: {} }, clientInfo: { name: 'leaks', version: '1' } } })
    const session = init.headers.get('Mcp-Session-Id')!
    const program = (i: number) => `try { return await tools.pay({ cents: ${i} }) } catch (e) { return e.name }`
    const runCode = (i: number) => ({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'run_code', arguments: { code: `return await tools.echo({ text: 'r${i}' })`, description: 'd' } } })

    const one = async (i: number): Promise<void> => {
      const body = JSON.stringify({ code: program(i), description: `run ${i}` })
      switch (i % 6) {
        case 0:
          expect((await fixture.app.request('/v1/run', { method: 'POST', headers: JSON_AUTH, body })).status).toBe(200)
          return
        case 1: {
          const response = await fixture.app.request('/v1/run', { method: 'POST', headers: { ...JSON_AUTH, Accept: 'text/event-stream' }, body })
          expect((await sseFrames(response).rest()).at(-1)!.event).toBe('result')
          return
        }
        case 2: {
          // The client cancels its stream mid-run: the run is aborted and everything it held is released.
          const response = await fixture.app.request('/v1/run', {
            method: 'POST',
            headers: { ...JSON_AUTH, Accept: 'text/event-stream' },
            body: JSON.stringify({ code: 'await tools.wait({}); return 1', description: 'cancelled' }),
          })
          const frames = sseFrames(response)
          await frames.until('start')
          await fixture.wait.started
          fixture.wait.reset()
          await frames.cancel()
          return
        }
        case 3: {
          const response = await fixture.app.request('/v1/tools/run_code/execute', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ arguments: { code: program(i), description: 'direct' } }) })
          expect(response.status).toBe(200)
          return
        }
        case 4:
          expect((await mcpPost(runCode(i))).status).toBe(200)
          return
        default: {
          const response = await mcpPost(runCode(i), { 'Mcp-Session-Id': session })
          expect(await response.text()).toContain('"result"')
        }
      }
    }
    // Ten clients at a time; the `wait` runs go one at a time (they share one started-promise).
    for (let i = 0; i < RUNS; i += 10) {
      const batch = Array.from({ length: 10 }, (_, k) => i + k)
      await Promise.all(batch.filter((n) => n % 6 !== 2).map(one))
      for (const n of batch.filter((n) => n % 6 === 2)) await one(n)
    }
    // The last cancelled run settles after its client left.
    await until(() => fixture.results.filter((r) => r.name === 'run_code').length >= RUNS, () => `${RUNS} run_code results (saw ${fixture.results.filter((r) => r.name === 'run_code').length})`, 20_000, 10)
    expect(fixture.results.filter((r) => r.name === 'run_code')).toHaveLength(RUNS)
    // Let go once the last run settled (was: a 50 ms guess); a leak never gets here and fails below.
    await until(() => fixture.inFlight === 0 && fixture.hub.subscriberCount === 0 && fixture.hub.runCount === 0, 'the last call, stream and run to be let go', 10_000).catch(() => undefined)
    expect(fixture.inFlight).toBe(0)
    expect(fixture.hub.subscriberCount).toBe(0)
    expect(fixture.hub.runCount).toBe(0)
    expect(await broker.pending()).toEqual([])
    // Only the test's own person is still subscribed: no stream left its forwarder behind.
    expect(broker.subscriberCount).toBe(1)
    expect(mcpAppHeld(mcp)).toEqual({ questions: 0, calls: 0 })
    expect(decided).toBeGreaterThan(RUNS / 3)
    person()
    broker.dispose()
    await fixture.runtime.dispose()
  }, 120_000)
})
