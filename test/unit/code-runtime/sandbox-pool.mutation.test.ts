/**
 * The sandbox runtime's pool (src/code-runtime/sandbox-runtime.ts) on a scripted
 * platform: each "thread" is a test double that speaks the thread protocol (boot →
 * ready, run → the VM's messages, end → ended), so admission, queueing, overload,
 * thread death, the stop grace, idle threads, wasm loading and disposal are checked
 * exactly and in milliseconds. The real threads run in sandbox-runtime.test.ts and the
 * contract suite.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { CodeRunResult } from '../../../src/code-runtime/contract.js'
import { SANDBOX_DEFAULT_LIMITS, STOP_GRACE_MS, createSandboxRuntimeOn } from '../../../src/code-runtime/sandbox-runtime.js'
import type { SandboxPlatform, SandboxRuntimeOptions, SandboxThread } from '../../../src/code-runtime/sandbox-runtime.js'
import { BUSY_SLOT, MAX_PROGRAM_CHARS, programTooLong, STOP_SLOT } from '../../../src/code-runtime/sandbox-protocol.js'
import { refusalMessage } from '../../support/refusal.js'
import { deferred } from '../registry/helpers.js'

afterEach(() => {
  vi.useRealTimers()
})

interface StartMessage {
  readonly program: string
  readonly maxLogBytes: number
  readonly maxValueBytes: number
}

/** A scripted thread: it answers boot and end by itself (unless told not to); the test plays its VM. */
class FakeThread implements SandboxThread {
  readonly posted: unknown[] = []
  terminated = 0
  readonly active: boolean[] = []
  signals: SharedArrayBuffer | undefined
  #listener: ((data: unknown) => void) | undefined
  #exit: ((reason: string) => void) | undefined

  constructor(readonly script: Script) {}

  postMessage(message: unknown): void {
    if (this.script.throwOnPost?.(message) === true) throw new Error('port closed')
    this.posted.push(message)
    const m = message as { type?: string; run?: number; start?: string; signals?: SharedArrayBuffer }
    if (m.type === 'boot') {
      this.signals = m.signals
      if (this.script.autoReady !== false) queueMicrotask(() => this.send({ type: 'ready' }))
    } else if (m.type === 'run') {
      const start = JSON.parse(m.start!) as StartMessage
      queueMicrotask(() => this.script.onRun?.(this, m.run!, start))
    } else if (m.type === 'end') {
      if (this.script.autoEnd !== false) queueMicrotask(() => this.send({ type: 'ended', run: m.run }))
    }
  }

  onMessage(listener: (data: unknown) => void): void {
    this.#listener = listener
  }

  onExit(listener: (reason: string) => void): void {
    this.#exit = listener
  }

  terminate(): void {
    this.terminated++
  }

  setActive(active: boolean): void {
    this.active.push(active)
  }

  /** Delivers what the thread posts to the host. */
  send(data: unknown): void {
    this.#listener?.(data)
  }

  /** The VM's completion, as JSON text. */
  done(value: unknown): void {
    this.send(JSON.stringify({ type: 'done', value }))
  }

  exit(reason: string): void {
    this.#exit?.(reason)
  }

  get runs(): Array<{ run: number; computeMs: number; start: StartMessage }> {
    return this.posted
      .filter((m): m is { type: 'run'; run: number; computeMs: number; start: string } => (m as { type?: string }).type === 'run')
      .map((m) => ({ run: m.run, computeMs: m.computeMs, start: JSON.parse(m.start) as StartMessage }))
  }
}

interface Script {
  /** The thread has no `setActive` (a platform without process keep-alive, like the browser). */
  bare?: boolean
  autoReady?: boolean
  autoEnd?: boolean
  onRun?: (thread: FakeThread, run: number, start: StartMessage) => void
  throwOnPost?: (message: unknown) => boolean
}

/** The platform: every spawned thread, scripted alike. */
function platform(script: Script = {}, extra: Partial<SandboxPlatform> = {}) {
  const threads: FakeThread[] = []
  const unrefs: unknown[] = []
  const p: SandboxPlatform = {
    factory: 'createSandboxRuntime',
    sandboxSource: '/* the sandbox script */',
    sharedMemory: false,
    machine: { cores: 2, memoryMb: undefined },
    spawn: () => {
      const thread = new FakeThread(script)
      if (script.bare === true) Object.defineProperty(thread, 'setActive', { value: undefined })
      threads.push(thread)
      return thread
    },
    unrefTimer: (timer) => void unrefs.push(timer),
    ...extra,
  }
  return { platform: p, threads, unrefs }
}

