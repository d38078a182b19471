/**
 * What `createToolRuntime()` wires together, seen through the runtime it returns, with a
 * scripted code runtime (it calls the program's bindings from plain functions, compiles
 * nothing: the suite runs in workerd and Chromium too) and an in-memory store:
 * - with a `store`, each sub-call of a run that parked is recorded around its body (a
 *   recorded `started` call fails as INTERRUPTED unless its tool is idempotent), and
 *   `resumeRuns()` starts each stored run again through `run_code`, under its agent;
 * - preflight: the mode in force (the agent's own declaration, else the runtime's), the
 *   engine the check asks, and `'warn'` checking only with an integrator's engine.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { CodeRunRequest, CodeRunResult, CodeRuntime, ParkedRunState } from '../../../src/code-runtime/contract.js'
import { argumentsHash } from '../../../src/durable/call-key.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import type { DurableStore } from '../../../src/durable/store.js'
import type { PreflightEngine, PreflightEngineRequest } from '../../../src/preflight/types.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import type { ToolRuntime, ToolRuntimeOptions } from '../../../src/runtime-types.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ToolExecutionResult } from './types.js'
import { until } from '../../support/poll.js'

type Script = (request: CodeRunRequest) => Promise<CodeRunResult>

/** A code runtime whose every run is `script(request)`; it keeps each request. */
function scriptedRuntime(script: Script): CodeRuntime & { readonly requests: CodeRunRequest[] } {
  const requests: CodeRunRequest[] = []
  return {
    language: 'typescript',
    isolation: 'in-process-test',
    capabilities: { streamsLogs: false, memoryLimit: false, capturesStdio: false },
    requests,
    run: (request) => (requests.push(request), script(request)),
    dispose: async () => {},
  }
}

/** Calls `tools[name](args)` of a run's request, as a program would; a failure comes back as its message. */
async function callTool(request: CodeRunRequest, name: string, args: unknown): Promise<unknown> {
  const tools = request.bindings.find((b) => b.global === 'tools')!
  try {
    return await tools.functions[name]!(args, { signal: new AbortController().signal })
  } catch (error) {
    return `failed: ${(error as Error).message}`
  }
}

/** A parked state as a parking runtime would hand it over (valid for the store's reader). */
const PARKED: ParkedRunState = Object.freeze({
  version: 1,
  vm: { journal: { inputs: [], reads: [], ops: '', calls: [] }, clockMs: 0, timers: [] },
  logs: [],
  logBytes: 0,
  logTruncated: false,
  busyMs: 0,
  wallMs: 0,
  lastCallId: 0,
  calls: [],
}) as ParkedRunState

/** A memory store that lists the keys written to it, in order. */
function recordingStore(): DurableStore & { readonly puts: string[] } {
  const store = createMemoryStore()
  const puts: string[] = []
  return {
    puts,
    get: (key) => store.get(key),
    put: (key, value, options) => (puts.push(`${key} ${value}`), store.put(key, value, options)),
    delete: (key, options) => store.delete(key, options),
    list: (prefix, options) => store.list(prefix, options),
  }
}

const runtimes: ToolRuntime[] = []
afterEach(async () => {
  for (const runtime of runtimes.splice(0)) await runtime.dispose()
})

function runtimeWith(options: ToolRuntimeOptions, effects: string[] = []): ToolRuntime {
  const runtime = createToolRuntime({ mode: 'code', ...options })
  runtimes.push(runtime)
  const tool = (name: string, idempotent: boolean) =>
    defineTool({
      name,
      description: `${name} (test)`,
      parameters: { tag: { type: 'string' } },
      ...(idempotent ? { idempotent: true } : {}),
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: (args) => (effects.push(`${name}:${args.tag}`), `${name} did ${args.tag}`),
    })
  runtime.register(tool('effect', false))
  runtime.register(tool('retry_safe', true))
  return runtime
}

const runCode = (runtime: ToolRuntime, callId: string, code = 'return 1'): Promise<ToolExecutionResult> =>
  runtime.execute({ callId, name: 'run_code', arguments: { code, description: 'composition test' }, signal: new AbortController().signal })

/** The program's value of a successful run. */
function valueOf(result: ToolExecutionResult): unknown {
  expect(result.isError, result.isError ? result.error.message : '').toBe(false)
  return (result as { value: { result?: unknown } }).value.result
}

