/**
 * The `catalog` binding namespace a Code Mode program gets beside `tools`:
 * `catalog.search(query, { limit })` and `catalog.describe(name)`.
 * @module
 */
import type { CodeBindingFunction, CodeBindingNamespace } from '../code-runtime/contract.js'
import { ToolCallError } from '../errors.js'
import type { ToolCatalog } from '../runtime-types.js'
import { CATALOG_SEARCH_DEFAULT_LIMIT } from './sdk-catalog.js'

/** The global name of the catalog namespace inside a program. */
export const CATALOG_BINDINGS_GLOBAL = 'catalog'

const SUGGESTIONS = 3
const MAX_QUOTED_NAME = 120

/** The longest `catalog.search` query accepted, in UTF-16 code units. */
export const MAX_CATALOG_QUERY_CHARS = 500

/** The most catalog calls (`search` and `describe`) one run may make. */
export const MAX_CATALOG_CALLS_PER_RUN = 2_000

/**
 * Answers a run's catalog calls one at a time, each after a turn of the host's event
 * loop (a macrotask), and counts them against {@link MAX_CATALOG_CALLS_PER_RUN}.
 */
class CatalogTurns {
  #calls = 0
  #tail: Promise<unknown> = Promise.resolve()

  take<T>(fn: string, work: () => T): Promise<T> {
    if (++this.#calls > MAX_CATALOG_CALLS_PER_RUN) {
      return Promise.reject(
        new ToolCallError(fn, `refused: this run has made ${MAX_CATALOG_CALLS_PER_RUN} catalog calls, the most one run may make; use what earlier searches returned`),
      )
    }
    const turn = this.#tail.then(yieldTurn).then(work)
    // The chain goes on whether this call succeeded or not.
    this.#tail = turn.catch(() => undefined)
    return turn
  }
}

/** Resolves in a later macrotask: timers, I/O and other runs' messages go first. */
function yieldTurn(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0))
}

/** The arguments as the program passed them: a variadic namespace sends the list. */
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
    throw new ToolCallError('catalog.search', 'options must be an object: catalog.search(query, { limit })', 'INVALID_ARGS')
  }
  const limit = (options as { limit?: unknown }).limit
  if (limit === undefined || limit === null) return CATALOG_SEARCH_DEFAULT_LIMIT
  // Number.isSafeInteger is false for anything that is not a number.
  if (!Number.isSafeInteger(limit) || (limit as number) < 1) {
    throw new ToolCallError('catalog.search', `limit must be a positive integer (got ${JSON.stringify(limit) ?? String(limit)})`, 'INVALID_ARGS')
  }
  return limit as number
}

function search(catalog: ToolCatalog, turns: CatalogTurns): CodeBindingFunction {
  return async (args) => {
    const [query, options] = argumentList(args)
    if (typeof query !== 'string') throw new ToolCallError('catalog.search', 'query must be a string of plain words: catalog.search("refund an order")', 'INVALID_ARGS')
    if (query.length > MAX_CATALOG_QUERY_CHARS) {
      throw new ToolCallError('catalog.search', `the query is ${query.length} characters long; at most ${MAX_CATALOG_QUERY_CHARS} are accepted: search with a few words`, 'INVALID_ARGS')
    }
    const limit = readLimit(options)
    // Plain copies: the answer crosses into the sandbox and owes nothing to the catalog's objects.
    return turns.take('catalog.search', () =>
      catalog.search(query, { limit }).map(({ name, description, declaration }) => ({ name, description, declaration })),
    )
  }
}

function describe(catalog: ToolCatalog, turns: CatalogTurns): CodeBindingFunction {
  return async (args) => {
    const [name] = argumentList(args)
    if (typeof name !== 'string') throw new ToolCallError('catalog.describe', 'name must be a string: catalog.describe("tool_name")', 'INVALID_ARGS')
    return turns.take('catalog.describe', () => describeNow(catalog, name))
  }
}

function describeNow(catalog: ToolCatalog, name: string): unknown {
  const declaration = catalog.describe(name)
  if (declaration !== undefined) return declaration
  const closest = catalog.closest(name, SUGGESTIONS)
  const hint =
    closest.length > 0
      ? `; the closest: ${closest.join(', ')}`
      : '; nothing is named like it: find tools by what they do with catalog.search(query)'
  throw new ToolCallError('catalog.describe', `no tool named ${quoted(name)} is available to this program${hint}`, 'UNKNOWN_TOOL')
}

/**
 * The `catalog` namespace over `catalog` (the calling agent's, taken at the run's start), for one
 * run: its calls share the run's allowance and turns.
 */
export function catalogNamespace(catalog: ToolCatalog): CodeBindingNamespace {
  const functions = Object.create(null) as Record<string, CodeBindingFunction>
  const turns = new CatalogTurns()
  functions.search = search(catalog, turns)
  functions.describe = describe(catalog, turns)
  return { global: CATALOG_BINDINGS_GLOBAL, functions: Object.freeze(functions), variadic: true }
}
