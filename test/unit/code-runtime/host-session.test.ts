/**
 * The host session (src/code-runtime/host-session.ts) against a scripted sandbox: a fake
 * endpoint the test drives synchronously, a fake meter, and the exact results, messages,
 * caps and budgets every message-passing runtime inherits.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { CodeBindingCallOptions, CodeBindingFunction, CodeLogEntry, CodeRunRequest, ParkedRunState, ParkedVm } from '../../../src/code-runtime/contract.js'
import { CodeRunSession, DEFAULT_PARK_AFTER_MS, MAX_INFLIGHT_CALLS, METER_POLL_MS, failedResult, formatProgramError, prepareRun } from '../../../src/code-runtime/host-session.js'
import { DEFAULT_CODE_RUN_LIMITS } from '../../../src/code-runtime/limits.js'
import { callKey } from '../../../src/code-runtime/journal.js'
import type { CodeRunLimits } from '../../../src/code-runtime/limits.js'
import type { WireListener } from '../../../src/code-runtime/wire.js'
import { ToolCallError } from '../../../src/errors.js'

afterEach(() => {
  vi.useRealTimers()
})

interface ScriptOptions {
  readonly functions?: Record<string, CodeBindingFunction>
  readonly limits?: Partial<CodeRunLimits>
  readonly request?: Partial<CodeRunRequest>
  readonly meter?: () => number
  readonly post?: (message: unknown) => void
  readonly collect?: () => void
  readonly terminate?: () => void
  readonly park?: () => void
  readonly parkAfterMs?: number
}

/** A session whose sandbox is this test: `send` delivers a message synchronously, `posted` is what the host sent. */
function scripted(options: ScriptOptions = {}) {
  const posted: Record<string, unknown>[] = []
  let listener: WireListener | undefined
  let started = 0
  let terminated = 0
  const prepared = prepareRun({ program: 'src', bindings: [{ global: 'tools', functions: options.functions ?? {} }], ...options.request })
  if (!prepared.ok) throw new Error(prepared.message)
  const session = new CodeRunSession(prepared.run, 'stripped', { ...DEFAULT_CODE_RUN_LIMITS, ...options.limits }, {
    endpoint: {
      postMessage: (message) => {
        if (options.post !== undefined) options.post(message)
        posted.push(message as Record<string, unknown>)
      },
      addEventListener: (type, l) => {
        if (type === 'message') listener = l
      },
      removeEventListener: (type, l) => {
        if (type === 'message' && listener === l) listener = undefined
      },
      start: () => void started++,
    },
    ...(options.meter === undefined ? {} : { meter: options.meter }),
    ...(options.collect === undefined ? {} : { collect: options.collect }),
    terminate: () => {
      terminated++
      options.terminate?.()
    },
    ...(options.park === undefined ? {} : { park: options.park }),
    ...(options.parkAfterMs === undefined ? {} : { parkAfterMs: options.parkAfterMs }),
  })
  return {
    session,
    posted,
    send: (data: unknown) => listener?.({ data }),
    get listening() {
      return listener !== undefined
    },
    get started() {
      return started
    },
    get terminated() {
      return terminated
    },
  }
}

const call = (id: number, name: string, args: unknown = null) => ({ type: 'call', id, global: 'tools', name, args })
const log = (text: string, level = 'log') => ({ type: 'log', source: 'console', level, text })
const turn = () => new Promise((resolve) => setTimeout(resolve, 0))