describe('durable runs (a runtime with a store)', () => {
  it("records a parked run's later sub-call as started, then done with its value, around the body", async () => {
    const store = recordingStore()
    const effects: string[] = []
    const codeRuntime = scriptedRuntime(async (request) => {
      request.durable?.onPark?.(PARKED)
      return { value: await callTool(request, 'effect', { tag: 'a' }), logs: [] }
    })
    const runtime = runtimeWith({ codeRuntime, store }, effects)
    expect(valueOf(await runCode(runtime, 'run-rec'))).toBe('effect did a')
    expect(effects).toEqual(['effect:a'])
    // Each record names the call it is (tool, arguments' hash) and the run's secret from its parked record.
    const { secret } = (JSON.parse(store.puts.find((p) => p.startsWith('runs/run-rec '))!.slice('runs/run-rec '.length)) as { park: { secret: string } }).park
    const args = await argumentsHash({ tag: 'a' })
    expect(store.puts.filter((p) => p.startsWith('calls/'))).toEqual([
      `calls/run-rec/1 ${JSON.stringify({ state: 'started', name: 'effect', args, run: secret })}`,
      `calls/run-rec/1 ${JSON.stringify({ state: 'done', name: 'effect', args, run: secret, value: 'effect did a' })}`,
    ])
  })

  it('a sub-call recorded done answers from its record; one recorded started fails as INTERRUPTED unless its tool is idempotent', async () => {
    const store = recordingStore()
    // What an earlier process of this run left, bound to the run's secret (read from its parked record).
    const leave = async () => {
      await until(async () => (await store.get('runs/run-old')) !== undefined, "run-old's parked record", 20_000, 1)
      const { secret: run } = (JSON.parse((await store.get('runs/run-old'))!.value) as { park: { secret: string } }).park
      const record = async (state: string, name: string, tag: string, value?: string) =>
        JSON.stringify({ state, name, args: await argumentsHash({ tag }), run, ...(value === undefined ? {} : { value }) })
      await store.put('calls/run-old/1', await record('done', 'effect', 'a', 'recorded a'))
      await store.put('calls/run-old/2', await record('started', 'effect', 'b'))
      await store.put('calls/run-old/3', await record('started', 'retry_safe', 'c'))
    }
    const effects: string[] = []
    const codeRuntime = scriptedRuntime(async (request) => {
      request.durable?.onPark?.(PARKED)
      await leave()
      const out = [await callTool(request, 'effect', { tag: 'a' }), await callTool(request, 'effect', { tag: 'b' }), await callTool(request, 'retry_safe', { tag: 'c' })]
      return { value: out, logs: [] }
    })
    const runtime = runtimeWith({ codeRuntime, store }, effects)
    const out = valueOf(await runCode(runtime, 'run-old')) as string[]
    expect(out[0]).toBe('recorded a')
    expect(out[1]).toContain('effect was running when its process stopped; it may or may not have taken effect, and it is not run again (its tool is not idempotent)')
    expect(out[2]).toBe('retry_safe did c')
    expect(effects).toEqual(['retry_safe:c'])
  })

  it("resumeRuns() starts a stored run of a dead process through run_code, under the run's agent, from its state", async () => {
    const store = recordingStore()
    const record = { version: 1, callId: 'run-parked', agent: 'a1', park: { code: 'return 2', description: 'parked', state: PARKED, numbering: { submitted: 0, calls: [] } }, owner: 'gone-process', claimedAt: 1 }
    await store.put('runs/run-parked', JSON.stringify(record))
    const codeRuntime = scriptedRuntime(async (request) => ({ value: await callTool(request, 'own', {}), logs: [] }))
    const runtime = runtimeWith({ codeRuntime, store })
    runtime.agent('a1').register(
      defineTool({ name: 'own', description: 'a1 only (test)', parameters: {}, output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] }, execute: () => 'a1 own' }),
    )
    const resumed = await runtime.resumeRuns({ staleMs: 1 })
    expect(resumed.map((r) => [r.callId, r.agent])).toEqual([['run-parked', 'a1']])
    expect(valueOf((await resumed[0]!.result) as ToolExecutionResult)).toBe('a1 own')
    expect(codeRuntime.requests.map((r) => [r.program, r.durable?.resume])).toEqual([['return 2', PARKED]])
  })

  it('without a store resumeRuns() finds nothing, and a run gets no durable part', async () => {
    const codeRuntime = scriptedRuntime(async () => ({ value: 1, logs: [] }))
    const runtime = runtimeWith({ codeRuntime })
    expect(await runtime.resumeRuns()).toEqual([])
    valueOf(await runCode(runtime, 'run-plain'))
    expect(codeRuntime.requests[0]!.durable).toBeUndefined()
  })
})

