/**
 * `createToolRuntime()`: the registry, composed from its parts. Each part lives in its
 * own file with explicit dependencies, and this file only wires them:
 *
 * | part | file | owns |
 * | --- | --- | --- |
 * | options | `options.ts` | validation and defaults |
 * | tool layers | `layers.ts` | global + agent layers, masks, presentation, resolution |
 * | views | `view.ts` | per agent: what it sees, may call natively or from code, `run_code` (`runtime.view`) |
 * | hook bus | `hooks.ts` | listeners by hook, `tools/changed` |
 * | scopes | `scope.ts`, `agents.ts` | registrations and their disposal, the agent facade |
 * | in-flight calls | `in-flight.ts` | cancellation, quiescence, live tokens |
 * | pipeline | `pipeline.ts` (+ `call.ts`, `policy.ts`, `dispatch.ts`, `output.ts`) | the stage table and its loop |
 * | Code Mode link | `code-mode-link.ts` | the registry as `run_code` sees it |
 * | prompt | `assembly.ts` | sections and assembly |
 * | catalogs | `tool-catalog.ts` | each scope's `catalog` and budgeted SDK text |
 * | batches | `batch.ts` | `runToolCalls` |
 * | preflight | `../preflight/` | `runtime.preflight()` and `run_code`'s check |
 *
 * See docs/architecture.md for the map and docs/pipeline.md for the rules.
 *
 * @module
 */
import { createRunCodeTool } from '../code-mode/run-code.js'
import { ToolError } from '../errors.js'
import type { AgentTools, ToolRuntime, ToolRuntimeOptions } from '../runtime-types.js'
import { detachToolDefinition } from '../schema/tool-definition.js'
import type { ScopeKey, ToolExecutionInput, ToolExecutionResult, ToolGuard } from '../types.js'
import { AgentScopes, scopeOperations, type ScopeParts } from './agents.js'
import { PromptSections, assemblePrompt, type AssemblyCore } from './assembly.js'
import { registerBatchPipeline } from './batch.js'
import { createCodeModeLink } from './code-mode-link.js'
import { executionModeOf } from './execution-mode.js'
import { HookBus } from './hooks.js'
import { InFlightCalls } from './in-flight.js'
import { ToolLayers } from './layers.js'
import { validateRuntimeOptions } from './options.js'
import { executePipeline, type PipelineCore } from './pipeline.js'
import type { PipelineSchedule } from './schedule.js'
import { RegistrationScope } from './scope.js'
import { ScopedList } from './scoped-list.js'
import { ToolCatalogs } from './tool-catalog.js'
import { createInlinePreflightEngine } from '../preflight/inline-engine.js'
import { Preflight } from '../preflight/preflight.js'
import { createPlanApproval } from './plan-approval.js'
import type { PreflightReport, PreflightRequest } from '../preflight/types.js'
import { DurableRuns } from '../durable/runs.js'
import { dispatchDefinition } from './dispatch.js'

/**
 * Creates a registry (a `ToolRuntime`): the global layer, agent layers (`runtime.agent(id)`),
 * the execution pipeline, Code Mode's `run_code` and prompt assembly. Options are
 * validated here; a bad option throws `ToolError('INVALID_OPTIONS')`.
 *
 * @example
 * ```ts
 * const runtime = createToolRuntime({ mode: 'native' })
 * runtime.register(defineTool({ name: 'echo', description: 'Echo', parameters: { text: { type: 'string', required: true } },
 *   output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] }, execute: (a) => a.text }))
 * const result = await runtime.execute({ callId: 'c1', name: 'echo', arguments: { text: 'hi' }, signal: AbortSignal.timeout(5000) })
 * ```
 */
