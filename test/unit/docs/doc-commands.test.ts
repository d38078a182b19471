/**
 * Every command sample of README.md and docs/*.md (test/unit/docs/commands.ts says which)
 * is accounted for: run here as written (curl against a real `npm start` server with a
 * data directory, as `npm start` has; the examples; the structure check), produced by a
 * marked sample of doc-samples.test.ts, or listed with why it cannot run here. A sample
 * that is none of these, or an entry whose sample is gone, fails the check.
 */
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { startServer } from '../../../examples/start.js'
import type { StartedServer } from '../../../examples/start.js'
import { findCommandSamples } from './commands.js'
import type { CommandSample } from './commands.js'

const root = fileURLToPath(new URL('../../../', import.meta.url))
const files = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)]
const samples: CommandSample[] = files.flatMap((file) => findCommandSamples(file, readFileSync(join(root, file), 'utf8'), file === 'README.md'))

/** How a sample is accounted for. */
type How = { readonly run: 'curl' | 'exit-0' } | { readonly producedBy: string } | { readonly notHere: string }

/** `[file, the start of the sample's first command, how]`. */
const ACCOUNTED: ReadonlyArray<readonly [string, string, How]> = [
  // README: the two commands and the server's variants.
  ['README.md', 'npm ci && npm start', { notHere: 'a clean install and a full build (about a minute); the server it starts is the one every sample below runs against (startServer, what npm start runs after its build)' }],
  ['README.md', 'npm ci && npm test', { notHere: 'the whole test suite (this check is part of it)' }],
  ['README.md', 'npm ci', { notHere: 'a clean install would replace node_modules under the running tests' }],
  ['README.md', 'npm start', { notHere: 'builds, then serves on 8787 until Ctrl+C; the same server (startServer) answers the curl samples here, and test/unit/newcomer/build-stamp.test.ts covers its up-to-date check' }],
  ['README.md', 'PORT=9000 npm start', { notHere: 'as npm start, on a fixed port another process may hold' }],
  ['README.md', 'npm i toolyard', { notHere: 'installs from the registry (network)' }],
  ['README.md', 'npm init -y', { notHere: 'the quick start’s own folder, outside this repository' }],
  ['README.md', 'npm run example', { run: 'exit-0' }],
  ['README.md', 'npx wrangler deploy', { notHere: 'needs a Cloudflare account, a login and the network' }],
  ['README.md', 'npm run dev:edge', { notHere: 'a second workerd under wrangler dev (tens of seconds here); the same Worker runs under Miniflare in test/edge' }],
  ['README.md', 'npm test', { notHere: 'the whole test suite (this check is part of it)' }],
  ['README.md', "npx vitest run --project 'node*'", { notHere: 'the node half of the test suite (this check is part of it)' }],
  ['README.md', 'npm run check:structure', { run: 'exit-0' }],
  ['README.md', 'npm run gen', { notHere: 'rewrites the generated sources other tests read; the build runs its --check' }],
  ['README.md', 'npm run build -- --force', { notHere: 'rebuilds dist/ while other tests read it' }],
  ['README.md', 'npm run bench', { notHere: 'benchmarks: minutes of load, figures not checked' }],
  ['README.md', 'npm run test:mutation', { notHere: 'mutation testing: hours on two cores' }],
  ['docs/agent-loop.md', 'npx tsx examples/agent-loop.ts', { notHere: 'the second line is a benchmark (minutes); the first is run by test/unit/examples/agent-loop.test.ts' }],
  // The approval flow waits for a person between its commands: the marked samples run it.
  ['docs/approvals.md', `curl -s -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\\n    -d '{"arguments":{"note"`, { notHere: 'its argument is elided (2,700 characters); the refusal is tested in test/unit/demo/approval-surfaces.test.ts' }],
  ['docs/approvals.md', 'curl -sN -H "Authorization: Bearer $TOKEN"', { producedBy: 'approvals-flow-stream' }],
  ['docs/approvals.md', 'curl -s -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8787/v1/approvals', { producedBy: 'approvals-flow-meanwhile' }],
  ['docs/approvals.md', 'curl -s -i -X POST -H "Authorization: Bearer $TOKEN"', { producedBy: 'approvals-flow-meanwhile' }],
  ['docs/approvals.md', `curl -s -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\\n    -d '{"arguments":{"path":"/etc/motd"`, { notHere: 'waits for a person’s Deny in another terminal; the approvals-flow samples run the same exchange' }],
  ['docs/deployment.md', 'npx wrangler login', { notHere: 'needs a Cloudflare account, a login and the network' }],
  ['docs/deployment.md', 'TOKEN=…   # the token you put in the TOOLYARD_TOKEN secret', { notHere: 'a deployed Worker on workers.dev' }],
  ['docs/deployment.md', "printf 'TOOLYARD_TOKEN=%s", { notHere: 'writes .dev.vars and starts wrangler dev (a second workerd, tens of seconds here); the same Worker runs under Miniflare in test/edge' }],
  ['docs/deployment.md', 'TOOLYARD_DATABASE_URL=postgres://', { notHere: 'needs a PostgreSQL server at db; test/unit/postgres/npm-start.test.ts starts npm start’s entry on a throwaway cluster' }],
  ['docs/deployment.md', 'PORT=8801 TOOLYARD_DATA_DIR=.a', { notHere: 'two servers on fixed ports behind a proxy, on a database; test/unit/postgres/two-instances.test.ts runs the same pair on a throwaway cluster' }],
  ['docs/deployment.md', 'npm start ', { notHere: 'builds, then serves on 8787 until Ctrl+C; startServer answers the curl samples here' }],
  // The kill -9 walkthrough: a server killed between its blocks.
  ['docs/durability.md', 'TOKEN=$(node -p', { notHere: 'the walkthrough’s first block: test/unit/newcomer/durable-walkthrough.test.ts runs it as written against a real server process' }],
  ['docs/durability.md', 'kill -9 $(pgrep', { notHere: 'would kill any npm start on this machine; test/unit/newcomer/durable-walkthrough.test.ts SIGKILLs its own server in its place' }],
  ['docs/durability.md', 'curl -s -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8787/v1/runs/$RUN', { notHere: 'the walkthrough’s third block, after the restart: test/unit/newcomer/durable-walkthrough.test.ts runs it as written' }],
  ['docs/http-api.md', `curl -s -H "Authorization: Bearer $TOKEN" 'http://127.0.0.1:8787/v1/catalog/search`, { run: 'curl' }],
  ['docs/http-api.md', 'curl -s -X POST -H "Authorization: Bearer $TOKEN"', { producedBy: 'http-runs-flow' }],
  ['docs/http-api.md', 'curl -s -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8787/v1/runs/', { producedBy: 'http-runs-flow' }],
  ['docs/http-api.md', "curl -s -o /dev/null -w '%{http_code}\\n' -X POST", { producedBy: 'http-runs-flow' }],
  ['docs/http-api.md', 'curl -sN -H "Authorization: Bearer $TOKEN" -H \'Last-Event-ID: 5\'', { producedBy: 'http-runs-flow' }],
  ['docs/http-api.md', 'TOKEN=…   # printed by npm start', { run: 'curl' }],
  ['docs/playground.md', 'npm run build:demo', { notHere: 'rewrites demo/dist/, which the e2e project serves meanwhile' }],
  ['docs/testing.md', 'npm run test:mutation', { notHere: 'mutation testing: hours on two cores' }],
  ['docs/testing.md', "TOOLYARD_MUTATION_ONLY='test/unit/schema", { notHere: 'mutation testing: tens of minutes a folder' }],
  ['docs/testing.md', "TOOLYARD_MUTATION_ONLY='test/unit/durable/runs-core", { notHere: 'mutation testing: tens of minutes a file' }],
  ['docs/testing.md', "TOOLYARD_MUTATION_ONLY='test/unit/approvals/broker-store", { notHere: 'mutation testing: tens of minutes a file' }],
]

