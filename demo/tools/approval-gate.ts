/**
 * The demo's approval policy: the tools that change the workspace (`write_file`,
 * `edit_file`) ask a person first. A `tools/pre-execute` gate answering `ask`, added
 * where a registry is set up (`npm start`, the playground's tab), so the demo tools
 * themselves stay policy-free and their own tests run them directly. Portable.
 *
 * @module
 */
import type { PreExecuteListener } from '../../src/runtime-types.js'
import type { Disposer } from '../../src/types.js'

/** The demo tools that ask before they run. */
export const ASKING_DEMO_TOOLS: ReadonlySet<string> = new Set(['write_file', 'edit_file'])

/** The reason a person reads next to Allow / Deny. */
export const WRITE_APPROVAL_REASON = 'changes the workspace'

/** Anything a gate can be added to (a `ToolRuntime` or an agent's `AgentTools`). */
export interface GateScope {
  on(hook: 'tools/pre-execute', listener: PreExecuteListener): Disposer
}

/**
 * Makes `write_file` and `edit_file` ask for approval in `scope` (the registry needs an
 * approval handler, e.g. `createApprovalBroker().handler`; without one, `ask` is denied).
 * Returns the disposer of the gate.
 *
 * The gate reads only the tool's name, so plan approval's probe (`planProbe: true`, empty
 * arguments) hears `ask` for both tools: with a broker made with `{ plans: true }`, a
 * program that writes asks once, before it runs (docs/approvals.md, "Plan approval").
 */
export function askBeforeWriting(scope: GateScope): Disposer {
  return scope.on('tools/pre-execute', (decision, execution) =>
    ASKING_DEMO_TOOLS.has(execution.name) && decision.kind === 'allow' ? { kind: 'ask', reason: WRITE_APPROVAL_REASON } : decision,
  )
}
