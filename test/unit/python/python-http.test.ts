import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import type { ToolExecutionResult } from '../../../src/types.js'
import { createFixture, JSON_AUTH } from '../http/fixtures.js'

const sandbox = createSandboxRuntime({ language: 'python' })
afterAll(() => sandbox.dispose())

const post = (body: unknown): RequestInit => ({ method: 'POST', headers: JSON_AUTH, body: JSON.stringify(body) })

describe('POST /v1/run on a Python server', () => {
  it('runs a Python program, with or without "language": "python"', async () => {
    const { app } = createFixture({ mode: 'both', codeRuntime: sandbox })
    for (const extra of [{}, { language: 'python' }]) {
      const response = await app.request('/v1/run', post({ code: 'r = await tools.echo({"text": "hi"})\nprint("got", r["text"])\nreturn r["text"]', description: 'echo', ...extra }))
      expect(response.status).toBe(200)
      const result = (await response.json()) as ToolExecutionResult
      expect(result.isError).toBe(false)
      if (!result.isError) expect(result.value).toMatchObject({ result: 'hi', logs: ['got hi'] })
    }
  })

  it('refuses a language the server does not run', async () => {
    const { app } = createFixture({ mode: 'both', codeRuntime: sandbox })
    const response = await app.request('/v1/run', post({ code: 'return 1', description: 'd', language: 'typescript' }))
    expect(response.status).toBe(400)
    expect(await response.text()).toContain('this server runs python programs')
  })
})
