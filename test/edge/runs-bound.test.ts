import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildProductWorker, productWorkerOptions } from '../support/built-worker.js'
import { until } from '../support/poll.js'

/**
 * A decision is bound to a call at the edge too (issue 31, item 2): the BUILT Worker with
 * its Durable Object bindings under Miniflare. The same client call id sent again with
 * other arguments is a new request a person must answer (before: it ran at once on the
 * earlier Allow), and a run's request and a direct call of the same tool and arguments are
 * two requests, each decided on its own.
 */
const TOKEN = 'edge-test-token-0123456789abcdef'
const BASE = 'http://toolyard.test'
const auth = { Authorization: `Bearer ${TOKEN}` }
const jsonAuth = { ...auth, 'Content-Type': 'application/json' }

interface Approval {
  readonly id: string
  readonly callId: string
  readonly name: string
  readonly parentCallId?: string
  readonly arguments: Record<string, unknown>
  readonly argumentsHash?: string
}

describe('decisions bound to calls on the built Worker (Miniflare, Durable Objects)', () => {
  let dir: string
  let mf: Miniflare | undefined
  const call = (path: string, init: RequestInit = {}) => mf!.dispatchFetch(`${BASE}${path}`, init as never) as unknown as Promise<Response>
  const execute = (name: string, body: Record<string, unknown>) => call(`/v1/tools/${name}/execute`, { method: 'POST', headers: jsonAuth, body: JSON.stringify(body) })
  const pending = async (): Promise<Approval[]> => ((await (await call('/v1/approvals', { headers: auth })).json()) as { approvals: Approval[] }).approvals
  const listedWhere = async (match: (a: Approval) => boolean, count = 1, withinMs = 20_000): Promise<Approval[]> => {
    let found: Approval[] = []
    await until(async () => (found = (await pending()).filter(match)).length >= count, () => `${count} matching approval(s) (saw ${found.length})`, withinMs, 25)
    return found
  }
  const decide = (id: string, decision: 'allow' | 'deny') => call(`/v1/approvals/${id}`, { method: 'POST', headers: jsonAuth, body: JSON.stringify({ decision }) })

  beforeAll(async () => {
    dir = buildProductWorker('toolyard-edge-bound-')
    mf = new Miniflare(productWorkerOptions(dir, { TOOLYARD_APPROVER_TOKEN: TOKEN }, join(dir, 'state')))
    await mf.ready
  }, 180_000)

  afterAll(async () => {
    await mf?.dispose()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  it('the same call id with other arguments asks anew: the Allow given for a harmless write does not run a write of src/index.ts', async () => {
    const harmless = execute('write_file', { callId: 'same-id', arguments: { path: 'notes/one.md', content: 'harmless' } })
    const [first] = await listedWhere((a) => a.name === 'write_file' && a.arguments.path === 'notes/one.md')
    expect((await decide(first!.id, 'allow')).status).toBe(200)
    expect(((await (await harmless).json()) as { isError: boolean }).isError).toBe(false)

    // The same id, another file: nothing answers it but a new request.
    let settled = false
    const evil = execute('write_file', { callId: 'same-id', arguments: { path: 'src/index.ts', content: 'evil' } }).then((response) => {
      settled = true
      return response
    })
    const [again] = await listedWhere((a) => a.name === 'write_file' && a.arguments.path === 'src/index.ts')
    expect(again).toBeDefined()
    expect(again!.id).not.toBe(first!.id)
    expect(again!.callId).toBe(first!.callId)
    expect(again!.argumentsHash).toMatch(/^[0-9a-f]{64}$/)
    expect(again!.argumentsHash).not.toBe(first!.argumentsHash)
    expect(settled).toBe(false)
    expect((await decide(again!.id, 'deny')).status).toBe(200)
    const body = (await (await evil).json()) as { isError: boolean }
    expect(body).toMatchObject({ isError: true, error: { info: { code: 'DENIED_BY_APPROVAL' } } })
  })

  it("a run's request and a direct call of the same tool and arguments are two requests: allowing the run's runs only the run's", async () => {
    const started = await call('/v1/runs', {
      method: 'POST',
      headers: jsonAuth,
      body: JSON.stringify({ code: "return await tools.write_file({ path: 'notes/run.md', content: 'from the run' })", description: 'bound at the edge' }),
    })
    expect(started.status).toBe(202)
    const run = (await started.json()) as { id: string; callId: string }
    const [asked] = await listedWhere((a) => a.parentCallId === run.callId)
    const direct = execute('write_file', { callId: 'mine', arguments: { path: 'notes/run.md', content: 'from the run' } })
    const [other] = await listedWhere((a) => a.name === 'write_file' && a.parentCallId === undefined && a.arguments.path === 'notes/run.md')
    expect(other).toBeDefined()
    expect(other!.id).not.toBe(asked!.id)
    expect((await decide(asked!.id, 'allow')).status).toBe(200)
    let status: Record<string, unknown> = {}
    await until(async () => {
      status = (await (await call(`/v1/runs/${run.id}`, { headers: auth })).json()) as Record<string, unknown>
      return status.status !== 'running' && status.status !== 'waiting'
    }, () => `run ${run.id} to end (last: ${String(status.status)})`, 20_000, 50)
    expect(status).toMatchObject({ status: 'done', result: { isError: false } })
    // The direct call still waits for its own answer.
    expect((await pending()).map((a) => a.id)).toContain(other!.id)
    expect((await decide(other!.id, 'deny')).status).toBe(200)
    expect(((await (await direct).json()) as { isError: boolean }).isError).toBe(true)
  })
})
