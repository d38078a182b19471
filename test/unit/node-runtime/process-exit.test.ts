import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../../..', import.meta.url))

describe('an idle Node worker runtime', () => {
  it('does not keep the host process alive (pre-spawned workers are unref’d once booted), yet stdout is still captured', () => {
    const child = spawnSync(process.execPath, ['--import', 'tsx', 'test/fixtures/node-runtime/idle-exit.ts'], {
      cwd: root,
      encoding: 'utf8',
      timeout: 20_000,
    })
    // A hang would end in the spawnSync timeout (signal SIGTERM, status null).
    expect(child.signal, child.stderr).toBeNull()
    expect(child.status, child.stderr).toBe(0)
    // Console lines travel over the private port and stdout through the worker's stream:
    // both are captured, but the runtime promises no order between the two channels.
    const result = JSON.parse(child.stdout.trim()) as { value: unknown; logs: unknown[] }
    expect(result.value).toBe(1)
    expect(result.logs).toHaveLength(2)
    expect(result.logs).toContainEqual({ source: 'console', level: 'log', text: 'hi' })
    expect(result.logs).toContainEqual({ source: 'stdout', text: 'out' })
  })
})