describe('prepareRun', () => {
  const message = (request: unknown) => {
    const out = prepareRun(request)
    return out.ok ? undefined : out.message
  }

  it('refuses malformed requests with a TypeError message', () => {
    expect(message(null)).toBe('TypeError: run() needs a request object')
    expect(message('return 1')).toBe('TypeError: run() needs a request object')
    expect(message({})).toBe('TypeError: request.program must be a string')
    expect(message({ program: 'x', signal: {} })).toBe('TypeError: request.signal must be an AbortSignal')
    expect(message({ program: 'x', onLog: 'log' })).toBe('TypeError: request.onLog must be a function')
    expect(message({ program: 'x', bindings: {} })).toBe('TypeError: request.bindings must be an array')
    expect(message({ program: 'x', bindings: [null] })).toBe('TypeError: binding global undefined is not a JavaScript identifier')
    expect(message({ program: 'x', bindings: [{ global: 'console', functions: {} }] })).toBe('TypeError: binding global "console" is reserved by the runtime')
    expect(message({ program: 'x', bindings: [{ global: 't', functions: {} }, { global: 't', functions: {} }] })).toBe('TypeError: binding global "t" appears twice')
    expect(message({ program: 'x', bindings: [{ global: 't' }] })).toBe('TypeError: bindings "t".functions must be an object')
    expect(message({ program: 'x', bindings: [{ global: 't', functions: null }] })).toBe('TypeError: bindings "t".functions must be an object')
  })

  it('checks request.durable: an object whose onPark is a function and whose resume is a parked run', () => {
    expect(message({ program: 'x', durable: null })).toBe('TypeError: request.durable must be an object')
    expect(message({ program: 'x', durable: 'yes' })).toBe('TypeError: request.durable must be an object')
    expect(message({ program: 'x', durable: { onPark: 'store' } })).toBe('TypeError: request.durable.onPark must be a function')
    expect(message({ program: 'x', durable: { resume: { version: 1 } } })).toBe('TypeError: request.durable.resume is not the state of a parked run')
    expect(message({ program: 'x', durable: {} })).toBeUndefined()
    const onPark = () => undefined
    const resume = { version: 1, vm: { clockMs: 0, timers: [], journal: { inputs: [], reads: [], ops: '', calls: [] } }, logs: [], logBytes: 0, logTruncated: false, busyMs: 0, wallMs: 0, lastCallId: 0, calls: [] }
    const out = prepareRun({ program: 'x', durable: { onPark, resume } })
    expect(out.ok && out.run.onPark).toBe(onPark)
    expect(out.ok && out.run.resume).toBe(resume)
    const none = prepareRun({ program: 'x' })
    expect(none.ok && [none.run.onPark, none.run.resume]).toEqual([undefined, undefined])
  })

  it('marks a variadic namespace, and only when variadic is true', () => {
    const out = prepareRun({ program: 'x', bindings: [{ global: 'v', functions: {}, variadic: true }, { global: 'w', functions: {}, variadic: 'yes' }] })
    expect(out.ok && out.run.namespaces).toStrictEqual([{ global: 'v', names: [], variadic: true }, { global: 'w', names: [] }])
  })

  it('snapshots own function-valued entries only, in order', () => {
    const a = async () => 1
    const functions = Object.assign(Object.create({ inherited: a }) as Record<string, unknown>, { a, notFn: 3, b: a })
    Object.defineProperty(functions, 'getter', { get: () => a, enumerable: true })
    const signal = new AbortController().signal
    const onLog = () => {}
    const out = prepareRun({ program: 'p', bindings: [{ global: 'tools', functions }, { global: 'more', functions: {} }], signal, onLog })
    expect(out.ok).toBe(true)
    if (!out.ok) return
    expect(out.run.namespaces).toEqual([
      { global: 'tools', names: ['a', 'b'] },
      { global: 'more', names: [] },
    ])
    expect([...out.run.functions.get('tools')!.keys()]).toEqual(['a', 'b'])
    expect(out.run.signal).toBe(signal)
    expect(out.run.onLog).toBe(onLog)
    expect(out.run.program).toBe('p')
    functions.c = a
    expect(out.run.functions.get('tools')!.has('c')).toBe(false)
    const bare = prepareRun({ program: 'q' })
    expect(bare.ok && bare.run.namespaces).toEqual([])
  })
})

describe('formatProgramError and failedResult', () => {
  it('formats name and message, and up to five program frames', () => {
    expect(formatProgramError({ name: 'TypeError', message: 'bad' })).toBe('TypeError: bad')
    expect(formatProgramError({ name: '', message: 'only message' })).toBe('only message')
    expect(formatProgramError({ name: 'OnlyName', message: '' })).toBe('OnlyName')
    const stack = ['E: m', '  at f (program.ts:1:2)', '  at node:internal', ...Array.from({ length: 6 }, (_, i) => `  at g${i} (program.ts:${i + 2}:1)`)].join('\n')
    expect(formatProgramError({ name: 'E', message: 'm', stack })).toBe(
      ['E: m', '    at f (program.ts:1:2)', '    at g0 (program.ts:2:1)', '    at g1 (program.ts:3:1)', '    at g2 (program.ts:4:1)', '    at g3 (program.ts:5:1)'].join('\n'),
    )
    expect(formatProgramError({ name: 'E', message: 'm', stack: 'at program.ts without a colon\nat other.ts:1:1' })).toBe('E: m')
  })

  it('failedResult is a frozen failure with copied logs and zero stats', () => {
    const logs: CodeLogEntry[] = [{ source: 'console', level: 'log', text: 'a' }]
    const result = failedResult('timeout', 'slow', logs)
    expect(result).toEqual({ logs, error: { kind: 'timeout', message: 'slow' }, stats: { wallMs: 0, computeMs: 0 } })
    expect(result.logs).not.toBe(logs)
    expect(Object.isFrozen(result) && Object.isFrozen(result.logs) && Object.isFrozen(result.error) && Object.isFrozen(result.stats)).toBe(true)
    expect(failedResult('abort', 'x').logs).toEqual([])
  })
})

describe('CodeRunSession: starting', () => {
  it('sends the start message once, with the stripped program, namespaces and caps', () => {
    const s = scripted({ functions: { a: async () => 1 }, limits: { maxLogBytes: 11, maxValueBytes: 22 } })
    expect(s.session.settled).toBe(false)
    expect(s.session.wallElapsedMs()).toBe(0)
    s.session.start()
    s.session.start()
    expect(s.posted).toEqual([{ type: 'start', program: 'stripped', namespaces: [{ global: 'tools', names: ['a'] }], maxLogBytes: 11, maxValueBytes: 22 }])
    expect(s.started).toBe(1)
    expect(s.listening).toBe(true)
    s.session.fail('abort', 'end')
  })

  it('an already-aborted signal settles at once, naming the reason', async () => {
    for (const [reason, text] of [
      [new Error('user left'), 'the run was aborted (user left)'],
      ['stop', 'the run was aborted (stop)'],
      [42, 'the run was aborted'],
      [new Error(''), 'the run was aborted'],
    ] as const) {
      const controller = new AbortController()
      controller.abort(reason)
      const s = scripted({ request: { signal: controller.signal } })
      s.session.start()
      const result = await s.session.result
      expect(result.error).toEqual({ kind: 'abort', message: text })
      expect(s.posted).toEqual([])
      expect(s.terminated).toBe(1)
    }
  })

  it('an abort during the run settles it and stops listening', async () => {
    const controller = new AbortController()
    const s = scripted({ request: { signal: controller.signal } })
    s.session.start()
    controller.abort(new Error('bye'))
    const result = await s.session.result
    expect(result.error).toEqual({ kind: 'abort', message: 'the run was aborted (bye)' })
    expect(s.listening).toBe(false)
    expect(s.session.signal.aborted).toBe(true)
  })

  it('a program that cannot be posted ends the run as worker-exit', async () => {
    const s = scripted({
      post: () => {
        throw new Error('port closed')
      },
    })
    s.session.start()
    expect((await s.session.result).error).toEqual({ kind: 'worker-exit', message: 'the program could not be sent to the sandbox: port closed' })
  })
})

