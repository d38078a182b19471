import { afterEach, describe, expect, it } from 'vitest'
import type { CodeBindingFunction, CodeLogEntry, CodeRunResult } from '../../src/code-runtime/contract.js'
import { createBrowserWorkerRuntime } from '../../platforms/browser/index.js'
import type { BrowserWorkerRuntime, BrowserWorkerRuntimeOptions } from '../../platforms/browser/index.js'

/**
 * Browser-specific behaviour of the Web Worker runtime in real Chromium: the heartbeat
 * meter, worker death, forged messages, caps, freshness and disposal. The shared
 * CodeRuntime contract suite runs separately (browser-worker.contract.test.ts).
 */
const runtimes: BrowserWorkerRuntime[] = []
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.dispose()))
})

function make(options?: BrowserWorkerRuntimeOptions): BrowserWorkerRuntime {
  const runtime = createBrowserWorkerRuntime(options)
  runtimes.push(runtime)
  return runtime
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms)
    signal?.addEventListener('abort', () => {
      clearTimeout(timer)
      reject(signal.reason)
    })
  })

function tools(functions: Record<string, CodeBindingFunction>) {
  return [{ global: 'tools', functions }]
}

describe('createBrowserWorkerRuntime: basics', () => {
  it('declares language, isolation and honest capabilities', () => {
    const runtime = make({ prespawn: 0 })
    expect(runtime.language).toBe('typescript')
    expect(runtime.isolation).toBe('web-worker')
    expect(runtime.capabilities).toEqual({ streamsLogs: true, memoryLimit: false, capturesStdio: false })
  })

  it('strips TypeScript and returns the value', async () => {
    const runtime = make()
    const result = await runtime.run({ program: 'const x: number = 21\ninterface P { q: string }\nreturn (x as number) * 2', bindings: [] })
    expect(result.error).toBeUndefined()
    expect(result.value).toBe(42)
  })

  it('rejects non-erasable TypeScript before any worker runs', async () => {
    const result = await make({ prespawn: 0 }).run({ program: 'enum E { A }\nreturn 1', bindings: [] })
    expect(result.error?.kind).toBe('exception')
    expect(result.error?.message).toMatch(/enum/)
  })

  it('routes binding calls and streams logs as they are written', async () => {
    const seen: CodeLogEntry[] = []
    const result = await make().run({
      program: "console.log('before')\nconst r = await tools.add({ a: 2, b: 3 })\nconsole.warn('after', r)\nreturn r",
      bindings: tools({ add: async (args) => (args as { a: number; b: number }).a + (args as { a: number; b: number }).b }),
      onLog: (entry) => seen.push(entry),
    })
    expect(result.value).toBe(5)
    expect(result.logs.map((l) => l.text)).toEqual(['before', 'after 5'])
    expect(seen.map((l) => l.level)).toEqual(['log', 'warn'])
  })

  it('reports a thrown error as an exception with program line numbers', async () => {
    const result = await make().run({ program: "const a = 1\nthrow new TypeError('boom')", bindings: [] })
    expect(result.error?.kind).toBe('exception')
    expect(result.error?.message).toMatch(/TypeError: boom/)
    expect(result.error?.message).toMatch(/program\.ts:2/)
  })

  it('a syntax error only V8 finds names its line and column', async () => {
    const runtime = make({ prespawn: 0 })
    const twice = await runtime.run({ program: 'const a = 1\nconst a = 2\nreturn a', bindings: [] })
    expect(twice.error).toEqual({ kind: 'exception', message: "SyntaxError: Identifier 'a' has already been declared (line 2, column 7)" })
    const longer = await runtime.run({ program: 'const total: number = 1\nlet y = 2\n  let total = 3\nreturn y', bindings: [] })
    expect(longer.error?.message).toBe("SyntaxError: Identifier 'total' has already been declared (line 3, column 7)")
    const awaitInPlain = await runtime.run({ program: 'let x = 1\nfunction f() { await 1 }\nreturn 1', bindings: [] })
    expect(awaitInPlain.error?.message).toMatch(/^SyntaxError: await .* \(line 2, column 16\)$/)
    const yieldOutside = await runtime.run({ program: 'if (x) {\n  return 1\n} else {\n  yield 4\n}', bindings: [] })
    expect(yieldOutside.error?.message).toMatch(/^SyntaxError: .* \(line 4, column \d+\)$/)
    // A valid program still runs (the check compiles, never runs, the program).
    expect((await runtime.run({ program: 'const a: number = 1\nreturn await Promise.resolve(a + 1)', bindings: [] })).value).toBe(2)
  })

  it('reports an uncaught error in a timer callback as an exception', async () => {
    const result = await make().run({ program: "setTimeout(() => { throw new Error('late') }, 1)\nawait new Promise(() => {})", bindings: [] })
    expect(result.error?.kind).toBe('exception')
    expect(result.error?.message).toMatch(/late/)
  })

  it('uses a fresh worker for every run', async () => {
    const runtime = make()
    await runtime.run({ program: 'globalThis.leak = 1; return 1', bindings: [] })
    const second = await runtime.run({ program: 'return typeof globalThis.leak', bindings: [] })
    expect(second.value).toBe('undefined')
  })

  it('validates its options', () => {
    expect(() => createBrowserWorkerRuntime({ computeMs: 0 })).toThrow(/computeMs/)
    expect(() => createBrowserWorkerRuntime({ bogus: 1 } as unknown as BrowserWorkerRuntimeOptions)).toThrow(/unknown option/)
    expect(() => createBrowserWorkerRuntime({ workerUrl: 42 as unknown as string })).toThrow(/workerUrl/)
  })
})

