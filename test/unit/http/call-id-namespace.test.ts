/**
 * Client call ids live in the principal's namespace (issue 31 item 2, the HTTP part): a
 * `callId` sent to `POST /v1/tools/:name/execute` becomes `client.<principal>.<id>`, so it
 * can never name a run (`http-run-<uuid>`) or a run's sub-call (`<run>:code:<n>`), and an
 * id with a `:code:` or `:plan:` segment is refused outright. The three attacks of the
 * issue, over HTTP, against a real app, registry and broker.
 */
import { describe, expect, it } from 'vitest'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { PendingApproval } from '../../../src/approvals/index.js'
import { createMemoryStore } from '../../../src/durable/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ToolExecutionResult } from '../../../src/types.js'
import { createInProcessRuntime } from '../code-mode/support/in-process-runtime.js'
import { AGENT_TOKEN, PERSON_TOKEN, ROLE_TOKENS, createFixture, errorOf, eventually, jsonAuth } from './fixtures.js'

const REFUSED = { code: 'INVALID_REQUEST', message: 'callId must not contain a ":code:" or ":plan:" segment: those name the server\'s own sub-calls of a run' }

/** `store`: the broker keeps its requests and settled decisions in a store (as `npm start`), where a decision outlives its call. */
function fixture(store = false) {
  const broker = store ? createApprovalBroker({ store: createMemoryStore(), pollIntervalMs: 20 }) : createApprovalBroker()
  const f = createFixture({ mode: 'both', codeRuntime: createInProcessRuntime({ wallMs: 30_000 }), approvals: broker }, { tokens: ROLE_TOKENS })
  const written: { path: string; by: string }[] = []
  f.runtime.register(
    defineTool({
      name: 'write_file',
      description: 'Writes a file (asks a person first).',
      parameters: { path: { type: 'string', required: true } },
      isConcurrencySafe: () => true,
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: (args, exec) => {
        written.push({ path: args.path, by: exec.callId })
        return `wrote ${args.path}`
      },
    }),
  )
  f.runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'write_file' ? { kind: 'ask', reason: 'changes the workspace' } : decision))
  const post = (path: string, token: string, body: unknown) => Promise.resolve(f.app.request(path, { method: 'POST', headers: jsonAuth(token), body: JSON.stringify(body) }))
  const pending = async (): Promise<PendingApproval[]> => ((await (await f.app.request('/v1/approvals', { headers: jsonAuth(PERSON_TOKEN) })).json()) as { approvals: PendingApproval[] }).approvals
  return { ...f, broker, written, post, pending }
}

