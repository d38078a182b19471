/**
 * The refusals docs/http-api.md quotes word for word are the app's own: each quoted
 * `unknown field "<name>" in the request body (…)` is what `POST /v1/run` (or
 * `POST /v1/tools/:name/execute`) answers for a body with that field. The page quoted
 * `(expected: code, description, agent)` for `/v1/run` after the body had gained
 * `language`, so a client reading it could not learn that field existed.
 */
import { readFileSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { createNodeWorkerRuntime } from '../../../platforms/node/index.js'
import { JSON_AUTH, createFixture, errorOf } from '../http/fixtures.js'

const codeRuntime = createNodeWorkerRuntime({ prespawn: 0 })
afterAll(() => codeRuntime.dispose())

const page = readFileSync(new URL('../../../docs/http-api.md', import.meta.url), 'utf8')

/** Every backquoted "unknown field" message on the page, its line breaks read as spaces. */
function quotedRefusals(text: string): { field: string; message: string }[] {
  const out: { field: string; message: string }[] = []
  for (const match of text.matchAll(/`(unknown field "([^"]+)" in the request body \([^`]*\))`/g)) {
    out.push({ field: match[2]!, message: match[1]!.replace(/\s*\n\s*/g, ' ') })
  }
  return out
}

describe('docs/http-api.md: the unknown-field refusals it quotes', () => {
  const quotes = quotedRefusals(page)

  it('finds the quotes (the run body and the execute body)', () => {
    expect(quotes.map((q) => q.field)).toEqual(expect.arrayContaining(['args', 'source']))
  })

  it.each(quotes)('"$field" is answered exactly as quoted by the route it is quoted for', async ({ field, message }) => {
    const { app } = createFixture({ mode: 'both', codeRuntime })
    const body = JSON.stringify({ [field]: {} })
    const answers = await Promise.all(
      ['/v1/run', '/v1/tools/echo/execute'].map(async (path) => {
        const response = await app.request(path, { method: 'POST', headers: JSON_AUTH, body })
        expect(response.status).toBe(400)
        return (await errorOf(response)).message
      }),
    )
    expect(answers).toContain(message)
  })
})
