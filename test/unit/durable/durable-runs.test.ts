/**
 * Durable runs through the registry (`createToolRuntime({ store })`) on the REAL sandbox
 * runtime: a run that parks is written to the store; another runtime on the same store
 * (another process, here in one) resumes it with `resumeRuns()`, its waiting call asks
 * again under the same call id, and nothing the run completed runs twice. Sub-calls made
 * after a park are recorded: a recorded result is reused, a body a crash cut off fails
 * as INTERRUPTED unless its tool is idempotent.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { argumentsHash } from '../../../src/durable/call-key.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import type { DurableStore } from '../../../src/durable/store.js'
import { createToolRuntime } from '../../../src/registry/runtime.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { JsonValue } from '../../../src/json/json-value.js'
import type { ApprovalHandler, ToolExecutionResult } from '../../../src/types.js'
import { until } from '../../support/poll.js'
import { payTool } from '../../support/pay-fixture.js'

const disposers: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const dispose of disposers) await dispose()
})

/** One "process": a registry over `store` with its own sandbox, its own side-effect log and approval handler. */
function processOn(store: DurableStore, approve: ApprovalHandler, options: { idempotentEffect?: boolean } = {}) {
  const codeRuntime = createSandboxRuntime({ memoryMb: 32, prespawn: 0, parkAfterMs: 30 })
  const runtime = createToolRuntime({ mode: 'code', codeRuntime, store, approval: approve })
  disposers.push(() => runtime.dispose(), () => codeRuntime.dispose())
  const effects: string[] = []
  runtime.register(
    defineTool({
      name: 'effect',
      description: 'Records a side effect.',
      parameters: { tag: { type: 'string', required: true } },
      ...(options.idempotentEffect === true ? { idempotent: true } : {}),
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: async (args) => {
        effects.push(args.tag)
        return `did ${args.tag}`
      },
    }),
  )
  runtime.register(payTool((cents) => effects.push(`pay ${cents}`)))
  runtime.on('tools/pre-execute', (decision, execution) => (execution.name === 'pay' ? { kind: 'ask', reason: 'money moves' } : decision))
  return { runtime, codeRuntime, effects }
}

/** An approval handler that waits for the test (and never hears an abort: a dead process's handler just stops). */
function manualApprovals() {
  const asked: { callId: string; decide: (allow: boolean) => void }[] = []
  const handler: ApprovalHandler = (request) =>
    new Promise<boolean>((resolve) => asked.push({ callId: request.execution.callId, decide: resolve }))
  return { asked, handler }
}

/**
 * Writes a sub-call's exactly-once record as the durable wrapper of the run's process
 * would have: bound to the run's secret (read from its parked record), tool and arguments.
 */
async function putCallRecord(
  store: DurableStore,
  run: string,
  n: number,
  call: { state: 'started' | 'done'; name: string; arguments: JsonValue; value?: JsonValue; secret?: string },
): Promise<void> {
  const secret = call.secret ?? (JSON.parse((await store.get(`runs/${run}`))!.value) as { park: { secret: string } }).park.secret
  const record = { state: call.state, name: call.name, args: await argumentsHash(call.arguments), run: secret, ...(call.value === undefined ? {} : { value: call.value }) }
  await store.put(`calls/${run}/${n}`, JSON.stringify(record))
}

const PROGRAM = `
  const a = await tools.effect({ tag: 'before' })
  const stamp = Date.now()
  const paid = await tools.pay({ cents: 500 })
  const b = await tools.effect({ tag: 'after' })
  return { a, paid, b, stampKept: stamp <= Date.now() }
`

function valueOf(result: ToolExecutionResult): unknown {
  expect(result.isError, result.isError ? result.error.message : '').toBe(false)
  return (result as { value: { result?: unknown } }).value.result
}

async function keys(store: DurableStore, prefix: string): Promise<string[]> {
  return (await store.list(prefix)).entries.map((e) => e.key)
}

