/**
 * The playground's plan card in real Chromium: a plan request (a whole program before it
 * runs) from the real broker shows the program with line numbers, its planned calls and
 * each asking tool's reason, and Allow / Deny answer it.
 */
import { describe, expect, it } from 'vitest'
import { approvalStateOf, renderApprovalPanel } from '../../demo/playground/approval-card.js'
import { createApprovalBroker } from '../../src/approvals/index.js'
import type { PendingApproval } from '../../src/approvals/index.js'
import type { ApprovalRequest } from '../../src/types.js'

describe('the playground plan card', () => {
  it('shows the code, the calls and the reasons; Allow answers the plan request', async () => {
    const broker = createApprovalBroker({ plans: true })
    const requested = new Promise<PendingApproval>((resolve) => {
      broker.subscribe((event) => {
        if (event.type === 'requested') resolve(event.approval)
      })
    })
    const code = `for (const path of ['a', 'b']) {\n  await tools.write_file({ path, content: '' })\n}`
    const request: ApprovalRequest = {
      kind: 'plan',
      execution: { token: Symbol('run') as never, callId: 'run-1', name: 'run_code', arguments: { code, description: 'two files' }, signal: new AbortController().signal },
      plan: { code, description: 'two files', calls: [{ name: 'write_file', line: 2, column: 15 }], asking: [{ name: 'write_file', reason: 'changes the workspace' }], dynamic: false },
      reason: 'the program calls a tool that asks',
    }
    const answered = broker.handler(request)
    const pending = await requested
    const decided: string[] = []
    const panel = renderApprovalPanel(approvalStateOf(pending), async (decision) => {
      decided.push(decision)
      await broker.decide(pending.id, { decision })
    })
    document.body.append(panel)
    expect(panel.dataset.kind).toBe('plan')
    expect(panel.textContent).toContain('This program needs your approval before it runs')
    const shown = panel.querySelector('[data-testid="approval-args"]')?.textContent ?? ''
    expect(shown).toBe(pending.summary)
    expect(shown).toContain('  - write_file (changes the workspace)')
    expect(shown).toContain('  - write_file (line 2)')
    expect(shown).toContain("2 |   await tools.write_file({ path, content: '' })")
    ;(panel.querySelector('[data-testid="approve"]') as HTMLButtonElement).click()
    await expect(answered).resolves.toBe(true)
    expect(decided).toEqual(['allow'])
    panel.remove()
    broker.dispose()
  })
})