/** Programs the fake VM understands: `return N` answers N at once; anything else waits for the test. */
const answering: Script = {
  onRun: (thread, _run, start) => {
    const match = /return (\d+)$/.exec(start.program)
    if (match) thread.done(Number(match[1]))
  },
}

const tick = async (n = 3) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setTimeout(resolve, 0))
}

function refusal(options: unknown, p = platform().platform): string | undefined {
  return refusalMessage('INVALID_OPTIONS', () => createSandboxRuntimeOn(p, options as SandboxRuntimeOptions))
}

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
    expect(refusal({ threads: 2 })).toBe(`${f}: unknown option "threads" (known: computeMs, maxWallMs, maxLogBytes, maxValueBytes, maxPendingArgBytes, memoryMb, prespawn, maxConcurrentRuns, maxQueuedRuns, wasmModule, parkAfterMs, parking, maxParkedBytes)`)
    expect(refusal({ extra: 1 }, platform({}, { extraOptions: ['extra'] }).platform)).toBeUndefined()
    for (const ok of [{ memoryMb: 16, maxQueuedRuns: 0, prespawn: 0 }, { memoryMb: 2048, maxConcurrentRuns: 4096, maxQueuedRuns: 1_000_000, prespawn: 256 }, { wasmModule: async () => new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])) }]) {
      expect(refusal(ok)).toBeUndefined()
    }
  })

  it('defaults: the sandbox budgets, four runs a core within a quarter of memory (VM, thread and pending argument bytes), eight queued a run', async () => {
    expect(SANDBOX_DEFAULT_LIMITS).toEqual({ computeMs: 5_000, maxWallMs: 60_000, maxLogBytes: 65_536, maxValueBytes: 32_768, maxPendingArgBytes: 33_554_432 })
    const make = (machine: SandboxPlatform['machine'], options: SandboxRuntimeOptions = {}) => {
      const runtime = createSandboxRuntimeOn(platform({}, { machine }).platform, { prespawn: 0, ...options })
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
    const runtime = createSandboxRuntimeOn(platform().platform, { prespawn: 0 })
    expect(runtime.limits).toEqual(SANDBOX_DEFAULT_LIMITS)
    expect([runtime.language, runtime.isolation]).toEqual(['typescript', 'quickjs-sandbox'])
    expect(runtime.capabilities).toEqual({ streamsLogs: true, memoryLimit: true, capturesStdio: false, abortsBusyPrograms: true, confinesAuthority: true })
    expect(Object.isFrozen(runtime) && Object.isFrozen(runtime.capabilities) && Object.isFrozen(runtime.limits)).toBe(true)
    await runtime.dispose()
  })
})

