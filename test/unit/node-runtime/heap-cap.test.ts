import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { overridingHeapFlags } from '../../../platforms/node/_capped-worker.js'

const root = fileURLToPath(new URL('../../..', import.meta.url))

interface Report {
  overlapping: number[]
  plainAfter: number
  host: number
  bomb: { kind: string; message: string } | undefined
  after: unknown
}

/**
 * Runs the fixture in a child Node whose heap flag is `flagMb`, given on the command line or
 * in NODE_OPTIONS; `argv in a thread` measures from a worker thread started with its own
 * `execArgv` (as vitest's are), which does not list the process's flags.
 */
function runWithHeapFlag(flagMb: number, where: 'argv' | 'NODE_OPTIONS' | 'argv in a thread'): Report {
  const flag = `--max-old-space-size=${flagMb}`
  const child = spawnSync(process.execPath, [...(where === 'NODE_OPTIONS' ? [] : [flag]), '--import', 'tsx', 'test/fixtures/node-runtime/heap-caps.ts'], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, NODE_OPTIONS: where === 'NODE_OPTIONS' ? flag : '', HEAP_CAPS_IN_THREAD: where === 'argv in a thread' ? '1' : '' },
  })
  expect(child.signal, child.stderr).toBeNull()
  expect(child.status, child.stderr).toBe(0)
  return JSON.parse(child.stdout.trim().split('\n').at(-1)!) as Report
}

describe('worker heap caps under a process-wide heap flag (nodejs/node#43991)', () => {
  // V8's heap limit of a worker is its old generation plus young generation and code
  // space: a 64 MB cap reads ~112 MB; the flag's 3,000 MB would read ~3,050.
  it.each(['argv', 'NODE_OPTIONS', 'argv in a thread'] as const)('hold when --max-old-space-size is given in %s, and the flag still holds for the host and other workers', (where) => {
    const report = runWithHeapFlag(3000, where)
    expect(report.overlapping[0]).toBeLessThan(200)
    expect(report.overlapping[1]).toBeLessThan(250)
    // The window closed: a Worker started afterwards, and the host (or the thread) itself, keep the flag.
    expect(report.plainAfter).toBeGreaterThanOrEqual(3000)
    expect(report.host).toBeGreaterThanOrEqual(3000)
    // The trusted runtime's memory bomb meets its 64 MB cap, not the 30 s wall ceiling.
    expect(report.bomb?.kind, report.bomb?.message).toBe('worker-exit')
    expect(report.bomb?.message).toMatch(/ran out of memory \(maxOldGenerationSizeMb: 64\)/)
    expect(report.after).toBe(2)
  }, 90_000)

  it('reads both spellings and both forms of the overriding flags, the last of each winning', () => {
    expect(overridingHeapFlags(['--max-old-space-size=4096'])).toEqual(['--max-old-space-size=4096'])
    expect(overridingHeapFlags(['--max_old_space_size', '2048', '--max-old-space-size=1024'])).toEqual(['--max-old-space-size=1024'])
    expect(overridingHeapFlags(['--max-heap-size=512', '--inspect', '--max-old-space-size', '300'])).toEqual(['--max-heap-size=512', '--max-old-space-size=300'])
    expect(overridingHeapFlags(['--max-semi-space-size=64', '--stack-size=900', 'script.js'])).toEqual([])
    // A flag with its value missing at the end is not a flag V8 accepted.
    expect(overridingHeapFlags(['--max-old-space-size'])).toEqual([])
  })

  it('every Node thread toolyard starts with resourceLimits is started through spawnCappedWorker', () => {
    const dir = new URL('../../../platforms/node/', import.meta.url)
    const spawners = readdirSync(dir).filter((file) => file.endsWith('.ts') && readFileSync(new URL(file, dir), 'utf8').includes('resourceLimits'))
    expect(spawners.length).toBeGreaterThanOrEqual(3)
    for (const file of spawners) {
      const text = readFileSync(new URL(file, dir), 'utf8')
      if (file === '_capped-worker.ts') continue
      expect(text, file).toMatch(/spawnCappedWorker\(/)
      expect(text, file).not.toMatch(/new Worker\(/)
    }
  })
})