const entryOf = (sample: CommandSample) => ACCOUNTED.filter(([file, start]) => file === sample.file && (sample.key === start || sample.key.startsWith(start)))
/** The most specific entry (the longest start) when several match. */
const bestOf = (sample: CommandSample) => entryOf(sample).sort((a, b) => b[1].length - a[1].length)[0]

const TOKEN = 'docs-command-token-0123456789abcdef'
const dataDir = mkdtempSync(join(tmpdir(), 'doc-commands-'))
let server: Promise<StartedServer> | undefined
afterAll(async () => {
  if (server !== undefined) await (await server).shutdown()
  rmSync(dataDir, { recursive: true, force: true })
})

interface Ran {
  readonly code: number
  readonly out: string
}
function sh(script: string, env: Record<string, string> = {}): Promise<Ran> {
  return new Promise((resolve) => {
    execFile('bash', ['-c', script], { cwd: root, env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, out: `${stdout}${stderr}` })
    })
  })
}

/** Runs a curl sample as written against a real `npm start` server (its URL and token in place of 8787 and `$TOKEN`), each command's exit code and answer checked. */
async function runCurl(sample: CommandSample): Promise<void> {
  const { url } = await (server ??= startServer({ port: 0, token: TOKEN, staticDir: null, dataDir }))
  const script = sample.commands
    .filter((command) => !command.startsWith('TOKEN=…'))
    .map((command, i) => `${command.replaceAll('http://127.0.0.1:8787', url)}\necho "<<${i}:$?>>"`)
    .join('\n')
  const { code, out } = await sh(script, { TOKEN })
  expect(code, out).toBe(0)
  const parts = out.split(/<<\d+:(\d+)>>\n?/)
  for (let i = 1; i < parts.length; i += 2) {
    const answer = parts[i - 1]!
    expect(`${parts[i]} ${answer}`.slice(0, 400), `command ${(i - 1) / 2 + 1} of ${sample.file}:${sample.line}`).toMatch(/^0 /)
    // The API's error shape: a 401, a 404 or a refused body would read as a real answer otherwise.
    expect(answer, `command ${(i - 1) / 2 + 1} of ${sample.file}:${sample.line}`).not.toMatch(/^\{"error":\{"code"/m)
  }
}

describe('command samples in README.md and docs/', () => {
  it('every command sample is run here, produced by a marked sample, or listed with why not; no entry is stale', () => {
    const unaccounted = samples.filter((s) => entryOf(s).length === 0).map((s) => `${s.file}:${s.line}: ${s.key.slice(0, 80)}`)
    expect(unaccounted, 'add each to ACCOUNTED: run it, or say why it cannot run here').toEqual([])
    const stale = ACCOUNTED.filter(([file, start]) => !samples.some((s) => s.file === file && (s.key === start || s.key.startsWith(start)))).map(([file, start]) => `${file}: ${start}`)
    expect(stale, 'entries whose sample is gone').toEqual([])
    for (const [, , how] of ACCOUNTED) if ('notHere' in how) expect(how.notHere.length).toBeGreaterThan(10)
  })

  it('every sample said to be produced by a marked sample names a marker that exists', () => {
    const markers = new Set(files.flatMap((file) => [...readFileSync(join(root, file), 'utf8').matchAll(/<!--\s*sample:\s*([a-z0-9-]+)\s*-->/g)].map((m) => m[1])))
    for (const [, , how] of ACCOUNTED) if ('producedBy' in how) expect(markers).toContain(how.producedBy)
  })

  it('README’s quick start runs as it says: saved as quickstart.mjs, against the built package', async () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8')
    const section = readme.slice(readme.indexOf('## Quick start (library)'))
    expect(section).toMatch(/^Save this as `quickstart\.mjs`/m)
    const code = /```js\n([\s\S]*?)\n```/.exec(section)?.[1]
    expect(code).toBeDefined()
    // Inside the repository, `toolyard` resolves to this package (its exports map: dist/).
    const dir = join(root, '.scratch-doc-quickstart')
    mkdirSync(dir, { recursive: true })
    try {
      writeFileSync(join(dir, 'quickstart.mjs'), code!)
      const { code: exit, out } = await sh('node .scratch-doc-quickstart/quickstart.mjs')
      expect(exit, out).toBe(0)
      expect(out).toContain("[ { type: 'text', text: '5' } ]")
      expect(out).toContain("{ type: 'text', text: '[\\n  2,\\n  4,\\n  6\\n]' }")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)

  const runnable = samples.filter((s) => {
    const how = bestOf(s)?.[2]
    return how !== undefined && 'run' in how
  })
  it.each(runnable.map((s) => [`${s.file}:${s.line}`, s] as const))('%s runs as written', async (_where, sample) => {
    const how = bestOf(sample)![2] as { run: 'curl' | 'exit-0' }
    if (how.run === 'curl') return runCurl(sample)
    const { code, out } = await sh(sample.commands.join('\n'))
    expect(code, out.slice(-2000)).toBe(0)
  }, 180_000)
})
