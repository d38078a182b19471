import { describe, expect, it, afterEach, vi } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import type { PostToolDecision, PreToolDecision, ToolGuard, ToolDispatchExecution } from '../../../src/types.js'
import { addTool, call, deepFrozen, echoTool, tick, deferred } from './helpers.js'
import { pipelineCore as core, type PipelineTestCore as Core } from './helpers.js'
import type { ToolExecutionResult, ToolExecutionInput, AnyToolDefinition, ToolRunContext } from './types.js'
import { executePipeline } from '../../../src/registry/pipeline.js'
import { parseInput } from '../../../src/registry/call.js'
import { dispatchDefinition } from '../../../src/registry/dispatch.js'

const codeOf = (r: ToolExecutionResult) => (r.isError ? r.error.info?.code : 'OK')
const text = (r: ToolExecutionResult) => r.content.map((b) => (b.type === 'text' ? b.text : '')).join('')

describe('execute: the happy path and the phase order', () => {
  it('runs gate → guards → wrappers → body → post → finalize → result, in that order', async () => {
    const order: string[] = []
    const runtime = createToolRuntime({ approval: () => (order.push('approval'), true) })
    runtime.register({
      ...echoTool('t', (args) => (order.push('body'), args.text ?? '')),
      finalizeContent: () => (order.push('finalize'), undefined),
    } as never)
    runtime.on('tools/pre-execute', () => (order.push('gate'), { kind: 'ask' }))
    runtime.guard(() => (order.push('guard'), undefined))
    runtime.on('tools/execute', async (_e, next) => {
      order.push('wrap:in')
      const v = await next()
      order.push('wrap:out')
      return v
    })
    runtime.on('tools/post-execute', (d) => (order.push('post'), d))
    runtime.on('tools/result', () => void order.push('result'))
    const result = await runtime.execute(call('t', { text: 'hi' }))
    expect(result).toMatchObject({ isError: false, value: 'hi', content: [{ type: 'text', text: 'hi' }] })
    expect(order).toEqual(['gate', 'guard', 'approval', 'wrap:in', 'body', 'wrap:out', 'post', 'finalize', 'result'])
    expect(deepFrozen(result)).toBe(true)
  })

  it('snapshots and freezes arguments and mints a fresh token whose parent is the caller-given live token', async () => {
    const runtime = createToolRuntime()
    const seen: { args: unknown; token: symbol; parent?: symbol }[] = []
    runtime.register(
      echoTool('outer', async (_a, exec) => {
        seen.push({ args: exec.arguments, token: exec.token })
        await runtime.execute(call('inner', {}, { parent: exec.token }))
        return 'ok'
      }),
    )
    runtime.register(echoTool('inner', (_a, exec) => (seen.push({ args: exec.arguments, token: exec.token, parent: exec.parent }), 'i')))
    const args = { text: 'x', nested: { deep: [1, 2] } }
    await runtime.execute(call('outer', args))
    args.nested.deep.push(3)
    expect(seen[0]!.args).toEqual({ text: 'x', nested: { deep: [1, 2] } })
    expect(Object.isFrozen((seen[0]!.args as { nested: object }).nested)).toBe(true)
    expect(typeof seen[0]!.token).toBe('symbol')
    expect(seen[1]!.parent).toBe(seen[0]!.token)
    expect(seen[1]!.token).not.toBe(seen[0]!.token)
    // A forged parent (not an in-flight token) is dropped.
    const forged = Symbol('forged')
    await runtime.execute(call('inner', {}, { parent: forged as never }))
    expect(seen[2]!.parent).toBeUndefined()
  })

  it('computes presentationMeta only for direct top-level calls', async () => {
    const runtime = createToolRuntime()
    let innerMeta: unknown = 'unset'
    runtime.register({
      ...echoTool('m'),
      output: {
        schema: { type: 'string' },
        render: (_a: unknown, v: string) => [{ type: 'text', text: v }],
        presentationMeta: (_a: unknown, v: string) => ({ length: v.length }),
      },
    } as never)
    runtime.register(
      echoTool('outer', async (_a, exec) => {
        const r = await runtime.execute(call('m', { text: 'abc' }, { parent: exec.token }))
        innerMeta = r.meta
        return 'o'
      }),
    )
    const top = await runtime.execute(call('m', { text: 'abcd' }))
    expect(top.meta).toEqual({ length: 4 })
    await runtime.execute(call('outer'))
    expect(innerMeta).toBeUndefined()
  })
})

