import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { createNodeWorkerRuntime } from '../../../platforms/node/index.js'
import type { NodeWorkerRuntime, NodeWorkerRuntimeOptions } from '../../../platforms/node/index.js'
import type { CodeBindingCallOptions } from '../../../src/code-runtime/contract.js'
import { until } from '../../support/poll.js'

const created: NodeWorkerRuntime[] = []
const make = (options: NodeWorkerRuntimeOptions = {}) => {
  const runtime = createNodeWorkerRuntime({ computeMs: 5_000, maxWallMs: 30_000, ...options })
  created.push(runtime)
  return runtime
}
afterEach(async () => {
  await Promise.all(created.splice(0).map((r) => r.dispose()))
})
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const never = (_a: unknown, { signal }: CodeBindingCallOptions) =>
  new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }))

describe('node worker runtime', () => {
  it('the generated worker and QuickJS sandbox sources are current with the shared bootstrap', () => {
    const root = fileURLToPath(new URL('../../..', import.meta.url))
    expect(() => execFileSync(process.execPath, ['scripts/gen-bootstrap.mjs', '--check'], { cwd: root, stdio: 'pipe' })).not.toThrow()
  })

  it('process.env is empty inside a program', async () => {
    process.env.TOOLYARD_SECRET_PROBE = 'leak'
    try {
      const result = await make().run({ program: 'return [Object.keys(process.env).length, process.env.TOOLYARD_SECRET_PROBE ?? null, process.env.PATH ?? null]', bindings: [] })
      expect(result.value).toEqual([0, null, null])
    } finally {
      delete process.env.TOOLYARD_SECRET_PROBE
    }
  })

  it('a heap bomb ends with worker-exit and the host carries on', async () => {
    const runtime = make({ maxOldGenerationSizeMb: 32, computeMs: 60_000, maxWallMs: 60_000 })
    const result = await runtime.run({ program: 'const keep: unknown[] = []\nwhile (true) keep.push(new Array(1e5).fill({ a: 1 }))', bindings: [] })
    expect(result.error?.kind).toBe('worker-exit')
    expect(result.error?.message).toMatch(/ran out of memory \(maxOldGenerationSizeMb: 32\)/)
    expect((await runtime.run({ program: 'return 3', bindings: [] })).value).toBe(3)
  }, 90_000)

  it('process.exit from a program is a worker-exit', async () => {
    const result = await make().run({ program: 'process.exit(3)', bindings: [] })
    expect(result.error?.kind).toBe('worker-exit')
    expect(result.error?.message).toMatch(/code 3/)
  })

  it('attributes stdout and stderr, keeps order within a stream and flushes partial lines', async () => {
    const result = await make().run({
      program: [
        "for (let i = 0; i < 200; i++) process.stdout.write(`line ${i}\\n`)",
        "process.stderr.write('warn A\\nwarn B\\n')",
        "console.log('via console')",
        "process.stdout.write('no newline')",
        'return 1',
      ].join('\n'),
      bindings: [],
    })
    expect(result.value).toBe(1)
    const out = result.logs.filter((l) => l.source === 'stdout').map((l) => l.text)
    expect(out).toEqual([...Array.from({ length: 200 }, (_, i) => `line ${i}`), 'no newline'])
    expect(result.logs.filter((l) => l.source === 'stderr').map((l) => l.text)).toEqual(['warn A', 'warn B'])
    expect(result.logs).toContainEqual({ source: 'console', level: 'log', text: 'via console' })
  })

  it('a hot loop behind an un-awaited decoy binding call dies at computeMs', async () => {
    let decoyCalled = false
    const result = await make({ computeMs: 400, maxWallMs: 60_000 }).run({
      program: 'tools.decoy()\nwhile (true) {}',
      bindings: [{ global: 'tools', functions: { decoy: (a, o) => ((decoyCalled = true), never(a, o)) } }],
    })
    expect(decoyCalled).toBe(true)
    expect(result.error).toEqual({ kind: 'timeout', message: 'compute budget of 400 ms exhausted' })
    expect(result.stats?.computeMs).toBeGreaterThanOrEqual(400)
  })

  it('a program idling on a slow binding outlives computeMs and dies only at maxWallMs', async () => {
    // The idle wait (1.5 s) outlasts the compute budget (1 s); the wall (6 s) leaves the worker's
    // start-up and the slow call 4.5 s, for a loaded machine (3 s left 1.5 s).
    const result = await make({ computeMs: 1_000, maxWallMs: 6_000 }).run({
      program: "const first = await tools.slow()\nconsole.log('slow call returned', first)\nawait tools.never()",
      bindings: [
        {
          global: 'tools',
          functions: {
            slow: async () => {
              await sleep(1_500)
              return 'ok'
            },
            never,
          },
        },
      ],
    })
    expect(result.logs.map((l) => l.text)).toContain('slow call returned ok')
    expect(result.error).toEqual({ kind: 'timeout', message: 'wall-clock ceiling of 6000 ms reached' })
    expect(result.stats?.computeMs).toBeLessThan(1_000)
    expect(result.stats?.wallMs).toBeGreaterThanOrEqual(6_000)
  })

  it('the pre-spawned worker is fresh: run 1 state is invisible to run 2', async () => {
    const runtime = make({ prespawn: 1 })
    await runtime.warm()
    const first = await runtime.run({
      program: "globalThis.state = 'run 1'; (Array.prototype as any).leak = 1; (globalThis as any).tools2 = 1; return require('worker_threads').threadId",
      bindings: [],
    })
    await runtime.warm()
    const second = await runtime.run({
      program: "return [typeof (globalThis as any).state, ([] as any).leak ?? null, require('worker_threads').threadId]",
      bindings: [],
    })
    expect(second.value).toEqual(['undefined', null, expect.any(Number)])
    expect((second.value as unknown[])[2]).not.toBe(first.value)
  })

  it('prespawn 0 still runs (spawn on demand) and concurrent runs are independent', async () => {
    const runtime = make({ prespawn: 0 })
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, i) => runtime.run({ program: `globalThis.mine = ${i}; await tools.wait(); return globalThis.mine`, bindings: [{ global: 'tools', functions: { wait: () => sleep(50) } }] })),
    )
    expect(results.map((r) => r.value)).toEqual([0, 1, 2, 3])
  })

  it('dispose terminates every worker and awaits their exits (no thread runs afterwards)', async () => {
    const runtime = make({ prespawn: 2 })
    const shared = new Int32Array(new SharedArrayBuffer(4))
    let running!: () => void
    const started = new Promise<void>((resolve) => {
      running = resolve
    })
    const pending = runtime.run({
      program: 'const counter = new Int32Array(await tools.buffer())\nawait tools.started()\nwhile (true) Atomics.add(counter, 0, 1)',
      bindings: [{ global: 'tools', functions: { buffer: async () => shared.buffer, started: async () => running() } }],
    })
    await started
    await until(() => Atomics.load(shared, 0) !== 0, 'the loop to count')
    await runtime.dispose()
    const atDispose = Atomics.load(shared, 0)
    await sleep(100)
    expect(Atomics.load(shared, 0)).toBe(atDispose)
    expect((await pending).error?.kind).toBe('abort')
  })

  it('an uncaught error thrown from a timer callback is the run’s exception', async () => {
    const result = await make().run({ program: "setTimeout(() => { throw new RangeError('from a timer') }, 0)\nawait new Promise(() => {})", bindings: [] })
    expect(result.error?.kind).toBe('exception')
    expect(result.error?.message).toMatch(/RangeError: from a timer/)
  })

  it('a transiently unhandled binding rejection does not kill the run', async () => {
    const result = await make().run({
      program: "const p = tools.fail()\nawait tools.wait()\ntry { await p } catch (e) { return 'caught ' + e.message }",
      bindings: [{ global: 'tools', functions: { fail: async () => Promise.reject(new Error('x')), wait: () => sleep(50) } }],
    })
    expect(result.value).toBe('caught x')
  })
})

describe('node worker runtime: abort', () => {
  it('aborting mid-run ends a hot synchronous loop with abort (the host thread stays free)', async () => {
    const controller = new AbortController()
    const result = await make().run({
      program: 'await tools.started()\nwhile (true) {}',
      bindings: [{ global: 'tools', functions: { started: async () => void setTimeout(() => controller.abort(), 20) } }],
      signal: controller.signal,
    })
    expect(result.error).toEqual({ kind: 'abort', message: 'the run was aborted (This operation was aborted)' })
  })
})
