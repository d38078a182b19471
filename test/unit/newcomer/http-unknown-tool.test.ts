/**
 * `POST /v1/tools/read_fil/execute` answered 404 `unknown tool "read_fil"` with no hint, while a
 * program in the sandbox calling `tools.read_fil()` is told `did you mean tools.read_file?`. The
 * HTTP answers (`POST …/execute`, `GET /v1/tools/:name`) now name the closest tools the agent
 * sees, chosen by the sandbox's own `closestNames`.
 */
import { describe, expect, it } from 'vitest'
import { AUTH, JSON_AUTH, createFixture, errorOf } from '../http/fixtures.js'

const execute = (body: unknown): RequestInit => ({ method: 'POST', headers: JSON_AUTH, body: JSON.stringify(body) })

describe('an unknown tool over HTTP names the closest listed one', () => {
  it('POST /v1/tools/ecoh/execute → did you mean "echo"?, with the call id, nothing run', async () => {
    const { app, results } = createFixture()
    const response = await app.request('/v1/tools/ecoh/execute', execute({ arguments: { text: 'x' } }))
    expect(response.status).toBe(404)
    expect(response.headers.get('X-Toolyard-Call-Id')).toMatch(/^http-/)
    expect(await errorOf(response)).toEqual({ code: 'UNKNOWN_TOOL', message: 'unknown tool "ecoh"; did you mean "echo"?' })
    expect(results.every((r) => r.name !== 'echo')).toBe(true)
  })

  it('GET /v1/tools/:name says the same', async () => {
    const { app } = createFixture()
    const response = await app.request('/v1/tools/ecoh', { headers: AUTH })
    expect(await errorOf(response)).toEqual({ code: 'UNKNOWN_TOOL', message: 'unknown tool "ecoh"; did you mean "echo"?' })
  })

  it('suggests only what the agent sees: alice’s "secret" for alice, nothing for the global layer', async () => {
    const { app } = createFixture()
    expect((await errorOf(await app.request('/v1/tools/secrte/execute', execute({ agent: 'alice', arguments: {} })))).message).toBe(
      'unknown tool "secrte"; did you mean "secret"?',
    )
    expect((await errorOf(await app.request('/v1/tools/secrte/execute', execute({ arguments: {} })))).message).toBe('unknown tool "secrte"')
  })

  it('a name close to nothing keeps the plain words', async () => {
    const { app } = createFixture()
    expect((await errorOf(await app.request('/v1/tools/zzzzzz/execute', execute({})))).message).toBe('unknown tool "zzzzzz"')
  })
})