describe('CodeRunSession: outcomes', () => {
  it('done with a value settles with it, frozen, with stats', async () => {
    const s = scripted()
    s.session.start()
    s.send({ type: 'ready' })
    s.send({ type: 'done', value: { a: 1 } })
    const result = await s.session.result
    expect(result.value).toEqual({ a: 1 })
    expect(result.error).toBeUndefined()
    expect(Object.keys(result)).toEqual(['value', 'logs', 'stats'])
    expect(Object.isFrozen(result) && Object.isFrozen(result.logs) && Object.isFrozen(result.stats)).toBe(true)
    expect(result.stats?.computeMs).toBe(0)
    expect(result.stats?.wallMs).toBeGreaterThanOrEqual(0)
    expect(s.session.settled).toBe(true)
    expect(s.terminated).toBe(1)
  })

  it('done without a value has no value key; done with an error is an exception with the program frames', async () => {
    const s = scripted()
    s.session.start()
    s.send({ type: 'done' })
    expect(Object.keys(await s.session.result)).toEqual(['logs', 'stats'])
    const e = scripted()
    e.session.start()
    e.send({ type: 'done', error: { name: 'RangeError', message: 'r', stack: 'RangeError: r\n at x (program.ts:2:3)' } })
    const result = await e.session.result
    expect(result.error).toEqual({ kind: 'exception', message: 'RangeError: r\n    at x (program.ts:2:3)' })
    expect(Object.isFrozen(result.error)).toBe(true)
    expect(Object.hasOwn(result, 'value')).toBe(false)
  })

  it('a rendered value is kept and a warning says why', async () => {
    const s = scripted()
    s.session.start()
    s.send({ type: 'done', value: 'Map(1) {…}', rendered: true })
    const result = await s.session.result
    expect(result.value).toBe('Map(1) {…}')
    expect(result.logs).toEqual([{ source: 'console', level: 'warn', text: '[toolyard] the returned value is not structured-cloneable; it was replaced by its text rendering' }])
  })

  it('caps the value: an oversized rendering is cut to the cap, a large value rendered then cut', async () => {
    const s = scripted({ limits: { maxValueBytes: 10 } })
    s.session.start()
    s.send({ type: 'done', value: 'é'.repeat(20), rendered: true, oversized: true })
    expect((await s.session.result).value).toBe(`${'é'.repeat(5)}… [value truncated: larger than maxValueBytes of 10 bytes]`)
    expect((await s.session.result).logs).toEqual([])
    const big = scripted({ limits: { maxValueBytes: 10 } })
    big.session.start()
    big.send({ type: 'done', value: { k: 'abcdefghijkl' } })
    expect((await big.session.result).value).toBe('{ k: "abcd… [value truncated: larger than maxValueBytes of 10 bytes]')
    const oversizedObject = scripted({ limits: { maxValueBytes: 10 } })
    oversizedObject.session.start()
    oversizedObject.send({ type: 'done', value: 'short', rendered: true, oversized: true })
    expect((await oversizedObject.session.result).value).toBe('short… [value truncated: larger than maxValueBytes of 10 bytes]')
    const exact = scripted({ limits: { maxValueBytes: 10 } })
    exact.session.start()
    exact.send({ type: 'done', value: 'abcdefgh' })
    expect((await exact.session.result).value).toBe('abcdefgh')
  })

  it('a value the sandbox sent nested deeper than 100 levels anyway is rendered as text, within the cap', async () => {
    let deep: unknown = 1
    for (let i = 0; i < 150; i++) deep = [deep]
    const s = scripted({ limits: { maxValueBytes: 1_000 } })
    s.session.start()
    s.send({ type: 'done', value: deep })
    expect((await s.session.result).value).toBe(`${'['.repeat(32)}[Array]${']'.repeat(32)}… [value rendered as text: nested deeper than 100 levels]`)

  })

  it('the first outcome wins; later messages and failures change nothing', async () => {
    const s = scripted()
    s.session.start()
    s.send({ type: 'done', value: 1 })
    s.send({ type: 'done', value: 2 })
    s.session.fail('timeout', 'late')
    s.send(log('late'))
    const result = await s.session.result
    expect(result.value).toBe(1)
    expect(result.error).toBeUndefined()
    expect(result.logs).toEqual([])
    expect(s.terminated).toBe(1)
  })

  it('collects platform output before settling; a throwing collect or terminate changes nothing', async () => {
    let s: ReturnType<typeof scripted>
    s = scripted({
      collect: () => {
        s.session.log({ source: 'stdout', level: 'log', text: 'flushed' })
        throw new Error('collect broke')
      },
      terminate: () => {
        throw new Error('terminate broke')
      },
    })
    s.session.start()
    s.send({ type: 'done', value: 3 })
    const result = await s.session.result
    expect(result.value).toBe(3)
    expect(result.logs.map((l) => l.text)).toEqual(['flushed'])
  })
})

