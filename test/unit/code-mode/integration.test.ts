/**
 * run_code end to end: the real registry (`createToolRuntime`, mode `code`) and the real
 * Node worker runtime (`createNodeWorkerRuntime`: every program runs in a fresh
 * worker_threads Worker). Nothing under test is mocked.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { createNodeWorkerRuntime } from '../../../platforms/node/index.js'
import type { NodeWorkerRuntimeOptions } from '../../../platforms/node/index.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { createMemorySessionLog } from '../../../src/session-log.js'
import type { CodeDispatchEvent, CodeDispatchStartEvent, ToolRuntime, ToolRuntimeOptions } from '../../../src/runtime-types.js'
import type { ToolExecutionResult, ToolExecutionToken } from '../../../src/types.js'

const codeRuntimes: Array<{ dispose(): Promise<void> }> = []
const toolRuntimes: ToolRuntime[] = []

function workerRuntime(options: NodeWorkerRuntimeOptions = {}) {
  const runtime = createNodeWorkerRuntime({ prespawn: 1, ...options })
  codeRuntimes.push(runtime)
  return runtime
}
const shared = workerRuntime()

function setup(options: Partial<ToolRuntimeOptions> = {}) {
  const sessionLog = createMemorySessionLog()
  const tools = createToolRuntime({ mode: 'code', codeRuntime: shared, sessionLog, ...options })
  toolRuntimes.push(tools)
  const run = (code: string, signal: AbortSignal = new AbortController().signal, callId = 'call-1') =>
    tools.execute({ callId, name: 'run_code', arguments: { code, description: 'test program' }, signal })
  const starts = () => sessionLog.events.filter((e): e is CodeDispatchStartEvent => e.type === 'tool/code-dispatch-start')
  const settles = () => sessionLog.events.filter((e): e is CodeDispatchEvent => e.type === 'tool/code-dispatch')
  return { tools, sessionLog, run, starts, settles }
}

function text(result: ToolExecutionResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
}

function valueOf(result: ToolExecutionResult): unknown {
  if (result.isError) throw new Error(`run_code failed: ${result.error.message}`)
  return result.value
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A tool that records when its body enters and leaves. */
function probe(name: string, trace: string[], safe: boolean, ms = 80) {
  return defineTool({
    name,
    description: `probe ${name}`,
    parameters: { id: { type: 'string', required: true } },
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    isConcurrencySafe: () => safe,
    async execute(args) {
      trace.push(`enter ${args.id}`)
      await sleep(ms)
      trace.push(`exit ${args.id}`)
      return args.id
    },
  })
}

afterEach(async () => {
  await Promise.all(toolRuntimes.splice(0).map((t) => t.dispose()))
})
afterAll(async () => {
  await Promise.all(codeRuntimes.splice(0).map((r) => r.dispose()))
})

