/**
 * The trusted worker runtimes' shared part (src/code-runtime/trusted-runtime.ts) on
 * in-process slots: options, how a slot reports its death, the spares (taken, refilled,
 * dropped when dead, ended at close), the runtime a driver assembles on the run lifecycle
 * (startOnSlot in run-lifecycle.ts), and the host-side V8 syntax check with its line and
 * column. The Node and browser worker suites run the same code on real threads; this one
 * runs in milliseconds.
 */
import { describe, expect, it } from 'vitest'
import { DEFAULT_CODE_RUN_LIMITS } from '../../../src/code-runtime/limits.js'
import type { RunSlot } from '../../../src/code-runtime/run-lifecycle.js'
import { createTrustedRuntime, readTrustedOptions, SlotDeath, SparePool, v8SyntaxError } from '../../../src/code-runtime/trusted-runtime.js'
import type { TrustedDriver } from '../../../src/code-runtime/trusted-runtime.js'
import type { WireListener } from '../../../src/code-runtime/wire.js'
import { ToolError } from '../../../src/errors.js'

const turn = () => new Promise((resolve) => setTimeout(resolve, 0))

/** A slot whose worker is this test: it answers a `start` with `reply(program)` one microtask later. */
class FakeSlot extends SlotDeath implements RunSlot {
  static count = 0
  readonly id = ++FakeSlot.count
  readonly posted: Record<string, unknown>[] = []
  terminated = 0
  attached = 0
  collected = 0
  #listener: WireListener | undefined
  constructor(readonly reply: (program: string) => unknown = () => ({ type: 'done', value: 'ok' })) {
    super()
  }
  readonly endpoint = {
    postMessage: (message: unknown) => {
      const m = message as Record<string, unknown>
      this.posted.push(m)
      if (m.type === 'start') {
        const answer = this.reply(m.program as string)
        if (answer !== undefined) queueMicrotask(() => this.send(answer))
      }
    },
    addEventListener: (_type: 'message', listener: WireListener) => {
      this.#listener = listener
    },
    removeEventListener: (_type: 'message', listener: WireListener) => {
      if (this.#listener === listener) this.#listener = undefined
    },
  }
  send(data: unknown): void {
    this.#listener?.({ data })
  }
  terminate(): void {
    this.terminated++
    this.die('terminated')
  }
  attach(): void {
    this.attached++
  }
  collect(): void {
    this.collected++
  }
}

interface DriverScript {
  prespawn?: number
  spawn?: () => Promise<FakeSlot>
  checkSyntax?: (code: string) => string | undefined
  /** Deferred tasks wait here until the test runs them. */
  manualDefer?: boolean
}

function driver(script: DriverScript = {}) {
  const spawned: FakeSlot[] = []
  const deferred: (() => void)[] = []
  let spawns = 0
  const d: TrustedDriver<'fake', FakeSlot> = {
    isolation: 'fake',
    capabilities: Object.freeze({ streamsLogs: true, memoryLimit: false, capturesStdio: false }),
    limits: DEFAULT_CODE_RUN_LIMITS,
    prespawn: script.prespawn ?? 1,
    spawn: () => {
      spawns++
      if (script.spawn !== undefined) return script.spawn()
      const slot = new FakeSlot()
      spawned.push(slot)
      return Promise.resolve(slot)
    },
    alive: (slot) => slot.reason === undefined,
    defer: (task) => {
      if (script.manualDefer === true) deferred.push(task)
      else setTimeout(task, 0)
    },
    ...(script.checkSyntax === undefined ? {} : { checkSyntax: script.checkSyntax }),
  }
  return {
    driver: d,
    spawned,
    deferred,
    get spawns() {
      return spawns
    },
  }
}

describe('readTrustedOptions', () => {
  it('reads the shared limits, prespawn (default 1, 0 to 16) and the platform keys', () => {
    const none = readTrustedOptions(undefined, [], 'f')
    expect(none.prespawn).toBe(1)
    expect(none.limits).toEqual({ ...DEFAULT_CODE_RUN_LIMITS, maxPendingArgBytes: 33_554_432 })
    expect(none.record).toEqual({})
    expect(readTrustedOptions({ prespawn: 0 }, [], 'f').prespawn).toBe(0)
    expect(readTrustedOptions({ prespawn: 16 }, [], 'f').prespawn).toBe(16)
    expect(readTrustedOptions({ computeMs: 1_000 }, [], 'f').limits.computeMs).toBe(1_000)
    expect(readTrustedOptions({ extraKey: 'x' }, ['extraKey'], 'f').record).toEqual({ extraKey: 'x' })
    expect(() => readTrustedOptions({ prespawn: 17 }, [], 'f')).toThrow('f: options.prespawn must be an integer from 0 to 16 (got 17)')
    expect(() => readTrustedOptions({ prespawn: -1 }, [], 'f')).toThrow('f: options.prespawn must be an integer from 0 to 16 (got -1)')
    expect(() => readTrustedOptions({ computeMs: 0 }, [], 'f')).toThrow(ToolError)
    expect(() => readTrustedOptions({ extraKey: 1 }, [], 'f')).toThrow(/^f: unknown option "extraKey" \(known: .*maxPendingArgBytes, prespawn\)$/)
    expect(() => readTrustedOptions({ other: 1 }, ['extraKey'], 'f')).toThrow(/, prespawn, extraKey\)$/)
  })
})

