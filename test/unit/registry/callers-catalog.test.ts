/**
 * Per-tool callers meet the catalog: a native-only tool (`callers: ['native']`) is
 * neither declared in the SDK — full or catalog form — nor found by `catalog.search` /
 * `describe`, while a code-only tool is. Platform-neutral.
 */
import { describe, expect, it } from 'vitest'
import { createToolRuntime } from '../../../src/registry/index.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { CodeRuntime } from '../../../src/code-runtime/contract.js'

const codeRuntime: CodeRuntime = {
  language: 'typescript',
  isolation: 'in-process-test',
  capabilities: { streamsLogs: false, memoryLimit: false, capturesStdio: false },
  run: async () => ({ logs: [] }),
  dispose: async () => {},
}

function tool(name: string, description: string, callers?: ReadonlyArray<'native' | 'code'>) {
  return defineTool({
    name,
    description,
    parameters: { id: { type: 'string', required: true } },
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    execute: (args) => args.id,
    ...(callers === undefined ? {} : { callers }),
  })
}

function registry(sdkBudgetChars: number) {
  const runtime = createToolRuntime({ mode: 'both', codeRuntime, sdkBudgetChars })
  runtime.register(tool('refund_payment', 'Refund a payment to the customer.', ['native']))
  runtime.register(tool('lookup_payment', 'Look up a payment by id.', ['code']))
  runtime.register(tool('list_payments', 'List the payments of an account.'))
  return runtime
}

const sdkOf = (runtime: ReturnType<typeof registry>) => runtime.assemble().sections.find((s) => s.id === 'tools:sdk')?.text ?? ''

describe('callers and the catalog', () => {
  it('the full SDK declares code-callable tools only; the wire tools are the native-callable ones', () => {
    const runtime = registry(1_000_000)
    const sdk = sdkOf(runtime)
    expect(sdk).toContain('lookup_payment')
    expect(sdk).toContain('list_payments')
    expect(sdk).not.toContain('refund_payment')
    expect(runtime.assemble().tools.map((t) => t.name).sort()).toEqual(['list_payments', 'refund_payment', 'run_code'])
  })

  it('the catalog form, search and describe leave a native-only tool out', async () => {
    const runtime = registry(200)
    const sdk = sdkOf(runtime)
    expect(sdk).toContain('catalog.search')
    expect(sdk).not.toContain('refund_payment')
    const catalog = runtime.catalog()
    expect(catalog.search('refund a payment').map((hit) => hit.name)).not.toContain('refund_payment')
    expect(catalog.search('look up a payment').map((hit) => hit.name)).toContain('lookup_payment')
    expect(catalog.describe('refund_payment')).toBeUndefined()
    expect(catalog.describe('lookup_payment')).toMatch(/lookup_payment/)
  })
})