describe('failures before dispatch', () => {
  it('malformed input → INVALID_EXECUTION, never a rejection', async () => {
    const runtime = createToolRuntime()
    const bad = [null, 1, {}, { callId: 'x', name: 'y' }, { callId: 1, name: 'y', signal: new AbortController().signal }]
    for (const input of bad) {
      const result = await runtime.execute(input as never)
      expect(codeOf(result)).toBe('INVALID_EXECUTION')
      expect(text(result)).toBe(`Error: ${(result as { error: { message: string } }).error.message}`)
    }
    const hostile = new Proxy({}, { get: () => { throw new Error('trap') } })
    expect(codeOf(await runtime.execute(hostile as never))).toBe('INVALID_EXECUTION')
  })

  it('unknown tool → UNKNOWN_TOOL; non-lossless arguments and schema violations → INVALID_ARGS without policy', async () => {
    const runtime = createToolRuntime()
    const policy: string[] = []
    runtime.on('tools/pre-execute', (d) => (policy.push('gate'), d))
    runtime.guard(() => void policy.push('guard'))
    runtime.register(addTool())
    expect(codeOf(await runtime.execute(call('nope')))).toBe('UNKNOWN_TOOL')
    for (const args of [{ a: 1, b: 2n }, { a: undefined, b: 1 }, { a: Number.NaN, b: 1 }, { a: 1 }, { a: 'x', b: 1 }]) {
      const result = await runtime.execute(call('add', args))
      expect(codeOf(result)).toBe('INVALID_ARGS')
      expect(result.content).toEqual([{ type: 'text', text: `Error: ${(result as { error: { message: string } }).error.message}` }])
    }
    expect(policy).toEqual([])
  })

  it('gate deny → DENIED_BY_GATE; a later listener cannot undo it (it does not even run)', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool())
    let later = 0
    runtime.on('tools/pre-execute', () => ({ kind: 'deny', reason: 'no echo today' }))
    runtime.on('tools/pre-execute', () => (later++, { kind: 'allow' }))
    const result = await runtime.execute(call('echo'))
    expect(codeOf(result)).toBe('DENIED_BY_GATE')
    expect(text(result)).toBe('Error: no echo today')
    expect(later).toBe(0)
  })

  it('ask is sticky: a later allow cannot skip approval', async () => {
    let asked = 0
    const runtime = createToolRuntime({ approval: () => (asked++, false) })
    runtime.register(echoTool())
    runtime.on('tools/pre-execute', () => ({ kind: 'ask', reason: 'writes' }))
    runtime.on('tools/pre-execute', () => ({ kind: 'allow' }))
    const result = await runtime.execute(call('echo'))
    expect(codeOf(result)).toBe('DENIED_BY_APPROVAL')
    expect(asked).toBe(1)
  })

  it.each([
    ['throwing gate', 'gate-throw', 'DENIED_BY_GATE'],
    ['malformed gate decision', 'gate-bad', 'DENIED_BY_GATE'],
    ['throwing guard', 'guard-throw', 'DENIED_BY_GUARD'],
    ['non-string guard verdict', 'guard-bad', 'DENIED_BY_GUARD'],
  ])('%s fails closed', async (_label, kind, code) => {
    const runtime = createToolRuntime()
    let ran = false
    runtime.register(echoTool('echo', () => ((ran = true), 'x')))
    if (kind === 'gate-throw') runtime.on('tools/pre-execute', () => { throw new Error('gate broke') })
    if (kind === 'gate-bad') runtime.on('tools/pre-execute', () => ({ kind: 'maybe' }) as never)
    if (kind === 'guard-throw') runtime.guard(() => { throw new Error('guard broke') })
    if (kind === 'guard-bad') runtime.guard(() => 42 as never)
    const result = await runtime.execute(call('echo'))
    expect(codeOf(result)).toBe(code)
    expect(ran).toBe(false)
  })

  it('guards are monotonic and global guards run before agent guards; an agent guard sees only its agent', async () => {
    const runtime = createToolRuntime()
    const seen: string[] = []
    runtime.register(echoTool())
    runtime.guard((e) => (seen.push(`global:${e.agent ?? '-'}`), undefined))
    runtime.agent('a').guard((e) => (seen.push(`a:${e.agent}`), 'agent a says no'))
    const ra = await runtime.agent('a').execute(call('echo'))
    const rb = await runtime.execute(call('echo', {}, { agent: 'b' }))
    expect(codeOf(ra)).toBe('DENIED_BY_GUARD')
    expect(text(ra)).toBe('Error: agent a says no')
    expect(codeOf(rb)).toBe('OK')
    expect(seen).toEqual(['global:a', 'a:a', 'global:b'])
  })

  it('a guard-denied ask is never put to approval', async () => {
    let asked = 0
    const runtime = createToolRuntime({ approval: () => (asked++, true) })
    runtime.register(echoTool())
    runtime.on('tools/pre-execute', () => ({ kind: 'ask' }))
    runtime.guard(() => 'no')
    expect(codeOf(await runtime.execute(call('echo')))).toBe('DENIED_BY_GUARD')
    expect(asked).toBe(0)
  })

  it.each([
    ['absent handler', undefined],
    ['false', () => false],
    ['truthy non-true', () => 1 as never],
    ['throwing handler', () => { throw new Error('ui crashed') }],
    ['rejecting handler', async () => { throw new Error('ui crashed') }],
  ])('approval: %s → DENIED_BY_APPROVAL', async (_label, approval) => {
    const runtime = createToolRuntime(approval === undefined ? {} : { approval })
    runtime.register(echoTool())
    runtime.on('tools/pre-execute', () => ({ kind: 'ask', reason: 'because' }))
    const result = await runtime.execute(call('echo'))
    expect(codeOf(result)).toBe('DENIED_BY_APPROVAL')
  })

  it('a guard that aborts the signal stops the call before any wrapper runs (the last abort check before dispatch)', async () => {
    const runtime = createToolRuntime()
    const ran: string[] = []
    runtime.register(echoTool('t', () => (ran.push('body'), 'x')))
    const controller = new AbortController()
    runtime.guard(() => {
      controller.abort(new Error('stop'))
      return undefined
    })
    runtime.on('tools/execute', (_e, next) => (ran.push('wrapper'), next()))
    const result = await runtime.execute(call('t', {}, { signal: controller.signal }))
    expect(codeOf(result)).toBe('ABORTED_BEFORE_DISPATCH')
    expect(ran).toEqual([])
  })

  it('the approval handler receives the frozen execution and the ask reason', async () => {
    let request: unknown
    const runtime = createToolRuntime({ approval: (r) => ((request = r), true) })
    runtime.register(echoTool())
    runtime.on('tools/pre-execute', () => ({ kind: 'ask', reason: 'why' }))
    expect(codeOf(await runtime.execute(call('echo', { text: 'a' })))).toBe('OK')
    expect(request).toMatchObject({ reason: 'why', execution: { name: 'echo', arguments: { text: 'a' } } })
  })
})

