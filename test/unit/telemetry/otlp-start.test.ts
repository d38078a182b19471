/**
 * `npm start`'s entry with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a local OTLP/HTTP
 * receiver this test starts: an approved program's spans (run_code and its sub-calls in
 * one trace, the approval events) and the metrics arrive over OTLP/HTTP JSON.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import { startChild, stopChildren, type Child } from '../../support/child.js'
import { until } from '../../support/poll.js'

const root = fileURLToPath(new URL('../../..', import.meta.url))
const dataDir = mkdtempSync(join(tmpdir(), 'toolyard-otlp-'))
const API = 'otlp-test-api-token-0123456789abcdef'
const APPROVER = 'otlp-test-approver-token-0123456789ab'
let child: Child | undefined
let receiver: Server | undefined
afterAll(async () => {
  await stopChildren()
  receiver?.close()
  rmSync(dataDir, { recursive: true, force: true })
})

interface OtlpSpan { traceId: string; spanId: string; parentSpanId?: string; name: string; attributes?: { key: string; value: Record<string, unknown> }[]; events?: { name: string }[] }

it('npm start with OTEL_EXPORTER_OTLP_ENDPOINT delivers the spans and metrics of an approved program to the receiver', async () => {
  const received: { path: string; body: unknown }[] = []
  receiver = createServer((request, response) => {
    let text = ''
    request.on('data', (chunk: Buffer) => (text += chunk.toString()))
    request.on('end', () => {
      received.push({ path: request.url ?? '', body: request.headers['content-type']?.includes('json') ? JSON.parse(text) : text })
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => receiver!.listen(0, '127.0.0.1', resolve))
  const endpoint = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`

  child = startChild(process.execPath, ['--import', 'tsx', 'examples/start.ts'], {
    cwd: root,
    env: { PORT: '0', TOOLYARD_DATA_DIR: dataDir, TOOLYARD_TOKEN: API, TOOLYARD_APPROVER_TOKEN: APPROVER, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SERVICE_NAME: 'toolyard-otlp-test', OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_METRIC_EXPORT_INTERVAL: '200' },
  })
  const url = await child.waitFor((out) => /listening on (http:\/\/\S+)/.exec(out)?.[1], 'the server to start')

  const auth = (token: string) => ({ Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' })
  const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
  const code = "await tools.write_file({ path: 'otlp/a.md', content: 'hi' })\nreturn await tools.read_file({ path: 'otlp/a.md' })"
  const ran = fetch(`${url}/v1/run`, { method: 'POST', headers: { ...auth(API), traceparent }, body: JSON.stringify({ code, description: 'write then read' }) })
  const approval = await until(async () => {
    const listed = (await (await fetch(`${url}/v1/approvals`, { headers: auth(APPROVER) })).json()) as { approvals: { id: string }[] }
    return listed.approvals[0]
  }, 'the approval')
  expect((await fetch(`${url}/v1/approvals/${approval.id}`, { method: 'POST', headers: auth(APPROVER), body: JSON.stringify({ decision: 'allow' }) })).status).toBe(200)
  expect((await ran).status).toBe(200)

  const spans = await until(() => {
    const all = received.filter((r) => r.path === '/v1/traces').flatMap((r) => (r.body as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] }).resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((s) => s.spans)))
    return all.some((s) => s.name === 'execute_tool run_code') ? all : undefined
  }, 'the spans at the receiver')
  const run = spans.find((s) => s.name === 'execute_tool run_code')!
  expect(run.traceId).toBe('0af7651916cd43dd8448eb211c80319c')
  expect(run.parentSpanId).toBe('b7ad6b7169203331')
  const children = spans.filter((s) => s.parentSpanId === run.spanId)
  expect(children.map((s) => s.name).sort()).toEqual(['execute_tool read_file', 'execute_tool write_file'])
  expect(children.find((s) => s.name === 'execute_tool write_file')!.events!.map((e) => e.name)).toEqual(['toolyard.approval.requested', 'toolyard.approval.decided'])
  const resource = (received.find((r) => r.path === '/v1/traces')!.body as { resourceSpans: { resource: { attributes: { key: string; value: { stringValue?: string } }[] } }[] }).resourceSpans[0]!.resource
  expect(resource.attributes.find((a) => a.key === 'service.name')!.value.stringValue).toBe('toolyard-otlp-test')

  const names = await until(() => {
    const found = new Set(received.filter((r) => r.path === '/v1/metrics').flatMap((r) => (r.body as { resourceMetrics: { scopeMetrics: { metrics: { name: string }[] }[] }[] }).resourceMetrics.flatMap((rm) => rm.scopeMetrics.flatMap((s) => s.metrics.map((m) => m.name)))))
    return found.has('gen_ai.execute_tool.duration') && found.has('toolyard.code.runs') ? found : undefined
  }, 'the metrics at the receiver')
  for (const name of ['toolyard.approval.decisions', 'toolyard.code.running', 'toolyard.code.parked']) expect(names.has(name)).toBe(true)

  // SIGTERM: the server shuts down and flushes; the process exits cleanly.
  child.kill('SIGTERM')
  expect((await child.exited).code).toBe(0)
}, 120_000)
