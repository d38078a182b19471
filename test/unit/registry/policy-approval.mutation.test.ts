/**
 * The policy stages (`tools/pre-execute` gate, guards), the approval stage and the
 * in-flight record at their edges: how a malformed or failing gate listener and guard are
 * worded, how equal-rank gate decisions replace each other, the wording of an `ask` with
 * no, an empty or a real reason, what the handler is asked, the session log's records of
 * a nested call's approval (allow / deny / withdrawn, with and without an agent), the
 * clock a call holds while a person decides, the abort listener the wait leaves behind
 * (none), and the in-flight record's reason, release and settlement.
 *
 * The pipeline is built from its parts (as in pipeline-core.test.ts), so a nested call
 * is simply a call whose `parent` is a live token the test registered.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { HookBus } from '../../../src/registry/hooks.js'
import { type InFlight, InFlightCalls } from '../../../src/registry/in-flight.js'
import { ToolLayers } from '../../../src/registry/layers.js'
import { validateRuntimeOptions } from '../../../src/registry/options.js'
import { executePipeline, type PipelineCore } from '../../../src/registry/pipeline.js'
import { ScopedList } from '../../../src/registry/scoped-list.js'
import type { ToolRuntimeOptions } from '../../../src/runtime-types.js'
import { detachToolDefinition } from '../../../src/schema/tool-definition.js'
import { createMemorySessionLog } from '../../../src/session-log.js'
import type { ApprovalRequest, PreToolDecision, ScopeKey, ToolExecutionToken, ToolGuard } from '../../../src/types.js'
import { call, deferred, echoTool, tick } from './helpers.js'
import type { ToolExecutionInput, ToolExecutionResult } from './types.js'

type Core = PipelineCore & { hooks: HookBus; guards: ScopedList<ToolGuard>; calls: InFlightCalls }

/** A pipeline over hand-built parts with one tool, `t`, whose value is its `exec.deadline` (or -1). */
function core(options: ToolRuntimeOptions = {}, calls: InFlightCalls = new InFlightCalls()): Core {
  const transport = detachToolDefinition(echoTool('run_code_stand_in'))
  const layers = new ToolLayers({ defaultMode: 'native', transport: () => transport, onChange: () => {} })
  layers.add(
    undefined,
    detachToolDefinition({
      name: 't',
      description: 'reports its deadline (test)',
      parameters: { type: 'object' },
      output: { schema: { type: 'number' }, render: (_a: unknown, v: number) => [{ type: 'text', text: String(v) }] },
      execute: (_args: unknown, exec: { deadline?: number }) => exec.deadline ?? -1,
    }),
  )
  return { options: validateRuntimeOptions(options), isDisposed: () => false, layers, hooks: new HookBus(), guards: new ScopedList<ToolGuard>(), calls }
}

/** Makes every call through `c` an `ask` (with `reason` when given). */
function asks(c: Core, reason?: string): void {
  c.hooks.preExecute.add(() => (reason === undefined ? { kind: 'ask' } : { kind: 'ask', reason }), undefined)
}

/** A live token standing for an enclosing call `callId`: a call naming it as `parent` is nested. */
function liveParent(c: Core, callId: string): ToolExecutionToken {
  const token = Symbol(callId) as ToolExecutionToken
  c.calls.liveTokens.set(token, { callId, approval: undefined })
  return token
}

const run = (c: Core, extra: Partial<ToolExecutionInput> = {}): Promise<ToolExecutionResult> => executePipeline(c, call('t', {}, extra))

/** [code, message] of a result ('OK' and the value for a success). */
function outcome(result: ToolExecutionResult): [string, unknown] {
  return result.isError ? [String(result.error.info?.code), result.error.message] : ['OK', result.value]
}

afterEach(() => {
  vi.useRealTimers()
})