describe('durable runs through the registry (createToolRuntime({ store }))', () => {
  it('a run parked in a process that stops is resumed by another on the same store: the waiting call asks again under its id, nothing completed runs twice', async () => {
    const store = createMemoryStore()
    const first = manualApprovals()
    const a = processOn(store, first.handler)
    void a.runtime.execute({ callId: 'run-1', name: 'run_code', arguments: { code: PROGRAM, description: 'pay' }, signal: new AbortController().signal })
    await until(async () => (await keys(store, 'runs/')).length === 1)
    expect(first.asked.map((r) => r.callId)).toEqual(['run-1:code:2'])
    expect(a.effects).toEqual(['before'])
    // Process A "dies" here: it never hears a decision. Process B takes over the store.
    const second = manualApprovals()
    const b = processOn(store, second.handler)
    const resumed = await b.runtime.resumeRuns({ staleMs: 0 })
    expect(resumed.map((r) => r.callId)).toEqual(['run-1'])
    await until(() => second.asked.length === 1)
    expect(second.asked[0]!.callId).toBe('run-1:code:2')
    second.asked[0]!.decide(true)
    const result = (await resumed[0]!.result) as ToolExecutionResult
    expect(valueOf(result)).toEqual({ a: 'did before', paid: 'paid 500', b: 'did after', stampKept: true })
    expect(b.effects).toEqual(['pay 500', 'after'])
    // Finished: its records are gone.
    await until(async () => (await keys(store, 'runs/')).length === 0 && (await keys(store, 'calls/')).length === 0)
    // A second resume finds nothing.
    expect(await b.runtime.resumeRuns({ staleMs: 0 })).toEqual([])
  })

  it('of two processes resuming the same store, exactly one takes each run', async () => {
    const store = createMemoryStore()
    const a = processOn(store, manualApprovals().handler)
    void a.runtime.execute({ callId: 'run-2', name: 'run_code', arguments: { code: PROGRAM, description: 'pay' }, signal: new AbortController().signal })
    await until(async () => (await keys(store, 'runs/')).length === 1)
    const b = processOn(store, manualApprovals().handler)
    const c = processOn(store, manualApprovals().handler)
    const [fromB, fromC] = await Promise.all([b.runtime.resumeRuns({ staleMs: 0 }), c.runtime.resumeRuns({ staleMs: 0 })])
    expect(fromB.length + fromC.length).toBe(1)
  })

  it('a live process keeps its parked runs: another one leaves them alone while its heartbeat is fresh', async () => {
    const store = createMemoryStore()
    const a = processOn(store, manualApprovals().handler)
    void a.runtime.execute({ callId: 'run-3', name: 'run_code', arguments: { code: PROGRAM, description: 'pay' }, signal: new AbortController().signal })
    await until(async () => (await keys(store, 'runs/')).length === 1)
    await until(async () => (await keys(store, 'owners/')).length === 1)
    const b = processOn(store, manualApprovals().handler)
    expect(await b.runtime.resumeRuns()).toEqual([])
  })

  it('after a park, a call whose body a crash cut off fails as INTERRUPTED in the program, unless its tool is idempotent (then it runs again)', async () => {
    for (const idempotent of [false, true]) {
      const store = createMemoryStore()
      const a = processOn(store, manualApprovals().handler)
      const callId = `run-int-${idempotent}`
      void a.runtime.execute({ callId, name: 'run_code', arguments: { code: PROGRAM, description: 'pay' }, signal: new AbortController().signal })
      await until(async () => (await keys(store, 'runs/')).length === 1)
      // The crash, as the durable wrapper would have left it: pay (call 2) completed; effect 'after' (call 3) had started.
      await putCallRecord(store, callId, 2, { state: 'done', name: 'pay', arguments: { cents: 500 }, value: 'paid 500' })
      await putCallRecord(store, callId, 3, { state: 'started', name: 'effect', arguments: { tag: 'after' } })
      const approvals = manualApprovals()
      const b = processOn(store, approvals.handler, { idempotentEffect: idempotent })
      const resumed = await b.runtime.resumeRuns({ staleMs: 0 })
      await until(() => approvals.asked.length === 1)
      approvals.asked[0]!.decide(true)
      const result = (await resumed[0]!.result) as ToolExecutionResult
      if (idempotent) {
        expect(valueOf(result)).toEqual({ a: 'did before', paid: 'paid 500', b: 'did after', stampKept: true })
        expect(b.effects).toEqual(['after'])
      } else {
        expect(result.isError).toBe(true)
        expect(result.isError && result.error.message).toMatch(/ToolCallError: effect was running when its process stopped/)
        // pay is never run twice, and the cut-off effect is not run again.
        expect(b.effects).toEqual([])
      }
    }
  })

  it('after a park, a call the program makes again is answered from its record, not run twice', async () => {
    const store = createMemoryStore()
    const a = processOn(store, manualApprovals().handler)
    void a.runtime.execute({ callId: 'run-rec', name: 'run_code', arguments: { code: PROGRAM, description: 'pay' }, signal: new AbortController().signal })
    await until(async () => (await keys(store, 'runs/')).length === 1)
    // The previous process ran pay and effect('after') after the park, then died before the run ended.
    await putCallRecord(store, 'run-rec', 2, { state: 'done', name: 'pay', arguments: { cents: 500 }, value: 'paid 500' })
    await putCallRecord(store, 'run-rec', 3, { state: 'done', name: 'effect', arguments: { tag: 'after' }, value: 'did after' })
    const approvals = manualApprovals()
    const b = processOn(store, approvals.handler)
    const resumed = await b.runtime.resumeRuns({ staleMs: 0 })
    await until(() => approvals.asked.length === 1)
    approvals.asked[0]!.decide(true)
    expect(valueOf((await resumed[0]!.result) as ToolExecutionResult)).toEqual({ a: 'did before', paid: 'paid 500', b: 'did after', stampKept: true })
    expect(b.effects).toEqual([])
  })

  it('rejects a store that is not one, and a tool whose idempotent flag is not a boolean', () => {
    expect(() => createToolRuntime({ store: {} as DurableStore })).toThrow(/options.store must be a DurableStore/)
    expect(() =>
      defineTool({
        name: 'x',
        description: 'x',
        parameters: {},
        idempotent: 'yes' as unknown as boolean,
        output: { schema: { type: 'string' }, render: () => [] },
        execute: () => 'x',
      }),
    ).toThrow(/idempotent must be a boolean/)
  })
})
