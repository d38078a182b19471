/**
 * Concurrent `GET /v1/approvals` (mutation testing, stop 55: `listPending` in
 * src/http/_approvals.ts). Callers arriving while a listing runs share the one listing queued
 * behind it, so concurrent requests cost at most two listings of a broker at a time; that
 * sharing is per agent filter: a token pinned to one agent never receives a listing made for
 * another agent (or for every agent), however the requests interleave. And a broker of the
 * caller's own making that ignores `pending({ agent })` or `pending({ run })` is filtered again
 * here; one whose listing carries no `listing` facts answers a whole list (nothing says cut).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createApprovalBroker, type ApprovalBroker, type ApprovalPendingOptions, type PendingApproval } from '../../../src/approvals/index.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import { listPending } from '../../../src/http/_approvals.js'
import { PERSON_TOKEN, ROLE_TOKENS, createFixture, jsonAuth } from '../http/fixtures.js'
import { until } from '../../support/poll.js'

const ALICE = 'alice-approver-token-0123456789'
const BOB = 'bob-approver-token-0123456789'
/** An approver pinned to an agent whose name is the text `undefined`. */
const LITERAL = 'undefined-approver-token-0123456789'
const pinned = (token: string, id: string, agent: string) => ({ token, roles: ['run', 'approve'] as ('run' | 'approve')[], id, agent })
const TOKENS = [...ROLE_TOKENS, pinned(ALICE, 'alice-approver', 'alice'), pinned(BOB, 'bob-approver', 'bob'), pinned(LITERAL, 'literal-approver', 'undefined')]

const cleanups: Array<() => void | Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup()
})

/** A real broker with one open request of each agent (and one of the global layer); `runs[i]`: the run whose sub-call the i-th is. */
async function brokerWithRequests(agents: readonly (string | undefined)[], runs: readonly (string | undefined)[] = []): Promise<ApprovalBroker> {
  const broker = createApprovalBroker({ store: createMemoryStore() })
  const controller = new AbortController()
  cleanups.push(async () => {
    controller.abort()
    await broker.dispose()
  })
  let n = 0
  for (const agent of agents) {
    const run = runs[n]
    const execution = { callId: `${run ?? 'c'}:code:${++n}`, name: 'pay', arguments: { n }, signal: controller.signal, ...(agent === undefined ? {} : { agent }) }
    Promise.resolve(broker.handler({ execution, ...(run === undefined ? {} : { parentCallId: run }) } as never)).catch(() => undefined)
  }
  await until(async () => (await broker.pending()).length === agents.length, 'the requests')
  return broker
}

/**
 * `real` as a broker of the caller's own making whose listings wait until the test lets each
 * through; `ignoreAgent`: it lists every agent's requests whatever `pending({ agent })` says.
 */
function heldBroker(real: ApprovalBroker, ignoreAgent = false) {
  const waiting: Array<{ agent: string | undefined; go: () => void }> = []
  let running = 0
  let most = 0
  let calls = 0
  let passing = false
  const broker: ApprovalBroker = {
    ...real,
    handler: real.handler,
    decide: (id, input, by) => real.decide(id, input, by),
    subscribe: (listener) => real.subscribe(listener),
    dispose: () => real.dispose(),
    async pending(options?: ApprovalPendingOptions) {
      calls++
      running++
      most = Math.max(most, running)
      try {
        if (!passing) await new Promise<void>((go) => waiting.push({ agent: options?.agent, go }))
        return await real.pending(ignoreAgent ? undefined : options)
      } finally {
        running--
      }
    },
  }
  cleanups.unshift(() => {
    passing = true
    for (const held of waiting.splice(0)) held.go()
  })
  return {
    broker,
    /** The agent filters of the listings waiting now, in the order they started. */
    waiting: () => waiting.map((held) => held.agent),
    release: () => waiting.shift()?.go(),
    get calls() {
      return calls
    },
    get most() {
      return most
    },
  }
}

type Listed = { approvals: PendingApproval[]; truncated?: boolean }

