/**
 * Plan approval (issue 22, item 3): one request of kind `plan` for a `run_code` program
 * whose planned tools ask, through a real registry, the real broker and the in-process
 * test CodeRuntime. Every test counts the requests the broker opened and the tool bodies
 * that ran.
 */
import { describe, expect, it } from 'vitest'
import type { ApprovalBroker, PendingApproval } from '../../../src/approvals/index.js'
import { renderApprovalPlan } from '../../../src/approvals/index.js'
import { forwardApprovals } from '../../../src/http/_approvals.js'
import { questionText } from '../../../src/mcp/_elicitation.js'
import type { ApprovalRequest } from '../../../src/types.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { codeOf, messageOf, nextRequest, programResult, runCode, setup, until } from './helpers.js'

function planSetup(plans = true) {
  const fixture = setup({ plans }, { mode: 'code', codeRuntime: createInProcessRuntime() })
  const requested = (): PendingApproval[] => fixture.events.flatMap((e) => (e.type === 'requested' ? [e.approval] : []))
  return { ...fixture, requested }
}

async function decide(broker: ApprovalBroker, asked: Promise<PendingApproval>, decision: 'allow' | 'deny', reason?: string): Promise<PendingApproval> {
  const request = await asked
  expect(broker.decide(request.id, reason === undefined ? { decision } : { decision, reason }).ok).toBe(true)
  return request
}

const WRITES = `const out = []
for (let n = 0; n < 20; n++) out.push(await tools.write_file({ n }))
const r = await tools.read({ n: 1 })
return { out: out.length, r }`

