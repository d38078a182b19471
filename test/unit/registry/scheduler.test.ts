import { describe, expect, it } from 'vitest'
import { createToolRuntime, runToolCalls } from '../../../src/registry/index.js'
import { createCallPool } from '../../../src/scheduler.js'
import type { ToolExecutionMode } from '../../../src/types.js'
import { call, deferred, echoTool, tick, type Deferred } from './helpers.js'
import { Schedule, UNSCHEDULED, type PipelineSchedule } from '../../../src/registry/schedule.js'
import type { ToolRuntime } from '../../../src/runtime-types.js'
import type { AnyToolDefinition, ToolExecutionResult } from './types.js'

/** Tracks how many tasks run at once and in which order they started. */
function probe() {
  let running = 0
  let peak = 0
  const started: number[] = []
  const gates = new Map<number, Deferred>()
  const task = (id: number) => async () => {
    started.push(id)
    running++
    peak = Math.max(peak, running)
    const gate = deferred()
    gates.set(id, gate)
    await gate.promise
    running--
    return id
  }
  return {
    task,
    started,
    release: (id: number) => gates.get(id)!.resolve(),
    get running() {
      return running
    },
    get peak() {
      return peak
    },
  }
}

describe('createCallPool', () => {
  it('rejects invalid maxParallel', () => {
    for (const maxParallel of [0, -1, 1.5, Number.NaN, '2']) {
      expect(() => createCallPool({ maxParallel } as never)).toThrow(/maxParallel/)
    }
  })

  it('starts tasks in submission order and bounds parallel overlap with a rolling window', async () => {
    const pool = createCallPool({ maxParallel: 3 })
    const p = probe()
    const results = [1, 2, 3, 4, 5].map((id) => pool.submit('parallel', p.task(id)))
    await tick()
    expect(p.started).toEqual([1, 2, 3])
    expect(p.running).toBe(3)
    p.release(2) // rolling: one slot frees, the next starts at once
    await tick()
    expect(p.started).toEqual([1, 2, 3, 4])
    p.release(1)
    p.release(3)
    p.release(4)
    await tick()
    p.release(5)
    expect(await Promise.all(results)).toEqual([1, 2, 3, 4, 5])
    expect(p.peak).toBe(3)
  })

  it('an exclusive task waits for the pool to drain, runs alone and bars later tasks', async () => {
    const pool = createCallPool({ maxParallel: 4 })
    const p = probe()
    const modes: ToolExecutionMode[] = ['parallel', 'parallel', 'exclusive', 'parallel', 'parallel']
    const results = modes.map((mode, i) => pool.submit(mode, p.task(i + 1)))
    await tick()
    expect(p.started).toEqual([1, 2])
    p.release(1)
    await tick()
    expect(p.started).toEqual([1, 2])
    p.release(2)
    await tick()
    expect(p.started).toEqual([1, 2, 3])
    expect(p.running).toBe(1)
    p.release(3)
    await tick()
    expect(p.started).toEqual([1, 2, 3, 4, 5])
    p.release(4)
    p.release(5)
    await Promise.all(results)
  })

  it('unknown modes are treated as exclusive (fail closed)', async () => {
    const pool = createCallPool({ maxParallel: 4 })
    const p = probe()
    const a = pool.submit('parallel', p.task(1))
    const b = pool.submit('weird' as never, p.task(2))
    await tick()
    expect(p.started).toEqual([1])
    p.release(1)
    await tick()
    p.release(2)
    await Promise.all([a, b])
  })

  it('a task that throws synchronously rejects only its own submission', async () => {
    const pool = createCallPool({ maxParallel: 2 })
    const bad = pool.submit('parallel', () => {
      throw new Error('sync')
    })
    const good = pool.submit('parallel', async () => 'ok')
    await expect(bad).rejects.toThrow('sync')
    await expect(good).resolves.toBe('ok')
  })

  it('abandon rejects queued tasks (they never start) and later submissions; drain waits for started tasks', async () => {
    const pool = createCallPool({ maxParallel: 1 })
    const p = probe()
    const first = pool.submit('parallel', p.task(1))
    const queued = pool.submit('parallel', p.task(2))
    await tick()
    const reason = new Error('run settled')
    pool.abandon(reason)
    await expect(queued).rejects.toBe(reason)
    await expect(pool.submit('parallel', p.task(3))).rejects.toBe(reason)
    let drained = false
    const draining = pool.drain().then(() => (drained = true))
    await tick()
    expect(drained).toBe(false)
    p.release(1)
    await draining
    expect(await first).toBe(1)
    expect(p.started).toEqual([1])
  })

  it('drain resolves at once on an idle pool (fresh, and again once its work settled)', async () => {
    // "At once": before any other queued work, not merely "eventually" (a drain that
    // waited for a next settlement would never resolve on an idle pool).
    const settledAfterOneTick = async (pool: ReturnType<typeof createCallPool>): Promise<boolean> => {
      let drained = false
      void pool.drain().then(() => (drained = true))
      await Promise.resolve()
      return drained
    }
    const pool = createCallPool({ maxParallel: 2 })
    expect(await settledAfterOneTick(pool)).toBe(true)
    const p = probe()
    const running = pool.submit('parallel', p.task(1))
    await tick()
    expect(await settledAfterOneTick(pool)).toBe(false)
    p.release(1)
    await running
    expect(await settledAfterOneTick(pool)).toBe(true)
  })
})

