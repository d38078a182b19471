/**
 * Runs as HTTP resources on the default (Node) sandbox runtime, through the app's
 * in-process fetch: POST /v1/runs → 202, GET while running, GET while waiting for a person
 * (the approval listed), the decision over POST /v1/approvals/:id, done with the result
 * `POST /v1/run` gives; the events with their ids, live and replayed; a reconnect with
 * Last-Event-ID gets exactly the frames it missed; DELETE cancels a waiting run.
 * Node-only (the sandbox runtime is Node's).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CodeRuntime } from '../../../src/code-runtime/contract.js'
import type { RunBody } from '../../../src/http/index.js'
import { runsHeld } from '../../../src/http/index.js'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { until } from '../../support/poll.js'
import { AUTH, JSON_AUTH, createFixture, errorOf, parseSse, sseFrames } from './fixtures.js'

let codeRuntime: CodeRuntime

beforeAll(async () => {
  const { createSandboxRuntime } = await import('../../../platforms/node/index.js')
  codeRuntime = createSandboxRuntime({ memoryMb: 32 })
})
afterAll(async () => {
  await codeRuntime.dispose()
})

/** A fixture whose `pay` asks a person and whose `hold` waits until the test lets it go. */
function setup() {
  const broker = createApprovalBroker()
  const fixture = createFixture({ mode: 'both', codeRuntime, approvals: broker })
  let release: () => void = () => {}
  let holding = false
  const held = new Promise<void>((resolve) => (release = resolve))
  const paid: number[] = []
  fixture.runtime.register(
    defineTool({
      name: 'pay',
      description: 'Pays (asks a person first).',
      parameters: { cents: { type: 'number', required: true } },
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: (args) => {
        paid.push(args.cents)
        return `paid ${args.cents}`
      },
    }),
  )
  fixture.runtime.register(
    defineTool({
      name: 'hold',
      description: 'Waits until the test releases it.',
      parameters: {},
      output: { schema: { type: 'null' }, render: () => [] },
      execute: async () => {
        holding = true
        await held
        return null
      },
    }),
  )
  fixture.runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
  const get = async (id: string): Promise<RunBody> => {
    const response = await fixture.app.request(`/v1/runs/${id}`, { headers: AUTH })
    expect(response.status).toBe(200)
    return (await response.json()) as RunBody
  }
  const start = async (code: string): Promise<{ id: string; status: string; callId: string }> => {
    const response = await fixture.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code, description: 'a background run' }) })
    expect(response.status).toBe(202)
    const body = (await response.json()) as { id: string; status: string; callId: string }
    expect(response.headers.get('Location')).toBe(`/v1/runs/${body.id}`)
    expect(response.headers.get('X-Toolyard-Call-Id')).toBe(body.callId)
    return body
  }
  const untilStatus = async (id: string, status: RunBody['status']): Promise<RunBody> => {
    let last: RunBody | undefined
    const message = () => `run is ${last?.status}, not ${status}: ${JSON.stringify(last)}`
    return until(async () => {
      last = await get(id)
      if (last.status === status) return last
      // Ended otherwise: it will never get there.
      if (['done', 'failed', 'cancelled'].includes(last.status)) throw new Error(message())
      return false
    }, message, 30_000)
  }
  return { ...fixture, broker, paid, release, start, get, untilStatus, holding: () => holding }
}

const PROGRAM = `await tools.hold({})
console.log('held')
const paid = await tools.pay({ cents: 5 })
return { paid }`

