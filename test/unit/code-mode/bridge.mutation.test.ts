/**
 * The dispatch bridge (`runCodeBridge`) with a scripted code runtime: the "program" is a
 * test function that calls the bindings and returns the run's result, so the bridge's
 * own decisions are checked exactly: outcomes and their messages, the output cap, the
 * language note, dispatch events, contexts, closed runs and contained failures.
 */
import { describe, expect, it } from 'vitest'
import { languageNote, runCodeBridge } from '../../../src/code-mode/bridge.js'
import type { CodeBindingFunction, CodeRunRequest, CodeRunResult, CodeRuntime } from '../../../src/code-runtime/contract.js'
import { CodeRunFailedError, ToolCallError, ToolError } from '../../../src/errors.js'
import type { AdditionalContext, ToolRunContext } from '../../../src/types.js'
import { createTestHost } from './support/test-host.js'
import type { TestTool } from './support/test-host.js'

type Program = (tools: Record<string, CodeBindingFunction>, request: CodeRunRequest) => Promise<Partial<CodeRunResult>> | Partial<CodeRunResult>

function scriptedRuntime(program: Program, language = 'typescript'): CodeRuntime {
  return {
    language,
    isolation: 'scripted',
    capabilities: { streamsLogs: true, memoryLimit: false, capturesStdio: false },
    async run(request) {
      const out = await program(request.bindings[0]!.functions, request)
      return { logs: [], ...out } as CodeRunResult
    },
    async dispose() {},
  }
}

function context(overrides: Partial<ToolRunContext> = {}): ToolRunContext & { deferred: AdditionalContext[] } {
  const deferred: AdditionalContext[] = []
  return {
    callId: 'outer',
    name: 'run_code',
    signal: new AbortController().signal,
    token: { id: 'outer-token' },
    deferContext: (c: AdditionalContext) => void deferred.push(c),
    deferred,
    ...overrides,
  } as unknown as ToolRunContext & { deferred: AdditionalContext[] }
}

async function failure(promise: Promise<unknown>): Promise<{ kind: string; message: string; logs: readonly string[] }> {
  try {
    await promise
  } catch (error) {
    expect(error).toBeInstanceOf(CodeRunFailedError)
    const e = error as CodeRunFailedError
    return { kind: e.kind, message: e.message, logs: e.logs }
  }
  throw new Error('the run did not fail')
}

const echo: TestTool = { run: (args) => ({ value: args }) }
const args = { code: 'program', description: 'd' }