describe('SlotDeath', () => {
  it('calls each listener once with the first reason; a late listener is called at once', () => {
    const death = new SlotDeath()
    const heard: string[] = []
    expect(death.reason).toBeUndefined()
    death.onDeath((reason) => heard.push(`a:${reason}`))
    death.onDeath((reason) => heard.push(`b:${reason}`))
    expect(heard).toEqual([])
    death.die('first')
    death.die('second')
    expect(death.reason).toBe('first')
    expect(heard).toEqual(['a:first', 'b:first'])
    death.onDeath((reason) => heard.push(`late:${reason}`))
    expect(heard).toEqual(['a:first', 'b:first', 'late:first'])
  })

  it('a listener that adds another while dying does not make it hear twice', () => {
    const death = new SlotDeath()
    const heard: string[] = []
    death.onDeath(() => death.onDeath((reason) => heard.push(`inner:${reason}`)))
    death.die('gone')
    expect(heard).toEqual(['inner:gone'])
  })
})

describe('SparePool', () => {
  it('starts prespawn spares at once and hands them out in order; a take refills once, later', async () => {
    const d = driver({ prespawn: 2, manualDefer: true })
    const pool = new SparePool(d.driver)
    expect(d.spawns).toBe(2)
    await pool.warm()
    const first = await pool.take()
    const second = await pool.take()
    expect([first.id, second.id]).toEqual([d.spawned[0]!.id, d.spawned[1]!.id])
    // One refill asked for both takes, none run yet.
    expect(d.deferred).toHaveLength(1)
    expect(d.spawns).toBe(2)
    // No spare: a fresh slot.
    const third = await pool.take()
    expect(third.id).toBe(d.spawned[2]!.id)
    expect(d.spawns).toBe(3)
    d.deferred.shift()!()
    expect(d.spawns).toBe(5)
    // A later take asks again.
    await pool.take()
    expect(d.deferred).toHaveLength(1)
  })

  it('prespawn 0 spawns on demand only and never defers', async () => {
    const d = driver({ prespawn: 0, manualDefer: true })
    const pool = new SparePool(d.driver)
    expect(d.spawns).toBe(0)
    await pool.warm()
    expect(d.spawns).toBe(0)
    await pool.take()
    expect(d.spawns).toBe(1)
    expect(d.deferred).toHaveLength(0)
  })

  it('a spare that died while waiting is dropped and replaced by a fresh slot', async () => {
    const d = driver({ prespawn: 1, manualDefer: true })
    const pool = new SparePool(d.driver)
    await pool.warm()
    d.spawned[0]!.die('crashed')
    const taken = await pool.take()
    expect(taken).toBe(d.spawned[1])
    expect(taken.reason).toBeUndefined()
  })

  it('a spare that dies while waiting leaves the list: a refill replaces it at once', async () => {
    const d = driver({ prespawn: 1, manualDefer: true })
    const pool = new SparePool(d.driver)
    await pool.warm()
    d.spawned[0]!.die('crashed')
    pool.refill()
    expect(d.spawns).toBe(2)
    expect(await pool.take()).toBe(d.spawned[1])
  })

  it('a slot that dies after it was taken removes no spare', async () => {
    const d = driver({ prespawn: 2, manualDefer: true })
    const pool = new SparePool(d.driver)
    await pool.warm()
    const taken = await pool.take()
    taken.die('its run ended')
    expect(await pool.take()).toBe(d.spawned[1])
    expect(d.spawns).toBe(2)
  })

  it('warm resolves only once the spares have started', async () => {
    let release!: (slot: FakeSlot) => void
    const d = driver({ prespawn: 1, manualDefer: true, spawn: () => new Promise<FakeSlot>((resolve) => (release = resolve)) })
    const pool = new SparePool(d.driver)
    let warmed = false
    const warming = pool.warm().then(() => (warmed = true))
    await turn()
    expect(warmed).toBe(false)
    release(new FakeSlot())
    await warming
    expect(warmed).toBe(true)
  })

  it('release waits until every slot it ended has died', async () => {
    const d = driver({ prespawn: 0 })
    const pool = new SparePool(d.driver)
    const slot = await pool.take()
    slot.terminate = () => void slot.terminated++
    let released = false
    const releasing = pool.release().then(() => (released = true))
    await turn()
    expect(slot.terminated).toBe(1)
    expect(released).toBe(false)
    slot.die('exit code 1')
    await releasing
    expect(released).toBe(true)
  })

  it('a spare dead when taken (after it was handed out of the list) is replaced', async () => {
    let dieFirst = true
    const d = driver({ prespawn: 1, manualDefer: true })
    const pool = new SparePool({
      ...d.driver,
      alive: (slot) => {
        if (dieFirst) {
          dieFirst = false
          return false
        }
        return slot.reason === undefined
      },
    })
    const taken = await pool.take()
    expect(taken).toBe(d.spawned[1])
  })

  it('a spare that failed to spawn is dropped; take spawns afresh', async () => {
    let fail = true
    const made: FakeSlot[] = []
    const d = driver({
      prespawn: 1,
      manualDefer: true,
      spawn: () => {
        if (fail) {
          fail = false
          return Promise.reject(new Error('no worker'))
        }
        const slot = new FakeSlot()
        made.push(slot)
        return Promise.resolve(slot)
      },
    })
    const pool = new SparePool(d.driver)
    await pool.warm()
    await turn()
    // The failed spare left the list: warm tops it up again.
    await pool.warm()
    expect(d.spawns).toBe(2)
    expect(await pool.take()).toBe(made[0])
  })

  it('a failed spare still in the list makes take spawn a fresh slot', async () => {
    let fail = true
    const d = driver({
      prespawn: 1,
      manualDefer: true,
      spawn: () => {
        if (fail) {
          fail = false
          return Promise.reject(new Error('no worker'))
        }
        return Promise.resolve(new FakeSlot())
      },
    })
    const pool = new SparePool(d.driver)
    const taken = await pool.take()
    expect(taken).toBeInstanceOf(FakeSlot)
    expect(d.spawns).toBe(2)
  })

  it('a refill that throws is swallowed; the next take spawns', async () => {
    let calls = 0
    const d = driver({
      prespawn: 1,
      manualDefer: true,
      spawn: () => {
        calls++
        if (calls === 2) throw new Error('spawn threw')
        return Promise.resolve(new FakeSlot())
      },
    })
    const pool = new SparePool(d.driver)
    await pool.take()
    expect(() => d.deferred.shift()!()).not.toThrow()
    // The refill flag was reset: another take asks again.
    await pool.take()
    expect(d.deferred).toHaveLength(1)
  })

  it('close ends the spares, spawns nothing more, and waits for spawns in flight; a slot started after close is ended', async () => {
    let release!: (slot: FakeSlot) => void
    const late = new FakeSlot()
    let first = true
    const d = driver({
      prespawn: 1,
      manualDefer: true,
      spawn: () => {
        if (first) {
          first = false
          return Promise.resolve(new FakeSlot())
        }
        return new Promise<FakeSlot>((resolve) => {
          release = resolve
        })
      },
    })
    const pool = new SparePool(d.driver)
    await pool.warm()
    const pending = pool.take() // the spare
    const spare = await pending
    const inFlight = pool.take() // no spare left: spawns, unresolved
    let closed = false
    const closing = pool.close().then(() => {
      closed = true
    })
    await turn()
    expect(closed).toBe(false)
    release(late)
    await closing
    expect(late.terminated).toBe(1)
    expect(await inFlight).toBe(late)
    expect(spare.terminated).toBe(0)
    // Closed: a refill and warm spawn nothing.
    const before = d.spawns
    d.deferred.shift()?.()
    pool.refill()
    await pool.warm()
    expect(d.spawns).toBe(before)
  })

  it('close terminates a waiting spare; release ends every live slot and waits for their deaths', async () => {
    const d = driver({ prespawn: 1, manualDefer: true })
    const pool = new SparePool(d.driver)
    await pool.warm()
    const inUse = await pool.take()
    d.deferred.shift()!()
    await turn()
    const spare = d.spawned[1]!
    await pool.close()
    expect(spare.terminated).toBe(1)
    expect(inUse.terminated).toBe(0)
    await pool.release()
    expect(inUse.terminated).toBe(1)
    // Dead slots have left: a second release ends nothing.
    await pool.release()
    expect(inUse.terminated).toBe(1)
  })

  it('take after close spawns no refill', async () => {
    const d = driver({ prespawn: 1, manualDefer: true })
    const pool = new SparePool(d.driver)
    await pool.close()
    await pool.take()
    expect(d.deferred).toHaveLength(0)
  })
})

