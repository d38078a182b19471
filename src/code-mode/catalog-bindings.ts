/**
 * The `catalog` binding namespace a Code Mode program gets beside `tools`:
 * `await catalog.search(query, { limit })` → `[{ name, description, declaration }]`,
 * best first, and `await catalog.describe(name)` → the declaration of that tool, or a
 * `ToolCallError` naming the closest names when no tool of the program has it.
 *
 * It answers from the {@link ToolCatalog} of the calling agent, taken when the run
 * starts: the very tools the run's `tools` binds, so every hit is callable as
 * `tools.<name>` and nothing the agent may not call can be found or described.
 *
 * Catalog calls are reads of the registry's own description of its tools, not tool
 * calls: they do not enter the pipeline (no gate, guard or approval: there is nothing
 * to allow), take no sub-call number, and append nothing to the session log, which
 * records what tools did. What a program learned from them reaches the model only as
 * what it prints or returns, like anything else it computes.
 *
 * @module
 */
import type { CodeBindingFunction, CodeBindingNamespace } from '../code-runtime/contract.js'
import { ToolCallError } from '../errors.js'
import type { ToolCatalog } from '../runtime-types.js'
import { CATALOG_SEARCH_DEFAULT_LIMIT } from './sdk-catalog.js'

/** The global name of the catalog namespace inside a program. */
export const CATALOG_BINDINGS_GLOBAL = 'catalog'

/** How many closest names a failed `describe` suggests. */
const SUGGESTIONS = 3
/** A name longer than this is shortened when a message quotes it back. */
const MAX_QUOTED_NAME = 120

/** The arguments as the program passed them: a variadic namespace sends the list; a runtime without the flag, the first. */
function argumentList(args: unknown): readonly unknown[] {
  return Array.isArray(args) ? args : [args]
}

function quoted(name: string): string {
  return JSON.stringify(name.length > MAX_QUOTED_NAME ? `${name.slice(0, MAX_QUOTED_NAME)}…` : name)
}

function readLimit(options: unknown): number {
  // `null` is how an omitted `undefined` arrives across a JSON boundary.
  if (options === undefined || options === null) return CATALOG_SEARCH_DEFAULT_LIMIT
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new ToolCallError('catalog.search', 'options must be an object: catalog.search(query, { limit })')
  }
  const limit = (options as { limit?: unknown }).limit
  if (limit === undefined || limit === null) return CATALOG_SEARCH_DEFAULT_LIMIT
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1) {
    throw new ToolCallError('catalog.search', `limit must be a positive integer (got ${JSON.stringify(limit) ?? String(limit)})`)
  }
  return limit
}

function search(catalog: ToolCatalog): CodeBindingFunction {
  return async (args) => {
    const [query, options] = argumentList(args)
    if (typeof query !== 'string') throw new ToolCallError('catalog.search', 'query must be a string of plain words: catalog.search("refund an order")')
    const limit = readLimit(options)
    // Plain copies: the answer crosses into the sandbox and owes nothing to the catalog's objects.
    return catalog.search(query, { limit }).map(({ name, description, declaration }) => ({ name, description, declaration }))
  }
}

function describe(catalog: ToolCatalog): CodeBindingFunction {
  return async (args) => {
    const [name] = argumentList(args)
    if (typeof name !== 'string') throw new ToolCallError('catalog.describe', 'name must be a string: catalog.describe("tool_name")')
    const declaration = catalog.describe(name)
    if (declaration !== undefined) return declaration
    const closest = catalog.closest(name, SUGGESTIONS)
    const hint =
      closest.length > 0
        ? `; the closest: ${closest.join(', ')}`
        : '; nothing is named like it: find tools by what they do with catalog.search(query)'
    throw new ToolCallError('catalog.describe', `no tool named ${quoted(name)} is available to this program${hint}`)
  }
}

/**
 * The `catalog` namespace over `catalog` (the calling agent's, taken at the run's
 * start). Variadic, so `search(query, options)` receives both arguments.
 */
export function catalogNamespace(catalog: ToolCatalog): CodeBindingNamespace {
  const functions = Object.create(null) as Record<string, CodeBindingFunction>
  functions.search = search(catalog)
  functions.describe = describe(catalog)
  return { global: CATALOG_BINDINGS_GLOBAL, functions: Object.freeze(functions), variadic: true }
}