describe('runCodeBridge: outcomes', () => {
  it('returns the logs and the value, or the logs alone', async () => {
    const host = createTestHost({}, { runtime: scriptedRuntime(() => ({ logs: [{ source: 'console', level: 'log', text: 'a' }], value: { n: 1 } })) })
    expect(await runCodeBridge(host, args, context())).toEqual({ logs: ['a'], result: { n: 1 } })
    const none = createTestHost({}, { runtime: scriptedRuntime(() => ({ logs: [{ source: 'console', level: 'log', text: 'b' }] })) })
    const out = await runCodeBridge(none, args, context())
    expect(out).toEqual({ logs: ['b'] })
    expect(Object.hasOwn(out, 'result')).toBe(false)
  })

  it('fails clearly without a code runtime', async () => {
    const host = createTestHost({}, { runtime: undefined })
    await expect(runCodeBridge(host, args, context())).rejects.toThrow(new ToolError('CODE_RUN_FAILED', 'run_code is unavailable: no code runtime is configured (ToolRuntimeOptions.codeRuntime)'))
  })

  it('a program exception names the language; other failures do not', async () => {
    const thrown = createTestHost({}, { runtime: scriptedRuntime(() => ({ logs: [{ source: 'console', level: 'log', text: 'x' }], error: { kind: 'exception', message: 'ReferenceError: print is not defined' } })) })
    expect(await failure(runCodeBridge(thrown, args, context()))).toMatchObject({ kind: 'exception', logs: ['x'] })
    expect((await failure(runCodeBridge(thrown, args, context()))).message).toBe(
      'code run failed (exception): ReferenceError: print is not defined (run_code runs TypeScript/JavaScript programs)\nCaptured output:\nx',
    )
    const slow = createTestHost({}, { runtime: scriptedRuntime(() => ({ error: { kind: 'timeout', message: 'wall-clock ceiling of 5 ms reached' } })) })
    expect((await failure(runCodeBridge(slow, args, context()))).message).toBe('code run failed (timeout): wall-clock ceiling of 5 ms reached')
  })

  it('languageNote names each known language and quotes others', () => {
    expect(languageNote('typescript')).toBe('(run_code runs TypeScript/JavaScript programs)')
    expect(languageNote('javascript')).toBe('(run_code runs JavaScript programs)')
    expect(languageNote('python')).toBe('(run_code runs Python programs)')
    expect(languageNote('constructor')).toBe('(run_code runs "constructor" programs)')
  })

  it('a code runtime that rejects ends as a failed run', async () => {
    const runtime = scriptedRuntime(() => {
      throw new Error('runtime bug')
    })
    const host = createTestHost({}, { runtime })
    expect((await failure(runCodeBridge(host, args, context()))).message).toBe('code run failed (exception): the code runtime failed: runtime bug (run_code runs TypeScript/JavaScript programs)')
    const odd = createTestHost({}, { runtime: scriptedRuntime(() => Promise.reject('text')) })
    expect((await failure(runCodeBridge(odd, args, context()))).message).toMatch(/the code runtime failed: text /)
    const opaque = createTestHost({}, { runtime: scriptedRuntime(() => Promise.reject(42)) })
    expect((await failure(runCodeBridge(opaque, args, context()))).message).toMatch(/the code runtime failed: unknown error /)
  })

  it('refuses a completion value that is not lossless JSON', async () => {
    const host = createTestHost({}, { runtime: scriptedRuntime(() => ({ value: { n: Number.NaN } })) })
    const out = await failure(runCodeBridge(host, args, context()))
    expect(out.message).toMatch(/^code run failed \(exception\): the program's return value is not lossless JSON: .+ \(return plain JSON: objects, arrays, strings, finite numbers, booleans, null\)$/)
  })
})

describe('runCodeBridge: maxOutputBytes', () => {
  const run = (result: Partial<CodeRunResult>, maxOutputBytes: number) => runCodeBridge(createTestHost({}, { runtime: scriptedRuntime(() => result), maxOutputBytes }), args, context())
  const logs = (...texts: string[]) => texts.map((text) => ({ source: 'console' as const, level: 'log' as const, text }))

  it('counts logs as compact JSON, and logs plus value, against the cap', async () => {
    // ["ab"] is 6 bytes; "ab" + {"k":1} is 6 + 7.
    expect(await run({ logs: logs('ab') }, 6)).toEqual({ logs: ['ab'] })
    expect((await failure(run({ logs: logs('ab') }, 5))).message).toBe("code run failed (exception): the run's output (6 bytes of logs and return value) exceeds maxOutputBytes (5); print or return less")
    expect(await run({ logs: logs('ab'), value: { k: 1 } }, 13)).toEqual({ logs: ['ab'], result: { k: 1 } })
    expect((await failure(run({ logs: logs('ab'), value: { k: 1 } }, 12))).message).toBe("code run failed (exception): the run's output (13 bytes of logs and return value) exceeds maxOutputBytes (12); print or return less")
    expect(await run({ value: 'é' }, 2 + 4)).toEqual({ logs: [], result: 'é' })
  })

  it('a failure over the cap keeps a cut message and drops the captured output', async () => {
    // logs [] = 2 bytes; the message 8 bytes: 10 in all.
    const fits = await failure(run({ error: { kind: 'timeout', message: '12345678' } }, 10))
    expect(fits.message).toBe('code run failed (timeout): 12345678')
    const over = await failure(run({ logs: logs('x'), error: { kind: 'exception', message: 'abcdefghé' } }, 9))
    // ["x"] is 5 bytes and the message 10: 15 in all; the message is cut to 9 bytes.
    expect(over.message).toBe('code run failed (exception): abcdefgh… (run_code runs TypeScript/JavaScript programs) [failure output of 15 bytes exceeds maxOutputBytes (9); captured output dropped]')
    expect(over.logs).toEqual([])
    const pair = await failure(run({ error: { kind: 'abort', message: 'a😀b' } }, 4))
    expect(pair.message).toBe('code run failed (abort): a… [failure output of 8 bytes exceeds maxOutputBytes (4); captured output dropped]')
  })

  it('log texts are kept exactly as printed, non-strings stringified', async () => {
    expect(await run({ logs: [{ source: 'stdout', level: 'info', text: 7 as never }] }, 100)).toEqual({ logs: ['7'] })
  })
})

describe('runCodeBridge: bindings and sub-calls', () => {
  it('exposes one frozen, null-prototype namespace with the registry’s binding names', async () => {
    let seen: Record<string, CodeBindingFunction> | undefined
    let request: CodeRunRequest | undefined
    const host = createTestHost({ b: echo, a: echo, constructor: echo }, {
      runtime: scriptedRuntime((tools, r) => {
        seen = tools
        request = r
        return {}
      }),
    })
    await runCodeBridge(host, args, context())
    expect(Object.keys(seen!)).toEqual(['a', 'b', 'constructor'])
    expect(Object.getPrototypeOf(seen)).toBeNull()
    expect(Object.isFrozen(seen)).toBe(true)
    expect(request!.bindings.map((b) => b.global)).toEqual(['tools'])
    expect(request!.program).toBe('program')
    expect(request!.signal).toBeInstanceOf(AbortSignal)
    expect(Object.hasOwn(request!, 'onLog')).toBe(false)
  })

  it('dispatches with a sub-call id, the outer token as parent, the agent, and {} for no arguments', async () => {
    const host = createTestHost({ echo }, {
      runtime: scriptedRuntime(async (tools) => ({ value: [await tools.echo!({ x: 1 }, {} as never), await tools.echo!(undefined, {} as never)] as never })),
    })
    const out = await runCodeBridge(host, args, context({ agent: 'ann' } as never))
    expect(out.result).toEqual([{ x: 1 }, {}])
    expect(host.inputs.map((i) => [i.callId, i.name, i.arguments, i.agent, i.parent])).toEqual([
      ['outer:code:1', 'echo', { x: 1 }, 'ann', { id: 'outer-token' }],
      ['outer:code:2', 'echo', {}, 'ann', { id: 'outer-token' }],
    ])
    const start = host.events[0] as unknown as Record<string, unknown>
    expect(start).toMatchObject({ type: 'tool/code-dispatch-start', parentCallId: 'outer', subCallId: 'outer:code:1', name: 'echo', arguments: { x: 1 }, agent: 'ann' })
    expect(typeof start.startedAt).toBe('number')
    const settle = host.events[1] as unknown as Record<string, unknown>
    expect(settle).toMatchObject({ type: 'tool/code-dispatch', subCallId: 'outer:code:1', isError: false, content: [{ type: 'text', text: '{"x":1}' }] })
    expect(settle.settledAt as number).toBeGreaterThanOrEqual(settle.startedAt as number)
    expect(settle.durationMs as number).toBeGreaterThanOrEqual(0)
    expect(Object.hasOwn(settle, 'error')).toBe(false)
  })

  it('a failed sub-call rejects with a ToolCallError and logs its code; without an agent no agent key', async () => {
    let caught: unknown
    const host = createTestHost({ bad: { run: () => ({ error: 'nope', code: 'DENIED' }) } }, {
      runtime: scriptedRuntime(async (tools) => {
        try {
          await tools.bad!({}, {} as never)
        } catch (error) {
          caught = error
        }
        return {}
      }),
    })
    await runCodeBridge(host, args, context())
    expect(caught).toBeInstanceOf(ToolCallError)
    expect([(caught as ToolCallError).toolName, (caught as Error).message]).toEqual(['bad', 'nope'])
    expect(host.events[1]).toMatchObject({ isError: true, error: { message: 'nope', code: 'DENIED' } })
    expect(Object.hasOwn(host.events[0] as object, 'agent')).toBe(false)
    expect(Object.hasOwn(host.inputs[0]!, 'agent')).toBe(false)
  })

  it('refuses arguments that are not lossless JSON without dispatching', async () => {
    let caught: unknown
    const host = createTestHost({ echo }, {
      runtime: scriptedRuntime(async (tools) => {
        await tools.echo!({ n: 1n }, {} as never).catch((error: unknown) => (caught = error))
        return {}
      }),
    })
    await runCodeBridge(host, args, context())
    expect((caught as ToolCallError).toolName).toBe('echo')
    expect((caught as Error).message).toMatch(/^arguments are not lossless JSON: \S/)
    expect(host.inputs).toEqual([])
  })

  it('a registry whose execute rejects still settles the sub-call, with the error as its outcome', async () => {
    let caught: unknown
    const host = createTestHost({ echo }, {
      runtime: scriptedRuntime(async (tools) => {
        await tools.echo!({}, {} as never).catch((error: unknown) => (caught = error))
        return {}
      }),
    })
    host.execute = () => Promise.reject(new Error('registry bug'))
    await runCodeBridge(host, args, context())
    expect((caught as Error).message).toBe('registry bug')
    expect(host.events[1]).toMatchObject({ isError: true, content: [{ type: 'text', text: 'Error: registry bug' }], error: { message: 'registry bug' } })
  })

  it('contains a throwing dispatch-start log, dispatch log, and executionMode', async () => {
    const host = createTestHost({ echo }, { runtime: scriptedRuntime(async (tools) => ({ value: (await tools.echo!({ a: 1 }, {} as never)) as never })) })
    host.logDispatchStart = () => {
      throw new Error('log down')
    }
    host.logDispatch = () => Promise.reject(new Error('log down'))
    host.executionMode = () => {
      throw new Error('classifier down')
    }
    expect((await runCodeBridge(host, args, context())).result).toEqual({ a: 1 })
  })

  it('hands on sub-call contexts in dispatch order, and survives a refused context', async () => {
    const slow: TestTool = { mode: 'parallel', run: async () => (await new Promise((r) => setTimeout(r, 20)), { value: 1, contexts: [{ source: 'slow', content: '1' }] }) }
    const fast: TestTool = { mode: 'parallel', run: () => ({ value: 2, contexts: [{ source: 'fast', content: '2' }, { source: 'fast', content: '3' }] }) }
    const host = createTestHost({ slow, fast }, { runtime: scriptedRuntime(async (tools) => ({ value: (await Promise.all([tools.slow!({}, {} as never), tools.fast!({}, {} as never)])) as never })) })
    const exec = context()
    await runCodeBridge(host, args, exec)
    expect(exec.deferred.map((c) => c.content)).toEqual(['1', '2', '3'])
    const refusing = context({
      deferContext: () => {
        throw new Error('refused')
      },
    } as never)
    expect((await runCodeBridge(createTestHost({ fast }, { runtime: scriptedRuntime(async (tools) => ({ value: (await tools.fast!({}, {} as never)) as never })) }), args, refusing)).result).toBe(2)
  })

  it('after settlement, a binding refuses at once', async () => {
    let late: CodeBindingFunction | undefined
    const host = createTestHost({ echo }, {
      runtime: scriptedRuntime((tools) => {
        late = tools.echo
        return {}
      }),
    })
    await runCodeBridge(host, args, context())
    const error = await late!({}, {} as never).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ToolCallError)
    expect((error as Error).message).toBe('the run has settled or was aborted; the call was not dispatched')
    expect(host.inputs).toEqual([])
  })

  it('an outer abort reaches the run’s signal; queued calls are not dispatched', async () => {
    const outer = new AbortController()
    let runSignal: AbortSignal | undefined
    let queuedError: unknown
    const blocking: TestTool = { run: (_a, input) => new Promise((resolve) => input.signal!.addEventListener('abort', () => resolve({ value: 'stopped' }))) }
    const host = createTestHost({ blocking, echo }, {
      maxParallelSubCalls: 1,
      runtime: scriptedRuntime(async (tools, request) => {
        runSignal = request.signal
        const first = tools.blocking!({}, {} as never)
        const second = tools.echo!({}, {} as never).catch((e: unknown) => (queuedError = e))
        outer.abort(new Error('user stop'))
        await Promise.allSettled([first, second])
        return {}
      }),
    })
    await runCodeBridge(host, args, context({ signal: outer.signal }))
    expect(runSignal!.aborted).toBe(true)
    expect(host.inputs.map((i) => i.name)).toEqual(['blocking'])
    expect(queuedError).toBeInstanceOf(ToolCallError)
    expect((queuedError as Error).message).toBe('the run ended before the call started; it was not dispatched')
  })

  it('an outer signal already aborted aborts the run at once', async () => {
    const outer = new AbortController()
    outer.abort('early')
    let aborted: boolean | undefined
    const host = createTestHost({}, { runtime: scriptedRuntime((_t, request) => ((aborted = request.signal!.aborted), {})) })
    await runCodeBridge(host, args, context({ signal: outer.signal }))
    expect(aborted).toBe(true)
  })

  it('forwards console lines live when the registry streams them, and contains a throwing sink', async () => {
    const lines: unknown[] = []
    const host = createTestHost({}, {
      runtime: scriptedRuntime((_t, request) => {
        request.onLog!({ source: 'console', level: 'log', text: 'live' })
        request.onLog!({ source: 'console', level: 'log', text: 'again' })
        return {}
      }),
    })
    let calls = 0
    host.logOutput = (event) => {
      calls++
      if (calls === 1) throw new Error('sink down')
      lines.push(event)
    }
    await runCodeBridge(host, args, context())
    expect(lines).toEqual([{ type: 'tool/code-log', parentCallId: 'outer', entry: { source: 'console', level: 'log', text: 'again' } }])
  })
})
