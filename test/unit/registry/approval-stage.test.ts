/**
 * The `approval` stage through a real registry: what the handler is asked
 * (`parentCallId` for nested calls), whose handler decides (a call's own, inherited by
 * the calls nested in it), the wording of a denial, the clock a sub-call holds while the
 * handler is pending, the session log's records, and malformed inputs.
 */
import { describe, expect, it, afterEach, vi } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import type { ToolRuntime, ToolRuntimeOptions } from '../../../src/runtime-types.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { createMemorySessionLog } from '../../../src/session-log.js'
import type {
  ApprovalHandler,
  ApprovalRequest,
  ToolExecutionInput,
  ToolExecutionResult,
  PreToolDecision,
  ScopeKey,
  ToolExecutionToken,
} from '../../../src/types.js'
import { type InFlight, InFlightCalls } from '../../../src/registry/in-flight.js'
import { executePipeline } from '../../../src/registry/pipeline.js'
import { grantPlan } from '../../../src/registry/approval.js'
import { detachToolDefinition } from '../../../src/schema/tool-definition.js'
import { call, deferred, tick } from './helpers.js'
import { until } from '../../support/poll.js'
import { pipelineCore as core, type PipelineTestCore as Core } from './helpers.js'

const signal = (): AbortSignal => new AbortController().signal

function codeOf(result: ToolExecutionResult): string {
  return result.isError ? String(result.error.info?.code) : 'OK'
}

function messageOf(result: ToolExecutionResult): string {
  return result.isError ? result.error.message : 'OK'
}

/** The nested call's result that `outer` returned (as JSON text). */
function innerOf(outer: ToolExecutionResult): ToolExecutionResult {
  expect(outer.isError, messageOf(outer)).toBe(false)
  return JSON.parse((outer as { value: string }).value) as ToolExecutionResult
}

/**
 * A registry whose gate asks about `guarded`, and an `outer` tool whose body runs
 * `guarded` as a nested call (its own token as `parent`), with `nested` as extra input.
 */
function registry(options: ToolRuntimeOptions = {}, nested: Partial<ToolExecutionInput> = {}) {
  const runtime: ToolRuntime = createToolRuntime(options)
  const ran: string[] = []
  runtime.register(
    defineTool({
      name: 'guarded',
      description: 'asks (test)',
      parameters: {},
      output: { schema: { type: 'number' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
      execute: (_args, exec) => {
        ran.push('guarded')
        return exec.deadline ?? -1
      },
    }),
  )
  runtime.register(
    defineTool({
      name: 'outer',
      description: 'runs guarded as a nested call (test)',
      parameters: {},
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: async (_args, exec) => {
        const inner = await runtime.execute({ callId: `${exec.callId}:inner`, name: 'guarded', arguments: {}, signal: exec.signal, parent: exec.token, ...nested })
        return JSON.stringify(inner)
      },
    }),
  )
  runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'guarded' ? { kind: 'ask', reason: 'a person decides' } : decision))
  return { runtime, ran }
}