describe('CodeRunSession: logs', () => {
  it('keeps lines until the cap, counting UTF-8 bytes plus one a line, then one truncated line', async () => {
    const seen: string[] = []
    const s = scripted({ limits: { maxLogBytes: 12 }, request: { onLog: (e) => seen.push(e.text) } })
    s.session.start()
    s.send(log('abcd'))
    s.send(log('é', 'warn'))
    s.send(log('xyzw'))
    s.send(log('never'))
    s.session.log({ source: 'stderr', level: 'error', text: 'never either' })
    s.send({ type: 'done' })
    const result = await s.session.result
    // 'abcd' = 5, 'é' = 3: 8 used, 4 left: 'xyzw' + newline is 5 → cut to 3 bytes.
    expect(result.logs).toEqual([
      { source: 'console', level: 'log', text: 'abcd' },
      { source: 'console', level: 'warn', text: 'é' },
      { source: 'console', level: 'log', text: 'xyz… [log truncated: maxLogBytes of 12 bytes reached]' },
    ])
    expect(seen).toEqual(result.logs.map((l) => l.text))
    expect(result.logs.every((l) => Object.isFrozen(l))).toBe(true)
  })

  it('a line exactly filling the cap is kept whole', async () => {
    const s = scripted({ limits: { maxLogBytes: 5 } })
    s.session.start()
    s.send(log('abcd'))
    s.send(log(''))
    s.send({ type: 'done' })
    expect((await s.session.result).logs.map((l) => l.text)).toEqual(['abcd', '… [log truncated: maxLogBytes of 5 bytes reached]'])
  })

  it('counts a very long line by a prefix of it, and a throwing onLog is ignored', async () => {
    const s = scripted({
      limits: { maxLogBytes: 8 },
      request: {
        onLog: () => {
          throw new Error('listener')
        },
      },
    })
    s.session.start()
    s.send(log('é'.repeat(100_000)))
    s.send({ type: 'done' })
    expect((await s.session.result).logs.map((l) => l.text)).toEqual(['ééé… [log truncated: maxLogBytes of 8 bytes reached]'])
  })
})

describe('CodeRunSession: binding calls', () => {
  it('refuses arguments a sandbox sent nested deeper than 100 levels anyway; the binding never runs', async () => {
    const received: unknown[] = []
    const s = scripted({ functions: { echo: async (args) => (received.push(args), 'ok') } })
    s.session.start()
    const nest = (levels: number) => {
      let v: unknown = 1
      for (let i = 0; i < levels; i++) v = { v }
      return v
    }
    s.send(call(1, 'echo', nest(101)))
    s.send(call(2, 'echo', nest(100)))
    await s.session.bindingsSettled()
    await turn()
    expect(s.posted.slice(1)).toEqual([
      { type: 'reply', id: 1, ok: false, message: 'the arguments nest deeper than 100 levels; flatten them' },
      { type: 'reply', id: 2, ok: true, value: 'ok' },
    ])
    expect(received).toHaveLength(1)
  })

  it('replies with the value, or the error with its tool name', async () => {
    const seen: CodeBindingCallOptions[] = []
    const s = scripted({
      limits: { maxWallMs: 60_000 },
      functions: {
        ok: async (args, options) => {
          seen.push(options)
          return { got: args }
        },
        fails: async () => {
          throw new ToolCallError('inner', 'denied')
        },
        plain: async () => {
          throw new Error('plain')
        },
      },
    })
    s.session.start()
    const before = Date.now()
    s.send(call(1, 'ok', { x: 1 }))
    s.send(call(2, 'fails'))
    s.send(call(3, 'plain'))
    s.send(call(4, 'missing'))
    await s.session.bindingsSettled()
    await turn()
    // Exactly these keys: no toolName or code key unless the binding threw a ToolCallError.
    expect(s.posted.slice(1)).toStrictEqual([
      { type: 'reply', id: 4, ok: false, message: 'unknown binding tools["missing"]' },
      { type: 'reply', id: 1, ok: true, value: { got: { x: 1 } } },
      { type: 'reply', id: 2, ok: false, message: 'denied', toolName: 'inner', code: 'TOOL_FAILED' },
      { type: 'reply', id: 3, ok: false, message: 'plain' },
    ])
    expect(seen[0]!.signal).toBe(s.session.signal)
    expect(seen[0]!.deadline).toBeGreaterThanOrEqual(before + 59_000)
    expect(seen[0]!.deadline).toBeLessThanOrEqual(Date.now() + 60_000)
    s.session.fail('abort', 'end')
  })

  it('a reply the endpoint cannot send becomes an error reply; an error reply that cannot be sent is dropped', async () => {
    let refuse = 2
    const s = scripted({
      functions: { fn: async () => 'v' },
      post: (message) => {
        if ((message as { type: string }).type === 'reply' && refuse-- > 0) throw new Error('DataCloneError')
      },
    })
    s.session.start()
    s.send(call(1, 'fn'))
    await s.session.bindingsSettled()
    await turn()
    expect(s.posted.slice(1)).toEqual([])
    refuse = 1
    s.send(call(2, 'fn'))
    await s.session.bindingsSettled()
    await turn()
    expect(s.posted.slice(1)).toEqual([{ type: 'reply', id: 2, ok: false, message: "the binding's result cannot be sent to the program (DataCloneError)" }])
    s.session.fail('abort', 'end')
  })

  it('drops replayed ids and stops the run past the in-flight cap', async () => {
    expect(MAX_INFLIGHT_CALLS).toBe(50_000)
    let calls = 0
    const s = scripted({ functions: { hang: () => ((calls++, new Promise(() => {}))) } })
    s.session.start()
    s.send(call(5, 'hang'))
    s.send(call(5, 'hang'))
    s.send(call(4, 'hang'))
    expect(calls).toBe(1)
    for (let id = 6; id < MAX_INFLIGHT_CALLS + 5; id++) s.send(call(id, 'hang'))
    expect(calls).toBe(MAX_INFLIGHT_CALLS)
    expect(s.session.settled).toBe(false)
    s.send(call(MAX_INFLIGHT_CALLS + 5, 'hang'))
    const result = await s.session.result
    expect(result.error).toEqual({
      kind: 'exception',
      message: `the program had more than ${MAX_INFLIGHT_CALLS} binding calls in flight at once; await calls (or batch them) instead of starting them all`,
    })
    expect(calls).toBe(MAX_INFLIGHT_CALLS)
  })

  it('bindingsSettled waits for every call, and replies after settlement are never sent', async () => {
    let release!: () => void
    const s = scripted({ functions: { slow: () => new Promise<string>((resolve) => (release = () => resolve('late'))) } })
    s.session.start()
    s.send(call(1, 'slow'))
    s.send({ type: 'done', value: 0 })
    let settled = false
    const waiting = s.session.bindingsSettled().then(() => (settled = true))
    await turn()
    expect(settled).toBe(false)
    release()
    await waiting
    expect(s.posted.filter((m) => m.type === 'reply')).toEqual([])
  })
})

