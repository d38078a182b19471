/**
 * Scopes as the public API shows them: the operations every scope offers (`register`, `guard`,
 * `on`, `section`), the agent facade (`AgentTools`) and the agents' lifecycle (created on first
 * use, disposed with everything registered through them once their in-flight calls settled).
 * @module
 */
import { RUN_CODE_TOOL_NAME } from '../code-mode/registry-seam.js'
import { ToolError } from '../errors.js'
import type { AgentTools, PromptSection, ToolHookMap, ToolHookName, ToolScope } from '../runtime-types.js'
import { detachToolDefinition } from '../schema/tool-definition.js'
import type { AnyToolDefinition, ScopeKey, ToolExecutionInput, ToolFilter, ToolGuard, ToolPresentationMode } from '../types.js'
import type { PreflightMode } from '../preflight/types.js'
import type { RegistryContext } from './context.js'
import { PREFLIGHT_MODES } from './options.js'
import { RegistrationScope, misuse } from './scope.js'

/**
 * What scopes read of the registry's context: the layers, hooks, guards, sections and
 * calls in flight they register into and dispose, whether the registry is disposing, and
 * the entries an agent facade forwards to (`execute`, `assemble`, `catalog`).
 */
export type ScopeParts = Pick<RegistryContext, 'layers' | 'hooks' | 'guards' | 'sections' | 'calls' | 'isDisposed' | 'execute' | 'assemble' | 'catalog'>

function peekName(definition: unknown): unknown {
  try {
    // Stryker disable next-line OptionalChaining: for a null definition the TypeError lands in the catch below
    return (definition as { name?: unknown } | null)?.name
    // (Stryker reads a directive only as a node's leading comment, so this one sits before `catch`.)
  } // Stryker disable next-line BlockStatement: an emptied catch falls off the end of the function, which returns undefined as the block does
  catch {
    // The definition validator reports an unreadable definition properly; here only `run_code` matters.
    return undefined
  }
}

/** The operations both kinds of scope offer, bound to `scope`. */
export function scopeOperations(parts: ScopeParts, scope: RegistrationScope): ToolScope {
  return {
    register: (definition: AnyToolDefinition) => {
      scope.assertLive()
      if (peekName(definition) === RUN_CODE_TOOL_NAME) {
        throw new ToolError('RESERVED_NAME', '`run_code` is reserved for the Code Mode transport and cannot be registered')
      }
      return scope.own(parts.layers.add(scope.agent, detachToolDefinition(definition)))
    },
    guard: (guard: ToolGuard) => {
      scope.assertLive()
      if (typeof guard !== 'function') misuse('guard(fn) needs a function')
      return scope.own(parts.guards.add(guard, scope.agent))
    },
    on: <K extends ToolHookName>(hook: K, listener: ToolHookMap[K]) => {
      scope.assertLive()
      return scope.own(parts.hooks.add(hook, listener, scope.agent), true)
    },
    section: (section: PromptSection) => {
      scope.assertLive()
      return scope.own(parts.sections.add(section, scope.agent))
    },
  }
}

/** One agent: its registration scope, its facade, and its disposal once started. */
interface Agent {
  readonly scope: RegistrationScope
  readonly api: AgentTools
  disposing: Promise<void> | undefined
  /** The preflight mode it declared (`preflightMode`). */
  preflight: PreflightMode | undefined
}

/** The agents of one registry. */
export class AgentScopes {
  readonly #parts: ScopeParts
  readonly #agents = new Map<ScopeKey, Agent>()

  constructor(parts: ScopeParts) {
    this.#parts = parts
  }

  /** The preflight mode `agent` declared, or `undefined` (the runtime's option then applies). */
  preflightMode(agent: ScopeKey | undefined): PreflightMode | undefined {
    return agent === undefined ? undefined : this.#agents.get(agent)?.preflight
  }

  /** Declares `agent`'s preflight mode (once per agent, as `presentAs`). */
  #declarePreflight(id: ScopeKey, agent: Agent, mode: PreflightMode): () => void {
    if (typeof mode !== 'string' || !PREFLIGHT_MODES.has(mode)) misuse(`preflightMode(mode) needs 'off', 'warn' or 'block' (got ${JSON.stringify(String(mode))})`)
    if (agent.preflight !== undefined) misuse(`agent ${JSON.stringify(id)} already declared its preflight mode ('${agent.preflight}')`)
    agent.preflight = mode
    return () => {
      agent.preflight = undefined
    }
  }

  /** The agent layer for `id`: created on first use, the same object until disposed. */
  get(id: ScopeKey): AgentTools {
    if (typeof id !== 'string' || id === '') misuse('runtime.agent(id) needs a non-empty string id')
    let agent = this.#agents.get(id)
    if (agent === undefined) {
      agent = this.#create(id)
      this.#agents.set(id, agent)
      this.#parts.layers.openAgent(id)
    }
    return agent.api
  }

  /** Registry disposal, once every call settled: undoes every agent's registrations and listeners. */
  disposeAll(): void {
    for (const [id, agent] of [...this.#agents]) {
      agent.scope.disposed = true
      agent.scope.disposeRegistrations()
      agent.scope.disposeListeners()
      this.#agents.delete(id)
      this.#parts.layers.closeAgent(id)
    }
  }

  #dispose(id: ScopeKey, agent: Agent): Promise<void> {
    agent.disposing ??= (async () => {
      const parts = this.#parts
      agent.scope.disposed = true
      if (this.#agents.get(id) === agent) {
        this.#agents.delete(id)
        parts.layers.closeAgent(id)
      }
      await parts.calls.quiesce(new ToolError('DISPOSED', `agent scope ${JSON.stringify(id)} was disposed`), id)
      agent.scope.disposeRegistrations()
      parts.hooks.emitChanged({ kind: 'dispose', agent: id })
      agent.scope.disposeListeners()
    })()
    return agent.disposing
  }

  #create(id: ScopeKey): Agent {
    const parts = this.#parts
    const scope = new RegistrationScope(id, () => parts.isDisposed())
    const live = <T>(read: () => T): T => {
      scope.assertLive()
      return read()
    }
    const agent: Agent = {
      scope,
      disposing: undefined,
      preflight: undefined,
      api: Object.freeze({
        id,
        ...scopeOperations(parts, scope),
        restrict: (filter: ToolFilter) => live(() => scope.own(parts.layers.restrict(id, filter))),
        presentAs: (mode: ToolPresentationMode) => live(() => scope.own(parts.layers.presentAs(id, mode))),
        preflightMode: (mode: PreflightMode) => live(() => scope.own(this.#declarePreflight(id, agent, mode))),
        get: (name: string) => live(() => parts.layers.resolve(name, id)?.definition),
        schemas: () => live(() => parts.layers.schemas(id)),
        view: () => live(() => parts.layers.view(id).public),
        execute: (input: Omit<ToolExecutionInput, 'agent'>) => {
          let scoped: unknown = null
          try {
            scoped = typeof input === 'object' && input !== null ? { ...input, agent: id } : input
          } catch {
            // An input whose properties cannot be read is reported as INVALID_EXECUTION by the pipeline.
          }
          return parts.execute(scoped, { scopeDisposed: scope.disposed })
        },
        assemble: () => live(() => parts.assemble(id)),
        catalog: () => live(() => parts.catalog(id)),
        dispose: () => this.#dispose(id, agent),
      }),
    }
    return agent
  }
}
