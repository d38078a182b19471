import { describe, expect, it } from 'vitest'
import { createRunCodeTool } from '../../../src/code-mode/run-code.js'
import type { RunCodeOutput } from '../../../src/code-mode/run-code.js'
import { CodeRunFailedError, ToolError, ToolCallError } from '../../../src/errors.js'
import type { CodeDispatchEvent, CodeDispatchStartEvent } from '../../../src/runtime-types.js'
import type { CodeRuntime, CodeBindingFunction, CodeRunRequest, CodeRunResult } from '../../../src/code-runtime/contract.js'
import { createInProcessRuntime } from './support/in-process-runtime.js'
import { createTestHost, deferred, runContext } from './support/test-host.js'
import type { TestHostOptions, TestTool } from './support/test-host.js'
import { languageNote, runCodeBridge } from '../../../src/code-mode/bridge.js'
import type { CodeModeRegistry } from '../../../src/code-mode/registry-seam.js'
import type { AdditionalContext, ToolRunContext } from '../../../src/types.js'

const echo: TestTool = { mode: 'parallel', run: (args) => ({ value: args }) }

async function runCode(
  tools: Record<string, TestTool>,
  code: string,
  options: Partial<TestHostOptions> = {},
  exec = runContext(),
) {
  const host = createTestHost(tools, { runtime: createInProcessRuntime(), ...options })
  const tool = createRunCodeTool(host)
  const outcome = await Promise.resolve(tool.execute({ code, description: 'test' }, exec)).then(
    (value) => ({ ok: true as const, value: value as RunCodeOutput }),
    (error: unknown) => ({ ok: false as const, error }),
  )
  return { host, exec, outcome }
}

function starts(events: readonly unknown[]): CodeDispatchStartEvent[] {
  return events.filter((e): e is CodeDispatchStartEvent => (e as { type: string }).type === 'tool/code-dispatch-start')
}
function settles(events: readonly unknown[]): CodeDispatchEvent[] {
  return events.filter((e): e is CodeDispatchEvent => (e as { type: string }).type === 'tool/code-dispatch')
}

