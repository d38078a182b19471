/**
 * Approvals over HTTP against the real app, a real registry and a real broker:
 * `GET /v1/approvals`, `POST /v1/approvals/:id` (200, 400, 404, 409, 503) and the
 * `approval` / `approval-settled` events of a `/v1/run` stream, decided while the stream
 * is open. The stream cases run twice: on an in-process code runtime (milliseconds; what
 * the mutation runs use) and on the real default one (`createSandboxRuntime`).
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { ApprovalBroker, PendingApproval } from '../../../src/approvals/index.js'
import type { CodeRuntime } from '../../../src/code-runtime/contract.js'
import { createToolsApp } from '../../../src/http/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ToolExecutionResult } from '../../../src/types.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { until } from '../approvals/helpers.js'
import { AUTH, JSON_AUTH, TOKEN, createFixture, errorOf } from './fixtures.js'

// Created on first use: a run that only reaches the in-process cases starts no sandbox.
let sandbox: ReturnType<typeof createSandboxRuntime> | undefined
const sandboxRuntime = (): CodeRuntime => (sandbox ??= createSandboxRuntime({ memoryMb: 32 }))
afterAll(() => sandbox?.dispose())

/** The HTTP fixture with a broker, and a `pay` tool the gate asks about. */
function approvalsFixture(timeoutMs?: number, codeRuntime: CodeRuntime = createInProcessRuntime({ wallMs: 30_000 })) {
  const broker = createApprovalBroker(timeoutMs === undefined ? undefined : { timeoutMs })
  const fixture = createFixture({ mode: 'both', codeRuntime, approvals: broker })
  const paid: unknown[] = []
  fixture.runtime.register(
    defineTool({
      name: 'pay',
      description: 'Pays (asks a person first).',
      parameters: { cents: { type: 'number', required: true } },
      // Concurrency-safe, so a sibling may run while it waits for a person.
      isConcurrencySafe: () => true,
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: (args) => {
        paid.push(args.cents)
        return `paid ${args.cents}`
      },
    }),
  )
  fixture.runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
  return { ...fixture, broker, paid }
}

type Fixture = ReturnType<typeof approvalsFixture>

interface SseEvent {
  readonly event: string
  readonly data: unknown
}

/** Reads an event stream frame by frame, so a test can act while the run still waits. */
function sseReader(response: Response) {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  const seen: SseEvent[] = []
  const next = async (): Promise<SseEvent | undefined> => {
    for (;;) {
      const end = buffer.indexOf('\n\n')
      if (end !== -1) {
        const frame = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const lines = frame.split('\n').filter((line) => !line.startsWith(':'))
        if (lines.length === 0) continue
        const event = lines.find((l) => l.startsWith('event:'))?.slice(6).trim() ?? 'message'
        const data = JSON.parse(lines.find((l) => l.startsWith('data:'))!.slice(5)) as unknown
        const parsed = { event, data }
        seen.push(parsed)
        return parsed
      }
      const { value, done } = await reader.read()
      if (done) return undefined
      buffer += value
    }
  }
  return {
    seen,
    /** Reads until an event named `name` (returns it). */
    async until(name: string): Promise<SseEvent> {
      for (;;) {
        const event = await next()
        if (event === undefined) throw new Error(`the stream ended before "${name}" (saw ${seen.map((e) => e.event).join(', ')})`)
        if (event.event === name) return event
      }
    },
    /** Reads until some event seen so far (this one included) satisfies `check`. */
    async untilSeen(check: (event: SseEvent) => boolean): Promise<SseEvent> {
      for (;;) {
        const found = seen.find(check)
        if (found !== undefined) return found
        if ((await next()) === undefined) throw new Error(`the stream ended (saw ${seen.map((e) => e.event).join(', ')})`)
      }
    },
    /** Reads to the end. */
    async rest(): Promise<SseEvent[]> {
      while ((await next()) !== undefined) {
        // Collected in `seen`.
      }
      return seen
    },
  }
}

function streamRun(fixture: Fixture, code: string, signal?: AbortSignal): Promise<Response> {
  return Promise.resolve(
    fixture.app.request('/v1/run', {
      method: 'POST',
      headers: { ...JSON_AUTH, Accept: 'text/event-stream' },
      body: JSON.stringify({ code, description: 'pays' }),
      ...(signal === undefined ? {} : { signal }),
    }),
  )
}

