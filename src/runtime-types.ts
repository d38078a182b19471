/**
 * The public shape of the registry (`ToolRuntime`): scopes, the pipeline entry, hooks and
 * their payloads, prompt assembly, the runtime's broker and events, and its options.
 * @module
 */
import type { ToolTelemetryOptions } from './telemetry/types.js'
import type { JsonValue } from './json/json-value.js'
import type { CodeLogEntry, CodeRuntime } from './code-runtime/contract.js'
import type { DurableStore } from './durable/store.js'
import type { ApprovalBroker, ApprovalBrokerOptions } from './approvals/types.js'
import type { RunService, RunServiceOptions } from './durable/run-service.js'
import type { ResumedRun } from './durable/runs.js'
import type { PreflightEngine, PreflightMode, PreflightReport, PreflightRequest } from './preflight/types.js'
import type {
  AnyToolDefinition,
  ApprovalHandler,
  ContentBlock,
  Disposer,
  PostToolDecision,
  PreToolDecision,
  ScopeKey,
  ToolDispatchExecution,
  ToolExecution,
  ToolExecutionInput,
  ToolExecutionMode,
  ToolExecutionResult,
  ToolCaller,
  ToolFilter,
  ToolGuard,
  ToolPresentationMode,
  ToolSchema,
} from './types.js'

// ───────────────────────── hooks ─────────────────────────

/** `tools/pre-execute`: a reorderable waterfall; each listener receives the previous decision. */
export type PreExecuteListener = (
  decision: PreToolDecision,
  execution: ToolExecution,
) => PreToolDecision | Promise<PreToolDecision>

/**
 * `tools/execute`: an around-dispatch wrapper. Call `next()` to run the inner wrappers
 * and the body; it resolves to the body's canonical value or rejects with the body's
 * error. A wrapper may replace `execution.signal` (only that) and may return a value of
 * its own, which the registry normalizes through the tool's output declaration.
 */
export type ExecuteWrapper = (execution: ToolDispatchExecution, next: () => Promise<JsonValue>) => Promise<JsonValue>

/** `tools/post-execute`: a waterfall over the decision for a dispatched call's normalized result. */
export type PostExecuteListener = (
  decision: PostToolDecision,
  execution: ToolExecution,
  result: ToolExecutionResult,
) => PostToolDecision | Promise<PostToolDecision>

/** `tools/result`: observe-only; sees the frozen final outcome. A throw never changes it. */
export type ResultListener = (execution: ToolExecution, result: ToolExecutionResult) => void

/** What changed in the registry. */
export interface ToolsChangedEvent {
  readonly kind: 'register' | 'unregister' | 'restrict' | 'unrestrict' | 'present-as' | 'dispose'
  /** The agent whose layer changed; absent for the global layer. */
  readonly agent?: ScopeKey
  /** The tool name, for register / unregister. */
  readonly name?: string
}

/** `tools/changed`: an unfiltered notification on every registry change. */
export type ToolsChangedListener = (event: ToolsChangedEvent) => void

/** A Code Mode sub-call as the session log records it. */
export interface CodeDispatchStartEvent {
  readonly type: 'tool/code-dispatch-start'
  /** The outer `run_code` call id. */
  readonly parentCallId: string
  /** `<parentCallId>:code:<n>`, numbered by submission from 1. */
  readonly subCallId: string
  readonly name: string
  /** The lossless-JSON arguments exactly as dispatched. */
  readonly arguments: JsonValue
  readonly agent?: ScopeKey
  /** `Date.now()` at pipeline entry. */
  readonly startedAt: number
}

/** A settled Code Mode sub-call: the model-facing outcome in the `tools/result` vocabulary. */
export interface CodeDispatchEvent {
  readonly type: 'tool/code-dispatch'
  readonly parentCallId: string
  readonly subCallId: string
  readonly name: string
  readonly arguments: JsonValue
  readonly agent?: ScopeKey
  readonly isError: boolean
  readonly content: readonly ContentBlock[]
  readonly error?: { readonly message: string; readonly code?: string }
  readonly startedAt: number
  readonly settledAt: number
  readonly durationMs: number
}

/**
 * A Code Mode sub-call's `ask` was put to its approval handler (a person, through a
 * broker). One per asked sub-call, followed by exactly one {@link ApprovalDecisionEvent}.
 */
