/**
 * The HTTP fixture with role tokens, a store broker and a `pay` tool that asks a person:
 * the set-up the principals and HTTP security tests share.
 *
 * @module
 */
import { createApprovalBroker } from '../../src/approvals/index.js'
import type { PendingApproval } from '../../src/approvals/index.js'
import { createMemoryStore } from '../../src/durable/index.js'
import type { ToolsAppOptions } from '../../src/http/index.js'
import type { ToolRuntime } from '../../src/runtime-types.js'
import { defineTool } from '../../src/schema/define-tool.js'
import { createInProcessRuntime } from '../unit/code-mode/support/in-process-runtime.js'
import { PERSON_TOKEN, ROLE_TOKENS, createFixture, jsonAuth } from '../unit/http/fixtures.js'

/** A pending approval as `GET /v1/approvals` lists it. */
export type ListedApproval = PendingApproval & { principal?: string }

/** The `pay` tool (`{ cents }` → `"paid <cents>"`); `onPay` hears each call that ran. */
export function payTool(onPay: (cents: number) => void = () => {}) {
  return defineTool({
    name: 'pay',
    description: 'Pays (a person approves first).',
    parameters: { cents: { type: 'number', required: true } },
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    execute: (args) => {
      onPay(args.cents)
      return `paid ${args.cents}`
    },
  })
}

/**
 * Registers {@link payTool} on `runtime`, with a `tools/pre-execute` hook that makes every `pay`
 * call ask a person ("money moves"); `onPay` hears each call a person allowed.
 */
export function registerAskingPay(runtime: Pick<ToolRuntime, 'register' | 'on'>, onPay: (cents: number) => void = () => {}): void {
  runtime.register(payTool(onPay))
  runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
}

/**
 * The app (`tokens` default to the three role tokens) over a runtime with an in-process code
 * runtime, a memory store and its broker; `pay` records each call in `paid` after a person allows it.
 */
export function payFixture(appOptions: Partial<ToolsAppOptions> = {}) {
  const broker = createApprovalBroker()
  const store = createMemoryStore()
  const fixture = createFixture(
    { mode: 'both', codeRuntime: createInProcessRuntime({ wallMs: 30_000 }), approvals: broker, store },
    { tokens: ROLE_TOKENS, ...appOptions },
  )
  const paid: unknown[] = []
  registerAskingPay(fixture.runtime, (cents) => paid.push(cents))
  const request = (path: string, token: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) =>
    Promise.resolve(
      fixture.app.request(path, {
        method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
        headers: { ...jsonAuth(token), ...init.headers },
        ...(init.body === undefined ? {} : { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) }),
      }),
    )
  const pending = async (): Promise<ListedApproval[]> =>
    ((await (await request('/v1/approvals', PERSON_TOKEN)).json()) as { approvals: ListedApproval[] }).approvals
  return { ...fixture, broker, store, paid, request, pending }
}