describe('CodeRunSession: budgets', () => {
  it('the wall clock ends the run at maxWallMs, and held time does not count', async () => {
    vi.useFakeTimers()
    const s = scripted({ limits: { maxWallMs: 100 } })
    s.session.start()
    vi.advanceTimersByTime(40)
    const release = s.session.holdWallClock()
    const inner = s.session.holdWallClock()
    vi.advanceTimersByTime(500)
    expect(s.session.settled).toBe(false)
    release()
    release()
    vi.advanceTimersByTime(100)
    expect(s.session.settled).toBe(false)
    inner()
    expect(s.session.wallElapsedMs()).toBe(40)
    vi.advanceTimersByTime(59)
    expect(s.session.settled).toBe(false)
    vi.advanceTimersByTime(1)
    expect(s.session.settled).toBe(true)
    const result = await s.session.result
    expect(result.error).toEqual({ kind: 'timeout', message: 'wall-clock ceiling of 100 ms reached' })
    expect(result.stats?.wallMs).toBe(700)
  })

  it('wallElapsedMs excludes an open hold; a hold after settlement is a no-op', async () => {
    vi.useFakeTimers()
    const s = scripted({ limits: { maxWallMs: 1_000 } })
    s.session.start()
    vi.advanceTimersByTime(10)
    const release = s.session.holdWallClock()
    vi.advanceTimersByTime(300)
    expect(s.session.wallElapsedMs()).toBe(10)
    release()
    vi.advanceTimersByTime(5)
    expect(s.session.wallElapsedMs()).toBe(15)
    s.session.fail('abort', 'x')
    const late = s.session.holdWallClock()
    late()
    vi.advanceTimersByTime(10_000)
    expect((await s.session.result).error?.kind).toBe('abort')
  })

  it('a binding call’s holdWallClock and deadline follow the session', async () => {
    vi.useFakeTimers()
    let options: CodeBindingCallOptions | undefined
    const s = scripted({ limits: { maxWallMs: 100 }, functions: { f: (_a, o) => ((options = o), new Promise(() => {})) } })
    s.session.start()
    vi.advanceTimersByTime(30)
    s.send(call(1, 'f'))
    expect(options!.deadline).toBe(Date.now() + 70)
    const release = options!.holdWallClock!()
    vi.advanceTimersByTime(1_000)
    expect(s.session.settled).toBe(false)
    release()
    vi.advanceTimersByTime(70)
    expect(s.session.settled).toBe(true)
  })

  it('the compute budget ends the run once the meter reaches computeMs', async () => {
    vi.useFakeTimers()
    let busy = 1_000
    const s = scripted({ limits: { computeMs: 50 }, meter: () => busy })
    s.session.start()
    busy += 49
    vi.advanceTimersByTime(METER_POLL_MS)
    expect(s.session.settled).toBe(false)
    busy += 1
    vi.advanceTimersByTime(METER_POLL_MS)
    const result = await s.session.result
    expect(result.error).toEqual({ kind: 'timeout', message: 'compute budget of 50 ms exhausted' })
    expect(result.stats?.computeMs).toBe(50)
  })

  it('polls at most every computeMs when that is shorter, ignores a throwing meter, and reports busy time at settlement', async () => {
    vi.useFakeTimers()
    let busy = 0
    let throwing = false
    const s = scripted({
      limits: { computeMs: 3 },
      meter: () => {
        if (throwing) throw new Error('gone')
        return busy
      },
    })
    s.session.start()
    busy = 3
    vi.advanceTimersByTime(3)
    expect(s.session.settled).toBe(true)
    const ok = scripted({ limits: { computeMs: 1_000 }, meter: () => busy })
    busy = 0
    ok.session.start()
    throwing = true
    vi.advanceTimersByTime(METER_POLL_MS * 3)
    throwing = false
    busy = 7
    ok.send({ type: 'done', value: 1 })
    expect((await ok.session.result).stats?.computeMs).toBe(7)
    expect(METER_POLL_MS).toBe(10)
  })
})

