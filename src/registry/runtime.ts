/**
 * `createToolRuntime()`: wires the registry's parts (each in its own file, sharing one
 * `RegistryContext`) and what the runtime owns for its callers: its approval broker and
 * event hub. docs/architecture.md maps the parts.
 * @module
 */
import { RUN_CODE_TOOL_NAME } from '../code-mode/registry-seam.js'
import { createRunCodeTool } from '../code-mode/run-code.js'
import { ToolError } from '../errors.js'
import type { AgentTools, ToolRuntime, ToolRuntimeOptions } from '../runtime-types.js'
import { detachToolDefinition } from '../schema/tool-definition.js'
import type { ScopeKey, ToolExecutionInput, ToolExecutionResult, ToolGuard } from '../types.js'
import { AgentScopes, scopeOperations } from './agents.js'
import { assemblePrompt } from './assembly.js'
import { registerBatchPipeline } from './batch.js'
import { createCodeModeLink } from './code-mode-link.js'
import type { ExecuteHow, RegistryContext } from './context.js'
import { executionModeOf } from './execution-mode.js'
import { HookBus } from './hooks.js'
import { InFlightCalls } from './in-flight.js'
import { ToolLayers } from './layers.js'
import { validateRuntimeOptions } from './options.js'
import { executePipeline } from './pipeline.js'
import { checkAgent, RegistrationScope } from './scope.js'
import { PromptSections } from './prompt-sections.js'
import { ScopedList } from './scoped-list.js'
import { ToolCatalogs } from './tool-catalog.js'
import { createInlinePreflightEngine } from '../preflight/inline-engine.js'
import { Preflight } from '../preflight/preflight.js'
import { createPlanApproval } from './plan-approval.js'
import type { PreflightReport, PreflightRequest } from '../preflight/types.js'
import { DurableRuns } from '../durable/runs.js'
import { resolveRunServiceOptions, RunService } from '../durable/run-service.js'
import { dispatchDefinition } from './dispatch.js'
import { Telemetry } from '../telemetry/telemetry.js'
import { createApprovalBroker } from '../approvals/broker.js'
import { createSessionLogHub } from '../http/session-log-hub.js'
import type { ApprovalBroker } from '../approvals/types.js'
import type { SessionLogHub } from '../runtime-types.js'

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
  const { settings, approvals, events, owned } = configure(validateRuntimeOptions(options))
  let disposing: Promise<void> | undefined

  const hooks = new HookBus()
  const layers = new ToolLayers({ defaultMode: settings.mode, transport: () => runCode, onChange: (event) => hooks.emitChanged(event) })
  // Durable runs: parked states go to the store, and each later sub-call runs at most once (the innermost wrapper records it).
  const durableRuns = settings.store === undefined ? undefined : new DurableRuns(settings.store)
  if (durableRuns !== undefined) {
    // Stryker disable next-line OptionalChaining: a tools/execute wrapper is always handed the dispatch's own view, whose definition is always found
    hooks.execute.add((view, next) => durableRuns.aroundBody(view, dispatchDefinition(view)?.idempotent === true, next), undefined)
  }
  const runs = new RunService(
    settings.store,
    durableRuns,
    async (staleMs) => {
      global.assertLive()
      return durableRuns === undefined
        ? []
        : durableRuns.resumeAll(
            // Stryker disable next-line ConditionalExpression: an execution input whose agent is undefined is read as one without an agent (call.ts)
            (callId, agent, args, signal, principal, trace) => {
              // Before its first step: a decision that lands while the tables adopt it must not lose its frames.
              runs.starting(callId)
              return context.execute({ callId, name: RUN_CODE_TOOL_NAME, arguments: { ...args }, signal, ...(agent === undefined ? {} : { agent }), ...(principal === undefined ? {} : { principal }), ...(trace === undefined ? {} : { trace }) })
            },
            { staleMs },
          )
    },
    resolveRunServiceOptions(settings.runs),
  )
  // The one context every part receives (each reads the Pick<> it names). Its entries are
  // arrows over parts made right below, which only run once the registry is in use.
  const context: RegistryContext = Object.freeze({
    options: settings,
    isDisposed: () => disposing !== undefined,
    layers,
    hooks,
    guards: new ScopedList<ToolGuard>(),
    sections: new PromptSections(),
    calls: new InFlightCalls(),
    execute: (input: unknown, how?: ExecuteHow) => executePipeline(context, input, how),
    executionMode: (input: Pick<ToolExecutionInput, 'name' | 'arguments' | 'agent'>) => executionModeOf(context, input),
    catalog: (agent: ScopeKey | undefined) => catalogs.catalog(agent),
    sdkText: (agent: ScopeKey | undefined, language: string) => catalogs.sdkText(agent, language),
    assemble: (agent: ScopeKey | undefined) => assemblePrompt(context, agent),
    // Stryker disable next-line ConditionalExpression: its one reader (the Code Mode link) treats a durable key holding undefined as no key
    ...(durableRuns === undefined ? {} : { durable: durableRuns }),
    ...(settings.telemetry === undefined ? {} : { telemetry: new Telemetry(settings.telemetry, () => settings.codeRuntime?.load?.()) }),
  })
  const catalogs = new ToolCatalogs(context)
  hooks.changed.add((event) => catalogs.changed(event), undefined)
  // What a program may call (the view's `code`): a native-only tool is neither declared nor found.
  const codeTools = (agent: ScopeKey | undefined) => layers.view(agent).code
  // Checked against every tool the agent may call from code, whatever form the prompt's SDK took.
  const preflight = new Preflight({
    engine: settings.preflightEngine ?? createInlinePreflightEngine(),
    tools: (agent) =>
      codeTools(agent).map(({ definition }) => ({ name: definition.name, description: definition.description, parameters: definition.parameters, output: definition.output.schema })),
  })
  const runCode = detachToolDefinition(
    createRunCodeTool(createCodeModeLink(context), {
      mode: (agent) => agents.preflightMode(agent) ?? settings.preflight,
      warnChecks: () => settings.preflightEngine !== undefined,
      // By the layer the id resolves to: made-up ids share the global scope's declarations.
      check: (code, agent, language, signal) => preflight.check(code, layers.layerOf(agent), language, signal),
      approvePlan: createPlanApproval(context),
    }),
  )
  const runPreflight = async (request: PreflightRequest): Promise<PreflightReport> => {
    if (typeof request !== 'object' || request === null || typeof request.code !== 'string') throw new ToolError('INVALID_EXECUTION', 'preflight({ code, agent? }): code must be a string')
    if (request.agent !== undefined && typeof request.agent !== 'string') throw new ToolError('INVALID_EXECUTION', 'preflight({ code, agent? }): agent must be a string')
    global.assertLive()
    return preflight.check(request.code, layers.layerOf(request.agent), settings.codeRuntime?.language ?? 'typescript')
  }

  const global = new RegistrationScope(undefined, context.isDisposed)
  const agents = new AgentScopes(context)

  const runtime: ToolRuntime = Object.freeze({
    get options() {
      return settings
    },
    approvals,
    events,
    ...scopeOperations(context, global),
    agent: (id: ScopeKey): AgentTools => {
      global.assertLive()
      return agents.get(id)
    },
    // Stryker disable next-line ConditionalExpression: a view resolves names through a Map keyed by string, which finds nothing for any other value
    get: (name: string, scope?: ScopeKey) => (typeof name === 'string' ? layers.resolve(name, checkAgent(scope, 'get'))?.definition : undefined),
    schemas: (scope?: ScopeKey) => layers.schemas(checkAgent(scope, 'schemas')),
    // The input only: a caller cannot pass a schedule or a scope state.
    execute: (input: ToolExecutionInput) => context.execute(input),
    executionMode: context.executionMode,
    presentation: (scope?: ScopeKey) => layers.presentation(checkAgent(scope, 'presentation')),
    view: (scope?: ScopeKey) => layers.view(checkAgent(scope, 'view')).public,
    assemble: (scope?: ScopeKey) => context.assemble(checkAgent(scope, 'assemble')),
    catalog: (scope?: ScopeKey) => context.catalog(checkAgent(scope, 'catalog')),
    preflight: runPreflight,
    resumeRuns: async (resumeOptions?: { readonly staleMs?: number }) => {
      global.assertLive()
      return [...(await runs.resume(resumeOptions)).resumed]
    },
    runs,
    dispose: (): Promise<void> => {
      durableRuns?.close()
      runs.close()
      context.telemetry?.dispose()
      disposing ??= (async () => {
        // Parked runs' records land before their calls are cancelled: the next process finds them (and their approvals stay open for it).
        await durableRuns?.flushed()
        await context.calls.quiesce(new ToolError('DISPOSED', 'the tool runtime was disposed'))
        // The tables' runs end after their calls: their last records and snapshots land before the store is let go.
        await runs.drained()
        // After the calls: a parked run's waiting call leaves its request open in the store for the next process.
        await owned?.dispose()
        agents.disposeAll()
        global.disposeRegistrations()
        hooks.emitChanged({ kind: 'dispose' })
        global.disposeListeners()
      })()
      return disposing
    },
  })
  registerBatchPipeline(runtime, context.execute)
  return runtime
}