describe('the approval stage', () => {
  it('asks a nested call with parentCallId = the enclosing call id; a top-level call without it', async () => {
    const requests: ApprovalRequest[] = []
    const { runtime } = registry({ approval: (request) => (requests.push(request), true) })
    const outer = await runtime.execute({ callId: 'c-outer', name: 'outer', arguments: {}, signal: signal() })
    expect(codeOf(outer)).toBe('OK')
    await runtime.execute({ callId: 'c-top', name: 'guarded', arguments: {}, signal: signal() })
    expect(requests.map((r) => [r.execution.callId, r.parentCallId, r.reason])).toEqual([
      ['c-outer:inner', 'c-outer', 'a person decides'],
      ['c-top', undefined, 'a person decides'],
    ])
    expect('parentCallId' in requests[1]!).toBe(false)
    expect(Object.isFrozen(requests[0])).toBe(true)
  })

  it('a handler\'s ToolError DENIED_BY_APPROVAL is the result\'s message as is; any other failure is prefixed', async () => {
    const deny: ApprovalHandler = () => {
      throw new ToolError('DENIED_BY_APPROVAL', 'guarded was denied approval: not today')
    }
    const denied = await registry({ approval: deny }).runtime.execute({ callId: 'd1', name: 'guarded', arguments: {}, signal: signal() })
    expect([codeOf(denied), messageOf(denied)]).toEqual(['DENIED_BY_APPROVAL', 'guarded was denied approval: not today'])
    const crash: ApprovalHandler = () => Promise.reject(new TypeError('db down'))
    const crashed = await registry({ approval: crash }).runtime.execute({ callId: 'd2', name: 'guarded', arguments: {}, signal: signal() })
    expect([codeOf(crashed), messageOf(crashed)]).toEqual(['DENIED_BY_APPROVAL', 'guarded was denied: the approval handler failed: db down'])
    const otherCode: ApprovalHandler = () => {
      throw new ToolError('TOOL_FAILED', 'not a denial')
    }
    const other = await registry({ approval: otherCode }).runtime.execute({ callId: 'd3', name: 'guarded', arguments: {}, signal: signal() })
    expect(messageOf(other)).toBe('guarded was denied: the approval handler failed: not a denial')
    const refused = await registry({ approval: () => false }).runtime.execute({ callId: 'd4', name: 'guarded', arguments: {}, signal: signal() })
    expect(messageOf(refused)).toBe('guarded was denied by the approval handler (the gate asked because: a person decides)')
  })

  it('a call\'s own approval handler decides instead of the registry\'s, and the calls nested in it inherit it', async () => {
    const asked: string[] = []
    const { runtime, ran } = registry({ approval: (r) => (asked.push(`registry:${r.execution.callId}`), false) })
    const own: ApprovalHandler = (r) => (asked.push(`own:${r.execution.callId}`), true)
    const top = await runtime.execute({ callId: 'o1', name: 'guarded', arguments: {}, signal: signal(), approval: own })
    expect(codeOf(top)).toBe('OK')
    const nested = await runtime.execute({ callId: 'o2', name: 'outer', arguments: {}, signal: signal(), approval: own })
    expect(codeOf(innerOf(nested))).toBe('OK')
    const plain = await runtime.execute({ callId: 'o3', name: 'guarded', arguments: {}, signal: signal() })
    expect(codeOf(plain)).toBe('DENIED_BY_APPROVAL')
    expect(asked).toEqual(['own:o1', 'own:o2:inner', 'registry:o3'])
    expect(ran).toEqual(['guarded', 'guarded'])
  })

  it('a nested call\'s own handler wins over the one it would inherit', async () => {
    const asked: string[] = []
    const { runtime } = registry({}, { approval: () => (asked.push('inner-own'), true) })
    const result = await runtime.execute({ callId: 'w1', name: 'outer', arguments: {}, signal: signal(), approval: () => (asked.push('outer-own'), false) })
    expect(codeOf(innerOf(result))).toBe('OK')
    expect(asked).toEqual(['inner-own'])
  })

  it('holds the call\'s clock exactly while the handler is pending, and moves exec.deadline by the held time', async () => {
    const log: string[] = []
    let releaseHandler!: (value: boolean) => void
    const holdWallClock = () => {
      log.push('hold')
      return () => log.push('release')
    }
    const { runtime } = registry(
      {
        approval: () => {
          log.push('asked')
          return new Promise<boolean>((resolve) => (releaseHandler = resolve))
        },
      },
      { deadline: 1_000_000, holdWallClock },
    )
    const pending = runtime.execute({ callId: 'h1', name: 'outer', arguments: {}, signal: signal() })
    await until(() => log.includes('asked'), 'the approval handler')
    expect(log).toEqual(['hold', 'asked'])
    await new Promise((resolve) => setTimeout(resolve, 60))
    releaseHandler(true)
    const inner = innerOf(await pending)
    expect(log).toEqual(['hold', 'asked', 'release'])
    const deadline = (inner as { value: number }).value
    expect(deadline).toBeGreaterThanOrEqual(1_000_000 + 55)
    expect(deadline).toBeLessThan(1_000_000 + 5_000)
  })

  it('releases the held clock when the call is cancelled while it waits, and contains a clock that throws', async () => {
    const log: string[] = []
    const controller = new AbortController()
    let asked = false
    const { runtime } = registry({ approval: () => ((asked = true), new Promise<boolean>(() => {})) }, { holdWallClock: () => (log.push('hold'), () => log.push('release')) })
    const pending = runtime.execute({ callId: 'h2', name: 'outer', arguments: {}, signal: controller.signal })
    // Cancelled while it waits: once the handler was asked, not after a 5 ms guess.
    await until(() => asked, 'the approval handler')
    controller.abort()
    const outer = await pending
    expect(log).toEqual(['hold', 'release'])
    // The outer body returned the nested ABORTED_BEFORE_DISPATCH; the outer call itself was aborted while it ran.
    expect(codeOf(outer)).toBe('ABORTED')

    const throwing = registry(
      { approval: () => true },
      {
        holdWallClock: () => {
          throw new Error('no clock')
        },
      },
    )
    const ok = await throwing.runtime.execute({ callId: 'h3', name: 'outer', arguments: {}, signal: signal() })
    expect(codeOf(innerOf(ok))).toBe('OK')
    expect(throwing.ran).toEqual(['guarded'])
  })

  it('does not hold the clock of a call that is not asked', async () => {
    const held: string[] = []
    const runtime = createToolRuntime({ approval: () => true })
    runtime.register(
      defineTool({ name: 'free', description: 'test', parameters: {}, output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] }, execute: () => 'ok' }),
    )
    const result = await runtime.execute({ callId: 'f1', name: 'free', arguments: {}, signal: signal(), holdWallClock: () => (held.push('hold'), () => {}) })
    expect(codeOf(result)).toBe('OK')
    expect(held).toEqual([])
  })

  it('the session log records a nested call\'s request and decision (with times), and nothing for a top-level call', async () => {
    const sessionLog = createMemorySessionLog()
    const { runtime } = registry({ sessionLog, approval: () => Promise.reject(new ToolError('DENIED_BY_APPROVAL', 'no')) })
    await runtime.execute({ callId: 's-top', name: 'guarded', arguments: {}, signal: signal() })
    expect(sessionLog.events).toEqual([])
    await runtime.execute({ callId: 's-outer', name: 'outer', arguments: {}, signal: signal() })
    expect(sessionLog.events).toEqual([
      { type: 'tool/approval-request', parentCallId: 's-outer', subCallId: 's-outer:inner', name: 'guarded', arguments: {}, reason: 'a person decides', requestedAt: expect.any(Number) },
      {
        type: 'tool/approval-decision',
        parentCallId: 's-outer',
        subCallId: 's-outer:inner',
        name: 'guarded',
        decision: 'deny',
        message: 'no',
        requestedAt: expect.any(Number),
        decidedAt: expect.any(Number),
        waitedMs: expect.any(Number),
      },
    ])
  })

  it('a throwing session log never changes the outcome', async () => {
    const { runtime, ran } = registry({
      approval: () => true,
      sessionLog: {
        append() {
          throw new Error('disk full')
        },
      },
    })
    const result = await runtime.execute({ callId: 't1', name: 'outer', arguments: {}, signal: signal() })
    expect(codeOf(innerOf(result))).toBe('OK')
    expect(ran).toEqual(['guarded'])
  })

  it.each([
    ['deadline', { deadline: Number.NaN }, 'deadline must be a finite number'],
    ['deadline', { deadline: '5' }, 'deadline must be a finite number'],
    ['holdWallClock', { holdWallClock: 1 }, 'holdWallClock must be a function'],
    ['approval', { approval: true }, 'approval must be a function'],
  ])('an input with a malformed %s is INVALID_EXECUTION', async (_field, extra, message) => {
    const { runtime } = registry({ approval: () => true })
    const result = await runtime.execute({ callId: 'x', name: 'guarded', arguments: {}, signal: signal(), ...(extra as object) } as ToolExecutionInput)
    expect(codeOf(result)).toBe('INVALID_EXECUTION')
    expect(messageOf(result)).toContain(message)
  })
})


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