describe('the tools/pre-execute gate fails closed with exact wording', () => {
  const malformed = ['DENIED_BY_GATE', 'a tools/pre-execute listener returned a malformed decision (denied)']

  it.each([
    ['null', null],
    ['undefined (no answer)', undefined],
    ['a string', 'allow'],
    ['a function carrying kind: allow', Object.assign(() => {}, { kind: 'allow' })],
    ['a deny without a reason', { kind: 'deny' }],
    ['a deny with a non-string reason', { kind: 'deny', reason: 7 }],
    ['an ask with a non-string reason', { kind: 'ask', reason: 7 }],
    ['an unknown kind', { kind: 'maybe' }],
  ])('a listener answering %s is a malformed decision; the body never runs', async (_what, answer) => {
    const c = core({ approval: () => true })
    let ran = 0
    c.hooks.preExecute.add(() => answer as PreToolDecision, undefined)
    c.hooks.execute.add((_e, next) => (ran++, next()), undefined)
    expect(outcome(await run(c))).toEqual(malformed)
    expect(ran).toBe(0)
  })

  it('a throwing listener denies with its message; later listeners do not run', async () => {
    const c = core()
    const seen: string[] = []
    c.hooks.preExecute.add(() => {
      throw new Error('policy store unreachable')
    }, undefined)
    c.hooks.preExecute.add((d) => (seen.push('second'), d), undefined)
    expect(outcome(await run(c))).toEqual(['DENIED_BY_GATE', 'a tools/pre-execute listener failed (denied): policy store unreachable'])
    expect(seen).toEqual([])
  })

  it("a deny's reason is the message; an empty reason reads 'denied by policy'", async () => {
    const c = core()
    c.hooks.preExecute.add(() => ({ kind: 'deny', reason: 'writes are frozen' }), undefined)
    expect(outcome(await run(c))).toEqual(['DENIED_BY_GATE', 'writes are frozen'])
    const empty = core()
    empty.hooks.preExecute.add(() => ({ kind: 'deny', reason: '' }), undefined)
    expect(outcome(await run(empty))).toEqual(['DENIED_BY_GATE', 'denied by policy'])
  })
})

describe('the gate waterfall: what the next listener and the approval handler see', () => {
  it('a later ask of equal rank replaces the earlier one: its reason is the one asked about', async () => {
    const requests: ApprovalRequest[] = []
    const c = core({ approval: (request) => (requests.push(request), false) })
    asks(c, 'first reason')
    asks(c, 'second reason')
    expect(outcome(await run(c))).toEqual(['DENIED_BY_APPROVAL', 't was denied by the approval handler (the gate asked because: second reason)'])
    expect(requests.map((r) => r.reason)).toEqual(['second reason'])
  })

  it('an ask without a reason is handed on as exactly { kind: "ask" } (no reason key)', async () => {
    const c = core({ approval: () => true })
    const seen: PreToolDecision[] = []
    asks(c)
    c.hooks.preExecute.add((d) => (seen.push(d), d), undefined)
    expect(outcome(await run(c))).toEqual(['OK', -1])
    expect(seen).toHaveLength(1)
    expect(seen[0]).toStrictEqual({ kind: 'ask' })
  })

  it('an allow answer replaces the current allow: the next listener sees the answer, not what was written on the argument', async () => {
    const c = core()
    const seen: PreToolDecision[] = []
    c.hooks.preExecute.add((d) => {
      try {
        // A listener scribbling on its argument (where it can) and then answering allow.
        Object.assign(d, { note: 'scribbled' })
      } catch {
        // A frozen decision refuses the write; the answer below is what counts either way.
      }
      return { kind: 'allow' }
    }, undefined)
    c.hooks.preExecute.add((d) => (seen.push(d), d), undefined)
    expect(outcome(await run(c))).toEqual(['OK', -1])
    expect(seen).toHaveLength(1)
    expect(seen[0]).toStrictEqual({ kind: 'allow' })
  })

  it('with no gate listener the body starts within the execute() call itself (not a tick later)', () => {
    const c = core()
    let started = false
    c.hooks.execute.add((_e, next) => ((started = true), next()), undefined)
    const pending = run(c)
    expect(started).toBe(true)
    return pending
  })
})

