/**
 * A registration scope: the registry's global scope or one agent's.
 * @module
 */
import { ToolError } from '../errors.js'
import type { Disposer, ScopeKey } from '../types.js'

/** Throws `INVALID_SCOPE_OPERATION`: a scope operation used where it does not apply. */
export function misuse(message: string): never {
  throw new ToolError('INVALID_SCOPE_OPERATION', message)
}

/** `scope` as an agent (a string, or `undefined`: the global layer); anything else is refused, never read as the global layer. */
export function checkAgent(scope: unknown, where: string): ScopeKey | undefined {
  if (scope === undefined || typeof scope === 'string') return scope
  const got = scope === null ? 'null' : Array.isArray(scope) ? 'an array' : typeof scope
  return misuse(`runtime.${where}(agent): the agent must be an agent id (a string), or absent for the global layer (got ${got})`)
}

/** What one registration scope (the registry, or one agent) owns and must undo on dispose. */
export class RegistrationScope {
  /** The agent this scope registers for; undefined for the global scope. */
  readonly agent: ScopeKey | undefined
  disposed = false
  readonly #runtimeDisposed: () => boolean
  /** Registrations other than listeners (tools, guards, masks, presentation, sections). */
  readonly #disposers = new Set<Disposer>()
  /** Listener registrations: disposed last so `tools/changed` hears the dispose. */
  readonly #listenerDisposers = new Set<Disposer>()

  constructor(agent: ScopeKey | undefined, runtimeDisposed: () => boolean) {
    this.agent = agent
    this.#runtimeDisposed = runtimeDisposed
  }

  /** Throws `DISPOSED` when this scope or its registry is disposed. */
  assertLive(): void {
    if (this.#runtimeDisposed() || this.disposed) {
      throw new ToolError('DISPOSED', this.agent === undefined ? 'the tool runtime is disposed' : `agent scope ${JSON.stringify(this.agent)} is disposed`)
    }
  }

  /** Takes ownership of `undo` and returns the idempotent public disposer. */
  own(undo: () => void, listener = false): Disposer {
    const set = listener ? this.#listenerDisposers : this.#disposers
    let done = false
    const disposer = (): void => {
      if (done) return
      done = true
      set.delete(disposer)
      undo()
    }
    set.add(disposer)
    return disposer
  }

  /** Undoes every registration except listeners. */
  disposeRegistrations(): void {
    for (const disposer of [...this.#disposers]) disposer()
  }

  /** Undoes every listener registration. */
  disposeListeners(): void {
    for (const disposer of [...this.#listenerDisposers]) disposer()
  }
}