describe('createTrustedRuntime', () => {
  it('is frozen and reports the driver: isolation, capabilities, limits', () => {
    const d = driver()
    const runtime = createTrustedRuntime(d.driver)
    expect(Object.isFrozen(runtime)).toBe(true)
    expect(runtime.language).toBe('typescript')
    expect(runtime.isolation).toBe('fake')
    expect(runtime.capabilities).toBe(d.driver.capabilities)
    expect(runtime.limits).toBe(DEFAULT_CODE_RUN_LIMITS)
    return runtime.dispose()
  })

  it('strips on the host and runs the JavaScript on a spare slot, attaching and collecting it', async () => {
    const d = driver()
    const runtime = createTrustedRuntime(d.driver)
    await runtime.warm()
    const result = await runtime.run({ bindings: [], program: 'const n: number = 1; return n' })
    expect(result.value).toBe('ok')
    const slot = d.spawned[0]!
    expect(slot.posted[0]).toEqual({ type: 'start', program: 'const n = 1; return n', namespaces: [], maxLogBytes: DEFAULT_CODE_RUN_LIMITS.maxLogBytes, maxValueBytes: DEFAULT_CODE_RUN_LIMITS.maxValueBytes })
    expect(slot.attached).toBe(1)
    expect(slot.collected).toBe(1)
    expect(slot.terminated).toBe(1)
    await runtime.dispose()
  })

  it('a strip failure and a V8 syntax error are exceptions before any slot is taken', async () => {
    const d = driver({ prespawn: 0 })
    const runtime = createTrustedRuntime(d.driver)
    const stripped = await runtime.run({ bindings: [], program: 'const a: = 1' })
    expect(stripped.error?.kind).toBe('exception')
    const syntax = await runtime.run({ bindings: [], program: 'const a = 1\nconst a = 2' })
    expect(syntax.error).toEqual({ kind: 'exception', message: "SyntaxError: Identifier 'a' has already been declared (line 2, column 7)" })
    expect(d.spawns).toBe(0)
    await runtime.dispose()
  })

  it("uses the driver's syntax check when it has one", async () => {
    const seen: string[] = []
    const d = driver({
      prespawn: 0,
      checkSyntax: (code) => {
        seen.push(code)
        return code.includes('bad') ? 'SyntaxError: driver says no' : undefined
      },
    })
    const runtime = createTrustedRuntime(d.driver)
    expect((await runtime.run({ bindings: [], program: 'return "bad"' })).error).toEqual({ kind: 'exception', message: 'SyntaxError: driver says no' })
    // The driver's check replaces V8's: a program V8 refuses passes.
    expect((await runtime.run({ bindings: [], program: 'const a = 1; const a = 2' })).value).toBe('ok')
    expect(seen).toEqual(['return "bad"', 'const a = 1; const a = 2'])
    await runtime.dispose()
  })

  it('a slot that cannot be started ends the run as a worker-exit naming why', async () => {
    const d = driver({ prespawn: 0, spawn: () => Promise.reject(new Error('no threads left')) })
    const runtime = createTrustedRuntime(d.driver)
    expect((await runtime.run({ bindings: [], program: 'return 1' })).error).toEqual({ kind: 'worker-exit', message: 'the thread running the program exited: it could not be started (no threads left)' })
    const s = driver({ prespawn: 0, spawn: () => Promise.reject('plain') })
    const other = createTrustedRuntime(s.driver)
    expect((await other.run({ bindings: [], program: 'return 1' })).error?.message).toBe('the thread running the program exited: it could not be started (plain)')
    await runtime.dispose()
    await other.dispose()
  })

  it('a slot that dies mid-run ends it as a worker-exit with the reason', async () => {
    const slot = new FakeSlot(() => undefined)
    const d = driver({ prespawn: 0, spawn: () => Promise.resolve(slot) })
    const runtime = createTrustedRuntime(d.driver)
    const running = runtime.run({ bindings: [], program: 'return 1' })
    await turn()
    slot.die('exit code 7')
    expect((await running).error).toEqual({ kind: 'worker-exit', message: 'the thread running the program exited: exit code 7' })
    await runtime.dispose()
  })

  it('an abort while the slot is being acquired settles the run there; the slot that arrives later is ended', async () => {
    let release!: (slot: FakeSlot) => void
    const d = driver({ prespawn: 0, spawn: () => new Promise<FakeSlot>((resolve) => (release = resolve)) })
    const runtime = createTrustedRuntime(d.driver)
    const controller = new AbortController()
    const running = runtime.run({ bindings: [], program: 'return 1', signal: controller.signal })
    controller.abort(new Error('user left'))
    expect((await running).error).toEqual({ kind: 'abort', message: 'the run was aborted (user left)' })
    const slot = new FakeSlot()
    release(slot)
    await turn()
    expect(slot.terminated).toBe(1)
    expect(slot.posted).toEqual([])
    await runtime.dispose()
  })

  it('an abort after the slot arrived reaches the session, not the early path', async () => {
    const slot = new FakeSlot(() => undefined)
    const d = driver({ prespawn: 0, spawn: () => Promise.resolve(slot) })
    const runtime = createTrustedRuntime(d.driver)
    const controller = new AbortController()
    const running = runtime.run({ bindings: [], program: 'return 1', signal: controller.signal })
    await turn()
    expect(slot.posted).toHaveLength(1)
    controller.abort('stop')
    expect((await running).error).toEqual({ kind: 'abort', message: 'the run was aborted (stop)' })
    expect(slot.terminated).toBe(1)
    await runtime.dispose()
  })

  it('dispose aborts the runs waiting for a slot and running ones, then ends spares and slots; runs after it are refused', async () => {
    const waiting = new FakeSlot(() => undefined)
    let release!: (slot: FakeSlot) => void
    let n = 0
    const running = new FakeSlot(() => undefined)
    const d = driver({
      prespawn: 0,
      spawn: () => {
        n++
        if (n === 1) return Promise.resolve(running)
        return new Promise<FakeSlot>((resolve) => (release = resolve))
      },
    })
    const runtime = createTrustedRuntime(d.driver)
    const first = runtime.run({ bindings: [], program: 'return 1' })
    await turn()
    const second = runtime.run({ bindings: [], program: 'return 2' })
    let disposed = false
    const disposing = runtime.dispose().then(() => {
      disposed = true
    })
    expect((await first).error).toEqual({ kind: 'abort', message: 'the runtime was disposed' })
    expect((await second).error).toEqual({ kind: 'abort', message: 'the runtime was disposed' })
    await turn()
    // A spawn is still in flight: dispose waits for it.
    expect(disposed).toBe(false)
    release(waiting)
    await disposing
    expect(waiting.reason).toBe('terminated')
    expect(waiting.posted).toEqual([])
    expect(running.reason).toBe('terminated')
    expect((await runtime.run({ bindings: [], program: 'return 3' })).error).toEqual({ kind: 'abort', message: 'the runtime was disposed' })
  })

  it('warm resolves once the pre-spawned slots have started', async () => {
    let release!: (slot: FakeSlot) => void
    const d = driver({ prespawn: 1, spawn: () => new Promise<FakeSlot>((resolve) => (release = resolve)) })
    const runtime = createTrustedRuntime(d.driver)
    let warmed = false
    const warming = runtime.warm().then(() => (warmed = true))
    await turn()
    expect(warmed).toBe(false)
    release(new FakeSlot())
    await warming
    expect(warmed).toBe(true)
    await runtime.dispose()
  })

  it('dispose ends the spare it pre-spawned', async () => {
    const d = driver({ prespawn: 2 })
    const runtime = createTrustedRuntime(d.driver)
    await runtime.warm()
    await runtime.dispose()
    expect(d.spawned.map((slot) => slot.terminated)).toEqual([1, 1])
  })
})

