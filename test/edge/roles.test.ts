import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildProductWorker, productWorkerOptions } from '../support/built-worker.js'
import { until } from '../support/poll.js'

/**
 * Roles at the edge (issue 31 item 1): the BUILT Worker with its Durable Objects under
 * Miniflare. `TOOLYARD_TOKEN` is an agent's (`run`), `TOOLYARD_APPROVER_TOKEN` a person's
 * (`run` + `approve`): the agent's run waits for a person, the agent can neither list nor
 * decide its approval (403, and the decision never reaches the run's object), the person
 * decides it; a run is read only by its starter and the person; a client's call id lives
 * in its principal's namespace, and one naming a run's sub-call is refused.
 */
const AGENT = 'edge-agent-token-0123456789abcdef'
const PERSON = 'edge-person-token-0123456789abcdef'
const BASE = 'http://toolyard.test'
const as = (token: string) => ({ Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' })

describe('roles at the edge (built Worker, Durable Objects, Miniflare)', () => {
  let dir: string
  let mf: Miniflare | undefined
  const call = (path: string, token: string, body?: unknown, method = body === undefined ? 'GET' : 'POST') =>
    mf!.dispatchFetch(`${BASE}${path}`, { method, headers: as(token), ...(body === undefined ? {} : { body: JSON.stringify(body) }) } as never) as unknown as Promise<Response>

  beforeAll(async () => {
    dir = buildProductWorker('toolyard-edge-roles-')
    mf = new Miniflare(productWorkerOptions(dir, { TOOLYARD_TOKEN: AGENT, TOOLYARD_APPROVER_TOKEN: PERSON }, join(dir, 'state')))
    await mf.ready
  }, 180_000)

  afterAll(async () => {
    await mf?.dispose()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  it("an agent's run waits for the person; the agent cannot list or decide; the person decides; runs are read by their starter and the person", async () => {
    const started = await call('/v1/runs', AGENT, { code: "return await tools.write_file({ path: 'notes/edge.md', content: 'x' })", description: 'edge roles' })
    expect(started.status).toBe(202)
    const { id } = (await started.json()) as { id: string }
    let run: { status: string; principal?: string; approvals: { id: string }[] } = { status: 'running', approvals: [] }
    await until(async () => {
      run = (await (await call(`/v1/runs/${id}`, AGENT)).json()) as typeof run
      return run.status === 'waiting'
    }, () => `run ${id} to wait (last: ${run.status})`, 30_000, 50)
    expect(run).toMatchObject({ status: 'waiting', principal: 'agent' })
    const approvalId = run.approvals[0]!.id
    const listed = await call('/v1/approvals', AGENT)
    expect(listed.status).toBe(403)
    expect(((await listed.json()) as { error: { code: string; message: string } }).error).toEqual({ code: 'FORBIDDEN', message: 'GET /v1/approvals needs the approve role; this token has run' })
    const decided = await call(`/v1/approvals/${approvalId}`, AGENT, { decision: 'allow' })
    expect(decided.status).toBe(403)
    expect(((await (await call(`/v1/runs/${id}`, PERSON)).json()) as { status: string }).status).toBe('waiting')
    // The person's listing (the run index's broker, across isolates) names whose run asks: the broker recorded it.
    const seen = (await (await call('/v1/approvals', PERSON)).json()) as { approvals: { id: string; principal?: string }[] }
    expect(seen.approvals.find((approval) => approval.id === approvalId)).toMatchObject({ principal: 'agent' })
    expect((await call(`/v1/approvals/${approvalId}`, PERSON, { decision: 'allow' })).status).toBe(200)
    await until(async () => {
      run = (await (await call(`/v1/runs/${id}`, PERSON)).json()) as typeof run
      return run.status !== 'waiting' && run.status !== 'running'
    }, () => `run ${id} to end (last: ${run.status})`, 30_000, 50)
    expect(run.status).toBe('done')
    // The person's own run is not the agent's to read.
    const own = (await (await call('/v1/runs', PERSON, { code: 'return 1', description: 'mine' })).json()) as { id: string }
    const hidden = await call(`/v1/runs/${own.id}`, AGENT)
    expect(hidden.status).toBe(404)
    expect(((await hidden.json()) as { error: { code: string } }).error.code).toBe('RUN_NOT_FOUND')
  }, 90_000)

  it("call ids: the client's in its principal's namespace, a run's sub-call id refused; the MCP endpoint takes the same tokens", async () => {
    const executed = await call('/v1/tools/get_customer/execute', AGENT, { callId: 'edge-1', arguments: { id: 'C001' } })
    expect(executed.headers.get('X-Toolyard-Call-Id')).toBe('client.agent.edge-1')
    const refused = await call('/v1/tools/get_customer/execute', AGENT, { callId: 'http-run-00000000-0000-4000-8000-000000000000:code:2', arguments: { id: 'C001' } })
    expect(refused.status).toBe(400)
    const ping = (token: string) =>
      mf!.dispatchFetch(`${BASE}/mcp`, { method: 'POST', headers: { ...as(token), Accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) } as never) as unknown as Promise<Response>
    expect((await ping(AGENT)).status).toBe(200)
    expect((await ping('wrong-token-0123456789abcdef')).status).toBe(401)
  }, 60_000)
})
