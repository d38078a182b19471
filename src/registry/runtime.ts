/**
 * `createToolRuntime()`: the registry (global and agent layers, masks, presentations,
 * guards, hooks, sections), the pipeline entry, Code Mode's intrinsic `run_code` and
 * prompt assembly. See docs/pipeline.md for the rules this file implements.
 *
 * @module
 */
import { RUN_CODE_TOOL_NAME, createRunCodeTool } from '../code-mode/run-code.js'
import type { CodeModeRegistry } from '../code-mode/registry-seam.js'
import { ToolError } from '../errors.js'
import { snapshotLosslessJson } from '../json/lossless.js'
import type {
  AgentTools,
  AssembleListener,
  CodeDispatchEvent,
  CodeDispatchLogListener,
  ExecuteWrapper,
  PostExecuteListener,
  PreExecuteListener,
  PromptAssembly,
  PromptSection,
  ResultListener,
  CodeLogEvent,
  SessionLogEvent,
  ToolHookMap,
  ToolHookName,
  ToolRuntime,
  ToolRuntimeOptions,
  ToolsChangedEvent,
  ToolsChangedListener,
} from '../runtime-types.js'
import type {
  AnyToolDefinition,
  Disposer,
  ScopeKey,
  ToolExecutionInput,
  ToolExecutionMode,
  ToolExecutionResult,
  ToolFilter,
  ToolGuard,
  ToolPresentationMode,
  ToolSchema,
} from '../types.js'
import { CODE_ONLY_SECTION, SDK_SECTION, assemblePrompt, type AssemblyCore, type StoredSection } from './assembly.js'
import { detachToolDefinition as detachDefinition, type RegisteredTool } from '../schema/tool-definition.js'
import { INTERNAL_EXECUTE, type PipelineSchedule } from './internal.js'
import { RESERVED_TOOL_NAME, executePipeline, type InFlight, type PipelineCore } from './pipeline.js'
import { validateRuntimeOptions } from './options.js'
import { ScopedList } from './scoped-list.js'

const HOOK_NAMES: ReadonlySet<string> = new Set<ToolHookName>([
  'tools/pre-execute',
  'tools/execute',
  'tools/post-execute',
  'tools/result',
  'tools/changed',
  'tools/code-dispatch-log',
  'system-prompt/assemble',
])
const MODES: ReadonlySet<string> = new Set(['native', 'code', 'both'])
const RESERVED_SECTION_IDS: ReadonlySet<string> = new Set([SDK_SECTION.id, CODE_ONLY_SECTION.id])

// The reserved name lives in code-mode/; the pipeline keeps a copy to stay cycle-free.
if (RUN_CODE_TOOL_NAME !== RESERVED_TOOL_NAME) throw new Error('toolyard: run_code name mismatch')

function misuse(message: string): never {
  throw new ToolError('INVALID_SCOPE_OPERATION', message)
}

/** Compares by Unicode code point (UTF-16 `<` misorders astral characters). */
function compareCodePoints(a: string, b: string): number {
  const x = [...a]
  const y = [...b]
  const n = Math.min(x.length, y.length)
  for (let i = 0; i < n; i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!
    if (d !== 0) return d
  }
  return x.length - y.length
}

/** Wraps `fn` so that only its first call does anything. */
function once(fn: () => void): Disposer {
  let done = false
  return () => {
    if (done) return
    done = true
    fn()
  }
}

interface Mask {
  readonly kind: 'allow' | 'deny'
  readonly names: ReadonlySet<string>
}

/** What one registration scope (the runtime, or one agent) owns and must undo on dispose. */
interface ScopeState {
  readonly agent: ScopeKey | undefined
  /** Registrations other than listeners (tools, guards, masks, presentation, sections). */
  readonly disposers: Set<Disposer>
  /** Listener registrations: disposed last so `tools/changed` hears the dispose. */
  readonly listenerDisposers: Set<Disposer>
  disposed: boolean
}

interface AgentState extends ScopeState {
  readonly agent: ScopeKey
  readonly tools: Map<string, RegisteredTool>
  readonly masks: Mask[]
  presentation: ToolPresentationMode | undefined
  api: AgentTools | undefined
  disposing: Promise<void> | undefined
}

