/**
 * A query parameter a route does not read was ignored: `GET /v1/sdk?lang=python` answered 200
 * with the TypeScript SDK and `GET /v1/tools?agnt=x` the global layer's list. Every route now
 * refuses one (400 `INVALID_REQUEST`, naming it and the closest parameter it reads), as unknown
 * body fields already were: one middleware, from the route table's `query` lists.
 */
import { describe, expect, it } from 'vitest'
import { AUTH, createFixture, errorOf } from '../http/fixtures.js'

async function refusal(path: string, init: RequestInit = { headers: AUTH }): Promise<{ status: number; code: string; message: string }> {
  const { app } = createFixture()
  const response = await app.request(path, init)
  return { status: response.status, ...(await errorOf(response)) }
}

describe('every route refuses a query parameter it does not read', () => {
  it('GET /v1/sdk?lang=python names "language"', async () => {
    expect(await refusal('/v1/sdk?lang=python')).toEqual({
      status: 400,
      code: 'INVALID_REQUEST',
      message: 'unknown field "lang" in the query string (did you mean "language"? expected: language, agent)',
    })
  })

  it('GET /v1/tools?agnt=x names "agent"', async () => {
    expect(await refusal('/v1/tools?agnt=x')).toEqual({
      status: 400,
      code: 'INVALID_REQUEST',
      message: 'unknown field "agnt" in the query string (did you mean "agent"? expected: agent)',
    })
  })

  it('a misspelt limit, and a far name gets no suggestion', async () => {
    expect((await refusal('/v1/catalog/search?q=x&limt=3')).message).toBe(
      'unknown field "limt" in the query string (did you mean "limit"? expected: q, limit, agent)',
    )
    expect((await refusal('/v1/tools/echo?verbose=1')).message).toBe('unknown field "verbose" in the query string (expected: agent)')
  })

  it('POST routes too, before the body is read or anything runs', async () => {
    const { app, results } = createFixture()
    const response = await app.request('/v1/tools/echo/execute?agnet=x', {
      method: 'POST',
      headers: { ...AUTH, 'Content-Type': 'application/json' },
      body: JSON.stringify({ arguments: { text: 'x' } }),
    })
    expect(response.status).toBe(400)
    expect((await errorOf(response)).message).toContain('did you mean "agent"?')
    expect(results).toHaveLength(0)
  })

  it('keeps answering the parameters each route reads', async () => {
    const { app } = createFixture()
    for (const path of ['/v1/tools?agent=a', '/v1/tools/echo?agent=a', '/v1/sdk?language=typescript&agent=a', '/v1/catalog/search?q=echo&limit=2&agent=a', '/v1/prompt?agent=a', '/v1/health']) {
      expect((await app.request(path, { headers: AUTH })).status, path).toBe(200)
    }
    // `mode` keeps its own reason on the prompt.
    expect((await refusal('/v1/prompt?mode=code')).message).toMatch(/^mode cannot be chosen per request/)
  })
})