describe('concurrent GET /v1/approvals share listings, per agent filter', () => {
  it('alice, then bob, then alice again while both list: each alice answer lists alice’s request alone, bob’s lists bob’s', async () => {
    const held = heldBroker(await brokerWithRequests(['alice', 'bob', undefined]))
    const { app } = createFixture({ approvals: held.broker }, { tokens: TOKENS })
    const list = (token: string): Promise<Listed> => Promise.resolve(app.request('/v1/approvals', { headers: jsonAuth(token) })).then((r) => r.json() as Promise<Listed>)
    const alice = list(ALICE)
    await until(() => held.waiting().length === 1, 'alice’s listing')
    // Bob's filter is another listing, started at once beside alice's (not queued behind it).
    const bob = list(BOB)
    await until(() => held.waiting().length === 2, 'bob’s listing')
    expect(held.waiting()).toEqual(['alice', 'bob'])
    // Alice again, while both run: she waits for a listing of her own, never joins bob's.
    const aliceAgain = list(ALICE)
    await new Promise((resolve) => setTimeout(resolve, 20))
    while (held.waiting().length > 0) {
      held.release()
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    expect((await alice).approvals.map((a) => a.agent)).toEqual(['alice'])
    expect((await bob).approvals.map((a) => a.agent)).toEqual(['bob'])
    expect((await aliceAgain).approvals.map((a) => a.agent)).toEqual(['alice'])
  })

  it('an approver pinned to the agent named "undefined" shares nothing with an unpinned approver', async () => {
    const held = heldBroker(await brokerWithRequests(['alice', 'undefined', undefined]))
    const { app } = createFixture({ approvals: held.broker }, { tokens: TOKENS })
    const list = (token: string): Promise<Listed> => Promise.resolve(app.request('/v1/approvals', { headers: jsonAuth(token) })).then((r) => r.json() as Promise<Listed>)
    const literal = list(LITERAL)
    await until(() => held.waiting().length === 1, 'the pinned listing')
    const everyone = list(PERSON_TOKEN)
    await until(() => held.waiting().length === 2, 'the unpinned listing')
    const literalAgain = list(LITERAL)
    await new Promise((resolve) => setTimeout(resolve, 20))
    while (held.waiting().length > 0) {
      held.release()
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    expect((await literal).approvals.map((a) => a.agent)).toEqual(['undefined'])
    expect((await everyone).approvals).toHaveLength(3)
    expect((await literalAgain).approvals.map((a) => a.agent)).toEqual(['undefined'])
  })

  it('one listing of an agent filter at a time: a caller arriving while the queued listing runs queues behind it', async () => {
    const held = heldBroker(await brokerWithRequests(['alice', undefined]))
    const { app } = createFixture({ approvals: held.broker }, { tokens: TOKENS })
    const list = (): Promise<Listed> => Promise.resolve(app.request('/v1/approvals', { headers: jsonAuth(PERSON_TOKEN) })).then((r) => r.json() as Promise<Listed>)
    const first = list()
    await until(() => held.waiting().length === 1, 'the first listing')
    // Two more join the one listing queued behind the first.
    const joined = [list(), list()]
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(held.calls).toBe(1)
    held.release()
    await until(() => held.calls === 2 && held.waiting().length === 1, 'the queued listing')
    // A fourth arrives while the queued listing runs: it queues behind that one, not beside it.
    const late = list()
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(held.waiting()).toHaveLength(1)
    held.release()
    await until(() => held.calls === 3 && held.waiting().length === 1, 'the late caller’s listing')
    held.release()
    for (const answer of [first, ...joined, late]) expect((await answer).approvals).toHaveLength(2)
    expect([held.calls, held.most]).toEqual([3, 1])
  })

  it('a broker that ignores pending({ agent }) is filtered by the route: a pinned approver sees its agent’s requests alone', async () => {
    const held = heldBroker(await brokerWithRequests(['alice', 'bob', undefined]), true)
    const { app } = createFixture({ approvals: held.broker }, { tokens: TOKENS })
    const answer = Promise.resolve(app.request('/v1/approvals', { headers: jsonAuth(ALICE) })).then((r) => r.json() as Promise<Listed>)
    await until(() => held.waiting().length === 1, 'the listing')
    held.release()
    expect((await answer).approvals.map((a) => a.agent)).toEqual(['alice'])
  })

  it('a broker that ignores pending({ run }) is filtered too: a run’s listing keeps its own sub-calls’ requests alone', async () => {
    const held = heldBroker(await brokerWithRequests([undefined, undefined, undefined], ['run-a', 'run-b', 'run-a']), true)
    const listing = listPending(held.broker, { run: 'run-a' })
    await until(() => held.waiting().length === 1, 'the listing')
    held.release()
    const listed = await listing
    expect(listed.approvals.map((a) => a.parentCallId)).toEqual(['run-a', 'run-a'])
    expect(listed.truncated).toBe(false)
  })

  it('a broker whose listing carries no listing facts (a bare array): 200, the list whole, no truncated', async () => {
    const real = await brokerWithRequests(['alice', undefined])
    const bare: ApprovalBroker = { ...real, handler: real.handler, decide: (id, input, by) => real.decide(id, input, by), subscribe: (l) => real.subscribe(l), dispose: () => real.dispose(), pending: async (o) => [...(await real.pending(o))] as never }
    const { app } = createFixture({ approvals: bare }, { tokens: TOKENS })
    const response = await app.request('/v1/approvals', { headers: jsonAuth(PERSON_TOKEN) })
    expect(response.status).toBe(200)
    const body = (await response.json()) as Listed
    expect(Object.keys(body)).toEqual(['approvals'])
    expect(body.approvals).toHaveLength(2)
  })
})