describe('dispatch: wrappers and the body', () => {
  it('a body throw → TOOL_FAILED (or its own ToolError code), content exactly Error: <message>', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('plain', () => { throw new Error('disk full') }))
    runtime.register(echoTool('coded', () => { throw new ToolError('CODE_RUN_FAILED', 'code run failed (exception): x') }))
    runtime.register(echoTool('string', () => { throw 'bare string' }))
    const plain = await runtime.execute(call('plain'))
    expect(plain).toEqual({
      isError: true,
      error: { message: 'disk full', info: { name: 'Error', code: 'TOOL_FAILED' } },
      content: [{ type: 'text', text: 'Error: disk full' }],
    })
    expect(codeOf(await runtime.execute(call('coded')))).toBe('CODE_RUN_FAILED')
    expect(text(await runtime.execute(call('string')))).toBe('Error: bare string')
  })

  it('invalid output: not lossless, schema mismatch, render throw, bad render content, presentationMeta throw → INVALID_OUTPUT', async () => {
    const runtime = createToolRuntime()
    // A render that accepts anything, so each case fails at the step it is named after.
    const total = { schema: { type: 'string' }, render: (_a: unknown, v: unknown) => [{ type: 'text', text: String(v) }] }
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['undef', { output: total, execute: () => undefined }, /not lossless JSON/],
      ['bigint', { output: total, execute: () => 1n }, /not lossless JSON/],
      ['wrongtype', { output: total, execute: () => 42 }, /does not match the output schema: \(root\): expected string, got integer/],
      ['renderthrow', { output: { schema: { type: 'string' }, render: () => { throw new Error('r') } } }, /output\.render failed: r/],
      ['renderbad', { output: { schema: { type: 'string' }, render: () => [{ type: 'video' }] } }, /output\.render failed: .*'text' or 'image'/],
      ['metathrow', { output: { schema: { type: 'string' }, render: () => [], presentationMeta: () => { throw new Error('m') } } }, /presentationMeta failed: m/],
    ]
    for (const [name, patch] of cases) runtime.register({ ...echoTool(name), ...patch } as never)
    for (const [name, , reason] of cases) {
      const result = await runtime.execute(call(name))
      expect([name, codeOf(result)]).toEqual([name, 'INVALID_OUTPUT'])
      expect(text(result)).toMatch(reason)
    }
  })

  it('checks the value against output.schema before render ever sees it', async () => {
    const runtime = createToolRuntime()
    const rendered: unknown[] = []
    runtime.register({
      ...echoTool('t', () => 42 as never),
      output: { schema: { type: 'string' }, render: (_a: unknown, v: unknown) => (rendered.push(v), [{ type: 'text', text: String(v) }]) },
    } as never)
    const result = await runtime.execute(call('t'))
    expect(codeOf(result)).toBe('INVALID_OUTPUT')
    expect(text(result)).toBe('Error: t returned an invalid output: the value does not match the output schema: (root): expected string, got integer')
    expect(rendered).toEqual([])
  })

  it('wrappers nest outermost-first, may replace only the signal, and the caller signal is re-fused before the body', async () => {
    const runtime = createToolRuntime()
    const order: string[] = []
    let abortedInBody: boolean[] = []
    const caller = new AbortController()
    runtime.register(
      echoTool('t', (_a, exec) => {
        abortedInBody.push(exec.signal.aborted)
        replacement.abort()
        abortedInBody.push(exec.signal.aborted)
        return 'v'
      }),
    )
    runtime.register(
      echoTool('u', (_a, exec) => {
        caller.abort()
        abortedInBody.push(exec.signal.aborted)
        return 'v'
      }),
    )
    let replacement = new AbortController()
    runtime.on('tools/execute', async (exec, next) => {
      replacement = new AbortController()
      order.push('outer')
      expect(() => {
        ;(exec as { name: string }).name = 'other'
      }).toThrow()
      delete (exec as { signal?: AbortSignal }).signal
      expect(exec.signal).toBeInstanceOf(AbortSignal)
      exec.signal = replacement.signal
      return next()
    })
    runtime.on('tools/execute', (exec, next) => (order.push(`inner:${exec.signal === replacement.signal}`), next()))
    const result = await runtime.execute(call('t', {}, { signal: caller.signal }))
    expect(codeOf(result)).toBe('OK')
    expect(order).toEqual(['outer', 'inner:true'])
    // The body's signal follows both the wrapper's replacement and the caller's signal.
    expect(abortedInBody).toEqual([false, true])
    abortedInBody = []
    expect(codeOf(await runtime.execute(call('u', {}, { signal: caller.signal })))).toBe('ABORTED')
    expect(abortedInBody).toEqual([true])
  })

  it('a wrapper-authored value is normalized through the output declaration', async () => {
    const runtime = createToolRuntime()
    let bodyRan = false
    const rendered: unknown[] = []
    const output = { schema: { type: 'string' }, render: (_a: unknown, v: unknown) => (rendered.push(v), [{ type: 'text', text: String(v) }]) }
    runtime.register({ ...echoTool('t', () => ((bodyRan = true), 'body')), output } as never)
    runtime.register({ ...echoTool('u', () => 'body'), output } as never)
    runtime.on('tools/execute', async (exec) => (exec.name === 't' ? 'cached' : (42 as never)))
    const t = await runtime.execute(call('t'))
    expect(t).toMatchObject({ isError: false, value: 'cached', content: [{ type: 'text', text: 'cached' }] })
    expect(bodyRan).toBe(false)
    // The wrapper's 42 fails the output schema; it is never rendered.
    const u = await runtime.execute(call('u'))
    expect(codeOf(u)).toBe('INVALID_OUTPUT')
    expect(text(u)).toMatch(/does not match the output schema/)
    expect(rendered).toEqual(['cached'])
  })

  it("a wrapper's own throw → WRAPPER_FAILED; the body's error rethrown by a wrapper stays the body's", async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('ok'))
    runtime.register(echoTool('bad', () => { throw new Error('body broke') }))
    runtime.on('tools/execute', async (exec, next) => {
      if (exec.name === 'ok') throw new Error('wrapper broke')
      try {
        return await next()
      } catch (error) {
        throw error
      }
    })
    const ok = await runtime.execute(call('ok'))
    expect(codeOf(ok)).toBe('WRAPPER_FAILED')
    expect(text(ok)).toContain('wrapper broke')
    const bad = await runtime.execute(call('bad'))
    expect(codeOf(bad)).toBe('TOOL_FAILED')
    expect(text(bad)).toBe('Error: body broke')
  })

  it('a wrapper setting a non-signal fails as WRAPPER_FAILED', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool())
    runtime.on('tools/execute', async (exec, next) => {
      ;(exec as { signal: unknown }).signal = 'not a signal'
      return next()
    })
    expect(codeOf(await runtime.execute(call('echo')))).toBe('WRAPPER_FAILED')
  })

  it('execute() waits for a body a wrapper did not await (quiescence)', async () => {
    const runtime = createToolRuntime()
    let bodyDone = false
    runtime.register(
      echoTool('slow', async () => {
        await new Promise((r) => setTimeout(r, 20))
        bodyDone = true
        return 'late'
      }),
    )
    runtime.on('tools/execute', async (_exec, next) => {
      void next().catch(() => {})
      return 'early'
    })
    const result = await runtime.execute(call('slow'))
    expect(bodyDone).toBe(true)
    expect(codeOf(result)).toBe('OK')
  })

  it('deferContext keeps contexts even when the body throws; bad contexts throw to the body', async () => {
    const runtime = createToolRuntime()
    let thrown: unknown
    runtime.register(
      echoTool('t', (_a, exec) => {
        exec.deferContext({ source: 't', content: 'remember this', meta: { n: 1 } })
        try {
          exec.deferContext({ source: 't', content: 'x', meta: 1n } as never)
        } catch (error) {
          thrown = error
        }
        throw new Error('failed after deferring')
      }),
    )
    const result = await runtime.execute(call('t'))
    expect(codeOf(result)).toBe('TOOL_FAILED')
    expect(result.additionalContexts).toEqual([{ source: 't', content: 'remember this', meta: { n: 1 } }])
    expect((thrown as { code?: string }).code).toBe('INVALID_JSON')
  })
})

describe('tools/post-execute', () => {
  const setup = (...decisions: ((d: PostToolDecision) => unknown)[]) => {
    const runtime = createToolRuntime()
    runtime.register(
      echoTool('t', (args, exec) => {
        exec.deferContext({ source: 'tool', content: 'deferred' })
        return args.text ?? 'v'
      }),
    )
    for (const d of decisions) runtime.on('tools/post-execute', d as never)
    return runtime
  }

  it('accept replaces content and keeps value/meta; contexts: tool-deferred first, then decision', async () => {
    const runtime = setup(() => ({ kind: 'accept', content: [{ type: 'text', text: 'replaced' }], additionalContexts: [{ source: 'post', content: 'p' }] }))
    const r = await runtime.execute(call('t', { text: 'orig' }))
    expect(r).toMatchObject({ isError: false, value: 'orig', content: [{ type: 'text', text: 'replaced' }] })
    expect(r.additionalContexts!.map((c) => c.source)).toEqual(['tool', 'post'])
  })

  it('accept replaces value: revalidated and re-rendered', async () => {
    const runtime = setup(() => ({ kind: 'accept', value: 'new' }))
    expect(await runtime.execute(call('t'))).toMatchObject({ value: 'new', content: [{ type: 'text', text: 'new' }] })
    const invalid = setup(() => ({ kind: 'accept', value: 5 }))
    const rejected = await invalid.execute(call('t'))
    expect(codeOf(rejected)).toBe('POST_POLICY_FAILED')
    // Revalidation, not render, is what refuses it.
    expect(text(rejected)).toMatch(/the replacement value is invalid: the value does not match the output schema/)
  })

  it('accept replacing both content and value → POST_POLICY_FAILED', async () => {
    const runtime = setup(() => ({ kind: 'accept', value: 'x', content: [] }))
    const r = await runtime.execute(call('t'))
    expect(codeOf(r)).toBe('POST_POLICY_FAILED')
    expect(r.additionalContexts!.map((c) => c.source)).toEqual(['tool'])
  })

  it('block → BLOCKED with the feedback as message; only the block contexts survive; later listeners cannot undo it', async () => {
    let later = 0
    const runtime = setup(
      () => ({ kind: 'block', feedback: 'not allowed to see that', additionalContexts: [{ source: 'policy', content: 'why' }] }),
      () => (later++, { kind: 'accept' }),
    )
    const r = await runtime.execute(call('t'))
    expect(r).toEqual({
      isError: true,
      error: { message: 'not allowed to see that', info: { name: 'ToolError', code: 'BLOCKED' } },
      content: [{ type: 'text', text: 'Error: not allowed to see that' }],
      additionalContexts: [{ source: 'policy', content: 'why' }],
    })
    expect('value' in r).toBe(false)
    expect(later).toBe(0)
  })

  it('a throwing or malformed post listener → POST_POLICY_FAILED', async () => {
    for (const listener of [() => { throw new Error('x') }, () => null, () => ({ kind: 'accept', content: 'text' }), () => ({ kind: 'block' })]) {
      const runtime = setup(listener as never)
      expect(codeOf(await runtime.execute(call('t')))).toBe('POST_POLICY_FAILED')
    }
  })

  it('post listeners see failures too but cannot give them a value', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('t', () => { throw new Error('nope') }))
    const seen: string[] = []
    runtime.on('tools/post-execute', (d, _e, r) => (seen.push(String(codeOf(r))), { kind: 'accept', value: 'rescued' }))
    expect(codeOf(await runtime.execute(call('t')))).toBe('POST_POLICY_FAILED')
    expect(seen).toEqual(['TOOL_FAILED'])
  })
})

