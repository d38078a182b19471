/**
 * The sandbox runtime on Node (`createSandboxRuntime` from `toolyard/node`): what the
 * shared contract suite cannot say about a pool of threads. Admission and the queue,
 * the host's event loop during a hot loop, abort mid-loop, the compute budget inside a
 * long built-in that runs no interrupt checks, a thread that dies, disposal, and a
 * process that must exit while the runtime idles. Timings here are loose bounds that
 * hold on a loaded 2-core machine; `npm run bench:sandbox` prints the real figures.
 * The last block checks the pool itself exactly, on in-process scripted threads.
 */
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { CodeBindingCallOptions, CodeRunResult } from '../../../src/code-runtime/contract.js'
import { SANDBOX_DEFAULT_LIMITS, STOP_GRACE_MS, createSandboxRuntimeOn } from '../../../src/code-runtime/sandbox-runtime.js'
import type { SandboxPlatform, SandboxRuntime, SandboxRuntimeOptions, SandboxThread } from '../../../src/code-runtime/sandbox-runtime.js'
import { BUSY_SLOT, MAX_PROGRAM_CHARS, programTooLong, STOP_SLOT } from '../../../src/code-runtime/sandbox-protocol.js'
import { ToolError } from '../../../src/errors.js'
import { callKey } from '../../../src/code-runtime/journal.js'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { SANDBOX_SOURCE } from '../../../engine/quickjs/_sandbox-source.js'
import { maxStall } from '../../support/stall-probe.js'
import { refusalMessage } from '../../support/refusal.js'
import { deferred } from '../registry/helpers.js'
import { answering, scriptedPlatform, tick } from './scripted-platform.js'
import type { FakeThread as FakeThreadLike } from './scripted-platform.js'

const root = fileURLToPath(new URL('../../..', import.meta.url))
const created: SandboxRuntime[] = []
const make = (options?: SandboxRuntimeOptions) => {
  const runtime = createSandboxRuntime({ memoryMb: 32, ...options })
  created.push(runtime)
  return runtime
}
afterEach(async () => {
  await Promise.all(created.splice(0).map((runtime) => runtime.dispose()))
})

/** A binding that settles only when its run's signal fires. */
const hang = (_args: unknown, { signal }: CodeBindingCallOptions) =>
  new Promise<unknown>((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }))
const hanging = [{ global: 'tools', functions: { hang } }]

describe('createSandboxRuntime (Node)', () => {
  it('validates its options at once', () => {
    const code = (options: unknown) => {
      try {
        createSandboxRuntime(options as SandboxRuntimeOptions)
        return 'created'
      } catch (error) {
        return error instanceof ToolError ? `${error.code}: ${error.message}` : String(error)
      }
    }
    expect(code({ computeMS: 5 })).toMatch(/^INVALID_OPTIONS: createSandboxRuntime: unknown option "computeMS"/)
    expect(code({ maxConcurrentRuns: 0 })).toMatch(/^INVALID_OPTIONS: .*maxConcurrentRuns must be an integer from 1/)
    expect(code({ maxQueuedRuns: -1 })).toMatch(/^INVALID_OPTIONS: .*maxQueuedRuns/)
    expect(code({ memoryMb: 8 })).toMatch(/^INVALID_OPTIONS: .*memoryMb must be an integer from 16 to 2048/)
    expect(code({ computeMs: 1.5 })).toMatch(/^INVALID_OPTIONS: .*computeMs/)
    expect(code({ wasmModule: 'quickjs.wasm' })).toMatch(/^INVALID_OPTIONS: .*wasmModule/)
    expect(code('fast')).toMatch(/^INVALID_OPTIONS: .*options must be an object/)
  })

  it('defaults to budgets a person waits for and a concurrency derived from the machine', async () => {
    const runtime = make({ prespawn: 0 })
    expect(runtime.limits).toEqual({ computeMs: 5_000, maxWallMs: 60_000, maxLogBytes: 65_536, maxValueBytes: 32_768, maxPendingArgBytes: 33_554_432 })
    expect(runtime.isolation).toBe('quickjs-sandbox')
    expect(runtime.capabilities.confinesAuthority).toBe(true)
    const load = runtime.load()
    expect(load.maxConcurrentRuns).toBeGreaterThanOrEqual(1)
    expect(load.maxQueuedRuns).toBe(8 * load.maxConcurrentRuns)
    expect(load.threads).toBe(0)
  })

  it('keeps the host event loop turning while a program spins', async () => {
    const runtime = make({ computeMs: 2_000 })
    await runtime.warm()
    const { stall, value } = await maxStall(() => runtime.run({ program: 'while (true) {}', bindings: [] }))
    expect(value.error).toEqual({ kind: 'timeout', message: 'compute budget of 2000 ms exhausted' })
    // QuickJS on the host thread would stall the whole 2,000 ms; a thread stalls nothing of
    // its own. The margin is wide because other test files load this 2-core machine; the
    // figure itself (a few ms) is printed by `npm run bench:sandbox`.
    expect(stall).toBeLessThan(1_000)
  })

  it('ends a spinning program at once on abort, and keeps its thread', async () => {
    const runtime = make({ prespawn: 1, maxConcurrentRuns: 1 })
    await runtime.warm()
    const controller = new AbortController()
    const pending = runtime.run({ program: 'let n = 0\nwhile (true) n++', bindings: [], signal: controller.signal })
    await new Promise((resolve) => setTimeout(resolve, 100))
    const abortedAt = performance.now()
    controller.abort(new Error('user pressed stop'))
    const result = await pending
    // Noticed at once, not at the 5,000 ms compute budget (the margin absorbs machine load;
    // `npm run bench:sandbox` prints the latency itself).
    expect(performance.now() - abortedAt).toBeLessThan(1_000)
    expect(result.error).toEqual({ kind: 'abort', message: 'the run was aborted (user pressed stop)' })
    // Stopped through shared memory, not by terminating the thread.
    const next = await runtime.run({ program: 'return 2', bindings: [] })
    expect(next.value).toBe(2)
    expect(runtime.load().threads).toBe(1)
  })

  it('meters a program stuck in a long built-in (no interrupt checks there) and replaces its thread', async () => {
    const runtime = make({ memoryMb: 256, computeMs: 150, prespawn: 1, maxConcurrentRuns: 1 })
    await runtime.warm()
    const result = await runtime.run({ program: "return JSON.stringify(new Array(3e6).fill('abcdef')).length", bindings: [] })
    expect(result.error).toEqual({ kind: 'timeout', message: 'compute budget of 150 ms exhausted' })
    const next = await runtime.run({ program: 'return 3', bindings: [] })
    expect(next.value).toBe(3)
  })

  it('admits at most maxConcurrentRuns, queues maxQueuedRuns, and refuses the rest at once', async () => {
    const runtime = make({ prespawn: 0, maxConcurrentRuns: 2, maxQueuedRuns: 1 })
    const first = new AbortController()
    const second = new AbortController()
    const running = [
      runtime.run({ program: 'await tools.hang()', bindings: hanging, signal: first.signal }),
      runtime.run({ program: 'await tools.hang()', bindings: hanging, signal: second.signal }),
    ]
    const queued = runtime.run({ program: 'return "served"', bindings: [] })
    const refusedAt = performance.now()
    const refused = await runtime.run({ program: 'return "never"', bindings: [] })
    // Refused without waiting for a slot (none would come: both runs hang until aborted).
    expect(performance.now() - refusedAt).toBeLessThan(1_000)
    expect(refused.error?.kind).toBe('overloaded')
    expect(refused.error?.message).toMatch(/at capacity \(2 runs running, 1 waiting\); retry later/)
    expect(runtime.load()).toMatchObject({ running: 2, queued: 1, threads: 2 })
    first.abort()
    expect((await queued).value).toBe('served')
    second.abort()
    expect((await Promise.all(running)).map((r) => r.error?.kind)).toEqual(['abort', 'abort'])
  })

  it('a queued run aborted before its turn settles as abort and leaves the queue', async () => {
    const runtime = make({ prespawn: 0, maxConcurrentRuns: 1, maxQueuedRuns: 4 })
    const holder = new AbortController()
    const running = runtime.run({ program: 'await tools.hang()', bindings: hanging, signal: holder.signal })
    const waiting = new AbortController()
    const queued = runtime.run({ program: 'return 1', bindings: [], signal: waiting.signal })
    expect(runtime.load().queued).toBe(1)
    waiting.abort(new Error('client went away'))
    expect((await queued).error).toEqual({ kind: 'abort', message: 'the run was aborted (client went away)' })
    expect(runtime.load().queued).toBe(0)
    holder.abort()
    await running
  })

  it('does not charge a queued run its wait: the wall ceiling starts when the run does', async () => {
    // The first run holds the only place until the second has waited longer than the whole
    // wall ceiling; its own wall clock is held meanwhile (a wait that is not the program's),
    // so neither run depends on how fast this machine is. The second then has the full
    // ceiling for an instant program: a ceiling counted from admission would have ended it
    // while it was still queued.
    const maxWallMs = 2_000
    const runtime = make({ prespawn: 0, maxConcurrentRuns: 1, maxWallMs })
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    let entered!: () => void
    const holding = new Promise<void>((resolve) => (entered = resolve))
    const gate = async (_args: unknown, options: CodeBindingCallOptions) => {
      const resume = options.holdWallClock?.()
      entered()
      await released
      resume?.()
      return 'open'
    }
    const first = runtime.run({ program: 'await tools.gate()\nreturn 1', bindings: [{ global: 'tools', functions: { gate } }] })
    await holding
    const queuedAt = performance.now()
    const second = runtime.run({ program: 'return 2', bindings: [] })
    expect(runtime.load()).toMatchObject({ running: 1, queued: 1 })
    await new Promise((resolve) => setTimeout(resolve, maxWallMs + 200))
    expect(performance.now() - queuedAt).toBeGreaterThan(maxWallMs)
    release()
    expect((await Promise.all([first, second])).map((r) => r.value ?? r.error?.kind)).toEqual([1, 2])
  })

  it('refuses, catchably, a binding call whose arguments would take the host long to parse', async () => {
    const runtime = make({ memoryMb: 64 })
    let called = false
    const bindings = [{ global: 'tools', functions: { write: async () => ((called = true), 'written') } }]
    const result = await runtime.run({
      program: "const big = 'x'.repeat(9 * 1024 * 1024)\ntry { await tools.write({ big }) } catch (e) { return [e.name, e.message] }",
      bindings,
    })
    // Refused inside the program, before anything reaches the host: a TypeError the program
    // catches, and the binding never runs. (What the host would pay to parse it instead, and
    // the stall this avoids, are printed side by side by `npm run bench:sandbox`.)
    expect(result.value).toEqual(['TypeError', expect.stringMatching(/the arguments cannot be sent to the host \(the arguments take 10 MiB of JSON; at most 8 MiB go to the host in one call\)/)])
    expect(called).toBe(false)
    // Just under the limit still goes through.
    const fits = await runtime.run({ program: "return await tools.write({ big: 'x'.repeat(7 * 1024 * 1024) })", bindings })
    expect(fits.value).toBe('written')
  })

  it('serves many concurrent runs with a bounded pool, each with its own result', async () => {
    const runtime = make({ prespawn: 1, maxConcurrentRuns: 3, maxQueuedRuns: 100 })
    const bindings = [{ global: 'tools', functions: { double: async (n: unknown) => (n as number) * 2 } }]
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => runtime.run({ program: `return await tools.double(${i})`, bindings })))
    expect(results.map((r) => r.value)).toEqual(Array.from({ length: 40 }, (_, i) => i * 2))
    expect(runtime.load().threads).toBeLessThanOrEqual(3)
  })

  it('contains a memory bomb in its fixed memory; the host and the pool carry on', async () => {
    const runtime = make({ memoryMb: 32, maxConcurrentRuns: 1 })
    const typed = await runtime.run({ program: 'const big = new Uint8Array(200 * 1024 * 1024)\nreturn big.length', bindings: [] })
    expect(['worker-exit', 'exception']).toContain(typed.error?.kind)
    const strings = await runtime.run({ program: "let s = 'x'\nwhile (true) s += s", bindings: [] })
    expect(['worker-exit', 'exception']).toContain(strings.error?.kind)
    expect((await runtime.run({ program: 'return 4', bindings: [] })).value).toBe(4)
  })

  it('dispose settles running and queued runs as abort and ends every thread', async () => {
    const runtime = make({ prespawn: 1, maxConcurrentRuns: 1, maxQueuedRuns: 2 })
    let bindingSignal: AbortSignal | undefined
    let called!: () => void
    const calledOnce = new Promise<void>((resolve) => {
      called = resolve
    })
    const running = runtime.run({
      program: 'await tools.hang()',
      bindings: [{ global: 'tools', functions: { hang: (args: unknown, options: CodeBindingCallOptions) => ((bindingSignal = options.signal), called(), hang(args, options)) } }],
    })
    const queued = runtime.run({ program: 'return 1', bindings: [] })
    await calledOnce
    await runtime.dispose()
    const settled: CodeRunResult[] = await Promise.all([running, queued])
    expect(settled.map((r) => r.error?.kind)).toEqual(['abort', 'abort'])
    expect(bindingSignal?.aborted).toBe(true)
    expect(runtime.load().threads).toBe(0)
    expect((await runtime.run({ program: 'return 1', bindings: [] })).error?.kind).toBe('abort')
  })

  it('an idle runtime does not keep the process alive', () => {
    const child = spawnSync(process.execPath, ['--import', 'tsx', 'test/fixtures/sandbox/idle-exit.ts'], { cwd: root, encoding: 'utf8', timeout: 30_000 })
    expect(child.signal, child.stderr).toBeNull()
    expect(child.status, child.stderr).toBe(0)
    expect(JSON.parse(child.stdout.trim())).toEqual([1, 2, 3, 4].map((n) => [n, [`run ${n}`]]))
  })
})

