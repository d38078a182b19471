/**
 * `DELETE /v1/runs/:id` of a run waiting for a person answers `status: 'cancelled'` and lists
 * no open approval: its request is being withdrawn, and a decision then answers 404
 * `APPROVAL_WITHDRAWN`. Found against `npm start`: the answer said `cancelled` and still
 * listed the request (its withdrawal was landing in the store), inviting a person's client
 * to decide a call that would never run. A `GET` while the cancel lands says the same.
 */
import { describe, expect, it } from 'vitest'
import type { RunBody } from '../../../src/http/index.js'
import { payFixture } from '../../support/pay-fixture.js'
import { until } from '../../support/poll.js'
import { PERSON_TOKEN } from './fixtures.js'

describe('DELETE /v1/runs/:id of a run waiting for a person', () => {
  it('answers cancelled with no approval listed; the request is withdrawn and refuses a decision', async () => {
    const f = payFixture()
    const started = (await (await f.request('/v1/runs', PERSON_TOKEN, { body: { code: 'return await tools.pay({ cents: 5 })', description: 'pay' } })).json()) as { id: string }
    const waiting = await until(async () => {
      const body = (await (await f.request(`/v1/runs/${started.id}`, PERSON_TOKEN)).json()) as RunBody
      return body.status === 'waiting' ? body : false
    }, 'the run to wait for a person', 30_000)
    const approvalId = waiting.approvals[0]!.id

    const cancelled = await f.request(`/v1/runs/${started.id}`, PERSON_TOKEN, { method: 'DELETE' })
    expect(cancelled.status).toBe(200)
    const body = (await cancelled.json()) as RunBody
    expect(body.status).toBe('cancelled')
    expect(body.approvals).toEqual([])
    const read = (await (await f.request(`/v1/runs/${started.id}`, PERSON_TOKEN)).json()) as RunBody
    expect([read.status, read.approvals]).toEqual(['cancelled', []])

    const late = await f.request(`/v1/approvals/${approvalId}`, PERSON_TOKEN, { body: { decision: 'allow' } })
    expect(((await late.json()) as { error: { code: string } }).error.code).toBe('APPROVAL_WITHDRAWN')
    await until(async () => (await f.broker.pending()).length === 0, 'the request withdrawn', 30_000)
    expect(f.paid).toEqual([])
  }, 60_000)
})