describe('client call ids live in the principal namespace', () => {
  it('the effective id is client.<principal>.<id>, said in X-Toolyard-Call-Id; two principals never share one', async () => {
    const f = fixture()
    const mine = await f.post('/v1/tools/echo/execute', AGENT_TOKEN, { callId: 'c1', arguments: { text: 'a' } })
    const theirs = await f.post('/v1/tools/echo/execute', PERSON_TOKEN, { callId: 'c1', arguments: { text: 'b' } })
    expect(mine.headers.get('X-Toolyard-Call-Id')).toBe('client.agent.c1')
    expect(theirs.headers.get('X-Toolyard-Call-Id')).toBe('client.person.c1')
    expect(f.results.map((r) => r.callId)).toEqual(['client.agent.c1', 'client.person.c1'])
  })

  it('refuses :code: and :plan: segments outright, before anything runs', async () => {
    const f = fixture()
    for (const callId of ['http-run-1:code:1', 'x:code:', 'a:plan:0', 'run:plan']) {
      expect(await errorOf(await f.post('/v1/tools/echo/execute', AGENT_TOKEN, { callId, arguments: { text: 'x' } })), callId).toEqual(REFUSED)
    }
    expect(f.results).toEqual([])
    // Colons elsewhere are fine.
    expect((await f.post('/v1/tools/echo/execute', AGENT_TOKEN, { callId: 'a:codes:1', arguments: { text: 'x' } })).status).toBe(200)
  })

  it.each([['a memory broker', false], ['a broker over a store', true]] as const)('attack (a), %s: allowed under id X with harmless arguments, then a write under the same X asks again — and a run token cannot decide', async (_name, store) => {
    const f = fixture(store)
    const first = f.post('/v1/tools/write_file/execute', AGENT_TOKEN, { callId: 'X', arguments: { path: 'notes/harmless.md' } })
    await eventually(async () => (await f.pending()).length === 1)
    const [asked] = await f.pending()
    expect(asked).toMatchObject({ callId: 'client.agent.X', name: 'write_file', arguments: { path: 'notes/harmless.md' } })
    // The agent cannot answer its own question.
    expect((await errorOf(await f.post(`/v1/approvals/${asked!.id}`, AGENT_TOKEN, { decision: 'allow' }))).code).toBe('FORBIDDEN')
    expect((await f.post(`/v1/approvals/${asked!.id}`, PERSON_TOKEN, { decision: 'allow' })).status).toBe(200)
    expect(((await (await first).json()) as ToolExecutionResult).isError).toBe(false)
    // The same id with another call: a new request, and nothing written until a person answers it.
    const second = f.post('/v1/tools/write_file/execute', AGENT_TOKEN, { callId: 'X', arguments: { path: 'src/index.ts' } })
    await eventually(async () => (await f.pending()).length === 1)
    const [again] = await f.pending()
    expect(again).toMatchObject({ callId: 'client.agent.X', arguments: { path: 'src/index.ts' } })
    expect(again!.id).not.toBe(asked!.id)
    expect(f.written.map((w) => w.path)).toEqual(['notes/harmless.md'])
    expect((await f.post(`/v1/approvals/${again!.id}`, PERSON_TOKEN, { decision: 'deny' })).status).toBe(200)
    expect(((await (await second).json()) as ToolExecutionResult).isError).toBe(true)
    expect(f.written.map((w) => w.path)).toEqual(['notes/harmless.md'])
  })

  it("attack (b): a write sent under a victim run's pending sub-call id is refused; the person sees only the victim's request", async () => {
    const f = fixture()
    const victim = await f.post('/v1/runs', PERSON_TOKEN, { code: "return await tools.write_file({ path: 'notes/two.md' })", description: 'victim' })
    const { id, callId } = (await victim.json()) as { id: string; callId: string }
    await eventually(async () => (await f.pending()).length === 1)
    const [request] = await f.pending()
    expect(request!.callId).toBe(`${callId}:code:1`)
    const attack = await f.post('/v1/tools/write_file/execute', AGENT_TOKEN, { callId: request!.callId, arguments: { path: 'src/index.ts' } })
    expect(await errorOf(attack)).toEqual(REFUSED)
    // The run's own id, without a segment, only names a call of the attacker's namespace.
    const renamed = f.post('/v1/tools/write_file/execute', AGENT_TOKEN, { callId, arguments: { path: 'src/index.ts' } })
    await eventually(async () => (await f.pending()).length === 2)
    const listed = await f.pending()
    expect(listed.map((p) => p.callId).sort()).toEqual([`${callId}:code:1`, `client.agent.${callId}`].sort())
    // Allowing the victim's request runs the victim's write, and only it.
    expect((await f.post(`/v1/approvals/${request!.id}`, PERSON_TOKEN, { decision: 'allow' })).status).toBe(200)
    await eventually(async () => f.written.length === 1)
    expect(f.written).toEqual([{ path: 'notes/two.md', by: `${callId}:code:1` }])
    const attackers = listed.find((p) => p.callId !== request!.callId)!
    expect((await f.post(`/v1/approvals/${attackers.id}`, PERSON_TOKEN, { decision: 'deny' })).status).toBe(200)
    expect(((await (await renamed).json()) as ToolExecutionResult).isError).toBe(true)
    expect(f.written.map((w) => w.path)).toEqual(['notes/two.md'])
    await eventually(async () => ((await (await f.app.request(`/v1/runs/${id}`, { headers: jsonAuth(PERSON_TOKEN) })).json()) as { status: string }).status === 'done')
  })

  it("attack (c): a direct execute under <run>:code:2 cannot pre-fill the run's call record: refused before the tool runs", async () => {
    const f = fixture()
    const started = await f.post('/v1/runs', PERSON_TOKEN, { code: "await tools.write_file({ path: 'a.md' }); return await tools.echo({ text: 'README.md' })", description: 'victim' })
    const { callId } = (await started.json()) as { callId: string }
    for (const token of [AGENT_TOKEN, PERSON_TOKEN]) {
      expect(await errorOf(await f.post('/v1/tools/echo/execute', token, { callId: `${callId}:code:2`, arguments: { text: 'package.json' } }))).toEqual(REFUSED)
    }
    expect(f.results.filter((r) => r.callId.includes(':code:2'))).toEqual([])
    await eventually(async () => (await f.pending()).length === 1)
    const [request] = await f.pending()
    await f.post(`/v1/approvals/${request!.id}`, PERSON_TOKEN, { decision: 'allow' })
    await eventually(async () => f.results.some((r) => r.callId === `${callId}:code:2`))
    expect(f.results.find((r) => r.callId === `${callId}:code:2`)!.result).toMatchObject({ isError: false, value: { text: 'README.md' } })
  })
})
