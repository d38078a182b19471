/**
 * Approval inside Code Mode on the REAL default code runtime (`createSandboxRuntime`
 * from platforms/node: QuickJS in worker threads), through a real registry and a real
 * broker. What the in-process suite (test/unit/approvals/code-mode.test.ts) cannot show: the run's wall
 * clock held while a person decides, sub-call deadlines, and the session log's approval
 * records, all with a sandbox that enforces its budgets for real.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import type { ApprovalBroker } from '../../../src/approvals/index.js'
import type { ToolRuntime } from '../../../src/runtime-types.js'
import type { ApprovalDecisionEvent, ApprovalRequestEvent } from '../../../src/runtime-types.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { createMemorySessionLog } from '../../../src/session-log.js'
import { codeOf, messageOf, nextRequest, programResult, runCode as startRun, setup, tick, until } from '../approvals/helpers.js'

const sandboxes: ReturnType<typeof createSandboxRuntime>[] = []
afterAll(async () => {
  await Promise.all(sandboxes.map((sandbox) => sandbox.dispose()))
})

/** A registry on a fresh sandbox (its own budgets), a broker, a memory session log, and a slow safe read. */
function sandboxSetup(options: { maxWallMs?: number; timeoutMs?: number } = {}) {
  const codeRuntime = createSandboxRuntime({ maxWallMs: options.maxWallMs ?? 20_000, memoryMb: 32, prespawn: 0 })
  sandboxes.push(codeRuntime)
  const sessionLog = createMemorySessionLog()
  const fixture = setup(options.timeoutMs === undefined ? undefined : { timeoutMs: options.timeoutMs }, { mode: 'code', codeRuntime, sessionLog })
  const published: string[] = []
  fixture.runtime.on('tools/result', (execution) => {
    if (execution.name !== 'run_code') published.push(execution.name)
  })
  // A concurrency-safe read that takes a while, and records when it settled.
  const slowDone: number[] = []
  fixture.runtime.register(
    defineTool({
      name: 'slow_read',
      description: 'a slow read (test)',
      parameters: { ms: { type: 'number', required: true } },
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      isConcurrencySafe: () => true,
      execute: async (args) => {
        await new Promise((resolve) => setTimeout(resolve, args.ms))
        fixture.ran.push('slow_read')
        slowDone.push(Date.now())
        return 'slow done'
      },
    }),
  )
  return { ...fixture, sessionLog, published, slowDone, codeRuntime }
}

const runCode = (runtime: ToolRuntime, code: string, controller = new AbortController()) => startRun(runtime, code, controller, 'sandbox-run')

async function decide(broker: ApprovalBroker, id: string, decision: 'allow' | 'deny', reason?: string): Promise<void> {
  expect(await broker.decide(id, reason === undefined ? { decision } : { decision, reason })).toMatchObject({ ok: true })
}