/**
 * The lifecycle of one in-flight execution: caller cancellation, scope disposal, and
 * settlement. The AbortController behind `signal()` is created only when something reads it.
 */
class InFlightRecord implements InFlight {
  readonly #caller: AbortSignal
  readonly agent: ScopeKey | undefined
  #controller: AbortController | undefined
  #onAbort: (() => void) | undefined
  #disposed = false
  #disposeReason: unknown
  #waiters: (() => void)[] | undefined
  #released = false
  onRelease: (() => void) | undefined

  constructor(caller: AbortSignal, agent: ScopeKey | undefined) {
    this.#caller = caller
    this.agent = agent
  }

  get aborted(): boolean {
    return this.#disposed || this.#caller.aborted
  }

  get reason(): unknown {
    if (this.#controller !== undefined) return this.#controller.signal.reason
    return this.#caller.aborted ? this.#caller.reason : this.#disposeReason
  }

  signal(): AbortSignal {
    if (this.#controller === undefined) {
      const controller = new AbortController()
      this.#controller = controller
      if (this.#caller.aborted) controller.abort(this.#caller.reason)
      else if (this.#disposed) controller.abort(this.#disposeReason)
      else if (!this.#released) {
        const caller = this.#caller
        this.#onAbort = () => controller.abort(caller.reason)
        caller.addEventListener('abort', this.#onAbort, { once: true })
      }
    }
    return this.#controller.signal
  }

  dispose(reason: unknown): void {
    if (this.aborted) return
    this.#disposed = true
    this.#disposeReason = reason
    this.#controller?.abort(reason)
  }

  settled(): Promise<void> {
    if (this.#released) return Promise.resolve()
    return new Promise<void>((resolve) => (this.#waiters ??= []).push(resolve))
  }

  release(): void {
    if (this.#released) return
    this.#released = true
    if (this.#onAbort !== undefined) this.#caller.removeEventListener('abort', this.#onAbort)
    this.onRelease?.()
    const waiters = this.#waiters
    this.#waiters = undefined
    if (waiters !== undefined) for (const wake of waiters) wake()
  }
}

/**
 * Creates a tool runtime: the global registry layer, agent layers (`runtime.agent(id)`),
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

  const globalTools = new Map<string, RegisteredTool>()
  const agents = new Map<ScopeKey, AgentState>()
  const schemaCache = new WeakMap<RegisteredTool, ToolSchema>()
  const liveTokens = new Set<symbol>()
  const inflight = new Set<InFlightRecord>()

  const preExecute = new ScopedList<PreExecuteListener>()
  const executeWrappers = new ScopedList<ExecuteWrapper>()
  const postExecute = new ScopedList<PostExecuteListener>()
  const resultListeners = new ScopedList<ResultListener>()
  const changedListeners = new ScopedList<ToolsChangedListener>()
  const dispatchLogListeners = new ScopedList<CodeDispatchLogListener>()
  const assembleListeners = new ScopedList<AssembleListener>()
  const guards = new ScopedList<ToolGuard>()
  const sections = new ScopedList<StoredSection>()
  let sectionSeq = 0

  const globalScope: ScopeState = { agent: undefined, disposers: new Set(), listenerDisposers: new Set(), disposed: false }
  let runtimeDisposing: Promise<void> | undefined

  const emitChanged = (event: ToolsChangedEvent): void => {
    const frozen = Object.freeze(event)
    for (const listener of changedListeners.all()) {
      try {
        listener(frozen)
      } catch {
        // An observer never breaks a registry change.
      }
    }
  }

  const assertLive = (scope: ScopeState): void => {
    if (runtimeDisposing !== undefined || scope.disposed) {
      throw new ToolError('DISPOSED', scope.agent === undefined ? 'the tool runtime is disposed' : `agent scope ${JSON.stringify(scope.agent)} is disposed`)
    }
  }

  /** Registers a disposer in `scope` and returns the idempotent public one. */
  const own = (scope: ScopeState, undo: () => void, listener = false): Disposer => {
    const set = listener ? scope.listenerDisposers : scope.disposers
    const disposer = once(() => {
      set.delete(disposer)
      undo()
    })
    set.add(disposer)
    return disposer
  }

  const admitted = (state: AgentState, name: string): boolean => {
    for (const mask of state.masks) {
      if (mask.kind === 'allow' ? !mask.names.has(name) : mask.names.has(name)) return false
    }
    return true
  }

  const presentation = (agent: ScopeKey | undefined): ToolPresentationMode => {
    if (agent === undefined) return settings.mode
    return agents.get(agent)?.presentation ?? settings.mode
  }

  const resolve = (name: string, agent: ScopeKey | undefined): RegisteredTool | undefined => {
    if (name === RESERVED_TOOL_NAME) return presentation(agent) === 'native' ? undefined : runCode
    const state = agent === undefined ? undefined : agents.get(agent)
    if (state !== undefined) {
      const local = state.tools.get(name)
      if (local !== undefined) return local
    }
    const global = globalTools.get(name)
    if (global === undefined) return undefined
    return state === undefined || admitted(state, name) ? global : undefined
  }

  /** Everything `agent` sees except `run_code`: admitted, unshadowed globals, then its own tools. */
  const visibleTools = (agent: ScopeKey | undefined): RegisteredTool[] => {
    const state = agent === undefined ? undefined : agents.get(agent)
    const out: RegisteredTool[] = []
    for (const [name, tool] of globalTools) {
      if (state !== undefined && (state.tools.has(name) || !admitted(state, name))) continue
      out.push(tool)
    }
    if (state !== undefined) for (const tool of state.tools.values()) out.push(tool)
    return out
  }

  const schemaOf = (tool: RegisteredTool): ToolSchema => {
    let schema = schemaCache.get(tool)
    if (schema === undefined) {
      const { name, description, parameters } = tool.definition
      schema = Object.freeze({ name, description, parameters })
      schemaCache.set(tool, schema)
    }
    return schema
  }

  const track = (signal: AbortSignal, agent: ScopeKey | undefined): InFlight => {
    const record = new InFlightRecord(signal, agent)
    inflight.add(record)
    record.onRelease = () => inflight.delete(record)
    return record
  }

  /** Aborts the matching in-flight executions and resolves once they all settled. */
  const quiesce = async (match: (record: InFlightRecord) => boolean, reason: ToolError): Promise<void> => {
    const waits: Promise<void>[] = []
    for (const record of [...inflight]) {
      if (!match(record)) continue
      record.dispose(reason)
      waits.push(record.settled())
    }
    await Promise.all(waits)
  }

  const host: CodeModeRegistry = {
    codeRuntime: () => settings.codeRuntime,
    maxParallelSubCalls: settings.maxParallelSubCalls,
    maxOutputBytes: settings.maxOutputBytes,
    bindingNames: (agent) =>
      Object.freeze(
        visibleTools(agent)
          .map((tool) => tool.definition.name)
          .sort(compareCodePoints),
      ),
    execute: (input) => executePipeline(core, input),
    executionMode: (input) => executionMode(input),
    logDispatchStart: (event) => appendLog(event),
    logDispatch: async (event) => {
      let current: CodeDispatchEvent = event
      for (const listener of dispatchLogListeners.list(event.agent)) {
        try {
          const next: unknown = await listener(current)
          if (isDispatchEvent(next)) current = next
        } catch {
          // A failing spill policy keeps the event as it was.
        }
      }
      appendLog(current)
    },
    ...(settings.sessionLog?.appendLog === undefined
      ? {}
      : {
          logOutput: (event: CodeLogEvent) => {
            try {
              settings.sessionLog?.appendLog?.(event)
            } catch {
              // Live streaming is best-effort; the run's result carries every line.
            }
          },
        }),
  }

  const appendLog = (event: SessionLogEvent): void => {
    try {
      settings.sessionLog?.append(event)
    } catch {
      // The session log is a sink; its failure never reaches a program or the pipeline.
    }
  }

  const runCode = detachDefinition(createRunCodeTool(host))

  const core: PipelineCore & AssemblyCore = {
    options: settings,
    isDisposed: () => runtimeDisposing !== undefined,
    presentation,
    resolve,
    preExecute,
    execute: executeWrappers,
    postExecute,
    result: resultListeners,
    guards,
    track,
    liveTokens,
    visibleTools,
    schemaOf,
    runCode,
    sections,
    assembleListeners,
  }

  const executionMode = (input: Pick<ToolExecutionInput, 'name' | 'arguments' | 'agent'>): ToolExecutionMode => {
    try {
      const name: unknown = input.name
      const agent: unknown = input.agent
      if (typeof name !== 'string' || (agent !== undefined && typeof agent !== 'string')) return 'exclusive'
      const tool = resolve(name, agent)
      const classify = tool?.definition.isConcurrencySafe
      if (tool === undefined || classify === undefined) return 'exclusive'
      const definition = tool.definition
      const args = snapshotLosslessJson(input.arguments)
      let typed: unknown
      if (definition.softValidateArgs !== undefined) typed = definition.softValidateArgs(args)
      else if (definition.validateArgs !== undefined) typed = definition.validateArgs(args)
      else typed = args
      if (typed === undefined) return 'exclusive'
      return classify.call(definition, typed) === true ? 'parallel' : 'exclusive'
    } catch {
      return 'exclusive'
    }
  }

  // ── scope operations shared by the runtime and agents ──

  const register = (scope: ScopeState, layer: Map<string, RegisteredTool>, definition: AnyToolDefinition): Disposer => {
    assertLive(scope)
    let name: unknown
    try {
      name = (definition as { name?: unknown } | null)?.name
    } catch {
      name = undefined
    }
    if (name === RESERVED_TOOL_NAME) {
      throw new ToolError('RESERVED_NAME', '`run_code` is reserved for the Code Mode transport and cannot be registered')
    }
    const tool = detachDefinition(definition)
    const toolName = tool.definition.name
    if (layer.has(toolName)) {
      const where = scope.agent === undefined ? 'the global layer' : `agent ${JSON.stringify(scope.agent)}`
      throw new ToolError('DUPLICATE_TOOL', `a tool named ${JSON.stringify(toolName)} is already registered in ${where}`)
    }
    layer.set(toolName, tool)
    emitChanged({ kind: 'register', name: toolName, ...(scope.agent !== undefined ? { agent: scope.agent } : {}) })
    return own(scope, () => {
      if (layer.get(toolName) !== tool) return
      layer.delete(toolName)
      emitChanged({ kind: 'unregister', name: toolName, ...(scope.agent !== undefined ? { agent: scope.agent } : {}) })
    })
  }

  const addGuard = (scope: ScopeState, guard: ToolGuard): Disposer => {
    assertLive(scope)
    if (typeof guard !== 'function') misuse('guard(fn) needs a function')
    return own(scope, guards.add(guard, scope.agent))
  }

  const lists: { [K in ToolHookName]: ScopedList<ToolHookMap[K]> } = {
    'tools/pre-execute': preExecute,
    'tools/execute': executeWrappers,
    'tools/post-execute': postExecute,
    'tools/result': resultListeners,
    'tools/changed': changedListeners,
    'tools/code-dispatch-log': dispatchLogListeners,
    'system-prompt/assemble': assembleListeners,
  }

  const on = <K extends ToolHookName>(scope: ScopeState, hook: K, listener: ToolHookMap[K]): Disposer => {
    assertLive(scope)
    if (typeof hook !== 'string' || !HOOK_NAMES.has(hook)) misuse(`unknown hook ${JSON.stringify(String(hook))}`)
    if (typeof listener !== 'function') misuse(`on(${JSON.stringify(hook)}, listener) needs a function`)
    const list = lists[hook] as ScopedList<ToolHookMap[K]>
    return own(scope, list.add(listener, scope.agent), true)
  }

  const addSection = (scope: ScopeState, section: PromptSection): Disposer => {
    assertLive(scope)
    if (typeof section !== 'object' || section === null) misuse('section(section) needs { id, order, text }')
    const { id, order, text } = section
    if (typeof id !== 'string' || id === '') misuse('a prompt section needs a non-empty string id')
    if (RESERVED_SECTION_IDS.has(id)) misuse(`the section id ${JSON.stringify(id)} is reserved for the registry`)
    if (typeof order !== 'number' || !Number.isFinite(order)) misuse(`section ${JSON.stringify(id)} needs a finite order`)
    if (typeof text !== 'string') misuse(`section ${JSON.stringify(id)} needs string text`)
    const stored: StoredSection = { section: Object.freeze({ id, order, text }), seq: sectionSeq++ }
    return own(scope, sections.add(stored, scope.agent))
  }

  // ── agents ──

  const disposeScope = (scope: ScopeState): void => {
    for (const disposer of [...scope.disposers]) disposer()
  }
  const disposeListeners = (scope: ScopeState): void => {
    for (const disposer of [...scope.listenerDisposers]) disposer()
  }

  const disposeAgent = (state: AgentState): Promise<void> => {
    state.disposing ??= (async () => {
      state.disposed = true
      if (agents.get(state.agent) === state) agents.delete(state.agent)
      await quiesce((r) => r.agent === state.agent, new ToolError('DISPOSED', `agent scope ${JSON.stringify(state.agent)} was disposed`))
      disposeScope(state)
      emitChanged({ kind: 'dispose', agent: state.agent })
      disposeListeners(state)
    })()
    return state.disposing
  }

  const createAgent = (id: ScopeKey): AgentState => {
    const state: AgentState = {
      agent: id,
      disposers: new Set(),
      listenerDisposers: new Set(),
      disposed: false,
      tools: new Map(),
      masks: [],
      presentation: undefined,
      api: undefined,
      disposing: undefined,
    }
    const api: AgentTools = Object.freeze({
      id,
      register: (definition: AnyToolDefinition) => register(state, state.tools, definition),
      guard: (guard: ToolGuard) => addGuard(state, guard),
      on: <K extends ToolHookName>(hook: K, listener: ToolHookMap[K]) => on(state, hook, listener),
      section: (section: PromptSection) => addSection(state, section),
      restrict: (filter: ToolFilter) => restrict(state, filter),
      presentAs: (mode: ToolPresentationMode) => presentAs(state, mode),
      get: (name: string) => {
        assertLive(state)
        return resolve(name, id)?.definition
      },
      schemas: () => {
        assertLive(state)
        return schemas(id)
      },
      execute: (input: Omit<ToolExecutionInput, 'agent'>) => {
        let scoped: unknown = null
        try {
          scoped = typeof input === 'object' && input !== null ? { ...input, agent: id } : input
        } catch {
          // An input whose properties cannot be read is reported as INVALID_EXECUTION by the pipeline.
        }
        return executePipeline(core, scoped, undefined, state.disposed)
      },
      assemble: () => {
        assertLive(state)
        return assemble(id)
      },
      dispose: () => disposeAgent(state),
    })
    state.api = api
    return state
  }

  const restrict = (state: AgentState, filter: ToolFilter): Disposer => {
    assertLive(state)
    if (typeof filter !== 'object' || filter === null) misuse('restrict(filter) needs { allow: [...] } or { deny: [...] }')
    const hasAllow = Object.hasOwn(filter, 'allow')
    const hasDeny = Object.hasOwn(filter, 'deny')
    if (hasAllow === hasDeny) misuse('restrict(filter) needs exactly one of allow / deny')
    const kind = hasAllow ? 'allow' : 'deny'
    const names: unknown = (filter as Record<string, unknown>)[kind]
    if (!Array.isArray(names) || names.length === 0) misuse(`restrict({ ${kind} }) needs a non-empty array of tool names`)
    const set = new Set<string>()
    for (const name of names as unknown[]) {
      if (typeof name !== 'string') misuse(`restrict({ ${kind} }) names must be strings`)
      if (name === RESERVED_TOOL_NAME) misuse('`run_code` is reserved and cannot be restricted')
      if (state.tools.has(name)) misuse(`${JSON.stringify(name)} is local to agent ${JSON.stringify(state.agent)}; masks apply to global tools only`)
      if (!globalTools.has(name)) misuse(`restrict({ ${kind} }) names an unknown global tool ${JSON.stringify(name)}`)
      set.add(name)
    }
    const mask: Mask = Object.freeze({ kind, names: set })
    state.masks.push(mask)
    emitChanged({ kind: 'restrict', agent: state.agent })
    return own(state, () => {
      const index = state.masks.indexOf(mask)
      if (index >= 0) state.masks.splice(index, 1)
      emitChanged({ kind: 'unrestrict', agent: state.agent })
    })
  }

  const presentAs = (state: AgentState, mode: ToolPresentationMode): Disposer => {
    assertLive(state)
    if (typeof mode !== 'string' || !MODES.has(mode)) misuse(`presentAs(mode) needs 'native', 'code' or 'both' (got ${JSON.stringify(String(mode))})`)
    if (state.presentation !== undefined) misuse(`agent ${JSON.stringify(state.agent)} already declared its presentation ('${state.presentation}')`)
    state.presentation = mode
    emitChanged({ kind: 'present-as', agent: state.agent })
    return own(state, () => {
      state.presentation = undefined
      emitChanged({ kind: 'present-as', agent: state.agent })
    })
  }

  const schemas = (scope: ScopeKey | undefined): ToolSchema[] => {
    const out = visibleTools(scope).map(schemaOf)
    if (presentation(scope) !== 'native') out.push(schemaOf(runCode))
    return out
  }

  const assemble = (scope: ScopeKey | undefined): PromptAssembly => assemblePrompt(core, scope)

  const runtime = {
    get options() {
      return settings
    },
    register: (definition: AnyToolDefinition) => register(globalScope, globalTools, definition),
    guard: (guard: ToolGuard) => addGuard(globalScope, guard),
    on: <K extends ToolHookName>(hook: K, listener: ToolHookMap[K]) => on(globalScope, hook, listener),
    section: (section: PromptSection) => addSection(globalScope, section),
    agent: (id: ScopeKey): AgentTools => {
      assertLive(globalScope)
      if (typeof id !== 'string' || id === '') misuse('runtime.agent(id) needs a non-empty string id')
      let state = agents.get(id)
      if (state === undefined) {
        state = createAgent(id)
        agents.set(id, state)
      }
      return state.api!
    },
    get: (name: string, scope?: ScopeKey) => (typeof name === 'string' ? resolve(name, scope)?.definition : undefined),
    schemas: (scope?: ScopeKey) => schemas(scope),
    execute: (input: ToolExecutionInput): Promise<ToolExecutionResult> => executePipeline(core, input),
    executionMode,
    presentation: (scope?: ScopeKey) => presentation(scope),
    assemble: (scope?: ScopeKey) => assemble(scope),
    dispose: (): Promise<void> => {
      runtimeDisposing ??= (async () => {
        await quiesce(() => true, new ToolError('DISPOSED', 'the tool runtime was disposed'))
        for (const state of [...agents.values()]) {
          state.disposed = true
          disposeScope(state)
          disposeListeners(state)
        }
        agents.clear()
        disposeScope(globalScope)
        emitChanged({ kind: 'dispose' })
        disposeListeners(globalScope)
      })()
      return runtimeDisposing
    },
  }
  Object.defineProperty(runtime, INTERNAL_EXECUTE, {
    value: (input: ToolExecutionInput, schedule: PipelineSchedule) => executePipeline(core, input, schedule),
  })
  return Object.freeze(runtime) as ToolRuntime
}

function isDispatchEvent(value: unknown): value is CodeDispatchEvent {
  if (typeof value !== 'object' || value === null) return false
  const event = value as Partial<CodeDispatchEvent>
  return (
    event.type === 'tool/code-dispatch' &&
    typeof event.subCallId === 'string' &&
    typeof event.parentCallId === 'string' &&
    typeof event.name === 'string' &&
    typeof event.isError === 'boolean' &&
    Array.isArray(event.content)
  )
}
