/**
 * The 404 of an unknown tool at its edges (mutation testing, stop 55: `unknownToolMessage` and
 * `resultResponse` in src/http/_routes.ts): several close names are listed as a sentence, the
 * name asked for is never suggested to itself, and a refusal that is not the plain "unknown
 * tool" (a code-only tool called directly: the route-back hint) is passed on word for word.
 */
import { describe, expect, it } from 'vitest'
import { unknownToolMessage } from '../../../src/http/_routes.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { AUTH, JSON_AUTH, createFixture, errorOf } from './fixtures.js'

const execute = (body: unknown): RequestInit => ({ method: 'POST', headers: JSON_AUTH, body: JSON.stringify(body) })
const tool = (name: string, callers?: readonly ('code' | 'native')[]) =>
  defineTool({ name, description: 'd', parameters: {}, output: { schema: { type: 'number' }, render: (_a, v) => [{ type: 'text', text: String(v) }] }, execute: () => 1, ...(callers === undefined ? {} : { callers }) })

describe('an unknown tool’s 404 over HTTP', () => {
  it('two close names: "did you mean "a" or "b"?"; three: "a", "b" or "c"', async () => {
    const { app, runtime } = createFixture()
    runtime.register(tool('read_file'))
    runtime.register(tool('read_film'))
    const two = await errorOf(await app.request('/v1/tools/read_fil/execute', execute({ arguments: {} })))
    expect(two).toEqual({ code: 'UNKNOWN_TOOL', message: 'unknown tool "read_fil"; did you mean "read_file" or "read_film"?' })
    runtime.register(tool('read_fild'))
    const three = await errorOf(await app.request('/v1/tools/read_fil', { headers: AUTH }))
    expect(three.message).toMatch(/^unknown tool "read_fil"; did you mean "read_fil[a-z]", "read_fil[a-z]" or "read_fil[a-z]"\?$/)
    for (const name of ['"read_file"', '"read_film"', '"read_fild"']) expect(three.message).toContain(name)
  })

  it('the name asked for is never among its own suggestions', () => {
    expect(unknownToolMessage('read_file', ['read_file', 'read_files'])).toBe('unknown tool "read_file"; did you mean "read_files"?')
    expect(unknownToolMessage('read_file', ['read_file'])).toBe('unknown tool "read_file"')
  })

  it('a code-only tool called directly keeps the pipeline’s route-back words, with no suggestion added', async () => {
    const { app, runtime } = createFixture()
    runtime.register(tool('secret_sum', ['code']))
    runtime.register(tool('secret_sums'))
    const response = await app.request('/v1/tools/secret_sum/execute', execute({ arguments: {} }))
    expect(response.status).toBe(404)
    const error = await errorOf(response)
    expect(error.code).toBe('UNKNOWN_TOOL')
    expect(error.message).toContain("`secret_sum` is callable only from inside a `run_code` program (its callers are ['code'])")
    expect(error.message).not.toContain('did you mean')
  })
})