describe('approval inside Code Mode on the sandbox runtime (QuickJS in worker threads)', () => {
  it('only the asking sub-call waits: its concurrency-safe siblings run and publish meanwhile; then it is allowed', async () => {
    const { broker, runtime, published, ran } = sandboxSetup()
    const asked = nextRequest(broker)
    const { callId, result } = runCode(
      runtime,
      `const [paid, ...reads] = await Promise.all([tools.pay({ n: 1 }), tools.read({ n: 1 }), tools.read({ n: 2 }), tools.slow_read({ ms: 50 })])
       return { paid, reads }`,
    )
    const request = await asked
    expect(request).toMatchObject({ callId: `${callId}:code:1`, parentCallId: callId, name: 'pay', arguments: { n: 1 }, reason: 'pay needs a person' })
    await until(() => published.length === 3)
    expect(published.sort()).toEqual(['read', 'read', 'slow_read'])
    expect(ran).not.toContain('pay:{"n":1}')
    expect((await broker.pending()).map((p) => p.id)).toEqual([request.id])
    await decide(broker, request.id, 'allow')
    expect(programResult(await result)).toEqual({ paid: 'pay done', reads: ['read done', 'read done', 'slow done'] })
    expect(published.at(-1)).toBe('pay')
  })

  it('an exclusive asking call waits for the calls before it and blocks the calls after it until decided', async () => {
    const { broker, runtime, ran, slowDone } = sandboxSetup()
    const asked = nextRequest(broker)
    const { result } = runCode(
      runtime,
      `const before = tools.slow_read({ ms: 150 }); const w = tools.write_file({ n: 1 }); const after = tools.read({ n: 2 })
       return [await before, await w, await after]`,
    )
    const request = await asked
    // The write asked only once the earlier call had settled…
    expect(slowDone).toHaveLength(1)
    expect(request.requestedAt).toBeGreaterThanOrEqual(slowDone[0]!)
    await tick(100)
    // …and nothing submitted after it runs while a person decides.
    expect(ran).toEqual(['slow_read'])
    await decide(broker, request.id, 'allow')
    expect(programResult(await result)).toEqual(['slow done', 'write_file done', 'read done'])
    expect(ran).toEqual(['slow_read', 'write_file:{"n":1}', 'read:{"n":2}'])
  })

  it('a denial rejects only that tools.x() with a ToolCallError the program catches (the person\'s reason, no "handler failed")', async () => {
    const { broker, runtime, ran } = sandboxSetup()
    const asked = nextRequest(broker)
    const { result } = runCode(
      runtime,
      `const read = await tools.read({ n: 1 })
       try { await tools.pay({ n: 9 }) } catch (e) { return { read, isToolCallError: e instanceof ToolCallError, name: e.name, tool: e.toolName, message: e.message } }
       return 'paid?'`,
    )
    await decide(broker, (await asked).id, 'deny', 'over budget')
    const value = programResult(await result) as Record<string, unknown>
    expect(value).toEqual({ read: 'read done', isToolCallError: true, name: 'ToolCallError', tool: 'pay', message: 'pay was denied by a person: over budget' })
    expect(ran).toEqual(['read:{"n":1}'])
  })

  it('an expired request rejects the sub-call with a ToolCallError saying it expired', async () => {
    const { broker, runtime, events } = sandboxSetup({ timeoutMs: 150 })
    const { result } = runCode(runtime, `try { await tools.pay({}) } catch (e) { return [e.name, e.message] }`)
    expect(programResult(await result)).toEqual(['ToolCallError', 'pay was denied by timeout: nobody decided within 150 ms'])
    expect(events.map((e) => e.type)).toEqual(['requested', 'expired'])
    expect(await broker.pending()).toEqual([])
  })

  it('the wall budget is paused while a person decides: maxWallMs 1.5 s, a 2 s decision, and the run still succeeds', async () => {
    // The decision outlasts the whole ceiling; the program's own part (start, two calls) has
    // the full 1.5 s, which a loaded machine keeps by a wide margin.
    const { broker, runtime, sessionLog } = sandboxSetup({ maxWallMs: 1_500 })
    let seen: { remaining: number; deadline: number | undefined } | undefined
    runtime.register(
      defineTool({
        name: 'probe',
        description: 'reads its deadline (test)',
        parameters: {},
        output: { schema: { type: 'number' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
        execute: (_args, exec) => {
          seen = { remaining: (exec.deadline ?? Number.NaN) - Date.now(), deadline: exec.deadline }
          return 1
        },
      }),
    )
    runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'probe' ? { kind: 'ask' } : decision))
    const asked = nextRequest(broker)
    const started = Date.now()
    const { callId, result } = runCode(runtime, `const a = await tools.probe({}); const b = await tools.read({}); return [a, b]`)
    const request = await asked
    await tick(2_000)
    await decide(broker, request.id, 'allow')
    const settled = await result
    expect(programResult(settled)).toEqual([1, 'read done'])
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_000)
    // The body learnt a deadline moved by the wait: still some of the 1.5 s budget ahead of it.
    expect(seen!.remaining).toBeGreaterThan(0)
    expect(seen!.remaining).toBeLessThanOrEqual(1_500)
    // The session log: request and decision of that sub-call, with their times.
    const approvals = sessionLog.events.filter((e) => e.type === 'tool/approval-request' || e.type === 'tool/approval-decision')
    expect(approvals.map((e) => e.type)).toEqual(['tool/approval-request', 'tool/approval-decision'])
    const [asking, decided] = approvals as [ApprovalRequestEvent, ApprovalDecisionEvent]
    expect(asking).toMatchObject({ parentCallId: callId, subCallId: `${callId}:code:1`, name: 'probe', arguments: {} })
    expect(decided).toMatchObject({ parentCallId: callId, subCallId: `${callId}:code:1`, name: 'probe', decision: 'allow', requestedAt: asking.requestedAt })
    expect(decided.waitedMs).toBeGreaterThanOrEqual(1_900)
    expect(decided.decidedAt - decided.requestedAt).toBe(decided.waitedMs)
    // Logged in order: after the sub-call started, before it settled.
    const order = sessionLog.events.map((e) => e.type)
    expect(order.slice(0, 4)).toEqual(['tool/code-dispatch-start', 'tool/approval-request', 'tool/approval-decision', 'tool/code-dispatch'])
  })

  it('control: a 1.5 s wait that is not a person deciding (a slow gate) is charged to the wall budget', async () => {
    const { runtime } = sandboxSetup({ maxWallMs: 500 })
    runtime.on('tools/pre-execute', async (decision, execution) => {
      if (execution.name === 'read') await new Promise((resolve) => setTimeout(resolve, 1_500))
      return decision
    })
    const { result } = runCode(runtime, `return await tools.read({})`)
    const settled = await result
    expect(codeOf(settled)).toBe('CODE_RUN_FAILED')
    expect(messageOf(settled)).toContain('wall-clock ceiling of 500 ms reached')
  })

  it('aborting the run withdraws the waiting sub-call\'s request; the session log says so', async () => {
    const { broker, runtime, events, ran, sessionLog } = sandboxSetup()
    const controller = new AbortController()
    const asked = nextRequest(broker)
    const { result } = runCode(runtime, `return await tools.pay({})`, controller)
    const request = await asked
    controller.abort()
    const settled = await result
    expect(codeOf(settled)).toBe('CODE_RUN_FAILED')
    expect(messageOf(settled)).toContain('(abort)')
    expect(await broker.pending()).toEqual([])
    expect(events.map((e) => e.type)).toEqual(['requested', 'withdrawn'])
    expect(await broker.decide(request.id, { decision: 'allow' })).toMatchObject({ ok: false, code: 'APPROVAL_WITHDRAWN' })
    expect(ran).toEqual([])
    const decision = sessionLog.events.find((e) => e.type === 'tool/approval-decision') as ApprovalDecisionEvent
    expect(decision).toMatchObject({ decision: 'withdrawn', name: 'pay' })
  })

  it('a run that returns without awaiting its asking call withdraws the request when it settles', async () => {
    const { broker, runtime, events } = sandboxSetup()
    const asked = nextRequest(broker)
    const { result } = runCode(runtime, `tools.pay({}).catch(() => {}); await tools.slow_read({ ms: 100 }); return 'early'`)
    await asked
    expect(programResult(await result)).toBe('early')
    expect(events.map((e) => e.type)).toEqual(['requested', 'withdrawn'])
  })
})