describe('guards fail closed with exact wording', () => {
  it.each([
    ['a reason', 'outside business hours', 'outside business hours'],
    ['an empty reason', '', 'denied by a guard'],
    ['a number', 7, 'a guard returned a non-string verdict (denied)'],
    ['an object', { reason: 'x' }, 'a guard returned a non-string verdict (denied)'],
  ])('a guard returning %s denies with its wording', async (_what, verdict, message) => {
    const c = core()
    c.guards.add((() => verdict) as unknown as ToolGuard, undefined)
    expect(outcome(await run(c))).toEqual(['DENIED_BY_GUARD', message])
  })

  it('a throwing guard denies with its message', async () => {
    const c = core()
    c.guards.add(() => {
      throw new Error('quota service down')
    }, undefined)
    expect(outcome(await run(c))).toEqual(['DENIED_BY_GUARD', 'a guard failed (denied): quota service down'])
  })
})

describe('the wording of an ask that is not approved', () => {
  it.each([
    ['no reason', undefined, ''],
    ['an empty reason', '', ''],
    ['a reason', 'touches prod', ' (touches prod)'],
  ])('with %s and no handler: "… was denied by policy: it needs approval… and no approval handler is configured"', async (_what, reason, why) => {
    const c = core()
    asks(c, reason)
    expect(outcome(await run(c))).toEqual(['DENIED_BY_APPROVAL', `t was denied by policy: it needs approval${why} and no approval handler is configured`])
  })

  it.each([
    ['no reason', undefined, ''],
    ['an empty reason', '', ''],
    ['a reason', 'touches prod', ' (the gate asked because: touches prod)'],
  ])('with %s, refused by the handler: "… was denied by the approval handler…"', async (_what, reason, why) => {
    const c = core({ approval: () => false })
    asks(c, reason)
    expect(outcome(await run(c))).toEqual(['DENIED_BY_APPROVAL', `t was denied by the approval handler${why}`])
  })

  it('the request carries exactly the keys it has: no reason key for an ask without one', async () => {
    const requests: ApprovalRequest[] = []
    const c = core({ approval: (request) => (requests.push(request), true) })
    asks(c)
    await run(c)
    const withReason = core({ approval: (request) => (requests.push(request), true) })
    asks(withReason, '')
    await run(withReason)
    expect(requests.map((r) => Object.keys(r).sort())).toEqual([['execution', 'parameters'], ['execution', 'parameters', 'reason']])
    expect(requests[1]!.reason).toBe('')
  })
})

describe('the session log records a nested call\'s approval exactly', () => {
  const at = expect.any(Number)

  function nested(options: ToolRuntimeOptions, extra: Partial<ToolExecutionInput> = {}) {
    const sessionLog = createMemorySessionLog()
    const c = core({ ...options, sessionLog })
    const parent = liveParent(c, 'run-1')
    return { c, sessionLog, go: (input: Partial<ToolExecutionInput> = {}) => executePipeline(c, { ...call('t', { n: 1 }, { parent, ...extra, ...input }), callId: 'run-1:t' }) }
  }

  it('an approved sub-call: decision allow, no message, no reason and no agent keys', async () => {
    const { c, sessionLog, go } = nested({ approval: () => true })
    asks(c)
    expect(outcome(await go())).toEqual(['OK', -1])
    expect(sessionLog.events).toStrictEqual([
      { type: 'tool/approval-request', parentCallId: 'run-1', subCallId: 'run-1:t', name: 't', arguments: { n: 1 }, requestedAt: at },
      { type: 'tool/approval-decision', parentCallId: 'run-1', subCallId: 'run-1:t', name: 't', decision: 'allow', requestedAt: at, decidedAt: at, waitedMs: at },
    ])
  })

  it("a refused sub-call of an agent: decision deny with the denial's wording, agent and reason recorded", async () => {
    const { c, sessionLog, go } = nested({ approval: () => false }, { agent: 'a1' })
    asks(c, 'sends mail')
    expect(outcome(await go())).toEqual(['DENIED_BY_APPROVAL', 't was denied by the approval handler (the gate asked because: sends mail)'])
    expect(sessionLog.events).toStrictEqual([
      { type: 'tool/approval-request', parentCallId: 'run-1', subCallId: 'run-1:t', name: 't', agent: 'a1', arguments: { n: 1 }, reason: 'sends mail', requestedAt: at },
      {
        type: 'tool/approval-decision',
        parentCallId: 'run-1',
        subCallId: 'run-1:t',
        name: 't',
        agent: 'a1',
        decision: 'deny',
        message: 't was denied by the approval handler (the gate asked because: sends mail)',
        requestedAt: at,
        decidedAt: at,
        waitedMs: at,
      },
    ])
  })

  it('a sub-call cancelled while it waits: decision withdrawn, no message', async () => {
    const controller = new AbortController()
    const asked = deferred()
    const { c, sessionLog, go } = nested({ approval: () => (asked.resolve(), new Promise<boolean>(() => {})) })
    asks(c, 'r')
    const pending = go({ signal: controller.signal })
    await asked.promise
    controller.abort()
    expect(outcome(await pending)).toEqual(['ABORTED_BEFORE_DISPATCH', 'the call was cancelled before the tool ran'])
    expect(sessionLog.events[1]).toStrictEqual({
      type: 'tool/approval-decision',
      parentCallId: 'run-1',
      subCallId: 'run-1:t',
      name: 't',
      decision: 'withdrawn',
      requestedAt: at,
      decidedAt: at,
      waitedMs: at,
    })
  })

  it('the decision\'s times are the request\'s and the answer\'s, waitedMs their difference', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(1_000_000)
    const answer = deferred<boolean>()
    const { c, sessionLog, go } = nested({ approval: () => answer.promise })
    asks(c)
    const pending = go()
    await tick()
    vi.setSystemTime(1_000_750)
    answer.resolve(true)
    await pending
    expect(sessionLog.events[1]).toMatchObject({ decision: 'allow', requestedAt: 1_000_000, decidedAt: 1_000_750, waitedMs: 750 })
  })
})