describe('threads and runs', () => {
  it('pre-spawns min(prespawn, maxConcurrentRuns) threads and boots them with the memory size', async () => {
    const { platform: p, threads } = platform()
    const runtime = createSandboxRuntimeOn(p, { prespawn: 3, maxConcurrentRuns: 2, memoryMb: 32 })
    expect(threads).toHaveLength(2)
    await runtime.warm()
    // Exactly the boot message: no wasm or signals keys when there are none to send.
    expect(threads[0]!.posted).toStrictEqual([{ type: 'boot', memoryMb: 32, sandboxSource: '/* the sandbox script */' }])
    expect(runtime.load()).toEqual({ running: 0, queued: 0, threads: 2, parked: 0, maxConcurrentRuns: 2, maxQueuedRuns: 16 })
    await runtime.dispose()
    expect(threads.map((t) => t.terminated)).toEqual([1, 1])
    const none = platform()
    const lazy = createSandboxRuntimeOn(none.platform, { prespawn: 0 })
    expect(none.threads).toHaveLength(0)
    await lazy.warm()
    await lazy.dispose()
  })

  it('runs a program: the run command carries the run id, computeMs and the start message with the program as written (its thread strips it)', async () => {
    const { platform: p, threads } = platform(answering)
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
    const { platform: p, threads } = platform(answering)
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
    const { platform: p, threads } = platform({})
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
    const { platform: p } = platform({})
    const runtime = createSandboxRuntimeOn(p, { prespawn: 0, maxConcurrentRuns: 1, maxQueuedRuns: 0 })
    void runtime.run({ bindings: [], program: 'hang()' })
    expect((await runtime.run({ bindings: [], program: 'hang()' })).error?.kind).toBe('overloaded')
    await runtime.dispose()
  })

  it('a queued run whose signal aborts leaves the queue with its reason', async () => {
    const { platform: p, threads } = platform({})
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
    const { platform: p, threads } = platform(answering)
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
    const { platform: p, threads } = platform({ ...answering, autoEnd: false })
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
    const { platform: p, threads } = platform({})
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
    const { platform: p } = platform({ throwOnPost: (m) => (m as { type?: string }).type === 'run' })
    const runtime = createSandboxRuntimeOn(p, { prespawn: 1, maxConcurrentRuns: 1 })
    await runtime.warm()
    expect(await runtime.run({ bindings: [], program: 'x()' })).toMatchObject({ error: { kind: 'worker-exit', message: 'the thread running the program exited: it cannot be reached (port closed)' } })
    await runtime.dispose()
  })

  it('a failed event ends the current run with its kind; one for another run is ignored', async () => {
    const { platform: p, threads } = platform({})
    const runtime = createSandboxRuntimeOn(p, { prespawn: 1 })
    const pending = runtime.run({ bindings: [], program: 'x()' })
    await tick()
    threads[0]!.send({ type: 'failed', run: 99, kind: 'timeout', message: 'not this one' })
    threads[0]!.send({ type: 'failed', run: 1, kind: 'timeout', message: 'compute budget of 5000 ms exhausted' })
    expect(await pending).toMatchObject({ error: { kind: 'timeout', message: 'compute budget of 5000 ms exhausted' } })
    await runtime.dispose()
  })

  it('ignores VM text and junk when not running, and an ended event that is not for its run', async () => {
    const { platform: p, threads } = platform({ autoEnd: false })
    const runtime = createSandboxRuntimeOn(p, { prespawn: 1, maxConcurrentRuns: 1 })
    await runtime.warm()
    threads[0]!.send('{"type":"done","value":1}')
    threads[0]!.send({ type: 'nonsense' })
    const pending = runtime.run({ bindings: [], program: 'x()' })
    await tick()
    threads[0]!.done(7)
    expect((await pending).value).toBe(7)
    threads[0]!.send({ type: 'ended', run: 2 })
    const queued = runtime.run({ bindings: [], program: 'y()' })
    await tick()
    expect(runtime.load()).toMatchObject({ running: 1, queued: 1 })
    threads[0]!.send({ type: 'ended', run: 1 })
    await tick()
    expect(runtime.load()).toMatchObject({ queued: 0 })
    threads[0]!.done(8)
    expect((await queued).value).toBe(8)
    await runtime.dispose()
  })

  it('a thread that does not release a stopped VM within the grace is replaced', async () => {
    vi.useFakeTimers()
    const { platform: p, threads } = platform({ ...answering, autoEnd: false })
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
    const { platform: p, threads, unrefs } = platform({ autoReady: false })
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
    const { platform: p, threads } = platform({ autoReady: false })
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
    const { platform: p, threads } = platform({}, { sharedMemory: true })
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
    const { platform: p, threads } = platform({})
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
    const { platform: p, threads } = platform({}, { loadWasm: async () => (loads++, module) })
    const runtime = createSandboxRuntimeOn(p, { prespawn: 2, maxConcurrentRuns: 2 })
    await runtime.warm()
    expect(loads).toBe(1)
    expect(threads.map((t) => (t.posted[0] as { wasmModule?: unknown }).wasmModule)).toEqual([module, module])
    await runtime.dispose()
    let attempts = 0
    const flaky = platform({})
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
    const given = platform({})
    const direct = createSandboxRuntimeOn(given.platform, { prespawn: 1, wasmModule: module })
    await direct.warm()
    expect((given.threads[0]!.posted[0] as { wasmModule?: unknown }).wasmModule).toBe(module)
    await direct.dispose()
  })

  it('dispose aborts queued and running runs, terminates every thread; later runs are refused', async () => {
    const { platform: p, threads } = platform({})
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
    const idle = platform({})
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

/** The `abort` listeners currently attached to `signal` (wraps its add/remove). */
function liveAbortListeners(signal: AbortSignal): Set<unknown> {
  const live = new Set<unknown>()
  const add = signal.addEventListener.bind(signal)
  const remove = signal.removeEventListener.bind(signal)
  signal.addEventListener = (type: string, listener: EventListenerOrEventListenerObject, options?: boolean | AddEventListenerOptions) => {
    if (type === 'abort') live.add(listener)
    add(type, listener, options)
  }
  signal.removeEventListener = (type: string, listener: EventListenerOrEventListenerObject, options?: boolean | EventListenerOptions) => {
    if (type === 'abort') live.delete(listener)
    remove(type, listener, options)
  }
  return live
}

describe('choosing a thread', () => {
  it('a built thread wins over one still booting, whichever started first', async () => {
    const { platform: p, threads } = platform({ ...answering, autoReady: false })
    const runtime = createSandboxRuntimeOn(p, { prespawn: 2, maxConcurrentRuns: 2 })
    await tick()
    threads[1]!.send({ type: 'ready' })
    expect((await runtime.run({ bindings: [], program: 'return 1' })).value).toBe(1)
    expect(threads.map((t) => t.runs.length)).toEqual([0, 1])
    await runtime.dispose()
  })

  it('a thread is built again only when it says so; among built threads the busiest wins', async () => {
    const { platform: p, threads } = platform(answering)
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
    const { platform: p, threads } = platform(answering)
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
    const { platform: p, threads } = platform(answering, { loadWasm: () => wasm.promise })
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
    const { platform: p, threads } = platform({}, { loadWasm: () => wasm.promise })
    const runtime = createSandboxRuntimeOn(p, { prespawn: 1, maxConcurrentRuns: 1 })
    threads[0]!.exit('gone')
    wasm.resolve(new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])))
    await tick()
    expect(threads[0]!.posted).toEqual([])
    expect(threads[1]!.posted.map((m) => (m as { type: string }).type)).toEqual(['boot'])
    await runtime.dispose()
  })

  it('a failed wasm load boots every thread that waited for it without the wasm (no unhandled rejection)', async () => {
    const { platform: p, threads } = platform(answering)
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
    const { platform: p, threads } = platform({})
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
    const { platform: p, threads } = platform({ autoReady: false })
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
    const { platform: p, threads } = platform({})
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
    const { platform: p, threads } = platform({ bare: true }, { unrefTimer: undefined })
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
    const { platform: p, threads } = platform({ autoReady: false })
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
    const { platform: p, threads } = platform({})
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

describe('signals and idle timers', () => {
  it("every abort listener a run adds to the caller's signal is gone once it settles", async () => {
    const { platform: p, threads } = platform({ autoReady: false })
    const runtime = createSandboxRuntimeOn(p, { prespawn: 0, maxConcurrentRuns: 1, maxQueuedRuns: 1 })
    // Booting, then running; queued, then running.
    const [first, second] = [new AbortController(), new AbortController()]
    const [live1, live2] = [liveAbortListeners(first.signal), liveAbortListeners(second.signal)]
    const a = runtime.run({ bindings: [], program: 'a()', signal: first.signal })
    const b = runtime.run({ bindings: [], program: 'b()', signal: second.signal })
    expect(live1.size).toBeGreaterThan(0)
    expect(live2.size).toBeGreaterThan(0)
    await tick()
    threads[0]!.send({ type: 'ready' })
    await tick()
    threads[0]!.done(1)
    expect((await a).value).toBe(1)
    await tick()
    threads[0]!.done(2)
    expect((await b).value).toBe(2)
    expect([live1.size, live2.size]).toEqual([0, 0])
    await runtime.dispose()
    // Failed before its thread booted.
    const booting = platform({ autoReady: false })
    const other = createSandboxRuntimeOn(booting.platform, { prespawn: 0 })
    const third = new AbortController()
    const live3 = liveAbortListeners(third.signal)
    const c = other.run({ bindings: [], program: 'c()', signal: third.signal })
    await tick()
    expect(live3.size).toBeGreaterThan(0)
    booting.threads[0]!.exit('crashed')
    expect((await c).error?.kind).toBe('worker-exit')
    expect(live3.size).toBe(0)
    // Ended by dispose while its thread boots (the thread never answers).
    const fourth = new AbortController()
    const live4 = liveAbortListeners(fourth.signal)
    const d = other.run({ bindings: [], program: 'd()', signal: fourth.signal })
    await tick()
    await other.dispose()
    expect((await d).error).toEqual({ kind: 'abort', message: 'the runtime was disposed' })
    expect(live4.size).toBe(0)
  })

  it('an idle timer ends only a thread still idle past the floor when it fires, and a run cancels it', async () => {
    vi.useFakeTimers()
    const { platform: p, threads } = platform({})
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
    const { platform: p, threads } = platform({})
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
