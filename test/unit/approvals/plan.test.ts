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
import { ToolError } from '../../../src/errors.js'
import { HookBus } from '../../../src/registry/hooks.js'
import { InFlightCalls } from '../../../src/registry/in-flight.js'
import { ToolLayers } from '../../../src/registry/layers.js'
import { validateRuntimeOptions } from '../../../src/registry/options.js'
import { createPlanApproval } from '../../../src/registry/plan-approval.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { detachToolDefinition } from '../../../src/schema/tool-definition.js'
import { createMemorySessionLog } from '../../../src/session-log.js'
import type { ApprovalHandler, ApprovalPlan, ApprovalRequest, PreToolDecision, ToolExecution, ToolExecutionToken } from '../../../src/types.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { codeOf, messageOf, nextRequest, programResult, runCode, setup, until } from './helpers.js'

function planSetup(plans = true) {
  const fixture = setup({ plans }, { mode: 'code', codeRuntime: createInProcessRuntime() })
  const requested = (): PendingApproval[] => fixture.events.flatMap((e) => (e.type === 'requested' ? [e.approval] : []))
  return { ...fixture, requested }
}

async function decide(broker: ApprovalBroker, asked: Promise<PendingApproval>, decision: 'allow' | 'deny', reason?: string): Promise<PendingApproval> {
  const request = await asked
  expect((await broker.decide(request.id, reason === undefined ? { decision } : { decision, reason })).ok).toBe(true)
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
    await broker.decide(request.id, { decision: 'allow' })
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
    await broker.decide(request.id, { decision: 'allow' })
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
    await broker.decide(request.id, { decision: 'allow' })
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
    await broker.decide(request.id, { decision: 'allow' })
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

/**
 * createPlanApproval on its own, over hand-built registry parts: a code-mode layer with
 * `write_file`, `pay` and `read` (agent `a` also has `own`), a gate the test writes, and a
 * memory session log. Each case reads what the gate's probes, the handler and the log saw.
 */
describe('plan approval over the registry parts it reads', () => {
  const at = expect.any(Number)

  function parts(approval?: ApprovalHandler) {
    const transport = detachToolDefinition(planTool('run_code'))
    const layers = new ToolLayers({ defaultMode: 'code', transport: () => transport, onChange: () => {} })
    for (const name of ['write_file', 'pay', 'read']) layers.add(undefined, detachToolDefinition(planTool(name)))
    layers.openAgent('a')
    layers.add('a', detachToolDefinition(planTool('own')))
    const hooks = new HookBus()
    const calls = new InFlightCalls()
    const sessionLog = createMemorySessionLog()
    const options = validateRuntimeOptions({ sessionLog, ...(approval === undefined ? {} : { approval }) })
    const approve = createPlanApproval({ options, hooks, calls, layers })
    return { hooks, calls, sessionLog, approve }
  }

  /** A handler that takes plans, answering `answer` and keeping each request. */
  function plans(answer: (request: ApprovalRequest) => unknown = () => true) {
    const requests: ApprovalRequest[] = []
    const handler = Object.assign((request: ApprovalRequest) => (requests.push(request), answer(request)) as boolean, { acceptsPlans: true as const })
    return { handler, requests }
  }

  /** A gate listener asking about the names in `reasons` (with that reason; `null`: no reason), recording each probe. */
  function gate(reasons: Record<string, string | null>, probes: ToolExecution[] = []) {
    return (decision: PreToolDecision, execution: ToolExecution): PreToolDecision => {
      probes.push(execution)
      const reason = reasons[execution.name]
      if (reason === undefined) return decision
      return reason === null ? { kind: 'ask' } : { kind: 'ask', reason }
    }
  }

  function runOf(extra: Partial<ToolExecution> = {}, signal = new AbortController().signal): ToolExecution {
    return Object.freeze({ token: Symbol('run') as ToolExecutionToken, callId: 'run-1', name: 'run_code', arguments: { code: 'x' }, signal, ...extra })
  }

  const input = (code: string, run: ToolExecution, language = 'typescript') => ({ code, description: 'writes things', language, run })

  it("probes each planned tool once with empty arguments under <run>:plan:<n> (n = the tools that asked so far), the run's agent and token as parent", async () => {
    const { handler } = plans()
    const { hooks, approve } = parts(handler)
    const probes: ToolExecution[] = []
    hooks.preExecute.add(gate({ pay: 'money' }, probes), undefined)
    const run = runOf({ agent: 'a' })
    await approve(input(`await tools.read({})\nawait tools.pay({ n: 1 })\nawait tools.own({})\nawait tools.read({})`, run))
    expect(probes.map((p) => [p.name, p.callId, p.agent, p.parent === run.token, p.planProbe, p.arguments])).toEqual([
      ['read', 'run-1:plan:0', 'a', true, true, {}],
      ['pay', 'run-1:plan:0', 'a', true, true, {}],
      ['own', 'run-1:plan:1', 'a', true, true, {}],
    ])
    expect(probes.every((p) => p.signal === run.signal && Object.isFrozen(p))).toBe(true)
    expect(probes.map((p) => typeof p.token)).toEqual(['symbol', 'symbol', 'symbol'])
  })

  /** Runs plan approval with `handler` as the run's own (a live call's) handler. */
  function createPlanApprovalFor(approve: ReturnType<typeof parts>['approve'], handler: ApprovalHandler, run: ToolExecution, calls?: InFlightCalls, language = 'typescript') {
    calls?.liveTokens.set(run.token, { callId: run.callId, approval: handler })
    return (code: string) => approve(input(code, run, language))
  }

  it("asks the registry's handler for a run that is not a live call, with the request the run's call makes", async () => {
    const { handler, requests } = plans()
    const { hooks, approve } = parts(handler)
    hooks.preExecute.add(gate({ pay: 'money', write_file: null }), undefined)
    const parent = Symbol('outer') as ToolExecutionToken
    const run = runOf({ agent: 'a', parent })
    const release = await approve(input(`await tools.pay({})\nawait tools.write_file({})\nawait tools.nope({})`, run))
    expect(typeof release).toBe('function')
    expect(requests).toHaveLength(1)
    const request = requests[0]!
    expect(request.kind).toBe('plan')
    expect(request.reason).toBe('the program calls 2 tools that ask')
    expect(request.execution).toStrictEqual({ token: run.token, callId: 'run-1', name: 'run_code', arguments: { code: 'x' }, signal: run.signal, agent: 'a', parent })
    const plan = (request as { plan: ApprovalPlan }).plan
    // A name outside what a program of the agent may call is listed nowhere.
    expect(plan.calls).toEqual([{ name: 'pay', line: 1, column: 7 }, { name: 'write_file', line: 2, column: 7 }])
    expect(plan.asking).toStrictEqual([{ name: 'pay', reason: 'money' }, { name: 'write_file' }])
    expect(plan.dynamic).toBe(false)
  })

  it('a top-level run of the global layer: the request has no agent and no parent key', async () => {
    const { handler, requests } = plans()
    const { hooks, approve } = parts(handler)
    const probes: ToolExecution[] = []
    hooks.preExecute.add(gate({ pay: 'money' }, probes), undefined)
    await approve(input(`await tools.pay({})`, runOf()))
    expect(Object.keys(requests[0]!.execution).sort()).toEqual(['arguments', 'callId', 'name', 'signal', 'token'])
    // Nor does the gate's probe of a run without an agent carry an agent key.
    expect(Object.keys(probes[0]!).sort()).toEqual(['arguments', 'callId', 'name', 'parent', 'planProbe', 'signal', 'token'])
    expect(requests[0]!.reason).toBe('the program calls a tool that asks')
  })

  it('a dynamic plan says so in its reason, and grants nothing', async () => {
    const { handler, requests } = plans()
    const { hooks, sessionLog, approve } = parts(handler)
    hooks.preExecute.add(gate({ pay: 'money' }), undefined)
    await approve(input(`await tools.pay({})\nconst n = 'pa' + 'y'\nawait tools[n]({})`, runOf()))
    expect(requests[0]!.reason).toBe('the program calls a tool that asks (and reaches tools by computed names)')
    expect(sessionLog.events[1]).toMatchObject({ decision: 'allow', granted: [] })
  })

  it('a probe whose gate asks and then denies, or answers garbage, or throws, asks nothing; a later allow does not undo an ask', async () => {
    const { handler, requests } = plans()
    const { hooks, approve } = parts(handler)
    hooks.preExecute.add(gate({ pay: 'money', write_file: 'files', read: 'reads', own: 'own' }), undefined)
    hooks.preExecute.add((decision, execution) => {
      if (execution.name === 'pay') return { kind: 'deny', reason: 'never' }
      if (execution.name === 'write_file') return { kind: 'ask', reason: 5 } as unknown as PreToolDecision
      if (execution.name === 'own') throw new Error('gate broke')
      return { kind: 'allow' }
    }, undefined)
    await approve(input(`await tools.pay({})\nawait tools.write_file({})\nawait tools.read({})\nawait tools.own({})`, runOf({ agent: 'a' })))
    expect((requests[0] as { plan: ApprovalPlan }).plan.asking).toStrictEqual([{ name: 'read', reason: 'reads' }])
  })

  it('without a gate listener for the agent, or with a handler that does not take plans, nobody is asked', async () => {
    const { handler, requests } = plans()
    const quiet = parts(handler)
    quiet.hooks.preExecute.add(gate({ pay: 'money' }), 'other-agent')
    await quiet.approve(input(`await tools.pay({})`, runOf()))
    const single = parts(() => true)
    single.hooks.preExecute.add(gate({ pay: 'money' }), undefined)
    await single.approve(input(`await tools.pay({})`, runOf()))
    expect(requests).toEqual([])
    expect([...quiet.sessionLog.events, ...single.sessionLog.events]).toEqual([])
  })

  it("a live run's own handler decides instead of the registry's", async () => {
    const own = plans()
    const registry = plans()
    const { hooks, calls, approve } = parts(registry.handler)
    hooks.preExecute.add(gate({ pay: 'money' }), undefined)
    await createPlanApprovalFor(approve, own.handler, runOf(), calls)(`await tools.pay({})`)
    expect([own.requests.length, registry.requests.length]).toEqual([1, 0])
  })

  it('reads a Python program with the Python plan reader, and any other language with the JavaScript one', async () => {
    const { handler, requests } = plans()
    const { hooks, approve } = parts(handler)
    hooks.preExecute.add(gate({ pay: 'money', write_file: 'files' }), undefined)
    // Python syntax the JavaScript reader cannot read (it would answer an empty, dynamic plan);
    // then JavaScript, whose calls each reader places at another column.
    await approve(input(`tools.write_file(n=1)\nif True:\n    pass`, runOf(), 'python'))
    await approve(input(`await tools.write_file({ n: 1 }) // tools.pay({})`, runOf(), 'javascript'))
    expect(requests.map((r) => (r as { plan: ApprovalPlan }).plan.calls)).toEqual([[{ name: 'write_file', line: 1, column: 7 }], [{ name: 'write_file', line: 1, column: 7 }]])
    expect(requests.map((r) => (r as { plan: ApprovalPlan }).plan.dynamic)).toEqual([false, false])
  })

  it('the session log records the request and an allow (no message key, the granted tools), under the agent', async () => {
    const { handler } = plans()
    const { hooks, sessionLog, approve } = parts(handler)
    hooks.preExecute.add(gate({ pay: 'money' }), undefined)
    await approve(input(`await tools.pay({})`, runOf({ agent: 'a' })))
    expect(sessionLog.events).toStrictEqual([
      {
        type: 'tool/plan-approval-request',
        parentCallId: 'run-1',
        subCallId: 'run-1:plan',
        name: 'run_code',
        agent: 'a',
        code: 'await tools.pay({})',
        codeChars: 19,
        description: 'writes things',
        calls: [{ name: 'pay', line: 1, column: 7 }],
        callCount: 1,
        asking: [{ name: 'pay', reason: 'money' }],
        askingCount: 1,
        dynamic: false,
        reason: 'the program calls a tool that asks',
        requestedAt: at,
      },
      { type: 'tool/plan-approval-decision', parentCallId: 'run-1', subCallId: 'run-1:plan', name: 'run_code', agent: 'a', decision: 'allow', granted: ['pay'], requestedAt: at, decidedAt: at, waitedMs: at },
    ])
  })

  it.each([
    ['refuses (false)', () => false, "the program's plan was denied by the approval handler before anything ran"],
    ['refuses (anything but true)', () => 'yes', "the program's plan was denied by the approval handler before anything ran"],
    ['denies (DENIED_BY_APPROVAL)', () => Promise.reject(new ToolError('DENIED_BY_APPROVAL', 'a person said no')), "the program's plan was denied before anything ran (a person said no)"],
    ['fails with another ToolError', () => Promise.reject(new ToolError('TOOL_FAILED', 'queue down')), "the program's plan was denied before anything ran (the approval handler failed: queue down)"],
    ['throws', () => {
      throw new TypeError('bad handler')
    }, "the program's plan was denied before anything ran (the approval handler failed: bad handler)"],
  ])('a handler that %s denies the run with DENIED_BY_APPROVAL, logged as deny with that message', async (_what, answer, message) => {
    const { handler } = plans(answer as () => unknown)
    const { hooks, sessionLog, approve } = parts(handler)
    hooks.preExecute.add(gate({ pay: 'money' }), undefined)
    const error = await approve(input(`await tools.pay({})`, runOf())).then(() => undefined, (e: unknown) => e)
    expect(error).toBeInstanceOf(ToolError)
    expect([(error as ToolError).code, (error as ToolError).message]).toEqual(['DENIED_BY_APPROVAL', message])
    expect(sessionLog.events[1]).toStrictEqual({ type: 'tool/plan-approval-decision', parentCallId: 'run-1', subCallId: 'run-1:plan', name: 'run_code', decision: 'deny', message, granted: [], requestedAt: at, decidedAt: at, waitedMs: at })
  })

  /** A signal that reports how many abort listeners are attached. */
  function watched() {
    const controller = new AbortController()
    const signal = controller.signal
    const attached = new Set<unknown>()
    const add = signal.addEventListener.bind(signal)
    const remove = signal.removeEventListener.bind(signal)
    signal.addEventListener = ((type: string, listener: EventListener, options?: AddEventListenerOptions) => {
      if (type === 'abort') attached.add(listener)
      add(type, listener, options)
    }) as typeof signal.addEventListener
    signal.removeEventListener = ((type: string, listener: EventListener, options?: EventListenerOptions) => {
      if (type === 'abort') attached.delete(listener)
      remove(type, listener, options)
    }) as typeof signal.removeEventListener
    return { controller, signal, attached }
  }

  it('a run cancelled while its plan waits ends as ABORTED_BEFORE_DISPATCH, logged as withdrawn; the abort listener is removed once the handler answers', async () => {
    let answered!: (value: boolean) => void
    const { handler } = plans(() => new Promise<boolean>((resolve) => (answered = resolve)))
    const { hooks, sessionLog, approve } = parts(handler)
    hooks.preExecute.add(gate({ pay: 'money' }), undefined)
    const first = watched()
    const allowed = approve(input(`await tools.pay({})`, runOf({}, first.signal)))
    await until(() => answered !== undefined)
    expect(first.attached.size).toBe(1)
    answered(true)
    await allowed
    expect(first.attached.size).toBe(0)

    const second = watched()
    const pending = approve(input(`await tools.pay({})`, runOf({}, second.signal)))
    await until(() => sessionLog.events.length === 3)
    second.controller.abort()
    const error = (await pending.then(() => undefined, (e: unknown) => e)) as ToolError
    const message = 'the run was cancelled while its plan waited for approval'
    expect([error.code, error.message]).toEqual(['ABORTED_BEFORE_DISPATCH', message])
    expect(sessionLog.events[3]).toMatchObject({ decision: 'withdrawn', message, granted: [] })
  })

  it('a run already cancelled does not ask the handler at all', async () => {
    const { handler, requests } = plans()
    const { hooks, sessionLog, approve } = parts(handler)
    hooks.preExecute.add(gate({ pay: 'money' }), undefined)
    const controller = new AbortController()
    controller.abort()
    const error = (await approve(input(`await tools.pay({})`, runOf({}, controller.signal))).then(() => undefined, (e: unknown) => e)) as ToolError
    expect(error.code).toBe('ABORTED_BEFORE_DISPATCH')
    expect(requests).toEqual([])
    expect(sessionLog.events.map((e) => (e as { decision?: string }).decision)).toEqual([undefined, 'withdrawn'])
  })
})

/** A tool of the hand-built layers (its body never runs here). */
function planTool(name: string) {
  return defineTool({ name, description: `${name} (test)`, parameters: {}, output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] }, execute: () => name })
}