describe('v8SyntaxError', () => {
  it('answers undefined for a program that compiles, top-level await included', () => {
    expect(v8SyntaxError('return 1')).toBeUndefined()
    expect(v8SyntaxError('const a = await Promise.resolve(1)\nreturn a')).toBeUndefined()
    expect(v8SyntaxError('')).toBeUndefined()
  })

  it('names the line and the column where the offending token starts', () => {
    expect(v8SyntaxError("const a = 1\nconst b = 2\nconst a = 3")).toBe("SyntaxError: Identifier 'a' has already been declared (line 3, column 7)")
    expect(v8SyntaxError("let x = 1\n  let x = 2")).toBe("SyntaxError: Identifier 'x' has already been declared (line 2, column 7)")
    expect(v8SyntaxError('const longName = 1; const longName = 2')).toBe("SyntaxError: Identifier 'longName' has already been declared (line 1, column 27)")
    expect(v8SyntaxError('return 1 +* 2')).toBe("SyntaxError: Unexpected token '*' (line 1, column 11)")
    expect(v8SyntaxError('a\nb\nc\nd\ne\nf\nx y')).toBe("SyntaxError: Unexpected identifier 'y' (line 7, column 3)")
  })

  it('points at the await a message names, not at the word after it', () => {
    expect(v8SyntaxError('function f() {\n  return await g()\n}')).toBe('SyntaxError: await is only valid in async functions and the top level bodies of modules (line 2, column 10)')
    expect(v8SyntaxError('function f() {\nawait g()\n}')).toBe('SyntaxError: await is only valid in async functions and the top level bodies of modules (line 2, column 1)')
    // An await written with an escape is not found as a word: the column stays where the error fired.
    expect(v8SyntaxError('function f() { aw\\u0061it g() }')).toBe('SyntaxError: await is only valid in async functions and the top level bodies of modules (line 1, column 27)')
  })

  it('an await earlier on the line does not move another error there', () => {
    expect(v8SyntaxError('const v = await 1; const v = 2')).toBe("SyntaxError: Identifier 'v' has already been declared (line 1, column 26)")
  })

  it('a word at the start of a line is reported at column 1', () => {
    expect(v8SyntaxError('super()')).toBe("SyntaxError: 'super' keyword unexpected here (line 1, column 1)")
    expect(v8SyntaxError('x = 1\nsuper.x')).toBe("SyntaxError: 'super' keyword unexpected here (line 2, column 1)")
  })

  it('an unfinished program is reported at its end', () => {
    expect(v8SyntaxError('const s = 1\nreturn `abc')).toBe('SyntaxError: Unexpected end of input (line 2, column 12: at the end of the program)')
    expect(v8SyntaxError('`')).toBe('SyntaxError: Unexpected end of input (line 1, column 2: at the end of the program)')
  })
})
