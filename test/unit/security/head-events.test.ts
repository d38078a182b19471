/**
 * `HEAD /v1/runs/:id/events` answers the stream's headers without reading the stream (stop
 * 53, known item). A run held in this process was already answered from its buffer's ids;
 * a run another process holds (one store, two instances) was followed first: its stored
 * events loaded (up to `maxEventBytesPerRun`) and one of `runs.maxFollowers` taken, only to
 * be discarded. Now a HEAD reads the run's record and nothing of its events.
 */
import { describe, expect, it } from 'vitest'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import { RUN_EVENTS_PREFIX } from '../../../src/durable/run-table.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { AUTH, JSON_AUTH, askingPayTool, createFixture, parseSse } from '../http/fixtures.js'
import { until } from '../../support/poll.js'

/** `store` with every read of a run's stored events counted. */
function counting(store: DurableStore): { store: DurableStore; eventReads: () => number } {
  let reads = 0
  const counted = (key: string): void => {
    if (key.startsWith(RUN_EVENTS_PREFIX)) reads++
  }
  const wrapped: DurableStore = {
    ...store,
    get: (key, ...rest) => (counted(key), store.get(key, ...rest)),
    list: (prefix, ...rest) => (counted(prefix), store.list(prefix, ...rest)),
  }
  return { store: wrapped, eventReads: () => reads }
}

function processOn(store: DurableStore) {
  const f = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime({ wallMs: 30_000 }), approvals: createApprovalBroker(), store, runs: { resumeEveryMs: 0 } })
  f.runtime.register(askingPayTool())
  f.runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
  return f
}

describe('HEAD of a run\'s events reads no events', () => {
  it('a run another instance holds: 200 with the stream headers, no stored event read, no follower taken; GET still streams it', async () => {
    const shared = createMemoryStore()
    const a = processOn(shared)
    const seen = counting(shared)
    const b = processOn(seen.store)
    const started = await a.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code: 'return await tools.pay({ cents: 1 })', description: 'd' }) })
    const { id } = (await started.json()) as { id: string }
    // Waiting for a person: its events are snapshotted in the store.
    await until(async () => (await shared.list(RUN_EVENTS_PREFIX)).entries.length > 0)
    const before = seen.eventReads()
    for (const headers of [AUTH, { ...AUTH, 'Last-Event-ID': '1' }, { ...AUTH, 'Last-Event-ID': '999999' }]) {
      const head = await b.app.request(`/v1/runs/${id}/events`, { method: 'HEAD', headers })
      expect([head.status, head.headers.get('Content-Type'), head.headers.get('Cache-Control')]).toEqual([200, 'text/event-stream; charset=utf-8', 'no-store'])
    }
    expect((await b.app.request(`/v1/runs/${id}/events`, { method: 'HEAD', headers: { ...AUTH, 'Last-Event-ID': 'abc' } })).status).toBe(400)
    expect(seen.eventReads() - before).toBe(0)
    // The GET beside it follows the run from the store as before.
    const controller = new AbortController()
    const stream = await b.app.request(`/v1/runs/${id}/events`, { headers: AUTH, signal: controller.signal })
    expect(stream.status).toBe(200)
    const reader = stream.body!.getReader()
    const first = new TextDecoder().decode((await reader.read()).value)
    expect(parseSse(first)[0]).toMatchObject({ event: 'start', id: '1' })
    expect(seen.eventReads() - before).toBeGreaterThan(0)
    await reader.cancel()
    controller.abort()
    await a.runtime.dispose()
    await b.runtime.dispose()
  })
})