describe('sub-call deadlines on the sandbox runtime', () => {
  it('exec.deadline is the run\'s wall-clock end and exec.signal aborts when the wall budget ends', async () => {
    // 1.5 s: the program reaches its one call at once, long before the ceiling, on a loaded machine too.
    const { runtime } = sandboxSetup({ maxWallMs: 1_500 })
    let observed: { deadline: number | undefined; calledAt: number; abortedAt?: number } | undefined
    runtime.register(
      defineTool({
        name: 'wait_for_abort',
        description: 'waits until its signal aborts (test)',
        parameters: {},
        output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
        execute: (_args, exec) =>
          new Promise<string>((_resolve, reject) => {
            const seen = { deadline: exec.deadline, calledAt: Date.now() } as NonNullable<typeof observed>
            observed = seen
            exec.signal.addEventListener('abort', () => {
              seen.abortedAt = Date.now()
              reject(exec.signal.reason)
            })
          }),
      }),
    )
    const started = Date.now()
    const { result } = runCode(runtime, `return await tools.wait_for_abort({})`)
    const settled = await result
    expect(messageOf(settled)).toContain('wall-clock ceiling of 1500 ms reached')
    expect(observed!.deadline).toBeTypeOf('number')
    expect(observed!.deadline!).toBeGreaterThan(observed!.calledAt)
    // At most the whole budget ahead of the call (the run's clock starts when a thread takes it, after `started`).
    expect(observed!.deadline! - observed!.calledAt).toBeLessThanOrEqual(1_500)
    expect(observed!.deadline!).toBeGreaterThan(started)
    // The signal fired at the wall budget's end: not before the deadline (a little scheduling slack), not long after.
    expect(observed!.abortedAt!).toBeGreaterThanOrEqual(observed!.deadline! - 25)
    expect(observed!.abortedAt! - observed!.deadline!).toBeLessThan(1_000)
  })

  it('outside Code Mode a call has no deadline (the property is absent)', async () => {
    const { runtime } = sandboxSetup()
    let has: boolean | undefined
    runtime.register(
      defineTool({
        name: 'direct',
        description: 'test',
        parameters: {},
        output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
        execute: (_args, exec) => {
          has = 'deadline' in exec
          return 'ok'
        },
      }),
    )
    runtime.agent('native-agent').presentAs('native')
    const direct = await runtime.execute({ callId: 'direct-1', name: 'direct', arguments: {}, signal: new AbortController().signal, agent: 'native-agent' })
    expect(direct.isError).toBe(false)
    expect(has).toBe(false)
  })
})
