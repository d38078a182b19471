/**
 * "This tab": the registry, the demo tools and the sandboxes (QuickJS and MicroPython in
 * Web Workers), all in the page. One agent per presentation mode (as the server does), so each mode's
 * prompt and visibility can be shown side by side. A program run here reaches nothing
 * of the page: not its origin (`fetch`), not its storage, not the token the page holds.
 *
 * The writing tools ask for approval here too: an approval broker in the page holds each
 * request, and the page's Allow / Deny buttons answer it (`decide`). With plan approval on
 * (`setPlanApproval(true)`, the page's "Approve" control; off by default, as on the
 * server), a program whose planned tools ask is put to the person once, before it runs,
 * as a plan card (docs/approvals.md, "Plan approval").
 *
 * A thin `CodeRuntime` wrapper sits between the registry and each sandbox: it
 * streams the run's console lines to the page (the `run_code` bridge does not forward
 * `onLog`), keeps the runtime's stats for the status line, and swaps in a runtime with
 * new budgets when the settings change.
 *
 * @module
 */
import { createSandboxRuntime } from '../../platforms/browser/index.js'
import type { SandboxRuntime } from '../../platforms/browser/index.js'
import type { CodeRunRequest, CodeRunResult, CodeRuntime } from '../../src/code-runtime/contract.js'
import type { JsonValue } from '../../src/json/json-value.js'
import { createApprovalBroker } from '../../src/approvals/index.js'
import type { ApprovalEvent } from '../../src/approvals/index.js'
import type { ApprovalHandler } from '../../src/types.js'
import { createToolRuntime } from '../../src/registry/index.js'
import type { SessionLogEvent, ToolRuntime } from '../../src/runtime-types.js'
import type { ToolExecutionResult, ToolPresentationMode } from '../../src/types.js'
import { askBeforeWriting } from '../tools/approval-gate.js'
import { registerDemoTools } from '../tools/index.js'
import type { ApprovalListener, Backend, ProgramLanguage, RunBudgets, RunListener, RunOutcome } from './backend.js'

/** The in-tab backend plus the registry itself (the page reads schemas, SDK and prompts from it). */
export interface LocalBackend extends Backend {
  readonly runtime: ToolRuntime
  /** Boots the sandbox's first worker ahead of the first run. */
  warm(): Promise<void>
  /** Simulated latency added to every tool call in the tab: `[min, max]` ms, or `undefined` for none. */
  setLatency(range: readonly [number, number] | undefined): void
  /** `true`: a program whose planned tools ask is put to the person once, before it runs (a plan card). Default `false`. */
  setPlanApproval(on: boolean): void
}

interface ActiveRun {
  readonly callId: string
  readonly listener: RunListener
  stats?: CodeRunResult['stats']
}

/** Hands a broker event to whoever waits on that call: the run (its sub-calls) or a native call. */
function forward(event: ApprovalEvent, listeners: ReadonlyMap<string, ApprovalListener>): void {
  const { approval } = event
  const listener = listeners.get(approval.parentCallId ?? approval.callId)
  if (listener === undefined) return
  if (event.type === 'requested') {
    listener.approval(approval)
    return
  }
  const base = { id: approval.id, callId: approval.callId, at: event.at }
  listener.approvalSettled(
    event.type === 'decided'
      ? { ...base, outcome: event.decision, ...(event.reason === undefined ? {} : { reason: event.reason }) }
      : { ...base, outcome: event.type },
  )
}

/** One language's sandbox of the tab, swapped for a new one when the budgets change. */
interface TabSandbox {
  readonly tap: CodeRuntime
  renew(budgets: RunBudgets): void
  warm(): Promise<void>
}

/**
 * A sandbox of `language` behind a thin `CodeRuntime` that streams the run's console lines
 * to the page and keeps its stats (`active()` is the run being shown).
 */
function tabSandbox(language: ProgramLanguage, initial: RunBudgets, active: () => ActiveRun | undefined): TabSandbox {
  const make = (budgets: RunBudgets): SandboxRuntime => createSandboxRuntime({ language, computeMs: budgets.computeMs, maxWallMs: budgets.maxWallMs })
  let sandbox = make(initial)
  const tap: CodeRuntime = {
    language,
    isolation: sandbox.isolation,
    capabilities: sandbox.capabilities,
    async run(request: CodeRunRequest): Promise<CodeRunResult> {
      const run = active()
      const result = await sandbox.run({
        ...request,
        onLog: (entry) => {
          request.onLog?.(entry)
          run?.listener.log(entry)
        },
      })
      if (run !== undefined) run.stats = result.stats
      return result
    },
    dispose: () => sandbox.dispose(),
  }
  return {
    tap,
    renew(budgets) {
      const old = sandbox
      sandbox = make(budgets)
      void old.dispose()
    },
    warm: () => sandbox.warm(),
  }
}