describe('CodeRunSession: parking', () => {
  const vm: ParkedVm = { clockMs: 5, timers: [[1, 20]], journal: { inputs: ['start'], reads: [], ops: '', calls: ['k'] } }
  /** A binding that waits for a person: it holds the wall clock and never answers (or answers when told). */
  const waiting = () => {
    const releases: Array<() => void> = []
    const answers: Array<(value: unknown) => void> = []
    const ask: CodeBindingFunction = (_args, options) => {
      releases.push(options.holdWallClock!())
      return new Promise((resolve) => answers.push(resolve))
    }
    return { ask, releases, answers }
  }

  it('asks to park once every unsettled call has held the wall clock for parkAfterMs, and asks once', () => {
    vi.useFakeTimers()
    let asks = 0
    const w = waiting()
    const s = scripted({ functions: { ask: w.ask }, park: () => void asks++, parkAfterMs: 50 })
    s.session.start()
    s.send(call(1, 'ask'))
    vi.advanceTimersByTime(49)
    expect(asks).toBe(0)
    vi.advanceTimersByTime(1)
    expect(asks).toBe(1)
    vi.advanceTimersByTime(500)
    expect(asks).toBe(1)
    expect(s.session.isParked).toBe(false)
    s.session.fail('abort', 'end')
  })

  it(`waits ${DEFAULT_PARK_AFTER_MS} ms when the platform names no parkAfterMs`, () => {
    vi.useFakeTimers()
    let asks = 0
    const w = waiting()
    const s = scripted({ functions: { ask: w.ask }, park: () => void asks++ })
    s.session.start()
    s.send(call(1, 'ask'))
    vi.advanceTimersByTime(DEFAULT_PARK_AFTER_MS - 1)
    expect(asks).toBe(0)
    vi.advanceTimersByTime(1)
    expect(asks).toBe(1)
    expect(DEFAULT_PARK_AFTER_MS).toBe(1_000)
    s.session.fail('abort', 'end')
  })

  it('a call that holds no wall clock (a machine is working) keeps the run from parking; once it settles the wait starts again', async () => {
    vi.useFakeTimers()
    let asks = 0
    const w = waiting()
    let answer!: (value: unknown) => void
    const s = scripted({ functions: { ask: w.ask, work: () => new Promise((resolve) => (answer = resolve)) }, park: () => void asks++, parkAfterMs: 50 })
    s.session.start()
    s.send(call(1, 'ask'))
    vi.advanceTimersByTime(30)
    s.send(call(2, 'work'))
    vi.advanceTimersByTime(500)
    expect(asks).toBe(0)
    answer('done')
    await vi.advanceTimersByTimeAsync(0)
    vi.advanceTimersByTime(49)
    expect(asks).toBe(0)
    vi.advanceTimersByTime(1)
    expect(asks).toBe(1)
    s.session.fail('abort', 'end')
  })

  it('no call at all is not a wait for people; a released hold or a settled run cancels the ask', async () => {
    vi.useFakeTimers()
    let asks = 0
    const w = waiting()
    const s = scripted({ functions: { ask: w.ask }, park: () => void asks++, parkAfterMs: 50 })
    s.session.start()
    const idle = s.session.holdWallClock()
    vi.advanceTimersByTime(100)
    expect(asks).toBe(0)
    idle()
    s.send(call(1, 'ask'))
    vi.advanceTimersByTime(40)
    w.releases[0]!()
    vi.advanceTimersByTime(100)
    expect(asks).toBe(0)
    const t = scripted({ functions: { ask: w.ask }, park: () => void asks++, parkAfterMs: 50 })
    t.session.start()
    t.send(call(1, 'ask'))
    vi.advanceTimersByTime(40)
    t.send({ type: 'done', value: 1 })
    vi.advanceTimersByTime(100)
    expect(asks).toBe(0)
    expect((await t.session.result).value).toBe(1)
  })

  it('a refused park is asked again after another parkAfterMs', () => {
    vi.useFakeTimers()
    let asks = 0
    const w = waiting()
    const s = scripted({ functions: { ask: w.ask }, park: () => void asks++, parkAfterMs: 50 })
    s.session.start()
    s.send(call(1, 'ask'))
    vi.advanceTimersByTime(50)
    expect(asks).toBe(1)
    s.session.parkRefused()
    vi.advanceTimersByTime(49)
    expect(asks).toBe(1)
    vi.advanceTimersByTime(1)
    expect(asks).toBe(2)
    s.session.fail('abort', 'end')
  })

  it('parked: the meter stops while the VM is parked and runs again when it resumes, and a resumed run may park again', async () => {
    vi.useFakeTimers()
    let asks = 0
    let busy = 0
    const w = waiting()
    const s = scripted({ functions: { ask: w.ask }, park: () => void asks++, parkAfterMs: 50, meter: () => busy, limits: { computeMs: 100 } })
    s.session.start()
    s.send(call(1, 'ask'))
    vi.advanceTimersByTime(50)
    s.session.parked(true)
    expect(s.session.isParked).toBe(true)
    // Parked: no ask, and the meter is not read (busy time past the budget goes unseen).
    busy = 500
    vi.advanceTimersByTime(1_000)
    expect(asks).toBe(1)
    expect(s.session.settled).toBe(false)
    busy = 10
    s.session.parked(false)
    expect(s.session.isParked).toBe(false)
    vi.advanceTimersByTime(50)
    expect(asks).toBe(2)
    busy = 100
    vi.advanceTimersByTime(METER_POLL_MS)
    expect((await s.session.result).error).toEqual({ kind: 'timeout', message: 'compute budget of 100 ms exhausted' })
    // After settlement, parked() changes nothing.
    s.session.parked(false)
    vi.advanceTimersByTime(1_000)
    expect(asks).toBe(2)
  })

  it('snapshot: the whole state of the run with its VM parked', () => {
    vi.useFakeTimers()
    const w = waiting()
    const s = scripted({ functions: { ask: w.ask }, park: () => undefined, parkAfterMs: 50, limits: { maxLogBytes: 4 } })
    s.session.start()
    vi.advanceTimersByTime(7)
    s.send(log('ab'))
    s.send(log('cdef'))
    s.send(call(3, 'ask', { q: 1 }))
    vi.advanceTimersByTime(100)
    const state = s.session.snapshot(vm)
    expect(state).toEqual({
      version: 1,
      vm,
      logs: [
        { source: 'console', level: 'log', text: 'ab' },
        { source: 'console', level: 'log', text: '… [log truncated: maxLogBytes of 4 bytes reached]' },
      ],
      logBytes: 4,
      logTruncated: true,
      busyMs: 0,
      wallMs: 7,
      lastCallId: 3,
      calls: [{ id: 3, global: 'tools', name: 'ask', args: { q: 1 } }],
    })
    s.session.fail('abort', 'end')
  })

  it('startParked: logs, time and compute carry over, the calls it waited on run again, and the VM stays parked', async () => {
    vi.useFakeTimers()
    const seen: unknown[] = []
    // The journal recorded the waiting call as the VM posted it: it is made again only if it matches.
    const waiting = { type: 'call', id: 4, global: 'tools', name: 'ask', args: { again: true } }
    const state: ParkedRunState = {
      version: 1,
      vm: { ...vm, journal: { ...vm.journal, calls: [...vm.journal.calls, callKey(JSON.stringify(waiting))] } },
      logs: [{ source: 'console', level: 'log', text: 'before' }],
      logBytes: 7,
      logTruncated: false,
      busyMs: 12,
      wallMs: 30,
      lastCallId: 4,
      calls: [{ id: 4, global: 'tools', name: 'ask', args: { again: true } }],
    }
    const s = scripted({ functions: { ask: async (args) => (seen.push(args), 'yes') }, park: () => undefined, limits: { maxWallMs: 100 } })
    s.session.startParked(state)
    s.session.startParked(state)
    s.session.start()
    expect(s.session.isParked).toBe(true)
    expect(s.session.wallElapsedMs()).toBe(30)
    expect(seen).toEqual([{ again: true }])
    expect(s.started).toBe(1)
    await vi.advanceTimersByTimeAsync(0)
    // No start message: the program is in the journal. The re-made call's answer goes to the VM.
    expect(s.posted).toEqual([{ type: 'reply', id: 4, ok: true, value: 'yes' }])
    // A replayed call number is dropped; the next one runs.
    s.send(call(4, 'ask', 'replayed'))
    s.send(call(5, 'ask', 'new'))
    await vi.advanceTimersByTimeAsync(0)
    expect(seen).toEqual([{ again: true }, 'new'])
    s.send(log('after'))
    // The wall clock counts from the parked run's 30 ms.
    await vi.advanceTimersByTimeAsync(69)
    expect(s.session.settled).toBe(false)
    await vi.advanceTimersByTimeAsync(1)
    const result = await s.session.result
    expect(result.error).toEqual({ kind: 'timeout', message: 'wall-clock ceiling of 100 ms reached' })
    expect(result.logs.map((l) => l.text)).toEqual(['before', 'after'])
    expect(result.stats).toEqual({ wallMs: 100, computeMs: 12 })
  })

  it('startParked keeps a truncated log truncated and counts its bytes', async () => {
    const state: ParkedRunState = { version: 1, vm, logs: [{ source: 'console', level: 'log', text: 'abc' }], logBytes: 4, logTruncated: false, busyMs: 0, wallMs: 0, lastCallId: 0, calls: [] }
    const s = scripted({ limits: { maxLogBytes: 6 } })
    s.session.startParked(state)
    s.send(log('xy'))
    s.send(log('z'))
    s.send({ type: 'done' })
    expect((await s.session.result).logs.map((l) => l.text)).toEqual(['abc', 'x… [log truncated: maxLogBytes of 6 bytes reached]'])
    const truncated = scripted()
    truncated.session.startParked({ ...state, logTruncated: true })
    truncated.send(log('more'))
    truncated.send({ type: 'done' })
    expect((await truncated.session.result).logs.map((l) => l.text)).toEqual(['abc'])
  })

  it('startParked with an aborted signal settles at once; an abort later ends the parked run', async () => {
    const state: ParkedRunState = { version: 1, vm, logs: [], logBytes: 0, logTruncated: false, busyMs: 0, wallMs: 0, lastCallId: 0, calls: [] }
    const gone = new AbortController()
    gone.abort('left')
    const s = scripted({ request: { signal: gone.signal } })
    s.session.startParked(state)
    expect((await s.session.result).error).toEqual({ kind: 'abort', message: 'the run was aborted (left)' })
    expect(s.listening).toBe(false)
    const later = new AbortController()
    const t = scripted({ request: { signal: later.signal } })
    t.session.startParked(state)
    expect(t.listening).toBe(true)
    later.abort('bye')
    expect((await t.session.result).error).toEqual({ kind: 'abort', message: 'the run was aborted (bye)' })
  })
})

