/**
 * A parked run keeps its principal (issue 31): the run's stored record carries it, so a
 * run resumed by another process (or after a restart) asks under the same principal; a
 * stored record whose principal is not a label is not resumed. Real sandbox runtime.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import { readStoredRun } from '../../../src/durable/runs.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { createToolRuntime } from '../../../src/registry/runtime.js'
import type { ApprovalHandler, ToolExecutionResult } from '../../../src/types.js'
import { until } from '../../support/poll.js'
import { payTool } from '../../support/pay-fixture.js'

const disposers: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const dispose of disposers) await dispose()
})

/** One "process" over `store`: `pay` asks; every request's principal is recorded in `asked`. */
function processOn(store: DurableStore) {
  const asked: { callId: string; principal: string | undefined; decide: (allow: boolean) => void }[] = []
  const approval: ApprovalHandler = (request) => new Promise<boolean>((resolve) => asked.push({ callId: request.execution.callId, principal: request.execution.principal, decide: resolve }))
  const codeRuntime = createSandboxRuntime({ memoryMb: 32, prespawn: 0, parkAfterMs: 30 })
  const runtime = createToolRuntime({ mode: 'code', codeRuntime, store, approval })
  disposers.push(() => runtime.dispose(), () => codeRuntime.dispose())
  runtime.register(payTool())
  runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask' } : decision))
  return { runtime, asked }
}

const PROGRAM = 'return await tools.pay({ cents: 5 })'

describe("a parked run's record keeps its principal", () => {
  it('the run resumed by another process asks under the principal that started it', async () => {
    const store = createMemoryStore()
    const a = processOn(store)
    void a.runtime.execute({ callId: 'run-p', name: 'run_code', arguments: { code: PROGRAM, description: 'pay' }, signal: new AbortController().signal, principal: 'alice' })
    await until(async () => (await store.list('runs/')).entries.length === 1)
    expect(a.asked.map((r) => [r.callId, r.principal])).toEqual([['run-p:code:1', 'alice']])
    const [entry] = (await store.list('runs/')).entries
    expect(await readStoredRun((await store.get(entry!.key))!.value)).toMatchObject({ callId: 'run-p', principal: 'alice' })
    const b = processOn(store)
    const [resumed] = await b.runtime.resumeRuns({ staleMs: 0 })
    await until(() => b.asked.length === 1)
    expect(b.asked[0]).toMatchObject({ callId: 'run-p:code:1', principal: 'alice' })
    b.asked[0]!.decide(true)
    const result = (await resumed!.result) as ToolExecutionResult
    expect(result.isError).toBe(false)
  })

  it.each([['too long', 'a'.repeat(65)], ['not a label', 'a/b'], ['not a string', 7]])('a stored run whose principal is %s is not read', async (_what, principal) => {
    const store = createMemoryStore()
    const a = processOn(store)
    void a.runtime.execute({ callId: 'run-h', name: 'run_code', arguments: { code: PROGRAM, description: 'pay' }, signal: new AbortController().signal, principal: 'alice' })
    await until(async () => (await store.list('runs/')).entries.length === 1)
    const [entry] = (await store.list('runs/')).entries
    const text = (await store.get(entry!.key))!.value
    const hostile = JSON.stringify({ ...JSON.parse(text), principal })
    expect(await readStoredRun(text)).toBeDefined()
    expect(await readStoredRun(hostile)).toBeUndefined()
  })
})
