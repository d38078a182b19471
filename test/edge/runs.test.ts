import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildProductWorker, productWorkerOptions } from '../support/built-worker.js'
import { until } from '../support/poll.js'

/**
 * `/v1/runs` on the BUILT Cloudflare Worker under real workerd rules (Miniflare): a run
 * started by one request goes on after its 202 (`waitUntil`), later requests of the same
 * isolate read its status and result, and an event stream opened by one request is fed
 * by a run that belongs to another (workerd forbids I/O on another request's objects, so
 * each stream writes its frames from its own request).
 */
const TOKEN = 'edge-test-token-0123456789abcdef'
const BASE = 'http://toolyard.test'

describe('runs as resources on the built Worker (Miniflare)', () => {
  let dir: string
  let mf: Miniflare | undefined
  const auth = { Authorization: `Bearer ${TOKEN}` }
  const call = (path: string, init: RequestInit = {}) => mf!.dispatchFetch(`${BASE}${path}`, init as never) as unknown as Promise<Response>
  const start = async (code: string): Promise<string> => {
    const response = await call('/v1/runs', { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify({ code, description: 'edge' }) })
    expect(response.status).toBe(202)
    return ((await response.json()) as { id: string }).id
  }
  const status = async (id: string): Promise<Record<string, unknown>> => (await (await call(`/v1/runs/${id}`, { headers: auth })).json()) as Record<string, unknown>

  beforeAll(async () => {
    dir = buildProductWorker('toolyard-edge-runs-')
    mf = new Miniflare(productWorkerOptions(dir, { TOOLYARD_TOKEN: TOKEN }, false))
    await mf.ready
  }, 180_000)

  afterAll(async () => {
    await mf?.dispose()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  it('a run goes on after its 202; GET reads it done with its result; its events replay with ids and end', async () => {
    const id = await start('const c = await tools.get_customer({ id: "C007" }); return c.name')
    let body: Record<string, unknown> = {}
    await until(async () => (body = await status(id)).status !== 'running', () => `run ${id} to end (last: ${String(body.status)})`, 20_000, 20)
    expect(body).toMatchObject({ id, status: 'done', result: { isError: false } })
    const text = await (await call(`/v1/runs/${id}/events`, { headers: auth })).text()
    const events = [...text.matchAll(/^event: (.+)$/gm)].map((match) => match[1])
    expect(events[0]).toBe('start')
    expect(events.slice(-2)).toEqual(['result', 'end'])
    expect(events).toContain('dispatch')
    const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]))
    expect(ids).toEqual(ids.map((_, i) => i + 1))
  })

  it('a stream opened before the run ends is fed live by the run (another request), to its end', async () => {
    const id = await start('await new Promise((resolve) => setTimeout(resolve, 300)); const c = await tools.get_customer({ id: "C007" }); return c.name')
    const response = await call(`/v1/runs/${id}/events`, { headers: auth })
    const text = await response.text()
    const events = [...text.matchAll(/^event: (.+)$/gm)].map((match) => match[1])
    expect(events[0]).toBe('start')
    expect(events.slice(-2)).toEqual(['result', 'end'])
    expect(events).toContain('dispatch')
    expect((await status(id)).status).toBe('done')
  })

  it('DELETE of an unknown run is 404 RUN_NOT_FOUND', async () => {
    const response = await call(`/v1/runs/${crypto.randomUUID()}`, { method: 'DELETE', headers: auth })
    expect(response.status).toBe(404)
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('RUN_NOT_FOUND')
  })
})