describe('the shared sandbox core, on threads a test can kill', () => {
  /** The real Node sandbox thread, spawned through a platform that hands the test each thread. */
  function killablePlatform(spawned: Worker[], sharedMemory: boolean) {
    const url = new URL('../../../platforms/node/_sandbox-thread.cjs', import.meta.url)
    return {
      factory: 'test',
      sandboxSource: SANDBOX_SOURCE,
      sharedMemory,
      machine: { cores: 2, memoryMb: undefined },
      spawn(): SandboxThread {
        const worker = new Worker(url)
        spawned.push(worker)
        const exits: Array<(reason: string) => void> = []
        worker.once('exit', (code) => exits.splice(0).forEach((listener) => listener(`exit code ${code}`)))
        return {
          postMessage: (message) => worker.postMessage(message),
          onMessage: (listener) => worker.on('message', listener),
          onExit: (listener) => exits.push(listener),
          terminate: () => worker.terminate().then(() => undefined),
        }
      },
    }
  }

  it('a thread that dies mid-run fails that run as worker-exit and is replaced', async () => {
    const spawned: Worker[] = []
    const runtime = createSandboxRuntimeOn(killablePlatform(spawned, true), { prespawn: 1, maxConcurrentRuns: 1 })
    created.push(runtime)
    await runtime.warm()
    const pending = runtime.run({ program: 'await tools.hang()', bindings: hanging })
    await new Promise((resolve) => setTimeout(resolve, 50))
    await spawned[0]!.terminate()
    const result = await pending
    expect(result.error?.kind).toBe('worker-exit')
    expect(result.error?.message).toMatch(/^the thread running the program exited: exit code 1/)
    expect((await runtime.run({ program: 'return 5', bindings: [] })).value).toBe(5)
    expect(spawned.length).toBe(2)
  })

  it('without shared memory, a spinning program is stopped by terminating its thread', async () => {
    const spawned: Worker[] = []
    const runtime = createSandboxRuntimeOn(killablePlatform(spawned, false), { prespawn: 1, maxConcurrentRuns: 1, computeMs: 60_000 })
    created.push(runtime)
    await runtime.warm()
    const controller = new AbortController()
    const pending = runtime.run({ program: 'while (true) {}', bindings: [], signal: controller.signal })
    await new Promise((resolve) => setTimeout(resolve, 100))
    const abortedAt = performance.now()
    controller.abort()
    expect((await pending).error?.kind).toBe('abort')
    // At once, not at the 60,000 ms compute budget.
    expect(performance.now() - abortedAt).toBeLessThan(1_000)
    // The next run waits for the stopped thread to be replaced, then runs.
    expect((await runtime.run({ program: 'return 6', bindings: [] })).value).toBe(6)
    expect(spawned.length).toBe(2)
  })
})

/** The refusal `createSandboxRuntimeOn` gives these options on a scripted platform, or undefined. */
function refusal(options: unknown, p = scriptedPlatform().platform): string | undefined {
  return refusalMessage('INVALID_OPTIONS', () => createSandboxRuntimeOn(p, options as SandboxRuntimeOptions))
}

/**
 * The pool itself on a scripted platform (scripted-platform.ts): what the real threads above
 * cannot show exactly or quickly (exact messages and counts, which thread a run takes, the
 * boot, stop and idle timers on fake time, messages out of turn).
 */
