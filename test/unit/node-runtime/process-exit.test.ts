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
    expect(JSON.parse(child.stdout.trim())).toEqual({
      value: 1,
      logs: [
        { source: 'console', level: 'log', text: 'hi' },
        { source: 'stdout', text: 'out' },
      ],
    })
  })
})