export interface ApprovalRequestEvent {
  readonly type: 'tool/approval-request'
  /** The outer `run_code` call id. */
  readonly parentCallId: string
  /** The asking sub-call: `<parentCallId>:code:<n>`. */
  readonly subCallId: string
  readonly name: string
  /** The sub-call's lossless-JSON arguments. */
  readonly arguments: JsonValue
  readonly agent?: ScopeKey
  /** The gate's reason for asking, when it gave one. */
  readonly reason?: string
  /** `Date.now()` when the handler was called. */
  readonly requestedAt: number
}

/** How an approval request ended. */
export type ApprovalOutcome = 'allow' | 'deny' | 'withdrawn'

/** The answer to an {@link ApprovalRequestEvent}, with its time. */
export interface ApprovalDecisionEvent {
  readonly type: 'tool/approval-decision'
  readonly parentCallId: string
  readonly subCallId: string
  readonly name: string
  readonly agent?: ScopeKey
  /**
   * `allow`: the sub-call goes on; `deny`: it ends with `DENIED_BY_APPROVAL` (refused,
   * expired, the handler failed); `withdrawn`: it was cancelled while it waited
   * (`ABORTED_BEFORE_DISPATCH`: the run ended or was aborted).
   */
  readonly decision: ApprovalOutcome
  /** For `deny`: the result's error message (the person's reason, or why it expired). */
  readonly message?: string
  readonly requestedAt: number
  /** `Date.now()` when the handler settled (or the sub-call was cancelled). */
  readonly decidedAt: number
  /** How long the sub-call waited for a person: `decidedAt − requestedAt` (not charged to the run's wall clock). */
  readonly waitedMs: number
}

/**
 * A `run_code` program's plan was put to the approval handler before it ran (plan
 * approval, docs/approvals.md). One per asked plan, followed by exactly one
 * {@link PlanApprovalDecisionEvent}. Bounded (`boundPlanForLog`): the program as head and
 * tail, at most 100 planned calls and 100 asking tools, notes cut; the counts say what
 * was left out.
 */
export interface PlanApprovalRequestEvent {
  readonly type: 'tool/plan-approval-request'
  /** The `run_code` call whose program asks. */
  readonly parentCallId: string
  /** `<parentCallId>:plan`: the one plan request of the run (every session log event names what it is about). */
  readonly subCallId: string
  /** `run_code`: the call that asks. */
  readonly name: string
  readonly agent?: ScopeKey
  /** The program: whole up to 4,096 characters, else its head and tail around a marker that says how much was left out. */
  readonly code: string
  /** The program's whole length in characters. */
  readonly codeChars: number
  /** The model's summary (`run_code`'s `description`), cut at 300 characters. */
  readonly description: string
  /** The first planned calls, in source order. */
  readonly calls: readonly { readonly name: string; readonly line: number; readonly column: number }[]
  /** How many planned calls the program has (`calls` lists at most 100). */
  readonly callCount: number
  /** The planned tools whose gate asks, with the gate's reason (cut at 300 characters). */
  readonly asking: readonly { readonly name: string; readonly reason?: string }[]
  /** How many planned tools ask (`asking` lists at most 100). */
  readonly askingCount: number
  readonly dynamic: boolean
  /** The request's reason, as the handler received it. */
  readonly reason: string
  readonly requestedAt: number
}

/** The answer to a {@link PlanApprovalRequestEvent}. */
export interface PlanApprovalDecisionEvent {
  readonly type: 'tool/plan-approval-decision'
  readonly parentCallId: string
  readonly subCallId: string
  readonly name: string
  readonly agent?: ScopeKey
  /** `allow`: the program runs; `deny`: the run ended before anything ran; `withdrawn`: the run was cancelled while its plan waited. */
  readonly decision: ApprovalOutcome
  /** For `deny` and `withdrawn`: the error message the run ended with. */
  readonly message?: string
  /** The tools pre-approved for the run (empty for a dynamic plan or a refusal). */
  readonly granted: readonly string[]
  readonly requestedAt: number
  readonly decidedAt: number
  readonly waitedMs: number
}

/** Everything the session log sink receives. */
export type SessionLogEvent = CodeDispatchStartEvent | CodeDispatchEvent | ApprovalRequestEvent | ApprovalDecisionEvent | PlanApprovalRequestEvent | PlanApprovalDecisionEvent

/**
 * A console line of a running program, attributed to its `run_code` call, delivered as
 * it is written (live streaming only: the durable record is the run's result).
 */
export interface CodeLogEvent {
  readonly type: 'tool/code-log'
  /** The `run_code` call id. */
  readonly parentCallId: string
  readonly entry: CodeLogEntry
}

