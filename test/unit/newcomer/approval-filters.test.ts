/**
 * Filters on the approvals a person sees (brief s55 polish, items 1 and 2).
 * - `GET /v1/approvals?agent=alice` was accepted and ignored: every agent's requests were
 *   listed. It now lists alice's alone (filtered within the listing's bounds); a token pinned
 *   to another agent asking for alice is 403, never served alice's requests. The routes that
 *   read no agent (a run, a decision, health) refuse `?agent=` instead of ignoring it.
 * - `GET /v1/runs/:id` listed the run's requests from the 500 oldest of everyone's: 500
 *   older requests of another run hid its own (`approvals: []`, status `running` while it
 *   waited for a person), and nothing said the list was cut. The listing is now filtered by
 *   the run while the store is read (`pending({ run })`), and a cut one says
 *   `approvalsTruncated: true`.
 */
import { describe, expect, it } from 'vitest'
import { createApprovalBroker, MAX_LISTED_APPROVALS, type ApprovalBroker, type PendingApproval } from '../../../src/approvals/index.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { registerAskingPay } from '../../support/pay-fixture.js'
import { CallSignals } from '../../support/call-signals.js'
import { listPending, MAX_LISTINGS_AT_ONCE } from '../../../src/http/_approvals.js'
import { PERSON_TOKEN, ROLE_TOKENS, createFixture, errorOf, jsonAuth } from '../http/fixtures.js'

const PINNED_BOB = 'pinned-bob-person-token-0123456789'
const TOKENS = [...ROLE_TOKENS, { token: PINNED_BOB, roles: ['run', 'approve'] as ('run' | 'approve')[], id: 'bob-person', agent: 'bob' }]

let seq = 0
/** Opens `count` requests one after another (each older than the next), through the broker's public handler. */
async function openRequests(broker: ApprovalBroker, count: number, fields: { agent?: string; parentCallId?: string }, calls: CallSignals): Promise<void> {
  const opened = new Promise<void>((resolve) => {
    let left = count
    const stop = broker.subscribe((event) => {
      if (event.type === 'requested' && --left === 0) {
        stop()
        resolve()
      }
    })
  })
  for (let i = 0; i < count; i++) {
    const n = ++seq
    const execution = { callId: `${fields.parentCallId ?? 'filters'}:code:${n}`, name: 'pay', arguments: { n }, signal: calls.signal(), ...(fields.agent === undefined ? {} : { agent: fields.agent }) }
    Promise.resolve(broker.handler({ execution, ...(fields.parentCallId === undefined ? {} : { parentCallId: fields.parentCallId }) } as never)).catch(() => undefined)
    await new Promise((resolve) => setTimeout(resolve, 0))
  }
  await opened
}

function appOver(broker: ApprovalBroker) {
  const f = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime({ wallMs: 30_000 }), approvals: broker, store: createMemoryStore() }, { tokens: TOKENS })
  registerAskingPay(f.runtime)
  const get = async (path: string, token = PERSON_TOKEN) => f.app.request(path, { headers: jsonAuth(token) })
  return { ...f, get }
}

describe('GET /v1/approvals?agent= filters by the agent', () => {
  it("lists the named agent's requests alone; a pinned token naming another agent is 403", async () => {
    const broker = createApprovalBroker({ store: createMemoryStore() })
    const calls = new CallSignals()
    await openRequests(broker, 1, { agent: 'alice' }, calls)
    await openRequests(broker, 1, { agent: 'bob' }, calls)
    await openRequests(broker, 1, {}, calls)
    const f = appOver(broker)
    const listed = async (path: string, token?: string) => ((await (await f.get(path, token)).json()) as { approvals: PendingApproval[] }).approvals.map((a) => a.agent ?? 'global')
    // Before: every agent's ([alice, bob, global]) whatever `agent` said.
    expect(await listed('/v1/approvals?agent=alice')).toEqual(['alice'])
    expect(await listed('/v1/approvals?agent=carol')).toEqual([])
    expect(await listed('/v1/approvals')).toEqual(['alice', 'bob', 'global'])
    // A pinned approver: its own agent's, asked or not; another agent's never.
    expect(await listed('/v1/approvals', PINNED_BOB)).toEqual(['bob'])
    expect(await listed('/v1/approvals?agent=bob', PINNED_BOB)).toEqual(['bob'])
    const refused = await f.get('/v1/approvals?agent=alice', PINNED_BOB)
    expect([refused.status, await errorOf(refused)]).toEqual([403, { code: 'FORBIDDEN', message: 'this token acts for agent "bob" only, not "alice"' }])
    const bad = await f.get('/v1/approvals?agent=')
    expect([bad.status, (await errorOf(bad)).code]).toEqual([400, 'INVALID_REQUEST'])
    calls.abort()
    await broker.dispose()
  })

  it('routes that read no agent refuse ?agent= (a run, its events, a decision, health), naming the route', async () => {
    const broker = createApprovalBroker({ store: createMemoryStore() })
    const f = appOver(broker)
    const id = '00000000-0000-4000-8000-000000000000'
    const cases: [string, string][] = [
      ['GET', `/v1/runs/${id}?agent=alice`],
      ['GET', `/v1/runs/${id}/events?agent=alice`],
      ['DELETE', `/v1/runs/${id}?agent=alice`],
      ['POST', '/v1/approvals/x?agent=alice'],
      ['GET', '/v1/health?agent=alice'],
    ]
    for (const [method, path] of cases) {
      const response = await f.app.request(path, { method, headers: jsonAuth(PERSON_TOKEN), ...(method === 'POST' ? { body: '{"decision":"allow"}' } : {}) })
      const route = path.slice(0, path.indexOf('?')).replace(id, ':id').replace('/x', '/:id')
      expect([response.status, await errorOf(response)], path).toEqual([
        400,
        { code: 'INVALID_REQUEST', message: `unknown field "agent" in the query string (${method} ${route} reads no query parameters)` },
      ])
    }
    await broker.dispose()
  })
})

