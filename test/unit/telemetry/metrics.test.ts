/**
 * OpenTelemetry metrics through the API's meter, read back from the SDK: the tool call
 * duration by tool and error type, runs by outcome, approvals by decision and their wait.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { MeterProvider, MetricReader, type DataPoint, type Histogram } from '@opentelemetry/sdk-metrics'
import { afterAll, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { until } from '../../support/poll.js'

class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))
const codeRuntime = createQuickJsRuntime({ computeMs: 20_000, maxWallMs: 60_000, wasmModule })
afterAll(() => codeRuntime.dispose())

it('records gen_ai.execute_tool.duration by tool and error.type, runs by outcome, approvals by decision', async () => {
  const reader = new TestReader()
  const provider = new MeterProvider({ readers: [reader] })
  const runtime = createToolRuntime({ mode: 'both', codeRuntime, telemetry: { meter: provider.getMeter('toolyard') }, approval: async (request) => request.execution.arguments !== null && (request.execution.arguments as { ok?: boolean }).ok === true })
  runtime.register(defineTool({
    name: 'act', description: 'Acts.', parameters: { ok: { type: 'boolean', required: true } },
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    execute: () => 'done',
  }))
  runtime.on('tools/pre-execute', (d, exec) => (exec.name === 'act' ? { kind: 'ask' } : d))
  const signal = AbortSignal.timeout(30_000)
  await runtime.execute({ callId: 'a', name: 'act', arguments: { ok: true }, signal })
  await runtime.execute({ callId: 'b', name: 'act', arguments: { ok: false }, signal })
  await runtime.execute({ callId: 'p', name: 'run_code', arguments: { description: 'd', code: 'return 1' }, signal })
  const { resourceMetrics } = await reader.collect()
  const metrics = new Map(resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).map((m) => [m.descriptor.name, m]))
  const duration = metrics.get('gen_ai.execute_tool.duration')!
  expect(duration.descriptor.unit).toBe('s')
  const points = duration.dataPoints as DataPoint<Histogram>[]
  const count = (attrs: Record<string, unknown>) => points.filter((p) => Object.entries(attrs).every(([k, v]) => p.attributes[k] === v)).reduce((n, p) => n + p.value.count, 0)
  expect(count({ 'gen_ai.tool.name': 'act', 'error.type': undefined })).toBe(1)
  expect(count({ 'gen_ai.tool.name': 'act', 'error.type': 'DENIED_BY_APPROVAL' })).toBe(1)
  const runs = metrics.get('toolyard.code.runs')!.dataPoints as DataPoint<number>[]
  expect(runs.map((p) => [p.attributes['toolyard.run.outcome'], p.value])).toEqual([['ok', 1]])
  const decisions = metrics.get('toolyard.approval.decisions')!.dataPoints as DataPoint<number>[]
  const byDecision = Object.fromEntries(decisions.map((p) => [`${String(p.attributes['gen_ai.tool.name'])}:${String(p.attributes['toolyard.approval.decision'])}`, p.value]))
  expect(byDecision).toEqual({ 'act:allow': 1, 'act:deny': 1 })
  expect(metrics.get('toolyard.approval.wait')!.descriptor.unit).toBe('s')
  await runtime.dispose()
  await provider.shutdown()
})

it('the admission gauges (running, queued, parked) read the code runtime; they stop with the runtime', async () => {
  const reader = new TestReader()
  const provider = new MeterProvider({ readers: [reader] })
  const sandbox = createSandboxRuntime({ memoryMb: 32, prespawn: 0, parkAfterMs: 20, maxConcurrentRuns: 1 })
  let allow!: (answer: boolean) => void
  const asked = new Promise<void>((resolve) => (allow = () => resolve()))
  let decide!: (answer: boolean) => void
  // The SDK's meter, watched: which gauge callbacks are registered.
  const meter = provider.getMeter('toolyard')
  let callbacks = 0
  const watched = Object.assign(Object.create(meter) as typeof meter, {
    createObservableGauge: (...args: Parameters<typeof meter.createObservableGauge>) => {
      const gauge = meter.createObservableGauge(...args)
      return Object.assign(Object.create(gauge) as typeof gauge, {
        addCallback: (cb: Parameters<typeof gauge.addCallback>[0]) => (callbacks++, gauge.addCallback(cb)),
        removeCallback: (cb: Parameters<typeof gauge.addCallback>[0]) => (callbacks--, gauge.removeCallback(cb)),
      })
    },
  })
  const runtime = createToolRuntime({ mode: 'code', codeRuntime: sandbox, telemetry: { meter: watched }, approval: () => new Promise<boolean>((r) => ((decide = r), allow(true))) })
  runtime.register(defineTool({
    name: 'act', description: 'Acts.', parameters: {},
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    execute: () => 'done',
  }))
  runtime.on('tools/pre-execute', (d, exec) => (exec.name === 'act' ? { kind: 'ask' } : d))
  const gauges = async () => {
    const { resourceMetrics } = await reader.collect()
    const metrics = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics)
    return Object.fromEntries(['running', 'queued', 'parked'].map((f) => [f, (metrics.find((m) => m.descriptor.name === `toolyard.code.${f}`)?.dataPoints[0]?.value as number | undefined)]))
  }
  expect(await gauges()).toEqual({ running: 0, queued: 0, parked: 0 })
  const run = runtime.execute({ callId: 'g', name: 'run_code', arguments: { code: 'return await tools.act({})', description: 'd' }, signal: AbortSignal.timeout(30_000) })
  await asked
  // Parked, and its slot given back (the runtime counts both a moment apart): the gauges report the runtime's figures.
  await until(() => sandbox.load().parked > 0 && sandbox.load().running === 0, 'the run parked and its slot given back', 20_000, 10)
  expect(await gauges()).toEqual({ running: 0, queued: 0, parked: 1 })
  decide(true)
  expect((await run).isError).toBe(false)
  // The slot goes back once the thread has reset (just after the result): the gauge follows the runtime's own figure.
  await until(() => sandbox.load().running === 0, 'the slot given back', 20_000, 10)
  expect(await gauges()).toEqual({ running: 0, queued: 0, parked: 0 })
  expect(callbacks).toBe(3)
  await runtime.dispose()
  expect(callbacks).toBe(0)
  await sandbox.dispose()
  await provider.shutdown()
})
