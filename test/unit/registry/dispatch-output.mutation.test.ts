/**
 * Dispatch, output and post-execute, edge by edge: the exact fields of the wrappers' view
 * and the body's run context, what `signal` replacement does (and that nothing makes a
 * signal nobody reads), wrapper failures and `next()` misuse, quiescence over several
 * bodies, cancellation around a dispatched value, the output declaration's messages, each
 * refusal of the `tools/post-execute` waterfall, the `callers` check of a nested call, the
 * shape of `INVALID_ARGS`, and an unscheduled call's tail running without a yield.
 */
import { describe, expect, it } from 'vitest'
import { ToolError } from '../../../src/errors.js'
import { dispatchDefinition } from '../../../src/registry/dispatch.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import type { ToolDispatchExecution } from '../../../src/types.js'
import { call, deferred, echoTool, tick } from './helpers.js'
import type { AnyToolDefinition, ToolExecutionResult, ToolRunContext } from './types.js'

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
})
