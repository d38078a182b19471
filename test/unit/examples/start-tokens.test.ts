/**
 * `npm start`'s tokens (issue 31 item 1, issue 35 item 3): an API token (`run`) and the
 * playground's (`run` + `approve`), kept in `<data dir>/tokens.json` (0600) across
 * restarts, overridden by `TOOLYARD_TOKEN` / `TOOLYARD_APPROVER_TOKEN`; a 401 says where
 * the tokens are, without naming a path.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { startServer } from '../../../examples/start.js'
import { loadStartTokens, TOKENS_FILE, UNAUTHORIZED_HINT } from '../../../examples/start-tokens.js'

const dirs: string[] = []
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'toolyard-tokens-'))
  dirs.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

describe('loadStartTokens', () => {
  it('creates two different tokens in a 0600 file on first use, and reads the same ones back', () => {
    const dir = join(tempDir(), 'data')
    const first = loadStartTokens(dir, {}, () => {})
    expect(first.file).toBe(join(dir, TOKENS_FILE))
    expect(first.api).toMatch(/^[0-9a-f]{64}$/)
    expect(first.playground).toMatch(/^[0-9a-f]{64}$/)
    expect(first.api).not.toBe(first.playground)
    expect(statSync(first.file!).mode & 0o777).toBe(0o600)
    expect(statSync(dir).mode & 0o777).toBe(0o700)
    expect(JSON.parse(readFileSync(first.file!, 'utf8'))).toEqual({ api: first.api, playground: first.playground })
    const again = loadStartTokens(dir, {}, () => {})
    expect([again.api, again.playground]).toEqual([first.api, first.playground])
  })

  it('TOOLYARD_TOKEN and TOOLYARD_APPROVER_TOKEN override the kept ones (an empty one does not)', () => {
    const dir = tempDir()
    const kept = loadStartTokens(dir, {}, () => {})
    const env = { TOOLYARD_TOKEN: 'pinned-api-token-0123456789', TOOLYARD_APPROVER_TOKEN: '' }
    expect(loadStartTokens(dir, env, () => {})).toMatchObject({ api: 'pinned-api-token-0123456789', playground: kept.playground })
    expect(loadStartTokens(undefined, { TOOLYARD_APPROVER_TOKEN: 'pinned-person-0123456789' }, () => {})).toMatchObject({ playground: 'pinned-person-0123456789' })
  })

  it('a file that is not ours (garbage, one token, a directory) is replaced, saying so; a readable-by-all file becomes 0600', () => {
    for (const content of ['not json', '{"api":"short","playground":"x"}', JSON.stringify({ api: 'a'.repeat(20), playground: 'a'.repeat(20) })]) {
      const dir = tempDir()
      writeFileSync(join(dir, TOKENS_FILE), content, { mode: 0o644 })
      const warnings: string[] = []
      const tokens = loadStartTokens(dir, {}, (message) => warnings.push(message))
      expect(warnings).toEqual([`${join(dir, TOKENS_FILE)} is not a tokens file this server wrote; new tokens replace it`])
      expect(JSON.parse(readFileSync(join(dir, TOKENS_FILE), 'utf8'))).toEqual({ api: tokens.api, playground: tokens.playground })
      expect(statSync(join(dir, TOKENS_FILE)).mode & 0o777).toBe(0o600)
    }
    const open = tempDir()
    const kept = loadStartTokens(open, {}, () => {})
    // Someone widened it: reading it again narrows it back.
    writeFileSync(join(open, TOKENS_FILE), JSON.stringify({ api: kept.api, playground: kept.playground }), { mode: 0o644 })
    loadStartTokens(open, {}, () => {})
    expect(statSync(join(open, TOKENS_FILE)).mode & 0o777).toBe(0o600)
  })
})

describe('npm start with its two tokens', () => {
  it('the API token runs but cannot see approvals; the playground token (in the page) decides; both survive a restart; a 401 says where they are', async () => {
    const dataDir = tempDir()
    const env = { api: process.env.TOOLYARD_TOKEN, person: process.env.TOOLYARD_APPROVER_TOKEN }
    delete process.env.TOOLYARD_TOKEN
    delete process.env.TOOLYARD_APPROVER_TOKEN
    try {
      const server = await startServer({ port: 0, staticDir: null, dataDir })
      let tokens: [string, string]
      try {
        tokens = [server.apiToken, server.token]
        expect(server.tokensFile).toBe(join(dataDir, TOKENS_FILE))
        const as = (token: string) => ({ Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' })
        const run = await fetch(`${server.url}/v1/run`, { method: 'POST', headers: as(server.apiToken), body: JSON.stringify({ code: 'return 1', description: 'd' }) })
        expect(run.status).toBe(200)
        const listed = await fetch(`${server.url}/v1/approvals`, { headers: as(server.apiToken) })
        expect(listed.status).toBe(403)
        expect(((await listed.json()) as { error: { code: string } }).error.code).toBe('FORBIDDEN')
        expect((await fetch(`${server.url}/v1/approvals`, { headers: as(server.token) })).status).toBe(200)
        const page = await (await fetch(`${server.url}/`)).text()
        expect(page).toContain(`<meta name="toolyard-token" content="${server.token}" />`)
        const refused = (await (await fetch(`${server.url}/v1/tools`, { headers: as('stale-token-from-yesterday-0123') })).json()) as { error: { code: string; message: string } }
        expect(refused.error).toEqual({ code: 'UNAUTHORIZED', message: `the bearer token is not valid; ${UNAUTHORIZED_HINT}` })
        expect(refused.error.message).not.toContain(dataDir)
        // The MCP endpoint takes the same tokens and says the same.
        const mcp = await fetch(`${server.url}/mcp`, { method: 'POST', headers: as('stale-token-from-yesterday-0123'), body: '{}' })
        expect(((await mcp.json()) as { error: { message: string } }).error.message).toBe(`the bearer token is not valid; ${UNAUTHORIZED_HINT}`)
      } finally {
        await server.shutdown()
      }
      const restarted = await startServer({ port: 0, staticDir: null, dataDir })
      try {
        expect([restarted.apiToken, restarted.token]).toEqual(tokens)
        expect((await fetch(`${restarted.url}/v1/tools`, { headers: { Authorization: `Bearer ${tokens[0]}` } })).status).toBe(200)
      } finally {
        await restarted.shutdown()
      }
    } finally {
      if (env.api !== undefined) process.env.TOOLYARD_TOKEN = env.api
      if (env.person !== undefined) process.env.TOOLYARD_APPROVER_TOKEN = env.person
    }
  }, 60_000)
})