describe('finalizeContent and tools/result', () => {
  /**
   * One runtime per outcome, each with the same tool (typed arguments, a counting
   * finalizeContent): every normalized result of a resolved tool is finalized once,
   * whichever stage produced it.
   */
  type Setup = (runtime: ReturnType<typeof createToolRuntime>, controller: AbortController) => void
  const outcomes: [string, Setup, unknown, string][] = [
    ['a success', () => {}, { a: 1, b: 2 }, 'OK'],
    ['arguments failing the schema', () => {}, { a: 'x' }, 'INVALID_ARGS'],
    ['arguments that are not lossless JSON (-0)', () => {}, { a: -0, b: 1 }, 'INVALID_ARGS'],
    ['a gate denial', (r) => void r.on('tools/pre-execute', () => ({ kind: 'deny', reason: 'd' })), { a: 1, b: 2 }, 'DENIED_BY_GATE'],
    ['a throwing gate', (r) => void r.on('tools/pre-execute', () => { throw new Error('g') }), { a: 1, b: 2 }, 'DENIED_BY_GATE'],
    ['a guard denial', (r) => void r.guard(() => 'no'), { a: 1, b: 2 }, 'DENIED_BY_GUARD'],
    ['a throwing guard', (r) => void r.guard(() => { throw new Error('g') }), { a: 1, b: 2 }, 'DENIED_BY_GUARD'],
    ['an ask with no approval handler', (r) => void r.on('tools/pre-execute', () => ({ kind: 'ask' })), { a: 1, b: 2 }, 'DENIED_BY_APPROVAL'],
    ['a signal aborted before the call', (_r, c) => c.abort(), { a: 1, b: 2 }, 'ABORTED_BEFORE_DISPATCH'],
    ['a guard aborting the signal before dispatch', (r, c) => void r.guard(() => void c.abort()), { a: 1, b: 2 }, 'ABORTED_BEFORE_DISPATCH'],
    ['an abort while the body runs', (r, c) => void r.on('tools/execute', (_e, next) => { const running = next(); c.abort(); return running }), { a: 1, b: 2 }, 'ABORTED'],
    ['a timeout', (r) => void r.on('tools/execute', () => Promise.reject(new ToolError('TOOL_TIMEOUT', 't timed out'))), { a: 1, b: 2 }, 'TOOL_TIMEOUT'],
    ['a body failure', (r) => void r.on('tools/execute', async () => { throw new Error('x') }), { a: 1, b: 2 }, 'WRAPPER_FAILED'],
    ['a body throw', () => {}, { a: 1, b: 1000 }, 'TOOL_FAILED'],
    ['an invalid output', (r) => void r.on('tools/execute', async () => 'not a number' as never), { a: 1, b: 2 }, 'INVALID_OUTPUT'],
    ['a post-policy block', (r) => void r.on('tools/post-execute', () => ({ kind: 'block', feedback: 'hidden' })), { a: 1, b: 2 }, 'BLOCKED'],
    ['a failing post-policy', (r) => void r.on('tools/post-execute', () => { throw new Error('p') }), { a: 1, b: 2 }, 'POST_POLICY_FAILED'],
  ]

  it.each(outcomes)('finalizeContent runs exactly once for %s', async (_label, setup, args, expected) => {
    const calls: string[] = []
    const runtime = createToolRuntime()
    runtime.register({
      ...addTool('t'),
      execute: (a: { a: number; b: number }) => {
        if (a.b === 1000) throw new Error('body broke')
        return a.a + a.b
      },
      finalizeContent: (_exec: unknown, r: ToolExecutionResult) => {
        calls.push(String(codeOf(r)))
        return [{ type: 'text', text: `final:${text(r)}` }]
      },
    } as never)
    const controller = new AbortController()
    setup(runtime, controller)
    const result = await runtime.execute(call('t', args, { signal: controller.signal }))
    expect(codeOf(result)).toBe(expected)
    expect(calls).toEqual([expected])
    expect(text(result)).toMatch(/^final:/)
  })

  it('finalizeContent does not run for a call that resolved no tool (unknown, routed back, malformed, disposed)', async () => {
    let finalized = 0
    const tool = { ...echoTool('t'), finalizeContent: () => void finalized++ }
    const code = createToolRuntime({ mode: 'code', codeRuntime: { language: 'typescript', isolation: 'test', capabilities: { streamsLogs: false, memoryLimit: false, capturesStdio: false }, run: async () => ({ logs: [] }), dispose: async () => {} } })
    code.register(tool as never)
    expect(codeOf(await code.execute(call('t')))).toBe('UNKNOWN_TOOL')
    const plain = createToolRuntime()
    plain.register(tool as never)
    expect(codeOf(await plain.execute(call('nope')))).toBe('UNKNOWN_TOOL')
    expect(codeOf(await plain.execute({ callId: 'x', name: 't' } as never))).toBe('INVALID_EXECUTION')
    await plain.dispose()
    expect(codeOf(await plain.execute(call('t')))).toBe('DISPOSED')
    expect(finalized).toBe(0)
  })

  it('a throwing or malformed finalizeContent keeps the previous content', async () => {
    for (const finalizeContent of [() => { throw new Error('x') }, () => 'nope']) {
      const runtime = createToolRuntime()
      runtime.register({ ...echoTool('t'), finalizeContent } as never)
      expect(await runtime.execute(call('t', { text: 'kept' }))).toMatchObject({ content: [{ type: 'text', text: 'kept' }] })
    }
  })

  it('tools/result observes the final frozen result once; a throwing or async-rejecting observer changes nothing', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool())
    const seen: ToolExecutionResult[] = []
    runtime.on('tools/result', () => { throw new Error('observer') })
    runtime.on('tools/result', (async () => { throw new Error('async observer') }) as never)
    runtime.on('tools/result', (_e, r) => void seen.push(r))
    const result = await runtime.execute(call('echo', { text: 'x' }))
    await tick()
    expect(seen).toEqual([result])
    expect(seen[0]).toBe(result)
    expect(deepFrozen(result)).toBe(true)
  })

  it('tools/result settles what an observer returns only when it is an object thenable (a promise), with two handlers', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool())
    const subscribed: string[] = []
    // A function that carries a then method is not a promise an observer returned: left alone.
    const functionWithThen = Object.assign(() => {}, { then: () => void subscribed.push('function') })
    runtime.on('tools/result', (() => functionWithThen) as never)
    runtime.on('tools/result', (() => ({ then: (onFulfilled: unknown, onRejected: unknown) => void subscribed.push(`${typeof onFulfilled},${typeof onRejected}`) })) as never)
    await runtime.execute(call('echo'))
    expect(subscribed).toEqual(['function,function'])
  })

  it('agent-scoped listeners only see that agent’s executions', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool())
    const seen: string[] = []
    runtime.agent('a').on('tools/result', (e) => void seen.push(`a saw ${e.agent ?? 'global'}`))
    runtime.agent('a').on('tools/pre-execute', (d, e) => (seen.push(`a gate ${e.agent}`), d))
    runtime.on('tools/result', (e) => void seen.push(`global saw ${e.agent ?? 'global'}`))
    await runtime.execute(call('echo'))
    await runtime.execute(call('echo', {}, { agent: 'b' }))
    await runtime.agent('a').execute(call('echo'))
    expect(seen).toEqual(['global saw global', 'global saw b', 'a gate a', 'global saw a', 'a saw a'])
  })
})


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

