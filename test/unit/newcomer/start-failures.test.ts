/**
 * `npm start`'s start-up failures a newcomer can fix are one line that says what to do, not
 * a stack: `PORT=abc` used to print `ToolError: serve: port must be an integer in 0–65535`
 * with its stack (no word of PORT), and a port already taken (another server on 8787)
 * Node's `Error: listen EADDRINUSE` with its stack. Both exit 1.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { portFromEnv, startFailureMessage } from '../../../examples/start.js'

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