describe('run_code on real workers through the real registry', () => {
  it('returns typed canonical values to the program and renders the outcome', async () => {
    const { tools, run } = setup()
    tools.register(
      defineTool({
        name: 'stats',
        description: 'Numbers about a list.',
        parameters: { values: { type: 'array', items: { type: 'number' }, required: true } },
        output: {
          schema: {
            type: 'object',
            properties: { sum: { type: 'number', required: true }, max: { type: 'number', required: true } },
            additionalProperties: false,
          },
          render: (_a, v) => [{ type: 'text', text: `sum=${v.sum}` }],
        },
        execute: (args) => ({ sum: args.values.reduce((a, b) => a + b, 0), max: Math.max(...args.values) }),
      }),
    )
    const result = await run(`
      const s: { sum: number; max: number } = await tools.stats({ values: [3, 9, 4] })
      console.log('typeof sum:', typeof s.sum)
      return { doubled: s.sum * 2, max: s.max, nested: { deep: [s.max] } }`)
    expect(result.isError).toBe(false)
    expect(valueOf(result)).toEqual({ logs: ['typeof sum: number'], result: { doubled: 32, max: 9, nested: { deep: [9] } } })
    expect(text(result)).toBe(
      'typeof sum: number\n{\n  "doubled": 32,\n  "max": 9,\n  "nested": {\n    "deep": [\n      9\n    ]\n  }\n}',
    )
    expect(result.meta).toEqual({ logLines: 1, hasResult: true })
  })

  it('renders strings raw, null explicitly, and says when there is no output', async () => {
    const { run } = setup()
    expect(text(await run('return "plain\\ntext"'))).toBe('plain\ntext')
    expect(text(await run('return null'))).toBe('null')
    expect(text(await run('const x = 1'))).toBe('(run_code completed with no output)')
    expect(valueOf(await run('const x = 1'))).toEqual({ logs: [] })
  })

  it('passes {} for tools.x() without an argument', async () => {
    const { tools, run } = setup()
    const seen: unknown[] = []
    tools.register(
      defineTool({
        name: 'now',
        description: 'No arguments.',
        parameters: {},
        output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
        execute: (args) => {
          seen.push(args)
          return 'ok'
        },
      }),
    )
    expect(valueOf(await run('return await tools.now()'))).toEqual({ logs: [], result: 'ok' })
    expect(seen).toEqual([{}])
  })

  it('rejects failures and denials with ToolCallError (toolName, code, and a message that names a denial)', async () => {
    const { tools, run, settles } = setup()
    tools.register(
      defineTool({
        name: 'explode',
        description: 'Always fails.',
        parameters: {},
        output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
        execute: () => {
          throw new Error('disk on fire')
        },
      }),
    )
    tools.register(
      defineTool({
        name: 'secret',
        description: 'Guarded.',
        parameters: {},
        output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
        execute: () => 'leaked',
      }),
    )
    tools.guard((execution) => (execution.name === 'secret' ? 'secret is off limits' : undefined))
    const result = await run(`
      const out = []
      for (const call of [() => tools.explode(), () => tools.secret({}), () => tools.secret({ extra: 1 })]) {
        try { await call() } catch (e) {
          out.push({ isToolCallError: e instanceof ToolCallError, name: e.name, toolName: e.toolName, message: e.message, code: e.code ?? null })
        }
      }
      return out`)
    expect(valueOf(result)).toEqual({
      logs: [],
      result: [
        { isToolCallError: true, name: 'ToolCallError', toolName: 'explode', message: 'disk on fire', code: 'TOOL_FAILED' },
        { isToolCallError: true, name: 'ToolCallError', toolName: 'secret', message: 'secret was denied by a guard: secret is off limits', code: 'DENIED_BY_GUARD' },
        { isToolCallError: true, name: 'ToolCallError', toolName: 'secret', message: 'secret was denied by a guard: secret is off limits', code: 'DENIED_BY_GUARD' },
      ],
    })
    // The session log keeps the native content and the code; the program saw the code, not the content.
    expect(settles().map((e) => [e.name, e.isError, e.error?.code])).toEqual([
      ['explode', true, 'TOOL_FAILED'],
      ['secret', true, 'DENIED_BY_GUARD'],
      ['secret', true, 'DENIED_BY_GUARD'],
    ])
    expect(settles()[0]!.content).toEqual([{ type: 'text', text: 'Error: disk on fire' }])
  })

  it('rejects non-lossless arguments before dispatch: not numbered, not logged', async () => {
    const { tools, run, starts } = setup()
    tools.register(probe('p', [], true, 0))
    const result = await run(`
      const errors = []
      for (const arg of [{ id: 1n }, { id: new Date(0) }, { id: -0 }, { id: [1, , 2] }, { id: NaN }]) {
        try { await tools.p(arg) } catch (e) { errors.push(e instanceof ToolCallError && e.toolName === 'p' && e.message.startsWith('arguments are not lossless JSON')) }
      }
      return { errors, ok: await tools.p({ id: 'fine' }) }`)
    expect(valueOf(result)).toEqual({ logs: [], result: { errors: [true, true, true, true, true], ok: 'fine' } })
    expect(starts().map((e) => e.subCallId)).toEqual(['call-1:code:1'])
  })

  it('overlaps concurrency-safe calls under Promise.all and runs exclusive calls alone as barriers', async () => {
    const trace: string[] = []
    const { tools, run } = setup()
    tools.register(probe('read', trace, true))
    tools.register(probe('write', trace, false))
    const result = await run(`return await Promise.all([
      tools.read({ id: 'r1' }), tools.read({ id: 'r2' }), tools.read({ id: 'r3' }),
      tools.write({ id: 'w1' }),
      tools.read({ id: 'r4' }), tools.read({ id: 'r5' }),
    ])`)
    expect(valueOf(result)).toEqual({ logs: [], result: ['r1', 'r2', 'r3', 'w1', 'r4', 'r5'] })
    // r1–r3 all entered before any left: they overlapped.
    expect(trace.slice(0, 3).sort()).toEqual(['enter r1', 'enter r2', 'enter r3'])
    const w = trace.indexOf('enter w1')
    expect(trace[w + 1]).toBe('exit w1')
    for (const id of ['r1', 'r2', 'r3']) expect(trace.indexOf(`exit ${id}`)).toBeLessThan(w)
    expect(trace.slice(w + 2, w + 4).sort()).toEqual(['enter r4', 'enter r5'])
  })

  it('runs every call serially with maxParallelSubCalls = 1', async () => {
    const trace: string[] = []
    const { tools, run } = setup({ maxParallelSubCalls: 1 })
    tools.register(probe('read', trace, true, 10))
    await run('await Promise.all(["a", "b", "c"].map((id) => tools.read({ id })))')
    expect(trace).toEqual(['enter a', 'exit a', 'enter b', 'exit b', 'enter c', 'exit c'])
  })

  it('gives sub-calls <callId>:code:<n> ids, the outer token as parent and start/settle events with timing', async () => {
    const { tools, run, sessionLog } = setup()
    tools.register(probe('read', [], true, 5))
    let outer: ToolExecutionToken | undefined
    const parents: Array<[string, ToolExecutionToken | undefined]> = []
    tools.on('tools/pre-execute', (decision, execution) => {
      if (execution.name === 'run_code') outer = execution.token
      else parents.push([execution.callId, execution.parent])
      return decision
    })
    const before = Date.now()
    await run('await tools.read({ id: "x" }); await Promise.all([tools.read({ id: "y" }), tools.read({ id: "z" })])', undefined, 'abc')
    const after = Date.now()
    expect(parents.map(([id]) => id)).toEqual(['abc:code:1', 'abc:code:2', 'abc:code:3'])
    for (const [, parent] of parents) expect(parent).toBe(outer)
    const events = sessionLog.events
    expect(events.map((e) => `${e.type}:${e.subCallId}`)).toEqual([
      'tool/code-dispatch-start:abc:code:1',
      'tool/code-dispatch:abc:code:1',
      'tool/code-dispatch-start:abc:code:2',
      'tool/code-dispatch-start:abc:code:3',
      // y and z overlap; their settle order is not fixed.
      expect.stringMatching(/^tool\/code-dispatch:abc:code:[23]$/),
      expect.stringMatching(/^tool\/code-dispatch:abc:code:[23]$/),
    ])
    const start = events[0] as CodeDispatchStartEvent
    const settle = events[1] as CodeDispatchEvent
    expect(start).toEqual({
      type: 'tool/code-dispatch-start',
      parentCallId: 'abc',
      subCallId: 'abc:code:1',
      name: 'read',
      arguments: { id: 'x' },
      startedAt: start.startedAt,
    })
    expect(settle).toMatchObject({
      type: 'tool/code-dispatch',
      parentCallId: 'abc',
      subCallId: 'abc:code:1',
      name: 'read',
      arguments: { id: 'x' },
      isError: false,
      content: [{ type: 'text', text: 'x' }],
      startedAt: start.startedAt,
    })
    expect(start.startedAt).toBeGreaterThanOrEqual(before)
    expect(settle.settledAt).toBeGreaterThanOrEqual(settle.startedAt)
    expect(settle.settledAt).toBeLessThanOrEqual(after)
    // The probe sleeps 5 ms inside the pipeline.
    expect(settle.durationMs).toBeGreaterThanOrEqual(4)
  })

  it('logs agent-scoped events with the agent and the agent’s visible bindings only', async () => {
    const { tools, sessionLog } = setup()
    tools.register(probe('shared', [], true, 0))
    const agent = tools.agent('alice')
    agent.register(probe('mine', [], true, 0))
    const result = await agent.execute({
      callId: 'a1',
      name: 'run_code',
      arguments: { code: 'return [Object.keys(tools).sort(), await tools.mine({ id: "m" })]', description: 'd' },
      signal: new AbortController().signal,
    })
    expect(valueOf(result)).toEqual({ logs: [], result: [['mine', 'shared'], 'm'] })
    expect(sessionLog.events.every((e) => e.agent === 'alice')).toBe(true)
  })

  it('runs the tools/code-dispatch-log waterfall before appending (spill replaces content)', async () => {
    const { tools, run, settles } = setup()
    tools.register(
      defineTool({
        name: 'big',
        description: 'Large output.',
        parameters: {},
        output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
        execute: () => 'x'.repeat(10_000),
      }),
    )
    tools.on('tools/code-dispatch-log', (event) => {
      const size = event.content.reduce((n, b) => n + (b.type === 'text' ? b.text.length : 0), 0)
      return size > 1000 ? { ...event, content: [{ type: 'text', text: `[spilled ${size} chars to blob://1]` }] } : event
    })
    tools.on('tools/code-dispatch-log', () => {
      throw new Error('a broken listener keeps the event as it was')
    })
    const result = await run('const s = await tools.big(); return s.length')
    // The program still got the whole value.
    expect(valueOf(result)).toEqual({ logs: [], result: 10_000 })
    expect(settles()[0]!.content).toEqual([{ type: 'text', text: '[spilled 10000 chars to blob://1]' }])
  })

  it('defers sub-call contexts in dispatch order, after the run_code result, even when the program fails', async () => {
    const { tools, run } = setup()
    tools.register(probe('slow', [], true, 60))
    tools.register(probe('fast', [], true, 0))
    tools.on('tools/post-execute', (decision, execution) =>
      execution.name === 'run_code'
        ? decision
        : { kind: 'accept', additionalContexts: [{ source: 'ctx-policy', content: `after ${execution.callId}`, meta: { n: 1 } }] },
    )
    const ok = await run('return await Promise.all([tools.slow({ id: "s" }), tools.fast({ id: "f" })])')
    expect(ok.additionalContexts).toEqual([
      { source: 'ctx-policy', content: 'after call-1:code:1', meta: { n: 1 } },
      { source: 'ctx-policy', content: 'after call-1:code:2', meta: { n: 1 } },
    ])
    const failed = await run('await tools.fast({ id: "a" }); await tools.fast({ id: "b" }); throw new Error("later")', undefined, 'call-2')
    expect(failed.isError).toBe(true)
    expect(failed.additionalContexts?.map((c) => c.content)).toEqual(['after call-2:code:1', 'after call-2:code:2'])
  })

  it('aborting the outer signal aborts the in-flight sub-call and abandons queued ones', async () => {
    const { tools, run, sessionLog } = setup()
    const outer = new AbortController()
    let sawAbort = false
    tools.register(
      defineTool({
        name: 'hang',
        description: 'Waits for its signal.',
        parameters: {},
        output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
        execute: (_args, exec) =>
          new Promise<string>((_resolve, reject) => {
            setTimeout(() => outer.abort(new Error('user pressed stop')), 30)
            exec.signal.addEventListener('abort', () => {
              sawAbort = true
              reject(new Error('stopped'))
            })
          }),
      }),
    )
    const result = await run('await Promise.all([tools.hang(), tools.hang(), tools.hang()])', outer.signal)
    expect(sawAbort).toBe(true)
    expect(result.isError).toBe(true)
    // Only the started call logged, and its settle event landed before run_code returned.
    expect(sessionLog.events.map((e) => `${e.type}:${e.subCallId}`)).toEqual([
      'tool/code-dispatch-start:call-1:code:1',
      'tool/code-dispatch:call-1:code:1',
    ])
    expect((sessionLog.events[1] as CodeDispatchEvent).isError).toBe(true)
  })

  it('a wall-budget expiry aborts the in-flight sub-call and drains it before returning', async () => {
    // A pre-spawned, booted worker: the wall ceiling counts from run(), boot included.
    const codeRuntime = workerRuntime({ maxWallMs: 2_000, prespawn: 1 })
    await codeRuntime.warm()
    const { tools, run, settles, starts } = setup({ codeRuntime })
    let stoppedAt = 0
    tools.register(
      defineTool({
        name: 'slow',
        description: 'Slow until aborted.',
        parameters: {},
        output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
        execute: (_args, exec) =>
          new Promise<string>((_resolve, reject) => {
            exec.signal.addEventListener('abort', () =>
              setTimeout(() => {
                stoppedAt = Date.now()
                reject(new Error('stopped by the run'))
              }, 30),
            )
          }),
      }),
    )
    const result = await run('console.log("waiting"); await Promise.all([tools.slow(), tools.slow()])')
    const returnedAt = Date.now()
    expect(result.isError).toBe(true)
    expect(result.isError && result.error.info?.code).toBe('CODE_RUN_FAILED')
    expect(text(result)).toMatch(/^Error: code run failed \(timeout\): .*\nCaptured output:\nwaiting$/s)
    expect(stoppedAt).toBeGreaterThan(0)
    expect(stoppedAt).toBeLessThanOrEqual(returnedAt)
    // The second (exclusive, queued) call was abandoned: it logged nothing.
    expect(starts()).toHaveLength(1)
    expect(settles()).toHaveLength(1)
    expect(settles()[0]).toMatchObject({ name: 'slow', isError: true, error: { message: 'stopped by the run' } })
  })

  it('turns a failed run into an isError result with CODE_RUN_FAILED and the exact content shape', async () => {
    const { run } = setup()
    const result = await run('console.log("step 1"); console.error("warn 2"); throw new Error("boom")')
    expect(result.isError).toBe(true)
    if (!result.isError) return
    expect(result.error.info).toEqual({ name: 'CodeRunFailedError', code: 'CODE_RUN_FAILED' })
    const content = text(result)
    expect(content).toMatch(/^Error: code run failed \(exception\): .*boom/)
    expect(content.endsWith('\nCaptured output:\nstep 1\nwarn 2')).toBe(true)
    expect(content).toBe(`Error: ${result.error.message}`)

    // No output: no "Captured output:" part (the message may carry the program's stack).
    const quiet = await run('throw new Error("silent")')
    expect(text(quiet)).toMatch(/^Error: code run failed \(exception\): .*silent/)
    expect(text(quiet)).not.toContain('Captured output:')
  })

  it('reports a syntax error as an exception without running anything', async () => {
    const { run } = setup()
    const result = await run('enum Color { Red }')
    expect(text(result)).toMatch(/^Error: code run failed \(exception\): /)
  })

  it('fails a run whose completion exceeds maxOutputBytes, and passes one that fits', async () => {
    const { run } = setup({ maxOutputBytes: 1000 })
    // ["…"] = 402 bytes of logs, result "…" = 502 bytes: 904 in all.
    expect(valueOf(await run('console.log("a".repeat(398)); return "b".repeat(500)'))).toEqual({
      logs: ['a'.repeat(398)],
      result: 'b'.repeat(500),
    })
    const over = await run('console.log("a".repeat(398)); return "b".repeat(600)')
    expect(text(over)).toBe(
      "Error: code run failed (exception): the run's output (1004 bytes of logs and return value) exceeds maxOutputBytes (1000); print or return less",
    )
  })

  it('fails a run whose return value JSON cannot carry; toJSON applies as everywhere JSON is used', async () => {
    const { run } = setup()
    const fn = await run('return { when: () => 0 }')
    expect(text(fn)).toMatch(/^Error: code run failed \(exception\): TypeError: the program's return value cannot be sent back as JSON \(a function is not JSON\)/)
    const date = await run('return { when: new Date(0) }')
    expect(valueOf(date)).toEqual({ logs: [], result: { when: '1970-01-01T00:00:00.000Z' } })
  })

  it('exposes tools named __proto__, constructor and toString as plain bindings', async () => {
    const { tools, run } = setup()
    for (const name of ['__proto__', 'constructor', 'toString']) {
      tools.register(
        defineTool({
          name,
          description: 'exotic',
          parameters: {},
          output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
          execute: () => `called ${name}`,
        }),
      )
    }
    const result = await run('return [await tools["__proto__"](), await tools.constructor(), await tools.toString()]')
    expect(valueOf(result)).toEqual({ logs: [], result: ['called __proto__', 'called constructor', 'called toString'] })
  })

  it('rejects malformed run_code arguments with INVALID_ARGS before any policy or run', async () => {
    const { tools } = setup()
    let gated = 0
    tools.on('tools/pre-execute', (decision) => {
      gated++
      return decision
    })
    const signal = new AbortController().signal
    for (const args of [{ code: 'return 1' }, { code: 1, description: 'd' }, { code: 'return 1', description: 'd', x: 1 }]) {
      const result = await tools.execute({ callId: 'bad', name: 'run_code', arguments: args, signal })
      expect(result.isError && result.error.info?.code).toBe('INVALID_ARGS')
    }
    expect(gated).toBe(0)
  })

  it('keeps the code-only collapse for direct calls while sub-calls stay exempt', async () => {
    const { tools, run } = setup()
    tools.register(probe('read', [], true, 0))
    const direct = await tools.execute({ callId: 'd', name: 'read', arguments: { id: 'x' }, signal: new AbortController().signal })
    expect(direct.isError && direct.error.info?.code).toBe('UNKNOWN_TOOL')
    expect(valueOf(await run('return await tools.read({ id: "x" })'))).toEqual({ logs: [], result: 'x' })
  })
})
