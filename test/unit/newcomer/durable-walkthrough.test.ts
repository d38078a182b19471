/**
 * docs/durability.md's "Try it: kill -9 while a run waits", as written: its first and
 * third shell blocks run in bash against a real server process (examples/start.ts, what
 * `npm start` runs after its builds, with npm start's defaults: a 30 s heartbeat age
 * before another process takes a run over), killed with SIGKILL between them (in place
 * of the block's `pgrep` line, which could reach another server on this machine).
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { startChild, stopChildren, type Child } from '../../support/child.js'

const root = fileURLToPath(new URL('../../..', import.meta.url))
const home = mkdtempSync(join(tmpdir(), 'durable-walkthrough-'))
afterAll(async () => {
  await stopChildren()
  rmSync(home, { recursive: true, force: true })
})

const doc = readFileSync(join(root, 'docs/durability.md'), 'utf8')
/** The shell block after `<!-- walkthrough: <name> -->`. */
function block(name: string): string {
  const match = new RegExp(`<!-- walkthrough: ${name} -->\\n\`\`\`sh\\n([\\s\\S]*?)\\n\`\`\`\\n`).exec(doc)
  if (match === null) throw new Error(`docs/durability.md has no walkthrough block ${name}`)
  return match[1]!
}

/** The server as `npm start` runs it, in `home` (its data directory `.toolyard/` there), on a free port. */
async function server(): Promise<{ url: string; child: Child }> {
  const env = { PORT: '0', TOOLYARD_DATA_DIR: join(home, '.toolyard'), TOOLYARD_TOKEN: undefined, TOOLYARD_APPROVER_TOKEN: undefined, TOOLYARD_DATABASE_URL: undefined, OTEL_EXPORTER_OTLP_ENDPOINT: undefined }
  const child = startChild(process.execPath, ['--import', pathToFileURL(join(root, 'node_modules/tsx/dist/loader.mjs')).href, join(root, 'examples/start.ts')], { cwd: home, env })
  const url = await child.waitFor((_, out) => (out.includes('Ctrl+C stops the server.') ? /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1] : undefined), 'the server to start')
  return { url, child }
}

function bash(script: string, env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('bash', ['-c', script], { cwd: home, env: { ...process.env, ...env }, timeout: 150_000 }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`${error.message}\n${stdout}${stderr}`))
      else resolve(stdout)
    })
  })
}

describe('docs/durability.md: kill -9 while a run waits', () => {
  it('runs as written: waiting, killed, waiting again after the restart, Allow, done, each call once', { timeout: 240_000 }, async () => {
    expect(block('durable-2')).toBe("kill -9 $(pgrep -f 'node scripts/start.mjs')")
    const first = await server()
    const out1 = await bash(`${block('durable-1').replaceAll('http://127.0.0.1:8787', first.url)}\necho "<<$TOKEN $APPROVER $RUN>>"`)
    expect(out1).toMatch(/^"status":"waiting"\n/)
    const [token, approver, run] = /<<(\S+) (\S+) (\S+)>>/.exec(out1)!.slice(1) as [string, string, string]

    // The block's pgrep line, on this test's own child only.
    await first.child.stop()

    const second = await server()
    const out3 = await bash(block('durable-3').replaceAll('http://127.0.0.1:8787', second.url), { TOKEN: token, APPROVER: approver, RUN: run })
    expect(out3).toBe('"status":"waiting"\n200\n"written":{"path":"notes/durable.md","created":true,"bytes":13,"lines":1}\n2\n')
    // The same tokens after the restart (kept in .toolyard/tokens.json).
    const tokens = JSON.parse(readFileSync(join(home, '.toolyard/tokens.json'), 'utf8')) as { api: string; playground: string }
    expect([tokens.api, tokens.playground]).toEqual([token, approver])
  })
})