describe('runToolCalls', () => {
  function batchRuntime() {
    const runtime = createToolRuntime()
    const log: string[] = []
    let running = 0
    let peak = 0
    const body = (name: string, ms: number) => async () => {
      log.push(`body:${name}`)
      running++
      peak = Math.max(peak, running)
      await new Promise((r) => setTimeout(r, ms))
      running--
      return name
    }
    runtime.register({ ...echoTool('read'), execute: body('read', 20), isConcurrencySafe: () => true } as never)
    runtime.register({ ...echoTool('slowread'), execute: body('slowread', 40), isConcurrencySafe: () => true } as never)
    runtime.register({ ...echoTool('write'), execute: body('write', 5) } as never)
    runtime.on('tools/pre-execute', async (d, e) => {
      log.push(`gate:${e.callId}`)
      await tick()
      return d
    })
    runtime.on('tools/post-execute', async (d, e) => {
      log.push(`post:${e.callId}`)
      await tick()
      return { kind: 'accept', additionalContexts: [{ source: 'post', content: e.callId }] }
    })
    runtime.on('tools/result', (e) => void log.push(`result:${e.callId}`))
    return { runtime, log, peak: () => peak }
  }

  it('overlaps only bodies; policy, results and contexts keep model order', async () => {
    const { runtime, log, peak } = batchRuntime()
    const calls = [
      call('slowread', {}, { callId: 'A' }),
      call('read', {}, { callId: 'B' }),
      call('read', {}, { callId: 'C' }),
      call('write', {}, { callId: 'D' }),
      call('read', {}, { callId: 'E' }),
    ]
    const results = await runToolCalls(runtime, calls, { maxParallel: 2 })
    expect(results.map((r) => (r.isError ? r.error.message : r.value))).toEqual(['slowread', 'read', 'read', 'write', 'read'])
    expect(results.map((r) => r.additionalContexts?.[0]?.content)).toEqual(['A', 'B', 'C', 'D', 'E'])
    const only = (prefix: string) => log.filter((l) => l.startsWith(prefix))
    expect(only('gate:')).toEqual(['gate:A', 'gate:B', 'gate:C', 'gate:D', 'gate:E'])
    expect(only('post:')).toEqual(['post:A', 'post:B', 'post:C', 'post:D', 'post:E'])
    expect(only('result:')).toEqual(['result:A', 'result:B', 'result:C', 'result:D', 'result:E'])
    // B finished before A (shorter body) but its post-policy still waited for A's.
    expect(peak()).toBe(2)
    // The exclusive write started only after every earlier read settled, and before E.
    const writeAt = log.indexOf('body:write')
    expect(log.indexOf('body:read', log.indexOf('body:write'))).toBeGreaterThan(writeAt)
    expect(log.slice(0, writeAt).filter((l) => l.startsWith('body:'))).toEqual(['body:slowread', 'body:read', 'body:read'])
  })

  it('maxParallel 1 restores serial dispatch', async () => {
    const { runtime, peak } = batchRuntime()
    await runToolCalls(runtime, [call('read'), call('read'), call('read')], { maxParallel: 1 })
    expect(peak()).toBe(1)
  })

  it('failures stay in their slot and never reject the batch', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool())
    const results = await runToolCalls(runtime, [call('echo', { text: 'a' }), call('missing'), null as never, call('echo', { text: 'b' })])
    expect(results.map((r) => (r.isError ? r.error.info?.code : r.value))).toEqual(['a', 'UNKNOWN_TOOL', 'INVALID_EXECUTION', 'b'])
  })

  it('rejects a non-array batch or a bad maxParallel', async () => {
    const runtime = createToolRuntime()
    await expect(runToolCalls(runtime, 'x' as never)).rejects.toThrow(/array/)
    await expect(runToolCalls(runtime, [], { maxParallel: 0 })).rejects.toThrow(/maxParallel/)
  })
})