describe('the tools/pre-execute waterfall: the decision each listener is handed', () => {
  it('a later ask replaces an earlier one: the approval handler is asked with the later reason', async () => {
    const reasons: unknown[] = []
    const c = core({ approval: (request) => (reasons.push(request.reason), true) })
    c.hooks.preExecute.add(() => ({ kind: 'ask', reason: 'first' }), undefined)
    c.hooks.preExecute.add(() => ({ kind: 'ask', reason: 'second' }), undefined)
    expect(outcome(await run(c))).toEqual(['OK', -1])
    expect(reasons).toEqual(['second'])
  })

  it('an allow after an ask hands the next listener that same ask, as a frozen copy with only the keys it has', async () => {
    const c = core({ approval: () => true })
    const handed: unknown[] = []
    c.hooks.preExecute.add(() => ({ kind: 'ask', extra: 'dropped' }) as PreToolDecision, undefined)
    c.hooks.preExecute.add((d) => (handed.push(d), { kind: 'allow' }), undefined)
    c.hooks.preExecute.add((d) => (handed.push(d), { kind: 'ask', reason: 'why' }), undefined)
    c.hooks.preExecute.add((d) => (handed.push(d), { kind: 'deny', reason: 'no', extra: 'dropped' }) as PreToolDecision, undefined)
    expect(outcome(await run(c))).toEqual(['DENIED_BY_GATE', 'no'])
    expect(handed).toStrictEqual([{ kind: 'ask' }, { kind: 'ask' }, { kind: 'ask', reason: 'why' }])
    expect(handed.map((d) => Object.keys(d as object))).toEqual([['kind'], ['kind'], ['kind', 'reason']])
    expect(handed.every((d) => Object.isFrozen(d))).toBe(true)
    expect(handed[0]).toBe(handed[1])
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

/*
 * A malformed execution input, as `execute()` receives it from an integrator: each
 * refusal is an `INVALID_EXECUTION` result with its own message (never a throw), and the
 * parsed input keeps whichever of `callId` and `name` were strings for the events.
 */
const signal = new AbortController().signal

const CASES: ReadonlyArray<readonly [string, unknown, string]> = [
  ['null', null, 'the execution input must be an object'],
  ['a string', 'call', 'the execution input must be an object'],
  ['a number callId', { callId: 1, name: 'n', signal }, 'the execution input needs a string callId'],
  ['a number name', { callId: 'c', name: 2, signal }, 'the execution input needs a string name'],
  ['no signal', { callId: 'c', name: 'n' }, 'the execution input needs an AbortSignal as signal'],
  ['a number agent', { callId: 'c', name: 'n', signal, agent: 1 }, 'the execution input agent must be a string'],
  ['a string parent', { callId: 'c', name: 'n', signal, parent: 'p' }, 'the execution input parent must be an execution token'],
  ['an infinite deadline', { callId: 'c', name: 'n', signal, deadline: Number.POSITIVE_INFINITY }, 'the execution input deadline must be a finite number (epoch ms)'],
  ['a string deadline', { callId: 'c', name: 'n', signal, deadline: '1' }, 'the execution input deadline must be a finite number (epoch ms)'],
  ['a hold that is not a function', { callId: 'c', name: 'n', signal, holdWallClock: 1 }, 'the execution input holdWallClock must be a function'],
  ['an approval that is not a function', { callId: 'c', name: 'n', signal, approval: 'yes' }, 'the execution input approval must be a function'],
  [
    'a throwing getter',
    {
      get callId(): string {
        throw new Error('boom')
      },
    },
    'the execution input could not be read: boom',
  ],
  [
    'a throwing getter whose error has no message',
    {
      get callId(): string {
        throw Object.assign(new Error(''), { name: 'Weird' })
      },
    },
    'the execution input could not be read: Weird',
  ],
]

describe('a malformed execution input', () => {
  it.each(CASES)('%s: INVALID_EXECUTION with its message', async (_label, input, message) => {
    const result = await createToolRuntime().execute(input as never)
    expect(result.isError).toBe(true)
    expect(result.isError && result.error).toEqual({ message, info: { name: 'ToolError', code: 'INVALID_EXECUTION' } })
    expect(parseInput(input)).toMatchObject({ ok: false, message })
  })

  it('keeps callId and name when they are strings, and only then', () => {
    expect(parseInput({ callId: 'c', name: 2, signal })).toMatchObject({ ok: false, callId: 'c', name: '' })
    expect(parseInput({ callId: 1, name: 'n', signal })).toMatchObject({ ok: false, callId: '', name: 'n' })
    expect(parseInput({ callId: 'c', name: 'n' })).toMatchObject({ ok: false, callId: 'c', name: 'n' })
    expect(parseInput(null)).toMatchObject({ ok: false, callId: '', name: '' })
  })

  it('accepts each optional member when it is of its type', () => {
    const parent = Symbol('token')
    const hold = () => () => {}
    const approval = () => ({ decision: 'allow' as const })
    const parsed = parseInput({ callId: 'c', name: 'n', signal, agent: 'a', parent, deadline: 5, holdWallClock: hold, approval, arguments: { x: 1 } })
    expect(parsed).toMatchObject({ ok: true, message: '', callId: 'c', name: 'n', signal, agent: 'a', parent, deadline: 5, holdWallClock: hold, approval, args: { x: 1 } })
  })
})

/*
 * Dispatch, output and post-execute, edge by edge: the exact fields of the wrappers' view
 * and the body's run context, what `signal` replacement does (and that nothing makes a
 * signal nobody reads), wrapper failures and `next()` misuse, quiescence over several
 * bodies, cancellation around a dispatched value, the output declaration's messages, each
 * refusal of the `tools/post-execute` waterfall, the `callers` check of a nested call, the
 * shape of `INVALID_ARGS`, and an unscheduled call's tail running without a yield.
 */
/** The exact failure `failure()` builds: content `Error: <message>`, contexts only when there are some. */
function failed(code: string, message: string, name = 'ToolError', contexts?: unknown[]): ToolExecutionResult {
  return {
    isError: true,
    error: { message, info: { name, code } },
    content: [{ type: 'text', text: `Error: ${message}` }],
    ...(contexts === undefined ? {} : { additionalContexts: contexts }),
  } as ToolExecutionResult
}

/** What a rejection or throw was, as a ToolError's class, code and message. */
function describeError(error: unknown): { toolError: boolean; code: unknown; message: unknown } {
  return { toolError: error instanceof ToolError, code: (error as { code?: unknown }).code, message: (error as { message?: unknown }).message }
}

const CTX = { source: 'echo', content: 'deferred by the body' }

describe('the tools/execute view and the body context carry exactly the call\'s fields', () => {
  it('a plain call: no agent, parent or deadline key on either', async () => {
    const runtime = createToolRuntime()
    let viewKeys: string[] = []
    let runKeys: string[] = []
    runtime.register(echoTool('t', (_a, run) => ((runKeys = Object.keys(run).sort()), 'ok')))
    runtime.on('tools/execute', (view, next) => ((viewKeys = Object.keys(view).sort()), next()))
    const result = await runtime.execute(call('t'))
    expect(result).toMatchObject({ isError: false, value: 'ok' })
    expect(viewKeys).toEqual(['arguments', 'callId', 'name', 'token'])
    expect(runKeys).toEqual(['arguments', 'callId', 'deferContext', 'name', 'signal', 'token'])
  })

  it('a nested call of an agent with a deadline: agent, parent and deadline on both', async () => {
    const runtime = createToolRuntime()
    const deadline = Date.now() + 600_000
    let outerToken: symbol | undefined
    const views: ToolDispatchExecution[] = []
    const runs: ToolRunContext[] = []
    runtime.register(
      echoTool('outer', async (_a, run) => {
        outerToken = run.token
        await runtime.execute(call('inner', {}, { parent: run.token, agent: 'a1', deadline }))
        return 'outer'
      }),
    )
    runtime.register(echoTool('inner', (_a, run) => (runs.push(run), 'inner')))
    runtime.on('tools/execute', (view, next) => (views.push(view), next()))
    await runtime.execute(call('outer'))
    const inner = views[1]!
    expect(Object.keys(inner).sort()).toEqual(['agent', 'arguments', 'callId', 'deadline', 'name', 'parent', 'token'])
    expect([inner.agent, inner.parent, inner.deadline]).toEqual(['a1', outerToken, deadline])
    const run = runs[0]!
    expect(Object.keys(run).sort()).toEqual(['agent', 'arguments', 'callId', 'deadline', 'deferContext', 'name', 'parent', 'signal', 'token'])
    expect([run.agent, run.parent, run.deadline]).toEqual(['a1', outerToken, deadline])
  })
})

describe('the dispatch signal', () => {
  it('is the execution\'s own signal when no wrapper replaced it, or when one restored it', async () => {
    const runtime = createToolRuntime()
    const seen: { execution?: AbortSignal; body?: AbortSignal }[] = []
    runtime.register(echoTool('t', (_a, run) => ((seen.at(-1)!.body = run.signal), 'ok')))
    runtime.on('tools/pre-execute', (decision, execution) => (seen.push({ execution: execution.signal }), decision))
    await runtime.execute(call('t'))
    runtime.on('tools/execute', (view, next) => {
      const own = view.signal
      view.signal = new AbortController().signal
      view.signal = own
      return next()
    })
    await runtime.execute(call('t'))
    expect(seen).toHaveLength(2)
    for (const { execution, body } of seen) {
      expect(body).toBeInstanceOf(AbortSignal)
      expect(body).toBe(execution)
    }
  })

  it('a wrapper may only set an AbortSignal: anything else throws WRAPPER_FAILED to it', async () => {
    const runtime = createToolRuntime()
    let thrown: unknown
    runtime.register(echoTool('t'))
    runtime.on('tools/execute', (view, next) => {
      try {
        ;(view as { signal: unknown }).signal = 'stop'
      } catch (error) {
        thrown = error
        throw error
      }
      return next()
    })
    const result = await runtime.execute(call('t'))
    const message = 'a tools/execute wrapper may only set signal to an AbortSignal'
    expect(describeError(thrown)).toEqual({ toolError: true, code: 'WRAPPER_FAILED', message })
    expect(result).toEqual(failed('WRAPPER_FAILED', `a tools/execute wrapper failed: ${message}`))
  })

  it('is created only when something reads it: a call through a wrapper to a body that never looks makes no AbortController', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('t'))
    runtime.on('tools/execute', (_view, next) => next())
    const input = call('t', { text: 'hi' })
    const Original = globalThis.AbortController
    let made = 0
    globalThis.AbortController = class extends Original {
      constructor() {
        super()
        made += 1
      }
    }
    try {
      const result = await runtime.execute(input)
      expect(result).toMatchObject({ isError: false, value: 'hi' })
    } finally {
      globalThis.AbortController = Original
    }
    expect(made).toBe(0)
  })
})

describe('dispatchDefinition: the definition behind a live view, and nothing else', () => {
  it('resolves a view a wrapper received, and is undefined (never a throw) for anything else', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('t'))
    let resolved: AnyToolDefinition | undefined
    let copy: unknown
    runtime.on('tools/execute', (view, next) => {
      resolved = dispatchDefinition(view)
      copy = { ...view }
      return next()
    })
    await runtime.execute(call('t'))
    expect(resolved).toBe(runtime.get('t'))
    for (const other of [undefined, null, 'view', 42, {}, copy, () => {}]) expect(dispatchDefinition(other)).toBeUndefined()
  })
})

