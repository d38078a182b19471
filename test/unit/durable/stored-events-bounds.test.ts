/**
 * The bounds of reading a run from the store (`RunService.follow`, issue 35): at most
 * `runs.maxFollowers` event streams of runs this process does not hold at once, one more is
 * 503 `OVERLOADED`; a stream that ends gives its place back; the option is validated.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import { createStoreRunEvents, createRunEventLog } from '../../../src/durable/run-table.js'
import { createStoreRunRecords } from '../../../src/durable/runs.js'
import { createToolsApp } from '../../../src/http/index.js'
import { createToolRuntime } from '../../../src/registry/runtime.js'
import { AUTH, TOKEN, sseFrames } from '../http/fixtures.js'
import { until } from '../../support/poll.js'

const disposals: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const dispose of disposals) await dispose()
})

const ID = '0b7e6c2a-6f3e-4f7a-9a53-5d7b3c1e2f40'

/** A memory store holding a `running` run of a process that is not this one, with two stored frames. */
async function storeWithForeignRun() {
  const store = createMemoryStore()
  const log = createRunEventLog(1 << 20)
  log.append('start', { id: ID })
  log.append('log', { text: 'before' })
  await createStoreRunEvents(store, 1 << 20).put(ID, log, 10)
  await createStoreRunRecords(store).put({ id: ID, callId: `http-run-${ID}`, principal: 'playground', status: 'running', createdAt: Date.now(), events: { first: 1, last: 2, dropped: 0, next: 12 }, owner: crypto.randomUUID() })
  return store
}

describe('runs.maxFollowers', () => {
  it('refuses one stream more than the cap with 503 OVERLOADED, and takes one again once a stream ends', async () => {
    const store = await storeWithForeignRun()
    const runtime = createToolRuntime({ store, runs: { resumeEveryMs: 0, staleMs: 600_000, maxFollowers: 1 } })
    disposals.push(() => runtime.dispose())
    const app = createToolsApp(runtime, { token: TOKEN })
    const first = await app.request(`/v1/runs/${ID}/events`, { headers: AUTH })
    expect(first.status).toBe(200)
    const frames = sseFrames(first)
    expect(await frames.next()).toMatchObject({ event: 'start', id: '1' })
    expect(await frames.next()).toMatchObject({ event: 'log', id: '2' })
    expect(await frames.next()).toMatchObject({ event: 'gap', data: { code: 'EVENT_IDS_RESERVED', first: 3, last: 12 } })
    expect(runtime.runs.followers).toBe(1)

    const refused = await app.request(`/v1/runs/${ID}/events`, { headers: AUTH })
    expect(refused.status).toBe(503)
    expect(refused.headers.get('Retry-After')).toBe('1')
    const body = (await refused.json()) as { error: { code: string; message: string } }
    expect(body.error.code).toBe('OVERLOADED')
    expect(body.error.message).toMatch(/runs\.maxFollowers 1/)
    // GET of the run itself is not a follower: still answered.
    expect((await app.request(`/v1/runs/${ID}`, { headers: AUTH })).status).toBe(200)

    await frames.cancel()
    await until(() => (runtime.runs.followers === 0 ? true : undefined), 'the first stream to give its place back')
    const again = await app.request(`/v1/runs/${ID}/events`, { headers: AUTH })
    expect(again.status).toBe(200)
    await again.body?.cancel()
    await until(() => (runtime.runs.followers === 0 ? true : undefined), 'the last stream to give its place back')
  })

  it('a HEAD or a client already at the last id takes no place (the follower stops at once)', async () => {
    const store = await storeWithForeignRun()
    const runtime = createToolRuntime({ store, runs: { resumeEveryMs: 0, maxFollowers: 1 } })
    disposals.push(() => runtime.dispose())
    const app = createToolsApp(runtime, { token: TOKEN })
    expect((await app.request(`/v1/runs/${ID}/events`, { method: 'HEAD', headers: AUTH })).status).toBe(200)
    expect(runtime.runs.followers).toBe(0)
    expect((await app.request(`/v1/runs/${ID}/events`, { headers: { ...AUTH, 'Last-Event-ID': '99' } })).status).toBe(400)
    expect(runtime.runs.followers).toBe(0)
  })

  it('is validated: a non-negative integer', () => {
    for (const maxFollowers of [-1, 1.5, '2', Number.NaN]) {
      expect(() => createToolRuntime({ store: createMemoryStore(), runs: { maxFollowers: maxFollowers as number } })).toThrow(/runs\.maxFollowers must be a non-negative integer/)
    }
  })
})