describe('the heartbeat compute meter', () => {
  it('a hot loop behind an un-awaited slow binding dies at the compute budget', async () => {
    let bindingSignal: AbortSignal | undefined
    const started = performance.now()
    const result = await make({ computeMs: 300, maxWallMs: 20_000 }).run({
      program: 'tools.slow()\nwhile (true) {}',
      bindings: tools({
        slow: async (_args, { signal }) => {
          bindingSignal = signal
          await sleep(15_000, signal)
        },
      }),
    })
    expect(result.error?.kind).toBe('timeout')
    expect(result.error?.message).toMatch(/compute budget of 300 ms/)
    expect(performance.now() - started).toBeLessThan(10_000)
    expect(bindingSignal?.aborted).toBe(true)
  })

  it('idle time awaiting a slow binding is not charged', async () => {
    // The idle wait (4 s) is far over the budget (1.5 s): charged, it would end the run. Pings
    // answered late because the worker's thread was descheduled count as busy (the meter cannot
    // tell them apart): a 600 ms budget over a 2 s wait was spent that way once in a clean-clone
    // CI beside the node files, so the margin is wider.
    const result = await make({ computeMs: 1_500, maxWallMs: 20_000 }).run({
      program: "await tools.slow()\nreturn 'survived'",
      bindings: tools({ slow: async (_args, { signal }) => sleep(4_000, signal) }),
    })
    expect(result.error).toBeUndefined()
    expect(result.value).toBe('survived')
    expect(result.stats!.wallMs).toBeGreaterThan(3_900)
    expect(result.stats!.computeMs).toBeLessThan(1_500)
  })

  it('a plain hot loop is charged while it has never answered a ping', async () => {
    const result = await make({ computeMs: 200, maxWallMs: 20_000 }).run({ program: 'for (;;) {}', bindings: [] })
    expect(result.error?.kind).toBe('timeout')
    expect(result.error?.message).toMatch(/compute/)
  })

  it('tampering with MessagePort, performance or timers does not let a busy loop pass as idle', async () => {
    const program = [
      'MessagePort.prototype.postMessage = function () {}',
      'Object.defineProperty(MessagePort.prototype, "onmessage", { set() {}, get() { return null } })',
      'performance.now = () => 0',
      'Date.now = () => 0',
      'globalThis.setTimeout = () => 0',
      'while (true) {}',
    ].join('\n')
    const result = await make({ computeMs: 200, maxWallMs: 20_000 }).run({ program, bindings: [] })
    expect(result.error?.kind).toBe('timeout')
    expect(result.error?.message).toMatch(/compute/)
  })

  it('the wall ceiling ends a program that awaits forever', async () => {
    const result = await make({ computeMs: 10_000, maxWallMs: 300 }).run({ program: 'await new Promise(() => {})', bindings: [] })
    expect(result.error?.kind).toBe('timeout')
    expect(result.error?.message).toMatch(/wall-clock ceiling of 300 ms/)
  })
})