function decide(fixture: Pick<Fixture, 'app'>, id: string, body: unknown, headers: Record<string, string> = JSON_AUTH): Promise<Response> {
  return Promise.resolve(fixture.app.request(`/v1/approvals/${encodeURIComponent(id)}`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) }))
}

async function pendingOf(fixture: Fixture): Promise<PendingApproval[]> {
  const response = await fixture.app.request('/v1/approvals', { headers: AUTH })
  expect(response.status).toBe(200)
  const body = (await response.json()) as { approvals: PendingApproval[] }
  expect(Object.keys(body)).toEqual(['approvals'])
  return body.approvals
}

/** Starts a direct call of `pay` over HTTP and resolves with its request once the broker holds it. */
async function pendingPay(fixture: Fixture): Promise<{ request: PendingApproval; response: Promise<Response> }> {
  const requested = new Promise<PendingApproval>((resolve) => {
    const stop = fixture.broker.subscribe((event) => {
      if (event.type === 'requested') {
        stop()
        resolve(event.approval)
      }
    })
  })
  const response = Promise.resolve(
    fixture.app.request('/v1/tools/pay/execute', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ arguments: { cents: 5 }, callId: 'direct-pay' }) }),
  )
  return { request: await requested, response }
}

describe('GET /v1/approvals and POST /v1/approvals/:id', () => {
  it('lists a direct call waiting for a person; allow runs it (200 with the decision), and the list empties', async () => {
    const fixture = approvalsFixture()
    expect(await pendingOf(fixture)).toEqual([])
    const { request, response } = await pendingPay(fixture)
    const listed = await pendingOf(fixture)
    // The listing adds whose call it is: the principal of the token that made it (`admin` for the `token` shorthand).
    expect(listed).toEqual([{ ...request, principal: 'admin' }])
    expect(listed[0]).toMatchObject({ callId: 'client.admin.direct-pay', name: 'pay', arguments: { cents: 5 }, reason: 'money moves' })
    expect('parentCallId' in listed[0]!).toBe(false)
    const answer = await decide(fixture, request.id, { decision: 'allow', reason: 'fine' })
    expect(answer.status).toBe(200)
    expect(await answer.json()).toEqual({ ok: true, approval: request, decision: 'allow', reason: 'fine', decidedAt: expect.any(Number) })
    const result = (await (await response).json()) as ToolExecutionResult
    expect(result).toMatchObject({ isError: false, value: 'paid 5' })
    expect(fixture.paid).toEqual([5])
    expect(await pendingOf(fixture)).toEqual([])
  })

  it('deny answers the call with DENIED_BY_APPROVAL and the person\'s reason; a second decision is 409', async () => {
    const fixture = approvalsFixture()
    const { request, response } = await pendingPay(fixture)
    expect((await decide(fixture, request.id, { decision: 'deny', reason: 'not this month' })).status).toBe(200)
    const result = (await (await response).json()) as ToolExecutionResult
    expect(result.isError && [result.error.info?.code, result.error.message]).toEqual(['DENIED_BY_APPROVAL', 'pay was denied by a person: not this month'])
    const again = await decide(fixture, request.id, { decision: 'allow' })
    expect(again.status).toBe(409)
    expect((await errorOf(again)).code).toBe('APPROVAL_ALREADY_DECIDED')
    expect(fixture.paid).toEqual([])
  })

  it('an unknown id is 404 APPROVAL_NOT_FOUND; an expired one 404 APPROVAL_EXPIRED; a withdrawn one 404 APPROVAL_WITHDRAWN', async () => {
    const fixture = approvalsFixture(60)
    const unknown = await decide(fixture, 'no-such-id', { decision: 'allow' })
    expect(unknown.status).toBe(404)
    expect((await errorOf(unknown)).code).toBe('APPROVAL_NOT_FOUND')

    const expiring = await pendingPay(fixture)
    const expired = (await (await expiring.response).json()) as ToolExecutionResult
    expect(expired.isError && expired.error.message).toBe('pay was denied by timeout: nobody decided within 60 ms')
    const late = await decide(fixture, expiring.request.id, { decision: 'allow' })
    expect(late.status).toBe(404)
    expect((await errorOf(late)).code).toBe('APPROVAL_EXPIRED')

    const longer = approvalsFixture()
    const controller = new AbortController()
    const requested = new Promise<PendingApproval>((resolve) => longer.broker.subscribe((e) => e.type === 'requested' && resolve(e.approval)))
    const gone = Promise.resolve(
      longer.app.request('/v1/tools/pay/execute', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ arguments: { cents: 1 } }), signal: controller.signal }),
    )
    const request = await requested
    controller.abort()
    await gone.catch(() => undefined)
    // The withdrawal is written after the caller is told: wait until it landed (was a 10 ms guess).
    await until(async () => (await longer.broker.pending()).length === 0, 'the withdrawal to land')
    const withdrawn = await decide(longer, request.id, { decision: 'allow' })
    expect(withdrawn.status).toBe(404)
    expect((await errorOf(withdrawn)).code).toBe('APPROVAL_WITHDRAWN')
  })

  it.each([
    ['an unknown decision', { decision: 'yes' }, 'INVALID_DECISION', '"decision" must be "allow" or "deny"'],
    ['an extra field', { decision: 'allow', by: 'me' }, 'INVALID_DECISION', 'unknown field "by"'],
    ['a non-object', '"allow"', 'INVALID_DECISION', 'the decision must be an object'],
    ['a non-string reason', { decision: 'deny', reason: 7 }, 'INVALID_DECISION', '"reason" must be a string'],
    ['a __proto__ key', '{"decision":"allow","__proto__":{}}', 'INVALID_DECISION', 'unknown field "__proto__"'],
    ['bytes that are not JSON', '{decision', 'INVALID_JSON_BODY', ''],
  ])('a bad body (%s: %s) is refused with 400, and the request stays pending', async (_what, body, code, message) => {
    const fixture = approvalsFixture()
    const { request, response } = await pendingPay(fixture)
    const refused = await decide(fixture, request.id, body)
    expect(refused.status).toBe(400)
    const error = await errorOf(refused)
    expect(error.code).toBe(code)
    expect(error.message).toContain(message)
    expect((await pendingOf(fixture)).map((p) => p.id)).toEqual([request.id])
    expect((await decide(fixture, request.id, { decision: 'allow' })).status).toBe(200)
    expect(((await (await response).json()) as ToolExecutionResult).isError).toBe(false)
  })

  it('a body that is not application/json is 415; no token is 401; a disposed broker is 503 BROKER_DISPOSED', async () => {
    const fixture = approvalsFixture()
    const { request, response } = await pendingPay(fixture)
    expect((await decide(fixture, request.id, { decision: 'allow' }, { ...AUTH, 'Content-Type': 'text/plain' })).status).toBe(415)
    expect((await fixture.app.request('/v1/approvals')).status).toBe(401)
    expect((await decide(fixture, request.id, { decision: 'allow' }, { 'Content-Type': 'application/json' })).status).toBe(401)
    fixture.broker.dispose()
    const disposed = await decide(fixture, request.id, { decision: 'allow' })
    expect(disposed.status).toBe(503)
    expect((await errorOf(disposed)).code).toBe('BROKER_DISPOSED')
    const result = (await (await response).json()) as ToolExecutionResult
    expect(result.isError && result.error.info?.code).toBe('DENIED_BY_APPROVAL')
  })

  it('without a broker the routes do not exist (404 NOT_FOUND) and a run streams without approval events; a malformed broker option is refused at creation', async () => {
    const { app, runtime } = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime() })
    const response = await app.request('/v1/approvals', { headers: AUTH })
    expect(response.status).toBe(404)
    expect((await errorOf(response)).code).toBe('NOT_FOUND')
    const streamed = await app.request('/v1/run', { method: 'POST', headers: { ...JSON_AUTH, Accept: 'text/event-stream' }, body: JSON.stringify({ code: "return await tools.echo({ text: 'x' })", description: 'd' }) })
    const names = (await sseReader(streamed).rest()).map((e) => e.event)
    expect(names).toEqual(['start', 'dispatch-start', 'dispatch', 'result'])
    expect(() => createToolsApp(runtime, { token: TOKEN, approvals: {} } as never)).toThrow(/approvals is no longer an option here: approvals come from the runtime: createToolRuntime\(\{ approvals \}\)/)
  })
})

