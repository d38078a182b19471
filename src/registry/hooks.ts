/**
 * The hook bus: one ordered, two-layer listener list per hook name (global listeners first, then
 * the agent's), and the `tools/changed` notification.
 * @module
 */
import { ToolError } from '../errors.js'
import type { ToolHookMap, ToolHookName, ToolsChangedEvent } from '../runtime-types.js'
import type { ScopeKey } from '../types.js'
import { ScopedList } from './scoped-list.js'

/** Every hook a listener may subscribe to. */
export const HOOK_NAMES: readonly ToolHookName[] = Object.freeze([
  'tools/pre-execute',
  'tools/execute',
  'tools/post-execute',
  'tools/result',
  'tools/changed',
  'tools/code-dispatch-log',
  'system-prompt/assemble',
])

const KNOWN: ReadonlySet<string> = new Set(HOOK_NAMES)

/** The listeners of one registry, by hook. */
export class HookBus {
  readonly preExecute = new ScopedList<ToolHookMap['tools/pre-execute']>()
  readonly execute = new ScopedList<ToolHookMap['tools/execute']>()
  readonly postExecute = new ScopedList<ToolHookMap['tools/post-execute']>()
  readonly result = new ScopedList<ToolHookMap['tools/result']>()
  readonly changed = new ScopedList<ToolHookMap['tools/changed']>()
  readonly codeDispatchLog = new ScopedList<ToolHookMap['tools/code-dispatch-log']>()
  readonly assemble = new ScopedList<ToolHookMap['system-prompt/assemble']>()
  readonly #lists: { readonly [K in ToolHookName]: ScopedList<ToolHookMap[K]> } = {
    'tools/pre-execute': this.preExecute,
    'tools/execute': this.execute,
    'tools/post-execute': this.postExecute,
    'tools/result': this.result,
    'tools/changed': this.changed,
    'tools/code-dispatch-log': this.codeDispatchLog,
    'system-prompt/assemble': this.assemble,
  }

  /**
   * Subscribes `listener` to `hook` for `agent` (undefined: every execution) and returns its
   * remover.
   */
  add<K extends ToolHookName>(hook: K, listener: ToolHookMap[K], agent: ScopeKey | undefined): () => void {
    if (typeof hook !== 'string' || !KNOWN.has(hook)) {
      throw new ToolError('INVALID_SCOPE_OPERATION', `unknown hook ${JSON.stringify(String(hook))}`)
    }
    if (typeof listener !== 'function') {
      throw new ToolError('INVALID_SCOPE_OPERATION', `on(${JSON.stringify(hook)}, listener) needs a function`)
    }
    return (this.#lists[hook] as ScopedList<ToolHookMap[K]>).add(listener, agent)
  }

  /** Tells every `tools/changed` listener (unfiltered by agent) about a registry change. */
  emitChanged(event: ToolsChangedEvent): void {
    const frozen = Object.freeze(event)
    for (const listener of this.changed.all()) {
      try {
        listener(frozen)
      } catch {
        // An observer never breaks a registry change.
      }
    }
  }
}