describe('a call that asks may carry only its declared parameters', () => {
  /** A core whose raw tool `u` declares `properties` (none when `properties` is `{}`), and whose gate asks about every call. */
  function declaring(properties: Record<string, unknown>) {
    const asked: ApprovalRequest[] = []
    const c = core({ approval: (request) => (asked.push(request), true) })
    c.layers.add(
      undefined,
      detachToolDefinition({
        name: 'u',
        description: 'declares its parameters (test)',
        parameters: { type: 'object', properties },
        output: { schema: { type: 'string' }, render: (_a: unknown, v: string) => [{ type: 'text', text: v }] },
        execute: () => 'ran',
      }),
    )
    asks(c, 'r')
    return { c, asked, go: (args: unknown) => executePipeline(c, call('u', args)) }
  }

  it('one undeclared key: INVALID_ARGS (ToolArgsError) naming it and the declared ones, before anyone is asked', async () => {
    const { asked, go } = declaring({ a: { type: 'number' }, b: { type: 'string' } })
    const result = await go({ a: 1, x: true })
    expect(outcome(result)).toEqual(['INVALID_ARGS', 'u asks for approval, so its arguments may carry only its declared parameters: "/x" is not declared (declared: a, b)'])
    expect(result.isError && result.error.info).toStrictEqual({ name: 'ToolArgsError', code: 'INVALID_ARGS' })
    expect('additionalContexts' in result).toBe(false)
    expect(asked).toEqual([])
  })

  it('several undeclared keys "are" not declared, listed in order; no declared parameter says none', async () => {
    const two = declaring({ a: { type: 'number' } })
    expect(outcome(await two.go({ x: 1, a: 2, y: 3 }))).toEqual(['INVALID_ARGS', 'u asks for approval, so its arguments may carry only its declared parameters: "/x", "/y" are not declared (declared: a)'])
    const none = declaring({})
    expect(outcome(await none.go({ x: 1 }))).toEqual(['INVALID_ARGS', 'u asks for approval, so its arguments may carry only its declared parameters: "/x" is not declared (declared: none)'])
    expect([...two.asked, ...none.asked]).toEqual([])
  })

  it('declared keys only: the handler is asked and the body runs', async () => {
    const { asked, go } = declaring({ a: { type: 'number' } })
    expect(outcome(await go({ a: 1 }))).toEqual(['OK', 'ran'])
    expect(asked).toHaveLength(1)
  })
})

