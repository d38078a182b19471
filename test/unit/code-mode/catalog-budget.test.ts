/**
 * The host's budget for a program's `catalog` calls (issue 19, finding 4): they run on
 * the host's thread, so each is bounded (query length), a run has an allowance, and a
 * flood of them is answered one event-loop turn at a time: the host stays responsive.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { MAX_CATALOG_CALLS_PER_RUN, MAX_CATALOG_QUERY_CHARS } from '../../../src/code-mode/catalog-bindings.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import type { ToolExecutionResult } from '../../../src/types.js'
import { LARGE_REGISTRY } from '../../fixtures/large-registry.js'
import { registerLargeRegistry } from '../../support/large-registry-tools.js'
import { maxStall } from '../../support/stall-probe.js'

const sandbox = createSandboxRuntime({ memoryMb: 64, computeMs: 30_000 })
const registry = createToolRuntime({ mode: 'code', codeRuntime: sandbox })
registerLargeRegistry(registry, LARGE_REGISTRY)
afterAll(async () => {
  await registry.dispose()
  await sandbox.dispose()
})

const run = (code: string): Promise<ToolExecutionResult> =>
  registry.execute({ callId: 'run-1', name: 'run_code', arguments: { code, description: 'test' }, signal: AbortSignal.timeout(60_000) })

function valueOf(result: ToolExecutionResult): unknown {
  if (result.isError) throw new Error(`run_code failed: ${result.error.message}`)
  return (result.value as { result?: unknown }).result
}

describe('catalog calls are bounded on the host', () => {
  it(`refuses a query longer than ${MAX_CATALOG_QUERY_CHARS} characters inside the program`, async () => {
    const value = valueOf(
      await run(`
        const out = []
        out.push((await catalog.search('bucket ' + 'x'.repeat(${MAX_CATALOG_QUERY_CHARS - 7}))).length > 0)
        try { await catalog.search('bucket ' + 'x'.repeat(${MAX_CATALOG_QUERY_CHARS - 6})) } catch (e) { out.push(e.toolName, e.message) }
        return out`),
    )
    expect(value).toEqual([
      true,
      'catalog.search',
      `the query is ${MAX_CATALOG_QUERY_CHARS + 1} characters long; at most ${MAX_CATALOG_QUERY_CHARS} are accepted: search with a few words`,
    ])
  })

  it('a flood of un-awaited searches with long Unicode queries never stalls the host; past the allowance calls are refused', { timeout: 120_000 }, async () => {
    const { stall, value } = await maxStall(() =>
      run(`
        const q = Array.from({ length: ${MAX_CATALOG_QUERY_CHARS} }, (_, i) => String.fromCharCode(0xc0 + ((i * 7919) % 0x180))).join('')
        const calls = []
        for (let i = 0; i < ${MAX_CATALOG_CALLS_PER_RUN + 5}; i++) calls.push(catalog.search(q).then(() => 'ok', (e) => e.message))
        const outcomes = await Promise.all(calls)
        return { ok: outcomes.filter((o) => o === 'ok').length, refused: outcomes.filter((o) => o !== 'ok') }`),
    )
    const { ok, refused } = valueOf(value) as { ok: number; refused: string[] }
    expect(ok).toBe(MAX_CATALOG_CALLS_PER_RUN)
    expect(refused).toHaveLength(5)
    expect(refused[0]).toMatch(/^refused: this run has made 2000 catalog calls, the most one run may make/)
    // Loose on purpose (a loaded 2-core machine): each search is its own event-loop turn of
    // about a millisecond; before, thousands ran back to back (a 7 s stall, and the counts
    // above fail without the allowance).
    expect(stall).toBeLessThan(1_000)
  })
})