describe('tools/execute wrappers that fail', () => {
  it('a wrapper that throws synchronously: WRAPPER_FAILED with its message and error name', async () => {
    const runtime = createToolRuntime()
    let ran = false
    runtime.register(echoTool('t', () => ((ran = true), 'ok')))
    runtime.on('tools/execute', () => {
      throw new RangeError('no budget left')
    })
    expect(await runtime.execute(call('t'))).toEqual(failed('WRAPPER_FAILED', 'a tools/execute wrapper failed: no budget left', 'RangeError'))
    expect(ran).toBe(false)
  })

  it('a wrapper rejecting with INTERRUPTED (a durable sub-call that cannot run again) keeps that code; another ToolError code is WRAPPER_FAILED', async () => {
    const runtime = createToolRuntime()
    let ran = false
    runtime.register(echoTool('t', () => ((ran = true), 'ok')))
    let thrown = new ToolError('INTERRUPTED', 'the sub-call was running when its process stopped')
    runtime.on('tools/execute', async () => {
      throw thrown
    })
    expect(await runtime.execute(call('t'))).toEqual(failed('INTERRUPTED', 'the sub-call was running when its process stopped'))
    thrown = new ToolError('STORE_BUSY', 'locked')
    expect(await runtime.execute(call('t'))).toEqual(failed('WRAPPER_FAILED', 'a tools/execute wrapper failed: locked'))
    expect(ran).toBe(false)
  })

  it('a wrapper that throws undefined (no cancellation anywhere): WRAPPER_FAILED, not an abort', async () => {
    const runtime = createToolRuntime()
    runtime.register(echoTool('t'))
    runtime.on('tools/execute', async () => {
      throw undefined
    })
    expect(await runtime.execute(call('t'))).toEqual(failed('WRAPPER_FAILED', 'a tools/execute wrapper failed: non-error thrown (undefined)', 'Error'))
  })

  it('next() kept past the end of the dispatch rejects with WRAPPER_FAILED and never runs the body', async () => {
    const runtime = createToolRuntime()
    let bodies = 0
    let kept: (() => Promise<unknown>) | undefined
    runtime.register(echoTool('t', () => ((bodies += 1), 'fresh')))
    runtime.on('tools/execute', (_view, next) => ((kept = next), Promise.resolve('cached')))
    expect(await runtime.execute(call('t'))).toMatchObject({ isError: false, value: 'cached' })
    const late = await kept!().then(
      () => 'resolved',
      (error: unknown) => describeError(error),
    )
    expect(late).toEqual({ toolError: true, code: 'WRAPPER_FAILED', message: 'next() was called after the dispatch settled' })
    expect(bodies).toBe(0)
  })
})