/** Where durable log events go (an in-memory sink is provided). */
export interface SessionLogSink {
  append(event: SessionLogEvent): void
  /** Optional: receives each console line of a running program as it is written. */
  appendLog?(event: CodeLogEvent): void
}

/** What a hub delivers to subscribers. */
export type SessionLogHubEvent = SessionLogEvent | CodeLogEvent

/** A subscriber; a throw is contained and never reaches the appender or other subscribers. */
export type SessionLogHubListener = (event: SessionLogHubEvent) => void

/** Narrows a subscription. */
export interface SessionLogSubscribeOptions {
  /** Only events whose `parentCallId` equals this (one run's sub-calls). */
  readonly parentCallId?: string
}

/** A {@link SessionLogSink} with live subscriptions. */
export interface SessionLogHub extends SessionLogSink {
  /** Appends a session-log event: forwards it, then delivers it to matching subscribers. */
  append(event: SessionLogEvent): void
  /** Delivers a console line of a run to that run's subscribers (never forwarded). */
  appendLog(event: CodeLogEvent): void
  /** Subscribes; the disposer is idempotent. */
  subscribe(listener: SessionLogHubListener, options?: SessionLogSubscribeOptions): Disposer
  /** How many subscriptions are live (a leak check for servers and tests). */
  readonly subscriberCount: number
  /** How many runs have live subscriptions (each run's entry is released with its last subscription). */
  readonly runCount: number
}

/**
 * `tools/code-dispatch-log`: a waterfall over each `tool/code-dispatch` event before it
 * is appended, so a spill policy can replace oversized content with a preview + locator.
 */
export type CodeDispatchLogListener = (event: CodeDispatchEvent) => CodeDispatchEvent | Promise<CodeDispatchEvent>

/** One ordered section of a system prompt. */
export interface PromptSection {
  /** Stable id, e.g. `tools:sdk`. */
  readonly id: string
  /** Sort key; ties keep registration order. Tool guidance lives in the 100–199 band. */
  readonly order: number
  readonly text: string
}

/** The assembled prompt: ordered sections and the wire tool list. */
export interface PromptAssembly {
  readonly sections: readonly PromptSection[]
  readonly tools: readonly ToolSchema[]
  /** The presentation mode that produced this assembly. */
  readonly mode: ToolPresentationMode
}

/** `system-prompt/assemble`: a waterfall whose returned assembly is authoritative. */
export type AssembleListener = (assembly: PromptAssembly, context: { readonly agent?: ScopeKey }) => PromptAssembly

/** Hook name → listener type. */
export interface ToolHookMap {
  'tools/pre-execute': PreExecuteListener
  'tools/execute': ExecuteWrapper
  'tools/post-execute': PostExecuteListener
  'tools/result': ResultListener
  'tools/changed': ToolsChangedListener
  'tools/code-dispatch-log': CodeDispatchLogListener
  'system-prompt/assemble': AssembleListener
}

/** A hook name. */
export type ToolHookName = keyof ToolHookMap

// ───────────────────────── catalog ─────────────────────────

/** One result of a catalog search: what a program needs to call the tool. */
export interface ToolCatalogHit {
  readonly name: string
  readonly description: string
  /**
   * The tool's declaration in the catalog's `language`: for TypeScript its JSDoc and
   * `tools` member with the argument and output types exactly as the full SDK renders
   * them; for Python its TypedDicts and `Tools` member.
   */
  readonly declaration: string
}

/** Options of {@link ToolCatalog.search}. */
export interface ToolCatalogSearchOptions {
  /** How many hits at most (a positive integer; default 10). */
  readonly limit?: number
}

/**
 * The tools a scope may call, searchable: `runtime.catalog(scope)`, and inside a Code
 * Mode program the `catalog` global. A deterministic lexical ranking (BM25F over names,
 * descriptions and parameters, with stemming and action synonyms; `createCatalog`),
 * built once per change of the scope's tool set and shared by every caller until then.
 */
export interface ToolCatalog {
  /** How many tools it holds. */
  readonly size: number
  /** The language of the declarations: the code runtime's, `typescript` without one. */
  readonly language: string
  /**
   * The tools matching `query` (plain words), best first. Throws
   * `ToolError('INVALID_OPTIONS')` for a query that is not a string or a bad `limit`.
   */
  search(query: string, options?: ToolCatalogSearchOptions): readonly ToolCatalogHit[]
  /** The declaration of the tool `name`, or `undefined` when the scope has no such tool. */
  describe(name: string): string | undefined
  /** "Did you mean": the names closest to `name` (by spelling and shared words), best first; `[]` when none is close. */
  closest(name: string, limit?: number): readonly string[]
}

