/**
 * `DELETE /v1/runs/:id` of a run waiting for a person answers `status: 'cancelled'` and lists
 * no open approval: its request is being withdrawn, and a decision then answers 404
 * `APPROVAL_WITHDRAWN`. Found against `npm start`: the answer said `cancelled` and still
 * listed the request (its withdrawal was landing in the store), inviting a person's client
 * to decide a call that would never run. A `GET` while the cancel lands says the same.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CodeRuntime } from '../../../src/code-runtime/contract.js'
import type { RunBody } from '../../../src/http/index.js'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { until } from '../../support/poll.js'
import { AUTH, JSON_AUTH, createFixture, errorOf } from './fixtures.js'

let codeRuntime: CodeRuntime

beforeAll(async () => {
  const { createSandboxRuntime } = await import('../../../platforms/node/index.js')
  codeRuntime = createSandboxRuntime({ memoryMb: 32 })
})
afterAll(async () => {
  await codeRuntime.dispose()
})

describe('DELETE /v1/runs/:id of a run waiting for a person', () => {
  it('answers cancelled with no approval listed; the request is withdrawn and refuses a decision', async () => {
    const broker = createApprovalBroker()
    const f = createFixture({ mode: 'both', codeRuntime, approvals: broker })
    const paid: number[] = []
    f.runtime.register(
      defineTool({
        name: 'pay',
        description: 'Pays (asks a person first).',
        parameters: { cents: { type: 'number', required: true } },
        output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
        execute: (args) => (paid.push(args.cents), `paid ${args.cents}`),
      }),
    )
    f.runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
    const started = (await (await f.app.request('/v1/runs', { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ code: 'return await tools.pay({ cents: 5 })', description: 'pay' }) })).json()) as { id: string }
    const waiting = await until(async () => {
      const body = (await (await f.app.request(`/v1/runs/${started.id}`, { headers: AUTH })).json()) as RunBody
      return body.status === 'waiting' ? body : false
    }, 'the run to wait for a person', 30_000)
    const approvalId = waiting.approvals[0]!.id

    const cancelled = await f.app.request(`/v1/runs/${started.id}`, { method: 'DELETE', headers: AUTH })
    expect(cancelled.status).toBe(200)
    const body = (await cancelled.json()) as RunBody
    expect(body.status).toBe('cancelled')
    expect(body.approvals).toEqual([])
    const read = (await (await f.app.request(`/v1/runs/${started.id}`, { headers: AUTH })).json()) as RunBody
    expect([read.status, read.approvals]).toEqual(['cancelled', []])

    const late = await f.app.request(`/v1/approvals/${approvalId}`, { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ decision: 'allow' }) })
    expect((await errorOf(late)).code).toBe('APPROVAL_WITHDRAWN')
    await until(async () => (await broker.pending()).length === 0, 'the request withdrawn', 30_000)
    expect(paid).toEqual([])
  }, 60_000)
})
