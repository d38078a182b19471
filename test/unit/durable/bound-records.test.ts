/**
 * A durable run's records and decisions are bound to its calls (issue 31, item 2): a
 * direct call naming a run's sub-call id neither reads nor writes the run's exactly-once
 * record; a record of another tool or other arguments under a call's number fails the call
 * `REPLAY_DIVERGED`; and a replay that branches differently after a restart (or a graceful
 * stop) asks a person anew instead of inheriting the decision taken for the previous call
 * of that number. QuickJS inline, so the host's `Math.random` steers the program's branch.
 */
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { createSandboxRuntime } from '../../../platforms/node/index.js'
import { createQuickJsRuntime } from '../../../platforms/quickjs/index.js'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { ApprovalBroker } from '../../../src/approvals/index.js'
import { argumentsHash } from '../../../src/durable/call-key.js'
import { createMemoryStore } from '../../../src/durable/memory-store.js'
import type { DurableStore } from '../../../src/durable/store.js'
import type { JsonValue } from '../../../src/json/json-value.js'
import { createToolRuntime } from '../../../src/registry/runtime.js'
import type { ToolRuntime } from '../../../src/runtime-types.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ApprovalHandler, CodeRuntime, ToolExecutionResult } from '../../../src/index.js'
import { until } from '../../support/poll.js'

const disposers: (() => Promise<unknown>)[] = []
afterAll(async () => {
  for (const dispose of disposers.reverse()) await dispose()
})
afterEach(() => {
  vi.restoreAllMocks()
})

const keys = async (store: DurableStore, prefix: string) => (await store.list(prefix)).entries.map((e) => e.key)

/** One "process": a registry over `store` whose tools log each body that ran; `pay`, `write_file` and `edit_file` ask. */
function processOn(store: DurableStore, approval: ApprovalHandler, codeRuntime: CodeRuntime) {
  const runtime = createToolRuntime({ mode: 'both', codeRuntime, store, approval })
  disposers.push(() => runtime.dispose())
  const ran: string[] = []
  const tool = (name: string, parameters: Record<string, { type: 'string' | 'number'; required: true }>) =>
    defineTool({
      name,
      description: `${name} (test)`,
      parameters,
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: async (args: Record<string, unknown>) => {
        ran.push(`${name} ${JSON.stringify(args)}`)
        return `did ${name} ${Object.values(args).join(' ')}`
      },
    })
  runtime.register(tool('effect', { tag: { type: 'string', required: true } }))
  runtime.register(tool('pay', { cents: { type: 'number', required: true } }))
  runtime.register(tool('write_file', { path: { type: 'string', required: true } }))
  runtime.register(tool('edit_file', { path: { type: 'string', required: true } }))
  runtime.register(
    defineTool({
      name: 'hang',
      description: 'Never returns until cancelled (the run is busy, not parked).',
      parameters: {},
      output: { schema: { type: 'string' }, render: () => [] },
      execute: (_args, exec) => new Promise<string>((_resolve, reject) => exec.signal.addEventListener('abort', () => reject(exec.signal.reason), { once: true })),
    }),
  )
  const asking = new Set(['pay', 'write_file', 'edit_file'])
  runtime.on('tools/pre-execute', (decision, execution) => (asking.has(execution.name) ? { kind: 'ask', reason: 'a person decides' } : decision))
  return { runtime, ran }
}

/** An approval handler that waits for the test. */
function manualApprovals() {
  const asked: { callId: string; name: string; decide: (allow: boolean) => void }[] = []
  const handler: ApprovalHandler = (request) =>
    new Promise<boolean>((resolve) => asked.push({ callId: request.execution.callId, name: request.execution.name, decide: resolve }))
  return { asked, handler }
}

function failureOf(result: ToolExecutionResult): string {
  expect(result.isError).toBe(true)
  return result.isError ? result.error.message : ''
}

function valueOf(result: ToolExecutionResult): unknown {
  expect(result.isError, result.isError ? result.error.message : '').toBe(false)
  return (result as { value: { result?: unknown } }).value.result
}

