/**
 * `npm start`'s start-up failures a newcomer can fix are one line that says what to do, not
 * a stack: `PORT=abc` used to print `ToolError: serve: port must be an integer in 0–65535`
 * with its stack (no word of PORT), and a port already taken (another server on 8787)
 * Node's `Error: listen EADDRINUSE` with its stack. Both exit 1. So do the tokens and the
 * data directory: `TOOLYARD_TOKEN=short` said `createToolsApp: tokens[0].token must be …`
 * (no word of the variable), one token in both variables `tokens[1].token is the same as
 * tokens[0].token`, and a `TOOLYARD_DATA_DIR` that is a file printed `Error: EEXIST: file
 * already exists, mkdir …` with its stack.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { portFromEnv, startFailureMessage } from '../../../examples/start.js'
import { loadStartTokens } from '../../../examples/start-tokens.js'

const dirs: string[] = []
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true })
})

/** Runs `examples/start.ts` as `npm start` does (its `main`), with `env`; its exit code and output. */
async function start(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'toolyard-start-failure-'))
  dirs.push(dataDir)
  const child = spawn(process.execPath, ['--import', 'tsx', 'examples/start.ts'], {
    cwd: new URL('../../../', import.meta.url),
    env: { ...process.env, TOOLYARD_DATA_DIR: dataDir, TOOLYARD_DATABASE_URL: '', OTEL_EXPORTER_OTLP_ENDPOINT: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
  return { code, stdout, stderr }
}

describe('PORT as npm start reads it', () => {
  it('absent or empty: the default; digits (spaces around them ignored): that port; anything else: INVALID_OPTIONS naming PORT', () => {
    expect([portFromEnv(undefined), portFromEnv(''), portFromEnv(' ')]).toEqual([undefined, undefined, undefined])
    expect([portFromEnv('0'), portFromEnv('9000'), portFromEnv(' 8787 '), portFromEnv('65535')]).toEqual([0, 9000, 8787, 65535])
    for (const bad of ['abc', '65536', '-1', '80.5', '1e3', '0x50', '123456']) {
      expect(() => portFromEnv(bad)).toThrow(ToolError)
      expect(() => portFromEnv(bad)).toThrow(`PORT must be a whole number from 0 to 65535 (got ${JSON.stringify(bad)}); PORT=9000 npm start listens on port 9000`)
    }
  })

  it('what is printed for a failure: a port in use, an INVALID_OPTIONS; anything else is not rewritten', () => {
    expect(startFailureMessage(Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE', port: 8787 }))).toBe(
      'port 8787 is already in use on 127.0.0.1 (another server, or another npm start): stop it, or pick another port: PORT=9000 npm start',
    )
    expect(startFailureMessage(new ToolError('INVALID_OPTIONS', 'PORT must be …'))).toBe('PORT must be …')
    expect(startFailureMessage(new Error('boom'))).toBeUndefined()
    expect(startFailureMessage(undefined)).toBeUndefined()
  })
})

describe('npm start (examples/start.ts main) when it cannot start', () => {
  it('PORT=abc: one line naming PORT, no stack, exit 1', async () => {
    const { code, stderr } = await start({ PORT: 'abc' })
    expect(code).toBe(1)
    expect(stderr).toContain('npm start: PORT must be a whole number from 0 to 65535 (got "abc")')
    expect(stderr).not.toMatch(/^\s+at /m)
  }, 60_000)

  it('a port already taken: says so and how to pick another, no stack, exit 1', async () => {
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    const port = (taken.address() as AddressInfo).port
    try {
      const { code, stderr } = await start({ PORT: String(port) })
      expect(code).toBe(1)
      expect(stderr).toContain(`npm start: port ${port} is already in use on 127.0.0.1`)
      expect(stderr).toContain('PORT=9000 npm start')
      expect(stderr).not.toMatch(/^\s+at /m)
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()))
    }
  }, 60_000)
})

describe('the tokens and the data directory, as npm start reads them', () => {
  const quiet = (): void => {}
  const refusal = (fn: () => unknown): string => {
    try {
      fn()
    } catch (error) {
      expect(error).toBeInstanceOf(ToolError)
      expect((error as ToolError).code).toBe('INVALID_OPTIONS')
      return (error as Error).message
    }
    return ''
  }

  it('a pinned token the app would refuse names its variable, never its value', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolyard-start-tokens-'))
    dirs.push(dir)
    expect(refusal(() => loadStartTokens(dir, { TOOLYARD_TOKEN: 'short' }, quiet))).toBe(
      'TOOLYARD_TOKEN must be 16–4096 printable ASCII characters without spaces (got 5 characters); unset it to use the token kept in tokens.json, or pin one such as the output of openssl rand -hex 32',
    )
    const spaced = refusal(() => loadStartTokens(undefined, { TOOLYARD_APPROVER_TOKEN: 'a secret with spaces in it' }, quiet))
    expect(spaced).toMatch(/^TOOLYARD_APPROVER_TOKEN must be 16–4096 printable ASCII characters without spaces \(got 26 characters, not all of them printable ASCII\)/)
    expect(spaced).not.toContain('secret')
    const same = 'the-same-token-0123456789'
    expect(refusal(() => loadStartTokens(dir, { TOOLYARD_TOKEN: same, TOOLYARD_APPROVER_TOKEN: same }, quiet))).toMatch(/^TOOLYARD_TOKEN and TOOLYARD_APPROVER_TOKEN .* are the same token/)
    // Pinned to the API token kept in the file: the same two tokens again.
    const kept = loadStartTokens(dir, {}, quiet)
    expect(refusal(() => loadStartTokens(dir, { TOOLYARD_APPROVER_TOKEN: kept.api }, quiet))).toContain('are the same token')
    // Valid pins still win, and an empty one is no pin.
    expect(loadStartTokens(dir, { TOOLYARD_TOKEN: 'pinned-api-token-0123456789', TOOLYARD_APPROVER_TOKEN: '' }, quiet)).toMatchObject({ api: 'pinned-api-token-0123456789', playground: kept.playground })
  })

  it('a data directory that cannot hold tokens.json names TOOLYARD_DATA_DIR and says what to do', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolyard-start-tokens-'))
    dirs.push(dir)
    const file = join(dir, 'a-file')
    await writeFile(file, 'not a directory')
    expect(refusal(() => loadStartTokens(file, {}, quiet))).toMatch(
      new RegExp(`^the data directory ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(TOOLYARD_DATA_DIR\\) cannot hold tokens\\.json: EEXIST: .*; point TOOLYARD_DATA_DIR at a directory this user can create and write`),
    )
    expect(refusal(() => loadStartTokens(join(file, 'below'), {}, quiet))).toContain('ENOTDIR')
  })

  it('npm start with TOOLYARD_TOKEN=short, or TOOLYARD_DATA_DIR a file: one line each, no stack, exit 1', async () => {
    const short = await start({ TOOLYARD_TOKEN: 'short' })
    expect(short.code).toBe(1)
    expect(short.stderr).toContain('npm start: TOOLYARD_TOKEN must be 16–4096 printable ASCII characters without spaces (got 5 characters)')
    expect(short.stderr).not.toMatch(/^\s+at /m)
    const dir = await mkdtemp(join(tmpdir(), 'toolyard-start-tokens-'))
    dirs.push(dir)
    await writeFile(join(dir, 'a-file'), '')
    const file = await start({ TOOLYARD_DATA_DIR: join(dir, 'a-file') })
    expect(file.code).toBe(1)
    expect(file.stderr).toContain(`npm start: the data directory ${join(dir, 'a-file')} (TOOLYARD_DATA_DIR) cannot hold tokens.json: EEXIST`)
    expect(file.stderr).not.toMatch(/^\s+at /m)
  }, 120_000)
})