describe('CodeRunSession: timers and accounts', () => {
  it('holds no timer while the wall clock is held, and none after settlement', () => {
    vi.useFakeTimers()
    let busy = 0
    const s = scripted({ limits: { maxWallMs: 1_000 }, meter: () => busy, park: () => undefined, parkAfterMs: 50, functions: { ask: (_a, o) => (o.holdWallClock!(), new Promise(() => {})) } })
    const early = s.session.holdWallClock()
    early()
    // Released before the start: no wall timer yet.
    expect(vi.getTimerCount()).toBe(0)
    s.session.start()
    // The wall timer and the meter.
    expect(vi.getTimerCount()).toBe(2)
    const release = s.session.holdWallClock()
    expect(vi.getTimerCount()).toBe(1)
    release()
    expect(vi.getTimerCount()).toBe(2)
    // A resumed VM restarts no second meter.
    s.session.parked(false)
    expect(vi.getTimerCount()).toBe(2)
    // A call waiting for a person: the park timer too.
    s.send(call(1, 'ask'))
    expect(vi.getTimerCount()).toBe(2)
    vi.advanceTimersByTime(10)
    const held = s.session.holdWallClock()
    s.session.fail('abort', 'end')
    expect(vi.getTimerCount()).toBe(0)
    held()
    expect(vi.getTimerCount()).toBe(0)
    busy = 1
  })

  it('settling clears a pending park timer', () => {
    vi.useFakeTimers()
    const s = scripted({ park: () => undefined, parkAfterMs: 50, functions: { ask: (_a, o) => (o.holdWallClock!(), new Promise(() => {})) } })
    s.session.start()
    s.send(call(1, 'ask'))
    // The park timer (the wall timer is cleared while held).
    expect(vi.getTimerCount()).toBe(1)
    s.session.fail('abort', 'end')
    expect(vi.getTimerCount()).toBe(0)
  })

  it('a wall timer that fires before the clock says the ceiling is reached waits for the rest', async () => {
    vi.useFakeTimers()
    let lag = 0
    const clock = globalThis.performance.now.bind(globalThis.performance)
    const spy = vi.spyOn(globalThis.performance, 'now').mockImplementation(() => clock() - lag)
    try {
      const s = scripted({ limits: { maxWallMs: 100 } })
      s.session.start()
      lag = 1
      vi.advanceTimersByTime(100)
      expect(s.session.settled).toBe(false)
      vi.advanceTimersByTime(1)
      expect((await s.session.result).error).toEqual({ kind: 'timeout', message: 'wall-clock ceiling of 100 ms reached' })
    } finally {
      spy.mockRestore()
    }
  })

  it('a hold taken after settlement holds nothing: the elapsed time runs on', () => {
    vi.useFakeTimers()
    const s = scripted()
    s.session.start()
    vi.advanceTimersByTime(10)
    s.session.fail('abort', 'end')
    const late = s.session.holdWallClock()
    vi.advanceTimersByTime(5)
    expect(s.session.wallElapsedMs()).toBe(15)
    late()
  })

  it('stats.wallMs counts from the start, not from the clock’s origin', async () => {
    vi.useFakeTimers()
    vi.advanceTimersByTime(500)
    const s = scripted()
    s.session.start()
    vi.advanceTimersByTime(30)
    s.send({ type: 'done', value: 1 })
    expect((await s.session.result).stats?.wallMs).toBe(30)
  })

  it('a binding that throws at once is answered and leaves nothing in flight', async () => {
    const s = scripted({
      functions: {
        sync: () => {
          throw new Error('at once')
        },
      },
    })
    s.session.start()
    s.send(call(1, 'sync', { a: 1 }))
    expect(s.session.pendingCalls()).toEqual({ calls: 0, argBytes: 0 })
    await s.session.bindingsSettled()
    await turn()
    expect(s.posted.slice(1)).toStrictEqual([{ type: 'reply', id: 1, ok: false, message: 'at once' }])
    s.session.fail('abort', 'end')
  })
})