describe('plan approval', () => {
  it('allow: one plan request, then 20 planned writes run without another ask', async () => {
    const { broker, runtime, ran, requested } = planSetup()
    const asked = nextRequest(broker)
    const { callId, result } = runCode(runtime, WRITES)
    const request = await asked
    expect(request).toMatchObject({ kind: 'plan', callId, name: 'run_code', reason: 'the program calls a tool that asks' })
    expect(request.plan).toEqual({ codeLength: WRITES.length, calls: [{ name: 'write_file', line: 2 }, { name: 'read', line: 3 }], moreCalls: 0, asking: [{ name: 'write_file', reason: 'write_file needs a person' }], dynamic: false })
    expect(request.summary).toContain('2 | for (let n = 0; n < 20; n++) out.push(await tools.write_file({ n }))')
    // Nothing ran while the plan waited.
    expect(ran).toEqual([])
    broker.decide(request.id, { decision: 'allow' })
    expect(programResult(await result)).toEqual({ out: 20, r: 'read done' })
    expect(requested().length).toBe(1)
    expect(ran.filter((r) => r.startsWith('write_file')).length).toBe(20)
  })

  it('deny: the run ends before anything runs, and the error names who denied it', async () => {
    const { broker, runtime, ran, requested } = planSetup()
    const asked = nextRequest(broker)
    const { result } = runCode(runtime, `await tools.read({ n: 1 })\nawait tools.write_file({ n: 2 })`)
    await decide(broker, asked, 'deny', 'not today')
    const settled = await result
    expect(codeOf(settled)).toBe('DENIED_BY_APPROVAL')
    expect(messageOf(settled)).toContain('was denied before anything ran (the program was denied by a person: not today)')
    expect(ran).toEqual([])
    expect(requested().length).toBe(1)
  })

  it('a pre-approval ends with its run: the same program run again asks again', async () => {
    const { broker, runtime, ran, requested } = planSetup()
    for (let i = 0; i < 2; i++) {
      const plan = nextRequest(broker)
      const { result } = runCode(runtime, `return await tools.write_file({ n: 1 })`)
      await decide(broker, plan, 'allow')
      programResult(await result)
    }
    expect(requested().map((r) => r.kind)).toEqual(['plan', 'plan'])
    expect(ran).toEqual(['write_file:{"n":1}', 'write_file:{"n":1}'])
  })

  it('a dynamic plan pre-approves nothing: the planned write and the computed pay each ask', async () => {
    const { broker, runtime, ran, requested } = planSetup()
    const plan = nextRequest(broker)
    const { result } = runCode(runtime, `const name = ['p', 'ay'].join('')\nawait tools.write_file({ n: 1 })\nreturn await tools[name]({ n: 2 })`)
    const request = await plan
    expect(request.plan?.dynamic).toBe(true)
    expect(request.summary).toContain('nothing is pre-approved')
    const writeAsk = nextRequest(broker)
    broker.decide(request.id, { decision: 'allow' })
    // Dynamic: even the planned write_file asks on its own, then pay.
    const write = await decide(broker, writeAsk, 'allow')
    expect(write).toMatchObject({ kind: 'call', name: 'write_file' })
    const payAsk = await decide(broker, nextRequest(broker), 'allow')
    expect(payAsk).toMatchObject({ kind: 'call', name: 'pay' })
    expect(programResult(await result)).toBe('pay done')
    expect(requested().map((r) => `${r.kind}:${r.name}`)).toEqual(['plan:run_code', 'call:write_file', 'call:pay'])
    expect(ran).toEqual(['write_file:{"n":1}', 'pay:{"n":2}'])
  })

  it('a call outside the pre-approved tools still asks on its own (a gate that asks only for some arguments)', async () => {
    const { broker, runtime, requested } = planSetup()
    const plan = nextRequest(broker)
    // The probe (planProbe, empty arguments) hears allow for `read`; the real call with n = 7 asks.
    runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'read' && execution.planProbe !== true && (execution.arguments as { n?: number }).n === 7 ? { kind: 'ask', reason: 'seven' } : decision))
    const { result } = runCode(runtime, `await tools.write_file({ n: 1 })\nreturn await tools.read({ n: 7 })`)
    const request = await plan
    expect(request.plan?.asking.map((a) => a.name)).toEqual(['write_file'])
    const readAsk = nextRequest(broker)
    broker.decide(request.id, { decision: 'allow' })
    await decide(broker, readAsk, 'allow')
    expect(programResult(await result)).toBe('read done')
    expect(requested().map((r) => `${r.kind}:${r.name}`)).toEqual(['plan:run_code', 'call:read'])
  })

  it('a planned call still passes the gate and the guards after Allow', async () => {
    const { broker, runtime, ran } = planSetup()
    runtime.guard((execution) => (execution.name === 'write_file' && (execution.arguments as { n?: number }).n === 2 ? 'not two' : undefined))
    const plan = nextRequest(broker)
    const { result } = runCode(runtime, `await tools.write_file({ n: 1 })\ntry { await tools.write_file({ n: 2 }) } catch (e) { return e.message }`)
    await decide(broker, plan, 'allow')
    expect(programResult(await result)).toContain('not two')
    expect(ran).toEqual(['write_file:{"n":1}'])
  })

  it('a program whose plan asks nothing opens no request; plans off keeps one request per call', async () => {
    const quiet = planSetup()
    programResult(await runCode(quiet.runtime, `return await tools.read({ n: 1 })`).result)
    expect(quiet.requested()).toEqual([])

    const off = planSetup(false)
    const asked = nextRequest(off.broker)
    const { result } = runCode(off.runtime, `return await tools.write_file({ n: 1 })`)
    await decide(off.broker, asked, 'allow')
    programResult(await result)
    expect(off.requested().map((r) => `${r.kind}:${r.name}`)).toEqual(['call:write_file'])
  })

  it("the run's event stream forwards its plan request (and not another run's)", async () => {
    const { broker, runtime } = planSetup()
    const seen: string[] = []
    const plan = nextRequest(broker)
    const { callId, result } = runCode(runtime, `return await tools.write_file({ n: 1 })`)
    const stop = forwardApprovals(broker, callId, (event, data) => seen.push(`${event}:${(data as { id: string }).id}`))
    const other = forwardApprovals(broker, 'another-run', (event) => seen.push(`other:${event}`))
    // The plan is read and the gate probed before the request opens, so both forwarders are listening by then.
    const request = await plan
    broker.decide(request.id, { decision: 'allow' })
    programResult(await result)
    await until(() => seen.length > 1)
    expect(seen).toEqual([`approval:${request.id}`, `approval-settled:${request.id}`])
    stop()
    other()
  })
})

describe('plan request rendering', () => {
  const plan = {
    code: `await tools.write_file({ n: 1 })\n// \u202e hidden\n${'x'.repeat(5000)}\nreturn 1`,
    description: 'writes',
    calls: [{ name: 'write_file', line: 1, column: 13 }],
    asking: [{ name: 'write_file', reason: 'changes the workspace' }],
    dynamic: false,
  }

  it('shows the calls, the reasons and a long program as size, head and tail, escaped', () => {
    const text = renderApprovalPlan(plan)
    expect(text).toContain('  - write_file (changes the workspace)')
    expect(text).toContain('  - write_file (line 1)')
    expect(text).toContain(`(the program is ${plan.code.length} characters, 4 lines`)
    expect(text).toContain('\\u{202e}')
    expect(text).not.toContain('\u202e')
    expect(text).toContain('4 | return 1')
    expect(text.length).toBeLessThan(4000)
  })

  it('the MCP elicitation text for a plan shows the program and its calls', () => {
    const request: ApprovalRequest = {
      kind: 'plan',
      execution: { token: Symbol('t') as never, callId: 'run-1', name: 'run_code', arguments: {}, signal: new AbortController().signal },
      plan,
      reason: 'the program calls a tool that asks',
    }
    const text = questionText(request)
    expect(text.split('\n')[0]).toBe('Allow this program to run (the program calls a tool that asks)?')
    expect(text).toContain('  - write_file (changes the workspace)')
    expect(text).toContain('1 | await tools.write_file({ n: 1 })')
  })
})
