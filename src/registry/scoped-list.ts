/**
 * A list of listeners (or guards, or sections) in two layers: global entries first, then one
 * agent's, each in registration order.
 * @module
 */
import type { ScopeKey } from '../types.js'

const EMPTY: readonly never[] = Object.freeze([])

interface Slot<T> {
  readonly value: T
}

/** Global + per-agent ordered entries. */
export class ScopedList<T> {
  #global: Slot<T>[] = []
  readonly #scoped = new Map<ScopeKey, Slot<T>[]>()
  #size = 0
  /** Snapshots by agent (`''` key unused: undefined maps to the global snapshot). */
  #cache = new Map<ScopeKey | undefined, readonly T[]>()

  /** Adds `value` to the global layer (`agent` undefined) or to `agent`'s; returns its remover. */
  add(value: T, agent: ScopeKey | undefined): () => void {
    const slot: Slot<T> = { value }
    let list: Slot<T>[]
    if (agent === undefined) list = this.#global
    else {
      list = this.#scoped.get(agent) ?? []
      this.#scoped.set(agent, list)
    }
    list.push(slot)
    this.#size += 1
    this.#cache.clear()
    let removed = false
    return () => {
      if (removed) return
      removed = true
      this.#size -= 1
      this.#cache.clear()
      if (agent === undefined) {
        this.#global = this.#global.filter((s) => s !== slot)
        return
      }
      const current = this.#scoped.get(agent)
      // Stryker disable next-line ConditionalExpression: unreachable while `removed` guards the remover
      if (current === undefined) return
      const next = current.filter((s) => s !== slot)
      if (next.length === 0) this.#scoped.delete(agent)
      else this.#scoped.set(agent, next)
    }
  }

  /** Global entries, then `agent`'s (none when `agent` is undefined). */
  list(agent: ScopeKey | undefined): readonly T[] {
    if (this.#size === 0) return EMPTY as readonly T[]
    const cached = this.#cache.get(agent)
    if (cached !== undefined) return cached
    const out: T[] = []
    for (const slot of this.#global) out.push(slot.value)
    // Stryker disable next-line ConditionalExpression: #scoped never holds an undefined key
    if (agent !== undefined) {
      const scoped = this.#scoped.get(agent)
      if (scoped !== undefined) for (const slot of scoped) out.push(slot.value)
    }
    const frozen = Object.freeze(out)
    // Bound the cache: agent ids are caller-chosen, so never let it grow without limit.
    // Stryker disable next-line ConditionalExpression,EqualityOperator: the bound limits memory only
    if (this.#cache.size > 256) this.#cache.clear()
    this.#cache.set(agent, frozen)
    return frozen
  }

  /** Every entry of every layer (global first, then agents in first-use order). */
  all(): T[] {
    const out: T[] = this.#global.map((s) => s.value)
    for (const list of this.#scoped.values()) for (const slot of list) out.push(slot.value)
    return out
  }
}