type Settings = ReturnType<typeof validateRuntimeOptions>

/**
 * What the runtime makes for itself: its event hub (a `sessionLog` sink hears each event
 * first) and, with `approvals` options, its broker over the runtime's store. A broker or a
 * hub passed in is used as it is, and stays the caller's.
 */
function configure(validated: Settings): { settings: Settings; approvals: ApprovalBroker | undefined; events: SessionLogHub; owned: ApprovalBroker | undefined } {
  const given = validated.sessionLog
  const events = isHub(given) ? given : createSessionLogHub(given === undefined ? {} : { forward: given })
  const asked = validated.approvals
  if (asked !== undefined && validated.approval !== undefined) {
    throw new ToolError('INVALID_OPTIONS', 'createToolRuntime: give either approvals (the runtime\'s broker) or approval (your own handler), not both')
  }
  const passed = isBroker(asked) ? asked : undefined
  const owned = asked === undefined || isBroker(asked) ? undefined : createApprovalBroker({ ...(validated.store === undefined ? {} : { store: validated.store }), ...asked })
  const approvals = passed ?? owned
  const settings: Settings = Object.freeze({ ...validated, sessionLog: events, ...(approvals === undefined ? {} : { approval: approvals.handler }) })
  return { settings, approvals, events, owned }
}

function isHub(sink: unknown): sink is SessionLogHub {
  return typeof (sink as Partial<SessionLogHub> | undefined)?.subscribe === 'function'
}

function isBroker(value: unknown): value is ApprovalBroker {
  const broker = value as Partial<ApprovalBroker> | undefined
  return typeof broker?.handler === 'function' && typeof broker.pending === 'function' && typeof broker.decide === 'function'
}