// ───────────────────────── scopes ─────────────────────────

/** Operations both layers share (the registry itself = the global layer, `agent(id)` = an agent's layer). */
export interface ToolScope {
  /** Registers a tool in this layer. Throws on duplicates, `run_code`, bad output or timeoutMs. */
  register(definition: AnyToolDefinition): Disposer
  /** Adds a monotonic guard (global, or this agent's calls only). */
  guard(guard: ToolGuard): Disposer
  /**
   * Subscribes to a hook. Agent-scope listeners only see that agent's executions
   * (`tools/changed` is never filtered).
   */
  on<K extends ToolHookName>(hook: K, listener: ToolHookMap[K]): Disposer
  /** Adds a static prompt section (global, or this agent's assemblies only). */
  section(section: PromptSection): Disposer
}

/** An agent's layer. */
export interface AgentTools extends ToolScope {
  readonly id: ScopeKey
  /** Masks global tools for this agent (allow or deny, intersecting). */
  restrict(filter: ToolFilter): Disposer
  /** Selects this agent's presentation; a second declaration in this scope throws. */
  presentAs(mode: ToolPresentationMode): Disposer
  /**
   * This agent's preflight mode for `run_code` (`'off' | 'warn' | 'block'`), in place of
   * the runtime's `preflight` option; a second declaration in this scope throws. The
   * disposer (or the agent's disposal) gives the agent the runtime's mode back.
   */
  preflightMode(mode: PreflightMode): Disposer
  /** This agent's resolution of a name (shadowing and masks applied). */
  get(name: string): AnyToolDefinition | undefined
  /** Schemas of everything this agent can see. */
  schemas(): ToolSchema[]
  /**
   * What this agent sees and may call, natively or from code, and whether `run_code` is
   * presented: the same answer as `runtime.view(id)`. Throws `DISPOSED` once the agent
   * (or the registry) is disposed, as this facade's other reads do.
   *
   * @example
   * ```ts
   * const agent = runtime.agent('assistant')
   * if (agent.view().presentsRunCode) prompt.push(agent.assemble())
   * ```
   */
  view(): AgentToolView
  /** Executes with `agent` set to this scope. */
  execute(input: Omit<ToolExecutionInput, 'agent'>): Promise<ToolExecutionResult>
  /** This agent's prompt assembly. */
  assemble(): PromptAssembly
  /** The searchable catalog of what this agent may call (its program's `catalog`). */
  catalog(): ToolCatalog
  /** Disposes everything registered through this scope. */
  dispose(): Promise<void>
}

