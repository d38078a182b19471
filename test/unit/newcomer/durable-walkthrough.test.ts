/**
 * docs/durability.md's "Try it: kill -9 while a run waits", as written: its first and
 * third shell blocks run in bash against a real server process (examples/start.ts, what
 * `npm start` runs after its builds, with npm start's defaults: a 30 s heartbeat age
 * before another process takes a run over), killed with SIGKILL between them (in place
 * of the block's `pgrep` line, which could reach another server on this machine).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../../..', import.meta.url))
const home = mkdtempSync(join(tmpdir(), 'durable-walkthrough-'))
const children: ChildProcess[] = []
afterAll(() => {
  for (const child of children) child.kill('SIGKILL')
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
async function server(): Promise<{ url: string; child: ChildProcess }> {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', TOOLYARD_DATA_DIR: join(home, '.toolyard') }
  for (const name of ['TOOLYARD_TOKEN', 'TOOLYARD_APPROVER_TOKEN', 'TOOLYARD_DATABASE_URL', 'OTEL_EXPORTER_OTLP_ENDPOINT']) delete env[name]
  const child = spawn(process.execPath, ['--import', pathToFileURL(join(root, 'node_modules/tsx/dist/loader.mjs')).href, join(root, 'examples/start.ts')], { cwd: home, env, stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  let out = ''
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()))
  const deadline = Date.now() + 90_000
  for (;;) {
    const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1]
    if (url !== undefined && out.includes('Ctrl+C stops the server.')) return { url, child }
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the server did not start: ${out.slice(-600)}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
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
    first.child.kill('SIGKILL')
    await new Promise((resolve) => first.child.once('exit', resolve))

    const second = await server()
    const out3 = await bash(block('durable-3').replaceAll('http://127.0.0.1:8787', second.url), { TOKEN: token, APPROVER: approver, RUN: run })
    expect(out3).toBe('"status":"waiting"\n200\n"written":{"path":"notes/durable.md","created":true,"bytes":13,"lines":1}\n2\n')
    // The same tokens after the restart (kept in .toolyard/tokens.json).
    const tokens = JSON.parse(readFileSync(join(home, '.toolyard/tokens.json'), 'utf8')) as { api: string; playground: string }
    expect([tokens.api, tokens.playground]).toEqual([token, approver])
  })
})
