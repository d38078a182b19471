/**
 * Shared set-up for the approval suites: a REAL registry whose `tools/pre-execute` gate
 * asks for `pay` and `write_file`, with the broker as its approval handler. Web
 * standards only, so the suites also run in workerd and Chromium.
 */
import { expect } from 'vitest'
import { createApprovalBroker } from '../../../src/approvals/index.js'
import type { ApprovalBroker, ApprovalBrokerOptions, ApprovalEvent, PendingApproval } from '../../../src/approvals/index.js'
import { createToolRuntime } from '../../../src/registry/index.js'
import type { ToolRuntime, ToolRuntimeOptions } from '../../../src/runtime-types.js'
import { defineTool } from '../../../src/schema/define-tool.js'
import type { ToolExecutionResult } from '../../../src/types.js'
import { until } from '../../support/poll.js'
export { until } from '../../support/poll.js'

/** The tools the gate asks about. */
export const ASKING = new Set(['pay', 'write_file'])

/** A runtime wired to a broker, with `pay` (asks), `write_file` (asks) and `read` (allowed). */
export interface Fixture {
  readonly broker: ApprovalBroker
  readonly runtime: ToolRuntime
  /** Every tool body that ran, in order: `<name>:<json args>`. */
  readonly ran: string[]
  /** Every event the broker emitted, in order. */
  readonly events: ApprovalEvent[]
}

/** Builds a {@link Fixture}. `runtimeOptions` may add a code runtime and a mode. */
export function setup(brokerOptions?: ApprovalBrokerOptions, runtimeOptions: Omit<ToolRuntimeOptions, 'approval'> = {}): Fixture {
  const broker = createApprovalBroker(brokerOptions)
  const runtime = createToolRuntime({ ...runtimeOptions, approvals: broker })
  const ran: string[] = []
  const events: ApprovalEvent[] = []
  broker.subscribe((event) => {
    events.push(event)
  })
  const tool = (name: string, concurrencySafe: boolean) =>
    defineTool({
      name,
      description: `${name} (test)`,
      parameters: { n: { type: 'number' } },
      output: { schema: { type: 'string' }, render: (_args, value) => [{ type: 'text', text: value }] },
      execute: (args) => {
        ran.push(`${name}:${JSON.stringify(args)}`)
        return `${name} done`
      },
      ...(concurrencySafe ? { isConcurrencySafe: () => true } : {}),
    })
  runtime.register(tool('pay', true))
  runtime.register(tool('write_file', false))
  runtime.register(tool('read', true))
  runtime.on('tools/pre-execute', (decision, execution) =>
    ASKING.has(execution.name) ? { kind: 'ask', reason: `${execution.name} needs a person` } : decision,
  )
  return { broker, runtime, ran, events }
}

let seq = 0
/** A fresh call input with its own AbortController. */
export function call(name: string, args: unknown = {}, controller = new AbortController()) {
  return { callId: `call-${++seq}`, name, arguments: args, signal: controller.signal }
}

/** Resolves with the next request the broker opens (then unsubscribes). */
export function nextRequest(broker: ApprovalBroker): Promise<PendingApproval> {
  return new Promise((resolve) => {
    const stop = broker.subscribe((event) => {
      if (event.type !== 'requested') return
      stop()
      resolve(event.approval)
    })
  })
}

/** The failure code of a result, or `OK`. */
export function codeOf(result: ToolExecutionResult): string {
  return result.isError ? String(result.error.info?.code) : 'OK'
}

/** The failure message of a result, or `OK`. */
export function messageOf(result: ToolExecutionResult): string {
  return result.isError ? result.error.message : 'OK'
}

/** Lets queued microtasks and one macrotask run. */
export const tick = (ms = 0): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

let runSeq = 0
/** Starts a `run_code` call of `code` with a fresh call id (`<prefix>-<n>`); returns the id and the pending result. */
export function runCode(runtime: ToolRuntime, code: string, controller = new AbortController(), prefix = 'run') {
  const callId = `${prefix}-${++runSeq}`
  const result = runtime.execute({ callId, name: 'run_code', arguments: { code, description: 'approval test' }, signal: controller.signal })
  return { callId, result }
}

/** The program's return value of a successful run (fails the test, with the message, otherwise). */
export function programResult(result: ToolExecutionResult): unknown {
  expect(result.isError, messageOf(result)).toBe(false)
  return (result as { value: { result?: unknown } }).value.result
}

/** Waits until `broker` lists at least `count` pending requests, and returns them. */
export async function listed(broker: ApprovalBroker, count: number): Promise<readonly PendingApproval[]> {
  let seen = 0
  return until(
    async () => {
      const list = await broker.pending()
      seen = list.length
      return list.length >= count && list
    },
    () => `${count} pending (saw ${seen})`,
  )
}
