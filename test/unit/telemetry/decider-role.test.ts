/**
 * The deciding role travels with the settlement: a decision taken by another process's
 * broker reaches the waiting call's span; a stored role that is not a label is malformed.
 */
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { expect, it } from 'vitest'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import { decodeDone, hashOfId } from '../../../src/approvals/_store-record.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ToolExecutionResult } from '../../../src/types.js'
import { until } from '../../support/poll.js'

it('a decision by another broker on the store: the waiting call reports its role; the stored settlement keeps it', async () => {
  const store = createMemoryStore()
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const runtime = createToolRuntime({ approvals: { store, pollIntervalMs: 10 }, telemetry: { tracer: provider.getTracer('toolyard') } })
  runtime.register(defineTool({ name: 'pay', description: 'Pays.', parameters: {}, output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] }, execute: () => 'paid' }))
  runtime.on('tools/pre-execute', (d, e) => (e.name === 'pay' ? { kind: 'ask' } : d))
  const other = createApprovalBroker({ store })
  const call = runtime.execute({ callId: 'c', name: 'pay', arguments: {}, signal: AbortSignal.timeout(10_000) })
  const pending = await until(async () => {
    const list = await other.pending()
    return list.length > 0 && list
  }, 'the request in the other broker')
  // A role that is not a short lower-case label is not kept (nothing a caller makes up reaches telemetry).
  const decided = await other.decide(pending[0]!.id, { decision: 'allow' }, { role: 'approve' })
  expect(decided.ok).toBe(true)
  expect(((await call) as ToolExecutionResult).isError).toBe(false)
  const [span] = exporter.getFinishedSpans()
  expect(span!.events.find((e) => e.name === 'toolyard.approval.decided')!.attributes).toMatchObject({ 'toolyard.approval.role': 'approve', 'toolyard.approval.decision': 'allow' })
  const hash = hashOfId(pending[0]!.id)!
  const done = (await store.get(`approvals/done/${hash}`))!.value
  expect(decodeDone(done, hash)!.settled).toMatchObject({ kind: 'decided', role: 'approve' })
  const forged = JSON.parse(done) as { settled: Record<string, unknown> }
  for (const role of ['Approve', 'person-token-0123456789abcdef', 5, '']) {
    forged.settled.role = role
    expect(decodeDone(JSON.stringify(forged), hash)).toBeUndefined()
  }
  await other.dispose()
  await runtime.dispose()
  await provider.shutdown()
})

it('decide() drops a role that is not a label; a decision without one reports none', async () => {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const runtime = createToolRuntime({ approvals: {}, telemetry: { tracer: provider.getTracer('toolyard') } })
  runtime.register(defineTool({ name: 'pay', description: 'Pays.', parameters: {}, output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] }, execute: () => 'paid' }))
  runtime.on('tools/pre-execute', (d, e) => (e.name === 'pay' ? { kind: 'ask' } : d))
  const broker = runtime.approvals!
  for (const role of ['secret-token-0123456789', undefined]) {
    const call = runtime.execute({ callId: `c-${String(role)}`, name: 'pay', arguments: {}, signal: AbortSignal.timeout(10_000) })
    const pending = await until(async () => {
      const list = await broker.pending()
      return list.length > 0 && list
    }, 'the request')
    await broker.decide(pending[0]!.id, { decision: 'deny' }, role === undefined ? undefined : { role })
    await call
  }
  for (const span of exporter.getFinishedSpans()) {
    const decided = span.events.find((e) => e.name === 'toolyard.approval.decided')!
    expect(decided.attributes?.['toolyard.approval.decision']).toBe('deny')
    expect(decided.attributes).not.toHaveProperty('toolyard.approval.role')
  }
  expect(exporter.getFinishedSpans()).toHaveLength(2)
  await runtime.dispose()
  await provider.shutdown()
})