/** Writes a sub-call's record as the run's own durable wrapper would have (its secret read from the parked record). */
async function putCallRecord(store: DurableStore, run: string, n: number, call: { state: 'started' | 'done'; name: string; arguments: JsonValue; value?: JsonValue }) {
  const { secret } = (JSON.parse((await store.get(`runs/${run}`))!.value) as { park: { secret: string } }).park
  const record = { state: call.state, name: call.name, args: await argumentsHash(call.arguments), run: secret, ...(call.value === undefined ? {} : { value: call.value }) }
  await store.put(`calls/${run}/${n}`, JSON.stringify(record))
}

const PROGRAM = `
  const a = await tools.effect({ tag: 'before' })
  const paid = await tools.pay({ cents: 500 })
  const b = await tools.effect({ tag: 'after' })
  return { a, paid, b }
`

describe('exactly-once records answer only the run\'s own calls', () => {
  const sandbox = createSandboxRuntime({ memoryMb: 32, prespawn: 0, parkAfterMs: 30 })
  disposers.push(() => sandbox.dispose())

  /** Starts PROGRAM as `callId` in a fresh process and waits until it is parked, waiting on pay (call 2). */
  async function parkedRun(callId: string) {
    const store = createMemoryStore()
    const approvals = manualApprovals()
    const process = processOn(store, approvals.handler, sandbox)
    const result = process.runtime.execute({ callId, name: 'run_code', arguments: { code: PROGRAM, description: 'pay' }, signal: new AbortController().signal })
    await until(async () => (await keys(store, 'runs/')).length === 1 && approvals.asked.length === 1)
    return { store, approvals, process, result }
  }

  const direct = (runtime: ToolRuntime, callId: string, tag: string) =>
    runtime.execute({ callId, name: 'effect', arguments: { tag }, signal: new AbortController().signal })

  it('a direct call under a run\'s sub-call id is not answered from the run\'s record (it runs, as the call it is)', async () => {
    const { store, process } = await parkedRun('victim-read')
    await putCallRecord(store, 'victim-read', 3, { state: 'done', name: 'effect', arguments: { tag: 'secret' }, value: 'the run\'s private result' })
    const result = await direct(process.runtime, 'victim-read:code:3', 'secret')
    expect(result).toMatchObject({ isError: false, value: 'did effect secret' })
    expect(process.ran).toContain('effect {"tag":"secret"}')
  })

  it('a direct call under a run\'s sub-call id cannot pre-fill its record: the run\'s own call runs and gets its own result', async () => {
    const { store, approvals, process, result } = await parkedRun('victim-fill')
    // The attacker's call, under the number the run will give its next call.
    const planted = await direct(process.runtime, 'victim-fill:code:3', 'planted')
    expect(planted).toMatchObject({ isError: false, value: 'did effect planted' })
    expect(await keys(store, 'calls/victim-fill/')).toEqual([])
    approvals.asked[0]!.decide(true)
    expect(valueOf(await result)).toEqual({ a: 'did effect before', paid: 'did pay 500', b: 'did effect after' })
    expect(process.ran).toEqual(['effect {"tag":"before"}', 'effect {"tag":"planted"}', 'pay {"cents":500}', 'effect {"tag":"after"}'])
  })

  it('a record of other arguments under a call\'s number fails the call REPLAY_DIVERGED (the program sees it), and nothing runs', async () => {
    for (const [name, args] of [['effect', { tag: 'other' }], ['pay', { cents: 500 }]] as const) {
      const { store } = await parkedRun(`diverged-${name}`)
      // The previous process made call 3 as something else before it died.
      await putCallRecord(store, `diverged-${name}`, 2, { state: 'done', name: 'pay', arguments: { cents: 500 }, value: 'paid' })
      await putCallRecord(store, `diverged-${name}`, 3, { state: 'done', name, arguments: args, value: 'recorded' })
      const approvals = manualApprovals()
      const b = processOn(store, approvals.handler, sandbox)
      const codes: string[] = []
      b.runtime.on('tools/result', (execution, outcome) => {
        if (execution.name === 'effect' && outcome.isError) codes.push(String(outcome.error.info?.code))
      })
      const [resumed] = await b.runtime.resumeRuns({ staleMs: 0 })
      await until(() => approvals.asked.length === 1)
      approvals.asked[0]!.decide(true)
      const message = failureOf((await resumed!.result) as ToolExecutionResult)
      expect(message).toMatch(/ToolCallError: the run's call 3 replayed as effect, but its record holds a call of (effect with other arguments|pay)/)
      expect(codes).toEqual(['REPLAY_DIVERGED'])
      expect(b.ran).toEqual([])
    }
  })
})

describe('a replay that branches differently asks anew (it never inherits the decision of the previous call N)', () => {
  // Call 1 asks and parks; allowed, the run goes on live: Math.random() picks call 2, which
  // asks and is allowed at once (no second park), then call 3 keeps the run busy. After a
  // crash (the process just stops) or a graceful stop, the run is resumed from its park:
  // the live read answers otherwise, and call 2 is another tool on another file.
  const PROGRAM_BRANCHING = `
    await tools.pay({ cents: 1 })
    if (Math.random() < 0.5) await tools.write_file({ path: 'notes/two.md' })
    else await tools.edit_file({ path: 'src/index.ts' })
    await tools.hang({})
    return 'done'
  `

  for (const stop of ['crash', 'graceful stop'] as const) {
    it(`after a ${stop}: call 2 is edit_file src/index.ts where the person allowed write_file notes/two.md → a new request; nothing runs without it`, async () => {
      const store = createMemoryStore()
      const codeA = createQuickJsRuntime({ parkAfterMs: 200 })
      const brokerA = createApprovalBroker({ store, pollIntervalMs: 20 })
      disposers.push(() => brokerA.dispose(), () => codeA.dispose())
      const a = processOn(store, brokerA.handler, codeA)
      // The person allows what they are shown, at once.
      brokerA.subscribe((event) => {
        if (event.type === 'requested' && event.approval.name === 'write_file') void brokerA.decide(event.approval.id, { decision: 'allow' })
      })
      vi.spyOn(Math, 'random').mockReturnValue(0.25)
      const callId = `branching-${stop.replace(' ', '-')}`
      void a.runtime.execute({ callId, name: 'run_code', arguments: { code: PROGRAM_BRANCHING, description: 'branches' }, signal: new AbortController().signal })
      await until(async () => (await keys(store, 'runs/')).length === 1)
      const [pay] = await brokerA.pending()
      expect(pay).toMatchObject({ callId: `${callId}:code:1`, name: 'pay' })
      await brokerA.decide(pay!.id, { decision: 'allow' })
      await until(() => a.ran.includes('write_file {"path":"notes/two.md"}'))
      expect(a.ran).toEqual(['pay {"cents":1}', 'write_file {"path":"notes/two.md"}'])
      if (stop === 'graceful stop') {
        await a.runtime.dispose()
        await brokerA.dispose()
      }

      vi.spyOn(Math, 'random').mockReturnValue(0.75)
      const codeB = createQuickJsRuntime({ parkAfterMs: 200 })
      const brokerB: ApprovalBroker = createApprovalBroker({ store, pollIntervalMs: 20 })
      disposers.push(() => brokerB.dispose(), () => codeB.dispose())
      const b = processOn(store, brokerB.handler, codeB)
      const [resumed] = await b.runtime.resumeRuns({ staleMs: 0 })
      let listed: readonly { callId: string; name: string; arguments: unknown; id: string }[] = []
      await until(async () => (listed = (await brokerB.pending()).filter((p) => p.callId === `${callId}:code:2`)).length === 1)
      // A new request, for what the replay asks now; nothing ran meanwhile.
      expect(listed[0]).toMatchObject({ name: 'edit_file', arguments: { path: 'src/index.ts' } })
      expect(b.ran).toEqual([])
      // Allowed, it still does not run: the record says call 2 was write_file.
      await brokerB.decide(listed[0]!.id, { decision: 'allow' })
      expect(failureOf((await resumed!.result) as ToolExecutionResult)).toMatch(/REPLAY|replayed as edit_file, but its record holds a call of write_file/)
      expect(b.ran).toEqual([])
    })
  }
})