/** A raw tool with the given extra members (validators, classifier). */
const raw = (name: string, extra: Record<string, unknown>) => ({ ...echoTool(name), ...extra }) as unknown as AnyToolDefinition

/** A runtime with a concurrency-safe `safe` and an exclusive `solo` tool whose bodies wait on per-text gates. */
function gatedRuntime() {
  const runtime = createToolRuntime()
  const started: string[] = []
  const gates = new Map<string, Deferred>()
  const body = async (args: { text?: string }) => {
    const text = args.text ?? ''
    started.push(text)
    const gate = deferred()
    gates.set(text, gate)
    await gate.promise
    return text
  }
  runtime.register(raw('safe', { execute: body, isConcurrencySafe: () => true }))
  runtime.register(raw('solo', { execute: body }))
  return { runtime, started, release: (text: string) => gates.get(text)!.resolve() }
}

const values = (results: ToolExecutionResult[]) => results.map((r) => (r.isError ? r.error.message : r.value))

describe('runToolCalls: scheduling', () => {
  it('exclusive calls run one at a time, in model order', async () => {
    const { runtime, started, release } = gatedRuntime()
    const batch = runToolCalls(runtime, [call('solo', { text: 'a' }), call('solo', { text: 'b' })])
    await tick()
    await tick()
    expect(started).toEqual(['a'])
    release('a')
    await tick()
    await tick()
    expect(started).toEqual(['a', 'b'])
    release('b')
    expect(values(await batch)).toEqual(['a', 'b'])
  })

  it('consecutive concurrency-safe calls overlap', async () => {
    const { runtime, started, release } = gatedRuntime()
    const batch = runToolCalls(runtime, [call('safe', { text: 'c' }), call('safe', { text: 'd' })])
    await tick()
    await tick()
    expect(started).toEqual(['c', 'd'])
    release('d')
    release('c')
    expect(values(await batch)).toEqual(['c', 'd'])
  })

  it('policy phases take turns: a later call’s pre-execute gate waits for the earlier call’s', async () => {
    const { runtime, release } = gatedRuntime()
    const gated: string[] = []
    const first = deferred()
    runtime.on('tools/pre-execute', async (decision, execution) => {
      gated.push(execution.callId)
      if (execution.callId === 'A') await first.promise
      return decision
    })
    const batch = runToolCalls(runtime, [call('safe', { text: 'a' }, { callId: 'A' }), call('safe', { text: 'b' }, { callId: 'B' })])
    await tick()
    await tick()
    expect(gated).toEqual(['A'])
    first.resolve()
    await tick()
    await tick()
    expect(gated).toEqual(['A', 'B'])
    release('a')
    release('b')
    expect(values(await batch)).toEqual(['a', 'b'])
  })
})

describe('runToolCalls: the pool receives calls in model order', () => {
  it('an exclusive call before a concurrency-safe one starts first and runs alone, whatever the policy phases cost', async () => {
    for (const gate of ['none', 'sync', 'async'] as const) {
      const { runtime, started, release } = gatedRuntime()
      if (gate === 'sync') runtime.on('tools/pre-execute', (d) => d)
      if (gate === 'async') runtime.on('tools/pre-execute', async (d) => (await tick(), d))
      const batch = runToolCalls(runtime, [call('solo', { text: 'first' }), call('safe', { text: 'second' }), call('missing'), call('safe', { text: 'third' })])
      for (let i = 0; i < 6; i++) await tick()
      expect(started, gate).toEqual(['first'])
      release('first')
      for (let i = 0; i < 6; i++) await tick()
      // The unknown tool between them ended in its policy phase and passed its turn on.
      expect(started, gate).toEqual(['first', 'second', 'third'])
      release('second')
      release('third')
      expect((await batch).map((r) => (r.isError ? r.error.info?.code : r.value)), gate).toEqual(['first', 'second', 'UNKNOWN_TOOL', 'third'])
    }
  })
})

