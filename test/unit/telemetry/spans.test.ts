/**
 * OpenTelemetry spans of the pipeline, read back from the SDK's in-memory exporter: one
 * `execute_tool <name>` span per call, a program's sub-calls its children, approvals as
 * events, the caller's `traceparent` as the root's parent.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { trace } from '@opentelemetry/api'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeEach, describe, expect, it } from 'vitest'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import { parseTraceparent } from '../../../src/telemetry/index.js'
import type { ToolRuntime, ToolRuntimeOptions } from '../../../src/runtime-types.js'

const require = createRequire(import.meta.url)
const wasmModule = new WebAssembly.Module(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')))
const codeRuntime = createQuickJsRuntime({ computeMs: 20_000, maxWallMs: 60_000, wasmModule })
const exporter = new InMemorySpanExporter()
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
const tracer = provider.getTracer('toolyard-test')
const registries: ToolRuntime[] = []
afterAll(async () => {
  for (const r of registries) await r.dispose()
  await codeRuntime.dispose()
  await provider.shutdown()
})
beforeEach(() => exporter.reset())

function setup(options: Partial<ToolRuntimeOptions> = {}) {
  const runtime = createToolRuntime({ mode: 'both', codeRuntime, telemetry: { tracer }, approval: async () => true, ...options })
  registries.push(runtime)
  runtime.register(defineTool({
    name: 'add', description: 'Add two numbers.',
    parameters: { a: { type: 'number', required: true }, b: { type: 'number', required: true } },
    output: { schema: { type: 'number' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
    execute: (args) => args.a + args.b,
  }))
  runtime.register(defineTool({
    name: 'fail', description: 'Always fails.', parameters: {},
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    execute: () => { throw new Error('boom') },
  }))
  runtime.register(defineTool({
    name: 'write', description: 'Writes (asks first).', parameters: { path: { type: 'string', required: true } },
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    execute: (args) => `wrote ${args.path}`,
  }))
  runtime.on('tools/pre-execute', (d, exec) => (exec.name === 'write' ? { kind: 'ask', reason: 'writes a file' } : d))
  return runtime
}

const byName = (spans: readonly ReadableSpan[], name: string) => spans.filter((s) => s.name === name)
const parentId = (span: ReadableSpan) => span.parentSpanContext?.spanId

const PROGRAM = [
  'const sum = await tools.add({ a: 2, b: 3 })',
  'let failed = ""',
  'try { await tools.fail({}) } catch (e) { failed = String(e.message) }',
  'const wrote = await tools.write({ path: "a.txt" })',
  'return { sum, failed, wrote }',
].join('\n')

describe('execute_tool spans', () => {
  it('a native call is one INTERNAL span with the GenAI attributes', async () => {
    const runtime = setup()
    const result = await runtime.execute({ callId: 'c1', name: 'add', arguments: { a: 1, b: 2 }, signal: AbortSignal.timeout(5_000) })
    expect(result.isError).toBe(false)
    const [span, ...rest] = exporter.getFinishedSpans()
    expect(rest).toEqual([])
    expect(span!.name).toBe('execute_tool add')
    expect(span!.kind).toBe(0)
    expect(span!.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'add', 'gen_ai.tool.call.id': 'c1',
      'gen_ai.tool.description': 'Add two numbers.', 'gen_ai.tool.type': 'function', 'toolyard.tool.caller': 'native',
    })
    expect(span!.attributes['error.type']).toBeUndefined()
    // Content is never captured unless opted in.
    expect(span!.attributes['gen_ai.tool.call.arguments']).toBeUndefined()
    expect(span!.attributes['gen_ai.tool.call.result']).toBeUndefined()
  })

  it('a failure carries error.type (the result code) and an ERROR status; an unknown tool too', async () => {
    const runtime = setup()
    await runtime.execute({ callId: 'c2', name: 'fail', arguments: {}, signal: AbortSignal.timeout(5_000) })
    await runtime.execute({ callId: 'c3', name: 'nope', arguments: {}, signal: AbortSignal.timeout(5_000) })
    const [failed, unknown] = exporter.getFinishedSpans()
    expect(failed!.attributes['error.type']).toBe('TOOL_FAILED')
    expect(failed!.status.code).toBe(2)
    expect(unknown!.name).toBe('execute_tool nope')
    expect(unknown!.attributes['error.type']).toBe('UNKNOWN_TOOL')
  })

  it('a program is a tree: run_code the parent of its three sub-calls (one failing, one approved), with its figures', async () => {
    const runtime = setup()
    const result = await runtime.execute({ callId: 'p1', name: 'run_code', arguments: { description: 'three calls', code: PROGRAM }, signal: AbortSignal.timeout(30_000) })
    expect(result.isError).toBe(false)
    const spans = exporter.getFinishedSpans()
    const [run] = byName(spans, 'execute_tool run_code')
    const children = spans.filter((s) => parentId(s) === run!.spanContext().spanId)
    expect(children.map((s) => s.name).sort()).toEqual(['execute_tool add', 'execute_tool fail', 'execute_tool write'])
    for (const child of children) {
      expect(child.spanContext().traceId).toBe(run!.spanContext().traceId)
      expect(child.attributes['toolyard.tool.caller']).toBe('code')
    }
    expect(byName(children, 'execute_tool fail')[0]!.attributes['error.type']).toBe('TOOL_FAILED')
    expect(run!.attributes).toMatchObject({ 'toolyard.tool.caller': 'native', 'toolyard.run.calls_made': 3, 'toolyard.run.calls_refused': 0, 'toolyard.run.outcome': 'ok' })
    expect(run!.attributes['toolyard.run.bytes_returned']).toBeGreaterThan(0)
    expect(run!.attributes['toolyard.run.elapsed_ms']).toBeGreaterThanOrEqual(run!.attributes['toolyard.run.approval_wait_ms'] as number)
    expect(parentId(run!)).toBeUndefined()
    // The approval: a pair of events on the asking call's span.
    const write = byName(children, 'execute_tool write')[0]!
    expect(write.events.map((e) => e.name)).toEqual(['toolyard.approval.requested', 'toolyard.approval.decided'])
    expect(write.events[0]!.attributes).toEqual({ 'toolyard.approval.kind': 'call', 'toolyard.approval.reason': 'writes a file' })
    expect(write.events[1]!.attributes).toMatchObject({ 'toolyard.approval.decision': 'allow' })
    expect(typeof write.events[1]!.attributes!['toolyard.approval.waited_ms']).toBe('number')
  })

  it('a denied sub-call counts as refused, and the denial is the decided event', async () => {
    const runtime = setup({ approval: async () => false })
    await runtime.execute({ callId: 'p2', name: 'run_code', arguments: { description: 'denied', code: 'try { await tools.write({ path: "x" }) } catch {}\nreturn 1' }, signal: AbortSignal.timeout(30_000) })
    const spans = exporter.getFinishedSpans()
    const write = byName(spans, 'execute_tool write')[0]!
    expect(write.attributes['error.type']).toBe('DENIED_BY_APPROVAL')
    expect(write.events[1]!.attributes).toMatchObject({ 'toolyard.approval.decision': 'deny' })
    expect(byName(spans, 'execute_tool run_code')[0]!.attributes).toMatchObject({ 'toolyard.run.calls_made': 1, 'toolyard.run.calls_refused': 1 })
  })

  it("an incoming traceparent makes the call's span a child of the caller's trace (tracestate kept); a bad one starts a new trace", async () => {
    const runtime = setup()
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
    await runtime.execute({ callId: 't1', name: 'run_code', arguments: { description: 'd', code: 'return await tools.add({ a: 1, b: 1 })' }, signal: AbortSignal.timeout(30_000), trace: { traceparent, tracestate: 'vendor=abc' } })
    const spans = exporter.getFinishedSpans()
    for (const span of spans) expect(span.spanContext().traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736')
    const [run] = byName(spans, 'execute_tool run_code')
    expect(parentId(run!)).toBe('00f067aa0ba902b7')
    expect(run!.spanContext().traceState?.get('vendor')).toBe('abc')
    exporter.reset()
    await runtime.execute({ callId: 't2', name: 'add', arguments: { a: 1, b: 1 }, signal: AbortSignal.timeout(5_000), trace: { traceparent: traceparent.toUpperCase() } })
    const [fresh] = exporter.getFinishedSpans()
    expect(fresh!.spanContext().traceId).not.toBe('4bf92f3577b34da6a3ce929d0e0e4736')
    expect(parentId(fresh!)).toBeUndefined()
  })

  it('content is captured only when opted in, rendered as the approval cards render it (bounded)', async () => {
    const runtime = setup({ telemetry: { tracer, captureContent: true, maxContentBytes: 512 } })
    await runtime.execute({ callId: 'k1', name: 'write', arguments: { path: 'x'.repeat(5_000) }, signal: AbortSignal.timeout(5_000) })
    const [span] = exporter.getFinishedSpans()
    const args = String(span!.attributes['gen_ai.tool.call.arguments'])
    expect(args).toContain('path')
    expect(new TextEncoder().encode(args).length).toBeLessThanOrEqual(512)
    expect(String(span!.attributes['gen_ai.tool.call.result'])).toContain('wrote')
  })

  it('options.telemetry is validated (INVALID_OPTIONS)', () => {
    expect(() => createToolRuntime({ telemetry: { tracer: {} as never } })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
    expect(() => createToolRuntime({ telemetry: 5 as never })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
    expect(() => createToolRuntime({ telemetry: { captureContent: 'yes' as never } })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }))
  })
})

describe('parseTraceparent (W3C, strict)', () => {
  it.each([
    ['00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', true],
    ['00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00', true],
    ['01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future', true],
    ['00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra', false],
    ['ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', false],
    ['00-00000000000000000000000000000000-00f067aa0ba902b7-01', false],
    ['00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', false],
    ['00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01', false],
    ['00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g', false],
    ['00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', false],
    ['', false],
  ])('%s → %s', (header, valid) => {
    expect(parseTraceparent(header) !== undefined).toBe(valid)
  })
  it('is never fooled by non-strings', () => {
    for (const value of [undefined, null, 1, {}, ['00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01']]) expect(parseTraceparent(value)).toBeUndefined()
  })
})

it('the same API object works as the tracer (trace.getTracer with a registered provider)', async () => {
  trace.setGlobalTracerProvider(provider)
  const runtime = setup({ telemetry: { tracer: trace.getTracer('toolyard') } })
  await runtime.execute({ callId: 'g1', name: 'add', arguments: { a: 1, b: 2 }, signal: AbortSignal.timeout(5_000) })
  expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['execute_tool add'])
  trace.disable()
})
