/**
 * Catalog benchmark (`npx tsx bench/catalog.bench.ts`, or `npm run bench:catalog`;
 * `-- --show` also prints the index text at 6,000 characters).
 *
 * Over the generated 1,000-tool registry (test/fixtures/large-registry.ts):
 * 1. the time to build the catalog (once per tool-set change);
 * 2. the time of one search, per query of the query set (p50/p95 over the queries,
 *    each query timed over repeated calls), and of one "did you mean";
 * 3. top-1 / top-3 hit rates on the tuning and the held-out queries;
 * 4. the compact index text at several budgets: form, characters, o200k tokens and how
 *    many tool names it lists, beside the full SDK of the same 1,000 tools.
 *
 * Figures are printed, never asserted.
 *
 * @module
 */
import { encode } from 'gpt-tokenizer/encoding/o200k_base'
import { SYNONYM_TERM_COUNT } from '../src/catalog/_analyze.js'
import { PHRASES, SYNONYM_GROUPS } from '../src/catalog/_vocabulary.js'
import { createCatalog, renderCatalogIndex } from '../src/catalog/index.js'
import { renderToolsSdk } from '../src/code-mode/sdk.js'
import { formatHitRates, HELD_OUT_QUERIES, measureHitRates, TUNING_QUERIES } from '../test/fixtures/catalog-queries.js'
import { LARGE_REGISTRY } from '../test/fixtures/large-registry.js'
import { printTable, summarize, type TableRow } from './_stats.js'

const n = (value: number): string => value.toLocaleString('en-US')
const ms = (value: number): string => `${value.toFixed(2)} ms`
const us = (value: number): string => `${value.toFixed(1)} µs`

// ── 1. build ──
const buildSamples: number[] = []
for (let i = 0; i < 30; i++) {
  const start = performance.now()
  createCatalog(LARGE_REGISTRY)
  buildSamples.push(performance.now() - start)
}
const build = summarize(buildSamples.slice(5))
const catalog = createCatalog(LARGE_REGISTRY)

// ── 2. search and closest ──
const queries = [...TUNING_QUERIES, ...HELD_OUT_QUERIES].map((q) => q.query)
const REPEAT = 200
for (const query of queries) catalog.search(query, { limit: 5 })
const perQuery = queries.map((query) => {
  const start = performance.now()
  for (let i = 0; i < REPEAT; i++) catalog.search(query, { limit: 5 })
  return ((performance.now() - start) * 1000) / REPEAT
})
const search = summarize(perQuery)

const misspelled = ['billing_remove_invoice', 'storage_delte_bucket', 'iam_give_role', 'crm_contacts_list', 'shopListOrders', 'deploy_rollback', 'unknown_tool_name']
const closestSamples = misspelled.map((name) => {
  const start = performance.now()
  for (let i = 0; i < 20; i++) catalog.closest(name)
  return (performance.now() - start) / 20
})
const closest = summarize(closestSamples)

printTable(
  [
    { what: 'build the catalog (1,000 tools)', p50: ms(build.median), p95: ms(build.p95), n: n(build.n) },
    { what: `search, per query (${queries.length} queries × ${REPEAT} calls, limit 5)`, p50: us(search.median), p95: us(search.p95), n: n(search.n) },
    { what: 'closest ("did you mean"), per name', p50: ms(closest.median), p95: ms(closest.p95), n: n(closest.n) },
  ],
  'Catalog timings over the 1,000-tool registry',
)

// ── 3. hit rates ──
const top3 = (query: string): string[] => catalog.search(query, { limit: 3 }).map((h) => h.name)
const tuning = measureHitRates(TUNING_QUERIES, top3)
const heldOut = measureHitRates(HELD_OUT_QUERIES, top3)
const pct = (x: number): string => `${(x * 100).toFixed(1)} %`
printTable(
  [
    { split: 'tuning (developed against)', queries: n(tuning.queries), 'top-1': pct(tuning.top1), 'top-3': pct(tuning.top3) },
    { split: 'held-out (never tuned on)', queries: n(heldOut.queries), 'top-1': pct(heldOut.top1), 'top-3': pct(heldOut.top3) },
  ],
  'Hit rates (intended tool ranked first / in the first three)',
)
console.log(formatHitRates('\ntuning', tuning))
console.log(formatHitRates('held-out', heldOut))
console.log(
  `vocabulary: ${SYNONYM_GROUPS.length} synonym groups (${n(SYNONYM_TERM_COUNT)} terms with synonyms), ${PHRASES.length} phrases`,
)

// ── 4. prompt text ──
const full = renderToolsSdk(LARGE_REGISTRY.map(({ name, description, parameters, output }) => ({ name, description, parameters, output })))
const rows: TableRow[] = [{ text: 'full SDK (every declaration)', form: 'full', chars: n(full.length), 'o200k tokens': n(encode(full).length), 'names listed': n(LARGE_REGISTRY.length) }]
const visible = LARGE_REGISTRY.map(({ name }) => ({ name }))
for (const maxChars of [1_500, 2_500, 4_000, 6_000, 8_000]) {
  const result = renderCatalogIndex(visible, { maxChars })
  rows.push({
    text: `index, maxChars ${n(maxChars)}`,
    form: result.form,
    chars: n(result.text.length),
    'o200k tokens': n(encode(result.text).length),
    'names listed': n(result.listedTools),
  })
}
printTable(rows, 'Prompt text for 1,000 tools')

if (process.argv.includes('--show')) {
  console.log('\nThe index at maxChars 6,000:\n')
  console.log(renderCatalogIndex(visible, { maxChars: 6_000 }).text)
}