/** An engine that answers one allowlisted diagnostic (an unknown name at offset 0) for every program, and counts its checks. */
function flaggingEngine(): PreflightEngine & { readonly requests: PreflightEngineRequest[] } {
  const requests: PreflightEngineRequest[] = []
  return {
    where: 'inline',
    requests,
    analyze: async (request) => {
      requests.push(request)
      return { plan: { calls: [], dynamic: false }, spans: [], diagnostics: [{ code: 2304, start: 0, message: "Cannot find name 'oops'." }], notes: [] }
    },
    dispose: async () => {},
  }
}

const failingRun: Script = async () => ({ logs: [], error: { kind: 'exception', message: 'ReferenceError: oops is not defined' } })

describe('preflight as the runtime wires it', () => {
  it("'block' asks the configured engine and refuses the program; nothing runs", async () => {
    const engine = flaggingEngine()
    const codeRuntime = scriptedRuntime(async () => ({ value: 1, logs: [] }))
    const runtime = runtimeWith({ codeRuntime, preflight: 'block', preflightEngine: engine })
    const result = await runCode(runtime, 'pf-block', 'oops()')
    expect(result.isError && result.error.info?.code).toBe('PREFLIGHT_FAILED')
    expect(result.isError && result.error.message).toContain("line 1, column 1: TS2304 Cannot find name 'oops'.")
    expect(engine.requests.map((r) => r.program)).toEqual(['oops()'])
    expect(codeRuntime.requests).toEqual([])
  })

  it("an agent's own preflight mode wins over the runtime's; an agent without one has the runtime's", async () => {
    const engine = flaggingEngine()
    const codeRuntime = scriptedRuntime(async () => ({ value: 'ran', logs: [] }))
    const runtime = runtimeWith({ codeRuntime, preflight: 'block', preflightEngine: engine })
    runtime.agent('lenient').preflightMode('off')
    runtime.agent('plain')
    const run = (agent: string) => runtime.execute({ callId: `pf-${agent}`, name: 'run_code', agent, arguments: { code: 'oops()', description: 'd' }, signal: new AbortController().signal })
    expect(valueOf(await run('lenient'))).toBe('ran')
    const plain = await run('plain')
    expect(plain.isError && plain.error.info?.code).toBe('PREFLIGHT_FAILED')
  })

  it("'warn' with an integrator's engine adds its findings to a failed run's error", async () => {
    const engine = flaggingEngine()
    const runtime = runtimeWith({ codeRuntime: scriptedRuntime(failingRun), preflight: 'warn', preflightEngine: engine })
    const result = await runCode(runtime, 'pf-warn', 'oops()')
    expect(result.isError && result.error.message).toContain('Preflight (type-check against the tools SDK, before the run) found 1 problem')
    expect(engine.requests).toHaveLength(1)
  })

  it("'warn' without an engine checks nothing: a failed run's error is the run's own, even for a program the plan reader refuses", async () => {
    const runtime = runtimeWith({ codeRuntime: scriptedRuntime(failingRun), preflight: 'warn' })
    // The default engine does refuse it (so a 'warn' that checked would say so).
    expect((await runtime.preflight({ code: 'return (' })).diagnostics.map((d) => [d.code, d.severity])).toEqual([['SYNTAX', 'error']])
    const result = await runCode(runtime, 'pf-warn-default', 'return (')
    expect(result.isError && result.error.message).toContain('ReferenceError: oops is not defined')
    expect(result.isError && result.error.message).not.toContain('Preflight')
  })

  it("runtime.preflight() checks with the configured engine against the agent's layer", async () => {
    const engine = flaggingEngine()
    const runtime = runtimeWith({ codeRuntime: scriptedRuntime(failingRun), preflightEngine: engine })
    const report = await runtime.preflight({ code: 'oops()' })
    expect(report.diagnostics.map((d) => [d.code, d.severity])).toEqual([['TS2304', 'error']])
    expect(engine.requests[0]!.declarations).toContain('effect')
  })
})

describe("the runtime's own members", () => {
  it("view(scope) is the scope's public view: what it sees, may call natively and from code", () => {
    const runtime = runtimeWith({ mode: 'both', codeRuntime: scriptedRuntime(async () => ({ logs: [] })) })
    runtime.agent('a1').register(
      defineTool({ name: 'own', description: 'a1 only (test)', parameters: {}, output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] }, execute: () => 'a1 own' }),
    )
    const global = runtime.view()
    expect([global.mode, global.presentsRunCode, global.tools.map((t) => t.name), global.code.map((t) => t.name)]).toEqual(['both', true, ['effect', 'retry_safe'], ['effect', 'retry_safe']])
    expect(runtime.view('a1').tools.map((t) => t.name)).toEqual(['effect', 'retry_safe', 'own'])
    expect(runtime.view('a1').canCall('own', 'code')).toBe(true)
  })
})