/** Options of {@link ToolRuntime} creation; validated at construction. */
export interface ToolRuntimeOptions {
  /** Default presentation for agents that declare none. Default `native`. */
  readonly mode?: ToolPresentationMode
  /** The code runtime that runs Code Mode programs (required by `code` / `both` at assembly time). */
  readonly codeRuntime?: CodeRuntime
  /**
   * Code runtimes for more languages than `codeRuntime`'s, one a language (e.g. Python beside
   * TypeScript). A model is shown `codeRuntime`'s language; a `run_code` call whose `language`
   * names one of these (a client's `POST /v1/run` with `"language"`, a playground switch) runs
   * in it, through the same pipeline, approvals and store. They stay yours to dispose.
   */
  readonly codeRuntimes?: readonly CodeRuntime[]
  /**
   * Human approval of `ask` decisions (`runtime.approvals`, which the HTTP app and MCP list
   * and decide): broker options → the runtime creates the broker over `store` (a memory
   * store without one) and disposes it with itself; a broker from `createApprovalBroker()`
   * is used as it is and stays yours. Absent (and no `approval`) → `ask` degrades to deny.
   */
  readonly approvals?: ApprovalBrokerOptions | ApprovalBroker
  /**
   * Your own `ask` handler instead of the runtime's broker (not together with
   * `approvals`). A call's own `approval` overrides either.
   */
  readonly approval?: ApprovalHandler
  /**
   * Receives the Code Mode sub-calls' events: `tool/code-dispatch-start` /
   * `tool/code-dispatch`, and `tool/approval-request` / `tool/approval-decision` for a
   * sub-call put to the approval handler.
   */
  readonly sessionLog?: SessionLogSink
  /** Code Mode binding concurrency. Default 10; 1 restores serial dispatch. */
  readonly maxParallelSubCalls?: number
  /** Cap on run_code's combined serialized logs + result / failure payload. Default 64 MiB. */
  readonly maxOutputBytes?: number
  /** Wire-tool order for prompt assembly; names the mode does not contribute reject assembly. */
  readonly toolOrder?: readonly string[]
  /**
   * The most characters the Code Mode SDK (`tools:sdk`) may take in a prompt: a positive
   * integer, or `Infinity` for no budget. Default 12,000 (≈ 3,000 tokens). When the full
   * SDK for an agent's tools fits, it is used unchanged; otherwise the section becomes
   * the catalog form — the instructions, a compact index of the tools and the `catalog`
   * declarations a program finds them with — aiming for half the budget, namespaces
   * only when the index does not fit (docs/code-mode.md, "Large registries").
   */
  readonly sdkBudgetChars?: number
  /**
   * What `run_code` does with a program's preflight (a type-check against the SDK of
   * every tool the agent may call, plus its call plan; docs/code-mode.md, "Preflight"):
   * `'warn'` (default) runs the program and, when a `preflightEngine` is configured,
   * appends the mistakes that matter to what the model reads if the check has finished
   * by then (a failed run waits up to 2 s for it); `'block'`
   * answers those mistakes as `PREFLIGHT_FAILED` without running anything; `'off'` skips it.
   */
  readonly preflight?: PreflightMode
  /**
   * Where preflight checks run, and with which compiler. Default: no compiler
   * (`createInlinePreflightEngine()`): the plan and a `CHECK_UNAVAILABLE` note, as at the
   * edge. On Node, `createPreflightWorker()` from `toolyard/node` type-checks in a thread
   * (or `createInlinePreflightEngine({ load: loadTypeScript })` in this one). Owned by the
   * caller: `dispose()` leaves it alone.
   */
  readonly preflightEngine?: PreflightEngine
  /**
   * Where durable runs live (docs/durability.md): with a store, a `run_code` run that
   * parks (it waits only for a person, on a code runtime that parks: `createSandboxRuntime`)
   * writes its state here, every sub-call after its first park runs at most once (a
   * recorded result is reused; a body cut off by a crash fails as `INTERRUPTED` unless its
   * tool is `idempotent`), and `runtime.resumeRuns()` in any process sharing the store
   * resumes the runs a dead process left. `createMemoryStore()`, `createFileStore(dir)`
   * (`toolyard/node`), `createDurableObjectStore(storage)` (edge). Owned by the caller.
   */
  readonly store?: DurableStore
  /** The runs' resume loop (`runtime.runs`): how often it sweeps the store, and when a silent process counts as gone. */
  readonly runs?: RunServiceOptions
  /**
   * OpenTelemetry: `{ tracer: trace.getTracer('toolyard'), meter: metrics.getMeter('toolyard') }`
   * from `@opentelemetry/api` (an optional peer). One `execute_tool <name>` span per call,
   * a program's sub-calls its children; see docs/observability.md. Absent: nothing is recorded.
   */
  readonly telemetry?: ToolTelemetryOptions
}

/**
 * One agent's view of the registry (`runtime.view(agent)`): the single answer to which
 * tools it sees, which it may call directly (natively) and which from a `run_code`
 * program, and whether `run_code` is presented. `runtime.schemas`, `runtime.get`,
 * prompt assembly, `/v1/tools`, `/v1/sdk`, MCP `tools/list` and the provider adapters
 * all read it. Immutable: a snapshot of the tool set when it was asked; ask again after
 * a change (it is cached per change, so asking is cheap).
 */
export interface AgentToolView {
  /** The presentation mode in force for the agent. */
  readonly mode: ToolPresentationMode
  /** Whether `run_code` is presented (listed and callable): every mode but `native`. */
  readonly presentsRunCode: boolean
  /** Every tool the agent sees except `run_code`, in catalog order: admitted, unshadowed globals, then its own. */
  readonly tools: readonly ToolSchema[]
  /** The tools a model may call directly, `run_code` aside: none under `code`, else those whose `callers` admit `native`. */
  readonly native: readonly ToolSchema[]
  /** The tools a program may call (the SDK, the `catalog` global, preflight): those whose `callers` admit `code`. */
  readonly code: readonly ToolSchema[]
  /** The catalog (`runtime.schemas`, `GET /v1/tools`): `tools`, then `run_code` where presented. */
  readonly schemas: readonly ToolSchema[]
  /** What a prompt offers the model (before `toolOrder` and assemble listeners): `native`, then `run_code` where presented. */
  readonly wireTools: readonly ToolSchema[]
  /** The definition `name` resolves to for the agent (`runtime.get`): a visible tool, `run_code` where presented, else `undefined`. */
  get(name: string): AnyToolDefinition | undefined
  /**
   * Whether `caller` may call `name`: `native`, a model's direct call (`run_code` where
   * presented, or a tool in `native`); `code`, a program's call (a tool in `code`).
   */
  canCall(name: string, caller: ToolCaller): boolean
}