export function createToolRuntime(options?: ToolRuntimeOptions): ToolRuntime {
  const settings = validateRuntimeOptions(options)
  let disposing: Promise<void> | undefined
  const isDisposed = (): boolean => disposing !== undefined

  const hooks = new HookBus()
  const layers = new ToolLayers({ defaultMode: settings.mode, transport: () => runCode, onChange: (event) => hooks.emitChanged(event) })
  const guards = new ScopedList<ToolGuard>()
  const sections = new PromptSections()
  const calls = new InFlightCalls()
  const pipeline: PipelineCore = { options: settings, isDisposed, layers, hooks, guards, calls }
  const execute = (input: unknown, schedule?: PipelineSchedule, scopeDisposed = false): Promise<ToolExecutionResult> =>
    executePipeline(pipeline, input, schedule, scopeDisposed)
  const executionMode: ToolRuntime['executionMode'] = (input) => executionModeOf(layers, input)
  // What a program may call (the view's `code`): a native-only tool is neither declared nor found.
  const codeTools = (agent: ScopeKey | undefined) => layers.view(agent).code
  const catalogs = new ToolCatalogs({
    tools: (agent) => codeTools(agent),
    language: () => settings.codeRuntime?.language,
    sdkBudgetChars: settings.sdkBudgetChars,
  })
  hooks.changed.add((event) => catalogs.changed(event), undefined)
  const catalog = (agent: ScopeKey | undefined) => catalogs.catalog(agent)
  // Checked against every tool the agent may call from code, whatever form the prompt's SDK took.
  const preflight = new Preflight({
    engine: settings.preflightEngine ?? createInlinePreflightEngine(),
    tools: (agent) =>
      codeTools(agent).map(({ definition }) => ({ name: definition.name, description: definition.description, parameters: definition.parameters, output: definition.output.schema })),
  })
  // Durable runs: parked states go to the store, and each later sub-call runs at most once (the innermost wrapper records it).
  const durableRuns = settings.store === undefined ? undefined : new DurableRuns(settings.store)
  if (durableRuns !== undefined) {
    hooks.execute.add((view, next) => durableRuns.aroundBody(view.callId, view.name, dispatchDefinition(view)?.idempotent === true, next), undefined)
  }
  const runCode = detachToolDefinition(
    createRunCodeTool(createCodeModeLink({ options: settings, layers, hooks, execute: (input) => execute(input), executionMode, catalog, ...(durableRuns === undefined ? {} : { durable: durableRuns }) }), {
      mode: (agent) => agents.preflightMode(agent) ?? settings.preflight,
      warnChecks: () => settings.preflightEngine !== undefined,
      check: (code, agent, language, signal) => preflight.check(code, agent, language, signal),
      approvePlan: createPlanApproval(pipeline, (agent) => codeTools(agent).map(({ definition }) => definition.name)),
    }),
  )
  const runPreflight = async (request: PreflightRequest): Promise<PreflightReport> => {
    if (typeof request !== 'object' || request === null || typeof request.code !== 'string') throw new ToolError('INVALID_EXECUTION', 'preflight({ code, agent? }): code must be a string')
    if (request.agent !== undefined && typeof request.agent !== 'string') throw new ToolError('INVALID_EXECUTION', 'preflight({ code, agent? }): agent must be a string')
    global.assertLive()
    return preflight.check(request.code, request.agent, settings.codeRuntime?.language ?? 'typescript')
  }
  const assembly: AssemblyCore = { options: settings, layers, sections, assembleListeners: hooks.assemble, catalogs }
  const assemble = (agent: ScopeKey | undefined) => assemblePrompt(assembly, agent)

  const parts: ScopeParts = { layers, hooks, guards, sections, calls, isDisposed, execute: (input, scopeDisposed) => execute(input, undefined, scopeDisposed), assemble, catalog }
  const global = new RegistrationScope(undefined, isDisposed)
  const agents = new AgentScopes(parts)

  const runtime: ToolRuntime = Object.freeze({
    get options() {
      return settings
    },
    ...scopeOperations(parts, global),
    agent: (id: ScopeKey): AgentTools => {
      global.assertLive()
      return agents.get(id)
    },
    get: (name: string, scope?: ScopeKey) => (typeof name === 'string' ? layers.resolve(name, scope)?.definition : undefined),
    schemas: (scope?: ScopeKey) => layers.schemas(scope),
    execute: (input: ToolExecutionInput) => execute(input),
    executionMode,
    presentation: (scope?: ScopeKey) => layers.presentation(scope),
    view: (scope?: ScopeKey) => layers.view(scope).public,
    assemble: (scope?: ScopeKey) => assemble(scope),
    catalog: (scope?: ScopeKey) => catalog(scope),
    preflight: runPreflight,
    resumeRuns: async (resumeOptions?: { readonly staleMs?: number }) => {
      global.assertLive()
      if (durableRuns === undefined) return []
      return durableRuns.resumeAll(
        (callId, agent, args, signal) => execute({ callId, name: 'run_code', arguments: { ...args }, signal, ...(agent === undefined ? {} : { agent }) }),
        resumeOptions,
      )
    },
    dispose: (): Promise<void> => {
      durableRuns?.close()
      disposing ??= (async () => {
        // Parked runs' records land before their calls are cancelled: the next process finds them (and their approvals stay open for it).
        await durableRuns?.flushed()
        await calls.quiesce(new ToolError('DISPOSED', 'the tool runtime was disposed'))
        agents.disposeAll()
        global.disposeRegistrations()
        hooks.emitChanged({ kind: 'dispose' })
        global.disposeListeners()
      })()
      return disposing
    },
  })
  registerBatchPipeline(runtime, (input, schedule) => execute(input, schedule))
  return runtime
}
