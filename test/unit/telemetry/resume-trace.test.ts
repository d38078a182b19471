/**
 * A durable run resumed by a second runtime over the same file store continues its
 * trace: the parked record keeps the run span's context, and the resumed run's span is
 * its child (same trace id). Parking and resuming are events on the run's span.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { afterAll, expect, it } from 'vitest'
import { createFileStore, createSandboxRuntime } from '../../../platforms/node/index.js'
import { readStoredRun } from '../../../src/durable/runs.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { createToolRuntime } from '../../../src/registry/runtime.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ApprovalHandler, ToolExecutionResult } from '../../../src/types.js'
import { until } from '../../support/poll.js'

const dir = mkdtempSync(join(tmpdir(), 'toolyard-otel-resume-'))
const disposers: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const dispose of disposers) await dispose()
  rmSync(dir, { recursive: true, force: true })
})

/** One "process": its own sandbox, runtime and tracer provider over the shared store. */
function processOn(store: DurableStore, approve: ApprovalHandler) {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const codeRuntime = createSandboxRuntime({ memoryMb: 32, prespawn: 0, parkAfterMs: 30 })
  const runtime = createToolRuntime({ mode: 'code', codeRuntime, store, approval: approve, telemetry: { tracer: provider.getTracer('toolyard') } })
  disposers.push(() => runtime.dispose(), () => codeRuntime.dispose(), () => provider.shutdown())
  runtime.register(defineTool({
    name: 'pay', description: 'Pays.', parameters: { cents: { type: 'number', required: true } },
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    execute: async (args) => `paid ${args.cents}`,
  }))
  runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
  return { runtime, exporter }
}

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'

it('a run resumed by another runtime on the store is in the same trace, its span the child of the parked run span', async () => {
  const store = createFileStore(dir)
  const a = processOn(store, () => new Promise<boolean>(() => {}))
  const first = a.runtime.execute({
    callId: 'run-trace', name: 'run_code', arguments: { code: 'return await tools.pay({ cents: 500 })', description: 'pay' },
    signal: new AbortController().signal, trace: { traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01`, tracestate: 'vendor=abc' },
  })
  let stored: Awaited<ReturnType<typeof readStoredRun>>
  await until(async () => {
    const entry = await store.get('runs/run-trace')
    stored = entry === undefined ? undefined : await readStoredRun(entry.value)
    return stored?.park?.trace !== undefined
  })
  // The first process goes away with the run parked (its record stays for the next one).
  await a.runtime.dispose()
  expect(((await first) as ToolExecutionResult).isError).toBe(true)
  const parkedRun = a.exporter.getFinishedSpans().find((s) => s.name === 'execute_tool run_code')!
  expect(parkedRun.spanContext().traceId).toBe(TRACE_ID)
  expect(stored!.park!.trace).toEqual({ traceparent: `00-${TRACE_ID}-${parkedRun.spanContext().spanId}-01`, tracestate: 'vendor=abc' })
  const parked = parkedRun.events.find((e) => e.name === 'toolyard.run.parked')!
  expect(parked.attributes).toMatchObject({ 'toolyard.run.waiting_calls': 1 })

  const b = processOn(store, async () => true)
  const [resumed] = await b.runtime.resumeRuns({ staleMs: 0 })
  const result = (await resumed!.result) as ToolExecutionResult
  expect(result.isError).toBe(false)
  const spans = b.exporter.getFinishedSpans()
  const run = spans.find((s) => s.name === 'execute_tool run_code')!
  for (const span of spans) expect(span.spanContext().traceId).toBe(TRACE_ID)
  expect(run.parentSpanContext?.spanId).toBe(parkedRun.spanContext().spanId)
  expect(run.spanContext().traceState?.get('vendor')).toBe('abc')
  expect(run.events.find((e) => e.name === 'toolyard.run.resumed')!.attributes).toEqual({ 'toolyard.run.resumed_from': 'store', 'toolyard.run.waiting_calls': 1 })
  const pay = spans.find((s) => s.name === 'execute_tool pay')!
  expect(pay.parentSpanContext?.spanId).toBe(run.spanContext().spanId)
  expect(pay.events.map((e) => e.name)).toEqual(['toolyard.approval.requested', 'toolyard.approval.decided'])
  expect(await store.get('runs/run-trace')).toBeUndefined()
})

it('a stored context that is not a W3C one is dropped when the record is read (the resumed run starts its own trace)', async () => {
  const park = { code: 'return 1', description: 'd', numbering: { submitted: 0, calls: [] } }
  const state = { version: 1, vm: { journal: { inputs: [], reads: [], ops: '', calls: [] }, clockMs: 0, timers: [] }, logs: [], logBytes: 0, logTruncated: false, busyMs: 0, wallMs: 0, lastCallId: 0, calls: [] }
  const read = async (trace: unknown) => (await readStoredRun(JSON.stringify({ version: 1, callId: 'r', park: { ...park, state, trace } })))?.park
  expect(await read({ traceparent: 5 })).toBeDefined()
  expect((await read({ traceparent: 5 }))!.trace).toBeUndefined()
  expect((await read({ traceparent: 'x', tracestate: 'k=v'.repeat(200) }))!.trace).toBeUndefined()
  expect((await read({ traceparent: 'x', tracestate: 'k=v' }))!.trace).toEqual({ traceparent: 'x', tracestate: 'k=v' })
  expect((await read('00-abc'))!.trace).toBeUndefined()
})
