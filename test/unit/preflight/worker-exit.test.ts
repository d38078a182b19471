/**
 * A preflight engine never keeps a process alive: a script that uses
 * `createPreflightWorker()` and does not dispose it exits once its work is done (the
 * thread is unref'd whenever no check is pending).
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../../../', import.meta.url))

describe('createPreflightWorker and process exit', () => {
  it('a script that never disposes the engine exits after its check', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/preflight-exit/script.ts'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()))
    // Far above the script's own cost (a compiler load, seconds): a process held alive never exits at all.
    const killer = setTimeout(() => child.kill('SIGKILL'), 90_000)
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('exit', (c, s) => resolve([c, s])))
    clearTimeout(killer)
    expect({ code, signal, out: out.trim() }).toEqual({ code: 0, signal: null, out: '["TS2551"]' })
  }, 120_000)
})
