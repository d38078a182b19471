/**
 * The static prompt sections of one registry (`section()`, global then each agent's), and the ids
 * the registry reserves for its own contribution (`tools:sdk`, `tools:code-only`): kept apart from
 * assembly so the registry's context can name them.
 * @module
 */
import type { PromptSection } from '../runtime-types.js'
import type { ScopeKey } from '../types.js'
import { misuse } from './scope.js'
import { ScopedList } from './scoped-list.js'

/** Id and order of the SDK section. */
export const SDK_SECTION = Object.freeze({ id: 'tools:sdk', order: 150 })
/** Id and order of the code-only rule: before the 100–199 per-tool guidance band. */
export const CODE_ONLY_SECTION = Object.freeze({ id: 'tools:code-only', order: 90 })

/** A static section with its registration sequence (ties keep registration order). */
export interface StoredSection {
  readonly section: PromptSection
  readonly seq: number
}

const RESERVED_SECTION_IDS: ReadonlySet<string> = new Set([SDK_SECTION.id, CODE_ONLY_SECTION.id])

/** The static prompt sections of one registry: global ones, then each agent's. */
export class PromptSections {
  readonly #list = new ScopedList<StoredSection>()
  #seq = 0

  /** Adds a checked, frozen copy of `section` for `agent` (every assembly when undefined); returns its remover. */
  add(section: PromptSection, agent: ScopeKey | undefined): () => void {
    if (typeof section !== 'object' || section === null) misuse('section(section) needs { id, order, text }')
    const { id, order, text } = section
    if (typeof id !== 'string' || id === '') misuse('a prompt section needs a non-empty string id')
    if (RESERVED_SECTION_IDS.has(id)) misuse(`the section id ${JSON.stringify(id)} is reserved for the registry`)
    if (typeof order !== 'number' || !Number.isFinite(order)) misuse(`section ${JSON.stringify(id)} needs a finite order`)
    if (typeof text !== 'string') misuse(`section ${JSON.stringify(id)} needs string text`)
    return this.#list.add({ section: Object.freeze({ id, order, text }), seq: this.#seq++ }, agent)
  }

  /** The sections `agent` assembles with, in registration order. */
  list(agent: ScopeKey | undefined): readonly StoredSection[] {
    return this.#list.list(agent)
  }
}

