/**
 * Exactly once across a "process" that dies, in process (issue 38 item 4): two tool runtimes
 * over one store, a scripted code runtime that parks and then waits; the first runtime is
 * dropped (disposed with its run unsettled), the second resumes the run from the store. What
 * is asserted is what ran how many times and what the store keeps.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { CodeRunRequest, CodeRunResult, CodeRuntime, ParkedRunState } from '../../../src/code-runtime/contract.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import type { ToolRuntime } from '../../../src/runtime-types.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { cueStore } from '../../support/cue-store.js'
import { until } from '../../support/poll.js'

const PARKED = Object.freeze({
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

/** Calls `tools[name](args)` as a program would; a failure comes back as `failed: <code>`. */
async function callTool(request: CodeRunRequest, name: string, args: unknown): Promise<unknown> {
  const tools = request.bindings.find((b) => b.global === 'tools')!
  try {
    return await tools.functions[name]!(args, { signal: new AbortController().signal })
  } catch (error) {
    return `failed: ${(error as { code?: string }).code ?? (error as Error).message}`
  }
}

/** Waits until the run is aborted (its runtime disposed), then ends as an aborted run does. */
function hang(request: CodeRunRequest): Promise<CodeRunResult> {
  return new Promise((resolve) => {
    const end = () => resolve({ error: { kind: 'abort', message: 'aborted' }, logs: [] } as unknown as CodeRunResult)
    if (request.signal?.aborted) end()
    request.signal?.addEventListener('abort', end, { once: true })
  })
}

/**
 * The program: `effect a`, park, `effect b`, then (first time) hang until the process dies, or
 * (resumed) `effect b` again as its replay does, then `effect c`, and return.
 */
function program(): CodeRuntime & { readonly requests: CodeRunRequest[] } {
  const requests: CodeRunRequest[] = []
  return {
    language: 'typescript',
    isolation: 'in-process-test',
    capabilities: { streamsLogs: false, memoryLimit: false, capturesStdio: false },
    requests,
    async run(request) {
      requests.push(request)
      if (request.durable?.resume === undefined) {
        await callTool(request, 'effect', { tag: 'a' })
        request.durable?.onPark?.(PARKED)
        await callTool(request, 'effect', { tag: 'b' })
        return hang(request)
      }
      const b = await callTool(request, 'effect', { tag: 'b' })
      const c = await callTool(request, 'effect', { tag: 'c' })
      return { value: [b, c], logs: [] }
    },
    dispose: async () => {},
  }
}

const runtimes: ToolRuntime[] = []
afterEach(async () => {
  for (const runtime of runtimes.splice(0)) await runtime.dispose()
})

function processOn(store: DurableStore, effects: string[], codeRuntime = program()): ToolRuntime {
  const runtime = createToolRuntime({ mode: 'code', codeRuntime, store, runs: { resumeEveryMs: 0 } })
  runtimes.push(runtime)
  runtime.register(
    defineTool({
      name: 'effect',
      description: 'an effect (test)',
      parameters: { tag: { type: 'string' } },
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: (args) => (effects.push(String(args.tag)), `did ${args.tag}`),
    }),
  )
  return runtime
}

const runCode = (runtime: ToolRuntime, callId: string) =>
  runtime.execute({ callId, name: 'run_code', arguments: { code: 'program', description: 'pinned' }, signal: new AbortController().signal })

async function keys(store: DurableStore, prefix: string): Promise<string[]> {
  return (await store.list(prefix, { limit: 1000 })).entries.map((e) => e.key)
}

describe('a run whose process dies after it parked', () => {
  it('is resumed by the next process on the store: each effect once, the replayed call answered from its record, nothing left', async () => {
    const cues = cueStore()
    const effects: string[] = []
    const first = processOn(cues.store, effects)
    const running = runCode(first, 'run-1')
    await until(async () => (await cues.base.get('calls/run-1/2'))?.value.includes('"done"'), 'the second call recorded done')
    expect(effects).toEqual(['a', 'b'])
    expect(await keys(cues.base, 'runs/')).toEqual(['runs/run-1'])
    // The process dies: its runtime is dropped with the run unsettled (it stays parked for the next one).
    await first.dispose()
    await running
    expect(await keys(cues.base, 'runs/')).toEqual(['runs/run-1'])
    const second = processOn(cues.store, effects)
    const resumed = await second.resumeRuns({ staleMs: 0 })
    expect(resumed.map((r) => r.callId)).toEqual(['run-1'])
    const result = (await resumed[0]!.result) as { isError: boolean; value?: { result?: unknown } }
    expect(result.isError).toBe(false)
    expect(result.value?.result).toEqual(['did b', 'did c'])
    expect(effects).toEqual(['a', 'b', 'c'])
    // Ended there: its record and its calls' are gone.
    expect(await keys(cues.base, 'runs/')).toEqual([])
    expect(await keys(cues.base, 'calls/')).toEqual([])
    // A third process finds nothing to resume.
    expect(await processOn(cues.store, effects).resumeRuns({ staleMs: 0 })).toEqual([])
  })

  it('two processes sweeping the store at once: the run is resumed by exactly one, its effects made once', async () => {
    const cues = cueStore()
    const effects: string[] = []
    const first = processOn(cues.store, effects)
    const running = runCode(first, 'run-2')
    await until(async () => (await cues.base.get('calls/run-2/2'))?.value.includes('"done"'), 'the second call recorded done')
    await first.dispose()
    await running
    const b = processOn(cues.store, effects)
    const c = processOn(cues.store, effects)
    const [onB, onC] = await Promise.all([b.resumeRuns({ staleMs: 0 }), c.resumeRuns({ staleMs: 0 })])
    const all = [...onB, ...onC]
    expect(all.map((r) => r.callId)).toEqual(['run-2'])
    await all[0]!.result
    expect(effects).toEqual(['a', 'b', 'c'])
  })

  it('a process that is alive keeps its parked run: a sweep with a longer staleMs leaves it', async () => {
    const cues = cueStore()
    const effects: string[] = []
    const first = processOn(cues.store, effects)
    void runCode(first, 'run-3')
    await until(async () => (await cues.base.get('calls/run-3/2'))?.value.includes('"done"'), 'the second call recorded done')
    const other = processOn(cues.store, effects)
    expect(await other.resumeRuns({ staleMs: 60_000 })).toEqual([])
    expect(effects).toEqual(['a', 'b'])
    expect(((await cues.base.get('runs/run-3'))!.value as string).includes(`"owner":"`)).toBe(true)
  })
})