describe('quiescence over several bodies', () => {
  it('a wrapper that starts two bodies and returns at once: the call settles only after the last body', async () => {
    const runtime = createToolRuntime()
    const gates = [deferred<string>(), deferred<string>()]
    let started = 0
    runtime.register(echoTool('t', () => gates[started++]!.promise))
    runtime.on('tools/execute', (_view, next) => {
      void next().catch(() => {})
      void next().catch(() => {})
      return Promise.resolve('early')
    })
    let settled: ToolExecutionResult | undefined
    const running = runtime.execute(call('t')).then((r) => (settled = r))
    await tick()
    expect(started).toBe(2)
    gates[0]!.resolve('first')
    await tick()
    expect(settled).toBeUndefined()
    gates[1]!.resolve('second')
    await running
    expect(settled).toMatchObject({ isError: false, value: 'early' })
  })
})

describe('cancellation around the dispatch', () => {
  it('next() after the caller aborted rejects with ABORTED_BEFORE_DISPATCH; rethrown, that is the result', async () => {
    const runtime = createToolRuntime()
    const controller = new AbortController()
    const gate = deferred()
    let ran = false
    let rejection: unknown
    runtime.register(echoTool('t', () => ((ran = true), 'ok')))
    runtime.on('tools/execute', async (_view, next) => {
      await gate.promise
      try {
        return await next()
      } catch (error) {
        rejection = error
        throw error
      }
    })
    const running = runtime.execute(call('t', {}, { signal: controller.signal }))
    await tick()
    controller.abort()
    gate.resolve()
    const message = 'the call was cancelled before the tool ran'
    expect(await running).toEqual(failed('ABORTED_BEFORE_DISPATCH', message))
    expect(describeError(rejection)).toEqual({ toolError: true, code: 'ABORTED_BEFORE_DISPATCH', message })
    expect(ran).toBe(false)
  })

  it('a wrapper that turns that rejection into its own error: WRAPPER_FAILED with its message', async () => {
    const runtime = createToolRuntime()
    const controller = new AbortController()
    const gate = deferred()
    runtime.register(echoTool('t'))
    runtime.on('tools/execute', async (_view, next) => {
      await gate.promise
      try {
        return await next()
      } catch {
        throw new Error('cache offline')
      }
    })
    const running = runtime.execute(call('t', {}, { signal: controller.signal }))
    await tick()
    controller.abort()
    gate.resolve()
    expect(await running).toEqual(failed('WRAPPER_FAILED', 'a tools/execute wrapper failed: cache offline', 'Error'))
  })

  it('a retry refused after the body already ran once: ABORTED, keeping what the body deferred', async () => {
    const runtime = createToolRuntime()
    const controller = new AbortController()
    let bodies = 0
    runtime.register(echoTool('t', (_a, run) => ((bodies += 1), run.deferContext(CTX), 'first')))
    runtime.on('tools/execute', async (_view, next) => {
      await next()
      controller.abort()
      return next()
    })
    const result = await runtime.execute(call('t', {}, { signal: controller.signal }))
    expect(result).toEqual(failed('ABORTED', 'the call was cancelled while the tool ran', 'ToolError', [CTX]))
    expect(bodies).toBe(1)
  })

  it('a body that ignores the abort and returns a value: ABORTED, with its deferred contexts or none at all', async () => {
    const runtime = createToolRuntime()
    const message = 'the call was cancelled while the tool ran'
    for (const defer of [true, false]) {
      const controller = new AbortController()
      const name = `t${String(defer)}`
      runtime.register(
        echoTool(name, (_a, run) => {
          if (defer) run.deferContext(CTX)
          controller.abort()
          return 'done anyway'
        }),
      )
      const result = await runtime.execute(call(name, {}, { signal: controller.signal }))
      expect(result).toEqual(failed('ABORTED', message, 'ToolError', defer ? [CTX] : undefined))
    }
  })

  it('a wrapper that answers without the body while the caller aborts: ABORTED_BEFORE_DISPATCH', async () => {
    const runtime = createToolRuntime()
    const controller = new AbortController()
    let ran = false
    runtime.register(echoTool('t', () => ((ran = true), 'ok')))
    runtime.on('tools/execute', () => (controller.abort(), Promise.resolve('cached')))
    const result = await runtime.execute(call('t', {}, { signal: controller.signal }))
    expect(result).toEqual(failed('ABORTED_BEFORE_DISPATCH', 'the call was cancelled before the tool ran'))
    expect(ran).toBe(false)
  })
})

describe('deferContext after the dispatch settled', () => {
  it('is ignored: no throw even for a malformed context, and nothing reaches the result', async () => {
    const runtime = createToolRuntime()
    let defer: ((context: unknown) => void) | undefined
    const late: unknown[] = []
    runtime.register(echoTool('t', (_a, run) => ((defer = run.deferContext as never), run.deferContext(CTX), 'ok')))
    runtime.on('tools/post-execute', (decision) => {
      for (const context of [{ source: 'late', content: 'too late' }, null]) {
        try {
          defer!(context)
          late.push('ignored')
        } catch (error) {
          late.push(describeError(error))
        }
      }
      return decision
    })
    const result = await runtime.execute(call('t'))
    expect(late).toEqual(['ignored', 'ignored'])
    expect(result).toEqual({ isError: false, value: 'ok', content: [{ type: 'text', text: 'ok' }], additionalContexts: [CTX] })
  })
})

describe('the output declaration', () => {
  it('a render that returns no array: INVALID_OUTPUT naming output.render()', async () => {
    const runtime = createToolRuntime()
    runtime.register({ ...echoTool('t'), output: { schema: { type: 'string' }, render: () => 'plain text' } } as never)
    const message = 't returned an invalid output: output.render failed: output.render() must be an array of content blocks'
    expect(await runtime.execute(call('t', { text: 'x' }))).toEqual(failed('INVALID_OUTPUT', message))
  })

  it('a presentationMeta that returns undefined: a success without meta', async () => {
    const runtime = createToolRuntime()
    let asked = 0
    const output = { schema: { type: 'string' }, render: (_a: unknown, v: string) => [{ type: 'text', text: v }], presentationMeta: () => void (asked += 1) }
    runtime.register({ ...echoTool('t'), output } as never)
    expect(await runtime.execute(call('t', { text: 'x' }))).toEqual({ isError: false, value: 'x', content: [{ type: 'text', text: 'x' }] })
    expect(asked).toBe(1)
  })
})

