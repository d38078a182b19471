/**
 * The SDK tab's budget line, catalog index and search box. The SDK a model reads is
 * the full SDK while it fits the registry's `sdkBudgetChars`, else the catalog form;
 * the index shown here is what that form carries, and the search box runs the very
 * ranking a program's `catalog.search` uses: the tab's registry (`runtime.catalog`)
 * when code runs in this tab, `GET /v1/catalog/search` when it runs on the server.
 *
 * @module
 */
import { renderCatalogSdk } from '../../src/code-mode/sdk-catalog.js'
import type { SdkToolInput, SdkWithinBudget } from '../../src/code-mode/sdk.js'
import type { ToolCatalogHit, ToolRuntime } from '../../src/runtime-types.js'
import { byId, h, replaceChildren } from './dom.js'
import type { ServerInfo } from './server-backend.js'

/** How many hits the search box shows: what a program gets without `limit`. */
const HITS = 5

const count = (n: number): string => String(n).replace(/\B(?=(\d{3})+$)/g, ',')

/** The budget line above the SDK text: which form it took and how much of the budget it uses. */
export function renderBudget(rendered: SdkWithinBudget, budget: number): void {
  const form =
    rendered.form === 'full'
      ? 'the full SDK fits'
      : `the full SDK does not fit: the catalog form (${rendered.form === 'index' ? 'an index with tool names' : 'namespaces only'})`
  byId('sdk-budget').textContent = `${count(rendered.text.length)} of ${Number.isFinite(budget) ? count(budget) : '∞'} characters (sdkBudgetChars): ${form}.`
}

/** The index the catalog form carries (or would carry, past the budget) for `tools`: the form's text between the instructions and the declarations. */
export function renderIndex(tools: readonly SdkToolInput[], language: 'typescript' | 'python', budget: number): void {
  const { text } = renderCatalogSdk(tools, { language, maxChars: Number.isFinite(budget) ? budget : 1_000_000 })
  byId('catalog-index').textContent = text.slice(text.indexOf('## Tool catalog'), text.lastIndexOf('\n\n```'))
}

async function searchServer(info: ServerInfo, query: string, agent: string): Promise<readonly ToolCatalogHit[]> {
  const url = `${info.api}/catalog/search?${new URLSearchParams({ q: query, limit: String(HITS), agent })}`
  const response = await fetch(url, { headers: { Authorization: `Bearer ${info.token ?? ''}` }, signal: AbortSignal.timeout(5_000) })
  if (!response.ok) throw new Error(`the server answered ${response.status}`)
  return ((await response.json()) as { hits: ToolCatalogHit[] }).hits
}

function showHits(hits: readonly ToolCatalogHit[], where: string): void {
  replaceChildren(
    byId('catalog-hits'),
    h('p', { class: 'hint small', 'data-testid': 'catalog-where' }, `${hits.length} best match${hits.length === 1 ? '' : 'es'}, ranked ${where}.`),
    hits.map((hit) =>
      h(
        'details',
        { class: 'tool', 'data-testid': 'catalog-hit' },
        h('summary', {}, h('span', { class: 'name' }, hit.name), h('span', { class: 'desc' }, hit.description)),
        h('pre', { class: 'schema' }, hit.declaration),
      ),
    ),
  )
}

/** What the search box needs from the page. */
export interface CatalogSearchContext {
  readonly registry: ToolRuntime
  readonly server: ServerInfo
  /** Where code runs now (the search follows it) and the agent whose tools are searched. */
  readonly where: () => 'tab' | 'server'
  readonly agent: () => string
}

/** Wires the search form: Enter or the button searches. */
export function wireCatalogSearch(context: CatalogSearchContext): void {
  const form = byId<HTMLFormElement>('catalog-search')
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    const query = byId<HTMLInputElement>('catalog-query').value
    const agent = context.agent()
    const onServer = context.where() === 'server'
    const hits = onServer ? searchServer(context.server, query, agent) : Promise.resolve(context.registry.catalog(agent).search(query, { limit: HITS }))
    hits.then(
      (found) => showHits(found, onServer ? `on the server (GET /v1/catalog/search, agent "${agent}")` : `in this tab (agent "${agent}")`),
      (error: unknown) => replaceChildren(byId('catalog-hits'), h('p', { class: 'err' }, error instanceof Error ? error.message : String(error))),
    )
  })
}