describe('the clock a call holds while a person decides', () => {
  it('a held clock moves exec.deadline later by exactly the time held, and is released once', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(5_000_000)
    const log: string[] = []
    const answer = deferred<boolean>()
    const c = core({ approval: () => answer.promise })
    asks(c)
    const pending = run(c, { deadline: 9_000_000, holdWallClock: () => (log.push('hold'), () => log.push('release')) })
    await tick()
    vi.setSystemTime(5_004_000)
    answer.resolve(true)
    expect(outcome(await pending)).toEqual(['OK', 9_004_000])
    expect(log).toEqual(['hold', 'release'])
  })

  it('a clock that cannot be held is charged as usual: exec.deadline does not move', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(5_000_000)
    const answer = deferred<boolean>()
    const c = core({ approval: () => answer.promise })
    asks(c)
    const holdWallClock = () => {
      throw new Error('no clock to hold')
    }
    const pending = run(c, { deadline: 9_000_000, holdWallClock })
    await tick()
    vi.setSystemTime(5_004_000)
    answer.resolve(true)
    expect(outcome(await pending)).toEqual(['OK', 9_000_000])
  })
})

/**
 * An in-flight stand-in whose signal reports which abort listeners are still attached
 * (EventTarget semantics: a `once` listener is dropped when the event fires).
 */
class WatchedCalls extends InFlightCalls {
  readonly controllers: AbortController[] = []
  readonly attached: Set<unknown>[] = []

  override track(_caller: AbortSignal, _agent: ScopeKey | undefined): InFlight {
    const controller = new AbortController()
    const signal = controller.signal
    const attached = new Set<unknown>()
    const once = new Set<unknown>()
    const add = signal.addEventListener.bind(signal)
    const remove = signal.removeEventListener.bind(signal)
    signal.addEventListener = ((type: string, listener: unknown, options?: boolean | AddEventListenerOptions) => {
      if (type === 'abort') {
        attached.add(listener)
        if (typeof options === 'object' && options.once === true) once.add(listener)
      }
      add(type, listener as EventListener, options)
    }) as typeof signal.addEventListener
    signal.removeEventListener = ((type: string, listener: unknown, options?: boolean | EventListenerOptions) => {
      if (type === 'abort') attached.delete(listener)
      remove(type, listener as EventListener, options)
    }) as typeof signal.removeEventListener
    add('abort', () => {
      for (const listener of once) attached.delete(listener)
    })
    this.controllers.push(controller)
    this.attached.push(attached)
    return {
      get aborted() {
        return signal.aborted
      },
      get reason() {
        return signal.reason as unknown
      },
      signal: () => signal,
      release: () => {},
    }
  }
}