describe('runs as resources, on the default sandbox runtime', () => {
  it('202 → running → waiting (the approval listed) → decided → done with the result POST /v1/run gives; events with ids, live and replayed', async () => {
    const f = setup()
    const started = await f.start(PROGRAM)
    expect(started.status).toBe('running')
    expect(started.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
    expect(started.callId).toMatch(/^http-run-/)

    await until(f.holding, 'the run to hold', 30_000)
    const running = await f.get(started.id)
    expect(running).toMatchObject({ id: started.id, callId: started.callId, status: 'running', approvals: [] })
    expect(running.result).toBeUndefined()

    // A client follows the run live from the start.
    const live = sseFrames(await f.app.request(`/v1/runs/${started.id}/events`, { headers: AUTH }))
    expect((await live.next())?.event).toBe('start')

    f.release()
    const waiting = await f.untilStatus(started.id, 'waiting')
    expect(waiting.approvals).toHaveLength(1)
    const approval = waiting.approvals[0]!
    expect(approval).toMatchObject({ kind: 'call', callId: `${started.callId}:code:2`, name: 'pay', reason: 'money moves' })
    expect(approval.summary).toContain('5')
    const liveApproval = await live.until('approval')
    expect((liveApproval.data as { id: string }).id).toBe(approval.id)
    expect(f.paid).toEqual([])

    const decided = await f.app.request(`/v1/approvals/${approval.id}`, { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ decision: 'allow' }) })
    expect(decided.status).toBe(200)
    const done = await f.untilStatus(started.id, 'done')
    expect(f.paid).toEqual([5])
    expect(done.approvals).toEqual([])
    expect(done.settledAt).toBeGreaterThanOrEqual(done.createdAt)
    // The result is what POST /v1/run answers for the same program (same shape, same value).
    const f2 = setup()
    f2.release()
    f2.broker.subscribe((event) => {
      if (event.type === 'requested') queueMicrotask(() => f2.broker.decide(event.approval.id, { decision: 'allow' }))
    })
    const sync = await f2.app.request('/v1/run', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code: PROGRAM, description: 'a background run' }) })
    const syncBody = (await sync.json()) as Record<string, unknown>
    expect(done.result).toEqual(syncBody)
    expect(done.result).toMatchObject({ isError: false, value: { logs: ['held'], result: { paid: 'paid 5' } } })

    // The live stream ends with `end`; its ids are 1, 2, 3 … in order.
    const frames = await live.rest()
    expect(frames.at(-1)).toMatchObject({ event: 'end', data: { id: started.id, status: 'done' } })
    expect(frames.map((frame) => Number(frame.id))).toEqual(frames.map((_, i) => i + 1))
    const names = frames.map((frame) => frame.event)
    expect(names[0]).toBe('start')
    expect(names).toEqual(expect.arrayContaining(['dispatch-start', 'dispatch', 'log', 'approval', 'approval-settled', 'result', 'end']))
    expect(names.indexOf('approval')).toBeLessThan(names.indexOf('approval-settled'))
    expect(names.at(-2)).toBe('result')
    expect(frames.at(-2)!.data).toEqual(done.result)

    // A client connecting after the end gets the same frames, byte for byte, and the end.
    const after = await f.app.request(`/v1/runs/${started.id}/events`, { headers: AUTH })
    expect(after.headers.get('Content-Type')).toBe('text/event-stream; charset=utf-8')
    const replayed = parseSse(await after.text())
    expect(replayed).toEqual(frames)

    // Reconnecting with Last-Event-ID gets exactly the frames after it.
    for (const lastId of [1, 3, frames.length - 1]) {
      const resumed = await f.app.request(`/v1/runs/${started.id}/events`, { headers: { ...AUTH, 'Last-Event-ID': String(lastId) } })
      expect(parseSse(await resumed.text())).toEqual(frames.slice(lastId))
    }
    // A client that has the `end` frame gets 204, which stops an EventSource from reconnecting.
    const complete = await f.app.request(`/v1/runs/${started.id}/events`, { headers: { ...AUTH, 'Last-Event-ID': String(frames.length) } })
    expect(complete.status).toBe(204)
    expect(runsHeld(f.app)).toMatchObject({ runs: 1, live: 0, subscribers: 0 })
    expect(f.hub.subscriberCount).toBe(0)
    expect(f.broker.subscriberCount).toBe(0)
  }, 60_000)

  it('a stream cut mid-run and resumed with Last-Event-ID misses nothing and repeats nothing', async () => {
    const f = setup()
    const started = await f.start(PROGRAM)
    const first = sseFrames(await f.app.request(`/v1/runs/${started.id}/events`, { headers: AUTH }))
    await first.until('start')
    f.release()
    const approval = await first.until('approval')
    // The client goes away: the run does not.
    await first.cancel()
    await until(() => runsHeld(f.app)!.subscribers === 0)
    await f.broker.decide((approval.data as { id: string }).id, { decision: 'allow' })
    await f.untilStatus(started.id, 'done')
    const resumed = sseFrames(await f.app.request(`/v1/runs/${started.id}/events`, { headers: { ...AUTH, 'Last-Event-ID': approval.id! } }))
    const rest = await resumed.rest()
    const everything = parseSse(await (await f.app.request(`/v1/runs/${started.id}/events`, { headers: AUTH })).text())
    expect([...first.seen, ...rest]).toEqual(everything)
    expect(rest[0]!.id).toBe(String(Number(approval.id) + 1))
  }, 60_000)

  it('DELETE cancels a waiting run: its approval is withdrawn, it ends cancelled; DELETE again is the same answer; unknown ids are 404', async () => {
    const f = setup()
    f.release()
    const started = await f.start(PROGRAM)
    const waiting = await f.untilStatus(started.id, 'waiting')
    const approvalId = waiting.approvals[0]!.id
    const cancelled = await f.app.request(`/v1/runs/${started.id}`, { method: 'DELETE', headers: AUTH })
    expect(cancelled.status).toBe(200)
    expect(((await cancelled.json()) as RunBody).status).toBe('cancelled')
    await until(() => runsHeld(f.app)!.live === 0, 'no live run', 30_000)
    const ended = await f.get(started.id)
    expect(ended.status).toBe('cancelled')
    expect(ended.result).toMatchObject({ isError: true })
    expect(f.paid).toEqual([])
    expect(await f.broker.pending()).toEqual([])
    const late = await f.app.request(`/v1/approvals/${approvalId}`, { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ decision: 'allow' }) })
    expect((await errorOf(late)).code).toBe('APPROVAL_WITHDRAWN')
    const again = await f.app.request(`/v1/runs/${started.id}`, { method: 'DELETE', headers: AUTH })
    expect(again.status).toBe(200)
    expect((await again.json()) as RunBody).toEqual(ended)
    const frames = parseSse(await (await f.app.request(`/v1/runs/${started.id}/events`, { headers: AUTH })).text())
    expect(frames.at(-1)).toMatchObject({ event: 'end', data: { status: 'cancelled' } })
    expect(frames.map((frame) => frame.event)).toContain('approval-settled')

    for (const method of ['GET', 'DELETE']) {
      const unknown = await f.app.request(`/v1/runs/${crypto.randomUUID()}`, { method, headers: AUTH })
      expect(unknown.status).toBe(404)
      expect((await errorOf(unknown)).code).toBe('RUN_NOT_FOUND')
    }
    const unknownEvents = await f.app.request(`/v1/runs/${crypto.randomUUID()}/events`, { headers: AUTH })
    expect((await errorOf(unknownEvents)).code).toBe('RUN_NOT_FOUND')
  }, 60_000)
})