describe('run_code bridge (in-process runtime)', () => {
  it('returns typed canonical values to the program and { logs, result } to the caller', async () => {
    const { outcome } = await runCode(
      { add: { run: (a) => ({ value: { sum: (a as { a: number; b: number }).a + (a as { b: number }).b } }) } },
      'const r = await tools.add({ a: 1, b: 2 }); console.log("sum", r.sum); return r',
    )
    expect(outcome).toEqual({ ok: true, value: { logs: ['sum 3'], result: { sum: 3 } } })
  })

  it('omits result when the program returns undefined, and keeps null explicit', async () => {
    expect((await runCode({}, 'console.log("x")')).outcome).toEqual({ ok: true, value: { logs: ['x'] } })
    expect((await runCode({}, 'return null')).outcome).toEqual({ ok: true, value: { logs: [], result: null } })
  })

  it('passes {} when a binding is called without an argument', async () => {
    const { host, outcome } = await runCode({ echo }, 'return await tools.echo()')
    expect(outcome).toEqual({ ok: true, value: { logs: [], result: {} } })
    expect(host.inputs[0]?.arguments).toEqual({})
  })

  it('dispatches with sub ids numbered by submission, the outer token as parent and a run-scoped signal', async () => {
    const exec = runContext(new AbortController().signal, 'abc')
    const { host } = await runCode({ echo }, 'await tools.echo({ n: 1 }); await tools.echo({ n: 2 })', {}, exec)
    expect(host.inputs.map((i) => i.callId)).toEqual(['abc:code:1', 'abc:code:2'])
    for (const input of host.inputs) {
      expect(input.parent).toBe(exec.token)
      expect(input.agent).toBe('agent-a')
      expect(input.signal).not.toBe(exec.signal)
      // The run-scoped signal fired when the run settled.
      expect(input.signal.aborted).toBe(true)
    }
  })

  it('logs one start and one settle event per sub-call, with timing', async () => {
    const { host } = await runCode(
      { echo, fail: { run: () => ({ error: 'nope', code: 'DENIED_BY_GUARD' }) } },
      'await tools.echo({ a: [1] }); try { await tools.fail({}) } catch {}',
    )
    const [s1, s2] = starts(host.events)
    const [e1, e2] = settles(host.events)
    expect(host.events.map((e) => e.type)).toEqual([
      'tool/code-dispatch-start',
      'tool/code-dispatch',
      'tool/code-dispatch-start',
      'tool/code-dispatch',
    ])
    expect(s1).toMatchObject({ parentCallId: 'call-1', subCallId: 'call-1:code:1', name: 'echo', arguments: { a: [1] }, agent: 'agent-a' })
    expect(e1).toMatchObject({ subCallId: 'call-1:code:1', isError: false, content: [{ type: 'text', text: '{"a":[1]}' }] })
    expect(e1).not.toHaveProperty('error')
    expect(e2).toMatchObject({
      subCallId: 'call-1:code:2',
      name: 'fail',
      isError: true,
      content: [{ type: 'text', text: 'Error: nope' }],
      error: { message: 'nope', code: 'DENIED_BY_GUARD' },
    })
    for (const [start, settle] of [[s1!, e1!], [s2!, e2!]] as const) {
      expect(settle.startedAt).toBe(start.startedAt)
      expect(settle.settledAt).toBeGreaterThanOrEqual(settle.startedAt)
      expect(settle.durationMs).toBeGreaterThanOrEqual(0)
    }
  })

  it('rejects a failed call with ToolCallError carrying toolName, message and the failure\'s code', async () => {
    const { outcome } = await runCode(
      { fail: { run: () => ({ error: 'disk on fire', code: 'TOOL_FAILED' }) } },
      `try { await tools.fail({}) } catch (e) {
         return { isToolCallError: e instanceof ToolCallError, name: e.name, toolName: e.toolName, message: e.message, code: e.code ?? null }
       }`,
    )
    expect(outcome).toEqual({
      ok: true,
      value: { logs: [], result: { isToolCallError: true, name: 'ToolCallError', toolName: 'fail', message: 'disk on fire', code: 'TOOL_FAILED' } },
    })
  })

  it.each([
    ['a BigInt', '{ n: 1n }'],
    ['undefined inside', '{ a: undefined }'],
    ['a cycle', '(() => { const o = {}; o.self = o; return o })()'],
    ['a sparse array', '[1, , 3]'],
    ['-0', '{ z: -0 }'],
    ['a Date', '{ when: new Date(0) }'],
    ['a Map', 'new Map()'],
    ['NaN', '{ x: NaN }'],
  ])('rejects an argument with %s: that call only, never dispatched nor logged', async (_label, arg) => {
    const { host, outcome } = await runCode(
      { echo },
      `let caught
       try { await tools.echo(${arg}) } catch (e) { caught = { name: e.name, toolName: e.toolName, message: e.message } }
       const ok = await tools.echo({ fine: true })
       return { caught, ok }`,
    )
    expect(outcome.ok).toBe(true)
    const result = (outcome as { value: RunCodeOutput }).value.result as {
      caught: { name: string; toolName: string; message: string }
      ok: unknown
    }
    expect(result.caught.name).toBe('ToolCallError')
    expect(result.caught.toolName).toBe('echo')
    expect(result.caught.message).toMatch(/^arguments are not lossless JSON: /)
    expect(result.ok).toEqual({ fine: true })
    // Only the good call dispatched, and it is number 1.
    expect(host.inputs.map((i) => i.callId)).toEqual(['call-1:code:1'])
    expect(host.events).toHaveLength(2)
  })

  it('exposes __proto__, constructor and toString as plain binding names', async () => {
    const { outcome, host } = await runCode(
      Object.fromEntries([
        ['__proto__', echo],
        ['constructor', echo],
        ['toString', echo],
      ]) as Record<string, TestTool>,
      'return [await tools["__proto__"]({ a: 1 }), await tools.constructor({ b: 2 }), await tools.toString({ c: 3 })]',
    )
    expect(outcome).toEqual({ ok: true, value: { logs: [], result: [{ a: 1 }, { b: 2 }, { c: 3 }] } })
    expect(host.inputs.map((i) => i.name)).toEqual(['__proto__', 'constructor', 'toString'])
  })

  it('defers sub-call contexts in dispatch order even when calls settle out of order', async () => {
    const slow = deferred()
    const tools: Record<string, TestTool> = {
      slow: {
        mode: 'parallel',
        run: async () => {
          await slow.promise
          return { value: 'slow', contexts: [{ source: 'slow', content: 'A' }, { source: 'slow', content: 'A2' }] }
        },
      },
      fast: {
        mode: 'parallel',
        run: () => {
          setTimeout(() => slow.resolve(), 20)
          return { value: 'fast', contexts: [{ source: 'fast', content: 'B', meta: { k: 1 } }] }
        },
      },
    }
    const { exec, outcome, host } = await runCode(tools, 'return await Promise.all([tools.slow({}), tools.fast({})])')
    expect(outcome).toEqual({ ok: true, value: { logs: [], result: ['slow', 'fast'] } })
    // fast settled first…
    expect(settles(host.events).map((e) => e.name)).toEqual(['fast', 'slow'])
    // …but contexts follow dispatch order.
    expect(exec.deferred.map((c) => c.content)).toEqual(['A', 'A2', 'B'])
    expect(exec.deferred[2]).toEqual({ source: 'fast', content: 'B', meta: { k: 1 } })
  })

  it('keeps deferred contexts (also of failed calls) when the program later fails', async () => {
    const tools: Record<string, TestTool> = {
      note: { run: () => ({ value: 1, contexts: [{ source: 'note', content: 'first' }] }) },
      bad: { run: () => ({ error: 'bad', contexts: [{ source: 'bad', content: 'second' }] }) },
    }
    const { exec, outcome } = await runCode(tools, 'await tools.note({}); await tools.bad({})')
    expect(outcome.ok).toBe(false)
    expect((outcome as { error: unknown }).error).toBeInstanceOf(CodeRunFailedError)
    expect(exec.deferred.map((c) => c.content)).toEqual(['first', 'second'])
  })

  it('overlaps parallel calls up to maxParallelSubCalls and runs exclusive calls alone as barriers', async () => {
    const trace: string[] = []
    let active = 0
    let peak = 0
    const probe =
      (mode: 'parallel' | 'exclusive'): TestTool => ({
        mode,
        run: async (args) => {
          const id = (args as { id: string }).id
          active++
          peak = Math.max(peak, active)
          trace.push(`enter ${id}`)
          await new Promise((r) => setTimeout(r, 15))
          trace.push(`exit ${id}`)
          active--
          return { value: id }
        },
      })
    const program = `return await Promise.all([
      tools.safe({ id: 's1' }), tools.safe({ id: 's2' }), tools.safe({ id: 's3' }),
      tools.write({ id: 'w1' }),
      tools.safe({ id: 's4' }), tools.safe({ id: 's5' }),
    ])`
    const { outcome } = await runCode({ safe: probe('parallel'), write: probe('exclusive') }, program, { maxParallelSubCalls: 2 })
    expect(outcome).toEqual({ ok: true, value: { logs: [], result: ['s1', 's2', 's3', 'w1', 's4', 's5'] } })
    expect(peak).toBe(2)
    // s1 and s2 overlap; s3 starts when one of them leaves; w1 runs alone after all three.
    expect(trace.slice(0, 2)).toEqual(['enter s1', 'enter s2'])
    const w = trace.indexOf('enter w1')
    expect(trace.slice(w, w + 2)).toEqual(['enter w1', 'exit w1'])
    for (const id of ['s1', 's2', 's3']) expect(trace.indexOf(`exit ${id}`)).toBeLessThan(w)
    for (const id of ['s4', 's5']) expect(trace.indexOf(`enter ${id}`)).toBeGreaterThan(w + 1)
  })

  it('serializes everything with maxParallelSubCalls = 1', async () => {
    const trace: string[] = []
    const safe: TestTool = {
      mode: 'parallel',
      run: async (args) => {
        trace.push(`enter ${(args as { id: number }).id}`)
        await new Promise((r) => setTimeout(r, 5))
        trace.push(`exit ${(args as { id: number }).id}`)
        return { value: null }
      },
    }
    await runCode({ safe }, 'await Promise.all([1, 2, 3].map((id) => tools.safe({ id })))', { maxParallelSubCalls: 1 })
    expect(trace).toEqual(['enter 1', 'exit 1', 'enter 2', 'exit 2', 'enter 3', 'exit 3'])
  })

  it('settles to quiescence: aborts the in-flight call, abandons queued ones, drains before returning', async () => {
    let sawAbort = false
    const hang: TestTool = {
      mode: 'exclusive',
      run: (_args, input) =>
        new Promise((resolve) => {
          input.signal.addEventListener('abort', () => {
            sawAbort = true
            // Settles a little later: the bridge must wait for it.
            setTimeout(() => resolve({ error: 'aborted' }), 20)
          })
        }),
    }
    const { host, outcome } = await runCode(
      { hang },
      'tools.hang({ n: 1 }).catch(() => {}); tools.hang({ n: 2 }).catch(() => {}); tools.hang({ n: 3 }).catch(() => {}); return "early"',
    )
    expect(outcome).toEqual({ ok: true, value: { logs: [], result: 'early' } })
    expect(sawAbort).toBe(true)
    // Only the started call dispatched; its settle event landed before run_code returned.
    expect(host.inputs.map((i) => i.callId)).toEqual(['call-1:code:1'])
    expect(host.events.map((e) => `${e.type} ${e.subCallId}`)).toEqual([
      'tool/code-dispatch-start call-1:code:1',
      'tool/code-dispatch call-1:code:1',
    ])
    expect(settles(host.events)[0]).toMatchObject({ isError: true })
  })

  it('aborting the outer signal aborts the in-flight call and abandons queued ones', async () => {
    const outer = new AbortController()
    const hang: TestTool = {
      mode: 'exclusive',
      run: (_args, input) =>
        new Promise((resolve) => {
          setTimeout(() => outer.abort(new Error('user cancelled')), 10)
          input.signal.addEventListener('abort', () => resolve({ error: 'cancelled' }))
        }),
    }
    const { host, outcome } = await runCode(
      { hang },
      'await Promise.all([tools.hang({}), tools.hang({}), tools.hang({})])',
      {},
      runContext(outer.signal),
    )
    expect(outcome.ok).toBe(false)
    const error = (outcome as { error: CodeRunFailedError }).error
    expect(error).toBeInstanceOf(CodeRunFailedError)
    expect(error.kind).toBe('abort')
    expect(host.inputs).toHaveLength(1)
    expect(host.events.map((e) => e.type)).toEqual(['tool/code-dispatch-start', 'tool/code-dispatch'])
  })

  it('rejects a binding called after the run settled, without dispatch', async () => {
    const { host } = await runCode({ echo }, 'globalThis.__lateEcho = tools.echo; return 1')
    const late = (globalThis as { __lateEcho?: (a: unknown) => Promise<unknown> }).__lateEcho!
    delete (globalThis as { __lateEcho?: unknown }).__lateEcho
    await expect(late({ x: 1 })).rejects.toMatchObject({ name: 'ToolCallError', toolName: 'echo', message: 'the run has settled or was aborted; the call was not dispatched' })
    expect(host.inputs).toHaveLength(0)
    expect(host.events).toHaveLength(0)
  })

  it('throws CodeRunFailedError with the kind, message and captured output', async () => {
    const { outcome } = await runCode({}, 'console.log("before"); console.warn("careful"); throw new Error("boom")')
    const error = (outcome as { error: CodeRunFailedError }).error
    expect(error).toBeInstanceOf(CodeRunFailedError)
    expect(error.code).toBe('CODE_RUN_FAILED')
    expect(error.kind).toBe('exception')
    expect(error.logs).toEqual(['before', 'careful'])
    expect(error.message).toBe('code run failed (exception): Error: boom (run_code runs TypeScript/JavaScript programs)\nCaptured output:\nbefore\ncareful')
  })

  it('omits "Captured output" when the failed run printed nothing', async () => {
    const { outcome } = await runCode({}, 'throw new TypeError("bad")')
    expect((outcome as { error: Error }).error.message).toBe('code run failed (exception): TypeError: bad (run_code runs TypeScript/JavaScript programs)')
  })

  it("names the code runtime's language when a program throws (Python sent to a TypeScript runtime)", async () => {
    // `len` is Python's, defined in no JavaScript global scope (`print` is, in browsers: window.print).
    const { outcome } = await runCode({}, 'return len([1, 2])')
    const error = (outcome as { error: CodeRunFailedError }).error
    expect(error.kind).toBe('exception')
    expect(error.message).toBe('code run failed (exception): ReferenceError: len is not defined (run_code runs TypeScript/JavaScript programs)')
    // The language comes from the code runtime, not from a constant.
    const failing = (language: string): CodeRuntime => ({
      language,
      isolation: 'test',
      capabilities: { streamsLogs: false, memoryLimit: false, capturesStdio: false },
      run: async () => ({ logs: [], error: { kind: 'exception', message: 'SyntaxError: bad' } }),
      dispose: async () => {},
    })
    const python = (await runCode({}, 'x', { runtime: failing('python') })).outcome as { error: Error }
    expect(python.error.message).toBe('code run failed (exception): SyntaxError: bad (run_code runs Python programs)')
    const other = (await runCode({}, 'x', { runtime: failing('lua') })).outcome as { error: Error }
    expect(other.error.message).toBe('code run failed (exception): SyntaxError: bad (run_code runs "lua" programs)')
  })

  it('adds no language note to a failure that is not the program throwing (timeout)', async () => {
    const timingOut: CodeRuntime = {
      language: 'typescript',
      isolation: 'test',
      capabilities: { streamsLogs: false, memoryLimit: false, capturesStdio: false },
      run: async () => ({ logs: [], error: { kind: 'timeout', message: 'the wall-clock budget (10 ms) ran out' } }),
      dispose: async () => {},
    }
    const { outcome } = await runCode({}, 'for(;;){}', { runtime: timingOut })
    expect((outcome as { error: Error }).error.message).toBe('code run failed (timeout): the wall-clock budget (10 ms) ran out')
  })

  it('fails a run whose return value is not lossless JSON', async () => {
    const { outcome } = await runCode({}, 'console.log("x"); return { when: new Date(0) }')
    const error = (outcome as { error: CodeRunFailedError }).error
    expect(error).toBeInstanceOf(CodeRunFailedError)
    expect(error.message).toMatch(/^code run failed \(exception\): the program's return value is not lossless JSON: .*\/when/)
    expect(error.logs).toEqual(['x'])
  })

  it('enforces maxOutputBytes on logs + result (envelope and whitespace excluded)', async () => {
    // ["ab"] is 6 bytes; {"k":"é"} is 10 bytes (é = 2 bytes): 16 in all.
    const program = 'console.log("ab"); return { k: "é" }'
    expect((await runCode({}, program, { maxOutputBytes: 16 })).outcome).toEqual({
      ok: true,
      value: { logs: ['ab'], result: { k: 'é' } },
    })
    const { outcome } = await runCode({}, program, { maxOutputBytes: 15 })
    const error = (outcome as { error: CodeRunFailedError }).error
    expect(error).toBeInstanceOf(CodeRunFailedError)
    expect(error.message).toBe(
      'code run failed (exception): the run\'s output (16 bytes of logs and return value) exceeds maxOutputBytes (15); print or return less',
    )
    expect(error.logs).toEqual([])
  })

  it('enforces maxOutputBytes on logs + failure message, keeping the kind', async () => {
    // ["x…"] is 104 bytes, "Error: y…" 107: 211 in all.
    const { outcome } = await runCode({}, 'console.log("x".repeat(100)); throw new Error("y".repeat(100))', {
      maxOutputBytes: 50,
    })
    const error = (outcome as { error: CodeRunFailedError }).error
    expect(error.kind).toBe('exception')
    expect(error.logs).toEqual([])
    expect(error.message).toMatch(
      /^code run failed \(exception\): Error: y+… \(run_code runs TypeScript\/JavaScript programs\) \[failure output of 211 bytes exceeds maxOutputBytes \(50\); captured output dropped\]$/,
    )
  })

  it('fails clearly when no code runtime is configured', async () => {
    const { outcome } = await runCode({}, 'return 1', { runtime: undefined })
    const error = (outcome as { error: ToolError }).error
    expect(error).toBeInstanceOf(ToolError)
    expect(error.code).toBe('CODE_RUN_FAILED')
    expect(error.message).toBe('run_code is unavailable: no code runtime is configured (ToolRuntimeOptions.codeRuntime)')
  })

  it('keeps deferring contexts across a run timeout and logs every started call', async () => {
    // The wall budget ends once `hang` runs: a 50 ms one could end before `ctx` settled on a loaded machine.
    const hanging = deferred()
    const host = createTestHost(
      {
        ctx: { run: () => ({ value: 1, contexts: [{ source: 'ctx', content: 'kept' }] }) },
        hang: { run: (_a, input) => (hanging.resolve(), new Promise((r) => input.signal.addEventListener('abort', () => r({ error: 'stopped' })))) },
      },
      { runtime: createInProcessRuntime({ expire: hanging.promise }) },
    )
    const exec = runContext()
    const error = await Promise.resolve(
      createRunCodeTool(host).execute({ code: 'await tools.ctx({}); await tools.hang({})', description: '' }, exec),
    ).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(CodeRunFailedError)
    expect((error as CodeRunFailedError).kind).toBe('timeout')
    expect(exec.deferred).toEqual([{ source: 'ctx', content: 'kept' }])
    expect(settles(host.events).map((e) => [e.name, e.isError])).toEqual([
      ['ctx', false],
      ['hang', true],
    ])
  })
})

/*
 * The dispatch bridge (`runCodeBridge`) with a scripted code runtime: the "program" is a
 * test function that calls the bindings and returns the run's result, so the bridge's
 * own decisions are checked exactly: outcomes and their messages, the output cap, the
 * language note, dispatch events, contexts, closed runs and contained failures.
 */
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

const echoDefault: TestTool = { run: (args) => ({ value: args }) }
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
    const host = createTestHost({ b: echoDefault, a: echoDefault, constructor: echoDefault }, {
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
    const host = createTestHost({ echo: echoDefault }, {
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
    const host = createTestHost({ echo: echoDefault }, {
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
    const host = createTestHost({ echo: echoDefault }, {
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
    const host = createTestHost({ echo: echoDefault }, { runtime: scriptedRuntime(async (tools) => ({ value: (await tools.echo!({ a: 1 }, {} as never)) as never })) })
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

  it('an outer abort reaches the run’s signal; queued calls are not dispatched', async () => {
    const outer = new AbortController()
    let runSignal: AbortSignal | undefined
    let queuedError: unknown
    const blocking: TestTool = { run: (_a, input) => new Promise((resolve) => input.signal!.addEventListener('abort', () => resolve({ value: 'stopped' }))) }
    const host = createTestHost({ blocking, echo: echoDefault }, {
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

describe('runCodeBridge: durable runs, the run clock and the catalog', () => {
  type Durable = NonNullable<CodeModeRegistry['durable']>
  type Numbering = Parameters<ReturnType<Durable['forRun']>['onPark']>[1]

  /** A durable seam that records what the bridge asks of it. */
  function recordingDurable(resume?: { state: unknown; numbering: Numbering }) {
    const log: unknown[] = []
    const durable: Durable = {
      forRun: (callId, agent, runArgs) => {
        log.push(['forRun', callId, agent, runArgs])
        return {
          onPark: (state, numbering) => void log.push(['onPark', state, structuredClone(numbering)]),
          ...(resume === undefined ? {} : { resume: resume as never }),
        }
      },
      ended: async (callId) => void log.push(['ended', callId]),
    }
    return { durable, log }
  }

  it('without a durable seam the request carries no durable part', async () => {
    let request: CodeRunRequest | undefined
    const host = createTestHost({}, { runtime: scriptedRuntime((_t, r) => ((request = r), {})) })
    await runCodeBridge(host, args, context())
    expect(Object.hasOwn(request!, 'durable')).toBe(false)
  })

  it('asks the seam for the run, hands each park the numbering of the unsettled calls, and says when the run ended', async () => {
    const { durable, log } = recordingDurable()
    const gate = deferred()
    let request: CodeRunRequest | undefined
    const host = createTestHost({ echo: echoDefault, slow: { run: async (a) => (await gate.promise, { value: a }) } }, {
      runtime: scriptedRuntime(async (tools, r) => {
        request = r
        await tools.echo!({ n: 1 }, { callNumber: 1 } as never)
        const pending = tools.slow!({ n: 2 }, { callNumber: 2 } as never)
        await new Promise((resolve) => setTimeout(resolve, 0))
        r.durable!.onPark!({ parked: 1 } as never)
        gate.resolve()
        await pending
        r.durable!.onPark!({ parked: 2 } as never)
        return {}
      }),
    })
    ;(host as { durable?: Durable }).durable = durable
    await runCodeBridge(host, { code: 'the code', description: 'the summary' }, context({ agent: 'ann' } as never))
    expect(Object.hasOwn(request!.durable!, 'resume')).toBe(false)
    expect(log).toEqual([
      ['forRun', 'outer', 'ann', { code: 'the code', description: 'the summary' }],
      ['onPark', { parked: 1 }, { submitted: 2, calls: [[2, 2]] }],
      ['onPark', { parked: 2 }, { submitted: 2, calls: [] }],
      ['ended', 'outer'],
    ])
  })

  it('a resumed run keeps the numbers of its waiting calls and numbers new calls after the last one submitted', async () => {
    const state = { resumed: true }
    const { durable, log } = recordingDurable({ state, numbering: { submitted: 4, calls: [[7, 3]] } })
    let request: CodeRunRequest | undefined
    const host = createTestHost({ echo: echoDefault }, {
      runtime: scriptedRuntime(async (tools, r) => {
        request = r
        await tools.echo!({ a: 1 }, { callNumber: 7 } as never)
        await tools.echo!({ a: 2 }, { callNumber: 8 } as never)
        await tools.echo!({ a: 3 }, {} as never)
        r.durable!.onPark!({} as never)
        return {}
      }),
    })
    ;(host as { durable?: Durable }).durable = durable
    await runCodeBridge(host, args, context())
    expect(request!.durable!.resume).toBe(state)
    expect(host.inputs.map((input) => input.callId)).toEqual(['outer:code:3', 'outer:code:5', 'outer:code:6'])
    expect(log.at(-2)).toEqual(['onPark', {}, { submitted: 6, calls: [] }])
    expect(log.at(-1)).toEqual(['ended', 'outer'])
  })

  it('a call made with the number of a call still in flight shares its sub-call number', async () => {
    const gate = deferred()
    const host = createTestHost({ slow: { mode: 'parallel', run: async (a) => (await gate.promise, { value: a }) } }, {
      runtime: scriptedRuntime(async (tools) => {
        const first = tools.slow!({ i: 1 }, { callNumber: 1 } as never)
        const again = tools.slow!({ i: 2 }, { callNumber: 1 } as never)
        await new Promise((resolve) => setTimeout(resolve, 0))
        gate.resolve()
        await Promise.all([first, again])
        return {}
      }),
    })
    await runCodeBridge(host, args, context())
    expect(host.inputs.map((input) => input.callId)).toEqual(['outer:code:1', 'outer:code:1'])
  })

  it("passes a binding call's finite deadline and its wall-clock hold on to the sub-call, and nothing else", async () => {
    const hold = () => () => {}
    const host = createTestHost({ echo: echoDefault }, {
      runtime: scriptedRuntime(async (tools) => {
        await tools.echo!({}, { deadline: 1234, holdWallClock: hold } as never)
        await tools.echo!({}, { deadline: Number.POSITIVE_INFINITY, holdWallClock: 'no' } as never)
        await tools.echo!({}, { deadline: Number.NaN } as never)
        await tools.echo!({}, { deadline: '99' } as never)
        await tools.echo!({}, null as never)
        await tools.echo!({}, undefined as never)
        return {}
      }),
    })
    await runCodeBridge(host, args, context())
    expect(host.inputs.map((input) => [Object.hasOwn(input, 'deadline') ? input.deadline : 'none', Object.hasOwn(input, 'holdWallClock') ? input.holdWallClock : 'none'])).toEqual([
      [1234, hold],
      ['none', 'none'],
      ['none', 'none'],
      ['none', 'none'],
      ['none', 'none'],
      ['none', 'none'],
    ])
  })

  it("binds the agent's catalog as `catalog` after `tools`, taken once at the start", async () => {
    const agents: unknown[] = []
    let request: CodeRunRequest | undefined
    const host = createTestHost({ echo: echoDefault }, {
      runtime: scriptedRuntime(async (_tools, r) => {
        request = r
        return { value: (await r.bindings[1]!.functions.describe!(['echo'], { signal: r.signal as AbortSignal })) as never }
      }),
    })
    ;(host as { catalog?: (agent: unknown) => unknown }).catalog = (agent) => {
      agents.push(agent)
      return { size: 1, language: 'typescript', search: () => [], describe: (name: string) => `declaration of ${name}`, closest: () => [] }
    }
    const out = await runCodeBridge(host, args, context({ agent: 'ann' } as never))
    expect(request!.bindings.map((binding) => binding.global)).toEqual(['tools', 'catalog'])
    expect(out.result).toBe('declaration of echo')
    expect(agents).toEqual(['ann'])
  })
})

describe('runCodeBridge: sub-call failures, signals and timing', () => {
  const tick = () => new Promise((resolve) => setTimeout(resolve, 0))

  it('a registry that rejects with a string or a non-error still settles the call with a message', async () => {
    const caught: unknown[] = []
    const host = createTestHost({ echo: echoDefault }, {
      runtime: scriptedRuntime(async (tools) => {
        for (let i = 0; i < 3; i++) await tools.echo!({}, {} as never).catch((error: unknown) => caught.push((error as Error).message))
        return {}
      }),
    })
    const reasons: unknown[] = ['boom as text', 42, Object.assign(new Error('x'), { message: 7 })]
    host.execute = () => Promise.reject(reasons.shift())
    await runCodeBridge(host, args, context())
    expect(caught).toEqual(['boom as text', 'unknown error', 'Error'])
    expect(settles(host.events).map((event) => [event.error, event.content])).toEqual([
      [{ message: 'boom as text' }, [{ type: 'text', text: 'Error: boom as text' }]],
      [{ message: 'unknown error' }, [{ type: 'text', text: 'Error: unknown error' }]],
      [{ message: 'Error' }, [{ type: 'text', text: 'Error: Error' }]],
    ])
  })

  it('a failed result without error info logs no code', async () => {
    const host = createTestHost({ echo: echoDefault }, { runtime: scriptedRuntime(async (tools) => (await tools.echo!({}, {} as never).catch(() => null), {})) })
    host.execute = async () => ({ isError: true, error: { message: 'plain failure' }, content: [{ type: 'text', text: 'Error: plain failure' }] }) as never
    await runCodeBridge(host, args, context())
    expect(settles(host.events)[0]!.error).toEqual({ message: 'plain failure' })
  })

  it('a call still running when the run settles is aborted with an AbortError that says so', async () => {
    let signal: AbortSignal | undefined
    const waiting: TestTool = { run: (_a, input) => ((signal = input.signal), new Promise((resolve) => input.signal!.addEventListener('abort', () => resolve({ value: null })))) }
    const host = createTestHost({ waiting }, {
      runtime: scriptedRuntime(async (tools) => {
        void tools.waiting!({}, {} as never).catch(() => null)
        await tick()
        return {}
      }),
    })
    await runCodeBridge(host, args, context())
    expect(signal!.aborted).toBe(true)
    expect(signal!.reason).toBeInstanceOf(DOMException)
    expect([(signal!.reason as DOMException).name, (signal!.reason as DOMException).message]).toEqual(['AbortError', 'run_code settled; the sub-call was cancelled'])
  })

  it('an outer abort refuses queued calls at once, while the call in flight still runs, and they leave no contexts', async () => {
    const outer = new AbortController()
    const gate = deferred()
    const seen: string[] = []
    const holding: TestTool = { run: async () => (await gate.promise, { value: 'held', contexts: [{ source: 'held', content: 'h' }] }) }
    const host = createTestHost({ holding, echo: echoDefault }, {
      maxParallelSubCalls: 1,
      runtime: scriptedRuntime(async (tools) => {
        const first = tools.holding!({}, {} as never).then((value) => seen.push(`first: ${String(value)}`), (e: Error) => seen.push(`first failed: ${e.message}`))
        const second = tools.echo!({}, {} as never).catch((e: Error) => seen.push(`queued: ${e.message}`))
        await tick()
        outer.abort(new Error('user stop'))
        await tick()
        seen.push('after the abort')
        gate.resolve()
        await Promise.all([first, second])
        return {}
      }),
    })
    const exec = context({ signal: outer.signal })
    await runCodeBridge(host, args, exec)
    expect(seen).toEqual(['queued: the run ended before the call started; it was not dispatched', 'after the abort', 'first: held'])
    expect(exec.deferred.map((c) => c.content)).toEqual(['h'])
  })

  it('a call in flight that fails after an outer abort rejects with its own message', async () => {
    const outer = new AbortController()
    let message: string | undefined
    const cancelled: TestTool = { run: (_a, input) => new Promise((resolve) => input.signal!.addEventListener('abort', () => resolve({ error: 'cancelled by the tool' }))) }
    const host = createTestHost({ cancelled }, {
      runtime: scriptedRuntime(async (tools) => {
        const call = tools.cancelled!({}, {} as never).catch((e: Error) => (message = e.message))
        await tick()
        outer.abort()
        await call
        return {}
      }),
    })
    await runCodeBridge(host, args, context({ signal: outer.signal }))
    expect(message).toBe('cancelled by the tool')
  })

  it('classifies each call with the agent only when there is one; an unclassifiable call runs alone', async () => {
    const classified: unknown[] = []
    let running = 0
    let most = 0
    const counted: TestTool = { mode: 'parallel', run: async () => (running++, (most = Math.max(most, running)), await tick(), running--, { value: 1 }) }
    const program = scriptedRuntime(async (tools) => ({ value: (await Promise.all([tools.counted!({ i: 1 }, {} as never), tools.counted!({ i: 2 }, {} as never)])) as never }))
    const host = createTestHost({ counted }, { runtime: program })
    host.executionMode = (input) => (classified.push(input), 'parallel')
    await runCodeBridge(host, args, context({ agent: 'ann' } as never))
    await runCodeBridge(host, args, context())
    expect(classified).toEqual([
      { name: 'counted', arguments: { i: 1 }, agent: 'ann' },
      { name: 'counted', arguments: { i: 2 }, agent: 'ann' },
      { name: 'counted', arguments: { i: 1 } },
      { name: 'counted', arguments: { i: 2 } },
    ])
    expect(most).toBe(2)
    most = 0
    host.executionMode = () => {
      throw new Error('classifier down')
    }
    await runCodeBridge(host, args, context())
    expect(most).toBe(1)
  })

  it("hands on a call's contexts as soon as it and every earlier call settled, while the program runs", async () => {
    const exec = context()
    const during: number[] = []
    const withContext: TestTool = { run: () => ({ value: 1, contexts: [{ source: 't', content: 'c' }] }) }
    const host = createTestHost({ withContext }, {
      runtime: scriptedRuntime(async (tools) => {
        await tools.withContext!({}, {} as never)
        during.push(exec.deferred.length)
        await tools.withContext!({}, {} as never)
        during.push(exec.deferred.length)
        return {}
      }),
    })
    await runCodeBridge(host, args, exec)
    expect(during).toEqual([1, 2])
  })

  it("times each sub-call: the settle event's duration is the call's, in milliseconds", async () => {
    const sleepy: TestTool = { run: async () => (await new Promise((resolve) => setTimeout(resolve, 30)), { value: 1 }) }
    const host = createTestHost({ sleepy }, { runtime: scriptedRuntime(async (tools) => (await tools.sleepy!({}, {} as never), {})) })
    await runCodeBridge(host, args, context())
    const { durationMs, startedAt, settledAt } = settles(host.events)[0]!
    expect(durationMs).toBeGreaterThanOrEqual(25)
    expect(durationMs).toBeLessThan(60_000)
    expect(settledAt - startedAt).toBeGreaterThanOrEqual(25)
  })

  it('stops following the outer signal once the run settled', async () => {
    const outer = new AbortController()
    // The signal's 'abort' listeners, counted through its own methods (this suite also runs
    // in Chromium and workerd, where node:events' getEventListeners does not exist).
    const signal = outer.signal
    const listening = new Set<unknown>()
    let added = 0
    const add = signal.addEventListener.bind(signal)
    const remove = signal.removeEventListener.bind(signal)
    signal.addEventListener = ((type: string, listener: EventListenerOrEventListenerObject, options?: AddEventListenerOptions | boolean) => {
      if (type === 'abort') {
        added++
        listening.add(listener)
      }
      add(type, listener, options)
    }) as typeof signal.addEventListener
    signal.removeEventListener = ((type: string, listener: EventListenerOrEventListenerObject, options?: EventListenerOptions | boolean) => {
      if (type === 'abort') listening.delete(listener)
      remove(type, listener, options)
    }) as typeof signal.removeEventListener
    const host = createTestHost({}, { runtime: scriptedRuntime(() => ({})) })
    await runCodeBridge(host, args, context({ signal }))
    expect(added).toBeGreaterThan(0)
    expect([...listening]).toEqual([])
  })

  it('adds the language note to any exception but a tool call failure the program left uncaught', async () => {
    const failing = (message: string) => createTestHost({}, { runtime: scriptedRuntime(() => ({ error: { kind: 'exception', message } })) })
    expect((await failure(runCodeBridge(failing('ToolCallError: denied by policy'), args, context()))).message).toBe('code run failed (exception): ToolCallError: denied by policy')
    expect((await failure(runCodeBridge(failing('Error: wrapped ToolCallError: '), args, context()))).message).toBe(
      'code run failed (exception): Error: wrapped ToolCallError:  (run_code runs TypeScript/JavaScript programs)',
    )
  })
})
