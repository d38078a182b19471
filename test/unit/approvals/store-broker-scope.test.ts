/**
 * What the store broker binds an ask to, and how it reads a decider's agent (stop 53's
 * `bindingSecret` and pinned decider; the survivors of stop 54's mutation run on them):
 * - a plan request re-attaches under its `callId` even when it carries a principal and no
 *   run secret: a plan's id is the server's (`run_code` refuses a client's callId), so asking
 *   again is its run asking again (resumed), never a client's repeat. Only a `call` with a
 *   principal and no run is asked anew each time (test/unit/security/approval-replay.test.ts).
 * - a decider whose `agent` is not a string is refused as `INVALID_DECISION` before anything
 *   is read or decided, never taken as "every agent" nor as some agent.
 */
import { describe, expect, it } from 'vitest'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { ApprovalBroker, PendingApproval } from '../../../src/approvals/index.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import { until } from './helpers.js'

const PLAN = { code: 'await tools.pay({ amount: 1 })', description: 'pay once', calls: [{ name: 'pay', line: 1, column: 7 }], asking: [{ name: 'pay', reason: 'moves money' }], dynamic: false }

function settle(outcome: unknown) {
  return Promise.resolve(outcome).then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, code: (error as { code?: string }).code, message: (error as Error).message }),
  )
}

/** Asks `b` directly (as the registry does) with a `kind` request carrying `principal` and no run. */
function ask(b: ApprovalBroker, kind: 'call' | 'plan', callId: string, extra: Record<string, unknown> = {}) {
  const execution = { callId, name: kind === 'plan' ? 'run_code' : 'pay', arguments: { amount: 1 }, signal: new AbortController().signal, ...extra }
  const request = kind === 'plan' ? { kind, plan: PLAN, reason: 'the program calls a tool that asks', execution } : { reason: 'moves money', execution }
  return settle(b.handler(request as never))
}

async function listed(b: ApprovalBroker, count: number): Promise<readonly PendingApproval[]> {
  let list: readonly PendingApproval[] = []
  await until(async () => (list = await b.pending()).length >= count, () => `${count} pending (saw ${list.length})`)
  expect(list).toHaveLength(count)
  return list
}

describe('what an ask with a principal and no run is bound to', () => {
  it('a plan asked twice under one callId: one request, one decision answers both (its run asking again)', async () => {
    const b = createApprovalBroker({ store: createMemoryStore(), plans: true, pollIntervalMs: 20 })
    const first = ask(b, 'plan', 'http-run-1', { principal: 'alice' })
    const [request] = await listed(b, 1)
    expect(request).toMatchObject({ kind: 'plan', callId: 'http-run-1', principal: 'alice' })
    const again = ask(b, 'plan', 'http-run-1', { principal: 'alice' })
    // The second ask joined the first's request: still one listed, the same id.
    await new Promise((resolve) => setTimeout(resolve, 60))
    expect((await b.pending()).map((a) => a.id)).toEqual([request!.id])
    expect(await b.decide(request!.id, { decision: 'allow' })).toMatchObject({ ok: true })
    expect(await first).toEqual({ ok: true, value: true })
    expect(await again).toEqual({ ok: true, value: true })
    // Settled: the plan asked once more is answered by that decision, nobody is asked.
    expect(await ask(b, 'plan', 'http-run-1', { principal: 'alice' })).toEqual({ ok: true, value: true })
    expect(await b.pending()).toEqual([])
    await b.dispose()
  })

  it('a call asked twice under one callId: two requests (the contrast), each decided on its own', async () => {
    const b = createApprovalBroker({ store: createMemoryStore(), pollIntervalMs: 20 })
    const first = ask(b, 'call', 'client.alice.7', { principal: 'alice' })
    const again = ask(b, 'call', 'client.alice.7', { principal: 'alice' })
    const [one, two] = await listed(b, 2)
    expect(one!.id).not.toBe(two!.id)
    await b.decide(one!.id, { decision: 'allow' })
    await b.decide(two!.id, { decision: 'deny' })
    expect([(await first).ok, (await again).ok].sort()).toEqual([false, true])
    await b.dispose()
  })
})

describe("a decider's agent that is not a string", () => {
  it.each([['a number', 7], ['null', null], ['an object', { toString: () => 'alice' }]])('%s: INVALID_DECISION, nothing decided; the same decider with a string agent decides', async (_what, agent) => {
    const b = createApprovalBroker({ store: createMemoryStore(), pollIntervalMs: 20 })
    const outcome = ask(b, 'call', 'c-1', { agent: 'alice' })
    const [request] = await listed(b, 1)
    expect(await b.decide(request!.id, { decision: 'allow' }, { role: 'approve', agent: agent as never })).toEqual({ ok: false, code: 'INVALID_DECISION', message: "the decider's agent must be a string" })
    expect(await b.pending()).toEqual([request])
    // Refused before the id is read: an unknown id answers the same, not APPROVAL_NOT_FOUND.
    expect(await b.decide('nope', { decision: 'allow' }, { role: 'approve', agent: agent as never })).toMatchObject({ ok: false, code: 'INVALID_DECISION' })
    expect(await b.decide(request!.id, { decision: 'allow' }, { role: 'approve', agent: 'alice' })).toMatchObject({ ok: true })
    expect(await outcome).toEqual({ ok: true, value: true })
    await b.dispose()
  })
})
