/**
 * Pipeline overhead and concurrency figures (issue 3).
 *
 * 1. Median cost of `execute()` for a no-op tool with one listener on every hook
 *    (pre-execute, guard, execute wrapper, post-execute, result), against a bare
 *    validate → call → validate baseline doing the same schema work by hand. Both are
 *    measured interleaved in one run (batches of sequential calls, process CPU time per
 *    call, median over batches); the ratio is the figure (target ≤ 4×).
 * 2. 10,000 concurrent `execute()` calls all in flight at once (every body parked on one
 *    barrier): wall time and heap (process.memoryUsage, sampled at the barrier = peak).
 * 3. OpenTelemetry (issue 32), interleaved the same way: the same runtime without
 *    `telemetry` (today's figure), with the API's tracer and no provider registered (the
 *    no-op tracer), and with an SDK provider (a simple processor into an in-memory
 *    exporter): the difference is the cost per span.
 *
 * Run: `npx tsx bench/pipeline.bench.ts` (add `node --expose-gc --import tsx` for steadier heap figures).
 */
import { trace } from '@opentelemetry/api'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { snapshotLosslessJson } from '../src/json/lossless.js'
import { createToolRuntime } from '../src/registry/index.js'
import { compileJsonSchema } from '../src/schema/json-schema.js'
import { defineTool } from '../src/schema/define-tool.js'
import type { ToolRunContext } from '../src/types.js'

const BATCH = 500
const ROUNDS = 101

const noop = defineTool({
  name: 'noop',
  description: 'does nothing',
  parameters: { path: { type: 'string', required: true }, limit: { type: 'integer' } },
  output: { schema: { type: 'string' }, render: (_args, value) => [{ type: 'text', text: value }] },
  execute: (args) => args.path,
})

/** The bench's runtime: the no-op tool, one listener on every hook. */
function hooked(options: Parameters<typeof createToolRuntime>[0] = {}) {
  const rt = createToolRuntime(options)
  rt.register(noop)
  rt.on('tools/pre-execute', (decision) => decision)
  rt.guard(() => undefined)
  rt.on('tools/execute', (_execution, next) => next())
  rt.on('tools/post-execute', (decision) => decision)
  rt.on('tools/result', () => {})
  return rt
}
const runtime = hooked()

const definition = runtime.get('noop')!
const outputValidator = compileJsonSchema(definition.output.schema)
const signal = new AbortController().signal
const args = { path: '/tmp/file.txt', limit: 10 }
const context = { signal, deferContext: () => {} } as unknown as ToolRunContext

/** The baseline: what a caller doing it by hand would do for one call. */
async function bare(): Promise<unknown> {
  const snapshot = snapshotLosslessJson(args)
  const typed = definition.validateArgs!(snapshot)
  const value = await definition.execute(typed, context)
  const out = snapshotLosslessJson(value)
  if (outputValidator.validate(out).length > 0) throw new Error('invalid')
  return definition.output.render(typed, out)
}

let n = 0
async function piped(): Promise<unknown> {
  const result = await runtime.execute({ callId: `b${n++}`, name: 'noop', arguments: args, signal })
  if (result.isError) throw new Error(result.error.message)
  return result
}

/**
 * µs of process CPU time per call over one batch. CPU time, not wall time: on a shared
 * machine a batch that gets descheduled would otherwise measure the other processes'
 * time slices, and a longer batch is descheduled more often than a shorter one, which
 * skews the ratio. (Includes GC and helper threads, charged to whichever side caused them.)
 */
