/**
 * A preflight engine never keeps a process alive: a script that uses
 * `createPreflightWorker()` and does not dispose it exits once its work is done (the
 * thread is unref'd whenever no check is pending).
 */
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { startChild } from '../../support/child.js'

const root = fileURLToPath(new URL('../../../', import.meta.url))

describe('createPreflightWorker and process exit', () => {
  it('a script that never disposes the engine exits after its check', async () => {
    const child = startChild(process.execPath, ['--import', 'tsx', 'test/fixtures/preflight-exit/script.ts'], { cwd: root })
    // Far above the script's own cost (a compiler load, seconds): a process held alive never exits at all.
    const { code, signal } = await child.exit(90_000)
    const out = child.output
    expect({ code, signal, out: out.trim() }).toEqual({ code: 0, signal: null, out: '["TS2551"]' })
  }, 120_000)
})