/** The registry ("tool runtime"): the global layer plus the pipeline. */
export interface ToolRuntime extends ToolScope {
  /** The agent layer for `id` (created on first use, same object afterwards until disposed). */
  agent(id: ScopeKey): AgentTools
  /** Resolution as `scope` sees it. */
  get(name: string, scope?: ScopeKey): AnyToolDefinition | undefined
  /** Schemas of everything `scope` can see (unchanged by presentation, except that `run_code` joins unless it is `native`). */
  schemas(scope?: ScopeKey): ToolSchema[]
  /** Runs one call through the whole pipeline. Never rejects; returns one frozen result. */
  execute(input: ToolExecutionInput): Promise<ToolExecutionResult>
  /** `parallel` only on an exact `true` from the visible definition's classifier. */
  executionMode(input: Pick<ToolExecutionInput, 'name' | 'arguments' | 'agent'>): ToolExecutionMode
  /** The presentation mode in force for `scope`. */
  presentation(scope?: ScopeKey): ToolPresentationMode
  /**
   * What `scope` sees and may call, natively or from code, and whether `run_code` is
   * presented: the one answer every surface reads. An agent without a layer (or none
   * given) gets the global layer's view.
   *
   * @example
   * ```ts
   * const view = runtime.view('assistant')
   * view.canCall('deploy', 'native') // false when deploy's callers are ['code'] or the agent presents 'code'
   * toOpenAIChatTools(view) // view.wireTools in OpenAI's shape
   * ```
   */
  view(scope?: ScopeKey): AgentToolView
  /** The prompt assembly for `scope`. Throws `ToolError('ASSEMBLY_FAILED')` on misconfiguration. */
  assemble(scope?: ScopeKey): PromptAssembly
  /**
   * The searchable catalog of what `scope` may call: the same tools, ranking and
   * declarations a Code Mode program of that scope gets as `catalog`.
   */
  catalog(scope?: ScopeKey): ToolCatalog
  /**
   * Checks a program without running it: its diagnostics against the SDK of every tool
   * `agent` may call from code and the sandbox's globals, and its call plan. Never runs a
   * tool. Throws `ToolError('INVALID_EXECUTION')` when `code` is not a string.
   */
  preflight(request: PreflightRequest): Promise<PreflightReport>
  /**
   * Resumes the durable runs in `options.store` that no live process holds (left by a
   * process that stopped or died: its heartbeat is older than `staleMs`, default 30 000):
   * each is claimed with compare-and-set (of two processes, one gets it) and its
   * `run_code` call runs again from its parked state, under its original call id, so
   * pending approvals re-attach and nothing it completed runs twice. Without a store: `[]`.
   */
  resumeRuns(options?: { readonly staleMs?: number }): Promise<ResumedRun[]>
  /** The broker created from the `approvals` option (listed and decided by the HTTP app and MCP); `undefined` without it. */
  readonly approvals: ApprovalBroker | undefined
  /**
   * The live event hub: every Code Mode sub-call's events (and the `sessionLog` option's
   * sink, which receives them first). The HTTP app streams runs from it.
   */
  readonly events: SessionLogHub
  /**
   * The runtime's runs (docs/durability.md): background runs (`runs.table()`: start, view,
   * cancel, read events after an id, adopt resumed runs), their records and event snapshots
   * in the store, this process's heartbeat, the resume loop (started once a table attaches,
   * while the runtime holds a store) and the writes `dispose()` drains.
   */
  readonly runs: RunService
  /** The options in force (validated, defaults applied). */
  readonly options: Readonly<Required<Pick<ToolRuntimeOptions, 'mode' | 'maxParallelSubCalls' | 'maxOutputBytes' | 'sdkBudgetChars' | 'preflight'>>> &
    ToolRuntimeOptions
  /** Disposes every registration, aborts in-flight executions and awaits their settlement. */
  dispose(): Promise<void>
}
