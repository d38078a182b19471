import { describe, expect, it } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import type { PostToolDecision } from '../../../src/types.js'
import { addTool, call, deepFrozen, echoTool, tick } from './helpers.js'
import type { ToolExecutionResult } from './types.js'

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
