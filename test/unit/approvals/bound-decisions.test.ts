/**
 * A decision is bound to a call, not to a call id (issue 31, item 2): a stored decision
 * answers only a call of the same kind, agent, id, run (parent and the run's secret), tool
 * and canonical arguments. Anything else asks on its own, in both brokers.
 */
import { describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { ApprovalBroker } from '../../../src/approvals/index.js'
import { argumentsHash } from '../../../src/durable/call-key.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ToolExecutionResult } from '../../../src/types.js'
import { codeOf, listed, until } from './helpers.js'

function setup(broker: ApprovalBroker, codeRuntime?: ReturnType<typeof createSandboxRuntime>) {
  const runtime = createToolRuntime({ approvals: broker, ...(codeRuntime === undefined ? {} : { mode: 'both', codeRuntime }) })
  const ran: string[] = []
  runtime.register(
    defineTool({
      name: 'pay',
      description: 'pays',
      parameters: { amount: { type: 'number', required: true }, to: { type: 'string' } },
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: (args) => {
        ran.push(`pay ${args.amount}`)
        return 'paid'
      },
    }),
  )
  runtime.on('tools/pre-execute', (d, exec) => (exec.name === 'pay' ? { kind: 'ask', reason: 'moves money' } : d))
  return { runtime, ran }
}

const signal = () => new AbortController().signal

describe('a stored decision answers only the call it was taken for', () => {
  it('the same call id with other arguments is a new request: the earlier Allow is not reused', async () => {
    const broker = createApprovalBroker({ store: createMemoryStore(), pollIntervalMs: 20 })
    const { runtime, ran } = setup(broker)
    const first = runtime.execute({ callId: 'c-1', name: 'pay', arguments: { amount: 1, to: 'me' }, signal: signal() })
    const [request] = await listed(broker, 1)
    expect(request!.argumentsHash).toBe(await argumentsHash({ to: 'me', amount: 1 }))
    await broker.decide(request!.id, { decision: 'allow' })
    expect(codeOf(await first)).toBe('OK')
    // The same id, other arguments: asks, and nothing runs meanwhile.
    const second = runtime.execute({ callId: 'c-1', name: 'pay', arguments: { amount: 999, to: 'attacker' }, signal: signal() })
    const [again] = await listed(broker, 1)
    expect(again).toMatchObject({ callId: 'c-1', arguments: { amount: 999, to: 'attacker' } })
    expect(again!.id).not.toBe(request!.id)
    expect(ran).toEqual(['pay 1'])
    await broker.decide(again!.id, { decision: 'deny' })
    expect(codeOf(await second)).toBe('DENIED_BY_APPROVAL')
    // The very same call (same arguments in another key order) asked again: the decision stands, as for a resumed run.
    const third = await runtime.execute({ callId: 'c-1', name: 'pay', arguments: { to: 'me', amount: 1 }, signal: signal() })
    expect(codeOf(third)).toBe('OK')
    expect(ran).toEqual(['pay 1', 'pay 1'])
    await runtime.dispose()
    await broker.dispose()
  })

  it('an open request for another call under the same id does not absorb a new one: each asks, each is decided on its own', async () => {
    const broker = createApprovalBroker({ store: createMemoryStore(), pollIntervalMs: 20 })
    const { runtime, ran } = setup(broker)
    const victim = runtime.execute({ callId: 'shared', name: 'pay', arguments: { amount: 5 }, signal: signal() })
    await listed(broker, 1)
    const intruder = runtime.execute({ callId: 'shared', name: 'pay', arguments: { amount: 500 }, signal: signal() })
    const both = await listed(broker, 2)
    const mine = both.find((p) => (p.arguments as { amount: number }).amount === 5)!
    await broker.decide(mine.id, { decision: 'allow' })
    expect(codeOf(await victim)).toBe('OK')
    expect(ran).toEqual(['pay 5'])
    const [left] = await broker.pending()
    expect(left).toMatchObject({ callId: 'shared', arguments: { amount: 500 } })
    await broker.decide(left!.id, { decision: 'deny' })
    expect(codeOf(await intruder)).toBe('DENIED_BY_APPROVAL')
    expect(ran).toEqual(['pay 5'])
    await runtime.dispose()
    await broker.dispose()
  })

  it('a direct call under a run\'s sub-call id is not the run\'s call: the person\'s Allow of the run\'s request runs only the run\'s', async () => {
    const codeRuntime = createSandboxRuntime({ memoryMb: 32, prespawn: 0 })
    const broker = createApprovalBroker({ store: createMemoryStore(), pollIntervalMs: 20 })
    const { runtime, ran } = setup(broker, codeRuntime)
    const run = runtime.execute({ callId: 'victim', name: 'run_code', arguments: { code: 'return await tools.pay({ amount: 5 })', description: 'pays 5' }, signal: signal() })
    const [asked] = await listed(broker, 1)
    expect(asked).toMatchObject({ callId: 'victim:code:1', parentCallId: 'victim' })
    // Same id, same tool, same arguments, from outside the run.
    const direct = runtime.execute({ callId: 'victim:code:1', name: 'pay', arguments: { amount: 5 }, signal: signal() })
    const both = await listed(broker, 2)
    expect(both.map((p) => p.parentCallId ?? null).sort()).toEqual(['victim', null].sort())
    await broker.decide(asked!.id, { decision: 'allow' })
    expect(codeOf(await run)).toBe('OK')
    expect(ran).toEqual(['pay 5'])
    const [left] = await broker.pending()
    expect(left).toMatchObject({ callId: 'victim:code:1' })
    expect(left!.parentCallId).toBeUndefined()
    await broker.decide(left!.id, { decision: 'deny' })
    expect(codeOf(await direct)).toBe('DENIED_BY_APPROVAL')
    expect(ran).toEqual(['pay 5'])
    await runtime.dispose()
    await broker.dispose()
    await codeRuntime.dispose()
  })

  it('a new program under a finished run\'s call id does not inherit its decisions (the run secret differs), nor does a direct call', async () => {
    const codeRuntime = createSandboxRuntime({ memoryMb: 32, prespawn: 0 })
    const broker = createApprovalBroker({ store: createMemoryStore(), pollIntervalMs: 20 })
    const { runtime, ran } = setup(broker, codeRuntime)
    const code = 'return await tools.pay({ amount: 5 })'
    const first = runtime.execute({ callId: 'reused', name: 'run_code', arguments: { code, description: 'pays 5' }, signal: signal() })
    const [asked] = await listed(broker, 1)
    await broker.decide(asked!.id, { decision: 'allow' })
    expect(codeOf(await first)).toBe('OK')
    for (const input of [
      { callId: 'reused', name: 'run_code', arguments: { code, description: 'pays 5' } },
      { callId: 'reused:code:1', name: 'pay', arguments: { amount: 5 } },
    ]) {
      const again = runtime.execute({ ...input, signal: signal() })
      const [fresh] = await listed(broker, 1)
      expect(fresh!.id).not.toBe(asked!.id)
      expect(ran).toEqual(['pay 5'])
      await broker.decide(fresh!.id, { decision: 'deny' })
      expect((await again).isError).toBe(true)
    }
    await runtime.dispose()
    await broker.dispose()
    await codeRuntime.dispose()
  })

  it('the broker of its own (a memory store) binds decisions as a shared store does: the same call asked twice shares one request, other arguments ask anew', async () => {
    const broker = createApprovalBroker()
    const { runtime, ran } = setup(broker)
    const same = [
      runtime.execute({ callId: 'm-1', name: 'pay', arguments: { amount: 1 }, signal: signal() }),
      runtime.execute({ callId: 'm-1', name: 'pay', arguments: { amount: 1 }, signal: signal() }),
    ]
    await until(async () => (await broker.pending()).length === 1)
    const [only] = await broker.pending()
    await broker.decide(only!.id, { decision: 'allow' })
    expect((await Promise.all(same)).map(codeOf)).toEqual(['OK', 'OK'])
    // The same id with other arguments is another call: a new request, decided on its own.
    const other = runtime.execute({ callId: 'm-1', name: 'pay', arguments: { amount: 2 }, signal: signal() })
    await until(async () => (await broker.pending()).length === 1)
    const [next] = await broker.pending()
    expect(next!.id).not.toBe(only!.id)
    await broker.decide(next!.id, { decision: 'deny' })
    expect(codeOf(await other)).toBe('DENIED_BY_APPROVAL')
    expect(ran).toEqual(['pay 1', 'pay 1'])
    await runtime.dispose()
  })
})
