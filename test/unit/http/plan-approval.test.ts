/**
 * Plan approval over HTTP on the default (Node) sandbox runtime: GET /v1/approvals lists
 * the plan request with its kind, POST decides it. Node-only (the sandbox runtime is
 * Node's), so it lives here rather than beside the portable approvals suites, which also
 * run in Chromium.
 */
import { describe, expect, it } from 'vitest'
import type { PendingApproval } from '../../../src/approvals/index.js'
import { codeOf, messageOf, until } from '../approvals/helpers.js'

describe('plan approval over HTTP, on the default sandbox runtime', () => {
  it('GET /v1/approvals lists kind plan; POST deny ends the run before the write; allow runs both writes with one request', async () => {
    const { createSandboxRuntime } = await import('../../../platforms/node/index.js')
    const { createApprovalBroker } = await import('../../../src/approvals/index.js')
    const { AUTH, JSON_AUTH, createFixture } = await import('./fixtures.js')
    const { defineTool } = await import('../../../src/schema/define-tool.js')
    const codeRuntime = createSandboxRuntime({ memoryMb: 32 })
    try {
      const broker = createApprovalBroker({ plans: true })
      const fixture = createFixture({ mode: 'both', codeRuntime, approvals: broker })
      const written: unknown[] = []
      fixture.runtime.register(
        defineTool({
          name: 'write_file',
          description: 'Writes (asks a person first).',
          parameters: { path: { type: 'string', required: true } },
          output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
          execute: (args) => {
            written.push(args.path)
            return `wrote ${args.path}`
          },
        }),
      )
      fixture.runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'write_file' ? { kind: 'ask', reason: 'changes the workspace' } : decision))
      const requests: PendingApproval[] = []
      broker.subscribe((event) => {
        if (event.type === 'requested') requests.push(event.approval)
      })
      const code = `await tools.write_file({ path: 'a' })\nawait tools.write_file({ path: 'b' })\nreturn 'ok'`
      const run = (callId: string) => fixture.runtime.execute({ callId, name: 'run_code', arguments: { code, description: 'two writes' }, signal: new AbortController().signal })

      const denied = run('http-plan-1')
      await until(() => requests.length === 1)
      const listed = (await (await fixture.app.request('/v1/approvals', { headers: AUTH })).json()) as { approvals: PendingApproval[] }
      expect(listed.approvals).toHaveLength(1)
      expect(listed.approvals[0]).toMatchObject({ kind: 'plan', callId: 'http-plan-1', name: 'run_code', plan: { asking: [{ name: 'write_file', reason: 'changes the workspace' }], dynamic: false } })
      const id = listed.approvals[0]!.id
      const post = await fixture.app.request(`/v1/approvals/${id}`, { method: 'POST', headers: JSON_AUTH, body: JSON.stringify({ decision: 'deny', reason: 'no writes' }) })
      expect(post.status).toBe(200)
      const result = await denied
      expect(codeOf(result)).toBe('DENIED_BY_APPROVAL')
      expect(messageOf(result)).toContain('no writes')
      expect(written).toEqual([])

      const allowed = run('http-plan-2')
      await until(() => requests.length === 2)
      await broker.decide(requests[1]!.id, { decision: 'allow' })
      expect(codeOf(await allowed)).toBe('OK')
      expect(written).toEqual(['a', 'b'])
      expect(requests.map((r) => r.kind)).toEqual(['plan', 'plan'])
      broker.dispose()
    } finally {
      await codeRuntime.dispose()
    }
  }, 60_000)
})