describe('a plan grant pre-approves the direct sub-calls of one run until released', () => {
  it('a granted name is not asked; another name is; after the release it is asked again', async () => {
    const asked: string[] = []
    const c = core({ approval: (request) => (asked.push(request.execution.name), true) })
    asks(c, 'r')
    const parent = liveParent(c, 'run-g')
    const release = grantPlan(parent, ['t'])
    expect(outcome(await run(c, { parent }))).toEqual(['OK', -1])
    expect(asked).toEqual([])
    release()
    expect(outcome(await run(c, { parent }))).toEqual(['OK', -1])
    expect(asked).toEqual(['t'])
    const other = grantPlan(parent, ['not-t'])
    await run(c, { parent })
    other()
    expect(asked).toEqual(['t', 't'])
  })

  it("a stale release (an earlier grant of the same run) leaves the later grant in place", async () => {
    const asked: string[] = []
    const c = core({ approval: (request) => (asked.push(request.execution.name), true) })
    asks(c)
    const parent = liveParent(c, 'run-h')
    const first = grantPlan(parent, ['t'])
    const second = grantPlan(parent, ['t'])
    first()
    await run(c, { parent })
    expect(asked).toEqual([])
    second()
    await run(c, { parent })
    expect(asked).toEqual(['t'])
  })

  it('a grant covers only calls whose parent is the run: a top-level call still asks', async () => {
    const asked: string[] = []
    const c = core({ approval: (request) => (asked.push(request.execution.name), true) })
    asks(c)
    const parent = liveParent(c, 'run-i')
    const release = grantPlan(parent, ['t'])
    await run(c)
    release()
    expect(asked).toEqual(['t'])
  })
})