describe("GET /v1/runs/:id lists the run's own requests, whatever other runs wait", () => {
  it(`${MAX_LISTED_APPROVALS} older requests of another run: this run's request is listed (status waiting); past the listing's bounds it says approvalsTruncated`, async () => {
    const broker = createApprovalBroker({ store: createMemoryStore() })
    const calls = new CallSignals()
    await openRequests(broker, MAX_LISTED_APPROVALS, { parentCallId: 'http-run-00000000-0000-4000-8000-000000000001' }, calls)
    const f = appOver(broker)
    const asked = new Promise<void>((resolve) => {
      const stop = broker.subscribe((event) => {
        if (event.type === 'requested' && event.approval.name === 'pay' && event.approval.parentCallId?.endsWith('1') === false) {
          stop()
          resolve()
        }
      })
    })
    const started = await f.app.request('/v1/runs', { method: 'POST', headers: jsonAuth(PERSON_TOKEN), body: JSON.stringify({ code: 'return await tools.pay({ cents: 5 })', description: 'pay' }) })
    const { id, callId } = (await started.json()) as { id: string; callId: string }
    await asked
    const view = async () => (await (await f.get(`/v1/runs/${id}`)).json()) as { status: string; approvals: { callId: string; name: string }[]; approvalsTruncated?: boolean }
    // Before: { status: 'running', approvals: [] } (the 500 oldest were the other run's; this run's was cut).
    const seen = await view()
    expect([seen.status, seen.approvals.map((a) => [a.callId.startsWith(`${callId}:code:`), a.name]), seen.approvalsTruncated]).toEqual(['waiting', [[true, 'pay']], undefined])
    // The whole listing is still cut at 500, and says so.
    const all = (await (await f.get('/v1/approvals')).json()) as { approvals: unknown[]; truncated?: boolean }
    expect([all.approvals.length, all.truncated]).toEqual([MAX_LISTED_APPROVALS, true])
    // 1,000 records expiring before this run's: the run's listing stops at its bound, and the page says so.
    await openRequests(broker, 1000 - MAX_LISTED_APPROVALS, { parentCallId: 'http-run-00000000-0000-4000-8000-000000000001' }, calls)
    const cut = await view()
    expect(cut.approvalsTruncated).toBe(true)
    calls.abort()
    await f.app.request(`/v1/runs/${id}`, { method: 'DELETE', headers: jsonAuth(PERSON_TOKEN) })
    await broker.dispose()
  }, 120_000)

  it('the library filter: pending({ run }) keeps the run\'s plan and sub-call requests; a non-string run fails closed', async () => {
    const broker = createApprovalBroker({ store: createMemoryStore() })
    const calls = new CallSignals()
    await openRequests(broker, 2, { parentCallId: 'run-a' }, calls)
    await openRequests(broker, 1, { parentCallId: 'run-b' }, calls)
    expect((await broker.pending({ run: 'run-a' })).map((a) => a.parentCallId)).toEqual(['run-a', 'run-a'])
    expect(await broker.pending({ run: 'run-c' })).toEqual([])
    await expect(broker.pending({ run: 7 as never })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
    calls.abort()
    await broker.dispose()
  })
})

describe('listings of one broker read the store a few at a time', () => {
  it(`ten listings of ten runs at once: at most ${MAX_LISTINGS_AT_ONCE} read together, each answers its own run`, async () => {
    const real = createApprovalBroker({ store: createMemoryStore() })
    const calls = new CallSignals()
    for (let run = 0; run < 10; run++) await openRequests(real, 1, { parentCallId: `run-${run}` }, calls)
    let reading = 0
    let most = 0
    // A broker of the caller's own making (the app takes any): the real one, counting listings under way.
    const pending = async (options?: Parameters<ApprovalBroker['pending']>[0]) => {
      most = Math.max(most, ++reading)
      try {
        return await real.pending(options)
      } finally {
        reading--
      }
    }
    const counting = Object.create(real, { pending: { value: pending } }) as ApprovalBroker
    // Before: ten listings at once, each reading up to 1,000 records and 8 MiB.
    const listed = await Promise.all(Array.from({ length: 10 }, (_, run) => listPending(counting, { run: `run-${run}` })))
    expect(listed.map((one) => one.approvals.map((a) => a.parentCallId))).toEqual(Array.from({ length: 10 }, (_, run) => [`run-${run}`]))
    expect(most).toBe(MAX_LISTINGS_AT_ONCE)
    calls.abort()
    await real.dispose()
  })
})