describe('waiting for approval leaves no abort listener on the call\'s signal', () => {
  it('once the handler answers, its abort listener is removed', async () => {
    const calls = new WatchedCalls()
    const answer = deferred<boolean>()
    const c = core({ approval: () => answer.promise }, calls)
    asks(c)
    const pending = run(c)
    await tick()
    expect(calls.attached[0]!.size).toBe(1)
    answer.resolve(true)
    expect(outcome(await pending)).toEqual(['OK', -1])
    expect(calls.attached[0]!.size).toBe(0)
  })

  it('when the call is cancelled while the handler never answers, the listener is gone too', async () => {
    const calls = new WatchedCalls()
    const c = core({ approval: () => new Promise<boolean>(() => {}) }, calls)
    asks(c)
    const pending = run(c)
    await tick()
    expect(calls.attached[0]!.size).toBe(1)
    calls.controllers[0]!.abort()
    expect(outcome(await pending)).toEqual(['ABORTED_BEFORE_DISPATCH', 'the call was cancelled before the tool ran'])
    expect(calls.attached[0]!.size).toBe(0)
  })
})

describe('the in-flight record: reason, release, settlement', () => {
  it('once the signal exists, reason is the signal\'s: a disposal then a caller abort keeps the disposal\'s reason', () => {
    const calls = new InFlightCalls()
    const caller = new AbortController()
    const record = calls.track(caller.signal, 'a')
    const signal = record.signal()
    const disposed = new ToolError('DISPOSED', 'agent scope "a" was disposed')
    void calls.quiesce(disposed, 'a')
    caller.abort(new Error('caller gave up'))
    expect(signal.reason).toBe(disposed)
    expect(record.reason).toBe(disposed)
    record.release()
  })

  it('the first disposal wins: a second one (agent, then registry) does not change the reason', () => {
    const calls = new InFlightCalls()
    const record = calls.track(new AbortController().signal, 'a')
    const first = new ToolError('DISPOSED', 'agent scope "a" was disposed')
    void calls.quiesce(first, 'a')
    void calls.quiesce(new ToolError('DISPOSED', 'the tool runtime was disposed'))
    expect(record.reason).toBe(first)
    expect(record.signal().reason).toBe(first)
    record.release()
  })

  it('a released call stops following its caller, whether its signal was read before or after', () => {
    const calls = new InFlightCalls()
    const caller = new AbortController()
    const early = calls.track(caller.signal, undefined)
    const earlySignal = early.signal()
    early.release()
    const late = calls.track(caller.signal, undefined)
    late.release()
    const lateSignal = late.signal()
    caller.abort(new Error('too late'))
    expect(earlySignal.aborted).toBe(false)
    expect(lateSignal.aborted).toBe(false)
  })

  it('a call released by its own abort listener (settling as it is disposed) does not hold up quiesce', async () => {
    const calls = new InFlightCalls()
    const record = calls.track(new AbortController().signal, 'a')
    record.signal().addEventListener('abort', () => record.release())
    const quiet = calls.quiesce(new ToolError('DISPOSED', 'agent scope "a" was disposed'), 'a').then(() => 'quiet')
    expect(await Promise.race([quiet, tick().then(() => 'still waiting')])).toBe('quiet')
  })

  it('a call released by an earlier call\'s abort listener does not hold up quiesce either', async () => {
    const calls = new InFlightCalls()
    const first = calls.track(new AbortController().signal, undefined)
    const second = calls.track(new AbortController().signal, undefined)
    first.signal().addEventListener('abort', () => {
      first.release()
      second.release()
    })
    const quiet = calls.quiesce(new ToolError('DISPOSED', 'the tool runtime was disposed')).then(() => 'quiet')
    expect(await Promise.race([quiet, tick().then(() => 'still waiting')])).toBe('quiet')
  })
})