async function batch(fn: () => Promise<unknown>): Promise<number> {
  const start = process.cpuUsage()
  for (let i = 0; i < BATCH; i++) await fn()
  const used = process.cpuUsage(start)
  return (used.user + used.system) / BATCH
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

async function overhead(): Promise<void> {
  for (let i = 0; i < 20; i++) {
    await batch(bare)
    await batch(piped)
  }
  const bareTimes: number[] = []
  const pipedTimes: number[] = []
  for (let r = 0; r < ROUNDS; r++) {
    bareTimes.push(await batch(bare))
    pipedTimes.push(await batch(piped))
  }
  const b = median(bareTimes)
  const p = median(pipedTimes)
  console.log('execute() overhead — no-op tool, one listener on every hook')
  console.log(`  baseline validate→call→validate  median ${b.toFixed(2)} µs CPU/call`)
  console.log(`  runtime.execute()                median ${p.toFixed(2)} µs CPU/call`)
  console.log(`  ratio                            ${(p / b).toFixed(2)}× (target ≤ 4×)`)
}

async function concurrent(count: number): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc
  const rt = createToolRuntime()
  let started = 0
  let release!: () => void
  const barrier = new Promise<void>((resolve) => (release = resolve))
  let allStarted!: () => void
  const everyoneIn = new Promise<void>((resolve) => (allStarted = resolve))
  rt.register(
    defineTool({
      name: 'parked',
      description: 'waits on a barrier',
      parameters: { i: { type: 'integer', required: true } },
      output: { schema: { type: 'integer' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
      execute: async (a) => {
        if (++started === count) allStarted()
        await barrier
        return a.i
      },
    }),
  )
  rt.on('tools/pre-execute', (d) => d)
  rt.on('tools/execute', (_e, next) => next())
  rt.on('tools/post-execute', (d) => d)
  rt.on('tools/result', () => {})
  gc?.()
  const before = process.memoryUsage().heapUsed
  const start = performance.now()
  const cpuStart = process.cpuUsage()
  const pending: Promise<unknown>[] = []
  for (let i = 0; i < count; i++) pending.push(rt.execute({ callId: `c${i}`, name: 'parked', arguments: { i }, signal }))
  await everyoneIn
  const atPeak = process.memoryUsage().heapUsed
  const inFlightMs = performance.now() - start
  release()
  const results = await Promise.all(pending)
  const totalMs = performance.now() - start
  const cpu = process.cpuUsage(cpuStart)
  const cpuMs = (cpu.user + cpu.system) / 1000
  const failures = results.filter((r) => (r as { isError: boolean }).isError).length
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1)
  console.log(`${count.toLocaleString('en-US')} concurrent execute() calls (hooks on every phase)`)
  console.log(`  all bodies in flight after ${inFlightMs.toFixed(0)} ms; all settled after ${totalMs.toFixed(0)} ms wall, ${cpuMs.toFixed(0)} ms CPU (${failures} failures)`)
  console.log(`  heap before ${mb(before)} MB, at peak (all in flight) ${mb(atPeak)} MB → +${mb(atPeak - before)} MB (~${((atPeak - before) / count / 1024).toFixed(2)} KiB/call)${gc ? '' : ' [no --expose-gc: figures include garbage]'}`)
}

/** Series 3: no telemetry, the API's no-op tracer, an SDK provider (in-memory exporter). */
async function telemetryOverhead(): Promise<void> {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const series = [
    { label: 'no telemetry option (today)     ', rt: runtime, times: [] as number[] },
    { label: 'API tracer, no provider (no-op) ', rt: hooked({ telemetry: { tracer: trace.getTracer('toolyard') } }), times: [] as number[] },
    { label: 'SDK provider, in-memory exporter', rt: hooked({ telemetry: { tracer: provider.getTracer('toolyard') } }), times: [] as number[] },
  ]
  const call = (rt: typeof runtime) => async () => {
    const result = await rt.execute({ callId: `t${n++}`, name: 'noop', arguments: args, signal })
    if (result.isError) throw new Error(result.error.message)
  }
  for (let i = 0; i < 10; i++) for (const s of series) await batch(call(s.rt))
  for (let r = 0; r < ROUNDS; r++) {
    for (const s of series) s.times.push(await batch(call(s.rt)))
    exporter.reset()
  }
  const base = median(series[0]!.times)
  console.log('execute() with OpenTelemetry — same tool and hooks, interleaved')
  for (const s of series) {
    const m = median(s.times)
    console.log(`  ${s.label} median ${m.toFixed(2)} µs CPU/call (${m - base >= 0 ? '+' : ''}${(m - base).toFixed(2)} µs)`)
  }
  await provider.shutdown()
}

await overhead()
await telemetryOverhead()
await concurrent(10_000)