describe.each([
  ['in-process', () => createInProcessRuntime({ wallMs: 30_000 })],
  ['sandbox', sandboxRuntime],
] as const)('/v1/run streams its own sub-calls\' approvals (%s code runtime)', (_name, codeRuntime) => {
  it('approval (the pending request) → POST allow → approval-settled → dispatch → result; the stream unsubscribes', async () => {
    const fixture = approvalsFixture(undefined, codeRuntime())
    const before = fixture.broker.subscriberCount
    const response = await streamRun(fixture, `const [paid, echoed] = await Promise.all([tools.pay({ cents: 3 }), tools.echo({ text: 'meanwhile' })])\nreturn [paid, echoed.text]`)
    const callId = response.headers.get('X-Toolyard-Call-Id')!
    const stream = sseReader(response)
    const approval = (await stream.until('approval')).data as PendingApproval
    expect(approval).toMatchObject({ callId: `${callId}:code:1`, parentCallId: callId, name: 'pay', arguments: { cents: 3 }, reason: 'money moves' })
    expect(await pendingOf(fixture)).toEqual([{ ...approval, principal: 'admin' }])
    // The sibling finishes while the payment waits for a person: its dispatch event arrives first.
    await stream.untilSeen((e) => e.event === 'dispatch' && (e.data as { name: string }).name === 'echo')
    expect(await fixture.broker.pending()).toEqual([approval])
    expect((await decide(fixture, approval.id, { decision: 'allow' })).status).toBe(200)
    const events = await stream.rest()
    const names = events.map((e) => e.event)
    expect(names[0]).toBe('start')
    expect(names.at(-1)).toBe('result')
    // The session log's own approval records are not frames: the broker's events carry the id a decision needs.
    expect([...new Set(names)].sort()).toEqual(['approval', 'approval-settled', 'dispatch', 'dispatch-start', 'result', 'start'])
    const settled = events.find((e) => e.event === 'approval-settled')!.data
    expect(settled).toEqual({ id: approval.id, callId: `${callId}:code:1`, outcome: 'allow', at: expect.any(Number) })
    // The request came after its sub-call started and was settled before that sub-call's dispatch event.
    const payStart = events.findIndex((e) => e.event === 'dispatch-start' && (e.data as { name: string }).name === 'pay')
    const payDone = events.findIndex((e) => e.event === 'dispatch' && (e.data as { name: string }).name === 'pay')
    expect(payStart).toBeLessThan(names.indexOf('approval'))
    expect(names.indexOf('approval-settled')).toBeLessThan(payDone)
    expect(events.at(-1)!.data).toMatchObject({ isError: false, value: { result: ['paid 3', 'meanwhile'] } })
    expect(fixture.broker.subscriberCount).toBe(before)
  })

  it('deny: approval-settled carries the reason and the program catches the ToolCallError', async () => {
    const fixture = approvalsFixture(undefined, codeRuntime())
    const response = await streamRun(fixture, `try { await tools.pay({ cents: 9 }) } catch (e) { return [e.name, e.message] }`)
    const stream = sseReader(response)
    const approval = (await stream.until('approval')).data as PendingApproval
    expect((await decide(fixture, approval.id, { decision: 'deny', reason: 'too much' })).status).toBe(200)
    const events = await stream.rest()
    expect(events.find((e) => e.event === 'approval-settled')!.data).toEqual({ id: approval.id, callId: approval.callId, outcome: 'deny', reason: 'too much', at: expect.any(Number) })
    expect(events.at(-1)!.data).toMatchObject({ isError: false, value: { result: ['ToolCallError', 'pay was denied by a person: too much'] } })
    expect(fixture.paid).toEqual([])
  })

  it('expiry and withdrawal arrive as approval-settled outcomes', async () => {
    const fixture = approvalsFixture(80, codeRuntime())
    const expiring = sseReader(await streamRun(fixture, `try { await tools.pay({ cents: 1 }) } catch (e) { return e.message }`))
    const events = await expiring.rest()
    const expiredRequest = events.find((e) => e.event === 'approval')!.data as PendingApproval
    expect(events.find((e) => e.event === 'approval-settled')!.data).toEqual({ id: expiredRequest.id, callId: expiredRequest.callId, outcome: 'expired', at: expect.any(Number) })

    const slow = approvalsFixture(undefined, codeRuntime())
    const controller = new AbortController()
    const withdrawing = sseReader(await streamRun(slow, `return await tools.pay({ cents: 1 })`, controller.signal))
    await withdrawing.until('approval')
    const withdrawn = new Promise<string>((resolve) => slow.broker.subscribe((e) => e.type !== 'requested' && resolve(e.type)))
    controller.abort()
    expect(await withdrawn).toBe('withdrawn')
    expect(await pendingOf(slow)).toEqual([])
  })

  it('a plan request (kind plan, asked by the run itself) is the run\'s own: streamed, listed by GET /v1/runs/:id, settled', async () => {
    const broker = createApprovalBroker({ plans: true })
    const fixture = createFixture({ mode: 'both', codeRuntime: codeRuntime(), approvals: broker })
    fixture.runtime.register(
      defineTool({
        name: 'write_file',
        description: 'Writes (asks a person first).',
        parameters: { path: { type: 'string', required: true } },
        output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
        execute: (args) => `wrote ${args.path}`,
      }),
    )
    fixture.runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'write_file' ? { kind: 'ask', reason: 'changes the workspace' } : decision))
    const code = `await tools.write_file({ path: 'a' })\nawait tools.write_file({ path: 'b' })\nreturn 'ok'`
    // Another run's plan request, pending meanwhile: never in this run's stream or body.
    const other = fixture.runtime.execute({ callId: 'someone-else', name: 'run_code', arguments: { code, description: 'other' }, signal: new AbortController().signal })
    await until(async () => (await broker.pending()).length === 1)
    const started = await fixture.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code, description: 'two writes' }) })
    const { id, callId } = (await started.json()) as { id: string; callId: string }
    const stream = sseReader(await fixture.app.request(`/v1/runs/${id}/events`, { headers: AUTH }))
    const approval = (await stream.until('approval')).data as PendingApproval
    expect(approval).toMatchObject({ kind: 'plan', callId, name: 'run_code' })
    const body = (await (await fixture.app.request(`/v1/runs/${id}`, { headers: AUTH })).json()) as { status: string; approvals: { id: string; kind: string; callId: string }[] }
    expect(body.status).toBe('waiting')
    expect(body.approvals.map((a) => [a.id, a.kind, a.callId])).toEqual([[approval.id, 'plan', callId]])
    expect((await decide(fixture, approval.id, { decision: 'allow' })).status).toBe(200)
    const events = await stream.rest()
    expect(events.filter((e) => e.event.startsWith('approval')).map((e) => e.event)).toEqual(['approval', 'approval-settled'])
    expect(events.find((e) => e.event === 'approval-settled')!.data).toEqual({ id: approval.id, callId, outcome: 'allow', at: expect.any(Number) })
    expect(events.at(-1)).toMatchObject({ event: 'end', data: { id, status: 'done' } })
    await broker.decide((await broker.pending())[0]!.id, { decision: 'deny' })
    await other
  })

  it('a stream carries only its own run\'s approvals', async () => {
    const fixture = approvalsFixture(undefined, codeRuntime())
    const first = await streamRun(fixture, `return await tools.pay({ cents: 1 })`)
    const second = await streamRun(fixture, `return await tools.pay({ cents: 2 })`)
    const a = sseReader(first)
    const b = sseReader(second)
    const approvalA = (await a.until('approval')).data as PendingApproval
    const approvalB = (await b.until('approval')).data as PendingApproval
    expect(approvalA.parentCallId).toBe(first.headers.get('X-Toolyard-Call-Id'))
    expect(approvalB.parentCallId).toBe(second.headers.get('X-Toolyard-Call-Id'))
    expect((await decide(fixture, approvalB.id, { decision: 'allow' })).status).toBe(200)
    expect((await decide(fixture, approvalA.id, { decision: 'deny' })).status).toBe(200)
    const eventsA = await a.rest()
    const eventsB = await b.rest()
    expect(eventsA.filter((e) => e.event.startsWith('approval')).map((e) => (e.data as { id: string }).id)).toEqual([approvalA.id, approvalA.id])
    expect(eventsB.filter((e) => e.event.startsWith('approval')).map((e) => (e.data as { id: string }).id)).toEqual([approvalB.id, approvalB.id])
    expect(fixture.paid).toEqual([2])
  })
})
