import { existsSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildProductWorker, productWorkerOptions } from '../support/built-worker.js'
import { until } from '../support/poll.js'

/**
 * Run ids a client types (red team, stop 53): the BUILT Worker with its Durable Objects
 * under Miniflare, storage persisted to a directory where workerd keeps one SQLite file per
 * object. A token holder naming random run ids (`GET`, `GET /events`, `DELETE`) gets 404
 * `RUN_NOT_FOUND` from the Worker, and no `ToolyardRun` object is created for them: before,
 * each id built a new object (and its runtime) that then found no run. A run of another
 * principal is 404 for a `run` token too, its object not reached; its starter and the
 * person (`approve`) still reach it.
 */
const AGENT = 'edge-agent-token-0123456789abcdef'
const PERSON = 'edge-person-token-0123456789abcdef'
const BASE = 'http://toolyard.test'
/** Random ids per route and token. */
const IDS = 8

describe('run ids a client types reach no Durable Object unless the index knows them (built Worker, Miniflare)', () => {
  let dir: string
  let state: string
  let mf: Miniflare | undefined
  const call = (path: string, token: string, method = 'GET', body?: unknown) =>
    mf!.dispatchFetch(`${BASE}${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    } as never) as unknown as Promise<Response>

  /** The `ToolyardRun` objects workerd holds storage for: one `<id>.sqlite` each in the class's directory (beside Miniflare's `metadata.sqlite`). */
  const runObjects = (): string[] => {
    if (!existsSync(state)) return []
    const found = new Set<string>()
    for (const classDir of readdirSync(state)) {
      if (!classDir.includes('ToolyardRun') || classDir.includes('ToolyardRunIndex')) continue
      for (const file of readdirSync(join(state, classDir))) if (file.endsWith('.sqlite') && file !== 'metadata.sqlite') found.add(file)
    }
    return [...found]
  }

  /** Expects 404 `RUN_NOT_FOUND` in the API's error shape. */
  const expectNotFound = async (response: Response, what: string): Promise<void> => {
    expect(response.status, what).toBe(404)
    expect(((await response.json()) as { error: { code: string } }).error.code, what).toBe('RUN_NOT_FOUND')
  }

  beforeAll(async () => {
    dir = buildProductWorker('toolyard-edge-unknown-runs-')
    state = join(dir, 'state')
    mf = new Miniflare(productWorkerOptions(dir, { TOOLYARD_TOKEN: AGENT, TOOLYARD_APPROVER_TOKEN: PERSON }, state))
    await mf.ready
  }, 180_000)

  afterAll(async () => {
    await mf?.dispose()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  it('random run ids from either token answer 404 RUN_NOT_FOUND and create no run object', async () => {
    expect(runObjects()).toEqual([])
    for (const token of [AGENT, PERSON]) {
      for (let i = 0; i < IDS; i++) {
        const id = crypto.randomUUID()
        await expectNotFound(await call(`/v1/runs/${id}`, token), `GET ${id}`)
        await expectNotFound(await call(`/v1/runs/${id}/events`, token), `GET ${id}/events`)
        await expectNotFound(await call(`/v1/runs/${id}`, token, 'DELETE'), `DELETE ${id}`)
      }
    }
    // Before the fix: one object per id (2 tokens × IDS ids), each built its runtime and read its storage.
    expect(runObjects()).toEqual([])
  }, 60_000)

  it("a run is reached by its starter and the person, and is 404 for another run token (no object created for it)", async () => {
    const started = await call('/v1/runs', PERSON, 'POST', { code: 'return 1', description: 'the person’s' })
    expect(started.status).toBe(202)
    const { id } = (await started.json()) as { id: string }
    // Readable at once: the index knew the id before the 202.
    expect((await call(`/v1/runs/${id}`, PERSON)).status).toBe(200)
    await until(async () => ((await (await call(`/v1/runs/${id}`, PERSON)).json()) as { status: string }).status === 'done', `run ${id} to end`, 30_000, 50)
    expect(runObjects()).toHaveLength(1)
    await expectNotFound(await call(`/v1/runs/${id}`, AGENT), 'the agent reading the person’s run')
    await expectNotFound(await call(`/v1/runs/${id}/events`, AGENT), 'the agent reading the person’s events')
    await expectNotFound(await call(`/v1/runs/${id}`, AGENT, 'DELETE'), 'the agent cancelling the person’s run')
    const mine = await call('/v1/runs', AGENT, 'POST', { code: 'return 2', description: 'the agent’s' })
    expect(mine.status).toBe(202)
    const agentRun = ((await mine.json()) as { id: string }).id
    await until(async () => ((await (await call(`/v1/runs/${agentRun}`, AGENT)).json()) as { status: string }).status === 'done', `run ${agentRun} to end`, 30_000, 50)
    expect(runObjects()).toHaveLength(2)
  }, 60_000)
})
