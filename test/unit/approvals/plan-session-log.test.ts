/**
 * Plan approval in the session log: a plan put to the approval handler logs one
 * `tool/plan-approval-request` (the program and its plan, bounded) and exactly one
 * `tool/plan-approval-decision` (allow with the tools pre-approved, deny, withdrawn), before
 * any sub-call's dispatch events. A real registry, the real broker and the in-process
 * CodeRuntime; a throwing sink changes nothing. Web standards only: runs in Node and in Chromium
 * (the approvals suites are core unit suites there).
 */
import { describe, expect, it } from 'vitest'
import type { PlanApprovalDecisionEvent, PlanApprovalRequestEvent, SessionLogEvent, SessionLogSink } from '../../../src/runtime-types.js'
import { createMemorySessionLog, MAX_LOGGED_CODE_CHARS, MAX_LOGGED_PLAN_ITEMS } from '../../../src/session-log.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { codeOf, nextRequest, programResult, runCode, setup } from './helpers.js'

function planSetup(sessionLog: SessionLogSink = createMemorySessionLog()) {
  const fixture = setup({ plans: true }, { mode: 'code', codeRuntime: createInProcessRuntime(), sessionLog })
  const events = (): readonly SessionLogEvent[] => ('events' in sessionLog ? (sessionLog as { events: readonly SessionLogEvent[] }).events : [])
  const plans = () => events().filter((e): e is PlanApprovalRequestEvent | PlanApprovalDecisionEvent => e.type.startsWith('tool/plan-approval'))
  return { ...fixture, events, plans }
}

const PROGRAM = 'await tools.write_file({ n: 1 })\nawait tools.read({ n: 2 })\nreturn 1'

describe('plan approval in the session log', () => {
  it('allow: a request with the plan, then a decision naming the pre-approved tools, then the dispatches', async () => {
    const { broker, runtime, events } = planSetup()
    const asked = nextRequest(broker)
    const { callId, result } = runCode(runtime, PROGRAM)
    const request = await asked
    // The request is logged while the plan waits, before anything was dispatched.
    expect(events().map((e) => e.type)).toEqual(['tool/plan-approval-request'])
    expect(events()[0]).toMatchObject({
      parentCallId: callId,
      subCallId: `${callId}:plan`,
      name: 'run_code',
      code: PROGRAM,
      codeChars: PROGRAM.length,
      description: 'approval test',
      calls: [
        { name: 'write_file', line: 1 },
        { name: 'read', line: 2 },
      ],
      callCount: 2,
      asking: [{ name: 'write_file', reason: 'write_file needs a person' }],
      askingCount: 1,
      dynamic: false,
      reason: 'the program calls a tool that asks',
    })
    await broker.decide(request.id, { decision: 'allow' })
    expect(programResult(await result)).toBe(1)
    expect(events().map((e) => e.type)).toEqual([
      'tool/plan-approval-request',
      'tool/plan-approval-decision',
      'tool/code-dispatch-start',
      'tool/code-dispatch',
      'tool/code-dispatch-start',
      'tool/code-dispatch',
    ])
    const decided = events()[1] as PlanApprovalDecisionEvent
    expect(decided).toMatchObject({ parentCallId: callId, subCallId: `${callId}:plan`, name: 'run_code', decision: 'allow', granted: ['write_file'] })
    expect(decided.message).toBeUndefined()
    expect(decided.waitedMs).toBe(decided.decidedAt - decided.requestedAt)
    expect(decided.requestedAt).toBe((events()[0] as PlanApprovalRequestEvent).requestedAt)
  })

  it("deny: the decision carries the run's error and nothing is dispatched", async () => {
    const { broker, runtime, events, ran } = planSetup()
    const asked = nextRequest(broker)
    const { result } = runCode(runtime, PROGRAM)
    await broker.decide((await asked).id, { decision: 'deny', reason: 'not today' })
    expect(codeOf(await result)).toBe('DENIED_BY_APPROVAL')
    expect(events().map((e) => e.type)).toEqual(['tool/plan-approval-request', 'tool/plan-approval-decision'])
    expect(events()[1]).toMatchObject({ decision: 'deny', granted: [], message: expect.stringContaining('not today') })
    expect(ran).toEqual([])
  })

  it('withdrawn: a run aborted while its plan waits', async () => {
    const { broker, runtime, plans } = planSetup()
    const controller = new AbortController()
    const asked = nextRequest(broker)
    const { result } = runCode(runtime, PROGRAM, controller)
    await asked
    controller.abort()
    await result
    expect(plans().map((e) => e.type)).toEqual(['tool/plan-approval-request', 'tool/plan-approval-decision'])
    expect(plans()[1]).toMatchObject({ decision: 'withdrawn', granted: [] })
  })

  it('a dynamic plan allowed pre-approves nothing, and the decision says so', async () => {
    const { broker, runtime, plans } = planSetup()
    const asked = nextRequest(broker)
    const { result } = runCode(runtime, "const name = 'read'\nawait tools.write_file({ n: 1 })\nreturn await tools[name]({ n: 2 })")
    await broker.decide((await asked).id, { decision: 'allow' })
    // The planned write still asks on its own.
    await broker.decide((await nextRequest(broker)).id, { decision: 'allow' })
    programResult(await result)
    expect(plans()[0]).toMatchObject({ dynamic: true })
    expect(plans()[1]).toMatchObject({ decision: 'allow', granted: [] })
  })

  it('a program of hostile size is logged bounded: head and tail of its code, 100 calls, the counts', async () => {
    const { broker, runtime, plans } = planSetup()
    // Within what the host's thread reads without a preflight thread (MAX_INLINE_PLAN_CHARS).
    const lines = Array.from({ length: 250 }, (_, i) => `await tools.write_file({ n: ${i} }) // ${'x'.repeat(20)}`)
    const code = lines.join('\n')
    const asked = nextRequest(broker)
    const { result } = runCode(runtime, code)
    await broker.decide((await asked).id, { decision: 'deny' })
    await result
    const logged = plans()[0] as PlanApprovalRequestEvent
    expect(logged.codeChars).toBe(code.length)
    expect(logged.code.length).toBeLessThan(MAX_LOGGED_CODE_CHARS + 100)
    expect(logged.code.startsWith(lines[0]!)).toBe(true)
    expect(logged.code.endsWith(lines.at(-1)!)).toBe(true)
    expect(logged.code).toMatch(/characters not logged/)
    expect(logged.calls).toHaveLength(MAX_LOGGED_PLAN_ITEMS)
    expect(logged.callCount).toBe(250)
    expect(JSON.stringify(logged).length).toBeLessThan(16 * 1024)
  })

  it('a sink that throws changes nothing: the plan is still asked and its answer obeyed', async () => {
    let appended = 0
    const throwing: SessionLogSink = {
      append: () => {
        appended++
        throw new Error('disk full')
      },
    }
    const { broker, runtime, ran } = planSetup(throwing)
    const asked = nextRequest(broker)
    const { result } = runCode(runtime, PROGRAM)
    await broker.decide((await asked).id, { decision: 'allow' })
    expect(programResult(await result)).toBe(1)
    expect(ran).toEqual(['write_file:{"n":1}', 'read:{"n":2}'])
    expect(appended).toBeGreaterThanOrEqual(2)
  })
})