describe('the pool on a scripted platform', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  describe('options', () => {
    it('validates each option with its bounds', () => {
      const f = 'createSandboxRuntime'
      expect(refusal({ memoryMb: 15 })).toBe(`${f}: options.memoryMb must be an integer from 16 to 2048 (got 15)`)
      expect(refusal({ memoryMb: 2049 })).toBe(`${f}: options.memoryMb must be an integer from 16 to 2048 (got 2049)`)
      expect(refusal({ maxConcurrentRuns: 0 })).toBe(`${f}: options.maxConcurrentRuns must be an integer from 1 to 4096 (got 0)`)
      expect(refusal({ maxConcurrentRuns: 4097 })).toBe(`${f}: options.maxConcurrentRuns must be an integer from 1 to 4096 (got 4097)`)
      expect(refusal({ maxQueuedRuns: -1 })).toBe(`${f}: options.maxQueuedRuns must be an integer from 0 to 1000000 (got -1)`)
      expect(refusal({ maxQueuedRuns: 1_000_001 })).toBe(`${f}: options.maxQueuedRuns must be an integer from 0 to 1000000 (got 1000001)`)
      expect(refusal({ prespawn: 257 })).toBe(`${f}: options.prespawn must be an integer from 0 to 256 (got 257)`)
      expect(refusal({ computeMs: 0 })).toBe(`${f}: options.computeMs must be an integer from 1 to 2147483647 (got 0)`)
      expect(refusal({ maxLogBytes: 2 ** 30 + 1 })).toBe(`${f}: options.maxLogBytes must be an integer from 1 to 1073741824 (got 1073741825)`)
      expect(refusal({ wasmModule: 'wasm' })).toBe(`${f}: options.wasmModule must be a WebAssembly.Module or a function returning a promise of one`)
      expect(refusal({ threads: 2 })).toBe(`${f}: unknown option "threads" (known: computeMs, maxWallMs, maxLogBytes, maxValueBytes, maxPendingArgBytes, memoryMb, prespawn, maxConcurrentRuns, maxQueuedRuns, wasmModule, parkAfterMs, parking, maxParkedBytes, maxReplayMs)`)
      expect(refusal({ extra: 1 }, scriptedPlatform({}, { extraOptions: ['extra'] }).platform)).toBeUndefined()
      for (const ok of [{ memoryMb: 16, maxQueuedRuns: 0, prespawn: 0 }, { memoryMb: 2048, maxConcurrentRuns: 4096, maxQueuedRuns: 1_000_000, prespawn: 256 }, { wasmModule: async () => new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])) }]) {
        expect(refusal(ok)).toBeUndefined()
      }
    })

    it('defaults: the sandbox budgets, four runs a core within a quarter of memory (VM, thread and pending argument bytes), eight queued a run', async () => {
      expect(SANDBOX_DEFAULT_LIMITS).toEqual({ computeMs: 5_000, maxWallMs: 60_000, maxLogBytes: 65_536, maxValueBytes: 32_768, maxPendingArgBytes: 33_554_432 })
      const make = (machine: SandboxPlatform['machine'], options: SandboxRuntimeOptions = {}) => {
        const runtime = createSandboxRuntimeOn(scriptedPlatform({}, { machine }).platform, { prespawn: 0, ...options })
        const load = runtime.load()
        void runtime.dispose()
        return [load.maxConcurrentRuns, load.maxQueuedRuns]
      }
      expect(make({ cores: 2, memoryMb: undefined })).toEqual([8, 64])
      expect(make({ cores: 2.9, memoryMb: undefined })).toEqual([8, 64])
      expect(make({ cores: 0, memoryMb: undefined })).toEqual([4, 32])
      expect(make({ cores: 100, memoryMb: undefined })).toEqual([256, 2048])
      expect(make({ cores: 4, memoryMb: 1_024 })).toEqual([2, 16])
      // A run's share is its VM (16), its thread (24) and the host bytes its calls may pin (32 MiB by default):
      expect(make({ cores: 4, memoryMb: 1_024 }, { memoryMb: 16 })).toEqual([3, 24])
      expect(make({ cores: 4, memoryMb: 1_024 }, { memoryMb: 16, maxPendingArgBytes: 1_024 })).toEqual([6, 48])
      expect(make({ cores: 4, memoryMb: 10 })).toEqual([1, 8])
      expect(make({ cores: 4, memoryMb: 1_000_000 })).toEqual([16, 128])
      expect(make({ cores: 4, memoryMb: undefined }, { maxConcurrentRuns: 3 })).toEqual([3, 24])
      const runtime = createSandboxRuntimeOn(scriptedPlatform().platform, { prespawn: 0 })
      expect(runtime.limits).toEqual(SANDBOX_DEFAULT_LIMITS)
      expect([runtime.language, runtime.isolation]).toEqual(['typescript', 'quickjs-sandbox'])
      expect(runtime.capabilities).toEqual({ streamsLogs: true, memoryLimit: true, capturesStdio: false, abortsBusyPrograms: true, confinesAuthority: true })
      expect(Object.isFrozen(runtime) && Object.isFrozen(runtime.capabilities) && Object.isFrozen(runtime.limits)).toBe(true)
      await runtime.dispose()
    })
  })

  describe('threads and runs', () => {
    it('pre-spawns min(prespawn, maxConcurrentRuns) threads and boots them with the memory size', async () => {
      const { platform: p, threads } = scriptedPlatform()
      const runtime = createSandboxRuntimeOn(p, { prespawn: 3, maxConcurrentRuns: 2, memoryMb: 32 })
      expect(threads).toHaveLength(2)
      await runtime.warm()
      // Exactly the boot message: no wasm or signals keys when there are none to send.
      expect(threads[0]!.posted).toStrictEqual([{ type: 'boot', memoryMb: 32, sandboxSource: '/* the sandbox script */' }])
      expect(runtime.load()).toEqual({ running: 0, queued: 0, threads: 2, parked: 0, maxConcurrentRuns: 2, maxQueuedRuns: 16 })
      await runtime.dispose()
      expect(threads.map((t) => t.terminated)).toEqual([1, 1])
      const none = scriptedPlatform()
      const lazy = createSandboxRuntimeOn(none.platform, { prespawn: 0 })
      expect(none.threads).toHaveLength(0)
      await lazy.warm()
      await lazy.dispose()
    })

    it('runs a program: the run command carries the run id, computeMs and the start message with the program as written (its thread strips it)', async () => {
      const { platform: p, threads } = scriptedPlatform(answering)
      const runtime = createSandboxRuntimeOn(p, { prespawn: 1, computeMs: 123, maxLogBytes: 7, maxValueBytes: 9 })
      const result = await runtime.run({ bindings: [], program: 'return 5' })
      expect(result.value).toBe(5)
      expect(result.error).toBeUndefined()
      // Without shared memory the host has no live meter: the thread enforces computeMs itself.
      expect(result.stats?.computeMs).toBe(0)
      const second = await runtime.run({ bindings: [], program: 'const x: number = 1\nreturn 6' })
      expect(second.value).toBe(6)
      const runs = threads.flatMap((t) => t.runs).sort((x, y) => x.run - y.run)
      expect(runs[0]).toMatchObject({ run: 1, computeMs: 123, start: { program: 'return 5', maxLogBytes: 7, maxValueBytes: 9 } })
      expect(runs[1]).toMatchObject({ run: 2, start: { program: 'const x: number = 1\nreturn 6' } })
      expect(threads[0]!.posted).toContainEqual({ type: 'end', run: 1 })
      expect(threads[0]!.active.slice(0, 2)).toEqual([true, false])
      await runtime.dispose()
    })

    it('refuses malformed requests, aborted signals and over-long programs without using a thread (syntax errors come from the thread)', async () => {
      const { platform: p, threads } = scriptedPlatform(answering)
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0 })
      expect(await runtime.run({ program: 1 } as never)).toMatchObject({ error: { kind: 'exception', message: 'TypeError: request.program must be a string' } })
      const controller = new AbortController()
      controller.abort('stop')
      expect(await runtime.run({ bindings: [], program: 'return )', signal: controller.signal })).toMatchObject({ error: { kind: 'abort', message: 'the run was aborted (stop)' } })
      const long = `return 1${' '.repeat(MAX_PROGRAM_CHARS)}`
      expect((await runtime.run({ bindings: [], program: long })).error).toEqual({ kind: 'exception', message: programTooLong(long) })
      expect(programTooLong(long)).toMatch(/^SyntaxError: the program is 262152 characters long; at most 262144 are accepted/)
      expect(threads).toHaveLength(0)
      await runtime.dispose()
    })

    it('queues beyond maxConcurrentRuns and refuses beyond the queue, naming the load', async () => {
      const { platform: p, threads } = scriptedPlatform({})
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0, maxConcurrentRuns: 1, maxQueuedRuns: 1 })
      const first = runtime.run({ bindings: [], program: 'hang(1)' })
      const second = runtime.run({ bindings: [], program: 'hang(2)' })
      const third = await runtime.run({ bindings: [], program: 'hang(3)' })
      expect(third).toMatchObject({ error: { kind: 'overloaded', message: 'the sandbox is at capacity (1 runs running, 1 waiting); retry later' } })
      expect(runtime.load()).toMatchObject({ running: 1, queued: 1, threads: 1 })
      await tick()
      threads[0]!.done('one')
      expect((await first).value).toBe('one')
      await tick()
      expect(threads[0]!.runs.map((r) => r.start.program)).toEqual(['hang(1)', 'hang(2)'])
      threads[0]!.done('two')
      expect((await second).value).toBe('two')
      expect(threads).toHaveLength(1)
      await runtime.dispose()
    })

    it('with no queue, refuses as soon as the runs are taken', async () => {
      const { platform: p } = scriptedPlatform({})
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0, maxConcurrentRuns: 1, maxQueuedRuns: 0 })
      void runtime.run({ bindings: [], program: 'hang()' })
      expect((await runtime.run({ bindings: [], program: 'hang()' })).error?.kind).toBe('overloaded')
      await runtime.dispose()
    })

    it('a queued run whose signal aborts leaves the queue with its reason', async () => {
      const { platform: p, threads } = scriptedPlatform({})
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0, maxConcurrentRuns: 1, maxQueuedRuns: 5 })
      const first = runtime.run({ bindings: [], program: 'hang()' })
      const controller = new AbortController()
      const queued = runtime.run({ bindings: [], program: 'queued()', signal: controller.signal })
      expect(runtime.load().queued).toBe(1)
      controller.abort(new Error('user left'))
      expect(await queued).toMatchObject({ error: { kind: 'abort', message: 'the run was aborted (user left)' } })
      expect(runtime.load().queued).toBe(0)
      await tick()
      threads[0]!.done(1)
      await first
      await tick()
      expect(threads[0]!.runs.map((r) => r.start.program)).toEqual(['hang()'])
      const plain = new AbortController()
      const second = runtime.run({ bindings: [], program: 'hang(0)' })
      const third = runtime.run({ bindings: [], program: 'x()', signal: plain.signal })
      plain.abort(42)
      expect((await third).error?.message).toBe('the run was aborted')
      void second
      await runtime.dispose()
    })

    it('prefers an idle thread whose sandbox is built over one still booting', async () => {
      const { platform: p, threads } = scriptedPlatform(answering)
      const runtime = createSandboxRuntimeOn(p, { prespawn: 2, maxConcurrentRuns: 2 })
      await runtime.warm()
      threads[0]!.exit('crashed')
      await tick()
      // threads[2] replaced threads[0] and is booting; threads[1] is built.
      expect((await runtime.run({ bindings: [], program: 'return 1' })).value).toBe(1)
      expect(threads[1]!.runs).toHaveLength(1)
      await runtime.dispose()
    })

    it('waits for a releasing thread rather than starting another', async () => {
      const { platform: p, threads } = scriptedPlatform({ ...answering, autoEnd: false })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0, maxConcurrentRuns: 4 })
      expect((await runtime.run({ bindings: [], program: 'return 1' })).value).toBe(1)
      const next = runtime.run({ bindings: [], program: 'return 2' })
      expect(runtime.load()).toMatchObject({ running: 1, queued: 1, threads: 1 })
      threads[0]!.send({ type: 'ended', run: 1 })
      expect((await next).value).toBe(2)
      expect(threads[0]!.runs.map((r) => r.run)).toEqual([1, 2])
      await runtime.dispose()
    })
  })

  describe('failures', () => {
    it('a thread that exits mid-run fails it as worker-exit and is replaced', async () => {
      const { platform: p, threads } = scriptedPlatform({})
      const runtime = createSandboxRuntimeOn(p, { prespawn: 1, maxConcurrentRuns: 2 })
      const pending = runtime.run({ bindings: [], program: 'hang()' })
      await tick()
      threads[0]!.exit('out of memory')
      expect(await pending).toMatchObject({ error: { kind: 'worker-exit', message: 'the thread running the program exited: out of memory' } })
      expect(threads[0]!.terminated).toBeGreaterThanOrEqual(1)
      // The spare started with the run stays the prespawned floor: no third thread.
      expect(threads).toHaveLength(2)
      expect(runtime.load().threads).toBe(1)
      await runtime.dispose()
    })

    it('a thread that cannot be reached dies, naming why', async () => {
      const { platform: p } = scriptedPlatform({ throwOnPost: (m) => (m as { type?: string }).type === 'run' })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 1, maxConcurrentRuns: 1 })
      await runtime.warm()
      expect(await runtime.run({ bindings: [], program: 'x()' })).toMatchObject({ error: { kind: 'worker-exit', message: 'the thread running the program exited: it cannot be reached (port closed)' } })
      await runtime.dispose()
    })

    it('a failed event ends the current run with its kind; one for another run is ignored', async () => {
      const { platform: p, threads } = scriptedPlatform({})
      const runtime = createSandboxRuntimeOn(p, { prespawn: 1 })
      const pending = runtime.run({ bindings: [], program: 'x()' })
      await tick()
      threads[0]!.send({ type: 'failed', run: 99, kind: 'timeout', message: 'not this one' })
      threads[0]!.send({ type: 'failed', run: 1, kind: 'timeout', message: 'compute budget of 5000 ms exhausted' })
      expect(await pending).toMatchObject({ error: { kind: 'timeout', message: 'compute budget of 5000 ms exhausted' } })
      await runtime.dispose()
    })

    it('ignores VM text and junk when not running, and an ended event that is not for its run', async () => {
      // Fake time: the stopped thread must not meet its real 100 ms release grace between turns.
      vi.useFakeTimers()
      const { platform: p, threads } = scriptedPlatform({ autoEnd: false })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 1, maxConcurrentRuns: 1 })
      await runtime.warm()
      threads[0]!.send('{"type":"done","value":1}')
      threads[0]!.send({ type: 'nonsense' })
      const pending = runtime.run({ bindings: [], program: 'x()' })
      await vi.advanceTimersByTimeAsync(0)
      threads[0]!.done(7)
      expect((await pending).value).toBe(7)
      threads[0]!.send({ type: 'ended', run: 2 })
      const queued = runtime.run({ bindings: [], program: 'y()' })
      await vi.advanceTimersByTimeAsync(0)
      expect(runtime.load()).toMatchObject({ running: 1, queued: 1 })
      threads[0]!.send({ type: 'ended', run: 1 })
      await vi.advanceTimersByTimeAsync(0)
      expect(runtime.load()).toMatchObject({ queued: 0 })
      threads[0]!.done(8)
      expect((await queued).value).toBe(8)
      await runtime.dispose()
    })

    it('a thread that does not release a stopped VM within the grace is replaced', async () => {
      vi.useFakeTimers()
      const { platform: p, threads } = scriptedPlatform({ ...answering, autoEnd: false })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 1, maxConcurrentRuns: 1 })
      const result = runtime.run({ bindings: [], program: 'return 1' })
      await vi.advanceTimersByTimeAsync(0)
      expect((await result).value).toBe(1)
      expect(STOP_GRACE_MS).toBe(100)
      await vi.advanceTimersByTimeAsync(99)
      expect(threads).toHaveLength(1)
      await vi.advanceTimersByTimeAsync(1)
      expect(threads[0]!.terminated).toBe(1)
      expect(threads).toHaveLength(2)
      await runtime.dispose()
    })

    it('a thread that does not boot within 30 s dies; its run fails', async () => {
      vi.useFakeTimers()
      const { platform: p, threads, unrefs } = scriptedPlatform({ autoReady: false })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 1, maxConcurrentRuns: 1 })
      expect(unrefs).toHaveLength(1)
      const pending = runtime.run({ bindings: [], program: 'x()' })
      await vi.advanceTimersByTimeAsync(29_999)
      expect(threads[0]!.terminated).toBe(0)
      await vi.advanceTimersByTimeAsync(1)
      expect(await pending).toMatchObject({ error: { kind: 'worker-exit', message: 'the thread running the program exited: it did not boot within 30000 ms' } })
      await runtime.dispose()
    })

    it('a run aborted while its thread boots settles at once', async () => {
      const { platform: p, threads } = scriptedPlatform({ autoReady: false })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0 })
      const controller = new AbortController()
      const pending = runtime.run({ bindings: [], program: 'x()', signal: controller.signal })
      await tick()
      controller.abort('no wait')
      expect(await pending).toMatchObject({ error: { kind: 'abort', message: 'the run was aborted (no wait)' } })
      threads[0]!.send({ type: 'ready' })
      await tick()
      expect(threads[0]!.runs).toEqual([])
      expect(threads[0]!.posted).toContainEqual({ type: 'end', run: 1 })
      await runtime.dispose()
    })
  })

  describe('shared memory', () => {
    it('passes the signals, stops the VM through them, and meters compute from them', async () => {
      const { platform: p, threads } = scriptedPlatform({}, { sharedMemory: true })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 1, computeMs: 20 })
      await runtime.warm()
      expect(threads[0]!.signals).toBeInstanceOf(SharedArrayBuffer)
      expect((threads[0]!.posted[0] as { signals?: unknown }).signals).toBe(threads[0]!.signals)
      const pending = runtime.run({ bindings: [], program: 'busy()' })
      await tick()
      new Float64Array(threads[0]!.signals!)[BUSY_SLOT] = 25
      const result = await pending
      expect(result.error).toEqual({ kind: 'timeout', message: 'compute budget of 20 ms exhausted' })
      expect(new Int32Array(threads[0]!.signals!)[STOP_SLOT]).toBe(1)
      await runtime.dispose()
    })
  })

  describe('idle threads, wasm and disposal', () => {
    it('ends extra idle threads after 30 s, keeping the prespawned floor', async () => {
      vi.useFakeTimers()
      const { platform: p, threads } = scriptedPlatform({})
      const runtime = createSandboxRuntimeOn(p, { prespawn: 1, maxConcurrentRuns: 3, maxQueuedRuns: 0 })
      const a = runtime.run({ bindings: [], program: 'a()' })
      const b = runtime.run({ bindings: [], program: 'b()' })
      await vi.advanceTimersByTimeAsync(0)
      expect(threads.length).toBe(3)
      for (const t of threads) if (t.runs.length > 0) t.done(0)
      await a
      await b
      await vi.advanceTimersByTimeAsync(0)
      expect(runtime.load().threads).toBe(3)
      await vi.advanceTimersByTimeAsync(29_999)
      expect(runtime.load().threads).toBe(3)
      await vi.advanceTimersByTimeAsync(1)
      expect(runtime.load().threads).toBe(1)
      expect(threads.filter((t) => t.terminated > 0)).toHaveLength(2)
      // Their exits, reported afterwards, are not deaths: nothing is terminated again or replaced.
      for (const t of threads) if (t.terminated > 0) t.exit('ended as idle')
      await vi.advanceTimersByTimeAsync(0)
      expect(threads.map((t) => t.terminated).sort()).toEqual([0, 1, 1])
      expect(threads).toHaveLength(3)
      await runtime.dispose()
    })

    it('loads the wasm once for every thread, from the option or the platform; a failed load is retried', async () => {
      const module = new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]))
      let loads = 0
      const { platform: p, threads } = scriptedPlatform({}, { loadWasm: async () => (loads++, module) })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 2, maxConcurrentRuns: 2 })
      await runtime.warm()
      expect(loads).toBe(1)
      expect(threads.map((t) => (t.posted[0] as { wasmModule?: unknown }).wasmModule)).toEqual([module, module])
      await runtime.dispose()
      let attempts = 0
      const flaky = scriptedPlatform({})
      const retrying = createSandboxRuntimeOn(flaky.platform, {
        prespawn: 1,
        maxConcurrentRuns: 2,
        wasmModule: async () => {
          attempts++
          if (attempts === 1) throw new Error('network')
          return module
        },
      })
      await retrying.warm()
      expect(flaky.threads[0]!.posted[0]).toStrictEqual({ type: 'boot', memoryMb: 64, sandboxSource: '/* the sandbox script */' })
      flaky.threads[0]!.exit('gone')
      await tick()
      await retrying.warm()
      expect(attempts).toBe(2)
      expect((flaky.threads[1]!.posted[0] as { wasmModule?: unknown }).wasmModule).toBe(module)
      await retrying.dispose()
      const given = scriptedPlatform({})
      const direct = createSandboxRuntimeOn(given.platform, { prespawn: 1, wasmModule: module })
      await direct.warm()
      expect((given.threads[0]!.posted[0] as { wasmModule?: unknown }).wasmModule).toBe(module)
      await direct.dispose()
    })

    it('dispose aborts queued and running runs, terminates every thread; later runs are refused', async () => {
      const { platform: p, threads } = scriptedPlatform({})
      const runtime = createSandboxRuntimeOn(p, { prespawn: 1, maxConcurrentRuns: 1, maxQueuedRuns: 3 })
      const running = runtime.run({ bindings: [], program: 'hang()' })
      const queued = runtime.run({ bindings: [], program: 'queued()' })
      await tick()
      await runtime.dispose()
      const results: CodeRunResult[] = [await running, await queued]
      expect(results.map((r) => r.error)).toEqual([
        { kind: 'abort', message: 'the runtime was disposed' },
        { kind: 'abort', message: 'the runtime was disposed' },
      ])
      expect(threads.every((t) => t.terminated >= 1)).toBe(true)
      // A disposed thread's exit, reported late, is not handled as a death (nothing is terminated again or replaced).
      const terminated = threads.map((t) => t.terminated)
      for (const t of threads) t.exit('exited after dispose')
      await tick()
      expect(threads.map((t) => t.terminated)).toEqual(terminated)
      const idle = scriptedPlatform({})
      const spare = createSandboxRuntimeOn(idle.platform, { prespawn: 1 })
      await spare.warm()
      await spare.dispose()
      idle.threads[0]!.exit('exited after dispose')
      await tick()
      expect(idle.threads.map((t) => t.terminated)).toEqual([1])
      expect(await runtime.run({ bindings: [], program: 'return 1' })).toMatchObject({ error: { kind: 'abort', message: 'the runtime was disposed' } })
      expect(runtime.load()).toMatchObject({ running: 0, queued: 0, threads: 0 })
    })
  })

  describe('choosing a thread', () => {
    it('a built thread wins over one still booting, whichever started first', async () => {
      const { platform: p, threads } = scriptedPlatform({ ...answering, autoReady: false })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 2, maxConcurrentRuns: 2 })
      await tick()
      threads[1]!.send({ type: 'ready' })
      expect((await runtime.run({ bindings: [], program: 'return 1' })).value).toBe(1)
      expect(threads.map((t) => t.runs.length)).toEqual([0, 1])
      await runtime.dispose()
    })

    it('a thread is built again only when it says so; among built threads the busiest wins', async () => {
      const { platform: p, threads } = scriptedPlatform(answering)
      const runtime = createSandboxRuntimeOn(p, { prespawn: 2, maxConcurrentRuns: 2 })
      await runtime.warm()
      const [t0, t1] = [threads[0]!, threads[1]!]
      const runOn = async (program: string) => {
        expect((await runtime.run({ bindings: [], program })).error).toBeUndefined()
        await tick()
        return [t0.runs.length, t1.runs.length]
      }
      // Equal ranks: the first thread. Its sandbox is used up, so the next run goes to t1.
      expect(await runOn('return 1')).toEqual([1, 0])
      expect(await runOn('return 2')).toEqual([1, 1])
      // t1 is built again (and t0 is not): t1.
      t1.send({ type: 'ready' })
      expect(await runOn('return 3')).toEqual([1, 2])
      // Both built: t1 has taken more runs.
      t0.send({ type: 'ready' })
      t1.send({ type: 'ready' })
      expect(await runOn('return 4')).toEqual([1, 3])
      await runtime.dispose()
    })

    it('a ready that arrives while the thread runs does not count as a built sandbox for the next run', async () => {
      const { platform: p, threads } = scriptedPlatform(answering)
      const runtime = createSandboxRuntimeOn(p, { prespawn: 1, maxConcurrentRuns: 3 })
      // Taken at once by a run, threads[0] boots while it runs; threads[1] is the new spare.
      const first = runtime.run({ bindings: [], program: 'hang()' })
      await tick()
      expect(threads).toHaveLength(2)
      threads[0]!.done('a')
      expect((await first).value).toBe('a')
      await tick()
      expect((await runtime.run({ bindings: [], program: 'return 2' })).value).toBe(2)
      expect(threads.map((t) => t.runs.length)).toEqual([1, 1])
      await runtime.dispose()
    })
  })

  describe('thread life', () => {
    it('a thread that says ready before its boot message is not given a run until it has booted', async () => {
      const wasm = deferred<WebAssembly.Module>()
      const module = new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]))
      const { platform: p, threads } = scriptedPlatform(answering, { loadWasm: () => wasm.promise })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 1, maxConcurrentRuns: 1 })
      threads[0]!.send({ type: 'ready' })
      const pending = runtime.run({ bindings: [], program: 'return 3' })
      await tick()
      expect(threads[0]!.posted).toEqual([])
      wasm.resolve(module)
      expect((await pending).value).toBe(3)
      expect(threads[0]!.posted.map((m) => (m as { type: string }).type)).toEqual(['boot', 'run', 'end'])
      await runtime.dispose()
    })

    it('a thread that dies while the wasm loads is sent nothing', async () => {
      const wasm = deferred<WebAssembly.Module>()
      const { platform: p, threads } = scriptedPlatform({}, { loadWasm: () => wasm.promise })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 1, maxConcurrentRuns: 1 })
      threads[0]!.exit('gone')
      wasm.resolve(new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])))
      await tick()
      expect(threads[0]!.posted).toEqual([])
      expect(threads[1]!.posted.map((m) => (m as { type: string }).type)).toEqual(['boot'])
      await runtime.dispose()
    })

    it('a failed wasm load boots every thread that waited for it without the wasm (no unhandled rejection)', async () => {
      const { platform: p, threads } = scriptedPlatform(answering)
      const runtime = createSandboxRuntimeOn(p, {
        prespawn: 2,
        maxConcurrentRuns: 2,
        wasmModule: async () => {
          throw new Error('network')
        },
      })
      await runtime.warm()
      expect(threads.map((t) => t.posted)).toStrictEqual([
        [{ type: 'boot', memoryMb: 64, sandboxSource: '/* the sandbox script */' }],
        [{ type: 'boot', memoryMb: 64, sandboxSource: '/* the sandbox script */' }],
      ])
      expect((await runtime.run({ bindings: [], program: 'return 4' })).value).toBe(4)
      await runtime.dispose()
    })

    it('a thread that dies is terminated once, however often it is reported dead', async () => {
      const { platform: p, threads } = scriptedPlatform({})
      const runtime = createSandboxRuntimeOn(p, { prespawn: 1, maxConcurrentRuns: 2 })
      const pending = runtime.run({ bindings: [], program: 'hang()' })
      await tick()
      threads[0]!.exit('out of memory')
      expect((await pending).error?.kind).toBe('worker-exit')
      // Past the stop grace: the settled run's stop must not touch the dead thread.
      await new Promise((resolve) => setTimeout(resolve, STOP_GRACE_MS + 50))
      threads[0]!.exit('reported again')
      await tick()
      expect(threads[0]!.terminated).toBe(1)
      expect(threads[0]!.posted.filter((m) => (m as { type?: string }).type === 'end')).toEqual([])
      expect(threads).toHaveLength(2)
      expect(runtime.load()).toMatchObject({ running: 0, threads: 1 })
      await runtime.dispose()
    })

    it('a run whose thread dies before booting leaves no timer and no session behind', async () => {
      vi.useFakeTimers()
      const { platform: p, threads } = scriptedPlatform({ autoReady: false })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0 })
      const pending = runtime.run({ bindings: [], program: 'x()' })
      await vi.advanceTimersByTimeAsync(0)
      expect(vi.getTimerCount()).toBe(1)
      threads[0]!.exit('crashed')
      expect(await pending).toMatchObject({ error: { kind: 'worker-exit', message: 'the thread running the program exited: crashed' } })
      await vi.advanceTimersByTimeAsync(0)
      expect(vi.getTimerCount()).toBe(0)
      expect(threads[0]!.runs).toEqual([])
      await runtime.dispose()
    })

    it('a thread that dies with runs queued starts threads for them, within maxConcurrentRuns', async () => {
      const { platform: p, threads } = scriptedPlatform({})
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0, maxConcurrentRuns: 1, maxQueuedRuns: 2 })
      const a = runtime.run({ bindings: [], program: 'a()' })
      const b = runtime.run({ bindings: [], program: 'b()' })
      const c = runtime.run({ bindings: [], program: 'c()' })
      await tick()
      threads[0]!.exit('crashed')
      expect((await a).error?.kind).toBe('worker-exit')
      await tick()
      expect(runtime.load()).toMatchObject({ running: 1, queued: 1, threads: 1 })
      expect(threads).toHaveLength(2)
      threads[1]!.done('b')
      expect((await b).value).toBe('b')
      await tick()
      threads[1]!.done('c')
      expect((await c).value).toBe('c')
      expect(threads[1]!.runs.map((r) => r.start.program)).toEqual(['b()', 'c()'])
      await runtime.dispose()
    })

    it('on a platform without unrefTimer and threads without setActive, runs and idle threads still work', async () => {
      vi.useFakeTimers()
      const { platform: p, threads } = scriptedPlatform({ bare: true }, { unrefTimer: undefined })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0, maxConcurrentRuns: 2 })
      const a = runtime.run({ bindings: [], program: 'a()' })
      const b = runtime.run({ bindings: [], program: 'b()' })
      await vi.advanceTimersByTimeAsync(0)
      threads[0]!.done(1)
      threads[1]!.done(2)
      expect([(await a).value, (await b).value]).toEqual([1, 2])
      await vi.advanceTimersByTimeAsync(30_000)
      expect(runtime.load().threads).toBe(0)
      await runtime.dispose()
    })
  })

  describe('thread messages out of turn', () => {
    it('a failed event on an idle thread, and VM text before the thread has booted, change nothing', async () => {
      const { platform: p, threads } = scriptedPlatform({ autoReady: false })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 1, maxConcurrentRuns: 1 })
      await tick()
      threads[0]!.send({ type: 'failed', run: 1, kind: 'timeout', message: 'no run here' })
      const pending = runtime.run({ bindings: [], program: 'x()' })
      threads[0]!.send('{"type":"done","value":"early"}')
      threads[0]!.send({ type: 'ready' })
      await tick()
      threads[0]!.done('real')
      expect((await pending).value).toBe('real')
      await runtime.dispose()
    })

    it("an ended event for the thread's run while that run still runs is ignored", async () => {
      const { platform: p, threads } = scriptedPlatform({})
      const runtime = createSandboxRuntimeOn(p, { prespawn: 1, maxConcurrentRuns: 1 })
      const pending = runtime.run({ bindings: [], program: 'x()' })
      await tick()
      threads[0]!.send({ type: 'ended', run: 1 })
      const queued = runtime.run({ bindings: [], program: 'y()' })
      await tick()
      expect(runtime.load()).toMatchObject({ running: 1, queued: 1 })
      threads[0]!.done('x')
      expect((await pending).value).toBe('x')
      await tick()
      threads[0]!.done('y')
      expect((await queued).value).toBe('y')
      await runtime.dispose()
    })
  })

  describe('idle timers', () => {
    it('an idle timer ends only a thread still idle past the floor when it fires, and a run cancels it', async () => {
      vi.useFakeTimers()
      const { platform: p, threads } = scriptedPlatform({})
      const runtime = createSandboxRuntimeOn(p, { prespawn: 1, maxConcurrentRuns: 3, maxQueuedRuns: 0 })
      const a = runtime.run({ bindings: [], program: 'a()' })
      const b = runtime.run({ bindings: [], program: 'b()' })
      await vi.advanceTimersByTimeAsync(0)
      const [t0, t1, t2] = [threads[0]!, threads[1]!, threads[2]!]
      t0.done(0)
      await a
      await vi.advanceTimersByTimeAsync(0)
      t1.done(0)
      await b
      await vi.advanceTimersByTimeAsync(10_000)
      // t2 (built, never used) takes the next run; t0 and t1 idle with timers due at 30 s.
      const c = runtime.run({ bindings: [], program: 'c()' })
      await vi.advanceTimersByTimeAsync(0)
      expect(t2.runs).toHaveLength(1)
      await vi.advanceTimersByTimeAsync(20_000)
      // The first timer ends one of them; the second finds the floor reached and keeps the other.
      expect(runtime.load().threads).toBe(2)
      expect(t0.terminated + t1.terminated).toBe(1)
      // t2 goes idle at 30 s (past the floor: timer due at 60 s) and builds its next sandbox;
      // at 45 s it takes a run, which cancels that timer; idle again, its new timer is due at 75 s.
      t2.done(0)
      await c
      t2.send({ type: 'ready' })
      await vi.advanceTimersByTimeAsync(15_000)
      const d = runtime.run({ bindings: [], program: 'd()' })
      await vi.advanceTimersByTimeAsync(0)
      expect(t2.runs).toHaveLength(2)
      t2.done(0)
      await d
      await vi.advanceTimersByTimeAsync(20_000)
      expect(t2.terminated).toBe(0)
      await vi.advanceTimersByTimeAsync(10_000)
      expect(t2.terminated).toBe(1)
      await runtime.dispose()
    })

    it('the floor thread released alone gets no idle timer', async () => {
      vi.useFakeTimers()
      const { platform: p, threads } = scriptedPlatform({})
      const runtime = createSandboxRuntimeOn(p, { prespawn: 1, maxConcurrentRuns: 2, maxQueuedRuns: 0 })
      const a = runtime.run({ bindings: [], program: 'a()' })
      const b = runtime.run({ bindings: [], program: 'b()' })
      await vi.advanceTimersByTimeAsync(0)
      expect(threads).toHaveLength(2)
      // t0 alone idle (the floor): no timer. t1 idle 10 s later: past the floor, timer due at 40 s.
      threads[0]!.done(0)
      await a
      await vi.advanceTimersByTimeAsync(10_000)
      threads[1]!.done(0)
      await b
      await vi.advanceTimersByTimeAsync(25_000)
      expect(runtime.load().threads).toBe(2)
      await vi.advanceTimersByTimeAsync(5_000)
      expect(runtime.load().threads).toBe(1)
      expect(threads.map((t) => t.terminated)).toEqual([0, 1])
      await runtime.dispose()
    })
  })
  describe('parking', () => {
    const vm = { clockMs: 0, timers: [], journal: { inputs: ['s'], reads: [], ops: '', calls: ['c'] } }
    /** The journal's UTF-16 units (journalChars): 's' and 'c', one more each. */
    const VM_CHARS = 4
    const askCall = (id: number) => JSON.stringify({ type: 'call', id, global: 'tools', name: 'ask' })
    /** A VM that calls tools.ask at once, parks when asked (or refuses while `refuse` says so), and reports its replay. */
    const parkingScript = (refuse: () => boolean = () => false) => ({
      onRun: (t: FakeThreadLike, run: number) => t.send(askCall(1)),
      onPark: (t: FakeThreadLike, run: number) => t.send(refuse() ? { type: 'park-refused', run } : { type: 'parked', run, parked: vm }),
      onResume: (t: FakeThreadLike, run: number) => t.send({ type: 'replayed', run, busyMs: 3 }),
    })
    /** `tools.ask` waits for a person: it holds the wall clock until the test answers. */
    const person = () => {
      const answers: Array<(value: unknown) => void> = []
      const ask = (_a: unknown, o: CodeBindingCallOptions) => {
        o.holdWallClock!()
        return new Promise((resolve, reject) => {
          answers.push(resolve)
          o.signal.addEventListener('abort', () => reject(new Error('the run ended')), { once: true })
        })
      }
      const bindings = [{ global: 'tools', functions: { ask } }]
      return { answers, bindings }
    }
    const commands = (t: { posted: unknown[] }, type: string) => t.posted.filter((m) => typeof m === 'object' && (m as { type?: string }).type === type)

    it('a run waiting only for a person parks: its thread goes back to the pool, onPark gets the state, and the answer resumes it by replay', async () => {
      vi.useFakeTimers()
      const { platform: p, threads } = scriptedPlatform(parkingScript())
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0, maxConcurrentRuns: 1, parkAfterMs: 50, computeMs: 1_000, maxParkedBytes: 1024 * 1024 })
      const who = person()
      const states: unknown[] = []
      const result = runtime.run({ program: 'ask()', bindings: who.bindings, durable: { onPark: (state) => void states.push(state) } })
      await vi.advanceTimersByTimeAsync(49)
      const t = threads[0]!
      expect(commands(t, 'park')).toEqual([])
      await vi.advanceTimersByTimeAsync(1)
      expect(commands(t, 'park')).toEqual([{ type: 'park', run: 1, afterMs: 50, maxChars: 512 * 1024 }])
      await vi.advanceTimersByTimeAsync(0)
      expect(runtime.load()).toMatchObject({ running: 0, queued: 0, threads: 1, parked: 1 })
      expect(commands(t, 'end')).toEqual([{ type: 'end', run: 1 }])
      expect(states).toEqual([expect.objectContaining({ version: 1, vm, lastCallId: 1, calls: [{ id: 1, global: 'tools', name: 'ask', args: undefined }] })])
      // The person answers: the run takes the idle thread, which replays the VM, then gets the answer.
      who.answers[0]!('yes')
      await vi.advanceTimersByTimeAsync(0)
      const resumed = t.posted.filter((m) => typeof m === 'object' && (m as { type?: string }).type === 'run')
      // The VM's budget: the program's 1 s, plus the replay's room (maxReplayMs, by default computeMs), plus a margin.
      expect(resumed.at(-1)).toEqual({ type: 'run', run: 1, computeMs: 2_050, start: '', replay: vm, replayMs: 1_000 })
      expect(JSON.parse(t.posted.at(-1) as string)).toEqual({ type: 'reply', id: 1, ok: true, value: 'yes' })
      expect(runtime.load()).toMatchObject({ running: 1, parked: 0 })
      t.done('finished')
      expect((await result).value).toBe('finished')
      await runtime.dispose()
    })

    it('parked journals count against maxParkedBytes: the next park is offered the room that is left', async () => {
      vi.useFakeTimers()
      const { platform: p, threads } = scriptedPlatform(parkingScript())
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0, maxConcurrentRuns: 2, parkAfterMs: 50, maxParkedBytes: 1024 * 1024 + 1 })
      const who = person()
      void runtime.run({ program: 'a()', bindings: who.bindings })
      await vi.advanceTimersByTimeAsync(60)
      void runtime.run({ program: 'b()', bindings: who.bindings })
      await vi.advanceTimersByTimeAsync(60)
      const parks = threads.flatMap((t) => commands(t, 'park'))
      expect(parks).toEqual([
        { type: 'park', run: 1, afterMs: 50, maxChars: 512 * 1024 },
        { type: 'park', run: 2, afterMs: 50, maxChars: 512 * 1024 - VM_CHARS },
      ])
      expect(runtime.load().parked).toBe(2)
      await runtime.dispose()
      expect(runtime.load().parked).toBe(0)
    })

    it('a refused park is asked again after parkAfterMs; the run keeps its thread meanwhile', async () => {
      vi.useFakeTimers()
      let refusals = 1
      const { platform: p, threads } = scriptedPlatform(parkingScript(() => refusals-- > 0))
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0, parkAfterMs: 50 })
      void runtime.run({ program: 'a()', bindings: person().bindings })
      await vi.advanceTimersByTimeAsync(50)
      expect(commands(threads[0]!, 'park')).toHaveLength(1)
      expect(runtime.load()).toMatchObject({ running: 1, parked: 0 })
      await vi.advanceTimersByTimeAsync(49)
      expect(commands(threads[0]!, 'park')).toHaveLength(1)
      await vi.advanceTimersByTimeAsync(1)
      expect(commands(threads[0]!, 'park')).toHaveLength(2)
      await vi.advanceTimersByTimeAsync(0)
      expect(runtime.load()).toMatchObject({ running: 0, parked: 1 })
      await runtime.dispose()
    })

    it('with parking off, runs never park and the run command says the VM keeps no journal', async () => {
      vi.useFakeTimers()
      const { platform: p, threads } = scriptedPlatform(parkingScript())
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0, parking: false })
      void runtime.run({ program: 'a()', bindings: person().bindings })
      await vi.advanceTimersByTimeAsync(10_000)
      expect(commands(threads[0]!, 'park')).toEqual([])
      expect(commands(threads[0]!, 'run')[0]).toMatchObject({ journal: false })
      const on = scriptedPlatform(parkingScript())
      const parking = createSandboxRuntimeOn(on.platform, { prespawn: 0 })
      void parking.run({ program: 'a()', bindings: person().bindings })
      await vi.advanceTimersByTimeAsync(0)
      expect(Object.keys(commands(on.threads[0]!, 'run')[0] as object)).toEqual(['type', 'run', 'computeMs', 'start'])
      // The default parkAfterMs is 1 s.
      await vi.advanceTimersByTimeAsync(999)
      expect(commands(on.threads[0]!, 'park')).toEqual([])
      await vi.advanceTimersByTimeAsync(1)
      expect(commands(on.threads[0]!, 'park')).toHaveLength(1)
      await runtime.dispose()
      await parking.dispose()
    })

    it('maxParkedBytes counts the waiting calls\' arguments, and the room a park was promised until the thread answers', async () => {
      vi.useFakeTimers()
      // Each run waits on one call whose arguments hold 600,000 characters: two do not fit 1 MiB, whatever their journals.
      const bigAsk = JSON.stringify({ type: 'call', id: 1, global: 'tools', name: 'ask', args: 'x'.repeat(600_000) })
      const { platform: p, threads } = scriptedPlatform({ onRun: (t: FakeThreadLike) => t.send(bigAsk), onPark: () => undefined })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0, maxConcurrentRuns: 2, parkAfterMs: 50, maxParkedBytes: 1024 * 1024 })
      const who = person()
      void runtime.run({ program: 'a()', bindings: who.bindings })
      void runtime.run({ program: 'b()', bindings: who.bindings })
      await vi.advanceTimersByTimeAsync(50)
      const asked = threads.map((t) => commands(t, 'park') as { maxChars: number }[])
      // One run is asked to park, with the room its arguments leave for its journal; the other is not asked at all.
      expect(asked.map((c) => c.length).sort()).toEqual([0, 1])
      const room = asked.flat()[0]!.maxChars
      expect(room).toBeLessThan((1024 * 1024 - 600_000) / 2)
      expect(room).toBeGreaterThan((1024 * 1024 - 600_100) / 2 - 64)
      expect(runtime.load()).toMatchObject({ running: 2, parked: 0 })
      await runtime.dispose()
    })

    it('runs waiting to resume and new runs take turns for freed threads (neither starves the other)', async () => {
      vi.useFakeTimers()
      const { platform: p, threads } = scriptedPlatform({
        ...parkingScript(),
        onRun: (t: FakeThreadLike, _run: number, start: { program: string }) => {
          if (start.program === 'ask()') t.send(askCall(1))
        },
      })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0, maxConcurrentRuns: 1, maxQueuedRuns: 4, parkAfterMs: 50 })
      const who = person()
      const first = runtime.run({ program: 'ask()', bindings: who.bindings })
      await vi.advanceTimersByTimeAsync(60)
      const second = runtime.run({ program: 'ask()', bindings: who.bindings })
      await vi.advanceTimersByTimeAsync(60)
      expect(runtime.load().parked).toBe(2)
      const busy = runtime.run({ bindings: [], program: 'busy()' })
      await vi.advanceTimersByTimeAsync(0)
      const queued = [runtime.run({ bindings: [], program: 'queued()' }), runtime.run({ bindings: [], program: 'queued()' })]
      await vi.advanceTimersByTimeAsync(0)
      who.answers[0]!('yes')
      who.answers[1]!('yes')
      await vi.advanceTimersByTimeAsync(0)
      // Waiting to resume counts as queued, and stays parked (its journal held) until a thread takes it.
      expect(runtime.load()).toMatchObject({ running: 1, queued: 4, parked: 2, threads: 1 })
      const t = threads[0]!
      t.done('busy done')
      expect((await busy).value).toBe('busy done')
      const order: number[] = []
      for (let i = 0; i < 4; i++) {
        await vi.advanceTimersByTimeAsync(0)
        order.push((commands(t, 'run').at(-1) as { run: number }).run)
        t.done('done')
      }
      for (const outcome of await Promise.all([first, second, ...queued])) expect(outcome.value).toBe('done')
      // Resume, new, resume, new: runs 1 and 2 parked, 3 was busy, 4 and 5 were queued.
      expect(order).toEqual([1, 4, 2, 5])
      expect(commands(t, 'run').filter((c) => (c as { replay?: unknown }).replay !== undefined).map((c) => (c as { run: number }).run)).toEqual([1, 2])
      await runtime.dispose()
    })

    it('a run aborted while it waits to resume leaves the resume queue', async () => {
      vi.useFakeTimers()
      const { platform: p, threads } = scriptedPlatform({
        ...parkingScript(),
        onRun: (t: FakeThreadLike, _run: number, start: { program: string }) => {
          if (start.program === 'ask()') t.send(askCall(1))
        },
      })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0, maxConcurrentRuns: 1, parkAfterMs: 50 })
      const who = person()
      const controller = new AbortController()
      const parked = runtime.run({ program: 'ask()', bindings: who.bindings, signal: controller.signal })
      await vi.advanceTimersByTimeAsync(60)
      const busy = runtime.run({ bindings: [], program: 'busy()' })
      await vi.advanceTimersByTimeAsync(0)
      who.answers[0]!('yes')
      await vi.advanceTimersByTimeAsync(0)
      expect(runtime.load()).toMatchObject({ running: 1, queued: 1 })
      controller.abort('gone')
      expect((await parked).error).toEqual({ kind: 'abort', message: 'the run was aborted (gone)' })
      expect(runtime.load()).toMatchObject({ running: 1, queued: 0, parked: 0 })
      threads[0]!.done('busy done')
      expect((await busy).value).toBe('busy done')
      await vi.advanceTimersByTimeAsync(0)
      // The freed thread starts nothing for the aborted run.
      expect(commands(threads[0]!, 'run').filter((m) => (m as { start?: string }).start === '')).toEqual([])
      await runtime.dispose()
    })

    it('a parked run resumes on a new thread while the pool may grow, and on an idle one before that', async () => {
      vi.useFakeTimers()
      const { platform: p, threads } = scriptedPlatform({
        ...parkingScript(),
        onRun: (t: FakeThreadLike, _run: number, start: { program: string }) => {
          if (start.program === 'ask()') t.send(askCall(1))
        },
      })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0, maxConcurrentRuns: 2, parkAfterMs: 50 })
      const who = person()
      const parked = runtime.run({ program: 'ask()', bindings: who.bindings })
      await vi.advanceTimersByTimeAsync(60)
      void runtime.run({ bindings: [], program: 'busy()' })
      await vi.advanceTimersByTimeAsync(0)
      expect(threads).toHaveLength(1)
      who.answers[0]!('yes')
      await vi.advanceTimersByTimeAsync(0)
      expect(threads).toHaveLength(2)
      expect(commands(threads[1]!, 'run')).toEqual([{ type: 'run', run: 1, computeMs: 2 * SANDBOX_DEFAULT_LIMITS.computeMs + 50, start: '', replay: vm, replayMs: SANDBOX_DEFAULT_LIMITS.computeMs }])
      threads[1]!.done(1)
      expect((await parked).value).toBe(1)
      await runtime.dispose()
    })

    it('a run resumed from a stored state takes no thread until its VM is needed; the calls it waited on run again', async () => {
      vi.useFakeTimers()
      const { platform: p, threads } = scriptedPlatform(parkingScript())
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0, computeMs: 500 })
      const seen: unknown[] = []
      let answer!: (value: unknown) => void
      // Its journal recorded the waiting call (as the VM posted it): only then is it made again.
      const recorded = { ...vm, journal: { ...vm.journal, calls: [callKey('{"type":"call","id":2,"global":"tools","name":"ask","args":{"q":1}}')] } }
      const state = { version: 1 as const, vm: recorded, logs: [], logBytes: 0, logTruncated: false, busyMs: 20, wallMs: 0, lastCallId: 2, calls: [{ id: 2, global: 'tools', name: 'ask', args: { q: 1 } }], replayMs: 300 }
      const result = runtime.run({
        program: 'ignored',
        bindings: [{ global: 'tools', functions: { ask: (args: unknown) => (seen.push(args), new Promise((resolve) => (answer = resolve))) } }],
        durable: { resume: state },
      })
      await vi.advanceTimersByTimeAsync(0)
      expect(seen).toEqual([{ q: 1 }])
      expect(threads).toHaveLength(0)
      expect(runtime.load()).toMatchObject({ running: 0, parked: 1 })
      answer('ok')
      await vi.advanceTimersByTimeAsync(0)
      expect(threads).toHaveLength(1)
      // Earlier replays count: the replay's room is maxReplayMs (by default computeMs) less the state's 300 ms;
      // the VM's whole budget is that room plus the program's budget, plus 50 ms.
      expect(commands(threads[0]!, 'run')).toEqual([{ type: 'run', run: 1, computeMs: 750, start: '', replay: recorded, replayMs: 200 }])
      expect(JSON.parse(threads[0]!.posted.at(-1) as string)).toEqual({ type: 'reply', id: 2, ok: true, value: 'ok' })
      threads[0]!.done('resumed')
      const out = await result
      expect(out.value).toBe('resumed')
      expect(out.stats?.computeMs).toBe(20)
      await runtime.dispose()
    })

    it('aborting a parked run settles it without a thread and frees its journal room', async () => {
      vi.useFakeTimers()
      const { platform: p, threads } = scriptedPlatform(parkingScript())
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0, parkAfterMs: 50, maxParkedBytes: 1024 * 1024 })
      const controller = new AbortController()
      const result = runtime.run({ program: 'a()', bindings: person().bindings, signal: controller.signal })
      await vi.advanceTimersByTimeAsync(60)
      expect(runtime.load().parked).toBe(1)
      controller.abort('gone')
      expect((await result).error).toEqual({ kind: 'abort', message: 'the run was aborted (gone)' })
      expect(runtime.load().parked).toBe(0)
      // The room is whole again.
      void runtime.run({ program: 'b()', bindings: person().bindings })
      await vi.advanceTimersByTimeAsync(60)
      expect(commands(threads[0]!, 'park').at(-1)).toMatchObject({ run: 2, maxChars: 512 * 1024 })
      await runtime.dispose()
    })

    it('parking messages for another run, or from a thread that is not running it, change nothing', async () => {
      vi.useFakeTimers()
      const { platform: p, threads } = scriptedPlatform({ onRun: (t: FakeThreadLike) => t.send(askCall(1)) })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0, parkAfterMs: 50 })
      const who = person()
      const result = runtime.run({ program: 'a()', bindings: who.bindings })
      await vi.advanceTimersByTimeAsync(0)
      const t = threads[0]!
      t.send({ type: 'parked', run: 2, parked: vm })
      t.send({ type: 'park-refused', run: 2 })
      t.send({ type: 'replayed', run: 2, busyMs: 1 })
      await vi.advanceTimersByTimeAsync(0)
      expect(runtime.load()).toMatchObject({ running: 1, parked: 0 })
      // Once the run has settled and its thread is stopping, a late `parked` is ignored.
      t.done('over')
      expect((await result).value).toBe('over')
      t.send({ type: 'parked', run: 1, parked: vm })
      await vi.advanceTimersByTimeAsync(0)
      expect(runtime.load()).toMatchObject({ running: 0, parked: 0 })
      await runtime.dispose()
    })
  })
  describe('runs the pool ends on its own account', () => {
    it('takes maxWallMs and refuses a parking that is not a boolean and a maxParkedBytes under 1 MiB', () => {
      const { platform: p } = scriptedPlatform()
      const f = 'createSandboxRuntime'
      expect(createSandboxRuntimeOn(p, { prespawn: 0, maxWallMs: 1_234 }).limits.maxWallMs).toBe(1_234)
      expect(refusal({ parking: 'yes' })).toBe(`${f}: options.parking must be a boolean`)
      expect(refusal({ maxParkedBytes: 1024 * 1024 - 1 })).toBe(`${f}: options.maxParkedBytes must be an integer from 1048576 to 1073741824 (got 1048575)`)
      expect(refusal({ maxParkedBytes: 1024 * 1024, parking: true })).toBeUndefined()
    })

    it('a VM out of memory ends the run as a worker-exit naming the sandbox memory', async () => {
      const { platform: p, threads } = scriptedPlatform({ onRun: (t) => t.send(JSON.stringify({ type: 'done', error: { name: 'InternalError', message: 'out of memory' } })) })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0, memoryMb: 48 })
      expect((await runtime.run({ bindings: [], program: 'grow()' })).error).toEqual({ kind: 'worker-exit', message: 'out of memory: the program exceeded the 48 MB memory of its QuickJS sandbox' })
      expect(threads).toHaveLength(1)
      await runtime.dispose()
    })

    it('a queued run is served by the thread that replaces one that died', async () => {
      const { platform: p, threads } = scriptedPlatform({})
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0, maxConcurrentRuns: 1 })
      const first = runtime.run({ bindings: [], program: 'a()' })
      const second = runtime.run({ bindings: [], program: 'b()' })
      await tick()
      expect(runtime.load()).toMatchObject({ running: 1, queued: 1, threads: 1 })
      threads[0]!.exit('crashed')
      expect((await first).error?.kind).toBe('worker-exit')
      await tick()
      expect(threads).toHaveLength(2)
      expect(threads[1]!.runs.map((r) => r.start.program)).toEqual(['b()'])
      threads[1]!.done('b')
      expect((await second).value).toBe('b')
      await runtime.dispose()
    })

    it('dispose aborts each running run through its session (its logs kept) and waits for its binding calls to settle', async () => {
      const { platform: p, threads } = scriptedPlatform({
        onRun: (t, _run, start) => {
          t.send(JSON.stringify({ type: 'log', source: 'console', level: 'log', text: `in ${start.program}` }))
          t.send(JSON.stringify({ type: 'call', id: 1, global: 'tools', name: 'slow' }))
        },
      })
      const runtime = createSandboxRuntimeOn(p, { prespawn: 0, maxConcurrentRuns: 2 })
      const finish: Array<() => void> = []
      // Settles a turn after its run's signal fires, not at once.
      const slow = (_a: unknown, o: CodeBindingCallOptions) => new Promise((resolve) => o.signal.addEventListener('abort', () => finish.push(() => resolve('late')), { once: true }))
      const bindings = [{ global: 'tools', functions: { slow } }]
      const a = runtime.run({ program: 'a()', bindings })
      const b = runtime.run({ program: 'b()', bindings })
      await tick()
      expect(threads).toHaveLength(2)
      let disposed = false
      const disposing = runtime.dispose().then(() => (disposed = true))
      const [ra, rb] = await Promise.all([a, b])
      expect(ra.error).toEqual({ kind: 'abort', message: 'the runtime was disposed' })
      expect(rb.error).toEqual({ kind: 'abort', message: 'the runtime was disposed' })
      expect(ra.logs.map((l) => l.text)).toEqual(['in a()'])
      expect(rb.logs.map((l) => l.text)).toEqual(['in b()'])
      await tick()
      expect(disposed).toBe(false)
      for (const done of finish.splice(0)) done()
      await disposing
      expect(disposed).toBe(true)
    })
  })
})
