/**
 * What a program's span says besides its sub-calls: preflight as a child span, a plan
 * approval as a requested/decided pair of events on the run's span, and (without a
 * store) parking and resuming as events on it.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeEach, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ToolRuntime, ToolRuntimeOptions } from '../../../src/runtime-types.js'
import type { ApprovalHandler } from '../../../src/types.js'
import { until } from '../../support/poll.js'

const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))
const quickjs = createQuickJsRuntime({ computeMs: 20_000, maxWallMs: 60_000, wasmModule })
const exporter = new InMemorySpanExporter()
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
const tracer = provider.getTracer('toolyard-test')
const disposers: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const dispose of disposers) await dispose()
  await quickjs.dispose()
  await provider.shutdown()
})
beforeEach(() => exporter.reset())

function setup(options: Partial<ToolRuntimeOptions>): ToolRuntime {
  const runtime = createToolRuntime({ mode: 'code', codeRuntime: quickjs, telemetry: { tracer }, ...options })
  disposers.push(() => runtime.dispose())
  runtime.register(defineTool({
    name: 'write', description: 'Writes (asks first).', parameters: { path: { type: 'string', required: true } },
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    execute: (args) => `wrote ${args.path}`,
  }))
  runtime.on('tools/pre-execute', (d, exec) => (exec.name === 'write' ? { kind: 'ask', reason: 'writes a file' } : d))
  return runtime
}
const run = (runtime: ToolRuntime, code: string) =>
  runtime.execute({ callId: 'p', name: 'run_code', arguments: { code, description: 'd' }, signal: AbortSignal.timeout(30_000) })
const runSpan = (): ReadableSpan => exporter.getFinishedSpans().find((s) => s.name === 'execute_tool run_code')!
const plans = (answer: boolean): ApprovalHandler => Object.assign(async () => answer, { acceptsPlans: true })

it('preflight is a child span of run_code with its diagnostics count and plan size', async () => {
  const runtime = setup({ preflight: 'block', approval: async () => true })
  expect((await run(runtime, 'await tools.write({ path: "a" })\nreturn await tools.write({ path: "b" })')).isError).toBe(false)
  const check = exporter.getFinishedSpans().find((s) => s.name === 'toolyard.preflight')!
  expect(check.parentSpanContext?.spanId).toBe(runSpan().spanContext().spanId)
  expect(check.attributes).toMatchObject({ 'toolyard.preflight.mode': 'block', 'toolyard.preflight.plan_calls': 2, 'toolyard.preflight.plan_dynamic': false })
  expect(typeof check.attributes['toolyard.preflight.diagnostics']).toBe('number')
})

it('no preflight span when preflight is off', async () => {
  await run(setup({ approval: async () => true }), 'return 1')
  expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['execute_tool run_code'])
})

it.each([
  [true, 'allow', false],
  [false, 'deny', true],
])('a plan approval (%s) is a requested/decided pair on the run span, kind plan', async (answer, decision, failed) => {
  const runtime = setup({ approval: plans(answer) })
  expect((await run(runtime, 'return await tools.write({ path: "a" })')).isError).toBe(failed)
  const events = runSpan().events
  expect(events.map((e) => e.name)).toEqual(['toolyard.approval.requested', 'toolyard.approval.decided'])
  expect(events[0]!.attributes).toMatchObject({ 'toolyard.approval.kind': 'plan' })
  expect(events[1]!.attributes).toMatchObject({ 'toolyard.approval.kind': 'plan', 'toolyard.approval.decision': decision })
  // An allowed plan pre-approves the call: nobody is asked again, so the call span has no approval events.
  if (!failed) expect(exporter.getFinishedSpans().find((s) => s.name === 'execute_tool write')!.events).toEqual([])
})

it('without a store, a run that parks while it waits reports parked then resumed on its span', async () => {
  const sandbox = createSandboxRuntime({ memoryMb: 32, prespawn: 0, parkAfterMs: 20 })
  disposers.push(() => sandbox.dispose())
  let allow!: (answer: boolean) => void
  const asked = new Promise<void>((resolve) => {
    const runtime = setup({ codeRuntime: sandbox, approval: () => new Promise<boolean>((r) => ((allow = r), resolve())) })
    void (async () => {
      const result = await run(runtime, 'return await tools.write({ path: "a" })')
      expect(result.isError).toBe(false)
    })()
    disposers.push(async () => undefined)
  })
  await asked
  // The decision comes only once the run has parked.
  await until(() => sandbox.load().parked > 0, 'the run to park', 20_000, 10)
  expect(sandbox.load().parked).toBe(1)
  allow(true)
  await until(() => runSpanOrUndefined() !== undefined, 'the run span', 20_000, 10)
  const events = runSpan().events.map((e) => e.name)
  expect(events).toEqual(['toolyard.run.parked', 'toolyard.run.resumed'])
  const resumed = runSpan().events[1]!.attributes!
  expect(resumed['toolyard.run.resumed_from']).toBe('memory')
  expect(typeof runSpan().attributes['toolyard.run.compute_ms']).toBe('number')
})
const runSpanOrUndefined = () => exporter.getFinishedSpans().find((s) => s.name === 'execute_tool run_code')
