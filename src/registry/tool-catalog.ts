/**
 * Each scope's catalog and budgeted SDK text, built once per change of the scope's tool set: the
 * {@link ToolCatalog} of `runtime.catalog(scope)` and the `tools:sdk` text of prompt assembly.
 * @module
 */
import { createCatalog, type Catalog } from '../catalog/catalog.js'
import { hasSdkRenderer, renderToolDeclaration, renderToolsSdkWithinBudget, type SdkToolInput } from '../code-mode/sdk.js'
import { ToolError } from '../errors.js'
import type { ToolCatalog, ToolCatalogHit, ToolCatalogSearchOptions, ToolsChangedEvent } from '../runtime-types.js'
import type { RegisteredTool } from '../schema/tool-definition.js'
import type { ScopeKey } from '../types.js'
import type { RegistryContext } from './context.js'

/**
 * What the catalogs read of the registry's context: the layers (a scope's tools are its
 * view's `code`: what its SDK declares and its `tools` binds) and the options (the code
 * runtime's language, read at use; `sdkBudgetChars`).
 */
export type ToolCatalogsContext = Pick<RegistryContext, 'layers' | 'options'>

interface Entry {
  readonly tools: readonly RegisteredTool[]
  catalog?: ToolCatalog
  sdk?: { readonly language: string; readonly text: string }
}

function sdkInput(tool: RegisteredTool): SdkToolInput {
  const { name, description, parameters, output } = tool.definition
  return { name, description, parameters, output: output.schema }
}

function sameTools(a: readonly RegisteredTool[], b: readonly RegisteredTool[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** The catalogs and SDK texts of one registry's scopes. */
export class ToolCatalogs {
  readonly #context: ToolCatalogsContext
  readonly #entries = new Map<ScopeKey | undefined, Entry>()
  readonly #declarations = new WeakMap<RegisteredTool, Map<string, string>>()

  constructor(context: ToolCatalogsContext) {
    this.#context = context
  }

  /** Drops what a change may have made stale: the agent's entry, or every entry for a global change. */
  changed(event: ToolsChangedEvent): void {
    if (event.agent === undefined) this.#entries.clear()
    else this.#entries.delete(event.agent)
  }

  /** The catalog of what `agent` may call. */
  catalog(agent: ScopeKey | undefined): ToolCatalog {
    const entry = this.#entry(agent)
    entry.catalog ??= this.#createCatalog(entry.tools)
    return entry.catalog
  }

  /**
   * The `tools:sdk` text of `agent` in `language` (a language with a renderer): the
   * full SDK within `sdkBudgetChars`, else the catalog form.
   */
  sdkText(agent: ScopeKey | undefined, language: string): string {
    const entry = this.#entry(agent)
    if (entry.sdk?.language !== language) {
      const { text } = renderToolsSdkWithinBudget(entry.tools.map(sdkInput), { language, maxChars: this.#context.options.sdkBudgetChars })
      entry.sdk = { language, text }
    }
    return entry.sdk.text
  }

  #entry(agent: ScopeKey | undefined): Entry {
    // Keyed by the layer the id resolves to, not the id: made-up ids (an HTTP client's
    // `agent=`) share the global entry instead of each building an SDK text and an index.
    const key = this.#context.layers.layerOf(agent)
    const tools = this.#context.layers.view(key).code
    const cached = this.#entries.get(key)
    if (cached !== undefined && sameTools(cached.tools, tools)) return cached
    const entry: Entry = { tools }
    this.#entries.set(key, entry)
    return entry
  }

  #declaration(tool: RegisteredTool, language: string): string {
    let byLanguage = this.#declarations.get(tool)
    if (byLanguage === undefined) this.#declarations.set(tool, (byLanguage = new Map()))
    let text = byLanguage.get(language)
    if (text === undefined) byLanguage.set(language, (text = renderToolDeclaration(sdkInput(tool), language)))
    return text
  }

  #createCatalog(tools: readonly RegisteredTool[]): ToolCatalog {
    const configured = this.#context.options.codeRuntime?.language
    // Declarations follow the code runtime; without one (or one no renderer knows), TypeScript.
    // Stryker disable next-line ConditionalExpression: hasSdkRenderer(undefined) is false too
    const language = configured !== undefined && hasSdkRenderer(configured) ? configured : 'typescript'
    const byName = new Map(tools.map((tool) => [tool.definition.name, tool]))
    let index: Catalog | undefined
    const built = (): Catalog =>
      (index ??= createCatalog(tools.map(({ definition }) => ({ name: definition.name, description: definition.description, parameters: definition.parameters }))))
    const hit = (name: string): ToolCatalogHit => {
      const tool = byName.get(name) as RegisteredTool
      return Object.freeze({ name, description: tool.definition.description, declaration: this.#declaration(tool, language) })
    }
    return Object.freeze({
      size: tools.length,
      language,
      search: (query: string, options?: ToolCatalogSearchOptions): readonly ToolCatalogHit[] => {
        if (typeof query !== 'string') throw new ToolError('INVALID_OPTIONS', `catalog.search: query must be a string (got ${typeof query})`)
        return Object.freeze(built().search(query, options).map((h) => hit(h.name)))
      },
      describe: (name: string): string | undefined => {
        // Stryker disable next-line ConditionalExpression: byName is keyed by string
        const tool = typeof name === 'string' ? byName.get(name) : undefined
        return tool === undefined ? undefined : this.#declaration(tool, language)
      },
      closest: (name: string, limit?: number): readonly string[] => (typeof name === 'string' ? Object.freeze([...built().closest(name, limit)]) : Object.freeze([])),
    })
  }
}