/** Creates the registry + demo tools + sandboxes (TypeScript and Python) of this tab. */
export function createLocalBackend(initial: RunBudgets): LocalBackend {
  let budgets = initial
  let active: ActiveRun | undefined
  let counter = 0
  const typescript = tabSandbox('typescript', initial, () => active)
  const python = tabSandbox('python', initial, () => active)

  const useBudgets = (next: RunBudgets): void => {
    if (next.computeMs === budgets.computeMs && next.maxWallMs === budgets.maxWallMs) return
    budgets = next
    typescript.renew(next)
    python.renew(next)
  }

  // The runs and native calls waiting to hear about their approvals, by call id.
  const waiting = new Map<string, ApprovalListener>()
  // The broker takes plans; whether the registry sends it any is the handler's
  // `acceptsPlans`, read at each run, so the page can turn plan approval on and off.
  const broker = createApprovalBroker({ plans: true })
  broker.subscribe((event) => forward(event, waiting))
  let plans = false
  const handler: ApprovalHandler = Object.defineProperty((request: Parameters<ApprovalHandler>[0]) => broker.handler(request), 'acceptsPlans', {
    get: () => plans,
  })

  const runtime = createToolRuntime({
    mode: 'both',
    codeRuntime: typescript.tap,
    codeRuntimes: [python.tap],
    approval: handler,
    sessionLog: {
      append(event: SessionLogEvent) {
        const run = active
        if (run === undefined || event.parentCallId !== run.callId) return
        if (event.type === 'tool/code-dispatch-start') run.listener.dispatchStart(event)
        else if (event.type === 'tool/code-dispatch') run.listener.dispatch(event)
      },
    },
  })
  registerDemoTools(runtime)
  askBeforeWriting(runtime)
  for (const mode of ['native', 'code', 'both'] as const) runtime.agent(mode).presentAs(mode)

  // The demo tools answer from memory in microseconds; a little simulated latency makes
  // the scheduler's overlap and barriers visible on the timeline. Abortable, like real I/O.
  let latency: readonly [number, number] | undefined = [40, 120]
  runtime.on('tools/execute', async (execution, next) => {
    const range = latency
    if (range !== undefined && execution.name !== 'run_code') {
      const ms = range[0] + Math.random() * (range[1] - range[0])
      await new Promise<void>((resolve, reject) => {
        const signal = execution.signal
        const timer = setTimeout(() => {
          signal.removeEventListener('abort', onAbort)
          resolve()
        }, ms)
        const onAbort = (): void => {
          clearTimeout(timer)
          reject(signal.reason)
        }
        if (signal.aborted) onAbort()
        else signal.addEventListener('abort', onAbort, { once: true })
      })
    }
    return next()
  })

  return {
    where: 'tab',
    runtime,
    warm: () => typescript.warm(),
    setLatency(range) {
      latency = range
    },
    setPlanApproval(on) {
      plans = on
    },
    async run(code: string, language: ProgramLanguage, mode: ToolPresentationMode, next: RunBudgets, listener: RunListener, signal: AbortSignal): Promise<RunOutcome> {
      useBudgets(next)
      const run: ActiveRun = { callId: `tab-run-${++counter}`, listener }
      active = run
      waiting.set(run.callId, listener)
      try {
        const result = await runtime.execute({
          callId: run.callId,
          name: 'run_code',
          arguments: { code, language, description: 'a playground run' },
          signal,
          agent: mode,
        })
        return { result, ...(run.stats === undefined ? {} : { stats: run.stats }), streamedLogs: true }
      } finally {
        if (active === run) active = undefined
        waiting.delete(run.callId)
      }
    },
    async execute(name: string, args: JsonValue, mode: ToolPresentationMode, signal: AbortSignal, approvals?: ApprovalListener): Promise<ToolExecutionResult> {
      const callId = `tab-call-${++counter}`
      if (approvals !== undefined) waiting.set(callId, approvals)
      try {
        return await runtime.execute({ callId, name, arguments: args, signal, agent: mode })
      } finally {
        waiting.delete(callId)
      }
    },
    async decide(id: string, decision: 'allow' | 'deny'): Promise<void> {
      const answer = await broker.decide(id, { decision })
      if (!answer.ok) throw new Error(`${answer.code}: ${answer.message}`)
    },
  }
}