describe('worker death', () => {
  it('a worker that closes itself ends the run as worker-exit and rejects the pending binding call', async () => {
    let bindingSignal: AbortSignal | undefined
    const result = await make({ computeMs: 10_000, maxWallMs: 20_000 }).run({
      // `ping`'s answer comes after the host took `slow`'s call (messages are handled in order), so the
      // worker closes with `slow` under way on the host, whatever the load: not before its call arrived.
      program: 'const pending = tools.slow()\nawait tools.ping()\nclose()\nawait pending',
      bindings: tools({
        slow: async (_args, { signal }) => {
          bindingSignal = signal
          await sleep(15_000, signal)
        },
        ping: async () => 'pong',
      }),
    })
    expect(result.error?.kind).toBe('worker-exit')
    expect(bindingSignal?.aborted).toBe(true)
  })

  it('a worker script that throws at start-up ends the run as worker-exit, not a hang', async () => {
    const runtime = make({ workerUrl: new URL('./fixtures/broken-worker.js', import.meta.url), prespawn: 0 })
    const result = await runtime.run({ program: 'return 1', bindings: [] })
    expect(result.error?.kind).toBe('worker-exit')
  })

  it('a worker that never answers the handshake is rejected at the spawn timeout', async () => {
    const runtime = make({ workerUrl: new URL('./fixtures/silent-worker.js', import.meta.url), prespawn: 0, spawnTimeoutMs: 500 })
    const result = await runtime.run({ program: 'return 1', bindings: [] })
    expect(result.error?.kind).toBe('worker-exit')
    expect(result.error?.message).toMatch(/did not start within 500 ms/)
  })

  it('nothing runs after settlement: the worker is terminated', async () => {
    let ticks = 0
    const result = await make().run({
      program: 'setInterval(() => { tools.tick().catch(() => {}) }, 2)\nawait new Promise((r) => setTimeout(r, 40))\nreturn 1',
      bindings: tools({ tick: async () => void ticks++ }),
    })
    expect(result.value).toBe(1)
    const atSettlement = ticks
    expect(atSettlement).toBeGreaterThan(0)
    await sleep(150)
    expect(ticks).toBe(atSettlement)
  })
})

describe('the program is a hostile peer', () => {
  it('messages forged on the worker global never reach the host', async () => {
    const calls: unknown[] = []
    const program = [
      "self.postMessage({ type: 'done', value: 'forged' })",
      "self.postMessage({ type: 'call', id: 1, global: 'tools', name: 'record', args: 'forged' })",
      "self.postMessage({ id: 'x', type: 'RETURN', value: 'forged' })",
      // A forged comlink request on the worker's own global: attach is one-shot, and the listener is gone.
      "self.dispatchEvent(new MessageEvent('message', { data: { id: 'y', type: 'APPLY', path: ['attach'], argumentList: [] } }))",
      "await new Promise((r) => setTimeout(r, 30))",
      "await tools.record('real')",
      "return 'real'",
    ].join('\n')
    const result = await make().run({ program, bindings: tools({ record: async (args) => void calls.push(args) }) })
    expect(result.error).toBeUndefined()
    expect(result.value).toBe('real')
    expect(calls).toEqual(['real'])
  })

  it('the private ports are not reachable from the program', async () => {
    const program = [
      'const found = []',
      'for (const key of Object.getOwnPropertyNames(globalThis)) {',
      '  try { if (globalThis[key] instanceof MessagePort) found.push(key) } catch {}',
      '}',
      'return { found, onmessage: typeof self.onmessage }',
    ].join('\n')
    const result = await make().run({ program, bindings: [] })
    expect(result.value).toEqual({ found: [], onmessage: 'object' })
  })

  it('caps logs and the value with in-band marks', async () => {
    const runtime = make({ maxLogBytes: 64, maxValueBytes: 64 })
    const result = await runtime.run({ program: "for (let i = 0; i < 50; i++) console.log('line ' + i)\nreturn 'x'.repeat(1000)", bindings: [] })
    expect(result.logs.at(-1)?.text).toMatch(/\[log truncated: maxLogBytes of 64 bytes reached\]$/)
    expect(result.logs.length).toBeLessThan(50)
    expect(typeof result.value).toBe('string')
    expect(result.value as string).toMatch(/\[value truncated: larger than maxValueBytes of 64 bytes\]$/)
  })
})

describe('abort and dispose', () => {
  it('aborting ends a hot loop with abort', async () => {
    const controller = new AbortController()
    setTimeout(() => controller.abort(new Error('user pressed abort')), 100)
    const result = await make({ computeMs: 20_000 }).run({ program: 'while (true) {}', bindings: [], signal: controller.signal })
    expect(result.error?.kind).toBe('abort')
    expect(result.error?.message).toMatch(/user pressed abort/)
  })

  it('dispose() aborts in-flight runs, waits for their binding calls, and refuses later runs', async () => {
    const runtime = make()
    let bindingSettled = false
    let markStarted!: () => void
    const bindingStarted = new Promise<void>((resolve) => (markStarted = resolve))
    const running: Promise<CodeRunResult> = runtime.run({
      program: 'await tools.slow()',
      bindings: tools({
        slow: async (_args, { signal }) => {
          markStarted()
          try {
            await sleep(15_000, signal)
          } finally {
            await sleep(20)
            bindingSettled = true
          }
        },
      }),
    })
    await bindingStarted
    await runtime.dispose()
    expect(bindingSettled).toBe(true)
    expect((await running).error?.kind).toBe('abort')
    expect((await runtime.run({ program: 'return 1', bindings: [] })).error?.kind).toBe('abort')
  })
})