describe('runToolCalls: other runtimes and refusals', () => {
  it('a ToolRuntime not made by createToolRuntime still gets one result per call, in model order', async () => {
    const seen: string[] = []
    const foreign = {
      executionMode: (input: { callId: string }) => {
        if (input.callId === 'thrower') throw new Error('classifier broke')
        return 'parallel'
      },
      execute: async (input: { callId: string }) => {
        seen.push(input.callId)
        return { isError: false, value: input.callId, content: [] }
      },
    } as unknown as ToolRuntime
    const results = await runToolCalls(foreign, [call('x', {}, { callId: 'one' }), call('x', {}, { callId: 'thrower' }), call('x', {}, { callId: 'three' })])
    expect(results).toEqual([
      { isError: false, value: 'one', content: [] },
      { isError: false, value: 'thrower', content: [] },
      { isError: false, value: 'three', content: [] },
    ])
    expect(seen).toEqual(['one', 'thrower', 'three'])
  })

  it('refuses a batch that is not an array (INVALID_OPTIONS, with its message)', async () => {
    await expect(runToolCalls(createToolRuntime(), 'x' as never)).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
      message: 'runToolCalls expects an array of calls',
    })
  })
})

describe('Schedule', () => {
  it('unscheduled: a phase runs at once and its answer is returned as is (a synchronous phase takes no tick); nothing to settle', async () => {
    let ran = 0
    expect(UNSCHEDULED.phase('policy', () => void ran++)).toBeUndefined()
    expect(ran).toBe(1)
    const answer = Promise.resolve(undefined)
    expect(UNSCHEDULED.phase('tail', () => answer)).toBe(answer)
    // Shared by every plain call: it keeps no state, so the same phase runs again.
    expect(UNSCHEDULED.phase('policy', () => void ran++)).toBeUndefined()
    expect(ran).toBe(2)
    expect(() => UNSCHEDULED.settle()).not.toThrow()
  })

  it('scheduled: each phase reaches the inner schedule once; a second hand-over runs without taking a second turn', async () => {
    const turns: string[] = []
    const inner: PipelineSchedule = {
      phase: async (phase, run) => {
        turns.push(phase)
        await run()
      },
    }
    const schedule = new Schedule(inner)
    const ran: string[] = []
    await schedule.phase('policy', () => void ran.push('policy'))
    await schedule.phase('policy', () => void ran.push('policy again'))
    await schedule.phase('dispatch', () => void ran.push('dispatch'))
    await schedule.phase('tail', () => void ran.push('tail'))
    schedule.settle()
    await tick()
    expect(turns).toEqual(['policy', 'dispatch', 'tail'])
    expect(ran).toEqual(['policy', 'policy again', 'dispatch', 'tail'])
  })

  it("settle hands on, with nothing to run, the policy and tail turns a call never took (the batch's next call must not wait forever)", async () => {
    const turns: string[] = []
    const inner: PipelineSchedule = {
      phase: async (phase, run) => {
        turns.push(phase)
        await run()
      },
    }
    const untouched = new Schedule(inner)
    untouched.settle()
    untouched.settle()
    await tick()
    expect(turns).toEqual(['policy', 'tail'])
    turns.length = 0
    const halfway = new Schedule(inner)
    await halfway.phase('policy', () => undefined)
    halfway.settle()
    await tick()
    expect(turns).toEqual(['policy', 'tail'])
  })

  it('a dispatch turn that went wrong says whether the body started, and settles only after the body did', async () => {
    const broken = (phase: (run: () => Promise<void>) => Promise<void>) => new Schedule({ phase: (_name, run) => phase(run) })
    expect(await broken(() => Promise.reject(new Error('cancelled'))).phase('dispatch', () => undefined)).toEqual({ started: false, error: new Error('cancelled') })
    expect(await broken(async () => {}).phase('dispatch', () => undefined)).toEqual({ started: false, error: undefined })
    const body = deferred()
    let settled = false
    const gaveUp = broken((run) => {
      void run()
      return Promise.reject(new Error('lost'))
    })
    const pending = gaveUp.phase('dispatch', () => body.promise.then(() => undefined))!.then((answer) => ((settled = true), answer))
    await tick()
    expect(settled).toBe(false)
    body.resolve()
    expect(await pending).toEqual({ started: true, error: new Error('lost') })
    expect(await broken((run) => run()).phase('dispatch', () => undefined)).toBeUndefined()
  })

  it("a failure of the phase's own run (a pipeline bug) propagates, whatever the scheduler did with it", async () => {
    const schedule = new Schedule({ phase: (_name, run) => run() })
    await expect(
      schedule.phase('policy', () => {
        throw new Error('stage bug')
      }),
    ).rejects.toThrow('stage bug')
    const swallowing = new Schedule({ phase: (_name, run) => run().catch(() => {}) })
    await expect(swallowing.phase('tail', () => Promise.reject(new Error('publish bug')))).rejects.toThrow('publish bug')
  })
})