describe('the tools/post-execute waterfall', () => {
  /** A runtime with `t` (echoes `text`, defers CTX; throws when `text` is 'fail') and one post listener per decision given. */
  function withPost(...listeners: ((decision: unknown, result: ToolExecutionResult) => unknown)[]) {
    const runtime = createToolRuntime()
    runtime.register(
      echoTool('t', (args, run) => {
        run.deferContext(CTX)
        if (args.text === 'fail') throw new Error('tool broke')
        return args.text ?? ''
      }),
    )
    for (const listener of listeners) runtime.on('tools/post-execute', ((decision: unknown, _e: unknown, result: ToolExecutionResult) => listener(decision, result)) as never)
    return runtime
  }
  const policy = (message: string) => failed('POST_POLICY_FAILED', message, 'ToolError', [CTX])

  it('refuses a decision that is not an object with kind accept or block', async () => {
    for (const returned of [null, undefined, 'accept', { kind: 'allow' }]) {
      const result = await withPost(() => returned).execute(call('t', { text: 'x' }))
      expect(result).toEqual(policy('a tools/post-execute listener returned a malformed decision'))
    }
  })

  it('a listener that throws: POST_POLICY_FAILED with its message', async () => {
    const result = await withPost(() => {
      throw new Error('policy store down')
    }).execute(call('t', { text: 'x' }))
    expect(result).toEqual(policy('a tools/post-execute listener failed: policy store down'))
  })

  it('accepts flow through every listener in order; the last decision is applied', async () => {
    const seen: unknown[] = []
    const runtime = withPost(
      (decision) => (seen.push(decision), { kind: 'accept', content: [{ type: 'text', text: 'first' }] }),
      (decision) => (seen.push(decision), { kind: 'accept', content: [{ type: 'text', text: 'second' }] }),
    )
    const result = await runtime.execute(call('t', { text: 'x' }))
    expect(seen).toEqual([{ kind: 'accept' }, { kind: 'accept', content: [{ type: 'text', text: 'first' }] }])
    expect(result).toEqual({ isError: false, value: 'x', content: [{ type: 'text', text: 'second' }], additionalContexts: [CTX] })
  })

  it('an accept that changes nothing hands on the very result it was shown', async () => {
    let shown: ToolExecutionResult | undefined
    const result = await withPost((decision, r) => ((shown = r), decision)).execute(call('t', { text: 'x' }))
    expect(result).toBe(shown)
    expect(result).toEqual({ isError: false, value: 'x', content: [{ type: 'text', text: 'x' }], additionalContexts: [CTX] })
  })

  it('a block keeps only its own contexts: without any, the BLOCKED result has none', async () => {
    const result = await withPost(() => ({ kind: 'block', feedback: 'not today' })).execute(call('t', { text: 'x' }))
    expect(result).toEqual(failed('BLOCKED', 'not today'))
  })

  it('a block without string feedback: POST_POLICY_FAILED', async () => {
    const result = await withPost(() => ({ kind: 'block', feedback: 7 })).execute(call('t', { text: 'x' }))
    expect(result).toEqual(policy('a block decision needs string feedback'))
  })

  it('malformed decision parts are named in the message', async () => {
    const cases: [unknown, string][] = [
      [{ kind: 'block', feedback: 'no', additionalContexts: 'ctx' }, 'block.additionalContexts must be an array'],
      [{ kind: 'accept', additionalContexts: [{ source: 1, content: 'c' }] }, 'accept.additionalContexts[0].source must be a string'],
      [{ kind: 'accept', content: 'replaced' }, 'accept.content must be an array of content blocks'],
    ]
    for (const [decision, detail] of cases) {
      const result = await withPost(() => decision).execute(call('t', { text: 'x' }))
      expect(result).toEqual(policy(`a tools/post-execute decision is malformed: ${detail}`))
    }
  })

  it('an accept replacing both content and value: POST_POLICY_FAILED', async () => {
    const result = await withPost(() => ({ kind: 'accept', value: 'y', content: [{ type: 'text', text: 'y' }] })).execute(call('t', { text: 'x' }))
    expect(result).toEqual(policy('an accept decision may replace content or value, never both'))
  })

  it('an accept giving a failed result a value: POST_POLICY_FAILED', async () => {
    const result = await withPost(() => ({ kind: 'accept', value: 'rescued' })).execute(call('t', { text: 'fail' }))
    expect(result).toEqual(policy('an accept decision cannot give a failed result a value'))
  })
})

describe('the pipeline stages around dispatch', () => {
  it('a program\'s (nested) call of a native-only tool: UNKNOWN_TOOL saying why', async () => {
    const runtime = createToolRuntime()
    let inner: ToolExecutionResult | undefined
    runtime.register({ ...echoTool('native_only'), callers: ['native'] } as never)
    runtime.register(
      echoTool('outer', async (_a, run) => {
        inner = await runtime.execute(call('native_only', {}, { parent: run.token }))
        return 'outer'
      }),
    )
    await runtime.execute(call('outer'))
    const message = '`native_only` cannot be called from a program: it is offered to the model as a native tool only (its callers are [\'native\'])'
    expect(inner).toEqual(failed('UNKNOWN_TOOL', message))
  })

  it('validateArgs throwing: INVALID_ARGS with its message and error name, and no contexts', async () => {
    const runtime = createToolRuntime()
    runtime.register({
      ...echoTool('typed'),
      validateArgs: () => {
        throw new TypeError('a must be a number')
      },
    } as never)
    expect(await runtime.execute(call('typed', { a: 'x' }))).toEqual(failed('INVALID_ARGS', 'a must be a number', 'TypeError'))
  })

  it('a malformed input is never tracked in flight: disposing the runtime while it publishes settles cleanly', async () => {
    const runtime = createToolRuntime()
    let disposal: Promise<unknown> | undefined
    runtime.on('tools/result', () => void (disposal ??= runtime.dispose().then(() => 'disposed', (error: unknown) => describeError(error))))
    const result = await runtime.execute({ callId: 'c', name: 'echo' } as never)
    expect(result).toEqual(failed('INVALID_EXECUTION', 'the execution input needs an AbortSignal as signal'))
    expect(await disposal).toBe('disposed')
  })

  it('an unscheduled call with no post-execute listener goes from output to tools/result without yielding', async () => {
    const runtime = createToolRuntime()
    const order: string[] = []
    const render = (_a: unknown, value: string) => {
      queueMicrotask(() => order.push('microtask queued by render'))
      return [{ type: 'text', text: value }]
    }
    runtime.register({ ...echoTool('t'), output: { schema: { type: 'string' }, render } } as never)
    runtime.on('tools/result', () => void order.push('tools/result'))
    await runtime.execute(call('t', { text: 'x' }))
    expect(order).toEqual(['tools/result', 'microtask queued by render'])
  })

  it('a program\'s (nested) call of a code-only tool runs: a nested call is the `code` caller', async () => {
    const runtime = createToolRuntime()
    let inner: ToolExecutionResult | undefined
    runtime.register({ ...echoTool('code_only'), callers: ['code'] } as never)
    runtime.register(
      echoTool('outer', async (_a, run) => {
        inner = await runtime.execute(call('code_only', { text: 'from a program' }, { parent: run.token }))
        return 'outer'
      }),
    )
    await runtime.execute(call('outer'))
    expect(inner).toMatchObject({ isError: false, value: 'from a program' })
  })

  it('an unknown tool (native presentation): UNKNOWN_TOOL naming it, quoted', async () => {
    expect(await executePipeline(core(), call('no such "tool"'))).toEqual(failed('UNKNOWN_TOOL', 'unknown tool "no such \\"tool\\""'))
  })

  it('arguments that are not lossless JSON: INVALID_ARGS naming why, even for a raw tool that validates nothing; the body never runs', async () => {
    const runtime = createToolRuntime()
    let ran = false
    runtime.register(echoTool('raw', () => ((ran = true), 'ran')))
    const result = await runtime.execute(call('raw', { n: 1n }))
    expect(result).toEqual(failed('INVALID_ARGS', 'arguments are not lossless JSON: a BigInt is not JSON at /n'))
    expect(ran).toBe(false)
  })
})
