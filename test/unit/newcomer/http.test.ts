/**
 * Regressions found by driving the HTTP API as a newcomer would (docs/http-api.md).
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createNodeWorkerRuntime } from '../../../platforms/node/index.js'
import type { ToolExecutionResult } from '../../../src/types.js'
import { JSON_AUTH, createFixture, errorOf } from '../http/fixtures.js'

const codeRuntime = createNodeWorkerRuntime({ prespawn: 0 })
afterAll(() => codeRuntime.dispose())

const post = (body: unknown): RequestInit => ({ method: 'POST', headers: JSON_AUTH, body: JSON.stringify(body) })

describe('POST /v1/tools/:name/execute — callId must survive the trip back in X-Toolyard-Call-Id', () => {
  // Before the fix these ran the tool, then failed to set the response header: 500 INTERNAL
  // after the side effect had happened.
  it.each([
    ['a newline', 'a\nb'],
    ['a carriage return', 'a\rb'],
    ['a NUL', 'a\u0000b'],
    ['non-ASCII', 'é✓'],
    ['an emoji', 'call-😀'],
    ['a leading space', ' abc'],
    ['a trailing tab', 'abc\t'],
    ['only spaces', '   '],
  ])('refuses %s with 400 INVALID_REQUEST before anything runs', async (_label, callId) => {
    const { app, results } = createFixture()
    const response = await app.request('/v1/tools/echo/execute', post({ arguments: { text: 'x' }, callId }))
    expect(response.status).toBe(400)
    expect((await errorOf(response)).code).toBe('INVALID_REQUEST')
    expect(results).toHaveLength(0)
  })

  it.each([['toolu_01A09q90qw90lq917835lq9'], ['call-abc DEF'], ['x'.repeat(256)], ['!~#$%&*+-./:;<=>?@[]^_`{|}']])(
    'accepts the printable-ASCII id %s and echoes it in its principal’s namespace',
    async (callId) => {
      const { app, results } = createFixture()
      const response = await app.request('/v1/tools/echo/execute', post({ arguments: { text: 'x' }, callId }))
      expect(response.status).toBe(200)
      // A client's id lives in its principal's namespace (the single token's principal is `admin`).
      expect(response.headers.get('X-Toolyard-Call-Id')).toBe(`client.admin.${callId}`)
      expect(results.at(-1)?.callId).toBe(`client.admin.${callId}`)
    },
  )
})

describe('POST /v1/run — a missing field is reported as missing', () => {
  it('says /code is missing, not that undefined is not JSON', async () => {
    const { app } = createFixture({ mode: 'both', codeRuntime })
    const result = (await (await app.request('/v1/run', post({ description: 'x' }))).json()) as ToolExecutionResult
    expect(result.isError).toBe(true)
    if (!result.isError) return
    expect(result.error.info?.code).toBe('INVALID_ARGS')
    expect(result.error.message).toMatch(/code/)
    expect(result.error.message).toMatch(/missing|required/i)
    expect(result.error.message).not.toMatch(/undefined|lossless/)
  })

  it('reports both fields when the body is {}', async () => {
    const { app } = createFixture({ mode: 'both', codeRuntime })
    const result = (await (await app.request('/v1/run', post({}))).json()) as ToolExecutionResult
    expect(result.isError && result.error.info?.code).toBe('INVALID_ARGS')
    if (!result.isError) return
    expect(result.error.message).toMatch(/code/)
    expect(result.error.message).toMatch(/description/)
  })
})
